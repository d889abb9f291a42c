//! Reading an event from a parsed line: the types and shapes of every
//! field, with messages that name the field, the kind and what was
//! expected:
//!
//! ```text
//! field `calls` of a `session_ended` event must be a non-negative integer, found the string "3"
//! a `decided` event needs the field `reason` (a string)
//! unknown event kind "approved" (the kinds are session_started, proposed, …)
//! ```
//!
//! Values are moved out of the parsed object, never cloned or
//! re-deserialised: a tool's output may be nested deeper than a recursive
//! conversion could follow.

use super::event::{Decision, Event, EventBody, EventKind, KINDS};
use super::json::abbreviate;
use crate::runtime::boundary::drop_deep;
use serde::Deserialize;
use serde_json::{Map, Value as Json};

impl EventBody {
    /// Takes the fields of `kind` out of `fields` (moving the values).
    /// The match is exhaustive: a kind declared in `event.rs` without a
    /// reading here does not compile.
    fn from_fields(kind: EventKind, f: &mut Fields) -> Result<EventBody, String> {
        use EventKind as K;
        Ok(match kind {
            K::SessionStarted => EventBody::SessionStarted {
                lt_version: f.string("lt_version")?,
                program: f.string("program")?,
                program_hash: f.string("program_hash")?,
                profile: f.object("profile")?,
                registry_hash: f.string("registry_hash")?,
                limits: f.object("limits")?,
            },
            K::Proposed => EventBody::Proposed {
                call_id: f.string("call_id")?,
                tool: f.string("tool")?,
                argument: f.json("argument")?,
            },
            K::Decided => EventBody::Decided {
                call_id: f.string("call_id")?,
                decision: f.decision("decision")?,
                rule: f.string("rule")?,
                reason: f.string("reason")?,
            },
            K::Scheduled => EventBody::Scheduled {
                call_id: f.string("call_id")?,
                tool: f.string("tool")?,
                venue: f.string("venue")?,
                idempotency_key: f.string("idempotency_key")?,
            },
            K::ClientDispatched => EventBody::ClientDispatched {
                call_id: f.string("call_id")?,
            },
            K::ClientReported => EventBody::ClientReported {
                call_id: f.string("call_id")?,
                report: f.json("report")?,
            },
            K::ClientRejected => EventBody::ClientRejected {
                report: f.json("report")?,
                reason: f.string("reason")?,
            },
            K::ApprovalRequested => EventBody::ApprovalRequested {
                approval_id: f.string("approval_id")?,
                tool: f.string("tool")?,
                argument: f.json("argument")?,
            },
            K::ApprovalDecided => EventBody::ApprovalDecided {
                approval_id: f.string("approval_id")?,
                decision: f.decision("decision")?,
                by: f.string("by")?,
                reason: f.string("reason")?,
                token: f.json("token")?,
            },
            K::AnnotationStarted => EventBody::AnnotationStarted {
                annotation_id: f.string("annotation_id")?,
                intent: f.string("intent")?,
                hypothesis: f.json("hypothesis")?,
                notes: f.json("notes")?,
                parent: f.json("parent")?,
            },
            K::AnnotationEnded => EventBody::AnnotationEnded {
                annotation_id: f.string("annotation_id")?,
                calls: f.json("calls")?,
                outcome: f.string("outcome")?,
            },
            K::SessionResumed => EventBody::SessionResumed {
                lt_version: f.string("lt_version")?,
                registry_hash: f.string("registry_hash")?,
                dropped_bytes: f.u64("dropped_bytes")?,
            },
            K::SessionInterrupted => EventBody::SessionInterrupted {
                reason: f.string("reason")?,
                stopped: f.json("stopped")?,
            },
            K::Completed => EventBody::Completed {
                call_id: f.string("call_id")?,
                output: f.json("output")?,
                result: f.json("result")?,
            },
            K::Failed => EventBody::Failed {
                call_id: f.string("call_id")?,
                failure: f.string("failure")?,
                message: f.string("message")?,
                result: f.json("result")?,
                stderr: f.optional_string("stderr")?,
            },
            K::TimedOut => EventBody::TimedOut {
                call_id: f.string("call_id")?,
                message: f.string("message")?,
                result: f.json("result")?,
                stderr: f.optional_string("stderr")?,
            },
            K::SessionEnded => EventBody::SessionEnded {
                status: f.string("status")?,
                value: f.optional("value")?,
                r#type: f.optional_string("type")?,
                error: f.optional("error")?,
                calls: f.u64("calls")?,
                steps: f.u64("steps")?,
            },
            K::AgentStarted => EventBody::AgentStarted {
                lt_version: f.string("lt_version")?,
                task: f.string("task")?,
                declarations: f.string("declarations")?,
                system: f.string("system")?,
                model: f.object("model")?,
                settings: f.object("settings")?,
                profile: f.object("profile")?,
                registry_hash: f.string("registry_hash")?,
                limits: f.object("limits")?,
                tags: f.object("tags")?,
            },
            K::TaskClassified => EventBody::TaskClassified {
                label: f.string("label")?,
                matched: f.bool("matched")?,
                profile: f.object("profile")?,
                settings: f.object("settings")?,
            },
            K::ModelRequested => EventBody::ModelRequested {
                request_id: f.string("request_id")?,
                messages: f.json("messages")?,
                sent: f.u64("sent")?,
                samples: f.u64("samples")?,
            },
            K::ModelRetried => EventBody::ModelRetried {
                request_id: f.string("request_id")?,
                attempt: f.u64("attempt")?,
                error: f.string("error")?,
                message: f.string("message")?,
                delay_ms: f.u64("delay_ms")?,
            },
            K::ModelReplied => EventBody::ModelReplied {
                request_id: f.string("request_id")?,
                texts: f.json("texts")?,
                usage: f.json("usage")?,
            },
            K::ModelFailed => EventBody::ModelFailed {
                request_id: f.string("request_id")?,
                error: f.string("error")?,
                message: f.string("message")?,
                attempts: f.u64("attempts")?,
            },
            K::ProgramChecked => EventBody::ProgramChecked {
                request_id: f.string("request_id")?,
                sample: f.u64("sample")?,
                status: f.string("status")?,
                program: f.json("program")?,
                diagnostics: f.json("diagnostics")?,
            },
            K::ProgramAccepted => EventBody::ProgramAccepted {
                request_id: f.string("request_id")?,
                sample: f.u64("sample")?,
                votes: f.u64("votes")?,
                program_hash: f.string("program_hash")?,
            },
            K::AgentEnded => EventBody::AgentEnded {
                status: f.string("status")?,
                answer: f.json("answer")?,
                reason: f.string("reason")?,
                turns: f.u64("turns")?,
                requests: f.u64("requests")?,
            },
        })
    }
}

