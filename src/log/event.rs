//! The event data model: one [`Event`] per line of the log, its kinds
//! ([`EventBody`]), and the canonical bytes its hash is computed over.
//!
//! An event is serialised flat: the common fields (`seq`, `ts`, `session`,
//! `kind`, `prev`, `hash`) beside the fields of its kind, keys sorted:
//!
//! ```text
//! {"argument":{"id":"c1"},"call_id":"n7","hash":"…","kind":"proposed","prev":"…","seq":1,"session":"…","tool":"lookup","ts":"…"}
//! ```
//!
//! Conversion to and from JSON is written by hand rather than derived
//! (reading is in `parse.rs`, behind [`Event::from_value`]): the
//! messages for a missing field, a field of the wrong type, an unknown
//! field or an unknown kind name the field, the kind and what was expected;
//! values are moved, never cloned or re-deserialised (a tool's output may be
//! nested deeper than a recursive conversion could follow); and an absent
//! optional field is told apart from a present `null` (a program whose
//! value is `()` ends with `"value":null`).

use super::json::to_compact;
use crate::runtime::boundary::drop_deep;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value as Json};
use sha2::{Digest, Sha256};

/// The `prev` of the first event: 64 zeros.
pub const ZERO_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Every event kind, in the order of `docs/log-format.md`.
pub const KINDS: [&str; 12] = [
    "session_started",
    "proposed",
    "decided",
    "scheduled",
    "client_dispatched",
    "client_reported",
    "client_rejected",
    "completed",
    "failed",
    "timed_out",
    "session_resumed",
    "session_ended",
];

/// One line of the log.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Position in the session, from 0, no gaps.
    pub seq: u64,
    /// When the event was written: RFC 3339 UTC with milliseconds.
    /// Informative only.
    pub ts: String,
    /// The session id: 32 lowercase hex digits.
    pub session: String,
    /// The previous event's `hash` ([`ZERO_HASH`] for `seq` 0).
    pub prev: String,
    /// SHA-256 (lowercase hex) of the event's canonical bytes.
    pub hash: String,
    /// The kind and its fields.
    pub body: EventBody,
}

/// What the constraint pipeline decided for a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// The call may proceed (or, in a dry run, is answered without running).
    Allow,
    /// The call is refused; the program receives `Err("denied: …")`.
    Deny,
}

impl Decision {
    /// `allow` or `deny`, as in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Decision> {
        match text {
            "allow" => Some(Decision::Allow),
            "deny" => Some(Decision::Deny),
            _ => None,
        }
    }
}

