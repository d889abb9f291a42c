//! `Last-Event-ID` of `GET /v1/sessions/{id}/events`: where a reconnecting
//! client left off. Only an id this server sent is taken: `N` (a log
//! event's seq, decimal, no sign, no leading zero) of an event the log
//! has, and `N.1` of the `tool_call` after a `client_dispatched` event N or
//! of the `output` after a finished session's last event N. An empty value
//! is no id (an EventSource never sends one; it means the whole log).
//!
//! Every other id is refused the same way: `400 bad_request`, the message
//! `Last-Event-ID "…" is not an id this server sent: <why>` (the id shown
//! at most [`super::error::shown`]'s length, bytes that are not UTF-8 replaced),
//! and the one hint [`ID_HINT`].
//!
//! ```text
//! header ─▶ parse: malformed ─▶ 400 ("neither N nor N.1")
//!                  N, N.1 (N may overflow u64) ─▶ against the session's record:
//!                  N past the log's end ─▶ 400 ("past the end of the log of session S, …")
//!                  N.1 of an event with no .1 ─▶ 400 ("event N is `kind` …")
//!                  else ─▶ Cursor
//! ```

use super::error::ApiError;
use super::state::AppState;
use super::store::SessionRecord;
use axum::http::HeaderMap;

/// Where a reconnecting client left off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    /// The last event seen (`None`: none).
    pub seq: Option<u64>,
    /// Its extra (`.1`) was seen too.
    pub extra: bool,
}

/// What a client is told to send instead of an id this server never sent.
pub const ID_HINT: &str = "send the id of the last event received: N for a log event, N.1 only for the tool_call after a client_dispatched event N or the output after a finished session's last event N; no Last-Event-ID for the whole log";

/// A `Last-Event-ID` as sent, read but not yet checked against the log.
#[derive(Debug, PartialEq, Eq)]
pub enum Requested {
    /// None (or empty): the whole log.
    Whole,
    /// `N` or `N.1`.
    Id {
        /// The header's text.
        text: String,
        /// N (`None`: past any `u64`).
        seq: Option<u64>,
        /// `.1` follows N.
        extra: bool,
    },
}

/// The refusal of every `Last-Event-ID` this server never sent.
fn never_sent(text: &str, why: &str) -> ApiError {
    ApiError::bad(format!(
        "Last-Event-ID {:?} is not an id this server sent: {why}",
        super::error::shown(text)
    ))
    .hint(ID_HINT)
}

/// Reads `headers`' `Last-Event-ID`. Errors: 400, not `N` or `N.1`.
pub fn requested(headers: &HeaderMap) -> Result<Requested, ApiError> {
    let Some(v) = headers.get("last-event-id") else {
        return Ok(Requested::Whole);
    };
    let text = String::from_utf8_lossy(v.as_bytes()).into_owned();
    if text.is_empty() {
        return Ok(Requested::Whole);
    }
    let (n, extra) = match text.strip_suffix(".1") {
        Some(n) => (n, true),
        None => (text.as_str(), false),
    };
    let canonical =
        !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && (n == "0" || !n.starts_with('0'));
    if !canonical {
        return Err(never_sent(
            &text,
            "it is neither N nor N.1 (N a decimal number without sign or leading zero)",
        ));
    }
    let seq = n.parse::<u64>().ok();
    Ok(Requested::Id { text, seq, extra })
}

/// The cursor of `wanted` for session `rec` (`id`), checked against its
/// log. Errors: 400 (an id past the log's end, or `N.1` of an event that
/// has no `.1`), 503 (the store failed).
pub fn cursor(
    state: &AppState,
    id: &str,
    rec: &SessionRecord,
    wanted: Requested,
) -> Result<Cursor, ApiError> {
    let (text, seq, extra) = match wanted {
        Requested::Whole => {
            return Ok(Cursor {
                seq: None,
                extra: false,
            })
        }
        Requested::Id { text, seq, extra } => (text, seq, extra),
    };
    let last = rec.events.checked_sub(1);
    let seq = match seq {
        Some(seq) if last.is_some_and(|l| seq <= l) || (extra && seq == 0) => seq,
        _ => {
            let ends = last.map_or("which has no event yet".to_string(), |l| {
                format!("whose last event is {l}")
            });
            return Err(never_sent(
                &text,
                &format!("it is past the end of the log of session {id}, {ends}"),
            ));
        }
    };
    if extra {
        check_extra(state, id, rec, seq, &text)?;
    }
    Ok(Cursor {
        seq: Some(seq),
        extra,
    })
}

/// Refuses `N.1` unless the server sent that id: the tool_call after a
/// `client_dispatched` event N, or the output after event N, the last of a
/// session that is over (`0.1` for one over with no event). Errors: 400.
fn check_extra(
    state: &AppState,
    id: &str,
    rec: &SessionRecord,
    seq: u64,
    text: &str,
) -> Result<(), ApiError> {
    let last = rec.events.checked_sub(1);
    if rec.status.is_final() && (last == Some(seq) || (last.is_none() && seq == 0)) {
        return Ok(());
    }
    let line = state
        .hub
        .store
        .events_page(id, seq.checked_sub(1), 1)
        .map_err(ApiError::store)?;
    #[derive(serde::Deserialize)]
    struct Kind {
        kind: Option<String>,
    }
    let kind = line
        .first()
        .and_then(|l| serde_json::from_str::<Kind>(l).ok())
        .and_then(|h| h.kind);
    match kind.as_deref() {
        Some("client_dispatched") => Ok(()),
        Some(k) => Err(never_sent(
            text,
            &format!("event {seq} is `{k}`, which has no .1"),
        )),
        None if last.is_none() => Err(never_sent(
            text,
            &format!("it is past the end of the log of session {id}, which has no event yet"),
        )),
        None => Err(never_sent(
            text,
            &format!("session {id} has no event {seq}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn read(value: &[u8]) -> Result<Requested, String> {
        let mut h = HeaderMap::new();
        h.insert(
            "last-event-id",
            HeaderValue::from_bytes(value).expect("a header value"),
        );
        requested(&h).map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn ids_are_read_as_the_server_writes_them() {
        assert_eq!(requested(&HeaderMap::new()).ok(), Some(Requested::Whole));
        assert_eq!(read(b"").ok(), Some(Requested::Whole));
        let id = |text: &str, seq, extra| Requested::Id {
            text: text.into(),
            seq,
            extra,
        };
        assert_eq!(read(b"7").ok(), Some(id("7", Some(7), false)));
        assert_eq!(read(b"0.1").ok(), Some(id("0.1", Some(0), true)));
        // Past any u64: read, and refused later as past the log's end.
        let huge = "9".repeat(30);
        assert_eq!(read(huge.as_bytes()).ok(), Some(id(&huge, None, false)));
    }

    #[test]
    fn every_malformed_id_gets_one_message_shape_and_the_hint() {
        let long = "x".repeat(5000);
        for bad in [
            &b"+1"[..],
            b"01",
            b"1.2",
            b"1.",
            b"-1",
            b"abc",
            b"\xff",
            long.as_bytes(),
        ] {
            let e = read(bad).expect_err("refused");
            assert!(
                e.contains("is not an id this server sent: it is neither N nor N.1"),
                "{e}"
            );
            assert!(e.contains(ID_HINT), "{e}");
            assert!(e.len() < 1000, "the id is cut: {}", e.len());
        }
    }
}
