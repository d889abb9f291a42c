//! `lt log show FILE` and `lt log verify FILE`.
//!
//! Exit codes: 0 the log is intact (show: it was read); 1 verification
//! found a problem (show: the log is not readable as events); 2 the file
//! cannot be read.

use super::{LogAction, EXIT_DIAGNOSTICS, EXIT_OK, EXIT_USAGE};
use crate::log::{drop_event, timeline, EventStore, JsonlFile, Loaded};
use serde_json::json;

/// Runs an `lt log` action and returns the exit code.
pub fn run(action: LogAction) -> u8 {
    match action {
        LogAction::Show { file } => {
            let Some(Loaded { events, report }) = read(&file) else {
                return EXIT_USAGE;
            };
            out!("{}", timeline(&events).trim_end());
            if !report.ok || report.incomplete_tail {
                err!("{file}: {report}");
                err!("help: `lt log verify {file}` checks the whole chain");
            }
            if report.ok {
                EXIT_OK
            } else {
                EXIT_DIAGNOSTICS
            }
        }
        LogAction::Verify { file, json } => {
            let Some(Loaded { events, report }) = read(&file) else {
                return EXIT_USAGE;
            };
            events.into_iter().for_each(drop_event);
            if json {
                out!(
                    "{}",
                    json!({
                        "ok": report.ok,
                        "events": report.events,
                        "problem": report.problem.as_ref().map(|p| json!({
                            "line": p.line,
                            "kind": p.kind.as_str(),
                            "message": p.message,
                        })),
                        "incomplete_tail": report.incomplete_tail,
                        "session": report.session,
                        "last_hash": report.last_hash,
                    })
                );
            } else if report.ok {
                out!("{file}: {report}");
            } else {
                err!("{file}: {report}");
            }
            if report.ok {
                EXIT_OK
            } else {
                EXIT_DIAGNOSTICS
            }
        }
    }
}

/// The log's verified events and the verification report, read through
/// the JSON Lines store; `None` (the error printed) when it cannot be read.
fn read(file: &str) -> Option<Loaded> {
    match JsonlFile::new(file).load("") {
        Ok(loaded) => Some(loaded),
        Err(e) => {
            err!("error: cannot read {file}: {e}");
            None
        }
    }
}
