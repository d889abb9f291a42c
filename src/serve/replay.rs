//! `POST /v1/sessions/{id}/replay`: a stored session replayed on the
//! server (`session::replay`, as `lt replay` does): its recorded program,
//! profile and limits against its own log; a task session's log (from
//! `agent_started`) by the agent's replay (`agent::replay::judge`), the
//! recorded replies answering the model's requests. Needs a big stack:
//! call it on a session's thread.

use super::check::PROGRAM_NAME;
use crate::control::session::replay::{replay, Recorded};
use crate::control::session::{check_and_lower, recorded_limits};
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
    if matches!(
        events.first().map(|e| &e.body),
        Some(crate::log::EventBody::AgentStarted { .. })
    ) {
        let n = events.len();
        return match crate::agent::replay::judge(events) {
            Ok((_, mut v)) => {
                v["events"] = json!(n);
                v
            }
            Err((kind, message)) => fail(kind, message),
        };
    }
    let Some(recorded) = Recorded::from_events(&events) else {
        return fail("log", "the log has no session_started event".into());
    };
    let file = recorded.program_file(PROGRAM_NAME);
    let profile = match recorded.profile() {
        Ok(p) => p,
        Err(e) => return fail("log", format!("the recorded profile is invalid: {e}")),
    };
    let limits = match recorded_limits(&recorded.limits) {
        Ok(l) => l,
        Err(e) => return fail("log", format!("the recorded limits are invalid: {e}")),
    };
    let ir = match check_and_lower(&file) {
        Ok(ir) => ir,
        Err(_) => return fail("check", "the recorded program no longer checks".into()),
    };
    let mut v = replay(&events, &ir, profile, limits).to_json();
    v["events"] = json!(events.len());
    v
}
