//! What every route of the API and the console shares: the handlers'
//! state (the hub, the keys) and the lookups each request makes first
//! (its tenant by key, a session of that tenant) and the session's view.
//! Below the routes (`api.rs`, `start.rs`, `sse.rs`, `task.rs`,
//! `event_id.rs`, `console/`), which all import from here.

use super::error::ApiError;
use super::hub::Hub;
use super::live::{Live, Refusal};
use super::store::{SessionRecord, SessionStatus};
use crate::control::approver::ApprovalAnswer;
use crate::log::StoreError;
use axum::http::{header, HeaderMap, StatusCode};
use serde_json::{json, Value};
use std::sync::Arc;

/// What the handlers share.
pub struct AppState {
    /// The sessions.
    pub hub: Arc<Hub>,
    /// Who holds which key.
    pub keys: super::auth::Keys,
}

/// The tenant whose key the request carries. Errors: 401.
pub fn tenant<'a>(state: &'a AppState, headers: &HeaderMap) -> Result<&'a str, ApiError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    state.keys.tenant(value).ok_or_else(|| {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid API key is needed",
        )
        .hint("send it as `Authorization: Bearer KEY`")
    })
}

/// The session `id` of `tenant`. Errors: 404 (also for another tenant's),
/// 500 `record_damaged` (its row cannot be read), 503 (the store failed).
pub fn record(state: &AppState, tenant: &str, id: &str) -> Result<SessionRecord, ApiError> {
    match state.hub.store.session(tenant, id) {
        Ok(Some(r)) => Ok(r),
        Ok(None) => Err(ApiError::not_found(id)),
        Err(StoreError::Damaged(why)) => Err(ApiError::damaged(id, &why)),
        Err(e) => Err(ApiError::store(e)),
    }
}

/// Whether `tenant` has session `id`: a live session of this server is
/// known without a read. Errors: 404 (another tenant's is not found
/// either), 503.
pub fn known(state: &AppState, tenant: &str, id: &str) -> Result<(), ApiError> {
    if state.hub.live(tenant, id).is_some() {
        return Ok(());
    }
    record(state, tenant, id).map(drop)
}

/// A session as the API shows it: [`summary`] with `pending_approvals`
/// when it runs here or waits for an approval. Errors: 503, when the log
/// of a session waiting for an approval on another worker cannot be read.
pub fn view(state: &AppState, r: &SessionRecord) -> Result<Value, ApiError> {
    let live = state.hub.live(&r.tenant, &r.id);
    let mut v = summary_of(r, live.as_deref());
    let pending = match &live {
        Some(l) => l.pending_approvals(),
        None if v["status"] == SessionStatus::WaitingApproval.as_str() => {
            pending_in_log(state, &r.id).map_err(ApiError::store)?
        }
        None => return Ok(v),
    };
    v["pending_approvals"] = json!(pending);
    Ok(v)
}

/// A session's fields as the API shows them, but for `pending_approvals`
/// (status and calls from this server when it runs the session, else from
/// its record; `value` and `output` once it is over). Reads nothing.
pub fn summary(state: &AppState, r: &SessionRecord) -> Value {
    summary_of(r, state.hub.live(&r.tenant, &r.id).as_deref())
}

/// [`summary`] of `r`, which runs here as `live` (or not: `None`).
fn summary_of(r: &SessionRecord, live: Option<&Live>) -> Value {
    let status = live.map_or(r.status, Live::status);
    let calls = live.map_or(r.calls, Live::calls);
    let mut v = json!({
        "id": r.id,
        "status": status.as_str(),
        "profile": r.profile,
        "created_ms": r.created_ms,
        "updated_ms": r.updated_ms,
        "calls": calls,
        "events": r.events,
    });
    if status.is_final() {
        if let Some(out) = &r.output {
            if status == SessionStatus::Ended {
                // A task session's value is the model's answer.
                let field = if r.is_task() { "answer" } else { "value" };
                v["value"] = out.get(field).cloned().unwrap_or(Value::Null);
            }
            v["output"] = out.clone();
        }
    }
    v
}

/// The approval requests of session `r` that wait for an answer, sorted:
/// those the session holds when this server runs it, else, when it waits
/// for an approval on another worker (many workers share a PostgreSQL
/// store), those its log holds unanswered; else none. Errors: the store's,
/// reading the log.
pub fn pending_approvals(state: &AppState, r: &SessionRecord) -> Result<Vec<String>, StoreError> {
    match state.hub.live(&r.tenant, &r.id) {
        Some(l) => Ok(l.pending_approvals()),
        None if r.status == SessionStatus::WaitingApproval => pending_in_log(state, &r.id),
        None => Ok(Vec::new()),
    }
}

