//! `lt eval --replay DIR`: every recorded session log (`*.jsonl`) in a
//! folder replayed against the current lt, each that now diverges reported
//! with `lt replay`'s error (a regression suite of real sessions).
//!
//! ```text
//! DIR/*.jsonl (sorted) ─▶ JsonlFile::load (verified) ─▶ judge_log:
//!     agent_started … ─▶ agent::replay::judge (recorded replies answer the model)
//!     session_started … ─▶ recorded program, checked and lowered,
//!                          session::replay::replay under the recorded profile and limits
//!   ─▶ Replayed {log, ok, kind, message} per file
//! ```
//!
//! [`judge_log`] is also what `lt serve` answers `POST …/replay` with
//! (`serve::replay`). Replays run the interpreter: call these on a thread
//! with a big stack ([`crate::control::session::spawn`]).

use crate::control::session::replay::{replay, Recorded};
use crate::control::session::{check_and_lower, recorded_limits};
use crate::log::{Event, EventBody, EventStore, JsonlFile, Loaded};
use serde::Serialize;
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};

/// Replays a verified log (`events`) as `lt replay` does, its recorded
/// program named `program_name`: `lt replay --json`'s object, `{ok: true,
/// …}` when the replay matches the log, else `{ok: false, kind, message}`
/// (`kind`: `log`, `check`, `non_determinism`, `different_value`,
/// `incomplete`).
pub fn judge_log(events: Vec<Event>, program_name: &str) -> Json {
    let fail = |kind: &str, message: String| json!({"ok": false, "kind": kind, "message": message});
    if matches!(
        events.first().map(|e| &e.body),
        Some(EventBody::AgentStarted { .. })
    ) {
        return match crate::agent::replay::judge(events) {
            Ok((_, v)) => v,
            Err((kind, message)) => fail(kind, message),
        };
    }
    let Some(recorded) = Recorded::from_events(&events) else {
        return fail("log", "the log has no session_started event".into());
    };
    let file = recorded.program_file(program_name);
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
    replay(&events, &ir, profile, limits).to_json()
}

/// One log's verdict.
#[derive(Clone, Debug, Serialize)]
pub struct Replayed {
    /// The log file.
    pub log: String,
    /// The replay matches the log.
    pub ok: bool,
    /// How it diverges (`non_determinism`, `different_value`, `incomplete`,
    /// `check`, `log`), when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Why, in words (`lt replay`'s error), when it diverges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `lt replay --json`'s object.
    pub verdict: Json,
}

/// The `*.jsonl` files of `dir`, sorted. Errors: `dir` cannot be read, or
/// holds no log (in words, with a hint).
pub fn logs_in(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        format!(
            "--replay {}: cannot read the folder: {e}\n  help: give a folder of session logs (`lt run --log`, `lt agent --log`)",
            dir.display()
        )
    })?;
    let mut logs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    logs.sort();
    if logs.is_empty() {
        return Err(format!(
            "--replay {}: the folder holds no *.jsonl session log\n  help: record sessions with `lt run … --log DIR/NAME.jsonl` (or `lt agent … --log`)",
            dir.display()
        ));
    }
    Ok(logs)
}

/// Replays the log at `path` ([`judge_log`]); a log that cannot be read or
/// does not verify diverges with kind `log`.
pub fn replay_file(path: &Path) -> Replayed {
    let log = path.display().to_string();
    let verdict = match JsonlFile::new(path).load("") {
        Err(e) => {
            json!({"ok": false, "kind": "log", "message": format!("cannot read the log: {e}")})
        }
        Ok(Loaded { report, .. }) if report.problem.is_some() => {
            let p = report.problem.map(|p| p.to_string()).unwrap_or_default();
            json!({"ok": false, "kind": "log", "message": format!("the log does not verify: {p}")})
        }
        Ok(Loaded { events, .. }) => judge_log(events, &format!("{log} (recorded program)")),
    };
    let ok = verdict["ok"] == json!(true);
    Replayed {
        log,
        ok,
        kind: (!ok).then(|| verdict["kind"].as_str().unwrap_or("log").to_string()),
        message: (!ok).then(|| verdict["message"].as_str().unwrap_or("").to_string()),
        verdict,
    }
}
