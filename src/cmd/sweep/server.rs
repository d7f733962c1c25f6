//! A server under test (`run --server-cmd`): `sh -c CMD` in a process group of its own, its
//! stdout and stderr in a log file, stopped by SIGTERM to the whole group, SIGKILL after a
//! grace, and reaped. Never left running: [`Server`]'s `Drop` kills the group (errors and
//! panics), [`kill_all_now`] kills every live group before the process exits on a second
//! signal, and on Linux the shell gets SIGTERM if this process dies (`PR_SET_PDEATHSIG`); the
//! shell's own children rely on the group kill, which a SIGKILLed tool cannot send.

use rustix::process::{Pid, Signal};
use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// Process groups of the servers started and not yet stopped.
static LIVE: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// How often a stop checks whether the group is gone.
const POLL: Duration = Duration::from_millis(50);
/// Longest wait for the group to be gone after SIGKILL (a process stuck in the kernel).
const AFTER_KILL: Duration = Duration::from_secs(5);

fn live() -> std::sync::MutexGuard<'static, Vec<i32>> {
    LIVE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Sends `sig` to process group `pgid`; an already empty group is no error.
fn signal_group(pgid: i32, sig: Signal) {
    if let Some(pid) = Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(pid, sig);
    }
}

/// True while some process of group `pgid` runs. A zombie does not count: an orphan the shell
/// left is reaped by init, which may take its time (or, in some containers, never come).
fn group_alive(pgid: i32) -> bool {
    let any = Pid::from_raw(pgid).is_some_and(|p| rustix::process::test_kill_process_group(p).is_ok());
    any && live_member_of(pgid)
}

/// True when `/proc` lists a process of group `pgid` that is not a zombie (true when `/proc`
/// cannot be read: the group is then taken as alive).
#[cfg(target_os = "linux")]
fn live_member_of(pgid: i32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else { return true };
    let pids = dir.filter_map(Result::ok).filter(|e| e.file_name().to_str().is_some_and(|n| n.parse::<u32>().is_ok()));
    pids.into_iter().any(|e| std::fs::read_to_string(e.path().join("stat")).is_ok_and(|s| runs_in(&s, pgid)))
}

#[cfg(not(target_os = "linux"))]
fn live_member_of(_pgid: i32) -> bool {
    true
}

/// `/proc/PID/stat` (`pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses)
/// of a process of group `pgid` that is not a zombie.
pub(crate) fn runs_in(stat: &str, pgid: i32) -> bool {
    let Some((_, rest)) = stat.rsplit_once(')') else { return false };
    let mut fields = rest.split_whitespace();
    let state = fields.next().unwrap_or("Z");
    let pgrp = fields.nth(1).and_then(|p| p.parse::<i32>().ok());
    !matches!(state, "Z" | "X" | "x") && pgrp == Some(pgid)
}

/// SIGKILLs the process group of every server still running: called before the process
/// exits without unwinding (a second signal), where no `Drop` runs.
pub(crate) fn kill_all_now() {
    for pgid in live().drain(..) {
        signal_group(pgid, Signal::KILL);
    }
}

/// The shell command: `sh -c CMD`, stdin closed, output to `log`, a group of its own; on Linux
/// the shell gets SIGTERM when the thread that started it ends (see [`Server::start`]).
fn command(cmd: &str, log: &File) -> std::io::Result<Command> {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new("sh");
    c.arg("-c").arg(cmd).stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log.try_clone()?).process_group(0);
    #[cfg(target_os = "linux")]
    {
        let parent = rustix::process::getpid();
        // SAFETY: the closure runs in the forked child before exec and makes only two system
        // calls (prctl, getppid), both async-signal-safe; it allocates nothing and takes no lock.
        unsafe {
            c.pre_exec(move || {
                rustix::process::set_parent_process_death_signal(Some(Signal::TERM))?;
                // The parent may have died before the death signal was armed.
                match rustix::process::getppid() == Some(parent) {
                    true => Ok(()),
                    false => Err(std::io::Error::other("the benchmark exited while starting the server")),
                }
            });
        }
    }
    Ok(c)
}