/// The kind of an event and the fields of that kind (`docs/log-format.md`).
#[derive(Clone, Debug, PartialEq)]
pub enum EventBody {
    /// First event: what ran, under which policy.
    SessionStarted {
        /// The version of `lt` that wrote the log.
        lt_version: String,
        /// The program's source text.
        program: String,
        /// SHA-256 (hex) of `program`.
        program_hash: String,
        /// The effective policy (a JSON object).
        profile: Json,
        /// SHA-256 (hex) of the tools.toml bytes, or of the empty string.
        registry_hash: String,
        /// The run's limits (a JSON object).
        limits: Json,
    },
    /// An `exec` was reached.
    Proposed {
        /// The call's identity, e.g. `n7[n3:2]`.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// The argument as JSON.
        argument: Json,
    },
    /// The constraint pipeline decided.
    Decided {
        /// The call's identity.
        call_id: String,
        /// Allow or deny.
        decision: Decision,
        /// The rule that decided (`allowlist`, …, `dry_run`, `policy`).
        rule: String,
        /// Why, in one sentence.
        reason: String,
    },
    /// Written and flushed before the call starts.
    Scheduled {
        /// The call's identity.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// Where it runs (`server`).
        venue: String,
        /// The key a tool may use to recognise a repeated call.
        idempotency_key: String,
    },
    /// A client-venue call was written to the client (after `scheduled`).
    ClientDispatched {
        /// The call's identity.
        call_id: String,
    },
    /// The client reported the outcome of a dispatched call; the outcome
    /// event (`completed` or `failed`, validated) follows.
    ClientReported {
        /// The call's identity.
        call_id: String,
        /// The client's `tool_result` line as it was read.
        report: Json,
    },
    /// A line from the client that was not applied: not a `tool_result`, for
    /// an unknown call, or for a call that already has its outcome.
    ClientRejected {
        /// The line as read (a string when it was not JSON).
        report: Json,
        /// Why it was not applied.
        reason: String,
    },
    /// The tool answered.
    Completed {
        /// The call's identity.
        call_id: String,
        /// The tool's raw JSON answer.
        output: Json,
        /// What the program received: `{"Ok": v}` or `{"Err": message}`.
        result: Json,
    },
    /// The tool did not answer usefully.
    Failed {
        /// The call's identity.
        call_id: String,
        /// `failed`, `crashed`, `bad_output` or `unavailable`.
        failure: String,
        /// The whole message.
        message: String,
        /// What the program received: `{"Err": message}`.
        result: Json,
    },
    /// The tool exceeded its timeout.
    TimedOut {
        /// The call's identity.
        call_id: String,
        /// The whole message.
        message: String,
        /// What the program received.
        result: Json,
    },
    /// `lt resume` continued a session that stopped without `session_ended`
    /// (a crash): the program is replayed up to here, then runs live.
    SessionResumed {
        /// The version of `lt` that resumed.
        lt_version: String,
        /// SHA-256 (hex) of the tools.toml bytes used from here on.
        registry_hash: String,
        /// Bytes of an incomplete last line (a write cut short) that were
        /// cut off the file before this event was appended (0 if none).
        dropped_bytes: u64,
    },
    /// Last event: how the session ended.
    SessionEnded {
        /// `ok` or `error`.
        status: String,
        /// The program's value, when ok (`Some(Json::Null)` is a logged
        /// `null`; `None` is no `value` field).
        value: Option<Json>,
        /// The program's type, when known.
        r#type: Option<String>,
        /// `{kind, message, line, column}`, when the run stopped with an error.
        error: Option<Json>,
        /// Tool calls made.
        calls: u64,
        /// Evaluation steps taken.
        steps: u64,
    },
}

/// One field's value while serialising, borrowed from the event.
#[derive(Clone, Copy)]
enum Field<'a> {
    Str(&'a str),
    U64(u64),
    Json(&'a Json),
}

impl Serialize for Field<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Field::Str(v) => s.serialize_str(v),
            Field::U64(v) => s.serialize_u64(*v),
            Field::Json(v) => v.serialize(s),
        }
    }
}

/// An event's fields, sorted by key: serialises as the canonical object.
struct Sorted<'a>(Vec<(&'static str, Field<'a>)>);

