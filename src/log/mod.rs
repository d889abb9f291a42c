//! The event log of the control plane: the record of a session, one JSON
//! object per line (`docs/log-format.md`, a public interface).
//!
//! **What it is.** A session's log says what ran (`session_started`: the
//! program text, the profile, the limits, hashes of the program and of
//! tools.toml), every call the program proposed, the decision on it, when
//! it was scheduled, how it ended, and how the session ended. It is the
//! source of truth of a session: replay answers calls from it, an auditor
//! reads it ([`timeline()`]), and [`verify()`] checks it has not been altered.
//!
//! **The hash chain.** Every event carries `prev`, the `hash` of the event
//! before it (64 zeros for the first), and its own `hash`: SHA-256 of its
//! canonical bytes, which include `prev`. Event `n` therefore commits to
//! all of events `0..n`: editing, dropping, duplicating, reordering or
//! inserting an event breaks the chain at that line, and [`verify()`] names
//! the line and what was expected there.
//!
//! **Canonical bytes.** The event object without `hash`, as compact JSON
//! with object keys sorted by their UTF-8 bytes at every level and strings
//! escaped as serde_json does. Sorting comes from `serde_json::Map` being a
//! `BTreeMap` (serde_json's `preserve_order` feature must stay off: a unit
//! test in `event.rs` fails if it is turned on), and numbers survive a
//! parse-and-print round trip because serde_json's `float_roundtrip`
//! feature is on. A line of the log is exactly the canonical serialisation
//! of its event *with* `hash`, and the verifier checks that too, so no edit
//! of a line's bytes goes unnoticed, not even one that keeps its meaning.
//!
//! **Flush before the side effect.** [`LogWriter::append`] writes every
//! event that records or precedes an action (`scheduled`, outcomes,
//! denials, session start and end) with one `write`, together with the
//! `proposed`/allowing `decided` lines buffered before it, and the control
//! plane appends `scheduled` before it starts a call. So if `lt` dies
//! during a call, the log still says the call may have happened (and its
//! idempotency key). No `fsync`: the line is in the operating system, which
//! survives the death of `lt` but not a power cut ([`LogWriter::sync`]
//! forces it to disk). A write cut short leaves a last line without `\n`,
//! which verification reports as an incomplete tail, not as tampering.
//!
//! **What verification proves, and what it does not.** A log that verifies
//! is internally consistent: every line is well formed, in order, of one
//! session, and unchanged since the event after it was chained to it. It
//! detects accidental damage and partial edits. It does not prove the log
//! is the one `lt` wrote: the chain has no secret, so whoever can write the
//! file can rewrite every event and recompute every hash, or cut events off
//! the end (a log that simply stops looks like a session still running or a
//! crash). To detect a full rewrite or truncation, anchor the chain: keep
//! the last `hash` ([`VerifyReport::last_hash`]) somewhere the writer of the
//! file cannot change, and compare.
//!
//! Modules: [`event`] (the data model, canonical bytes), `parse` (reading
//! an event's fields, with precise messages), `json` (JSON text at any
//! depth, repeated keys rejected), [`writer`] (appending: a file or memory;
//! reopening a file to continue it), [`mod@verify`] (the checks), [`read`]
//! (verified reading), [`show`] (the `lt log show` text), [`timeline`](mod@timeline) (a
//! log as rows: calls, approvals, model requests), [`tap`] (each event
//! handed to an observer as it is recorded).

pub mod call_event;
pub(crate) mod drop;
pub mod event;
mod json;
mod parse;
pub mod read;
pub mod show;
pub mod store;
pub mod tap;
pub mod timeline;
pub mod verify;
pub mod write_ahead;
pub mod writer;

pub use call_event::CallEvent;
pub use drop::drop_event;
pub use event::{
    canonical_bytes, sha256_hex, Decision, Event, EventBody, EventKind, KINDS, ZERO_HASH,
};
pub use read::{read_log, read_prefix, LogError};
pub use show::timeline;
pub use store::{EventStore, JsonlFile, Loaded, MemoryStore, ReopenedLog, StoreError};
pub use tap::{EventTap, Tapped};
pub use verify::{verify, Problem, ProblemKind, VerifyReport};
pub use writer::{
    new_session_id, now_timestamp, Discard, EventSink, LogWriter, MemoryLog, ReopenError, Reopened,
};
