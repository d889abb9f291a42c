//! Reading a log into [`Event`]s. Reading verifies: an event is only
//! handed out once it and every event before it passed every check of
//! [`super::verify()`], so replay never acts on an edited log.

use super::event::Event;
use super::verify::{scan, Problem, VerifyReport};
use std::fmt;

/// Why a log could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogError {
    /// A check failed (see [`Problem`]).
    Invalid(Problem),
    /// Every complete line verified, but the last line has no final `\n`:
    /// the session's writer stopped mid-write. [`read_prefix`] gives the
    /// events before it.
    IncompleteTail {
        /// The incomplete line's number.
        line: usize,
        /// How many events precede it.
        events: usize,
    },
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogError::Invalid(problem) => write!(f, "{problem}"),
            LogError::IncompleteTail { line, events } => write!(
                f,
                "line {line}: incomplete (no final newline): a write was cut short after {events} complete events"
            ),
        }
    }
}

impl std::error::Error for LogError {}

/// Reads and verifies a whole log. Fails on the first problem, and on an
/// incomplete tail (use [`read_prefix`] to recover the events before it).
pub fn read_log(text: &str) -> Result<Vec<Event>, LogError> {
    let (events, report) = read_prefix(text);
    if let Some(problem) = report.problem {
        return Err(LogError::Invalid(problem));
    }
    if report.incomplete_tail {
        return Err(LogError::IncompleteTail {
            line: report.tail_line(),
            events: report.events,
        });
    }
    Ok(events)
}

/// Reads the longest verified prefix of a log: the events before the first
/// problem (all of them when there is none) and the report.
pub fn read_prefix(text: &str) -> (Vec<Event>, VerifyReport) {
    let mut events = Vec::new();
    let report = scan(text, |event| events.push(event));
    (events, report)
}
