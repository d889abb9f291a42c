//! `GET /v1/sessions/{id}/events`: Server-Sent Events, from the log.
//!
//! ```text
//! event: log        id: <seq>     data: the committed log line
//! event: tool_call  id: <seq>.1   data: {"type":"tool_call","call_id","tool","argument",
//!                                        "idempotency_key"}   (after client_dispatched <seq>)
//! event: output     id: <seq>.1   data: the final output (lt run --json), after the
//!                                       last event <seq> (0.1 when the log is empty);
//!                                       then the stream ends
//! event: failure    (no id)       data: {"error": {code, message, hint, session}}: the
//!                                       stream cannot go on (a log line in the store
//!                                       cannot be read: record_damaged; the store
//!                                       failed: store); then the stream ends
//! ```
//!
//! Every line sent is a committed one: read from the store, or taken from
//! the followers' ring of lines this server committed lately (the same
//! bytes, [`crate::serve::follow`]), which saves reading back what was
//! just written. A stream opened on a restarted server, or (later) on
//! another worker, reads the store and shows the same events.
//! Reconnecting with `Last-Event-ID: N` sends what follows event N (its
//! `.1` extra included); `N.1` what follows that extra: nothing is missed,
//! nothing is sent twice (the id is read and checked by `event_id.rs`).

use super::error::ApiError;
use super::event_id::{self, Cursor, Requested};
use super::state::{known, tenant, AppState};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value as Json};
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// What every line is read for (other fields are skipped, not kept).
#[derive(serde::Deserialize)]
struct Head<'a> {
    seq: Option<u64>,
    #[serde(borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    call_id: Option<std::borrow::Cow<'a, str>>,
}

/// The stream's state: what was sent, and what the tool_call events need.
struct Follow {
    id: String,
    cursor: Cursor,
    /// Every event read so far has `seq` below this.
    next: u64,
    /// Each call's tool and argument (from `proposed`).
    proposed: HashMap<String, (Json, Json)>,
    /// Each call's idempotency key (from `scheduled`).
    keys: HashMap<String, Json>,
    /// `session_ended` was read: nothing follows it in the log.
    ended: bool,
    /// Why the line read last could not be read (the store holds a
    /// damaged line): the stream ends there with a `failure` event, never
    /// skipping it.
    damaged: Option<String>,
}

impl Follow {
    fn after_cursor(&self, seq: u64, extra: bool) -> bool {
        match self.cursor.seq {
            None => true,
            Some(c) => seq > c || (seq == c && extra && !self.cursor.extra),
        }
    }

    /// The SSE events of one log line. `true`: it ends the session's log
    /// (`session_ended`), or it cannot be read.
    fn events_of(&mut self, line: &str, out: &mut Vec<Event>) -> bool {
        // The head alone (no tree of the whole line, whose argument or
        // program may be large); the whole line only where it is needed.
        let head = match serde_json::from_str::<Head>(line) {
            Ok(head) => head,
            Err(e) => {
                return self.damage(format!("its event {} is not a log line ({e})", self.next))
            }
        };
        let seq = head.seq.unwrap_or(self.next);
        self.next = seq + 1;
        let kind = head.kind.as_deref().unwrap_or("");
        let call = head.call_id.as_deref().unwrap_or("").to_string();
        if kind == "proposed" || kind == "scheduled" {
            let v = match serde_json::from_str::<Json>(line) {
                Ok(v) => v,
                Err(e) => return self.damage(format!("its event {seq} is not a log line ({e})")),
            };
            let field = |name: &str| v.get(name).cloned().unwrap_or(Json::Null);
            if kind == "proposed" {
                self.proposed
                    .insert(call.clone(), (field("tool"), field("argument")));
            } else {
                self.keys.insert(call.clone(), field("idempotency_key"));
            }
        }
        if self.after_cursor(seq, false) {
            out.push(Event::default().event("log").id(seq.to_string()).data(line));
        }
        if kind == "client_dispatched" && self.after_cursor(seq, true) {
            let (tool, argument) = self.proposed.get(&call).cloned().unwrap_or_default();
            let key = self.keys.get(&call).cloned().unwrap_or(Json::Null);
            let data = json!({
                "type": "tool_call",
                "call_id": call,
                "tool": tool,
                "argument": argument,
                "idempotency_key": key,
            });
            out.push(
                Event::default()
                    .event("tool_call")
                    .id(format!("{seq}.1"))
                    .data(data.to_string()),
            );
        }
        self.ended |= kind == "session_ended";
        kind == "session_ended"
    }

    /// Notes that the line cannot be read (`why`); `true`, as at an end.
    fn damage(&mut self, why: String) -> bool {
        self.damaged = Some(why);
        true
    }
}

/// The `failure` event that ends a stream which cannot go on: `e`'s body,
/// as the same request would have been answered (no id: a reconnect
/// resumes after the last event sent).
fn failure(e: &ApiError) -> Event {
    Event::default().event("failure").data(e.body().to_string())
}

/// The most lines read from the store at once: a stream holds one page,
/// and reads the next when the client has taken it (the channel's room),
/// so a client that never reads costs a page, not its session's log.
const PAGE: usize = 256;

