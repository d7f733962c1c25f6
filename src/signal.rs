//! Termination signals: SIGINT, SIGTERM and SIGHUP as one stream, so that all three stop a
//! session the same way (the running cell recorded, the report written) and the exit code says
//! which one came (`128 + signal number`, see `src/cmd/exit.rs`).
//!
//! Listening replaces the default action (death) of the three signals for the rest of the
//! process, so a [`Signals`] is made only once a session can obey them. The first signal the
//! process received is remembered process-wide ([`first_received`]): the monitor and headless
//! mode both turn it into an exit code.

use std::sync::OnceLock;

/// A signal that asks the process to end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM (`kill`, a container runtime or CI job being stopped).
    Terminate,
    /// SIGHUP (the terminal went away).
    Hangup,
}

impl Signal {
    /// The signal number (POSIX).
    pub fn number(self) -> u8 {
        match self {
            Self::Interrupt => 2,
            Self::Terminate => 15,
            Self::Hangup => 1,
        }
    }

    /// The exit code of a process ended by this signal: `128 + number` (130, 143, 129).
    pub fn exit_code(self) -> u8 {
        128 + self.number()
    }

    /// The name, e.g. `SIGTERM`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Interrupt => "SIGINT",
            Self::Terminate => "SIGTERM",
            Self::Hangup => "SIGHUP",
        }
    }
}

/// The first signal this process received through a [`Signals`].
static FIRST: OnceLock<Signal> = OnceLock::new();

/// The first signal received so far, if any.
pub fn first_received() -> Option<Signal> {
    FIRST.get().copied()
}

/// Listens to SIGINT, SIGTERM and SIGHUP (on other platforms: Ctrl-C only).
#[derive(Debug)]
pub struct Signals {
    #[cfg(unix)]
    listeners: [(Signal, tokio::signal::unix::Signal); 3],
}

impl Signals {
    /// Starts listening; from now on the three signals no longer end the process by themselves.
    /// Must be called within a tokio runtime.
    #[cfg(unix)]
    pub fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            listeners: [
                (Signal::Interrupt, signal(SignalKind::interrupt())?),
                (Signal::Terminate, signal(SignalKind::terminate())?),
                (Signal::Hangup, signal(SignalKind::hangup())?),
            ],
        })
    }

    /// Starts listening to Ctrl-C.
    #[cfg(not(unix))]
    pub fn new() -> std::io::Result<Self> {
        Ok(Self {})
    }

    /// Waits for the next signal; remembers the process's first one ([`first_received`]).
    pub async fn recv(&mut self) -> Signal {
        let got = self.next().await;
        let _ = FIRST.set(got);
        got
    }

    #[cfg(unix)]
    async fn next(&mut self) -> Signal {
        let [(a, sa), (b, sb), (c, sc)] = &mut self.listeners;
        tokio::select! {
            _ = sa.recv() => *a,
            _ = sb.recv() => *b,
            _ = sc.recv() => *c,
        }
    }

    #[cfg(not(unix))]
    async fn next(&mut self) -> Signal {
        match tokio::signal::ctrl_c().await {
            Ok(()) => Signal::Interrupt,
            Err(_) => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_128_plus_the_signal_number() {
        let codes: Vec<u8> = [Signal::Interrupt, Signal::Terminate, Signal::Hangup].map(Signal::exit_code).into();
        assert_eq!(codes, [130, 143, 129]);
        assert_eq!(Signal::Terminate.name(), "SIGTERM");
    }
}
