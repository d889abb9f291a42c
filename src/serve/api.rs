//! The HTTP API (`docs/api.md`, `/v1/openapi.json`): routes, request
//! bodies, errors. Every route but `/healthz` needs `Authorization: Bearer
//! KEY`; a session of another tenant is answered 404, as if it did not
//! exist. Errors are `{"error": {"code", "message", "hint"}}` with a status
//! that says what kind of failure it was (400 bad input, 401 no key, 404 no
//! such session, 409 a conflict with the session's state, 413 too large,
//! 422 a program the checker refused, 503 shutting down or the store down).

use super::hub::{Hub, StartRequest, Started};
use super::input::{json_body, path_ids};
use super::listing::Filters;
use super::store::{SessionRecord, SessionStatus};
use crate::control::approver::ApprovalAnswer;
use crate::log::StoreError;
use crate::source::SourceFile;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// What the handlers share.
pub struct AppState {
    /// The sessions.
    pub hub: Arc<Hub>,
    /// Who holds which key.
    pub keys: super::auth::Keys,
}

type Shared = State<Arc<AppState>>;

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

    fn not_found(id: &str) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no session {:?}", super::input::shown(id)),
        )
        .hint("use an id this key's tenant started (GET /v1/sessions lists them); another tenant's session is not found either")
    }

    /// A 409 for session `id`, which is over (`status`).
    fn over(id: &str, status: &str, what: &str) -> ApiError {
        ApiError::conflict(format!(
            "session {id} is not running (status {status}){what}"
        ))
        .hint(format!("GET /v1/sessions/{id} shows how it ended"))
    }

    fn conflict(message: impl Into<String>) -> ApiError {
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

/// The router, with a body limit of `max_body` bytes.
pub fn router(state: Arc<AppState>, max_body: usize, body_timeout: Duration) -> Router {
    let console = super::console::router(Arc::clone(&state));
    Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/v1/openapi.json", get(openapi))
        .route("/v1/check", post(check))
        .route("/v1/sessions", post(create).get(list))
        .route("/v1/sessions/{id}", get(show))
        .route("/v1/sessions/{id}/cancel", post(cancel))
        .route("/v1/sessions/{id}/events", get(super::sse::events))
        .route("/v1/sessions/{id}/outcomes", post(outcome))
        .route("/v1/sessions/{id}/approvals/{approval_id}", post(approve))
        .route("/v1/sessions/{id}/log", get(log))
        .route("/v1/sessions/{id}/replay", post(replay))
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "no_route", "no such route")
                .hint("the routes are listed in /v1/openapi.json")
        })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "this route does not take that method",
            )
            .hint("the routes and their methods are listed in /v1/openapi.json")
        })
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(state)
        .merge(console)
        // Every route's body (the console's forms too) within the deadline.
        .layer(axum::middleware::from_fn(move |req, next| {
            super::body::within(body_timeout, max_body, req, next)
        }))
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

async fn healthz(State(state): Shared) -> Response {
    // The store's kind and name (never its password), and whether it answers.
    let mut store = state.hub.store.describe();
    if !state.hub.accepting() {
        // SIGTERM's grace: a load balancer stops sending new work here
        // while the running sessions finish.
        let body = json!({
            "ok": false,
            "shutting_down": true,
            "store": store,
            "error": {
                "code": "shutting_down",
                "message": "the server is shutting down: it takes no new session, and its running sessions finish within shutdown_grace_ms",
                "hint": "send new sessions to another worker; this one answers the running sessions' outcomes and approvals until it stops",
            },
        });
        return (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response();
    }
    match state.hub.store.health() {
        Ok(()) => {
            store["reachable"] = json!(true);
            Json(json!({"ok": true, "store": store})).into_response()
        }
        Err(e) => {
            store["reachable"] = json!(false);
            store["error"] = json!(e.to_string());
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({"ok": false, "store": store})),
            )
                .into_response()
        }
    }
}