/// The handler.
pub async fn events(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let t = tenant(&state, &headers)?.to_string();
    let id = super::input::path_ids(path)?;
    let wanted = event_id::requested(&headers)?;
    let cursor = match wanted {
        Requested::Whole => {
            known(&state, &t, &id)?;
            Cursor {
                seq: None,
                extra: false,
            }
        }
        // A reconnect: the id must be one the log has reached.
        wanted => {
            let rec = super::state::record(&state, &t, &id)?;
            event_id::cursor(&state, &id, &rec, wanted)?
        }
    };
    let (tx, rx) = mpsc::channel::<Event>(PAGE);
    // Watched before the first read: nothing commits unseen between.
    let changes = state.hub.watch(&id);
    let follow = Follow {
        id,
        cursor,
        next: 0,
        proposed: HashMap::new(),
        keys: HashMap::new(),
        ended: false,
        damaged: None,
    };
    tokio::spawn(async move {
        let (state, id) = (Arc::clone(&state), follow.id.clone());
        let changes = pump(Arc::clone(&state), t, follow, changes, tx).await;
        state.hub.release(&id, changes);
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok::<_, Infallible>(e), rx))
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

/// Sends the session's events until its output, the client leaving, or
/// the server stopping; gives `changes` back.
async fn pump(
    state: Arc<AppState>,
    tenant: String,
    mut f: Follow,
    mut changes: watch::Receiver<u64>,
    tx: mpsc::Sender<Event>,
) -> watch::Receiver<u64> {
    follow(&state, &tenant, &mut f, &mut changes, &tx).await;
    changes
}

/// [`pump`]'s loop.
async fn follow(
    state: &AppState,
    tenant: &str,
    f: &mut Follow,
    changes: &mut watch::Receiver<u64>,
    tx: &mpsc::Sender<Event>,
) {
    let mut stopping = state.hub.stopping();
    // The record is read when the log may be over, not on every wake.
    let mut check_end = true;
    // Lines the end check read from the store (the ring may not hold them
    // yet: its notices come through another task).
    let mut read: Option<Vec<Arc<str>>> = None;
    loop {
        if *stopping.borrow() {
            return;
        }
        // Everything committed past what was sent: from the ring when it
        // reaches back far enough, else from the store.
        // `full`: a whole page came from the store; more may follow.
        let (lines, full): (Vec<Arc<str>>, bool) = match read.take() {
            Some(lines) => (lines, false),
            None => match state.hub.recent_after(&f.id, f.next) {
                Some(lines) => (lines, false),
                None => match state
                    .hub
                    .store
                    .events_page(&f.id, f.next.checked_sub(1), PAGE)
                {
                    Ok(l) => (
                        l.iter().map(|l| Arc::from(l.as_str())).collect(),
                        l.len() == PAGE,
                    ),
                    Err(e) => {
                        let _ = tx.send(failure(&ApiError::store(e))).await;
                        return;
                    }
                },
            },
        };
        check_end |= lines.is_empty();
        let mut out = Vec::new();
        for l in lines {
            check_end |= f.events_of(&l, &mut out);
            // Sent as made: the page's events are not all held at once.
            for e in out.drain(..) {
                if tx.send(e).await.is_err() {
                    return;
                }
            }
            if let Some(why) = f.damaged.take() {
                let _ = tx.send(failure(&ApiError::damaged(&f.id, &why))).await;
                return;
            }
        }
        if full {
            continue;
        }
        // Ended here lately: its output is known, its last line was sent.
        if f.ended {
            if let Some(output) = state.hub.end_of(&f.id) {
                let last = f.next.saturating_sub(1);
                if f.after_cursor(last, true) {
                    let e = Event::default()
                        .event("output")
                        .id(format!("{last}.1"))
                        .data(&*output);
                    let _ = tx.send(e).await;
                }
                return;
            }
        }
        // A session this server runs is not over: nothing to read.
        if check_end && state.hub.live(tenant, &f.id).is_none() {
            // Over, and every event read: the output ends the stream.
            let rec = match super::state::record(state, tenant, &f.id) {
                Ok(r) => r,
                Err(e) => {
                    let _ = tx.send(failure(&e)).await;
                    return;
                }
            };
            if rec.status.is_final() && state.hub.live(tenant, &f.id).is_none() {
                let more = match state
                    .hub
                    .store
                    .events_page(&f.id, f.next.checked_sub(1), PAGE)
                {
                    Ok(l) => l,
                    Err(e) => {
                        let _ = tx.send(failure(&ApiError::store(e))).await;
                        return;
                    }
                };
                if !more.is_empty() {
                    // Sent next, from what was read: re-asking the ring
                    // could spin until its notices arrive.
                    read = Some(more.into_iter().map(Arc::from).collect());
                    continue;
                }
                let last = f.next.saturating_sub(1);
                if f.after_cursor(last, true) {
                    let data = rec.output.unwrap_or(Json::Null).to_string();
                    let e = Event::default()
                        .event("output")
                        .id(format!("{last}.1"))
                        .data(data);
                    let _ = tx.send(e).await;
                }
                return;
            }
        }
        check_end = false;
        tokio::select! {
            r = changes.changed() => if r.is_err() { return },
            _ = tokio::time::sleep(Duration::from_secs(1)) => check_end = true,
            _ = tx.closed() => return,
            _ = stopping.changed() => return,
        }
    }
}
