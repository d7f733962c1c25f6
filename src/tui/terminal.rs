//! Terminal hygiene: a RAII guard that enters raw mode and the alternate screen, and restores
//! the terminal when dropped *and* from a panic hook (chained to the previous hook), so every
//! exit path leaves a usable shell.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, PoisonError};

/// Entering and leaving the monitor's terminal mode.
pub trait TerminalControl: Send + Sync + 'static {
    /// Raw mode, alternate screen, hidden cursor.
    fn enter(&self) -> io::Result<()>;
    /// Back to the shell's terminal: cooked mode, main screen, visible cursor.
    fn leave(&self) -> io::Result<()>;
}

/// The real terminal through crossterm, on stdout.
#[derive(Debug, Default, Clone, Copy)]
pub struct CrosstermTerminal;

impl TerminalControl for CrosstermTerminal {
    fn enter(&self) -> io::Result<()> {
        crossterm::terminal::enable_raw_mode()?;
        let entered =
            crossterm::execute!(io::stdout(), crossterm::terminal::EnterAlternateScreen, crossterm::cursor::Hide);
        if entered.is_err() {
            let _ = crossterm::terminal::disable_raw_mode();
        }
        entered
    }

    fn leave(&self) -> io::Result<()> {
        // Raw mode first: it has more side effects than the alternate screen.
        let raw = crossterm::terminal::disable_raw_mode();
        let screen =
            crossterm::execute!(io::stdout(), crossterm::terminal::LeaveAlternateScreen, crossterm::cursor::Show);
        raw.and(screen)
    }
}

/// One entered terminal, shared by its guard and the panic hook.
struct Entered {
    id: u64,
    active: AtomicBool,
    term: Box<dyn TerminalControl>,
}

impl Entered {
    /// Leaves the terminal mode once, whoever asks first.
    fn leave_once(&self) {
        if self.active.swap(false, Ordering::SeqCst) {
            let _ = self.term.leave();
        }
    }
}

static ENTERED: Mutex<Vec<Arc<Entered>>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);
static HOOK: Once = Once::new();

/// Installs (once) a panic hook that restores every entered terminal, then runs the previous hook
/// so the panic message lands on a usable screen.
fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_all();
            previous(info);
        }));
    });
}

/// Leaves every entered terminal (from the panic hook; never blocks on the registry).
fn restore_all() {
    if let Ok(list) = ENTERED.try_lock() {
        list.iter().for_each(|e| e.leave_once());
    }
}

/// Holds the terminal in the monitor's mode; restores it on drop and on panic.
pub struct TerminalGuard {
    entered: Arc<Entered>,
}

impl TerminalGuard {
    /// Enters the terminal mode of `term` and arms the restore paths.
    pub fn enter<T: TerminalControl>(term: T) -> io::Result<Self> {
        install_panic_hook();
        term.enter()?;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let entered = Arc::new(Entered { id, active: AtomicBool::new(true), term: Box::new(term) });
        ENTERED.lock().unwrap_or_else(PoisonError::into_inner).push(entered.clone());
        Ok(Self { entered })
    }

    /// Still in the monitor's mode (a panic elsewhere may have restored the terminal).
    pub fn is_active(&self) -> bool {
        self.entered.active.load(Ordering::SeqCst)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        self.entered.leave_once();
        ENTERED.lock().unwrap_or_else(PoisonError::into_inner).retain(|e| e.id != self.entered.id);
    }
}