/// A started server.
pub(crate) struct Server {
    pgid: i32,
    exit: watch::Receiver<Option<String>>,
    stopped: bool,
}

impl Server {
    /// Starts `sh -c cmd` with its output in `log` (created or truncated). The shell is started
    /// and waited for by a thread of its own, which lives exactly as long as the shell: the
    /// parent-death signal follows the thread that forked, so it fires only when this process
    /// dies.
    pub(crate) fn start(cmd: &str, log: &Path) -> std::io::Result<Server> {
        let file = File::create(log)?;
        let mut c = command(cmd, &file)?;
        let (pid_tx, pid_rx) = std::sync::mpsc::channel();
        let (exit_tx, exit_rx) = watch::channel(None);
        std::thread::Builder::new().name("server-waiter".into()).spawn(move || match c.spawn() {
            Err(e) => drop(pid_tx.send(Err(e))),
            Ok(mut child) => {
                let pgid = child.id() as i32;
                live().push(pgid);
                let _ = pid_tx.send(Ok(pgid));
                let how = child.wait().map_or_else(|e| format!("cannot wait for it: {e}"), |s| s.to_string());
                let _ = exit_tx.send(Some(how));
            }
        })?;
        let pgid = pid_rx.recv().map_err(|_| std::io::Error::other("the server's thread ended"))??;
        Ok(Server { pgid, exit: exit_rx, stopped: false })
    }

    /// The shell's process id, which is also its group's id.
    #[cfg(test)]
    pub(crate) fn pgid(&self) -> i32 {
        self.pgid
    }

    /// How the shell ended, once it has (`exit status: 1`, `signal: 15 (SIGTERM)`).
    pub(crate) fn exited(&self) -> Option<String> {
        self.exit.borrow().clone()
    }

    /// Waits until the shell has ended; its exit.
    pub(crate) async fn wait_exit(&mut self) -> String {
        match self.exit.wait_for(Option::is_some).await {
            Ok(how) => how.clone().unwrap_or_default(),
            Err(_) => "ended (not seen)".into(),
        }
    }

