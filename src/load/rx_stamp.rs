//! Socket reads that carry the kernel's receive time of their data (`SO_TIMESTAMPNS`), for
//! the own stream reader (`super::own_h1`): tokens are then stamped when they reached the
//! machine, not when the worker's task next ran.
//!
//! The kernel's stamp is `CLOCK_REALTIME`; the load's clock is `Instant` (`CLOCK_MONOTONIC`).
//! Each read converts its stamp by the age of its data: `Instant::now()` minus
//! (`SystemTime::now()` minus the stamp), both clocks read right after the `recvmsg`, so a step
//! of the wall clock between two reads moves no stamp by more than the step's effect on that
//! one read. A stamp in the future or older than [`MAX_AGE`] (a wall clock stepped meanwhile)
//! is dropped and the read gets none; the caller then takes `Instant::now()`. A TCP read that
//! drains several packets carries the stamp of the last one (Linux's `tcp_recvmsg`).
//!
//! Hot path cost per read: one `recvmsg` instead of a `recv`, two vDSO clock reads, a walk of
//! one control message; no allocation.

use std::io;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Oldest stamp believed: an older one means the wall clock moved since the data came.
pub const MAX_AGE: Duration = Duration::from_secs(10);

/// Asks the kernel to stamp `socket`'s received data; false when it refuses (reads then
/// carry no stamp). On a listening socket, the sockets it accepts inherit it (the bench
/// server, src/bench/arrival.rs).
#[cfg(target_os = "linux")]
pub fn enable(socket: &impl std::os::fd::AsFd) -> bool {
    use nix::sys::socket::{setsockopt, sockopt::ReceiveTimestampns};
    setsockopt(socket, ReceiveTimestampns, &true).is_ok()
}

/// Kernel receive stamps are read on Linux only.
#[cfg(not(target_os = "linux"))]
pub fn enable<S>(_socket: &S) -> bool {
    false
}

/// Room for one `SCM_TIMESTAMPNS` control message.
#[cfg(target_os = "linux")]
pub type Control = [u8; CONTROL_LEN];

/// Bytes of control buffer one timestamp takes (`cmsg_space!` of a timespec, on 64-bit and
/// 32-bit Linux: at most 32).
#[cfg(target_os = "linux")]
const CONTROL_LEN: usize = 32;

/// No control buffer elsewhere.
#[cfg(not(target_os = "linux"))]
pub type Control = [u8; 0];

/// Waits for data and reads it into `buf`: the byte count (0 at the end of the stream) and
/// when the kernel received the data, on the load's clock (None: no stamp).
pub async fn read(stream: &TcpStream, buf: &mut [u8], control: &mut Control) -> io::Result<(usize, Option<Instant>)> {
    loop {
        stream.readable().await?;
        match stream.try_io(Interest::READABLE, || recv(stream, buf, control)) {
            Ok(got) => return Ok(got),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
}

/// One `recvmsg` with its stamp on the load's clock.
fn recv(stream: &TcpStream, buf: &mut [u8], control: &mut Control) -> io::Result<(usize, Option<Instant>)> {
    let (n, stamp) = recv_wall(stream, buf, control)?;
    Ok((n, stamp.and_then(|s| to_instant(s, SystemTime::now(), Instant::now()))))
}

/// One `recvmsg` (call it when `stream` is readable, inside `try_io`): the byte count and the
/// kernel's receive time of the data as it gave it, since the Unix epoch (`CLOCK_REALTIME`;
/// None: no stamp).
#[cfg(target_os = "linux")]
pub fn recv_wall(stream: &TcpStream, buf: &mut [u8], control: &mut Control) -> io::Result<(usize, Option<Duration>)> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    use std::os::fd::AsRawFd;
    let mut iov = [io::IoSliceMut::new(buf)];
    let msg = recvmsg::<()>(stream.as_raw_fd(), &mut iov, Some(&mut control[..]), MsgFlags::empty())
        .map_err(io::Error::from)?;
    let mut stamp = None;
    if let Ok(cmsgs) = msg.cmsgs() {
        for c in cmsgs {
            if let ControlMessageOwned::ScmTimestampns(ts) = c {
                stamp = Some(Duration::new(ts.tv_sec().max(0) as u64, ts.tv_nsec().clamp(0, 999_999_999) as u32));
            }
        }
    }
    Ok((msg.bytes, stamp))
}

/// A plain read elsewhere.
#[cfg(not(target_os = "linux"))]
pub fn recv_wall(stream: &TcpStream, buf: &mut [u8], _control: &mut Control) -> io::Result<(usize, Option<Duration>)> {
    stream.try_read(buf).map(|n| (n, None))
}

/// The instant a wall-clock `stamp` (since the Unix epoch) was, given the wall clock's
/// `wall_now` and the load's clock's `now` read at the same moment; None for a stamp in the
/// future or older than [`MAX_AGE`].
pub fn to_instant(stamp: Duration, wall_now: SystemTime, now: Instant) -> Option<Instant> {
    let wall = wall_now.duration_since(UNIX_EPOCH).ok()?;
    let age = wall.checked_sub(stamp)?;
    (age <= MAX_AGE).then(|| now.checked_sub(age)).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_converts_by_its_age() {
        let now = Instant::now();
        let wall = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let stamp = Duration::from_secs(1_000_000) - Duration::from_micros(250);
        assert_eq!(to_instant(stamp, wall, now), Some(now - Duration::from_micros(250)));
    }

    #[test]
    fn future_and_stale_stamps_are_dropped() {
        let now = Instant::now();
        let wall = UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(to_instant(Duration::from_secs(1_000_001), wall, now), None);
        assert_eq!(to_instant(Duration::from_secs(1_000_000) - MAX_AGE - Duration::from_secs(1), wall, now), None);
        assert!(to_instant(Duration::from_secs(1_000_000) - MAX_AGE, wall, now).is_some());
    }

    #[tokio::test]
    async fn loopback_reads_carry_a_recent_stamp() {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let stamped = enable(&server);
        let mut buf = [0u8; 16];
        let mut control = Control::default();
        // When no socket of the machine had stamps on, Linux turns them on from a work queue
        // after `enable` returns (`net_enable_timestamp`): the first reads may carry none.
        for _ in 0..1_000 {
            client.write_all(b"x").await.unwrap();
            if read(&server, &mut buf, &mut control).await.unwrap().1.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let before = Instant::now();
        client.write_all(b"hello").await.unwrap();
        let (n, at) = read(&server, &mut buf, &mut control).await.unwrap();
        let after = Instant::now();
        assert_eq!(&buf[..n], b"hello");
        if cfg!(target_os = "linux") {
            assert!(stamped);
            let at = at.expect("a stamp on Linux");
            // The stamp falls between the write and the read's return (1 ms of slack for the
            // two clocks' conversion).
            assert!(at + Duration::from_millis(1) >= before && at <= after, "{at:?} not in {before:?}..{after:?}");
        }
    }
}
