//! The write-ahead rule, per event kind: which events a store must commit
//! before `append` returns, and which may wait in a buffer.
//!
//! An event that records or precedes an action (`scheduled`, every outcome,
//! denials, session start and end, client and approval events,
//! annotations) is committed before [`EventSink::append`] returns, so the
//! control plane acts only on what the store holds. `proposed` and an
//! allowing `decided` may wait in a buffer and are committed with the next
//! committed event (the `scheduled` of the same call at the latest): losing
//! them loses only the proposal of a call that never started.
//!
//! [`EventSink::append`]: super::EventSink::append

use super::event::EventBody;
use std::collections::BTreeSet;

/// When an appended event must be committed (see the module note).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteAhead {
    /// Committed before `append` returns: the control plane acts on it next.
    Commit,
    /// May be buffered until the next [`WriteAhead::Commit`] event.
    Buffer,
}

/// The write-ahead rule of `body`'s kind: [`WriteAhead::Buffer`] for
/// `proposed` and an allowing `decided` (a denial is an outcome the program
/// sees: committed), [`WriteAhead::Commit`] for every other kind.
pub fn write_ahead(body: &EventBody) -> WriteAhead {
    match body {
        EventBody::Proposed { .. } => WriteAhead::Buffer,
        EventBody::Decided { decision, .. } if *decision == super::Decision::Allow => {
            WriteAhead::Buffer
        }
        _ => WriteAhead::Commit,
    }
}

/// The rule of a store whose commits are fsynced and grouped (the server's
/// SQLite and PostgreSQL stores): an event is committed before `append`
/// returns only when the control plane acts on it *outside the session*
/// next — `scheduled` (a tool call starts), `client_dispatched` (a client
/// is told to run a call), `approval_requested` (someone is asked),
/// `model_requested` (a model provider is asked), annotation markers and
/// the client's reports. `session_started`, `proposed`, every `decided`,
/// every outcome (`completed`, `failed`, `timed_out`) and `session_ended`
/// are [`WriteAhead::Buffer`]: they are committed with the next committed
/// event of their session, or with the session's final status.
///
/// What a crash can lose is therefore only what nobody outside the session
/// has seen: the program's pure steps since its last external action. A
/// lost outcome leaves its call `scheduled` without an outcome, which
/// resume treats as for a crash during the call (an idempotent call runs
/// again, any other becomes `Err("outcome unknown …")`): never a second
/// execution of a call that may have run. This is "external synchrony"
/// (Nightingale et al., *Rethink the Sync*, OSDI 2006): durability is owed
/// before output, not before every step; it saves the store an fsync per
/// outcome.
///
/// The `scheduled` of a call whose tool is in `idempotent` (tools.toml's
/// `idempotent = true`) is [`WriteAhead::Buffer`] too: losing it loses a
/// call that may have run, and resume then runs it again with the same
/// idempotency key, which is what declaring the tool idempotent allows (a
/// `scheduled` kept without an outcome would run it again as well). Such
/// a call's guarantee is at least once, as a DBOS step's or a Temporal
/// activity's; a call of any other tool keeps at most once, its
/// `scheduled` committed before it starts.
pub fn commit_point(body: &EventBody, idempotent: &BTreeSet<String>) -> WriteAhead {
    match body {
        EventBody::Scheduled { tool, .. } if idempotent.contains(tool) => WriteAhead::Buffer,
        EventBody::SessionStarted { .. }
        | EventBody::Proposed { .. }
        | EventBody::Decided { .. }
        | EventBody::Completed { .. }
        | EventBody::Failed { .. }
        | EventBody::TimedOut { .. }
        | EventBody::SessionEnded { .. } => WriteAhead::Buffer,
        _ => WriteAhead::Commit,
    }
}