async fn metrics(State(state): Shared, headers: HeaderMap) -> Result<Response, ApiError> {
    let t = tenant(&state, &headers)?;
    Ok((
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.hub.metrics.render(t),
    )
        .into_response())
}

async fn openapi(State(state): Shared, headers: HeaderMap) -> Result<Response, ApiError> {
    tenant(&state, &headers)?;
    Ok(([(header::CONTENT_TYPE, "application/json")], super::OPENAPI).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckBody {
    program: String,
    profile: Option<String>,
}

async fn check(
    State(state): Shared,
    headers: HeaderMap,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let tenant_name = tenant(&state, &headers)?.to_string();
    let req: CheckBody = json_body(&headers, raw)?;
    let t = state
        .hub
        .tenants
        .get(&tenant_name)
        .ok_or_else(|| ApiError::bad("the tenant is not configured"))?;
    if let Some(p) = &req.profile {
        profile_of(&state, &tenant_name, p)?;
    }
    let _ = t;
    let (reply, answer) = tokio::sync::oneshot::channel();
    let st = Arc::clone(&state);
    state
        .hub
        .spawn(move || {
            let Some(t) = st.hub.tenants.get(&tenant_name) else {
                return;
            };
            let profile = req.profile.as_deref().and_then(|p| t.config.profile(p));
            let file = SourceFile::new(super::check::PROGRAM_NAME, req.program);
            let _ = reply.send(super::check::report(&t.config, profile.as_ref(), &file));
        })
        .map_err(|e| ApiError::store(format!("cannot start the checker's thread: {e}")))?;
    let report = answer
        .await
        .map_err(|_| ApiError::store("the checker's thread ended without an answer"))?;
    Ok(Json(report).into_response())
}

/// Checks that `tenant` has a profile `name`. Errors: 400 naming them.
fn profile_of(state: &AppState, tenant: &str, name: &str) -> Result<(), ApiError> {
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
    let shown = super::input::shown(bad);
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

async fn create(
    State(state): Shared,
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
        Some(rec) => view(state, &rec),
        None => view(state, &record(state, tenant, &id)?),
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
                let field = if super::task::is_task(r) {
                    "answer"
                } else {
                    "value"
                };
                v["value"] = out.get(field).cloned().unwrap_or(Value::Null);
            }
            v["output"] = out.clone();
        }
    }
    v
}

async fn show(
    State(state): Shared,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let t = tenant(&state, &headers)?;
    let id = path_ids(path)?;
    let r = record(&state, t, &id)?;
    Ok(Json(view(&state, &r)).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListParams {
    status: Option<String>,
    profile: Option<String>,
    tool: Option<String>,
    since: Option<String>,
    until: Option<String>,
    limit: Option<usize>,
    cursor: Option<String>,
}

async fn list(
    State(state): Shared,
    headers: HeaderMap,
    params: Result<Query<ListParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let t = tenant(&state, &headers)?;
    let Query(p) = params.map_err(|e| ApiError::bad(format!("bad query: {e}")))?;
    let limit = p.limit.unwrap_or(50);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::bad("limit must be between 1 and 1000"));
    }
    let filters = Filters {
        status: p.status,
        profile: p.profile,
        tool: p.tool,
        since: p.since,
        until: p.until,
        cursor: p.cursor,
    };
    let query = filters.query(t, limit).map_err(ApiError::bad)?;
    let rows = state
        .hub
        .store
        .list_sessions(&query)
        .map_err(ApiError::store)?;
    let next = (rows.len() == limit)
        .then(|| rows.last().map(|r| format!("{}.{}", r.created_ms, r.id)))
        .flatten();
    let sessions: Vec<Value> = rows.iter().map(|r| view(&state, r)).collect();
    Ok(Json(json!({"sessions": sessions, "next_cursor": next})).into_response())
}

