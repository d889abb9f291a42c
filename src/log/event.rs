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

use super::json::{to_compact, write_json, write_str, write_u64};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value as Json};
use sha2::{Digest, Sha256};

/// The `prev` of the first event: 64 zeros.
pub const ZERO_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Declares every event kind once — its name in the `kind` field, its
/// variant and its fields — and generates from that one list the
/// [`EventBody`] enum, the fieldless [`EventKind`] enum, [`KINDS`],
/// [`EventKind::ALL`], [`EventKind::name`], [`EventKind::from_name`] and
/// [`EventBody::kind`]. Reading (`parse.rs`), the fields (`each_field`
/// below), dropping and the timeline (`show.rs`) match on these enums
/// exhaustively, so a kind added here without them does not compile; the
/// tests check the list against `docs/log-format.md`.
macro_rules! event_kinds {
    ($(
        $(#[$meta:meta])*
        $name:literal => $variant:ident {
            $( $(#[$field_meta:meta])* $field:ident : $ty:ty ),* $(,)?
        }
    ),* $(,)?) => {
        /// The kind of an event and the fields of that kind (`docs/log-format.md`).
        #[derive(Clone, Debug, PartialEq)]
        pub enum EventBody {
            $(
                $(#[$meta])*
                $variant { $( $(#[$field_meta])* $field : $ty ),* },
            )*
        }

        /// The kind of an event without its fields: one variant per
        /// variant of [`EventBody`], in the order of `docs/log-format.md`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventKind {
            $(
                #[doc = concat!("`", $name, "`.")]
                $variant,
            )*
        }

        /// How many kinds there are.
        const KIND_COUNT: usize = [$($name),*].len();

        /// Every event kind's name, in the order of `docs/log-format.md`.
        pub const KINDS: [&str; KIND_COUNT] = [$($name),*];

        impl EventKind {
            /// Every kind, in the order of [`KINDS`].
            pub const ALL: [EventKind; KIND_COUNT] = [$(EventKind::$variant),*];

            /// The kind's name, as in the `kind` field.
            pub fn name(self) -> &'static str {
                match self {
                    $(EventKind::$variant => $name,)*
                }
            }

            /// The kind called `name` in the `kind` field.
            pub fn from_name(name: &str) -> Option<EventKind> {
                match name {
                    $($name => Some(EventKind::$variant),)*
                    _ => None,
                }
            }
        }

        impl EventBody {
            /// The event's kind.
            pub fn event_kind(&self) -> EventKind {
                match self {
                    $(EventBody::$variant { .. } => EventKind::$variant,)*
                }
            }
        }
    };
}

impl EventBody {
    /// The kind's name, as in the `kind` field.
    pub fn kind(&self) -> &'static str {
        self.event_kind().name()
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

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

event_kinds! {
    /// First event: what ran, under which policy.
    "session_started" => SessionStarted {
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
    "proposed" => Proposed {
        /// The call's identity, e.g. `n7[n3:2]`.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// The argument as JSON.
        argument: Json,
    },
    /// The constraint pipeline decided.
    "decided" => Decided {
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
    "scheduled" => Scheduled {
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
    "client_dispatched" => ClientDispatched {
        /// The call's identity.
        call_id: String,
    },
    /// The client reported the outcome of a dispatched call; the outcome
    /// event (`completed` or `failed`, validated) follows.
    "client_reported" => ClientReported {
        /// The call's identity.
        call_id: String,
        /// The client's `tool_result` line as it was read.
        report: Json,
    },
    /// A line from the client that was not applied: not a `tool_result`, for
    /// an unknown call, or for a call that already has its outcome.
    "client_rejected" => ClientRejected {
        /// The line as read (a string when it was not JSON).
        report: Json,
        /// Why it was not applied.
        reason: String,
    },
    /// The tool answered.
    "completed" => Completed {
        /// The call's identity.
        call_id: String,
        /// The tool's raw JSON answer.
        output: Json,
        /// What the program received: `{"Ok": v}` or `{"Err": message}`.
        result: Json,
    },
    /// The tool did not answer usefully.
    "failed" => Failed {
        /// The call's identity.
        call_id: String,
        /// `failed`, `crashed`, `bad_output` or `unavailable`.
        failure: String,
        /// The whole message.
        message: String,
        /// What the program received: `{"Err": message}`.
        result: Json,
        /// What the tool's server wrote on stderr (an MCP server's log
        /// lines, the last 2 KiB), kept apart from the message; `None` is
        /// no `stderr` field.
        stderr: Option<String>,
    },
    /// The tool exceeded its timeout.
    "timed_out" => TimedOut {
        /// The call's identity.
        call_id: String,
        /// The whole message.
        message: String,
        /// What the program received.
        result: Json,
        /// As for `failed`.
        stderr: Option<String>,
    },
    /// The program asked for an approval (`approve tool …`, extension).
    "approval_requested" => ApprovalRequested {
        /// The request's identity (the `approve` node and path).
        approval_id: String,
        /// The tool to be approved.
        tool: String,
        /// The argument approved (the input without its `!Approval` fields).
        argument: Json,
    },
    /// The approval request was answered.
    "approval_decided" => ApprovalDecided {
        /// The request's identity.
        approval_id: String,
        /// `allow` or `deny`.
        decision: Decision,
        /// Who answered: `policy` (the profile's `approvals`) or `terminal`.
        by: String,
        /// Why, in one sentence.
        reason: String,
        /// The minted token (a string) when allowed, else `null`.
        token: Json,
    },
    /// An `@intent(…)` annotation's expression started (extension).
    "annotation_started" => AnnotationStarted {
        /// Its identity: the `annotate` node and path (`n4`, `n4[n2:1]`).
        annotation_id: String,
        /// What the program said it is doing.
        intent: String,
        /// What it expected (a string), or `null`.
        hypothesis: Json,
        /// Its notes (a string), or `null`.
        notes: Json,
        /// The enclosing annotation's identity, or `null`.
        parent: Json,
    },
    /// An annotated expression ended (extension).
    "annotation_ended" => AnnotationEnded {
        /// The annotation's identity.
        annotation_id: String,
        /// The call identities made directly under it, in issue order (an array of strings).
        calls: Json,
        /// `ok`, `err`, `value` or `stopped`.
        outcome: String,
    },
    /// `lt resume` continued a session that stopped without `session_ended`
    /// (a crash): the program is replayed up to here, then runs live.
    "session_resumed" => SessionResumed {
        /// The version of `lt` that resumed.
        lt_version: String,
        /// SHA-256 (hex) of the tools.toml bytes used from here on.
        registry_hash: String,
        /// Bytes of an incomplete last line (a write cut short) that were
        /// cut off the file before this event was appended (0 if none).
        dropped_bytes: u64,
    },
    /// A signal (SIGINT, SIGTERM, SIGHUP) stopped `lt run` or `lt resume`:
    /// the running tools were stopped and their outcomes not recorded, so
    /// the session can be resumed (it is not ended). Written last.
    "session_interrupted" => SessionInterrupted {
        /// Why: `interrupted by SIGINT`.
        reason: String,
        /// The calls that were running (scheduled, no outcome), in the
        /// order they were scheduled: `[{"call_id": "n3", "started": true}]`;
        /// `started` is false when lt stopped the call before handing it to
        /// its tool (no process spawned, no request sent), so it did not act.
        stopped: Json,
    },
    /// Last event: how the session ended.
    "session_ended" => SessionEnded {
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
    /// First event of an agent session (`lt agent`): everything the loop
    /// needs to be replayed without the model.
    "agent_started" => AgentStarted {
        /// The version of `lt` that wrote the log.
        lt_version: String,
        /// The task, as given.
        task: String,
        /// The tool declarations (`--tools` file's text).
        declarations: String,
        /// The system prompt sent with every request.
        system: String,
        /// The model (`{"provider", "model", "base_url"}`; never a key).
        model: Json,
        /// The loop's settings (`AgentSettings::to_json`).
        settings: Json,
        /// The profile the runs use (a JSON object), before classification.
        profile: Json,
        /// SHA-256 (hex) of the tools.toml bytes, or of the empty string.
        registry_hash: String,
        /// The limits of each run (a JSON object).
        limits: Json,
        /// Each tool's tags (tools.toml `tags`), for trace requirements
        /// (`{"tool": ["tag", …]}`).
        tags: Json,
    },
    /// The classifier labelled the task; the label's rule chose the
    /// profile and the trace requirements (`lt agent --rules`).
    "task_classified" => TaskClassified {
        /// The label.
        label: String,
        /// Whether the reply named a rule (else the default label).
        matched: bool,
        /// The profile now in force (a JSON object).
        profile: Json,
        /// The settings now in force.
        settings: Json,
    },
    /// A request to the model (`request_id`: `classify`, or `tT.aA` for
    /// turn T, attempt A).
    "model_requested" => ModelRequested {
        /// The request's identity.
        request_id: String,
        /// The messages added to the conversation since the loop's previous
        /// request (`[{role, content}]`; all of them for the first): the
        /// conversation sent is the concatenation of these over the
        /// session's requests, so the log grows with the conversation, not
        /// with its square. The system prompt is `agent_started`'s.
        messages: Json,
        /// How many messages the conversation sent has.
        sent: u64,
        /// Samples asked for.
        samples: u64,
    },
    /// An HTTP attempt failed and will be retried.
    "model_retried" => ModelRetried {
        /// The request's identity.
        request_id: String,
        /// The attempt that failed, from 1.
        attempt: u64,
        /// The failure's kind (`rate_limited`, `timeout`, …).
        error: String,
        /// Its message.
        message: String,
        /// The wait before the next attempt, in ms.
        delay_ms: u64,
    },
    /// The model answered.
    "model_replied" => ModelReplied {
        /// The request's identity.
        request_id: String,
        /// The reply texts, one per sample (an array of strings).
        texts: Json,
        /// Token usage as reported, or `null`.
        usage: Json,
    },
    /// The request failed for good; the session ends.
    "model_failed" => ModelFailed {
        /// The request's identity.
        request_id: String,
        /// The failure's kind.
        error: String,
        /// Its message.
        message: String,
        /// HTTP attempts made.
        attempts: u64,
    },
    /// A sample of a reply was read and checked.
    "program_checked" => ProgramChecked {
        /// The request's identity.
        request_id: String,
        /// The sample, from 0.
        sample: u64,
        /// `ok`, `rejected` (diagnostics), `no_program`, or `answer` (a
        /// final answer after a run).
        status: String,
        /// The program's text, or `null`.
        program: Json,
        /// The problems (`[{code, line, column, message, help}]`).
        diagnostics: Json,
    },
    /// A program was accepted and will run (its run's events follow,
    /// from `session_started` to `session_ended`).
    "program_accepted" => ProgramAccepted {
        /// The request's identity.
        request_id: String,
        /// The accepted sample, from 0.
        sample: u64,
        /// How many samples were this same program (consensus).
        votes: u64,
        /// The program's hash (SHA-256 of its text).
        program_hash: String,
    },
    /// Last event of an agent session.
    "agent_ended" => AgentEnded {
        /// `answered`, `gave_up` or `error`.
        status: String,
        /// The model's final answer (a string), or `null`.
        answer: Json,
        /// Why the session ended, in one sentence.
        reason: String,
        /// Programs run.
        turns: u64,
        /// Model requests made by the loop (the classifier's is not counted).
        requests: u64,
    },
}

static JSON_TRUE: Json = Json::Bool(true);
static JSON_FALSE: Json = Json::Bool(false);

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

/// The most fields an event has: the six common ones (`hash` included) and
/// the ten of `agent_started`. A unit test checks
/// that every kind fits.
const MAX_FIELDS: usize = 16;

/// An event's fields (key and borrowed value), on the stack: building the
/// list allocates nothing.
#[derive(Clone, Copy)]
struct Fields<'a> {
    items: [(&'static str, Field<'a>); MAX_FIELDS],
    len: usize,
}

impl<'a> Fields<'a> {
    fn new() -> Self {
        Fields {
            items: [("", Field::U64(0)); MAX_FIELDS],
            len: 0,
        }
    }

    /// Adds a field. More than [`MAX_FIELDS`] is a bug in this file (an
    /// index out of bounds), caught by the test that builds every kind.
    fn push(&mut self, key: &'static str, value: Field<'a>) {
        self.items[self.len] = (key, value);
        self.len += 1;
    }

    fn as_slice(&self) -> &[(&'static str, Field<'a>)] {
        &self.items[..self.len]
    }

    /// Sorts by key (by their UTF-8 bytes, as the canonical form wants).
    fn sort(&mut self) {
        self.items[..self.len].sort_unstable_by_key(|(k, _)| *k);
    }
}

/// An event's fields, sorted by key: serialises as the canonical object.
struct Sorted<'a>(Fields<'a>);

impl Serialize for Sorted<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let fields = self.0.as_slice();
        let mut map = s.serialize_map(Some(fields.len()))?;
        for (k, v) in fields {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl EventBody {
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
            | EventBody::AnnotationStarted { .. }
            | EventBody::AnnotationEnded { .. }
            | EventBody::ApprovalRequested { .. }
            | EventBody::ApprovalDecided { .. }
            | EventBody::SessionResumed { .. }
            | EventBody::SessionInterrupted { .. }
            | EventBody::AgentStarted { .. }
            | EventBody::TaskClassified { .. }
            | EventBody::ModelRequested { .. }
            | EventBody::ModelRetried { .. }
            | EventBody::ModelReplied { .. }
            | EventBody::ModelFailed { .. }
            | EventBody::ProgramChecked { .. }
            | EventBody::ProgramAccepted { .. }
            | EventBody::AgentEnded { .. } => None,
        }
    }

    /// The kind's own fields (absent optional fields left out).
    fn fields(&self) -> Fields<'_> {
        let mut out = Fields::new();
        self.each_field(|key, value| out.push(key, value));
        out
    }

    /// Hands the kind's own fields (absent optional fields left out) to
    /// `put`, sorted by key: the encoder merges them with the common fields
    /// without sorting (a unit test checks the order of every kind).
    fn each_field<'a>(&'a self, mut put: impl FnMut(&'static str, Field<'a>)) {
        use Field::{Json as J, Str as S, U64 as U};
        let mut all = |fields: &[(&'static str, Field<'a>)]| {
            for &(key, value) in fields {
                put(key, value);
            }
        };
        match self {
            EventBody::SessionStarted {
                lt_version,
                program,
                program_hash,
                profile,
                registry_hash,
                limits,
            } => all(&[
                ("limits", J(limits)),
                ("lt_version", S(lt_version)),
                ("profile", J(profile)),
                ("program", S(program)),
                ("program_hash", S(program_hash)),
                ("registry_hash", S(registry_hash)),
            ]),
            EventBody::Proposed {
                call_id,
                tool,
                argument,
            } => all(&[
                ("argument", J(argument)),
                ("call_id", S(call_id)),
                ("tool", S(tool)),
            ]),
            EventBody::Decided {
                call_id,
                decision,
                rule,
                reason,
            } => all(&[
                ("call_id", S(call_id)),
                ("decision", S(decision.as_str())),
                ("reason", S(reason)),
                ("rule", S(rule)),
            ]),
            EventBody::Scheduled {
                call_id,
                tool,
                venue,
                idempotency_key,
            } => all(&[
                ("call_id", S(call_id)),
                ("idempotency_key", S(idempotency_key)),
                ("tool", S(tool)),
                ("venue", S(venue)),
            ]),
            EventBody::ClientDispatched { call_id } => all(&[("call_id", S(call_id))]),
            EventBody::ClientReported { call_id, report } => {
                all(&[("call_id", S(call_id)), ("report", J(report))])
            }
            EventBody::ClientRejected { report, reason } => {
                all(&[("reason", S(reason)), ("report", J(report))])
            }
            EventBody::ApprovalRequested {
                approval_id,
                tool,
                argument,
            } => all(&[
                ("approval_id", S(approval_id)),
                ("argument", J(argument)),
                ("tool", S(tool)),
            ]),
            EventBody::ApprovalDecided {
                approval_id,
                decision,
                by,
                reason,
                token,
            } => all(&[
                ("approval_id", S(approval_id)),
                ("by", S(by)),
                ("decision", S(decision.as_str())),
                ("reason", S(reason)),
                ("token", J(token)),
            ]),
            EventBody::AnnotationStarted {
                annotation_id,
                intent,
                hypothesis,
                notes,
                parent,
            } => all(&[
                ("annotation_id", S(annotation_id)),
                ("hypothesis", J(hypothesis)),
                ("intent", S(intent)),
                ("notes", J(notes)),
                ("parent", J(parent)),
            ]),
            EventBody::AnnotationEnded {
                annotation_id,
                calls,
                outcome,
            } => all(&[
                ("annotation_id", S(annotation_id)),
                ("calls", J(calls)),
                ("outcome", S(outcome)),
            ]),
            EventBody::SessionResumed {
                lt_version,
                registry_hash,
                dropped_bytes,
            } => all(&[
                ("dropped_bytes", U(*dropped_bytes)),
                ("lt_version", S(lt_version)),
                ("registry_hash", S(registry_hash)),
            ]),
            EventBody::SessionInterrupted { reason, stopped } => {
                all(&[("reason", S(reason)), ("stopped", J(stopped))])
            }
            EventBody::Completed {
                call_id,
                output,
                result,
            } => all(&[
                ("call_id", S(call_id)),
                ("output", J(output)),
                ("result", J(result)),
            ]),
            EventBody::Failed {
                call_id,
                failure,
                message,
                result,
                stderr,
            } => {
                all(&[
                    ("call_id", S(call_id)),
                    ("failure", S(failure)),
                    ("message", S(message)),
                    ("result", J(result)),
                ]);
                if let Some(text) = stderr {
                    all(&[("stderr", S(text))]);
                }
            }
            EventBody::TimedOut {
                call_id,
                message,
                result,
                stderr,
            } => {
                all(&[
                    ("call_id", S(call_id)),
                    ("message", S(message)),
                    ("result", J(result)),
                ]);
                if let Some(text) = stderr {
                    all(&[("stderr", S(text))]);
                }
            }
            EventBody::SessionEnded {
                status,
                value,
                r#type,
                error,
                calls,
                steps,
            } => {
                all(&[("calls", U(*calls))]);
                if let Some(e) = error {
                    all(&[("error", J(e))]);
                }
                all(&[("status", S(status)), ("steps", U(*steps))]);
                if let Some(t) = r#type {
                    all(&[("type", S(t))]);
                }
                if let Some(v) = value {
                    all(&[("value", J(v))]);
                }
            }
            EventBody::AgentStarted {
                lt_version,
                task,
                declarations,
                system,
                model,
                settings,
                profile,
                registry_hash,
                limits,
                tags,
            } => all(&[
                ("declarations", S(declarations)),
                ("limits", J(limits)),
                ("lt_version", S(lt_version)),
                ("model", J(model)),
                ("profile", J(profile)),
                ("registry_hash", S(registry_hash)),
                ("settings", J(settings)),
                ("system", S(system)),
                ("tags", J(tags)),
                ("task", S(task)),
            ]),
            EventBody::TaskClassified {
                label,
                matched,
                profile,
                settings,
            } => all(&[
                ("label", S(label)),
                (
                    "matched",
                    J(if *matched { &JSON_TRUE } else { &JSON_FALSE }),
                ),
                ("profile", J(profile)),
                ("settings", J(settings)),
            ]),
            EventBody::ModelRequested {
                request_id,
                messages,
                sent,
                samples,
            } => all(&[
                ("messages", J(messages)),
                ("request_id", S(request_id)),
                ("samples", U(*samples)),
                ("sent", U(*sent)),
            ]),
            EventBody::ModelRetried {
                request_id,
                attempt,
                error,
                message,
                delay_ms,
            } => all(&[
                ("attempt", U(*attempt)),
                ("delay_ms", U(*delay_ms)),
                ("error", S(error)),
                ("message", S(message)),
                ("request_id", S(request_id)),
            ]),
            EventBody::ModelReplied {
                request_id,
                texts,
                usage,
            } => all(&[
                ("request_id", S(request_id)),
                ("texts", J(texts)),
                ("usage", J(usage)),
            ]),
            EventBody::ModelFailed {
                request_id,
                error,
                message,
                attempts,
            } => all(&[
                ("attempts", U(*attempts)),
                ("error", S(error)),
                ("message", S(message)),
                ("request_id", S(request_id)),
            ]),
            EventBody::ProgramChecked {
                request_id,
                sample,
                status,
                program,
                diagnostics,
            } => all(&[
                ("diagnostics", J(diagnostics)),
                ("program", J(program)),
                ("request_id", S(request_id)),
                ("sample", U(*sample)),
                ("status", S(status)),
            ]),
            EventBody::ProgramAccepted {
                request_id,
                sample,
                votes,
                program_hash,
            } => all(&[
                ("program_hash", S(program_hash)),
                ("request_id", S(request_id)),
                ("sample", U(*sample)),
                ("votes", U(*votes)),
            ]),
            EventBody::AgentEnded {
                status,
                answer,
                reason,
                turns,
                requests,
            } => all(&[
                ("answer", J(answer)),
                ("reason", S(reason)),
                ("requests", U(*requests)),
                ("status", S(status)),
                ("turns", U(*turns)),
            ]),
        }
    }
}

impl EventBody {
    /// The kind's own fields as a JSON object (for messages that say which
    /// fields of two events differ).
    pub fn to_json_fields(&self) -> serde_json::Map<String, Json> {
        let mut out = serde_json::Map::new();
        self.each_field(|key, value| {
            let v = match value {
                Field::Str(s) => Json::String(s.to_string()),
                Field::U64(n) => Json::from(n),
                Field::Json(j) => j.clone(),
            };
            out.insert(key.to_string(), v);
        });
        out
    }
}

impl Event {
    /// The kind's name (`proposed`, …).
    pub fn kind(&self) -> &'static str {
        self.body.kind()
    }

    /// All fields, `hash` included or not, sorted by key.
    fn sorted(&self, with_hash: bool) -> Sorted<'_> {
        let mut fields = common_fields(self.seq, &self.ts, &self.session, &self.prev, &self.body);
        if with_hash {
            fields.push("hash", Field::Str(&self.hash));
        }
        fields.sort();
        Sorted(fields)
    }

    /// The canonical bytes: the event without `hash`, compact, keys sorted.
    /// Its `hash` should be [`sha256_hex`] of these.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        to_compact(&self.sorted(false))
    }

    /// Both the hash and the line of an event whose `hash` is not yet
    /// set, serialising every value once: the line is written with the
    /// hash's place kept, and the bytes around that place are what is
    /// hashed. Byte for byte what [`Event::compute_hash`] and
    /// [`Event::to_line`] give (tested). The writers use the same encoder.
    pub fn seal_encoding(&self) -> (String, Vec<u8>) {
        let mut line = Vec::new();
        let hash = encode_line(
            &mut line,
            self.seq,
            &self.ts,
            &self.session,
            &self.prev,
            &self.body,
        );
        (hash.to_string(), line)
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
        for &(k, v) in self.sorted(true).0.as_slice() {
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

/// The fields of an event with these common fields and `body`, `hash`
/// left out, unsorted.
fn common_fields<'a>(
    seq: u64,
    ts: &'a str,
    session: &'a str,
    prev: &'a str,
    body: &'a EventBody,
) -> Fields<'a> {
    let mut fields = body.fields();
    fields.push("seq", Field::U64(seq));
    fields.push("ts", Field::Str(ts));
    fields.push("session", Field::Str(session));
    fields.push("kind", Field::Str(body.kind()));
    fields.push("prev", Field::Str(prev));
    fields
}

/// An event's `hash`: 64 lowercase hex digits, on the stack.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct HashHex([u8; 64]);

impl HashHex {
    fn of(digest: &[u8]) -> HashHex {
        /// The two hex digits of every byte.
        const PAIRS: [[u8; 2]; 256] = {
            const DIGITS: &[u8; 16] = b"0123456789abcdef";
            let mut pairs = [[0u8; 2]; 256];
            let mut i = 0;
            while i < 256 {
                pairs[i] = [DIGITS[i >> 4], DIGITS[i & 15]];
                i += 1;
            }
            pairs
        };
        let mut hex = [0u8; 64];
        for (i, &b) in digest.iter().take(32).enumerate() {
            let [high, low] = PAIRS[usize::from(b)];
            hex[2 * i] = high;
            hex[2 * i + 1] = low;
        }
        HashHex(hex)
    }

    /// The digits as text.
    pub(crate) fn as_str(&self) -> &str {
        // Hex digits are ASCII.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// Replaces the contents of `out` with the digits (reusing its buffer).
    pub(crate) fn write_to(&self, out: &mut String) {
        out.clear();
        out.push_str(self.as_str());
    }
}

impl std::fmt::Display for HashHex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Appends the line of the event with these common fields and `body` to
/// `out` (without `\n`), and returns its hash, which the line holds.
///
/// The line and the canonical bytes differ only by the `hash` field, so
/// the line is written once, straight into `out`, with a placeholder for
/// the hash in its sorted place; the hash is SHA-256 of the line's bytes
/// around that field (the canonical bytes, fed to the hasher in two
/// pieces), and then fills the placeholder. Every value is serialised once
/// and nothing is allocated beyond `out`'s growth.
///
/// The field cut out is `,"hash":"…"` (with the comma before it), or
/// `"hash":"…",` when `hash` is the first key (`client_rejected`, whose
/// keys all sort after it). Some key always follows `hash` (`kind`,
/// `prev`, `seq`, `session` and `ts` all sort after it).
pub(crate) fn encode_line(
    out: &mut Vec<u8>,
    seq: u64,
    ts: &str,
    session: &str,
    prev: &str,
    body: &EventBody,
) -> HashHex {
    // The common fields, sorted; `None` is `hash`.
    let common = [
        ("hash", None),
        ("kind", Some(Field::Str(body.kind()))),
        ("prev", Some(Field::Str(prev))),
        ("seq", Some(Field::U64(seq))),
        ("session", Some(Field::Str(session))),
        ("ts", Some(Field::Str(ts))),
    ];
    let start = out.len();
    out.push(b'{');
    // The span of the hash field, which the canonical bytes leave out, and
    // where its 64 digits go (set when `hash` is written: it always is).
    let (mut from, mut digits, mut to) = (start, start, start);
    let mut first = true;
    let mut put = |key: &str, value: Option<Field<'_>>| {
        let at = out.len();
        if !first {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\":");
        match value {
            Some(Field::Str(text)) => write_str(out, text),
            Some(Field::U64(n)) => write_u64(out, n),
            Some(Field::Json(json)) => write_json(out, json),
            None => {
                out.push(b'"');
                digits = out.len();
                out.extend_from_slice(&[b'0'; 64]);
                out.push(b'"');
                // When `hash` is first, the comma the next field puts after
                // it goes too.
                (from, to) = (at, out.len() + usize::from(first));
            }
        }
        first = false;
    };
    // Both lists are sorted: merge them.
    let mut next = 0;
    body.each_field(|key, value| {
        while let Some(&(c, v)) = common.get(next) {
            if !sorts_before(c, key) {
                break;
            }
            put(c, v);
            next += 1;
        }
        put(key, Some(value));
    });
    for &(c, v) in common.get(next..).unwrap_or_default() {
        put(c, v);
    }
    out.push(b'}');
    debug_assert!(digits > start && to > from, "the hash field was written");
    let digest = Sha256::new()
        .chain_update(&out[start..from])
        .chain_update(&out[to..])
        .finalize();
    let hash = HashHex::of(&digest);
    out[digits..digits + 64].copy_from_slice(&hash.0);
    hash
}

/// `a < b` for two distinct keys, decided by their first bytes when they
/// differ (they mostly do), without a call to `memcmp`.
fn sorts_before(a: &str, b: &str) -> bool {
    match (a.as_bytes().first(), b.as_bytes().first()) {
        (Some(x), Some(y)) if x != y => x < y,
        _ => a < b,
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
    HashHex::of(&Sha256::digest(bytes)).to_string()
}

#[cfg(test)]
#[path = "event_tests.rs"]
mod tests;
