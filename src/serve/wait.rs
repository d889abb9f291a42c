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
use tokio::sync::watch;

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
    for field in headers.get_all("prefer") {
        // A byte that is not ASCII elsewhere in the field does not hide
        // the `wait` in it.
        let text = String::from_utf8_lossy(field.as_bytes());
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
            // `delta-seconds` (RFC 9110 §5.6.4: digits only); more than
            // the cap is the cap, however many digits.
            let seconds = value
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .map(|v| v.parse::<u64>().map_or(MAX_WAIT_S, |n| n.min(MAX_WAIT_S)))
                .ok_or_else(|| {
                    (
                        format!("the Prefer header's `{head}` is not a wait in seconds"),
                        format!(
                            "send `Prefer: wait=N` with N whole seconds (at most {MAX_WAIT_S})"
                        ),
                    )
                })?;
            // The first `wait` is the one that counts (RFC 7240 §2).
            return Ok(Some(seconds));
        }
    }
    Ok(None)
}

/// A start waiting for its session: counted in `lt_waiting_starts` and
/// following the session until dropped, at the wait's end or with its
/// request's future (hyper drops it when the client closes the connection
/// mid-request), so a client that leaves leaves nothing waiting behind.
struct Waiting<'a> {
    hub: &'a Hub,
    tenant: &'a str,
    id: &'a str,
    changes: Option<watch::Receiver<u64>>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.hub
            .metrics
            .waiting
            .with_label_values(&[self.tenant])
            .dec();
        if let Some(changes) = self.changes.take() {
            self.hub.release(self.id, changes);
        }
    }
}

/// Returns once session `id` is not live on `hub`'s server and its record
/// is final, `within` passed, or the server began to stop.
pub async fn wait_for_end(hub: &Hub, tenant: &str, id: &str, within: Duration) {
    let deadline = tokio::time::Instant::now() + within;
    hub.metrics.waiting.with_label_values(&[tenant]).inc();
    // Watched before the first look: nothing ends unseen between.
    let mut waiting = Waiting {
        hub,
        tenant,
        id,
        changes: Some(hub.watch(id)),
    };
    let Some(changes) = waiting.changes.as_mut() else {
        return;
    };
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

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn wait_of(fields: &[&[u8]]) -> Result<Option<u64>, (String, String)> {
        let mut headers = HeaderMap::new();
        for f in fields {
            headers.append(
                "prefer",
                HeaderValue::from_bytes(f).expect("a header value"),
            );
        }
        preferred_wait(&headers)
    }

    #[test]
    fn the_first_wait_counts_and_others_are_ignored() {
        assert_eq!(wait_of(&[b"wait=2", b"wait=7"]), Ok(Some(2)));
        assert_eq!(wait_of(&[b"wait=5,wait=7"]), Ok(Some(5)));
        assert_eq!(wait_of(&[b"respond-async, Wait = 05; foo"]), Ok(Some(5)));
        assert_eq!(wait_of(&[b"wait=\"5\""]), Ok(Some(5)));
        assert_eq!(wait_of(&[b"return=minimal"]), Ok(None));
        assert_eq!(wait_of(&[]), Ok(None));
    }

    #[test]
    fn a_wait_past_the_cap_is_the_cap_and_a_wait_that_is_not_digits_is_refused() {
        assert_eq!(wait_of(&[b"wait=61"]), Ok(Some(MAX_WAIT_S)));
        assert_eq!(
            wait_of(&[b"wait=99999999999999999999"]),
            Ok(Some(MAX_WAIT_S))
        );
        for bad in [
            &b"wait="[..],
            b"wait",
            b"wait=-1",
            b"wait=+5",
            b"wait=1e3",
            b"wait=5.0",
        ] {
            assert!(wait_of(&[bad]).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        // A byte that is not ASCII elsewhere does not hide a bad wait.
        assert!(wait_of(&[b"foo=\xe9, wait=abc"]).is_err());
        assert_eq!(wait_of(&[b"foo=\xe9, wait=3"]), Ok(Some(3)));
    }
}
