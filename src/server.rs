//! The HTTP/1.1 accept loop. Hand-written on hyper rather than `axum::serve`, which offers no
//! header-read timeout and no connection limit: here a client that sends its headers too slowly
//! is cut off, open connections are bounded (the next one waits in the kernel's backlog until a
//! slot frees), and shutdown stops accepting, then lets requests in flight finish up to a deadline.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt as _;

pub struct Limits {
    pub header_timeout: Duration,
    pub max_connections: usize,
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
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
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
        // Answers are small: send them now rather than wait to fill a segment.
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            router.clone().oneshot(request)
        });
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            // A connection ends in an error when the client resets it, sends garbage or is too
            // slow: that is the client's business, and nothing to log above debug.
            if let Err(error) = connection.await {
                tracing::debug!(%peer, error = %error, "connection ended");
            }
            drop(slot);
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(limits.shutdown_timeout) => {
            tracing::warn!(
                timeout = ?limits.shutdown_timeout,
                "requests still in flight at the shutdown deadline were cut off"
            );
        }
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
