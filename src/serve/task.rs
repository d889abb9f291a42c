//! Sessions from a task: `POST /v1/sessions {"task": "…", "profile": …}`
//! runs the `lt agent` loop on the server, with the tenant's model
//! ([`super::model`]) and its executors, through the same library code as
//! `lt agent` ([`crate::agent::task::run_task`]).
//!
//! ```text
//! create ─▶ empty task, capabilities: 400 · then no model: 501 no_model
//!        ─▶ session thread: tool list, trace check (422), proposer
//!        ─▶ store.create_session (request {"task", "profile"}; Idempotency-Key)
//!        ─▶ reply {id} ─▶ run_task(host: the tenant's, cancel: the session's,
//!           approvers: ApiApprover) into Sink(Narrated(store sink))
//!        ─▶ store.set_status(ended | failed | cancelled, lt agent --json's object)
//! restart ─▶ an unfinished task session: failed, not resumed ([`not_resumed`])
//! ```
//!
//! The log is the agent's (`agent_started` … `agent_ended`, each run's
//! `session_started` … `session_ended` inside), exactly what `lt agent
//! --log` writes: `lt log verify` and `lt replay` accept `GET …/log`.
//! An ended session's `value` is the model's answer.

use super::error::ApiError;
use super::hub::{Hub, Started};
use super::live::{ApiApprover, Narrated};
use super::state::AppState;
use super::store::{Created, NewSession, SessionStatus};
use crate::agent::session::Status;
use crate::agent::task::{check_trace, run_task, TaskRun, ToolList};
use crate::control::approver::Approver;
use crate::runtime::limits::Limits;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::oneshot;

/// A request to start a session from a task.
#[derive(Clone, Debug)]
pub struct TaskRequest {
    /// The task, as the user gave it.
    pub task: String,
    /// The profile's name.
    pub profile: String,
    /// The `Idempotency-Key` header.
    pub idempotency_key: Option<String>,
}

/// What a task session records as its request (and what a retry with the
/// same Idempotency-Key is compared with).
pub fn request_body(task: &str, profile: &str) -> serde_json::Value {
    json!({"task": task, "profile": profile})
}

/// `POST /v1/sessions` with a `task`: checks it, starts the session, and
/// answers as for a program (201 `{id}`, 200 for a known idempotency key;
/// with `wait`, `Prefer: wait=N`'s seconds, the session's view once it is
/// over or N seconds passed: `super::answer::answer_start`).
pub async fn create(
    state: &Arc<AppState>,
    tenant: &str,
    req: TaskRequest,
    capabilities: Option<&[String]>,
    wait: Option<u64>,
    admission: super::hub::Admission,
) -> Result<Response, ApiError> {
    // A body that could never start is a 400 first, whatever the tenant.
    if req.task.trim().is_empty() {
        return Err(ApiError::bad("the task is empty").hint(
            "say what the model should do: {\"task\": \"Refund the last charge of cust_1\"}",
        ));
    }
    if capabilities.is_some() {
        return Err(ApiError::bad(
            "a task session runs only server-venue tools; `capabilities` does not apply to it",
        )
        .hint("leave `capabilities` out, or send a `program` that calls the client's tools"));
    }
    let has_model = state
        .hub
        .tenants
        .get(tenant)
        .is_some_and(|t| t.config.model.is_some());
    if !has_model {
        return Err(ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "no_model",
            format!("tenant {tenant} has no model, and a session from a task needs one"),
        )
        .hint(format!(
            "send a `program` instead, or configure the tenant's model provider ([tenants.{tenant}.model] in serve.toml; docs/api.md)"
        )));
    }
    let (reply, answer) = oneshot::channel();
    let hub = Arc::clone(&state.hub);
    let tenant_name = tenant.to_string();
    state
        .hub
        .spawn(move || start(hub, &tenant_name, req, reply))
        .map_err(|e| ApiError::store(format!("cannot start the session's thread: {e}")))?;
    let started = answer
        .await
        .map_err(|_| ApiError::store("the session's thread ended before answering"))?;
    // Started (in the live map) or not: its place is the live map's now.
    drop(admission);
    super::answer::answer_start(
        state,
        tenant,
        started,
        wait,
        "the task session was refused before it started; `output` says why",
        "pick a profile under which the model's settings can be met, or fix the tenant's configuration",
    )
    .await
}

