//! `POST /v1/sessions`: a session started from a program (a task goes on
//! to `task.rs`). A known Idempotency-Key is looked up first and answered
//! with its session (or as a reused key) before anything that could refuse
//! a new start; then the shutdown, the body's profile and capabilities,
//! admission (`max_sessions`) and the program's size; the hub checks and
//! runs it. `Prefer: wait=N` answers once the session is over
//! (`answer.rs`, `wait.rs`).

use super::answer::{answer_start, preferred_wait};
use super::error::ApiError;
use super::hub::StartRequest;
use super::input::json_body;
use super::state::{tenant, AppState};
use crate::log::StoreError;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

/// Checks that `tenant` has a profile `name`. Errors: 400 naming them.
pub(crate) fn profile_of(state: &AppState, tenant: &str, name: &str) -> Result<(), ApiError> {
    let t = state
        .hub
        .tenants
        .get(tenant)
        .ok_or_else(|| ApiError::bad("the tenant is not configured"))?;
    t.config.profiles.get(name).map(|_| ()).ok_or_else(|| {
        let names: Vec<&str> = t.config.profiles.keys().map(String::as_str).collect();
        ApiError::bad(format!("no profile {name:?} for this tenant"))
            .hint(format!("the tenant's profiles: {}", names.join(", ")))
    })
}

/// Checks that each of `tools` (a request's `capabilities.tools`) is a
/// client-venue tool of `tenant`'s tools.toml. Errors: 400 naming the
/// first that is not (unknown, or run by the server) and, in the hint,
/// the names that may be listed.
fn capabilities_of(state: &AppState, tenant: &str, tools: &[String]) -> Result<(), ApiError> {
    let t = state
        .hub
        .tenants
        .get(tenant)
        .ok_or_else(|| ApiError::bad("the tenant is not configured"))?;
    let client = t.client_tools();
    let Some(bad) = tools.iter().find(|name| !client.contains(name)) else {
        return Ok(());
    };
    let shown = super::error::shown(bad);
    let declared = t
        .host
        .as_ref()
        .is_some_and(|h| h.registry().tool_traits().0.contains_key(bad));
    let message = if declared {
        format!("capabilities.tools names {shown:?}, which the server runs (its venue is not \"client\")")
    } else {
        format!(
            "capabilities.tools names {shown:?}, which the tenant's tools.toml does not declare"
        )
    };
    let hint = if client.is_empty() {
        "this tenant has no client-venue tool (venue = \"client\" in its tools.toml): leave `capabilities` out".to_string()
    } else {
        format!(
            "capabilities.tools lists the client-venue tools the client runs; this tenant's are: {}",
            client.join(", ")
        )
    };
    Err(ApiError::bad(message).hint(hint))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    program: Option<String>,
    task: Option<String>,
    profile: String,
    /// `None`: not given (a task takes none; a program runs no client tool).
    #[serde(default)]
    capabilities: Option<Capabilities>,
}

#[derive(Deserialize, Default, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct Capabilities {
    /// The client-venue tools the client runs.
    #[serde(default)]
    tools: Vec<String>,
}

/// What a start records as its request, and what a retry with the same
/// Idempotency-Key is compared with: the program, profile and
/// capabilities (absent ones as empty: kept as before they could be told
/// apart, so a key's request compares equal across that change), or the
/// task and profile.
fn request_body(req: &CreateBody) -> serde_json::Value {
    match (&req.program, &req.task) {
        (None, Some(task)) => super::task::request_body(task, &req.profile),
        (program, _) => {
            let capabilities = match &req.capabilities {
                Some(c) => json!(c),
                None => json!(Capabilities::default()),
            };
            json!({"program": program, "profile": req.profile, "capabilities": capabilities})
        }
    }
}