impl Event {
    /// Reads an event from a parsed line, moving its values. Checks the
    /// types and shapes of every field (hex digests, the session id), that
    /// the kind is known and that no field is missing or unknown; does not
    /// check the hash or the chain (see [`super::verify()`]).
    pub fn from_value(value: Json) -> Result<Event, String> {
        let map = match value {
            Json::Object(map) => map,
            other => {
                let found = describe(&other);
                drop_deep(other);
                return Err(format!("an event is a JSON object, found {found}"));
            }
        };
        Event::from_map(map)
    }

    fn from_map(map: Map<String, Json>) -> Result<Event, String> {
        let mut f = Fields {
            map,
            kind: "",
            missing_kind: true,
        };
        let seq = f.u64("seq")?;
        let ts = f.string("ts")?;
        let session = f.string("session")?;
        if !is_hex(&session, 32) {
            return Err(format!(
                "field `session` must be 32 lowercase hex digits, found {}",
                describe(&Json::String(session))
            ));
        }
        let kind = f.string("kind")?;
        let prev = f.string("prev")?;
        let hash = f.string("hash")?;
        for (name, digest) in [("prev", &prev), ("hash", &hash)] {
            if !is_hex(digest, 64) {
                return Err(format!(
                    "field `{name}` must be 64 lowercase hex digits (a SHA-256), found {}",
                    describe(&Json::String(digest.clone()))
                ));
            }
        }
        let Some(known) = EventKind::from_name(&kind) else {
            return Err(format!(
                "unknown event kind {} (the kinds are {})",
                quoted(&kind),
                KINDS.join(", ")
            ));
        };
        f.kind = known.name();
        f.missing_kind = false;
        let body = EventBody::from_fields(known, &mut f)?;
        f.no_more()?;
        Ok(Event {
            seq,
            ts,
            session,
            prev,
            hash,
            body,
        })
    }
}

impl<'de> Deserialize<'de> for Event {
    /// Through a `serde_json::Value` and [`Event::from_value`].
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Event, D::Error> {
        let value = Json::deserialize(d)?;
        Event::from_value(value).map_err(serde::de::Error::custom)
    }
}

/// The fields of an event being read, taken out one by one.
struct Fields {
    map: Map<String, Json>,
    /// The kind, once known, for messages.
    kind: &'static str,
    /// Still reading the common fields.
    missing_kind: bool,
}

impl Drop for Fields {
    /// The fields not taken (a rejected event's) may be nested deeply.
    fn drop(&mut self) {
        drop_deep(Json::Object(std::mem::take(&mut self.map)));
    }
}

impl Fields {
    fn whose(&self) -> String {
        if self.missing_kind {
            "an event".to_string()
        } else {
            a_kind(self.kind)
        }
    }

    fn take(&mut self, name: &str, what: &str) -> Result<Json, String> {
        self.map
            .remove(name)
            .ok_or_else(|| format!("{} needs the field `{name}` ({what})", self.whose()))
    }

    fn wrong(&self, name: &str, what: &str, found: &Json) -> String {
        let of = if self.missing_kind {
            String::new()
        } else {
            format!(" of {}", a_kind(self.kind))
        };
        format!(
            "field `{name}`{of} must be {what}, found {}",
            describe(found)
        )
    }

