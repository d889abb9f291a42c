//! A request's body must arrive within the time its headers have
//! (`header_timeout_ms`). hyper bounds only the headers, so a client that
//! sends `Content-Length: N` and then fewer bytes would hold its
//! connection (and a task) for as long as it likes. The body is read here,
//! whole and at most `max_body_bytes` long, under that deadline, and handed
//! on to the routes read: 408 past the deadline, 413 past the limit.
//!
//! ```text
//! request ─▶ within(deadline, limit): to_bytes(body, limit) under timeout
//!            ─▶ Ok: the route, with the body read   Err: 408 / 413 / 400
//! ```

use super::error::ApiError;
use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::time::Duration;

/// Reads `req`'s body within `deadline` and `limit` bytes, then runs the
/// route. Errors (answered here): 408 `body_timeout`, 413 `too_large`,
/// 400 when the body cannot be read (the client closed the connection).
pub async fn within(deadline: Duration, limit: usize, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    match tokio::time::timeout(deadline, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => next.run(Request::from_parts(parts, Body::from(bytes))).await,
        Ok(Err(e)) if is_too_large(&e) => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            "the request body is larger than the server's limit",
        )
        .hint("max_body_bytes in serve.toml sets the limit")
        .into_response(),
        Ok(Err(e)) => ApiError::bad(format!("the body could not be read: {e}")).into_response(),
        Err(_) => ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            format!(
                "the request body did not arrive within {} ms",
                deadline.as_millis()
            ),
        )
        .hint("send the whole body at once, as its Content-Length says; header_timeout_ms in serve.toml sets the deadline")
        .into_response(),
    }
}

/// Whether reading stopped at the length limit (`http-body-util`'s
/// `LengthLimitError`, seen through axum's error).
fn is_too_large(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if s.to_string().contains("length limit exceeded") {
            return true;
        }
        source = s.source();
    }
    false
}