/// Forwards `kind`/`body` to the worker running session `r` (many
/// workers on one database): `202 {"forwarded": true}`. `None`: the
/// session is over, or the store has one server (the caller answers 409).
fn forward(
    state: &AppState,
    r: &SessionRecord,
    kind: &str,
    body: Value,
) -> Result<Option<Response>, ApiError> {
    if r.status.is_final() {
        return Ok(None);
    }
    match state.hub.forward(&r.id, kind, &body) {
        Ok(true) => Ok(Some(
            (
                StatusCode::ACCEPTED,
                Json(json!({"id": r.id, "forwarded": true, "kind": kind})),
            )
                .into_response(),
        )),
        Ok(false) => Ok(None),
        Err(e) => Err(ApiError::store(e)),
    }
}

async fn cancel(
    State(state): Shared,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let t = tenant(&state, &headers)?;
    let id = path_ids(path)?;
    let r = record(&state, t, &id)?;
    if state.hub.cancel(t, &id) {
        return Ok((
            StatusCode::ACCEPTED,
            Json(json!({"id": id, "cancelling": true})),
        )
            .into_response());
    }
    if let Some(forwarded) = forward(&state, &r, "cancel", json!({}))? {
        return Ok(forwarded);
    }
    Err(ApiError::over(&id, r.status.as_str(), ""))
}

async fn outcome(
    State(state): Shared,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let t = tenant(&state, &headers)?;
    let id = path_ids(path)?;
    let r = record(&state, t, &id)?;
    let mut v: BTreeMap<String, Value> = json_body(&headers, raw)?;
    if let Some(kind) = v.remove("type") {
        if kind != json!("tool_result") {
            return Err(ApiError::bad("`type` may only be \"tool_result\""));
        }
    }
    let call_id = match v.remove("call_id") {
        Some(Value::String(s)) => s,
        _ => return Err(ApiError::bad("the body needs `call_id`, a string")),
    };
    let mut line = match (v.remove("ok"), v.remove("error")) {
        (Some(ok), None) => json!({"type": "tool_result", "call_id": call_id, "ok": ok}),
        (None, Some(Value::String(e))) => {
            json!({"type": "tool_result", "call_id": call_id, "error": e})
        }
        _ => {
            return Err(ApiError::bad(
                "the body needs exactly one of `ok` (the tool's output) and `error` (a string)",
            ))
        }
    };
    if let (Some(kind), Value::Object(fields)) = (v.remove("kind"), &mut line) {
        fields.insert("kind".into(), kind);
        if let Some(problem) = crate::control::client::kind_problem(fields) {
            return Err(ApiError::bad(problem)
                .hint("e.g. {\"call_id\": \"n3\", \"error\": \"no answer in 5 s\", \"kind\": \"timed_out\"}"));
        }
    }
    if let Some(extra) = v.keys().next() {
        return Err(ApiError::bad(format!("unknown field `{extra}`")).hint(
            "an outcome has `call_id`, `ok` or `error`, and with `error` an optional `kind`",
        ));
    }
    let Some(live) = state.hub.live(t, &id) else {
        let body = json!({"call_id": call_id, "line": line.to_string()});
        if let Some(forwarded) = forward(&state, &r, "outcome", body)? {
            return Ok(forwarded);
        }
        return Err(ApiError::over(
            &id,
            r.status.as_str(),
            "; its calls take no outcome",
        ));
    };
    match live.report(&call_id, &line.to_string()) {
        Ok(()) => Ok((
            StatusCode::ACCEPTED,
            Json(json!({"call_id": call_id, "accepted": true})),
        )
            .into_response()),
        Err(refusal) => {
            let (msg, hint) = match refusal {
                super::live::Refusal::Unknown(m) => (m, "post the call_id of a tool_call event of this session's stream (GET …/events) that has no outcome yet"),
                super::live::Refusal::Repeated(m) => (m, "nothing to do: the first outcome posted for a call is the one the session took"),
                super::live::Refusal::Gone(m) => (m, "GET the session to see whether it is still running"),
            };
            eprintln!("lt serve: session {id}: outcome refused: {msg}");
            Err(ApiError::conflict(msg).hint(hint))
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApproveBody {
    decision: String,
    reason: Option<String>,
}

async fn approve(
    State(state): Shared,
    headers: HeaderMap,
    path: Result<Path<(String, String)>, PathRejection>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let t = tenant(&state, &headers)?;
    let (id, approval_id) = path_ids(path)?;
    let r = record(&state, t, &id)?;
    let req: ApproveBody = json_body(&headers, raw)?;
    let granted = match req.decision.as_str() {
        "allow" => true,
        "deny" => false,
        other => {
            return Err(ApiError::bad(format!(
                "decision {other:?} is not \"allow\" or \"deny\""
            )))
        }
    };
    let reason = req.reason.unwrap_or_else(|| {
        format!(
            "{} through the API",
            if granted { "granted" } else { "refused" }
        )
    });
    let Some(live) = state.hub.live(t, &id) else {
        let body = json!({"approval_id": approval_id, "granted": granted, "reason": reason});
        if let Some(forwarded) = forward(&state, &r, "approval", body)? {
            return Ok(forwarded);
        }
        return Err(ApiError::over(&id, r.status.as_str(), ""));
    };
    live.answer(
        &approval_id,
        ApprovalAnswer {
            granted,
            by: "api".into(),
            reason,
        },
    )
    .map_err(|refusal| match refusal {
        super::live::Refusal::Unknown(m) => ApiError::new(StatusCode::NOT_FOUND, "not_found", m)
            .hint(
            "GET the session: a running session lists the requests that wait in pending_approvals",
        ),
        super::live::Refusal::Repeated(m) | super::live::Refusal::Gone(m) => ApiError::conflict(m)
            .hint("nothing to do: a request is answered once, by the first answer"),
    })?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"approval_id": approval_id, "decision": req.decision})),
    )
        .into_response())
}

