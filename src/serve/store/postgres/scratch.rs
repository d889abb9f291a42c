//! Fresh databases for tests and benchmarks: `LT_TEST_POSTGRES_URL`
//! names a server (`tests/fixtures/postgres/cluster.sh start` prints it),
//! and each test gets a database of its own on it, so tests never see
//! each other's sessions (nor each other's server lock).
//!
//! ```text
//! test_server()  ─▶ Some(url) | None (unset: the caller says SKIPPED loudly;
//!                                      under CI=true it panics instead)
//! fresh_database(url, label) ─▶ CREATE DATABASE lt_<label>_<pid>_<n> ─▶ its URL
//! ```

use super::url::Target;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The variable naming the test server.
pub const TEST_URL_VAR: &str = "LT_TEST_POSTGRES_URL";

/// The test server's URL from [`TEST_URL_VAR`]. `None` when it is unset,
/// after printing that `what` is skipped; under CI (`CI=true`) an unset
/// variable panics: CI must run the PostgreSQL tests, never skip them.
pub fn test_server(what: &str) -> Option<String> {
    match std::env::var(TEST_URL_VAR) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(
                !ci,
                "{what}: {TEST_URL_VAR} is unset under CI=true: the PostgreSQL tests must run \
                 (.ci/run starts a cluster: tests/fixtures/postgres/cluster.sh start)"
            );
            // Straight to the process's stderr: the test harness captures
            // `eprintln!` of a passing test, and a skip must be seen.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED (PostgreSQL): {what}: {TEST_URL_VAR} is unset; \
                 run `eval $(tests/fixtures/postgres/cluster.sh start)` first (docs/testing.md)"
            );
            None
        }
    }
}

/// Creates an empty database on `server` (a URL of any of its databases)
/// and returns its URL. Errors: the server's, without the password.
pub fn fresh_database(server: &str, label: &str) -> Result<String, String> {
    static N: AtomicUsize = AtomicUsize::new(0);
    let target = Target::parse(server).map_err(|e| e.to_string())?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let label: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(24)
        .collect();
    let name = format!(
        "lt_{label}_{}_{}_{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let mut client = target.connect().map_err(|e| e.to_string())?;
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .map_err(|e| target.scrub(&e))?;
    Ok(with_database(server, &name))
}

/// `url` naming database `db` instead of its own (its query kept).
pub fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let authority_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    let mut out = format!("{}/{db}", &base[..authority_end]);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}