    /// Waits until the shell is reaped and its group has no process left, at most `limit`;
    /// true when both happened.
    async fn gone_within(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if self.exited().is_some() && !group_alive(self.pgid) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Stops the server: SIGTERM to its group, then SIGKILL once `grace` has passed or `hurry`
    /// resolves (a second signal), whichever comes first; waits for the group to be gone.
    /// Returns how the shell ended (`…; SIGKILL after 10.0 s` when the grace ran out, `…; SIGKILL
    /// after 0.2 s (a second signal)` when one cut it short: the time SIGTERM really had).
    pub(crate) async fn stop(&mut self, grace: Duration, hurry: impl Future<Output = ()>) -> String {
        signal_group(self.pgid, Signal::TERM);
        let termed = Instant::now();
        let (killed, hurried) = tokio::select! {
            gone = self.gone_within(grace) => (!gone, false),
            () = hurry => (true, true),
        };
        let mut note = String::new();
        if killed {
            signal_group(self.pgid, Signal::KILL);
            // The time SIGTERM actually had: the grace, or less when a second signal cut it short.
            let after = termed.elapsed().as_secs_f64();
            note = match hurried {
                true => format!("; SIGKILL after {after:.1} s (a second signal)"),
                false => format!("; SIGKILL after {after:.1} s"),
            };
            if !self.gone_within(AFTER_KILL).await {
                note.push_str("; some of its processes were still there");
            }
        }
        self.forget();
        format!("{}{note}", self.exited().unwrap_or_else(|| "not reaped".into()))
    }

    /// No longer this process's to kill.
    fn forget(&mut self) {
        self.stopped = true;
        live().retain(|g| *g != self.pgid);
    }
}

impl Drop for Server {
    /// A server not stopped (an error or a panic on the way) is killed with its whole group.
    fn drop(&mut self) {
        if !self.stopped {
            signal_group(self.pgid, Signal::KILL);
            self.forget();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// True while `pid` runs (a zombie does not).
    fn alive(pid: i32) -> bool {
        let exists = Pid::from_raw(pid).is_some_and(|p| rustix::process::test_kill_process(p).is_ok());
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        exists && stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    }

    /// The pid a command wrote to `file`, once written.
    async fn pid_in(file: &Path) -> i32 {
        for _ in 0..200 {
            if let Some(pid) = std::fs::read_to_string(file).ok().and_then(|s| s.trim().parse().ok()) {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no pid in {}", file.display());
    }

    #[test]
    fn a_zombie_is_no_live_member_of_its_group() {
        assert!(runs_in("12 (sh) S 1 12 12 0 -1", 12));
        assert!(runs_in("13 (a) b (c)) R 12 12 12 0", 12), "a name with parentheses");
        assert!(!runs_in("14 (sleep) Z 1 12 12 0", 12), "a zombie");
        assert!(!runs_in("15 (sleep) S 1 15 15 0", 12), "another group");
        assert!(!runs_in("garbage", 12));
    }

    #[tokio::test]
    async fn stop_ends_the_whole_group_even_a_child_that_ignores_sigterm() {
        let dir = tempfile::tempdir().unwrap();
        let (log, pidfile) = (dir.path().join("s.log"), dir.path().join("child.pid"));
        // A grandchild that ignores SIGTERM: only the group's SIGKILL ends it.
        let cmd = format!(
            "echo started; sh -c 'trap \"\" TERM; echo $$ > {}; while :; do sleep 0.05; done' & wait",
            pidfile.display()
        );
        let mut s = Server::start(&cmd, &log).unwrap();
        let child = pid_in(&pidfile).await;
        assert!(alive(child) && live().contains(&s.pgid()));
        let how = s.stop(Duration::from_millis(300), std::future::pending()).await;
        assert!(how.contains("; SIGKILL after 0.") && !how.contains("second signal"), "{how}");
        assert!(!alive(child) && !group_alive(s.pgid()), "the group is gone");
        assert!(!live().contains(&s.pgid()));
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "started\n");
    }

    #[tokio::test]
    async fn a_second_signal_says_how_long_sigterm_really_had() {
        let dir = tempfile::tempdir().unwrap();
        let cmd = "trap '' TERM; while :; do sleep 0.05; done";
        let mut s = Server::start(cmd, &dir.path().join("h.log")).unwrap();
        let how = s.stop(Duration::from_secs(30), std::future::ready(())).await;
        assert!(how.contains("; SIGKILL after 0.0 s (a second signal)"), "not the 30 s grace: {how}");
        assert!(!group_alive(s.pgid()));
    }

    #[tokio::test]
    async fn a_polite_server_ends_on_sigterm_and_a_dropped_one_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Server::start("exec sleep 30", &dir.path().join("a.log")).unwrap();
        let how = s.stop(Duration::from_secs(5), std::future::pending()).await;
        assert_eq!(how, "signal: 15 (SIGTERM)");
        let pidfile = dir.path().join("b.pid");
        let dropped =
            Server::start(&format!("echo $$ > {}; exec sleep 30", pidfile.display()), &dir.path().join("b.log"))
                .unwrap();
        let pid = pid_in(&pidfile).await;
        drop(dropped);
        for _ in 0..100 {
            if !group_alive(pid) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!group_alive(pid), "Drop killed the group");
        let mut quick = Server::start("echo bye; exit 3", &dir.path().join("c.log")).unwrap();
        assert_eq!(quick.wait_exit().await, "exit status: 3");
        assert_eq!(quick.stop(Duration::from_secs(1), std::future::pending()).await, "exit status: 3");
    }
}
