//! `POST /v1/sessions/{id}/replay`: a stored session replayed on the
//! server (`session::replay`, as `lt replay` does): its recorded program,
//! profile and limits against its own log; a task session's log (from
//! `agent_started`) by the agent's replay (`agent::replay::judge`), the
//! recorded replies answering the model's requests: both through
//! `eval::replay::judge_log`, which `lt eval --replay` uses too. Needs a
//! big stack: call it on a session's thread.

use super::check::PROGRAM_NAME;
use crate::log::{EventStore, Loaded};
use serde_json::{json, Value as Json};

/// `lt replay --json`'s object for the session `id` of `store`, with the
/// log's verification (`verified`).
pub fn replay_session(store: &dyn EventStore, id: &str) -> Json {
    let fail = |kind: &str, message: String| json!({"ok": false, "kind": kind, "message": message});
    let Loaded { events, report } = match store.load(id) {
        Ok(l) => l,
        Err(e) => return fail("log", format!("cannot read the log: {e}")),
    };
    if let Some(p) = &report.problem {
        return fail("log", format!("the log does not verify: {p}"));
    }
    let n = events.len();
    let agent = matches!(
        events.first().map(|e| &e.body),
        Some(crate::log::EventBody::AgentStarted { .. })
    );
    let mut v = crate::eval::replay::judge_log(events, PROGRAM_NAME);
    // The count of events replayed: a program's verdict always has it; an
    // agent's, and a log that could not be replayed at all, only when it
    // matches.
    let replayed = !matches!(v["kind"].as_str(), Some("log" | "check"));
    if v["ok"] == json!(true) || (!agent && replayed) {
        v["events"] = json!(n);
    }
    v
}
