//! The HTTP listener of `lt serve`: accepts connections up to a cap and
//! serves each with hyper's HTTP/1 connection, which closes a connection
//! whose request headers do not arrive in time.
//!
//! ```text
//! accept ─▶ a slot of max_connections (none free: the next accept waits)
//!        ─▶ TCP_NODELAY ─▶ the peer's address as ConnectInfo (the login throttle)
//!        ─▶ http1 connection (header_read_timeout) ─▶ the router
//! shutdown future done ─▶ stop accepting ─▶ each connection ends gracefully
//!        (idle ones at once, a request in flight when answered), within CLOSE
//! ```
//!
//! Why not `axum::serve`: it sets no timer, so a client that opens a
//! connection and never finishes its headers holds it (and a file
//! descriptor) forever, and it takes every connection it is offered: a
//! few thousand such clients starve the server and its tools of file
//! descriptors (`Too many open files` in a session's log).

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower_service::Service;

/// How long a client has to send a request's headers once its connection
/// is open or idle between requests, without `header_timeout_ms` (hyper's
/// own default is 30 s).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the open connections get to end after the shutdown future.
const CLOSE: Duration = Duration::from_secs(5);

/// The default cap of open connections: 4,096, or half the process's
/// file-descriptor limit when that is lower (the rest is the tools' and
/// the store's), at least 64.
pub fn default_max_connections() -> usize {
    let soft = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|text| open_files_limit(&text));
    match soft {
        Some(n) => (n / 2).clamp(64, 4096),
        None => 4096,
    }
}

/// The soft "Max open files" of a `/proc/PID/limits` text (`None` when
/// unlimited or not there).
fn open_files_limit(limits: &str) -> Option<usize> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// How connections are admitted and held.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// At most this many connections open at once.
    pub max_connections: usize,
    /// A request's headers must arrive within this, or the connection is
    /// closed.
    pub header_timeout: Duration,
}

/// Serves `app` on `listener` until `shutdown` completes, within `limits`;
/// then lets the open connections end (up to a few seconds) and returns.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let max_connections = limits.max_connections;
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(max_connections.max(1)));
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break, // never closed
            },
            () = &mut shutdown => break,
        };
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors (EMFILE) and the like: wait
                    // for a connection to end rather than spin.
                    eprintln!("lt serve: cannot accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Small writes (an event of a stream) go out at once, not after the
        // peer's delayed acknowledgement (40 ms without TCP_NODELAY).
        let _ = tcp.set_nodelay(true);
        let router = app.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
            // The peer's address: the console's login rate limit counts by it.
            req.extensions_mut().insert(ConnectInfo(peer));
            router.clone().call(req)
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout)
            .serve_connection(TokioIo::new(tcp), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(slot);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(CLOSE, graceful.shutdown()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_open_files_limit_is_read_from_proc_limits() {
        let text = "Limit                     Soft Limit           Hard Limit           Units     \n\
                    Max cpu time              unlimited            unlimited            seconds   \n\
                    Max open files            1024                 524288               files     \n";
        assert_eq!(open_files_limit(text), Some(1024));
        let unlimited =
            "Max open files            unlimited            unlimited            files\n";
        assert_eq!(open_files_limit(unlimited), None);
        assert_eq!(open_files_limit(""), None);
    }
}
