//! The HTTP API (`docs/api.md`, `/v1/openapi.json`): the router and the
//! routes of a session once it exists (status, list, cancel, outcomes,
//! approvals, log, replay), `/v1/check`, `/healthz`, `/metrics`. Every route
//! but `/healthz` needs `Authorization: Bearer KEY`; a session of another
//! tenant is answered 404, as if it did not exist. Starts are `start.rs`'s
//! (and `task.rs`'s), the event stream `sse.rs`'s, the error answers
//! `error.rs`'s.

pub use super::error::ApiError;
use super::input::{json_body, path_ids};
use super::listing::Filters;
use super::live::Refusal;
use super::state::AppState;
use super::state::{self, record, tenant, view, Answered, NotAnswered};
use super::store::SessionRecord;
use crate::control::approver::ApprovalAnswer;
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

type Shared = State<Arc<AppState>>;

/// The router, with a body limit of `max_body` bytes.
pub fn router(state: Arc<AppState>, max_body: usize, body_timeout: Duration) -> Router {
    let console = super::console::router(Arc::clone(&state));
    Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/v1/openapi.json", get(openapi))
        .route("/v1/check", post(check))
        .route("/v1/sessions", post(super::start::create).get(list))
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
        super::start::profile_of(&state, &tenant_name, p)?;
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

async fn show(
    State(state): Shared,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let t = tenant(&state, &headers)?;
    let id = path_ids(path)?;
    let r = record(&state, t, &id)?;
    Ok(Json(view(&state, &r)?).into_response())
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
    let sessions = rows
        .iter()
        .map(|r| view(&state, r))
        .collect::<Result<Vec<Value>, ApiError>>()?;
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
    let answer = ApprovalAnswer {
        granted,
        by: "api".into(),
        reason,
    };
    let answered = state::answer(&state, &r, &approval_id, answer)
        .await
        .map_err(|why| match why {
            NotAnswered::Twice => answered_twice(&approval_id),
            NotAnswered::NotRunning => ApiError::over(&id, r.status.as_str(), ""),
            NotAnswered::Store(e) => ApiError::store(e),
            NotAnswered::Refused(Refusal::Unknown(m)) => ApiError::new(StatusCode::NOT_FOUND, "not_found", m)
                .hint("GET the session: a running session lists the requests that wait in pending_approvals"),
            NotAnswered::Refused(Refusal::Repeated(m) | Refusal::Gone(m)) => {
                ApiError::conflict(m).hint(ANSWERED_ONCE)
            }
        })?;
    if answered == Answered::Forwarded {
        return Ok((
            StatusCode::ACCEPTED,
            Json(json!({"id": id, "forwarded": true, "kind": "approval"})),
        )
            .into_response());
    }
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"approval_id": approval_id, "decision": req.decision})),
    )
        .into_response())
}

/// The hint of a second answer to an approval request.
const ANSWERED_ONCE: &str = "nothing to do: a request is answered once, by the first answer";

/// 409 for approval request `approval_id`, whose answer the log holds.
fn answered_twice(approval_id: &str) -> ApiError {
    ApiError::conflict(format!(
        "approval request {:?} was already answered",
        super::error::shown(approval_id)
    ))
    .hint(ANSWERED_ONCE)
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
