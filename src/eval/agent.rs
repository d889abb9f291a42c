//! One run of an agent case: the task through the `lt agent` loop,
//! [`crate::agent::task::run_task`] (the code `lt agent` and `lt serve`
//! share), with the case's model, its executors and profile, the agent's
//! log (`agent_started` … each run's `session_started` … `session_ended` …
//! `agent_ended`) kept in a [`MemoryStore`].
//!
//! ```text
//! prepare (once per thread): declarations ─▶ ToolList, executors cover it,
//!         profile + [agent] tables ─▶ settings, trace checked
//! run:    Registry ─▶ ExecutorHost ─▶ run_task(TaskRun, HttpProposer, store sink)
//!         ─▶ Outcome: ok = answered, value = the last run's, rounds = requests
//! ```
//!
//! The replay invariant is `agent::replay::judge` (what `lt replay` does
//! with an agent's log): the recorded replies answer the model's requests.

use super::record::RunRecord;
use super::suite::{Case, Task};
use crate::agent::config::AgentSettings;
use crate::agent::session::Status;
use crate::agent::task::{
    check_trace, executors_cover, load_profile, run_task, tags, ExecutorGap, TaskRun, ToolList,
    ToolListError,
};
use crate::control::approver::{Approver, FixedApprover};
use crate::control::profile::Profile;
use crate::exec::{ExecutorHost, Registry};
use crate::log::{new_session_id, EventStore, MemoryStore};
use crate::runtime::limits::Limits;
use std::collections::BTreeMap;
use std::path::Path;

/// An agent case made ready on one thread (the tool list holds `Rc`s).
pub struct TaskReady {
    /// The checked declarations.
    pub tools: ToolList,
    /// The tools.toml bytes (empty: no executors).
    pub registry_bytes: Vec<u8>,
    /// The listed tools' tags.
    pub tags: BTreeMap<String, Vec<String>>,
    /// The profile the runs use.
    pub profile: Profile,
    /// The loop's settings: the executors' `[agent]`, the profile's, then
    /// the suite's.
    pub settings: AgentSettings,
}

fn registry(case: &Case) -> Result<Registry, String> {
    match &case.executors {
        Some(p) => Registry::load(p).map_err(|e| e.to_string()),
        None => Registry::from_str("", Path::new("."), "<no executors>").map_err(|e| e.to_string()),
    }
}

/// Checks an agent case as `lt agent` does before its first request: the
/// declarations, an executor for each listed tool, the profile, the
/// settings and their trace requirements. Errors: in words, naming the
/// case.
pub fn ready(case: &Case, task: &Task) -> Result<TaskReady, String> {
    let fail = |m: String| format!("case {:?}: {m}", case.name);
    let shown = task.tools.display().to_string();
    let text = std::fs::read_to_string(&task.tools)
        .map_err(|e| fail(format!("cannot read {shown}: {e}")))?;
    let tools = match ToolList::load(&text) {
        Ok(t) => t,
        Err(ToolListError::Errors(e)) => {
            let file = crate::source::SourceFile::new(shown.clone(), text.clone());
            return Err(fail(format!(
                "the declarations {shown} have errors (the model would copy them):\n{}",
                crate::diag::render::render(&file, &e.diagnostics, false)
            )));
        }
        Err(ToolListError::NoTools) => {
            return Err(fail(format!("{shown} declares no tools")));
        }
    };
    let registry_bytes = match &case.executors {
        Some(p) => crate::exec::read_config_bytes(p)
            .map_err(|e| fail(format!("cannot read {}: {e}", p.display())))?,
        None => Vec::new(),
    };
    let registry = registry(case).map_err(fail)?;
    match executors_cover(&tools, &registry) {
        Ok(()) => {}
        Err(ExecutorGap::Missing(m)) => {
            return Err(fail(format!(
                "no executor for {}, which {shown} lists (add a [tools.{}] table to the executors)",
                m.join(", "),
                m[0]
            )))
        }
        Err(ExecutorGap::Client(t)) => {
            return Err(fail(format!(
                "tool {t} runs on the client (venue = \"client\"), which agent cases do not support"
            )))
        }
    }
    let tags = tags(&tools, &registry);
    let executors = case.executors.as_ref().map(|p| p.display().to_string());
    let profile_path = case.profile.as_ref().map(|p| p.display().to_string());
    let (profile, table) = load_profile(
        &String::from_utf8_lossy(&registry_bytes),
        executors.as_deref(),
        profile_path.as_deref(),
    )
    .map_err(|f| fail(f.message))?;
    let settings = table
        .overlay(&task.agent)
        .settings()
        .and_then(|s| check_trace(&s, &tags, &profile, &tools.decls).map(|_| s))
        .map_err(|e| fail(format!("[agent] settings: {e}")))?;
    Ok(TaskReady {
        tools,
        registry_bytes,
        tags,
        profile,
        settings,
    })
}

