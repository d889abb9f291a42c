//! The session's sink guard: what a stopped session may still record.
//!
//! Once the session is abandoned ([`Cancel::abandon`]) nothing more is
//! recorded: the log ends where a killed process would have left it, and
//! can be resumed. An interrupted session ([`Cancel::interrupt`], a signal)
//! records one event more, `session_interrupted`, saying why it ended and
//! which calls it stopped. The guard keeps the calls in flight (a
//! `scheduled` without an outcome), since it sees every event the session
//! appends, and fills them in:
//!
//! ```text
//! scheduled n3 (key s:n3) ─▶ in flight ─▶ completed n3 ─▶ done
//!                                     └─▶ SIGINT ─▶ session_interrupted
//!                                          {reason, stopped: [{call_id: n3, started}]}
//! ```
//!
//! `started` is whether the call may have reached its tool: the executor
//! host notes each call it hands over ([`Cancel::note_started`]), and a
//! client-venue call counts from its `client_dispatched`.

use crate::log::{CallEvent, EventBody, EventSink};
use crate::runtime::cancel::Cancel;
use serde_json::{json, Value as Json};

/// A call scheduled and not finished.
struct InFlight {
    call_id: String,
    key: String,
    /// Handed to the client (`client_dispatched`).
    dispatched: bool,
}

/// The session's sink, guarded (see the module note).
pub(super) struct Guarded<'a> {
    inner: Box<dyn EventSink + 'a>,
    cancel: Cancel,
    in_flight: Vec<InFlight>,
    /// `session_interrupted` was appended (it is the last event).
    interrupted: bool,
}

impl<'a> Guarded<'a> {
    /// Guards `inner` with the session's `cancel`.
    pub(super) fn new(inner: Box<dyn EventSink + 'a>, cancel: Cancel) -> Guarded<'a> {
        Guarded {
            inner,
            cancel,
            in_flight: Vec::new(),
            interrupted: false,
        }
    }

    /// The calls in flight as `session_interrupted`'s `stopped`.
    fn stopped(&self) -> Json {
        Json::Array(
            self.in_flight
                .iter()
                .map(|c| {
                    json!({
                        "call_id": c.call_id,
                        "started": c.dispatched || self.cancel.may_have_started(&c.key),
                    })
                })
                .collect(),
        )
    }

    /// Call `call_id` is in flight, with idempotency key `key`.
    fn scheduled(&mut self, call_id: &str, key: &str) {
        // Run again after a resume: the same call, scheduled anew.
        self.in_flight.retain(|c| c.call_id != call_id);
        self.in_flight.push(InFlight {
            call_id: call_id.to_string(),
            key: key.to_string(),
            dispatched: false,
        });
    }

    fn track(&mut self, body: &EventBody) {
        match body {
            EventBody::Scheduled {
                call_id,
                idempotency_key,
                ..
            } => self.scheduled(call_id, idempotency_key),
            EventBody::ClientDispatched { call_id } => {
                for c in self.in_flight.iter_mut().filter(|c| c.call_id == *call_id) {
                    c.dispatched = true;
                }
            }
            EventBody::Completed { call_id, .. }
            | EventBody::Failed { call_id, .. }
            | EventBody::TimedOut { call_id, .. } => {
                self.in_flight.retain(|c| c.call_id != *call_id)
            }
            _ => {}
        }
    }
}

/// The `session_interrupted` event of an interrupted session, its
/// `stopped` calls left for the guard to fill in.
pub(super) fn interrupted(cancel: &Cancel) -> EventBody {
    EventBody::SessionInterrupted {
        reason: cancel.reason().unwrap_or_else(|| "interrupted".to_string()),
        stopped: Json::Null,
    }
}

impl EventSink for Guarded<'_> {
    fn append(&mut self, body: EventBody) -> std::io::Result<()> {
        if self.cancel.is_abandoned() {
            return match body {
                EventBody::SessionInterrupted { reason, .. }
                    if self.cancel.is_interrupted() && !self.interrupted =>
                {
                    self.interrupted = true;
                    let stopped = self.stopped();
                    self.inner
                        .append(EventBody::SessionInterrupted { reason, stopped })
                }
                _ => Err(std::io::Error::other(
                    "the session was abandoned; nothing more is recorded",
                )),
            };
        }
        self.track(&body);
        self.inner.append(body)
    }

    fn records(&self) -> bool {
        self.inner.records()
    }

    fn payloads(&self) -> bool {
        self.inner.payloads()
    }

    fn observes(&self) -> bool {
        self.inner.observes()
    }

    fn idempotent_tools(&mut self, tools: &std::collections::BTreeSet<String>) {
        self.inner.idempotent_tools(tools)
    }

    /// As [`EventSink::append`]: refused once abandoned; a `scheduled`
    /// call is in flight.
    fn observe(&mut self, event: &CallEvent<'_>) -> std::io::Result<()> {
        if self.cancel.is_abandoned() {
            return Err(std::io::Error::other(
                "the session was abandoned; nothing more is recorded",
            ));
        }
        if let CallEvent::Scheduled {
            call_id,
            idempotency_key,
            ..
        } = *event
        {
            self.scheduled(call_id, idempotency_key);
        }
        self.inner.observe(event)
    }
}