/// How long a request for a session that is not over, yet not running on a
/// server that is the only one on its store, waits for it to run: just
/// after a restart, the server resumes its sessions a moment after it
/// listens, and its API already lists their pending approvals (from their
/// logs).
pub const RESUME_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Session `id` of `tenant` once it runs here, waiting [`RESUME_WAIT`] at
/// most (`None`: it did not start running; the caller answers 409).
async fn live_soon(state: &AppState, tenant: &str, id: &str) -> Option<Arc<Live>> {
    let until = tokio::time::Instant::now() + RESUME_WAIT;
    loop {
        if let Some(l) = state.hub.live(tenant, id) {
            return Some(l);
        }
        if tokio::time::Instant::now() >= until {
            return None;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// Where [`answer`] took an answer to an approval request.
#[derive(Debug, PartialEq, Eq)]
pub enum Answered {
    /// The session runs here and took it.
    Here,
    /// Another worker runs the session: the answer went to it.
    Forwarded,
}

/// Why [`answer`] did not take an answer to an approval request.
#[derive(Debug)]
pub enum NotAnswered {
    /// The session is over, or runs on no worker and did not start running
    /// here within [`RESUME_WAIT`] (409).
    NotRunning,
    /// The session's log already holds an answer to this request (409).
    Twice,
    /// The session running here refused it (unknown request: 404; a
    /// second answer, or a request no longer waited for: 409).
    Refused(Refusal),
    /// The store could not be read or written (503).
    Store(StoreError),
}

/// Gives `answer` to approval request `approval_id` of session `r`, the
/// one path of the API's and the console's answers:
/// - the session runs here: [`answer_approval`];
/// - else, its log holds an answer: [`NotAnswered::Twice`];
/// - else, it is over: [`NotAnswered::NotRunning`];
/// - else, another worker runs it (many workers on one store): forwarded,
///   as `{"approval_id", "granted", "reason"}`;
/// - else (the only server on its store, just restarted): the session is
///   about to run here, and is waited for ([`live_soon`]).
pub async fn answer(
    state: &AppState,
    r: &SessionRecord,
    approval_id: &str,
    answer: ApprovalAnswer,
) -> Result<Answered, NotAnswered> {
    let live = match state.hub.live(&r.tenant, &r.id) {
        Some(live) => live,
        None => {
            if answered_in_log(state, &r.id, approval_id).map_err(NotAnswered::Store)? {
                return Err(NotAnswered::Twice);
            }
            if r.status.is_final() {
                return Err(NotAnswered::NotRunning);
            }
            let body = json!({"approval_id": approval_id, "granted": answer.granted, "reason": answer.reason});
            if state
                .hub
                .forward(&r.id, "approval", &body)
                .map_err(NotAnswered::Store)?
            {
                return Ok(Answered::Forwarded);
            }
            live_soon(state, &r.tenant, &r.id)
                .await
                .ok_or(NotAnswered::NotRunning)?
        }
    };
    answer_approval(state, &live, &r.id, approval_id, answer).map_err(NotAnswered::Refused)?;
    Ok(Answered::Here)
}

/// Answers approval request `approval_id` of session `id`, which runs
/// here as `live`: one it waits for, or one its log holds unanswered that
/// it has not asked again yet (resuming: [`Live::answer_ahead`]). Errors:
/// as [`Live::answer`].
fn answer_approval(
    state: &AppState,
    live: &Live,
    id: &str,
    approval_id: &str,
    answer: ApprovalAnswer,
) -> Result<(), Refusal> {
    match live.answer(approval_id, answer.clone()) {
        Err(Refusal::Unknown(m)) => match pending_in_log(state, id) {
            Ok(logged) if logged.iter().any(|a| a == approval_id) => {
                live.answer_ahead(approval_id, answer)
            }
            _ => Err(Refusal::Unknown(m)),
        },
        other => other,
    }
}

/// The approval requests of session `id` that its log holds unanswered
/// (an `approval_requested` with no `approval_decided` of the same
/// `approval_id`; `docs/log-format.md`), sorted: what the worker running
/// it lists from memory, for a worker that does not run it.
fn pending_in_log(state: &AppState, id: &str) -> Result<Vec<String>, StoreError> {
    Ok(approvals_in_log(state, id)?
        .into_iter()
        .filter(|(_, answered)| !answered)
        .map(|(a, _)| a)
        .collect())
}

/// Whether session `id`'s log holds an answer (`approval_decided`) to
/// approval request `approval_id`: a worker that does not run the session
/// refuses to forward another (409), as the one running it would.
fn answered_in_log(state: &AppState, id: &str, approval_id: &str) -> Result<bool, StoreError> {
    Ok(approvals_in_log(state, id)?
        .get(approval_id)
        .copied()
        .unwrap_or(false))
}

/// The approval requests in session `id`'s log, each with whether the
/// log holds its answer.
fn approvals_in_log(
    state: &AppState,
    id: &str,
) -> Result<std::collections::BTreeMap<String, bool>, StoreError> {
    let mut asked = std::collections::BTreeMap::new();
    for line in state.hub.store.events_after(id, None)? {
        let Ok(event) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(approval) = event["approval_id"].as_str() else {
            continue;
        };
        match event["kind"].as_str() {
            Some("approval_requested") => {
                asked.entry(approval.to_string()).or_insert(false);
            }
            Some("approval_decided") => {
                asked.insert(approval.to_string(), true);
            }
            _ => {}
        }
    }
    Ok(asked)
}
