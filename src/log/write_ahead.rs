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
