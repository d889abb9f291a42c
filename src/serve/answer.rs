//! The answer to a session's start, a program's (`start.rs`) or a
//! task's (`task.rs`): 201 `{id}` new, 200 `{id}` for the session an
//! Idempotency-Key names, 422 refused or a reused key, 500 a damaged
//! record, 503 the store unavailable; with `Prefer: wait=N`, the session's
//! view once it is over (`wait.rs` waits).

use super::error::ApiError;
use super::hub::Started;
use super::state::{record, view, AppState};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// The `Prefer: wait=N` of a start (`super::wait`). Errors: 400.
pub fn preferred_wait(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    super::wait::preferred_wait(headers)
        .map_err(|(message, hint)| ApiError::bad(message).hint(hint))
}

/// The answer to a start: [`started_response`], or, when the client asked
/// to wait `Some(N)` seconds and a session runs, the same status code with
/// the session's view (`GET /v1/sessions/{id}`'s body) once it is over or
/// N seconds passed, and `Preference-Applied: wait=N`. Errors: 503 from the
/// store when the session cannot be read back.
pub async fn answer_start(
    state: &AppState,
    tenant: &str,
    started: Started,
    wait: Option<u64>,
    message: &str,
    hint: &str,
) -> Result<Response, ApiError> {
    let (id, status) = match (&started, wait) {
        (Started::New(id), Some(_)) => (id.clone(), StatusCode::CREATED),
        (Started::Existing(id), Some(_)) => (id.clone(), StatusCode::OK),
        _ => return Ok(started_response(started, message, hint)),
    };
    let seconds = wait.unwrap_or(0);
    super::wait::wait_for_end(
        &state.hub,
        tenant,
        &id,
        std::time::Duration::from_secs(seconds),
    )
    .await;
    // Ended here: its record is known without reading it back.
    let known = state
        .hub
        .final_record(&id)
        .filter(|r| r.tenant == tenant && r.status.is_final());
    let body = match known {
        Some(rec) => view(state, &rec)?,
        None => view(state, &record(state, tenant, &id)?)?,
    };
    let mut response = (status, Json(body)).into_response();
    if let Ok(applied) = header::HeaderValue::from_str(&format!("wait={seconds}")) {
        response.headers_mut().insert(
            header::HeaderName::from_static("preference-applied"),
            applied,
        );
    }
    Ok(response)
}

/// The answer to a start: 201 `{id}` for a new session, 200 `{id}` for the
/// one an Idempotency-Key names, 422 `{error: {code: "refused", message,
/// hint}, output}` for a refusal, 500 `record_damaged` when the session
/// its Idempotency-Key names cannot be read, 503 `{error: {code:
/// "store_unavailable", …}}` when the store could not record it (nothing
/// ran; try again).
pub fn started_response(started: Started, message: &str, hint: &str) -> Response {
    match started {
        Started::New(id) => (StatusCode::CREATED, Json(json!({"id": id}))).into_response(),
        Started::Existing(id) => (StatusCode::OK, Json(json!({"id": id}))).into_response(),
        Started::KeyReused(id) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({
                "error": {
                    "code": "idempotency_key_reused",
                    "message": format!("this Idempotency-Key already started session {id} with a different request; nothing ran"),
                    "hint": "send the same request to get that session again, or use a new key for a new session",
                },
                "id": id,
            })),
        )
            .into_response(),
        Started::Refused(output) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({
                "error": {"code": "refused", "message": message, "hint": hint},
                "output": output,
            })),
        )
            .into_response(),
        Started::Damaged(why) => ApiError::damaged_record(format!(
            "this Idempotency-Key started a session whose record cannot be read: {why}; nothing ran"
        ))
        .into_response(),
        Started::Unavailable(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({
                "error": {
                    "code": "store_unavailable",
                    "message": why,
                    "hint": "nothing ran; send the request again once the store answers (see GET /healthz)",
                },
            })),
        )
            .into_response(),
    }
}