    fn string(&mut self, name: &str) -> Result<String, String> {
        match self.take(name, "a string")? {
            Json::String(s) => Ok(s),
            other => Err(self.wrong(name, "a string", &other)),
        }
    }

    fn u64(&mut self, name: &str) -> Result<u64, String> {
        let what = "a non-negative integer";
        let value = self.take(name, what)?;
        value.as_u64().ok_or_else(|| self.wrong(name, what, &value))
    }

    fn bool(&mut self, name: &str) -> Result<bool, String> {
        match self.take(name, "true or false")? {
            Json::Bool(b) => Ok(b),
            other => Err(self.wrong(name, "true or false", &other)),
        }
    }

    fn decision(&mut self, name: &str) -> Result<Decision, String> {
        let text = self.string(name)?;
        Decision::parse(&text)
            .ok_or_else(|| self.wrong(name, "\"allow\" or \"deny\"", &Json::String(text)))
    }

    fn json(&mut self, name: &str) -> Result<Json, String> {
        self.take(name, "any JSON value")
    }

    fn object(&mut self, name: &str) -> Result<Json, String> {
        match self.take(name, "an object")? {
            v @ Json::Object(_) => Ok(v),
            other => Err(self.wrong(name, "an object", &other)),
        }
    }

    fn optional(&mut self, name: &str) -> Result<Option<Json>, String> {
        Ok(self.map.remove(name))
    }

    fn optional_string(&mut self, name: &str) -> Result<Option<String>, String> {
        match self.map.remove(name) {
            None => Ok(None),
            Some(Json::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.wrong(name, "a string", &other)),
        }
    }

    /// Fails on a field the kind does not have.
    fn no_more(&mut self) -> Result<(), String> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(extra) => Err(format!(
                "unknown field {} in {} (a misspelt field, or a log from a newer lt?)",
                quoted(extra),
                self.whose()
            )),
        }
    }
}

/// `a \`decided\` event`, `an \`agent_started\` event`.
fn a_kind(kind: &str) -> String {
    let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} `{kind}` event")
}

/// A JSON value named for a message: `a string "abc"`, `a number 5`, `an object`.
pub(crate) fn describe(value: &Json) -> String {
    match value {
        Json::Null => "null".to_string(),
        Json::Bool(b) => format!("{b}"),
        Json::Number(n) => format!("the number {n}"),
        Json::String(_) => format!("the string {}", abbreviate(value, 80)),
        Json::Array(_) => "an array".to_string(),
        Json::Object(_) => "an object".to_string(),
    }
}

/// `text` as a JSON string, cut to 80 characters: `"launched"`.
pub(crate) fn quoted(text: &str) -> String {
    abbreviate(&Json::String(text.to_string()), 80)
}

/// Exactly `len` lowercase hex digits.
pub(crate) fn is_hex(text: &str, len: usize) -> bool {
    text.len() == len && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::event::ZERO_HASH;
    use serde_json::json;

    fn ended() -> Event {
        Event {
            seq: 3,
            ts: "2026-11-29T21:04:05.123Z".into(),
            session: "0123456789abcdef0123456789abcdef".into(),
            prev: ZERO_HASH.into(),
            hash: ZERO_HASH.into(),
            body: EventBody::SessionEnded {
                status: "ok".into(),
                value: None,
                r#type: None,
                error: None,
                calls: 0,
                steps: 7,
            },
        }
    }

    #[test]
    fn reading_errors_name_field_kind_and_expectation() {
        let good = ended().to_value();
        let with = |edit: &dyn Fn(&mut Map<String, Json>)| {
            let mut v = good.clone();
            if let Json::Object(m) = &mut v {
                edit(m);
            }
            Event::from_value(v).expect_err("rejected")
        };
        assert_eq!(
            with(&|m| {
                m.remove("steps");
            }),
            "a `session_ended` event needs the field `steps` (a non-negative integer)"
        );
        assert_eq!(
            with(&|m| {
                m.remove("seq");
            }),
            "an event needs the field `seq` (a non-negative integer)"
        );
        assert_eq!(
            with(&|m| {
                m.insert("calls".into(), json!("3"));
            }),
            "field `calls` of a `session_ended` event must be a non-negative integer, found the string \"3\""
        );
        assert!(with(&|m| {
            m.insert("kind".into(), json!("launched"));
        })
        .starts_with("unknown event kind \"launched\" (the kinds are session_started, proposed"));
        assert_eq!(
            with(&|m| {
                m.insert("colour".into(), json!(1));
            }),
            "unknown field \"colour\" in a `session_ended` event (a misspelt field, or a log from a newer lt?)"
        );
        assert!(with(&|m| {
            m.insert("session".into(), json!("ABC"));
        })
        .contains("32 lowercase hex digits"));
        assert!(Event::from_value(json!([1])).is_err());
    }

    #[test]
    fn decision_reads_only_allow_and_deny() {
        assert_eq!(Decision::parse("allow"), Some(Decision::Allow));
        assert_eq!(Decision::parse("Allow"), None);
        assert_eq!(
            serde_json::to_string(&Decision::Deny).expect("serialises"),
            "\"deny\""
        );
    }
}
