//! A call's events before it runs (`proposed`, `decided`, `scheduled`),
//! their fields borrowed from the control plane: what a sink that keeps
//! no log is handed ([`super::EventSink::observe`]) instead of an
//! [`EventBody`] being built for each (issue 27: an OTLP tap without a
//! log builds no events).

use super::event::{Decision, EventBody};
use serde_json::Value as Json;

/// One of a call's events before it runs, its fields borrowed from the
/// control plane: what [`super::EventSink::observe`] is handed instead of an
/// [`EventBody`] being built ([`CallEvent::to_body`] builds that).
#[derive(Clone, Copy, Debug)]
pub enum CallEvent<'a> {
    /// `proposed`.
    Proposed {
        /// The call's id.
        call_id: &'a str,
        /// The tool's name.
        tool: &'a str,
        /// The argument (a tap that reads no payloads ignores it).
        argument: &'a Json,
    },
    /// `decided`.
    Decided {
        /// The call's id.
        call_id: &'a str,
        /// Allowed or denied.
        decision: Decision,
        /// The rule that decided.
        rule: &'a str,
        /// Why, in one sentence.
        reason: &'a str,
    },
    /// `scheduled`.
    Scheduled {
        /// The call's id.
        call_id: &'a str,
        /// The tool's name.
        tool: &'a str,
        /// `server` or `client`.
        venue: &'a str,
        /// The key the call runs under.
        idempotency_key: &'a str,
    },
}

impl CallEvent<'_> {
    /// The event as the log records it; the argument `null` unless
    /// `payloads` (an outline, [`super::EventSink::payloads`]).
    pub fn to_body(&self, payloads: bool) -> EventBody {
        match *self {
            CallEvent::Proposed {
                call_id,
                tool,
                argument,
            } => EventBody::Proposed {
                call_id: call_id.to_string(),
                tool: tool.to_string(),
                argument: if payloads {
                    argument.clone()
                } else {
                    Json::Null
                },
            },
            CallEvent::Decided {
                call_id,
                decision,
                rule,
                reason,
            } => EventBody::Decided {
                call_id: call_id.to_string(),
                decision,
                rule: rule.to_string(),
                reason: reason.to_string(),
            },
            CallEvent::Scheduled {
                call_id,
                tool,
                venue,
                idempotency_key,
            } => EventBody::Scheduled {
                call_id: call_id.to_string(),
                tool: tool.to_string(),
                venue: venue.to_string(),
                idempotency_key: idempotency_key.to_string(),
            },
        }
    }

    /// The event of `body`, borrowed, if it is one of these.
    pub fn of(body: &EventBody) -> Option<CallEvent<'_>> {
        match body {
            EventBody::Proposed {
                call_id,
                tool,
                argument,
            } => Some(CallEvent::Proposed {
                call_id,
                tool,
                argument,
            }),
            EventBody::Decided {
                call_id,
                decision,
                rule,
                reason,
            } => Some(CallEvent::Decided {
                call_id,
                decision: *decision,
                rule,
                reason,
            }),
            EventBody::Scheduled {
                call_id,
                tool,
                venue,
                idempotency_key,
            } => Some(CallEvent::Scheduled {
                call_id,
                tool,
                venue,
                idempotency_key,
            }),
            _ => None,
        }
    }
}