impl Serialize for Sorted<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl EventBody {
    /// The kind's name, as in the `kind` field.
    pub fn kind(&self) -> &'static str {
        match self {
            EventBody::SessionStarted { .. } => "session_started",
            EventBody::Proposed { .. } => "proposed",
            EventBody::Decided { .. } => "decided",
            EventBody::Scheduled { .. } => "scheduled",
            EventBody::ClientDispatched { .. } => "client_dispatched",
            EventBody::ClientReported { .. } => "client_reported",
            EventBody::ClientRejected { .. } => "client_rejected",
            EventBody::SessionResumed { .. } => "session_resumed",
            EventBody::Completed { .. } => "completed",
            EventBody::Failed { .. } => "failed",
            EventBody::TimedOut { .. } => "timed_out",
            EventBody::SessionEnded { .. } => "session_ended",
        }
    }

    /// The call the event is about, for the kinds that are about one.
    pub fn call_id(&self) -> Option<&str> {
        match self {
            EventBody::Proposed { call_id, .. }
            | EventBody::Decided { call_id, .. }
            | EventBody::Scheduled { call_id, .. }
            | EventBody::ClientDispatched { call_id }
            | EventBody::ClientReported { call_id, .. }
            | EventBody::Completed { call_id, .. }
            | EventBody::Failed { call_id, .. }
            | EventBody::TimedOut { call_id, .. } => Some(call_id),
            EventBody::SessionStarted { .. }
            | EventBody::SessionEnded { .. }
            | EventBody::ClientRejected { .. }
            | EventBody::SessionResumed { .. } => None,
        }
    }

    /// The kind's own fields (absent optional fields left out).
    fn fields(&self) -> Vec<(&'static str, Field<'_>)> {
        use Field::{Json as J, Str as S, U64 as U};
        match self {
            EventBody::SessionStarted {
                lt_version,
                program,
                program_hash,
                profile,
                registry_hash,
                limits,
            } => vec![
                ("lt_version", S(lt_version)),
                ("program", S(program)),
                ("program_hash", S(program_hash)),
                ("profile", J(profile)),
                ("registry_hash", S(registry_hash)),
                ("limits", J(limits)),
            ],
            EventBody::Proposed {
                call_id,
                tool,
                argument,
            } => vec![
                ("call_id", S(call_id)),
                ("tool", S(tool)),
                ("argument", J(argument)),
            ],
            EventBody::Decided {
                call_id,
                decision,
                rule,
                reason,
            } => vec![
                ("call_id", S(call_id)),
                ("decision", S(decision.as_str())),
                ("rule", S(rule)),
                ("reason", S(reason)),
            ],
            EventBody::Scheduled {
                call_id,
                tool,
                venue,
                idempotency_key,
            } => vec![
                ("call_id", S(call_id)),
                ("tool", S(tool)),
                ("venue", S(venue)),
                ("idempotency_key", S(idempotency_key)),
            ],
            EventBody::ClientDispatched { call_id } => vec![("call_id", S(call_id))],
            EventBody::ClientReported { call_id, report } => {
                vec![("call_id", S(call_id)), ("report", J(report))]
            }
            EventBody::ClientRejected { report, reason } => {
                vec![("report", J(report)), ("reason", S(reason))]
            }
            EventBody::SessionResumed {
                lt_version,
                registry_hash,
                dropped_bytes,
            } => vec![
                ("lt_version", S(lt_version)),
                ("registry_hash", S(registry_hash)),
                ("dropped_bytes", U(*dropped_bytes)),
            ],
            EventBody::Completed {
                call_id,
                output,
                result,
            } => vec![
                ("call_id", S(call_id)),
                ("output", J(output)),
                ("result", J(result)),
            ],
            EventBody::Failed {
                call_id,
                failure,
                message,
                result,
            } => vec![
                ("call_id", S(call_id)),
                ("failure", S(failure)),
                ("message", S(message)),
                ("result", J(result)),
            ],
            EventBody::TimedOut {
                call_id,
                message,
                result,
            } => vec![
                ("call_id", S(call_id)),
                ("message", S(message)),
                ("result", J(result)),
            ],
            EventBody::SessionEnded {
                status,
                value,
                r#type,
                error,
                calls,
                steps,
            } => {
                let mut out = vec![("status", S(status))];
                if let Some(v) = value {
                    out.push(("value", J(v)));
                }
                if let Some(t) = r#type {
                    out.push(("type", S(t)));
                }
                if let Some(e) = error {
                    out.push(("error", J(e)));
                }
                out.push(("calls", U(*calls)));
                out.push(("steps", U(*steps)));
                out
            }
        }
    }
}

