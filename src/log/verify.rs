//! Verifying a log: the checks of `docs/log-format.md`, line by line, in
//! order, stopping at the first violation.
//!
//! For line `n` (1-based) holding the event that should have `seq` n-1:
//!
//! 1. `not_json`: the line is one JSON value (no repeated key in any object);
//!    `malformed`: it is an object with the common fields and the fields
//!    of a known kind, each of the right type, and no other field;
//! 2. `seq`: `seq` is n-1;
//! 3. `session`: `session` is the first event's;
//! 4. `prev`: `prev` is the previous event's `hash` (64 zeros first);
//! 5. `hash`: `hash` is the SHA-256 of the canonical bytes;
//! 6. `not_canonical`: the line is byte for byte the canonical
//!    serialisation of the event, `hash` included — so that no edit of the
//!    line's bytes can leave its meaning unchanged and go unnoticed (`\u00E9`
//!    for `é`, `1E+300` for `1e+300`, added spaces);
//! 7. `order`: the first event is `session_started`, no other is, and no
//!    event follows `session_ended`.
//!
//! An empty file is `empty`. Text after the last `\n` is an incomplete tail
//! (a write cut short): reported in [`VerifyReport::incomplete_tail`], not
//! checked, not counted, and not a problem by itself — except after
//! `session_ended`, where nothing is ever written (`order`).

use super::drop::drop_event;
use super::event::{canonical_bytes, sha256_hex, Event, EventBody, ZERO_HASH};
use super::json::parse_strict;
use serde_json::Value as Json;
use std::fmt;

/// What kind of violation a [`Problem`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProblemKind {
    /// The file holds no complete line.
    Empty,
    /// A line is not JSON (or an object repeats a key).
    NotJson,
    /// A line is JSON but not an event: not an object, a field missing, of
    /// the wrong type or unknown, an unknown kind.
    Malformed,
    /// `seq` is not the line's position.
    Seq,
    /// `session` differs from the first event's.
    Session,
    /// `prev` is not the previous event's `hash`.
    Prev,
    /// `hash` is not the hash of the event's canonical bytes.
    Hash,
    /// The line is not the canonical serialisation of its event.
    NotCanonical,
    /// `session_started` not first (or not only first), or an event after
    /// `session_ended`.
    Order,
}

impl ProblemKind {
    /// A stable snake_case name for JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::Empty => "empty",
            ProblemKind::NotJson => "not_json",
            ProblemKind::Malformed => "malformed",
            ProblemKind::Seq => "seq",
            ProblemKind::Session => "session",
            ProblemKind::Prev => "prev",
            ProblemKind::Hash => "hash",
            ProblemKind::NotCanonical => "not_canonical",
            ProblemKind::Order => "order",
        }
    }
}

/// The first violation found in a log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The 1-based line number.
    pub line: usize,
    /// What kind of violation.
    pub kind: ProblemKind,
    /// What was found and what was expected, without the line number
    /// (`Display` prefixes `line N: `).
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// The outcome of [`verify`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyReport {
    /// How many events (complete lines) passed every check: all of them
    /// when `ok`, else those before the problem's line.
    pub events: usize,
    /// No problem in the complete lines. An incomplete tail alone leaves
    /// this `true`: everything before it is intact.
    pub ok: bool,
    /// The first violation.
    pub problem: Option<Problem>,
    /// The text does not end in `\n`: its last line was cut short (a crash
    /// during a write). That line is not checked.
    pub incomplete_tail: bool,
    /// The session id of the first event, if it was read.
    pub session: Option<String>,
    /// The `hash` of the last verified event. Recording it elsewhere (a
    /// ticket, another machine) and comparing later is what detects a
    /// rewrite of the whole chain, which verification alone cannot.
    pub last_hash: Option<String>,
    /// How many complete lines (ending in `\n`) the text has.
    pub lines: usize,
}