/// The output of a session that could not start: `lt agent --json`'s
/// failure shape.
fn refusal(stage: &str, message: String) -> Value {
    json!({"ok": false, "stage": stage, "error": {"kind": "usage", "message": message}})
}

/// On the session's thread: records the session, replies, runs it.
fn start(hub: Arc<Hub>, tenant_name: &str, req: TaskRequest, reply: oneshot::Sender<Started>) {
    let refuse = |reply: oneshot::Sender<Started>, stage: &str, message: String| {
        let _ = reply.send(Started::Refused(refusal(stage, message)));
    };
    let Some(tenant) = hub.tenants.get(tenant_name) else {
        return refuse(reply, "tenant", "no such tenant".into());
    };
    let (Some(model), Some(host)) = (&tenant.config.model, &tenant.host) else {
        return refuse(reply, "model", "the tenant has no model".into());
    };
    let Some(profile) = tenant.config.profile(&req.profile) else {
        return refuse(reply, "profile", format!("no profile {:?}", req.profile));
    };
    // Checked at load; the parsed form is not `Send`, so read it here.
    let tools = match ToolList::load(&tenant.config.declarations_text) {
        Ok(t) => t,
        Err(_) => {
            return refuse(
                reply,
                "tools",
                "the tenant's declarations list no tools".into(),
            )
        }
    };
    if let Err(e) = check_trace(&model.agent, &model.tags, &profile, &tools.decls) {
        return refuse(reply, "settings", e);
    }
    let id = crate::log::new_session_id();
    let live = hub.register(&id, tenant_name);
    let mut proposer = match model.settings.proposer(Some(live.cancel.clone())) {
        Ok(p) => p,
        Err(e) => {
            hub.unregister(&id);
            return refuse(reply, "model", format!("the model cannot be set up: {e}"));
        }
    };
    let new = NewSession {
        id: id.clone(),
        tenant: tenant_name.to_string(),
        profile: req.profile.clone(),
        request: request_body(&req.task, &req.profile),
        idempotency_key: req.idempotency_key.clone(),
        created_ms: super::hub::now_ms(),
    };
    match hub.store.create_session(&new) {
        Ok(Created::New) => {}
        Ok(Created::Existing(rec)) => {
            hub.unregister(&id);
            let _ = reply.send(super::hub::existing(rec, &new.request));
            return;
        }
        Err(e) => {
            hub.unregister(&id);
            let _ = reply.send(Started::store_failed(e));
            return;
        }
    }
    hub.metrics.started.with_label_values(&[tenant_name]).inc();
    let _ = reply.send(Started::New(id.clone()));
    let sink = match hub.store.create_minted(&id) {
        Ok(s) => s,
        Err(e) => {
            let out = refusal("log", format!("cannot open the session's log: {e}"));
            return hub.finish(&id, SessionStatus::Failed, &out, 0);
        }
    };
    let mut narrated = Narrated {
        inner: sink,
        live: Arc::clone(&live),
        store: Arc::clone(&hub.store),
        metrics: Arc::clone(&hub.metrics),
        calls: HashMap::new(),
    };
    let approver_live = Arc::clone(&live);
    let (approver_store, approver_metrics) = (Arc::clone(&hub.store), Arc::clone(&hub.metrics));
    let run = TaskRun {
        id: id.clone(),
        task: req.task,
        tools: &tools,
        tags: model.tags.clone(),
        profile,
        settings: model.agent.clone(),
        classify: None,
        host: host.clone(),
        registry_bytes: tenant.config.registry_bytes.clone(),
        limits: Limits::default(),
        cancel: live.cancel.clone(),
        approvers: Some(Box::new(move || {
            Box::new(ApiApprover {
                live: Arc::clone(&approver_live),
                store: Arc::clone(&approver_store),
                metrics: Arc::clone(&approver_metrics),
            }) as Box<dyn Approver>
        })),
    };
    let outcome = run_task(run, &mut proposer, &mut narrated, &mut |_| {});
    drop(narrated);
    let (status, output) = match outcome {
        Ok(o) => {
            let status = if o.status == Status::Answered {
                SessionStatus::Ended
            } else if live.cancel.is_cancelled() && !live.cancel.is_abandoned() {
                SessionStatus::Cancelled
            } else {
                SessionStatus::Failed
            };
            (status, o.to_json())
        }
        Err(f) => (
            SessionStatus::Failed,
            serde_json::to_value(f.output()).unwrap_or(Value::Null),
        ),
    };
    hub.finish(&id, status, &output, live.calls());
}
