//! The bench server's listener that stamps each request's arrival with the kernel's receive time
//! of its bytes (`SO_TIMESTAMPNS`, read with `recvmsg` as the client's reader does,
//! src/load/rx_stamp.rs), so the server's time to first token counts from when the request
//! reached the machine, not from when its handler ran (src/bench/marks.rs).
//!
//! The listening socket asks for stamps before `listen`, so every accepted socket inherits the
//! option and the request bytes that arrive before `accept` returns are stamped too. Each
//! connection's IO records the stamp of its last read that returned data in a cell shared with
//! its [`Arrival`] (the connection's `ConnectInfo`); a handler reads the cell once it has the
//! whole request, so the cell holds the arrival of the request's last bytes (HTTP/1.1: one
//! request at a time per connection, the next one's bytes come after the answer).

use crate::load::rx_stamp::{self, Control};
use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// A connection's last read with data: the kernel's receive time of its bytes, unix ns (0: that
/// read carried no stamp, or nothing was read yet). Cloned into every request's `ConnectInfo`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Arrival(Arc<AtomicU64>);

impl Arrival {
    /// The kernel's receive time of the last bytes read on the connection, unix ns (None: no
    /// stamp).
    pub(crate) fn last_read_ns(&self) -> Option<u64> {
        Some(self.0.load(Ordering::Relaxed)).filter(|&ns| ns > 0)
    }

    fn set(&self, stamp: Option<Duration>) {
        self.0.store(stamp.map_or(0, |d| d.as_nanos() as u64), Ordering::Relaxed);
    }
}

impl Connected<IncomingStream<'_, StampedListener>> for Arrival {
    fn connect_info(stream: IncomingStream<'_, StampedListener>) -> Self {
        stream.remote_addr().clone()
    }
}

/// What the handler of a request knows of its arrival, unix ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestTimes {
    /// The kernel's receive time of the request's last bytes (None: no stamp, or one after
    /// `handler_ns`: a wall clock stepped between them).
    pub arrived_ns: Option<u64>,
    /// When the handler had the whole request.
    pub handler_ns: u64,
}

impl RequestTimes {
    /// The times of a request whose handler starts now.
    pub(crate) fn now(arrival: &Arrival) -> Self {
        Self::new(arrival.last_read_ns(), super::sysinfo::unix_ns())
    }

    /// `arrived_ns` is kept only when it is not after `handler_ns`.
    pub(crate) fn new(arrived_ns: Option<u64>, handler_ns: u64) -> Self {
        Self { arrived_ns: arrived_ns.filter(|&a| a <= handler_ns), handler_ns }
    }

    /// Where the server's time to first token starts: the arrival, else the handler's start.
    pub(crate) fn start_ns(&self) -> u64 {
        self.arrived_ns.unwrap_or(self.handler_ns)
    }

    /// The server's wake-up: from the arrival to the handler's start, ns (None: no stamp).
    pub(crate) fn wake_ns(&self) -> Option<u64> {
        self.arrived_ns.map(|a| self.handler_ns - a)
    }
}

/// A TCP listener whose connections stamp their reads; serve it with
/// `into_make_service_with_connect_info::<Arrival>()`.
#[derive(Debug)]
pub(crate) struct StampedListener {
    listener: TcpListener,
}

impl StampedListener {
    /// Binds `addr` (address reuse, `backlog` pending connections) with stamps asked for.
    pub(crate) fn bind(addr: SocketAddr, backlog: u32) -> anyhow::Result<Self> {
        let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
        socket.set_reuseaddr(true)?;
        socket.bind(addr).map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
        // Refused (not Linux): requests carry no stamp and count from the handler's start.
        let _ = rx_stamp::enable(&socket);
        Ok(Self { listener: socket.listen(backlog)? })
    }

    /// The address it listens on.
    pub(crate) fn local_socket_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

impl Listener for StampedListener {
    type Io = StampedIo;
    type Addr = Arrival;

    async fn accept(&mut self) -> (StampedIo, Arrival) {
        loop {
            match self.listener.accept().await {
                Ok((tcp, _)) => {
                    let _ = tcp.set_nodelay(true);
                    let arrival = Arrival::default();
                    let io = StampedIo { tcp, control: Control::default(), arrival: arrival.clone() };
                    return (io, arrival);
                }
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    // Out of open files, most likely: wait for connections to close, as
                    // axum's own listener does.
                    crate::err_line!("bench-server: accept: {e}");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Arrival> {
        Ok(Arrival::default())
    }
}

/// An accept error that only concerns the one connection.
fn is_connection_error(e: &io::Error) -> bool {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(e.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset)
}

/// One accepted connection: reads with `recvmsg` and records their stamps, writes as a
/// `TcpStream` does.
#[derive(Debug)]
pub(crate) struct StampedIo {
    tcp: TcpStream,
    control: Control,
    arrival: Arrival,
}

impl AsyncRead for StampedIo {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            ready!(this.tcp.poll_read_ready(cx))?;
            let dst = buf.initialize_unfilled();
            let control = &mut this.control;
            match this.tcp.try_io(Interest::READABLE, || rx_stamp::recv_wall(&this.tcp, dst, control)) {
                Ok((n, stamp)) => {
                    if n > 0 {
                        this.arrival.set(stamp);
                    }
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for StampedIo {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

#[cfg(test)]
#[path = "arrival_tests.rs"]
mod tests;
