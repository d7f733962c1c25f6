//! The terminal guard restores the terminal on drop, when a panic unwinds through it, and from
//! the panic hook when a panic elsewhere never reaches it; the previous hook still runs.

use llm_decode_bench::tui::{TerminalControl, TerminalGuard};
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A terminal that records what was asked of it.
#[derive(Clone, Default)]
struct Fake {
    calls: Arc<Mutex<Vec<&'static str>>>,
}

impl Fake {
    fn calls(&self) -> Vec<&'static str> {
        self.calls.lock().unwrap().clone()
    }
}

impl TerminalControl for Fake {
    fn enter(&self) -> io::Result<()> {
        self.calls.lock().unwrap().push("enter");
        Ok(())
    }

    fn leave(&self) -> io::Result<()> {
        self.calls.lock().unwrap().push("leave");
        Ok(())
    }
}

/// A terminal that cannot be entered.
struct Broken;

impl TerminalControl for Broken {
    fn enter(&self) -> io::Result<()> {
        Err(io::Error::other("not a terminal"))
    }

    fn leave(&self) -> io::Result<()> {
        panic!("never entered, never left")
    }
}

// One test: the panic hook is process-wide, so the order of these steps matters.
#[test]
fn the_terminal_is_restored_on_every_exit_path() {
    // A hook set before the first guard must still run after the guard's restore.
    let previous_ran = Arc::new(AtomicUsize::new(0));
    let seen = previous_ran.clone();
    panic::set_hook(Box::new(move |_| {
        seen.fetch_add(1, Ordering::SeqCst);
    }));

    // Drop.
    let fake = Fake::default();
    drop(TerminalGuard::enter(fake.clone()).unwrap());
    assert_eq!(fake.calls(), ["enter", "leave"]);

    // A panic unwinding through the guarded scope.
    let fake = Fake::default();
    let f = fake.clone();
    let caught = panic::catch_unwind(AssertUnwindSafe(move || {
        let _guard = TerminalGuard::enter(f).unwrap();
        panic!("boom inside the monitor");
    }));
    assert!(caught.is_err());
    assert_eq!(fake.calls(), ["enter", "leave"], "left exactly once");
    assert_eq!(previous_ran.load(Ordering::SeqCst), 1, "the previous hook is chained");

    // A panic on another thread (say, a task) never unwinds through the guard: the hook restores.
    let fake = Fake::default();
    let guard = TerminalGuard::enter(fake.clone()).unwrap();
    assert!(guard.is_active());
    assert!(std::thread::spawn(|| panic!("boom elsewhere")).join().is_err());
    assert_eq!(fake.calls(), ["enter", "leave"]);
    assert!(!guard.is_active());
    drop(guard);
    assert_eq!(fake.calls(), ["enter", "leave"], "the drop does not leave twice");
    assert_eq!(previous_ran.load(Ordering::SeqCst), 2);

    // A terminal that cannot be entered gives an error and is never left.
    assert!(TerminalGuard::enter(Broken).is_err());
    let _ = panic::take_hook();
}
