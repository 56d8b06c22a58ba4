//! The HTTP/1.1 accept loop. Hand-written on hyper rather than `axum::serve`, which offers no
//! header-read timeout and no connection limit: here a client that sends its headers too slowly
//! is cut off, open connections are bounded (the next one waits in the kernel's backlog until a
//! slot frees), and shutdown stops accepting, then lets requests in flight finish up to a deadline.
//!
//! A connection is also bounded on the way out and in time, so that no client can keep a slot by
//! not reading: a write that makes no progress for `write_timeout` ends it (a client that pipelines
//! requests for large answers and never reads them), and one older than `connection_lifetime` is
//! closed after its request in flight (a client that reads just fast enough to make progress).
//! One client address may hold at most `max_connections_per_client` of the slots, so it cannot
//! take them all.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulConnection;
use ipnet::IpNet;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::time::{Instant, Sleep};
use tower::ServiceExt as _;

/// The most of a request head (request line and headers) held in memory before it is refused
/// with 431. hyper's default, about 400 KiB per connection, lets 1 024 connections that never end
/// their headers hold 400 MiB; 32 KiB still fits large cookies and tokens many times over. (hyper
/// bounds its body buffers by the same size, which costs nothing here: request bodies over 64 KiB
/// are refused anyway, and an answer's body is queued for writing, not copied.) hyper checks the
/// buffer only between reads, so a head that arrives in one large read can pass it by up to one
/// read's worth; `http::framing` refuses those, which makes the figure exact.
const MAX_REQUEST_HEAD: usize = 32 * 1024;

pub struct Limits {
    pub header_timeout: Duration,
    /// A write (or flush) pending this long ends the connection.
    pub write_timeout: Duration,
    /// Past this age a connection takes no further request, and is cut `shutdown_timeout` later.
    pub connection_lifetime: Duration,
    pub max_connections: usize,
    pub max_connections_per_client: usize,
    /// Peers not held to `max_connections_per_client`: a trusted proxy carries many clients.
    pub trusted_proxies: Vec<IpNet>,
    /// How long requests in flight may take to finish once their connection is told to close
    /// (at shutdown, or at the end of its lifetime).
    pub shutdown_timeout: Duration,
}

/// Serves `router` on `listener` until `shutdown` completes; then waits for the connections in
/// flight, at most `limits.shutdown_timeout`.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let clients = Clients::new(
        limits.max_connections_per_client,
        limits.trusted_proxies.clone(),
    );
    // Every connection holds a receiver: a value sent tells them all to close, and `closed()`
    // completes when the last of them has ended.
    let (stop, _) = watch::channel(());
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(MAX_REQUEST_HEAD);
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    accept_failed(error).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Over its share, a connection is closed at once, before a byte is read or written: it
        // costs no task, no timer and no slot (see the README, "Slow and greedy clients").
        let Some(share) = clients.enter(peer.ip()) else {
            drop(stream);
            tracing::debug!(%peer, "connection refused: its client holds its share");
            continue;
        };
        // Answers are small: send them now rather than wait to fill a segment.
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            router.clone().oneshot(request)
        });
        let io = TokioIo::new(WriteDeadline::new(stream, limits.write_timeout));
        let connection = http.serve_connection(io, service);
        let stop = stop.subscribe();
        let (lifetime, grace) = (limits.connection_lifetime, limits.shutdown_timeout);
        tokio::spawn(async move {
            drive(connection, stop, lifetime, grace, peer).await;
            drop(share);
            drop(slot);
        });
    }
    drop(listener);
    let _ = stop.send(());
    tokio::select! {
        () = stop.closed() => {}
        () = tokio::time::sleep(limits.shutdown_timeout) => {
            tracing::warn!(
                timeout = ?limits.shutdown_timeout,
                "requests still in flight at the shutdown deadline were cut off"
            );
        }
    }
}

/// Serves one connection until it ends, its lifetime is up, or the server stops: then no further
/// request is read (an idle connection closes now), the one in flight may finish within the grace
/// period, and the connection is cut.
async fn drive<C>(
    connection: C,
    mut stop: watch::Receiver<()>,
    lifetime: Duration,
    grace: Duration,
    peer: SocketAddr,
) where
    C: GracefulConnection,
    C::Error: std::fmt::Display,
{
    tokio::pin!(connection);
    let ended = tokio::select! {
        ended = connection.as_mut() => Some(ended),
        () = tokio::time::sleep(lifetime) => None,
        _ = stop.changed() => None,
    };
    let ended = match ended {
        Some(ended) => ended,
        None => {
            connection.as_mut().graceful_shutdown();
            match tokio::time::timeout(grace, connection.as_mut()).await {
                Ok(ended) => ended,
                Err(_) => {
                    tracing::debug!(%peer, "connection cut after the grace period");
                    Ok(())
                }
            }
        }
    };
    // A connection ends in an error when the client resets it, sends garbage or is too slow:
    // that is the client's business, and nothing to log above debug.
    if let Err(error) = ended {
        tracing::debug!(%peer, error = %error, "connection ended");
    }
}

