//! What every route of the API and the console shares: the handlers'
//! state (the hub, the keys) and the lookups each request makes first
//! (its tenant by key, a session of that tenant) and the session's view.
//! Below the routes (`api.rs`, `start.rs`, `sse.rs`, `task.rs`,
//! `event_id.rs`, `console/`), which all import from here.

use super::error::ApiError;
use super::hub::Hub;
use super::store::{SessionRecord, SessionStatus};
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

/// A session as the API shows it.
pub fn view(state: &AppState, r: &SessionRecord) -> Value {
    let live = state.hub.live(&r.tenant, &r.id);
    let status = live.as_ref().map_or(r.status, |l| l.status());
    let calls = live.as_ref().map_or(r.calls, |l| l.calls());
    let mut v = json!({
        "id": r.id,
        "status": status.as_str(),
        "profile": r.profile,
        "created_ms": r.created_ms,
        "updated_ms": r.updated_ms,
        "calls": calls,
        "events": r.events,
    });
    if let Some(l) = &live {
        v["pending_approvals"] = json!(l.pending_approvals());
    }
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