impl Event {
    /// The kind's name (`proposed`, …).
    pub fn kind(&self) -> &'static str {
        self.body.kind()
    }

    /// All fields, `hash` included or not, sorted by key.
    fn sorted(&self, with_hash: bool) -> Sorted<'_> {
        let mut fields = vec![
            ("seq", Field::U64(self.seq)),
            ("ts", Field::Str(&self.ts)),
            ("session", Field::Str(&self.session)),
            ("kind", Field::Str(self.kind())),
            ("prev", Field::Str(&self.prev)),
        ];
        if with_hash {
            fields.push(("hash", Field::Str(&self.hash)));
        }
        fields.extend(self.body.fields());
        fields.sort_by_key(|(k, _)| *k);
        Sorted(fields)
    }

    /// The canonical bytes: the event without `hash`, compact, keys sorted.
    /// Its `hash` should be [`sha256_hex`] of these.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        to_compact(&self.sorted(false))
    }

    /// Both the hash and the line of an event whose `hash` is not yet
    /// set, serialising every value once: the canonical bytes are the
    /// sorted `"key":value` parts without `hash`; the line is the same parts
    /// with `"hash":"…"` in its sorted place. Byte for byte what
    /// [`Event::compute_hash`] and [`Event::to_line`] give (tested).
    pub fn seal_encoding(&self) -> (String, Vec<u8>) {
        let parts: Vec<(&str, Vec<u8>)> = self
            .sorted(false)
            .0
            .iter()
            .map(|(k, v)| (*k, to_compact(v)))
            .collect();
        let size: usize = parts.iter().map(|(k, v)| k.len() + v.len() + 4).sum();
        let join = |extra: Option<&[u8]>| {
            let mut out = Vec::with_capacity(size + 80);
            out.push(b'{');
            let mut first = true;
            let mut put = |out: &mut Vec<u8>, k: &str, v: &[u8]| {
                if !first {
                    out.push(b',');
                }
                first = false;
                out.push(b'"');
                out.extend_from_slice(k.as_bytes());
                out.extend_from_slice(b"\":");
                out.extend_from_slice(v);
            };
            let mut pending = extra;
            for (k, v) in &parts {
                if let Some(h) = pending {
                    if *k > "hash" {
                        put(&mut out, "hash", h);
                        pending = None;
                    }
                }
                put(&mut out, k, v);
            }
            if let Some(h) = pending {
                put(&mut out, "hash", h);
            }
            out.push(b'}');
            out
        };
        let hash = sha256_hex(&join(None));
        let line = join(Some(&to_compact(&hash)));
        (hash, line)
    }

    /// SHA-256 of [`Event::canonical_bytes`]: what `hash` must be.
    pub fn compute_hash(&self) -> String {
        sha256_hex(&self.canonical_bytes())
    }

    /// The event's line in the log, without the final `\n`: the canonical
    /// serialisation of the whole event, `hash` included.
    pub fn to_line(&self) -> String {
        // Serialising strings and numbers yields UTF-8.
        String::from_utf8_lossy(&to_compact(&self.sorted(true))).into_owned()
    }

    /// The event as a JSON object (copies the values).
    pub fn to_value(&self) -> Json {
        let mut map = Map::new();
        for (k, v) in self.sorted(true).0 {
            let v = match v {
                Field::Str(s) => Json::String(s.to_string()),
                Field::U64(n) => Json::from(n),
                Field::Json(j) => j.clone(),
            };
            map.insert(k.to_string(), v);
        }
        Json::Object(map)
    }
}

impl Serialize for Event {
    /// The canonical object, `hash` included (what [`Event::to_line`] prints).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.sorted(true).serialize(s)
    }
}

/// Drops an event without recursing once per level of its JSON values
/// (an event holding a tool output nested a million levels deep would
/// overflow the stack with the default drop).
pub fn drop_event(event: Event) {
    match event.body {
        EventBody::SessionStarted {
            profile, limits, ..
        } => {
            drop_deep(profile);
            drop_deep(limits);
        }
        EventBody::Proposed { argument, .. } => drop_deep(argument),
        EventBody::Completed { output, result, .. } => {
            drop_deep(output);
            drop_deep(result);
        }
        EventBody::Failed { result, .. } | EventBody::TimedOut { result, .. } => drop_deep(result),
        EventBody::SessionEnded { value, error, .. } => {
            value.into_iter().chain(error).for_each(drop_deep);
        }
        EventBody::ClientReported { report, .. } | EventBody::ClientRejected { report, .. } => {
            drop_deep(report)
        }
        EventBody::Decided { .. }
        | EventBody::Scheduled { .. }
        | EventBody::ClientDispatched { .. }
        | EventBody::SessionResumed { .. } => {}
    }
}