/// An accept error is about one connection (reset before it was accepted) or about the process
/// (out of file descriptors). Either way the loop goes on; after the second kind, a pause lets
/// connections close instead of spinning on the error.
async fn accept_failed(error: std::io::Error) {
    use std::io::ErrorKind::*;
    if matches!(
        error.kind(),
        ConnectionAborted | ConnectionReset | ConnectionRefused | Interrupted
    ) {
        return;
    }
    tracing::error!(error = %error, "cannot accept connections");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// Open connections per client key (an address, or an IPv6 /64).
type OpenCounts = Arc<Mutex<HashMap<IpAddr, usize>>>;

/// Open connections per client address, each bounded by `cap`.
struct Clients {
    cap: usize,
    exempt: Vec<IpNet>,
    open: OpenCounts,
}

impl Clients {
    fn new(cap: usize, exempt: Vec<IpNet>) -> Clients {
        Clients {
            cap,
            exempt,
            open: Arc::default(),
        }
    }

    /// A share for one more connection from `ip`, or `None` if it holds `cap` already.
    fn enter(&self, ip: IpAddr) -> Option<Share> {
        let ip = ip.to_canonical();
        if self.exempt.iter().any(|net| net.contains(&ip)) {
            return Some(Share { key: None });
        }
        let key = crate::auth::throttle::address_key(ip);
        // A poisoned lock only means a thread panicked between two plain integer updates.
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(key).or_insert(0);
        if *count >= self.cap {
            return None;
        }
        *count += 1;
        Some(Share {
            key: Some((key, self.open.clone())),
        })
    }
}

/// One connection's place in its client's count, given back when dropped. Addresses with no
/// connection are removed, so the map holds at most as many entries as there are connections.
struct Share {
    key: Option<(IpAddr, OpenCounts)>,
}

impl Drop for Share {
    fn drop(&mut self) {
        let Some((key, open)) = self.key.take() else {
            return;
        };
        let mut open = open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&key) {
            *count -= 1;
            if *count == 0 {
                open.remove(&key);
            }
        }
    }
}

/// A connection's socket whose writes must make progress: a write, flush or shutdown that stays
/// pending for `timeout` fails with `TimedOut`, which ends the connection. Progress, not
/// completion, is what counts, so a large answer to a client on a slow link is fine as long as
/// the client keeps reading; a client that reads just enough to make progress is bounded by the
/// connection's lifetime instead.
struct WriteDeadline {
    stream: TcpStream,
    timeout: Duration,
    /// Armed when a write first finds the socket full, disarmed by any write that goes through;
    /// the timer is allocated once per connection and reset after that.
    stalled: Option<Pin<Box<Sleep>>>,
    armed: bool,
}

impl WriteDeadline {
    fn new(stream: TcpStream, timeout: Duration) -> WriteDeadline {
        WriteDeadline {
            stream,
            timeout,
            stalled: None,
            armed: false,
        }
    }

    /// What a write that returned `poll` means once the deadline is taken into account.
    fn check<T>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if poll.is_ready() {
            self.armed = false;
            return poll;
        }
        let deadline = Instant::now() + self.timeout;
        let timer = match &mut self.stalled {
            Some(timer) => {
                if !self.armed {
                    timer.as_mut().reset(deadline);
                }
                timer
            }
            None => self
                .stalled
                .insert(Box::pin(tokio::time::sleep_until(deadline))),
        };
        self.armed = true;
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client read nothing of the answer within the write timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for WriteDeadline {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for WriteDeadline {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.check(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.check(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.stream).poll_flush(cx);
        self.check(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.stream).poll_shutdown(cx);
        self.check(cx, poll)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_holds_at_most_its_share_and_gets_it_back() {
        let clients = Clients::new(2, vec!["10.0.0.0/8".parse().unwrap()]);
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let first = clients.enter(ip("192.0.2.1"));
        let second = clients.enter(ip("::ffff:192.0.2.1"));
        assert!(first.is_some() && second.is_some());
        assert!(clients.enter(ip("192.0.2.1")).is_none());
        assert!(clients.enter(ip("192.0.2.2")).is_some(), "another client");
        drop(first);
        assert!(clients.enter(ip("192.0.2.1")).is_some());

        // IPv6 counts per /64: one host commonly holds the whole block.
        let a = clients.enter(ip("2001:db8:1:2::1"));
        let b = clients.enter(ip("2001:db8:1:2:ffff::9"));
        assert!(a.is_some() && b.is_some());
        assert!(clients.enter(ip("2001:db8:1:2::77")).is_none());
        assert!(clients.enter(ip("2001:db8:1:3::1")).is_some());

        // A trusted proxy carries many clients' connections.
        let proxied: Vec<_> = (0..5).map(|_| clients.enter(ip("10.1.2.3"))).collect();
        assert!(proxied.iter().all(Option::is_some));
        drop((a, b, second, proxied));
        let open = clients.open.lock().unwrap();
        assert!(open.is_empty(), "{open:?}");
    }
}