/// Runs the agent session of `case` into `store`, filling `rec`'s ending,
/// rounds, answer and session time. Returns the session's id, or `None`
/// when it could not start (the reason is in `rec.failed`).
pub fn session(
    case: &Case,
    task: &Task,
    ready: &TaskReady,
    store: &MemoryStore,
    handle: tokio::runtime::Handle,
    rec: &mut RunRecord,
) -> Option<String> {
    let registry = match registry(case) {
        Ok(r) => r,
        Err(e) => {
            rec.failed.push(e);
            return None;
        }
    };
    let mut proposer = match task.model.proposer(None) {
        Ok(p) => p,
        Err(e) => {
            rec.failed.push(format!("the model cannot be set up: {e}"));
            return None;
        }
    };
    let id = new_session_id();
    let mut sink = match store.create(&id) {
        Ok(s) => s,
        Err(e) => {
            rec.failed.push(format!("the log could not be opened: {e}"));
            return None;
        }
    };
    let host = ExecutorHost::new(registry, handle);
    let run = TaskRun {
        id: id.clone(),
        task: task.task.clone(),
        tools: &ready.tools,
        tags: ready.tags.clone(),
        profile: ready.profile.clone(),
        settings: ready.settings.clone(),
        classify: None,
        host: host.clone(),
        registry_bytes: ready.registry_bytes.clone(),
        limits: Limits {
            timeout: Some(std::time::Duration::from_millis(case.timeout_ms)),
            ..Limits::default()
        },
        cancel: crate::runtime::cancel::Cancel::new(),
        approvers: Some(Box::new(|| {
            Box::new(FixedApprover::new(
                false,
                "lt eval",
                "lt eval answers no approval",
            )) as Box<dyn Approver>
        })),
    };
    let began = std::time::Instant::now();
    let outcome = run_task(run, &mut proposer, sink.as_mut(), &mut |_| {});
    rec.ms = began.elapsed().as_secs_f64() * 1000.0;
    host.shutdown();
    drop(sink);
    match outcome {
        Ok(o) => {
            rec.rounds = u64::from(o.requests);
            rec.answer = o.answer.clone();
            rec.value = o
                .last_run
                .as_ref()
                .and_then(|r| r.value.clone())
                .unwrap_or_default();
            if o.status == Status::Answered {
                rec.ok = true;
            } else if o.status == Status::Error {
                // The model server down or unreachable after its retries
                // (or the log unwritable): the run says nothing of the
                // agent, so it is not judged.
                rec.errored = Some(format!("the model could not be reached: {}", o.reason));
                rec.error = Some(o.reason.clone());
                rec.value = serde_json::json!({"kind": "errored", "message": o.reason});
            } else {
                rec.error = Some(format!(
                    "the agent ended {}: {}",
                    o.status.as_str(),
                    o.reason
                ));
                rec.value = serde_json::json!({"kind": o.status.as_str(), "message": o.reason});
            }
        }
        Err(f) => {
            rec.failed
                .push(format!("the agent session did not start: {}", f.message));
            return None;
        }
    }
    Some(id)
}

/// The replay invariant of an agent's log: `lt replay`'s verdict.
pub fn check_replay(rec: &mut RunRecord, events: Vec<crate::log::Event>) {
    if let Err((_, message)) = crate::agent::replay::judge(events) {
        rec.invariants.push(format!("replay reproduces: {message}"));
    }
}