impl fmt::Display for VerifyReport {
    /// `ok: 12 events, …` or the problem, then a line on the tail if any.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.problem {
            Some(p) => write!(f, "{p}")?,
            None if self.incomplete_tail => {
                // Said first and plainly: a crash or a kill leaves such a
                // log, and "ok" alone would hide that it was cut short.
                write!(
                    f,
                    "cut short: its last line (line {}) is incomplete, a write interrupted by a crash or a kill; \
                     the {} complete events before it verify, the hash chain is intact",
                    self.tail_line(),
                    self.events
                )?;
                if let Some(h) = &self.last_hash {
                    write!(f, "; last hash {h}")?;
                }
            }
            None => {
                write!(f, "ok: {} events, the hash chain is intact", self.events)?;
                if let Some(h) = &self.last_hash {
                    write!(f, "; last hash {h}")?;
                }
            }
        }
        if self.incomplete_tail {
            write!(
                f,
                "\nline {}: incomplete (no final newline): a write was cut short; not checked",
                self.tail_line()
            )?;
            if self.ok {
                write!(
                    f,
                    "\nhelp: `lt resume` cuts the incomplete line off and continues a session that did not end"
                )?;
            }
        }
        Ok(())
    }
}

impl VerifyReport {
    /// The line number of the incomplete tail (meaningful when
    /// `incomplete_tail`): the line after the complete ones.
    pub fn tail_line(&self) -> usize {
        self.lines + 1
    }
}

/// Checks a log's text (see the module documentation for the checks).
pub fn verify(text: &str) -> VerifyReport {
    scan(text, drop_event)
}

/// Verifies `text`, handing every event that passes to `keep`.
pub(crate) fn scan(text: &str, mut keep: impl FnMut(Event)) -> VerifyReport {
    let (complete, tail) = match text.rfind('\n') {
        Some(i) => (&text[..=i], &text[i + 1..]),
        None => ("", text),
    };
    let mut report = VerifyReport {
        events: 0,
        ok: false,
        problem: None,
        incomplete_tail: !tail.is_empty(),
        session: None,
        last_hash: None,
        lines: complete.matches('\n').count(),
    };
    if complete.is_empty() {
        let message = if tail.is_empty() {
            "the log is empty: it has no event (a log starts with session_started)"
        } else {
            "the log has no complete event: its only line has no final newline (a write cut short)"
        };
        report.problem = Some(Problem {
            line: 1,
            kind: ProblemKind::Empty,
            message: message.to_string(),
        });
        return report;
    }
    let mut state = Chain::default();
    for (index, line) in complete.split_terminator('\n').enumerate() {
        match check_line(index, line, &mut state, &mut report) {
            Ok(event) => {
                report.events += 1;
                keep(event);
            }
            Err((kind, message)) => {
                report.problem = Some(Problem {
                    line: index + 1,
                    kind,
                    message,
                });
                return report;
            }
        }
    }
    if let (Some(ended), false) = (state.ended_at, tail.is_empty()) {
        // lt writes nothing after the last event, so text there is not a
        // write cut short but something added.
        report.problem = Some(Problem {
            line: report.lines + 1,
            kind: ProblemKind::Order,
            message: format!(
                "text after {} (line {ended}): nothing follows the last event of a session",
                if state.agent {
                    "agent_ended"
                } else {
                    "session_ended"
                }
            ),
        });
        return report;
    }
    report.ok = true;
    report
}

/// What the lines before tell about the next one.
#[derive(Default)]
struct Chain {
    first_session: Option<String>,
    prev_hash: Option<String>,
    /// The line of the last event (`session_ended`, or `agent_ended` in
    /// an agent's log), once seen.
    ended_at: Option<usize>,
    /// The log is an agent session's (`agent_started` first): its runs
    /// are `session_started` … `session_ended` within it.
    agent: bool,
    /// In an agent's log: a run has started and not ended.
    run_open: bool,
}

type Violation = (ProblemKind, String);

