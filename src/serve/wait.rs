//! `Prefer: wait=N` on `POST /v1/sessions` (RFC 7240 §4.3): the answer
//! waits up to N seconds for the session to end and then carries the
//! session's view (`GET /v1/sessions/{id}`'s body: status, value, output),
//! so a service consumer runs a session in one request instead of a
//! start and an event stream.
//!
//! ```text
//! Prefer: wait=N ─▶ start (201 new / 200 the Idempotency-Key's session)
//!                ─▶ watch its commits until it is no longer live here
//!                   (ended, failed, cancelled), N seconds pass (it runs on,
//!                   or waits for the client or an approval), or the server
//!                   stops
//!                ─▶ the same status code, body = the session's view then,
//!                   `Preference-Applied: wait=N`
//! ```
//!
//! N is capped at [`MAX_WAIT_S`]; other preferences (`respond-async`,
//! `return=…`) are ignored, as RFC 7240 §2 asks of preferences a server
//! does not apply. A `wait` whose value is not a number of seconds is
//! refused (400) rather than ignored: the client meant to wait.

use super::hub::Hub;
use axum::http::HeaderMap;
use std::time::Duration;

/// The longest a request waits for its session (seconds).
pub const MAX_WAIT_S: u64 = 60;

/// How often a waiting request looks at the session without a notice (a
/// session another worker runs sends none here).
const RECHECK: Duration = Duration::from_secs(1);

/// The `wait` preference of `headers`' `Prefer` fields, in seconds (capped
/// at [`MAX_WAIT_S`]); `None` when none asks to wait. Errors: a `wait`
/// that is not a whole number of seconds, as `(message, hint)` (the API
/// answers 400).
pub fn preferred_wait(headers: &HeaderMap) -> Result<Option<u64>, (String, String)> {
    let mut wait = None;
    for field in headers.get_all("prefer") {
        let text = field.to_str().unwrap_or("");
        for pref in text.split(',') {
            // `token [= word] *( ";" parameter )`: the parameters of a
            // preference do not concern `wait`.
            let head = pref.split(';').next().unwrap_or("").trim();
            let (name, value) = match head.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim().trim_matches('"'))),
                None => (head, None),
            };
            if !name.eq_ignore_ascii_case("wait") {
                continue;
            }
            let seconds = value.and_then(|v| v.parse::<u64>().ok()).ok_or_else(|| {
                (
                    format!("the Prefer header's `{head}` is not a wait in seconds"),
                    format!("send `Prefer: wait=N` with N whole seconds (at most {MAX_WAIT_S})"),
                )
            })?;
            wait = Some(seconds.min(MAX_WAIT_S));
        }
    }
    Ok(wait)
}

/// Returns once session `id` is not live on `hub`'s server and its record
/// is final, `within` passed, or the server began to stop.
pub async fn wait_for_end(hub: &Hub, tenant: &str, id: &str, within: Duration) {
    let deadline = tokio::time::Instant::now() + within;
    // Watched before the first look: nothing ends unseen between.
    let mut changes = hub.watch(id);
    let mut stopping = hub.stopping();
    loop {
        if *stopping.borrow() || ended(hub, tenant, id) {
            break;
        }
        tokio::select! {
            r = changes.changed() => if r.is_err() { break },
            _ = tokio::time::sleep(RECHECK) => {}
            _ = tokio::time::sleep_until(deadline) => break,
            _ = stopping.changed() => break,
        }
    }
    hub.release(id, changes);
}

/// Whether session `id` is over: not live on this server (a live one is
/// known without a read) and final in the store.
fn ended(hub: &Hub, tenant: &str, id: &str) -> bool {
    if hub.live(tenant, id).is_some() {
        return false;
    }
    if hub.end_of(id).is_some() {
        return true;
    }
    matches!(hub.store.session(tenant, id), Ok(Some(r)) if r.status.is_final())
}