/// The `Idempotency-Key` header, if any. Errors: 400, not 1–255 visible
/// ASCII characters.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    match headers.get("idempotency-key") {
        None => Ok(None),
        Some(v) => match v.to_str() {
            Ok(s) if !s.is_empty() && s.len() <= 255 => Ok(Some(s.to_string())),
            _ => Err(ApiError::bad(
                "the Idempotency-Key header must be 1 to 255 visible ASCII characters",
            )),
        },
    }
}

/// The handler of `POST /v1/sessions`: 201 `{id}` (or, with `Prefer:
/// wait=N`, the session's view once it is over), 200 for a known
/// Idempotency-Key, 4xx/5xx as [`ApiError`] and [`started_response`](super::answer::started_response) say.
pub async fn create(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let tenant_name = tenant(&state, &headers)?.to_string();
    let req: CreateBody = json_body(&headers, raw)?;
    let wait = preferred_wait(&headers)?;
    let idempotency_key = idempotency_key(&headers)?;
    match (&req.program, &req.task) {
        (Some(_), Some(_)) => return Err(ApiError::bad("give `program` or `task`, not both")),
        (None, None) => return Err(ApiError::bad("the body needs a `program` (or a `task`)")),
        _ => {}
    }
    // A retry of a start its key already made is answered with that
    // session (or as a reused key) before anything that could refuse a new
    // one: a full server, a shutdown, the program's check.
    if let Some(key) = &idempotency_key {
        let found = match state.hub.store.session_by_key(&tenant_name, key) {
            Ok(found) => found,
            Err(StoreError::Damaged(why)) => {
                return Err(ApiError::damaged_record(format!(
                    "this Idempotency-Key started a session whose record cannot be read: {why}; nothing ran"
                )))
            }
            Err(e) => return Err(ApiError::store(e)),
        };
        if let Some(rec) = found {
            let started = super::hub::existing(rec, &request_body(&req));
            return answer_start(&state, &tenant_name, started, wait, "", "").await;
        }
    }
    if !state.hub.accepting() {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "the server is shutting down and takes no new session",
        )
        .hint("retry against another worker, or after the restart"));
    }
    profile_of(&state, &tenant_name, &req.profile)?;
    if let (Some(_), Some(c)) = (&req.program, &req.capabilities) {
        capabilities_of(&state, &tenant_name, &c.tools)?;
    }
    // Held until the start is answered: concurrent starts cannot both take
    // the last place.
    let Some(admission) = state.hub.admit() else {
        let mut r = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            "the server runs as many sessions as it may (max_sessions)",
        )
        .hint("retry after a few seconds")
        .into_response();
        r.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("2"));
        return Ok(r);
    };
    let body = request_body(&req);
    let program = match (req.program, req.task) {
        (None, Some(task)) => {
            let task = super::task::TaskRequest {
                task,
                profile: req.profile,
                idempotency_key,
            };
            let capabilities = req.capabilities.as_ref().map(|c| &c.tools[..]);
            return super::task::create(&state, &tenant_name, task, capabilities, wait, admission)
                .await;
        }
        (Some(p), _) => p,
        (None, None) => return Err(ApiError::bad("the body needs a `program` (or a `task`)")),
    };
    if program.len() > crate::frontend::MAX_SOURCE_BYTES {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!(
                "the program is {} bytes; a program may have at most {}",
                program.len(),
                crate::frontend::MAX_SOURCE_BYTES
            ),
        ));
    }
    let request = StartRequest {
        body,
        program,
        profile: req.profile,
        client_tools: req.capabilities.unwrap_or_default().tools,
        idempotency_key,
    };
    let started = state
        .hub
        .start(&tenant_name, request)
        .await
        .map_err(ApiError::store)?;
    // Started (in the live map) or not: its place is the live map's now.
    drop(admission);
    answer_start(
        &state,
        &tenant_name,
        started,
        wait,
        "the program was refused before it ran; `output` says why",
        "fix what `output` names (the diagnostics of a program the checker refused, or a tool no executor runs: a client-venue tool the request did not name in `capabilities`), and send it again",
    )
    .await
}