async fn log(
    State(state): Shared,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let t = tenant(&state, &headers)?;
    let id = path_ids(path)?;
    record(&state, t, &id)?;
    let lines = state
        .hub
        .store
        .events_after(&id, None)
        .map_err(ApiError::store)?;
    let mut text = String::new();
    for l in lines {
        text.push_str(&l);
        text.push('\n');
    }
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], text).into_response())
}

async fn replay(
    State(state): Shared,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let t = tenant(&state, &headers)?;
    let id = path_ids(path)?;
    let rec = record(&state, t, &id)?;
    if !rec.status.is_final() {
        return Err(ApiError::conflict(format!(
            "session {id} has not ended (status {}): a replay checks a whole log",
            rec.status.as_str()
        ))
        .hint("replay it once it has ended; GET …/log reads the log so far"));
    }
    let (reply, answer) = tokio::sync::oneshot::channel();
    let st = Arc::clone(&state);
    state
        .hub
        .spawn(move || {
            let _ = reply.send(super::replay::replay_session(&*st.hub.store, &id));
        })
        .map_err(|e| ApiError::store(format!("cannot start the replay's thread: {e}")))?;
    let v = answer
        .await
        .map_err(|_| ApiError::store("the replay's thread ended without an answer"))?;
    Ok(Json(v).into_response())
}

#[cfg(test)]
mod tests {
    /// Every route the router serves is in the OpenAPI document, and every
    /// path of the document is served.
    #[test]
    fn the_openapi_document_lists_exactly_the_routes() {
        let doc: serde_json::Value =
            serde_json::from_str(super::super::OPENAPI).expect("openapi.json is JSON");
        let documented: std::collections::BTreeSet<String> = doc["paths"]
            .as_object()
            .expect("paths")
            .keys()
            .cloned()
            .collect();
        let source = include_str!("api.rs");
        let served: std::collections::BTreeSet<String> = source
            .split(".route(\"")
            .skip(1)
            .filter_map(|s| s.split('"').next())
            .map(str::to_string)
            .collect();
        assert!(served.len() >= 12, "{served:?}");
        assert_eq!(served, documented);
    }
}