/// The canonical bytes of a JSON value: compact JSON, object keys sorted by
/// their UTF-8 bytes at every level. Pass an event object *without* its
/// `hash` field to get the bytes its hash is computed over.
///
/// This relies on `serde_json::Map` being a `BTreeMap<String, _>`, which it
/// is unless serde_json's `preserve_order` feature is enabled anywhere in
/// the dependency graph (features are unified: enabling it in any crate
/// would switch the map to insertion order and change every hash). The
/// unit test `canonical_bytes_sort_keys_at_every_level` fails if that
/// happens.
pub fn canonical_bytes(event_without_hash: &Json) -> Vec<u8> {
    to_compact(event_without_hash)
}

/// SHA-256 of `bytes`, as 64 lowercase hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest.iter() {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn seal_encoding_matches_the_two_step_serialisation() {
        let mut e = Event {
            seq: 3,
            ts: "2026-11-29T21:04:05.123Z".into(),
            session: "0123456789abcdef0123456789abcdef".into(),
            prev: "0".repeat(64),
            hash: String::new(),
            body: EventBody::Completed {
                call_id: "n7[n3:2]".into(),
                output: json!({"z": [1, {"b": "é\u{1}\"", "a": null}], "a": 1.5}),
                result: json!({"Ok": {"z": []}}),
            },
        };
        let (hash, line) = e.seal_encoding();
        assert_eq!(hash, e.compute_hash());
        e.hash = hash;
        assert_eq!(String::from_utf8(line).expect("utf8"), e.to_line());
    }

    #[test]
    fn canonical_bytes_sort_keys_at_every_level() {
        // Built in reverse order: insertion order would show up as-is.
        let mut inner = Map::new();
        inner.insert("zeta".into(), json!(1));
        inner.insert("Zeta".into(), json!(2));
        inner.insert("alpha".into(), json!([{"y": 1, "b": 2}]));
        let mut outer = Map::new();
        outer.insert("z".into(), Json::Object(inner));
        outer.insert("é".into(), json!("x"));
        outer.insert("a".into(), json!(null));
        let bytes = canonical_bytes(&Json::Object(outer));
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            r#"{"a":null,"z":{"Zeta":2,"alpha":[{"b":2,"y":1}],"zeta":1},"é":"x"}"#,
            "serde_json's Map no longer sorts its keys: was its `preserve_order` \
             feature enabled? Every log hash depends on sorted keys."
        );
    }

    #[test]
    fn sha256_of_the_empty_string() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    fn ended(value: Option<Json>) -> Event {
        Event {
            seq: 3,
            ts: "2026-11-29T21:04:05.123Z".into(),
            session: "0123456789abcdef0123456789abcdef".into(),
            prev: ZERO_HASH.into(),
            hash: ZERO_HASH.into(),
            body: EventBody::SessionEnded {
                status: "ok".into(),
                value,
                r#type: Some("Unit".into()),
                error: None,
                calls: 0,
                steps: 7,
            },
        }
    }

    #[test]
    fn event_serialisation_matches_value_canonical_form() {
        let event = ended(Some(json!({"b": [1.5, -2], "a": "\u{1}\"\\"})));
        let value = event.to_value();
        assert_eq!(event.to_line().as_bytes(), canonical_bytes(&value));
        let mut without = value.clone();
        if let Json::Object(m) = &mut without {
            m.remove("hash");
        }
        assert_eq!(event.canonical_bytes(), canonical_bytes(&without));
        assert_eq!(Event::from_value(value), Ok(event));
    }

    #[test]
    fn null_value_is_kept_apart_from_no_value() {
        for value in [None, Some(Json::Null)] {
            let event = ended(value);
            let back = Event::from_value(event.to_value()).expect("reads");
            assert_eq!(back, event);
        }
        assert!(ended(None).to_line().contains("\"value\"").eq(&false));
        assert!(ended(Some(Json::Null)).to_line().contains("\"value\":null"));
    }
}