fn check_line(
    index: usize,
    line: &str,
    chain: &mut Chain,
    report: &mut VerifyReport,
) -> Result<Event, Violation> {
    use ProblemKind as K;
    if line.is_empty() {
        return Err((
            K::NotJson,
            "an empty line; every line of the log is one event".to_string(),
        ));
    }
    let mut value = parse_strict(line).map_err(|e| {
        (
            K::NotJson,
            format!("not JSON: {} (column {})", e.message, e.column),
        )
    })?;
    // The bytes the hash covers, and the bytes the whole line must be.
    let (unhashed, whole) = match &mut value {
        Json::Object(map) => {
            let hash = map.remove("hash");
            let unhashed = canonical_bytes(&value);
            if let (Json::Object(map), Some(hash)) = (&mut value, hash) {
                map.insert("hash".to_string(), hash);
            }
            (unhashed, canonical_bytes(&value))
        }
        _ => (Vec::new(), Vec::new()),
    };
    let event = Event::from_value(value).map_err(|m| (K::Malformed, m))?;

    let expected_seq = index as u64;
    if event.seq != expected_seq {
        let why = if event.seq > expected_seq {
            "an event is missing before this line, or the lines are out of order"
        } else {
            "an event is repeated, or the lines are out of order"
        };
        let message = format!("seq {}, expected {expected_seq}: {why}", event.seq);
        return fail(K::Seq, message, event);
    }

    match &chain.first_session {
        Some(first) if *first != event.session => {
            let message = format!(
                "session {} differs from the first event's {first}: lines of another session's log were mixed in",
                event.session
            );
            return fail(K::Session, message, event);
        }
        Some(_) => {}
        None => {
            chain.first_session = Some(event.session.clone());
            report.session = Some(event.session.clone());
        }
    }

    match &chain.prev_hash {
        None if event.prev != ZERO_HASH => {
            let message = format!(
                "prev of the first event must be 64 zeros, found {}: the event was edited",
                event.prev
            );
            return fail(K::Prev, message, event);
        }
        Some(prev) if *prev != event.prev => {
            let message = format!(
                "prev does not match the hash of line {index} (event seq {}): the log was edited, reordered or an event was removed before this line",
                index - 1
            );
            return fail(K::Prev, message, event);
        }
        _ => {}
    }

    let computed = sha256_hex(&unhashed);
    if computed != event.hash {
        let message = format!(
            "hash mismatch: the event was edited after it was written (the line's hash is {}…, its content hashes to {}…)",
            &event.hash[..12],
            &computed[..12]
        );
        return fail(K::Hash, message, event);
    }

    if whole != line.as_bytes() {
        return fail(
            K::NotCanonical,
            not_canonical(line.as_bytes(), &whole),
            event,
        );
    }

    let is_start = matches!(event.body, EventBody::SessionStarted { .. });
    let is_agent_start = matches!(event.body, EventBody::AgentStarted { .. });
    if index == 0 {
        chain.agent = is_agent_start;
    }
    let last = if chain.agent {
        "agent_ended"
    } else {
        "session_ended"
    };
    let order = if index == 0 && !is_start && !is_agent_start {
        Some(format!(
            "the first event is `{}`; a log starts with `session_started` (or `agent_started`)",
            event.kind()
        ))
    } else if index > 0 && is_agent_start {
        Some("a second `agent_started`: one log holds one session".to_string())
    } else if index > 0 && is_start && !chain.agent {
        Some("a second `session_started`: one log holds one session".to_string())
    } else if is_start && chain.run_open {
        Some(
            "a `session_started` before the previous run's `session_ended`: an agent's runs do not overlap"
                .to_string(),
        )
    } else {
        chain.ended_at.map(|ended| {
            format!(
                "a `{}` event after the session ended (line {ended}): nothing follows `{last}`",
                event.kind()
            )
        })
    };
    if let Some(message) = order {
        return fail(K::Order, message, event);
    }

    match (&event.body, chain.agent) {
        (EventBody::SessionStarted { .. }, true) => chain.run_open = true,
        (EventBody::SessionEnded { .. }, true) => chain.run_open = false,
        (EventBody::SessionEnded { .. }, false) | (EventBody::AgentEnded { .. }, true) => {
            chain.ended_at = Some(index + 1)
        }
        _ => {}
    }
    chain.prev_hash = Some(event.hash.clone());
    report.last_hash = Some(event.hash.clone());
    Ok(event)
}

/// Rejects `event` (dropped without deep recursion).
fn fail(kind: ProblemKind, message: String, event: Event) -> Result<Event, Violation> {
    drop_event(event);
    Err((kind, message))
}

/// Explains how `line` differs from its canonical form `canonical`.
fn not_canonical(line: &[u8], canonical: &[u8]) -> String {
    if line.strip_suffix(b"\r") == Some(canonical) {
        return "the line ends in a carriage return: the file was converted to CRLF line endings"
            .to_string();
    }
    let at = line
        .iter()
        .zip(canonical)
        .position(|(a, b)| a != b)
        .unwrap_or(line.len().min(canonical.len()));
    let show = |bytes: &[u8]| {
        let end = (at + 12).min(bytes.len());
        let start = at.saturating_sub(8);
        format!("{:?}", String::from_utf8_lossy(&bytes[start..end]))
    };
    format!(
        "not in canonical form from column {}: the content matches its hash, but the line was re-encoded \
         (found {}, canonical {}); a log line is exactly the compact JSON of its event with sorted keys",
        at + 1,
        show(line),
        show(canonical)
    )
}
