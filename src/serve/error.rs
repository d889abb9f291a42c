//! The API's error answers: `{"error": {"code", "message", "hint"}}` (with
//! `"session"` where the code needs it named) under a status that says what
//! kind of failure it was (400 bad input, 401 no key, 404 no such session,
//! 409 a conflict with the session's state, 413 too large, 415 not JSON,
//! 422 refused, 500 a damaged record, 503 shutting down or the store down).
//! Every route answers its errors so; the event stream sends the same body
//! in a `failure` event.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// An error answer.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    hint: Option<String>,
    /// The session the error is about, where the code needs it named.
    session: Option<String>,
}

impl ApiError {
    /// An error with `status`, `code` and `message`.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            hint: None,
            session: None,
        }
    }

    /// The same error with a hint.
    pub fn hint(mut self, hint: impl Into<String>) -> ApiError {
        self.hint = Some(hint.into());
        self
    }

    /// A 400 with `message`.
    pub fn bad(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    pub(crate) fn not_found(id: &str) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no session {:?}", shown(id)),
        )
        .hint("use an id this key's tenant started (GET /v1/sessions lists them); another tenant's session is not found either")
    }

    /// A 409 for session `id`, which is over (`status`).
    pub(crate) fn over(id: &str, status: &str, what: &str) -> ApiError {
        ApiError::conflict(format!(
            "session {id} is not running (status {status}){what}"
        ))
        .hint(format!("GET /v1/sessions/{id} shows how it ended"))
    }

    pub(crate) fn conflict(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// A 500 `record_damaged`: session `id`'s record cannot be read
    /// (`why`); not retryable.
    pub(crate) fn damaged(id: &str, why: &str) -> ApiError {
        let mut e =
            ApiError::damaged_record(format!("the record of session {id} cannot be read: {why}"));
        e.session = Some(id.to_string());
        e
    }

    /// A 500 `record_damaged` whose `message` names the record.
    pub(crate) fn damaged_record(message: String) -> ApiError {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "record_damaged",
            message,
        )
        .hint("the store was changed past lt serve; a retry gets the same answer: repair or delete the session's row (the server's stderr names it)")
    }

    /// A 503: the store (or a session's thread) failed.
    pub fn store(e: impl std::fmt::Display) -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store",
            format!("the store failed: {e}"),
        )
    }
}

impl ApiError {
    /// The JSON body: `{"error": {"code", "message", "hint", "session"?}}`.
    pub fn body(&self) -> serde_json::Value {
        let mut body =
            json!({"error": {"code": self.code, "message": self.message, "hint": self.hint}});
        if let Some(id) = &self.session {
            body["error"]["session"] = json!(id);
        }
        body
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = self.body();
        (self.status, Json(body)).into_response()
    }
}

/// The most characters of a client's text an error message repeats.
const SHOWN: usize = 64;

/// `text` as an error message repeats it: at most `SHOWN` characters,
/// then `…`.
pub fn shown(text: &str) -> String {
    match text.char_indices().nth(SHOWN) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}
