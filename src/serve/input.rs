//! What a request carries, read for the API's routes: the ids in its path
//! and its JSON body. Each is read after the key is checked (a route takes
//! them as `Result`s, so axum's own text/plain rejection never answers
//! first), and a bad one is an [`ApiError`] like every other.
//!
//! ```text
//! path:  Result<Path<T>, PathRejection> ─▶ ids: T        | 404 not_found (not UTF-8)
//! body:  Content-Type, Result<Bytes, _> ─▶ application/json or …+json ─▶ fields: T
//!                                          | 415 unsupported_media_type | 400 | 413
//! ```
//!
//! The Content-Type rule is axum's `Json` extractor's: `application/json`
//! (any parameters, e.g. `; charset=utf-8`) or a `+json` type such as
//! `application/merge-patch+json`; another type, or none, is 415.

use super::error::{shown, ApiError};
use axum::body::Bytes;
use axum::extract::path::ErrorKind;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::Path;
use axum::http::{header, HeaderMap, StatusCode};

/// The ids of a route's path. Errors: 404 `not_found` for an id that is
/// not UTF-8 once percent-decoded (no session or approval has such an id),
/// 400 for any other problem with the path.
pub fn path_ids<T>(path: Result<Path<T>, PathRejection>) -> Result<T, ApiError> {
    let rejection = match path {
        Ok(Path(ids)) => return Ok(ids),
        Err(r) => r,
    };
    let key = match &rejection {
        PathRejection::FailedToDeserializePathParams(e) => match e.kind() {
            ErrorKind::InvalidUtf8InPathParam { key } => Some(key.clone()),
            _ => None,
        },
        _ => None,
    };
    match key {
        Some(key) => {
            let what = if key == "approval_id" {
                "approval request"
            } else {
                "session"
            };
            Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("no {what} with that id: the path's `{key}` is not UTF-8 once percent-decoded"),
            )
            .hint("use the id the API gave (a session's `id`, an approval's `approval_id`), percent-encoded as UTF-8"))
        }
        None => Err(ApiError::bad(format!(
            "the path cannot be read: {}",
            rejection.body_text()
        ))
        .hint("the routes are listed in /v1/openapi.json")),
    }
}

/// Whether `headers` say the body is JSON: `application/json` or
/// `application/…+json`, with any parameters.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or("").trim();
    let Some((kind, subtype)) = essence.split_once('/') else {
        return false;
    };
    kind.eq_ignore_ascii_case("application")
        && (subtype.eq_ignore_ascii_case("json")
            || subtype.len() > 5 && subtype[subtype.len() - 5..].eq_ignore_ascii_case("+json"))
}

/// The 415 for a body whose Content-Type is not JSON (`None`: none was sent).
fn unsupported(given: Option<&str>) -> ApiError {
    let message = match given {
        Some(t) => format!(
            "the body's Content-Type is {:?}; this route takes JSON",
            shown(t)
        ),
        None => "the request has no Content-Type; this route takes a JSON body".to_string(),
    };
    ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        message,
    )
    .hint("send the body as JSON with the header `Content-Type: application/json`")
}

/// Parses a JSON body into `T` (unknown fields refused). Errors: 415 when
/// the Content-Type is not JSON (or missing), then 413 past the size
/// limit, 400 when the body is not a valid request.
pub fn json_body<T: serde::de::DeserializeOwned>(
    headers: &HeaderMap,
    raw: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    if !is_json(headers) {
        let given = headers.get(header::CONTENT_TYPE).map(|v| {
            v.to_str().map_or_else(
                |_| String::from_utf8_lossy(v.as_bytes()).into_owned(),
                str::to_string,
            )
        });
        return Err(unsupported(given.as_deref()));
    }
    let bytes = raw.map_err(|e| {
        let status = e.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                status,
                "too_large",
                "the request body is larger than the server's limit",
            )
            .hint("max_body_bytes in serve.toml sets the limit")
        } else {
            ApiError::bad(format!("the body could not be read: {e}"))
        }
    })?;
    let invalid = |e: serde_json::Error| {
        ApiError::bad(format!("the body is not a valid request: {e}"))
            .hint("see /v1/openapi.json for the request's fields")
    };
    // serde_json reads 128 levels; a client-venue tool's outcome may nest
    // as deep as an executor's output (the stdio venue takes as much).
    let depth = depth_of(&bytes);
    if depth <= 128 {
        return serde_json::from_slice(&bytes).map_err(invalid);
    }
    // An outcome's `ok` is one level in.
    let most = crate::exec::MAX_OUTPUT_DEPTH + 1;
    if depth > most {
        return Err(
            ApiError::bad(format!("the body is nested more than {most} levels deep"))
                .hint("a tool's output may nest 10,000 levels, as lt takes it from an executor"),
        );
    }
    let value = crate::runtime::deep_json::parse_slice(&bytes, false).map_err(invalid)?;
    T::deserialize(value).map_err(invalid)
}

/// How deep JSON text nests: its brackets outside strings, counted
/// without parsing (and without recursion).
pub fn depth_of(json: &[u8]) -> usize {
    let (mut depth, mut most, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &c in json {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'[' | b'{') => {
                depth += 1;
                most = most.max(depth);
            }
            (false, _, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    most
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(content_type: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_str(content_type).expect("a header value"),
        );
        h
    }

    #[test]
    fn depth_counts_brackets_outside_strings() {
        assert_eq!(depth_of(b"1"), 0);
        assert_eq!(depth_of(br#"{"a": [[1], {"b": "[[[\"]]"}]}"#), 3);
        assert_eq!(depth_of(&[b'['; 500]), 500);
    }

    #[test]
    fn json_content_types_are_axums() {
        for yes in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON;charset=utf-8",
            "application/merge-patch+json",
        ] {
            assert!(is_json(&with(yes)), "{yes}");
        }
        for no in [
            "text/plain",
            "text/json",
            "application/x-www-form-urlencoded",
            "application/+json",
            "application",
            "",
        ] {
            assert!(!is_json(&with(no)), "{no}");
        }
        assert!(!is_json(&HeaderMap::new()));
    }
}
