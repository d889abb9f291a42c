//! `GET /sessions/{id}`: one session — its program (highlighted) or task,
//! the waterfall of its log (`timeline.rs`), its value or failure, the
//! log's verification, the approvals it waits for, and a Replay button.
//! `POST /sessions/{id}/replay` replays the stored log on the server (the
//! API's replay, `serve::replay`) and shows whether it matches. `POST
//! /sessions/{id}/approve` answers an approval request as the API's route
//! does (`by: "api"` in the log), forwarding it to the worker that runs
//! the session when it is another.

use super::html::Who;
use super::html::{esc, highlight, layout, pct, when};
use super::list::{badge, session_approvals};
use super::{error_page, not_found, page, redirect, timeline, unavailable, Console, Shared};
use crate::control::approver::ApprovalAnswer;
use crate::serve::live::Refusal;
use crate::serve::state::{self, summary, NotAnswered};
use crate::serve::store::SessionRecord;
use axum::extract::rejection::{FormRejection, PathRejection};
use axum::extract::{Form, Path};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

/// The session `id` of `who`'s tenant, or the page to answer instead.
#[allow(clippy::result_large_err)] // the page to answer
fn record(state: &Console, who: &Who, id: &str) -> Result<SessionRecord, Response> {
    match state.app.hub.store.session(&who.tenant, id) {
        Ok(Some(r)) => Ok(r),
        Ok(None) => Err(not_found(id, who)),
        Err(e) => Err(unavailable(e, who)),
    }
}

/// The page of session `r`, with a replay's verdict if one was asked.
fn render(state: &Console, who: &Who, r: &SessionRecord, replayed: Option<&Value>) -> Response {
    let v = summary(&state.app, r);
    let status = v["status"].as_str().unwrap_or("");
    let lines = match state.app.hub.store.events_after(&r.id, None) {
        Ok(l) => l,
        Err(e) => return unavailable(e, who),
    };
    let mut text = lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    let report = crate::log::verify(&text);
    let verified = if lines.is_empty() {
        "<span class=\"badge running\" id=\"verified\" data-ok=\"empty\">no event yet</span>"
            .to_string()
    } else if report.problem.is_none() {
        format!(
            "<span class=\"badge ok\" id=\"verified\" data-ok=\"true\">verified</span> {} events, hash chain intact; last hash <code>{}</code>",
            report.events,
            esc(report.last_hash.as_deref().unwrap_or(""))
        )
    } else {
        format!(
            "<span class=\"badge failed\" id=\"verified\" data-ok=\"false\">does not verify</span> {}",
            esc(&report.to_string())
        )
    };
    let idp = pct(&r.id);
    let mut body = format!(
        "<h1>Session <code id=\"session-id\">{id}</code></h1><div id=\"live\">\
         <dl class=\"facts\"><dt>status</dt><dd id=\"status\" data-status=\"{st}\">{badge}</dd>\
         <dt>profile</dt><dd>{profile}</dd><dt>created</dt><dd>{created}</dd><dt>updated</dt><dd>{updated}</dd>\
         <dt>calls</dt><dd>{calls}</dd><dt>log</dt><dd>{verified} · <code>GET /v1/sessions/{id}/log</code> for the raw log</dd></dl>",
        id = esc(&r.id),
        st = esc(status),
        badge = badge(status),
        profile = esc(&r.profile),
        created = when(r.created_ms),
        updated = when(r.updated_ms),
        calls = v["calls"],
    );
    body.push_str(&session_approvals(state, who, r));
    if let Some(val) = v.get("value") {
        let shown = shown_json(val);
        body.push_str(&format!(
            "<h2>Value</h2><pre id=\"value\">{}</pre>",
            esc(&shown)
        ));
    } else if let Some(out) = v.get("output") {
        let shown = shown_json(out);
        body.push_str(&format!(
            "<h2>Output</h2><pre id=\"output\">{}</pre>",
            esc(&shown)
        ));
    }
    body.push_str("<h2>Timeline</h2>");
    body.push_str(&timeline::render(&timeline::build(&lines)));
    body.push_str("</div>");
    if let Some(p) = r.request["program"].as_str() {
        body.push_str(&format!(
            "<h2>Program</h2><p><a id=\"show-ir\" href=\"/sessions/{idp}/ir\">Show its IR</a></p><pre class=\"program\" id=\"program\">{}</pre>",
            highlight(p)
        ));
    } else if let Some(t) = r.request["task"].as_str() {
        body.push_str(&format!("<h2>Task</h2><pre id=\"task\">{}</pre><p class=\"note\">The model's programs are in the timeline's model requests.</p>", esc(t)));
    }
    body.push_str(&format!(
        "<h2>Replay</h2><form method=\"post\" action=\"/sessions/{idp}/replay\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\" id=\"replay\">Replay on the server</button></form>",
        esc(&who.csrf)
    ));
    if let Some(rv) = replayed {
        let ok = rv["ok"] == Value::Bool(true);
        let shown = shown_json(rv);
        body.push_str(&format!(
            "<div id=\"replay-result\" data-ok=\"{ok}\"><p>{}</p><pre>{}</pre></div>",
            if ok {
                "<span class=\"badge ok\">matches</span> the replay made exactly the recorded calls and reached the recorded value."
            } else {
                "<span class=\"badge failed\">does not match</span> see why below."
            },
            esc(&shown)
        ));
    }
    let live = replayed.is_none() && !r.status.is_final();
    page(
        StatusCode::OK,
        layout(&format!("Session {}", r.id), Some(who), live, &body),
    )
}

/// `GET /sessions/{id}`.
pub async fn show(
    state: Shared,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
) -> Response {
    let who = match state.viewer(&headers) {
        Ok(w) => w,
        Err(r) => return r,
    };
    let id = super::path_id(path);
    match record(&state, &who, &id) {
        Ok(r) => render(&state, &who, &r, None),
        Err(page) => page,
    }
}

#[derive(Deserialize)]
pub struct ReplayForm {
    csrf: Option<String>,
}

/// `POST /sessions/{id}/replay`.
pub async fn replay(
    state: Shared,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
    form: Result<Form<ReplayForm>, FormRejection>,
) -> Response {
    let csrf = form.ok().and_then(|Form(f)| f.csrf);
    let who = match state.check(&headers, csrf.as_deref()) {
        Ok(w) => w,
        Err(r) => return r,
    };
    let id = super::path_id(path);
    let r = match record(&state, &who, &id) {
        Ok(r) => r,
        Err(page) => return page,
    };
    let (reply, answer) = tokio::sync::oneshot::channel();
    let st = Arc::clone(&state);
    let sid = r.id.clone();
    if let Err(e) = state.app.hub.spawn(move || {
        let _ = reply.send(crate::serve::replay::replay_session(
            &*st.app.hub.store,
            &sid,
        ));
    }) {
        return unavailable(format!("cannot start the replay's thread: {e}"), &who);
    }
    match answer.await {
        Ok(v) => render(&state, &who, &r, Some(&v)),
        Err(_) => unavailable("the replay's thread ended without an answer", &who),
    }
}

#[derive(Deserialize)]
pub struct ApproveForm {
    csrf: Option<String>,
    approval_id: Option<String>,
    decision: Option<String>,
    back: Option<String>,
}

/// `POST /sessions/{id}/approve`.
pub async fn approve(
    state: Shared,
    headers: HeaderMap,
    path: Result<Path<String>, PathRejection>,
    form: Result<Form<ApproveForm>, FormRejection>,
) -> Response {
    let f = form.ok().map(|Form(f)| f);
    let who = match state.check(&headers, f.as_ref().and_then(|f| f.csrf.as_deref())) {
        Ok(w) => w,
        Err(r) => return r,
    };
    let id = super::path_id(path);
    let r = match record(&state, &who, &id) {
        Ok(r) => r,
        Err(page) => return page,
    };
    let Some(f) = f else {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Bad form",
            "The form could not be read.",
            Some(&who),
        );
    };
    let granted = match f.decision.as_deref() {
        Some("allow") => true,
        Some("deny") => false,
        _ => {
            return error_page(
                StatusCode::BAD_REQUEST,
                "Bad form",
                "The decision must be allow or deny.",
                Some(&who),
            )
        }
    };
    let approval_id = f.approval_id.unwrap_or_default();
    let reason = format!(
        "{} in the console",
        if granted { "granted" } else { "refused" }
    );
    let back = match f.back.as_deref() {
        Some(b) if b.starts_with('/') && !b.starts_with("//") && !b.contains('\\') => b.to_string(),
        _ => format!("/sessions/{}", pct(&id)),
    };
    let answer = ApprovalAnswer {
        granted,
        by: "api".into(),
        reason,
    };
    let (status, m) = match state::answer(&state.app, &r, &approval_id, answer).await {
        // Answered here, or sent to the worker that runs the session (whose
        // page shows the request until that worker has taken it).
        Ok(_) => return redirect(&back),
        Err(NotAnswered::Store(e)) => return unavailable(e, &who),
        Err(NotAnswered::NotRunning) => {
            let m = format!(
                "Session {id} is not running (status {}).",
                r.status.as_str()
            );
            return error_page(StatusCode::CONFLICT, "Not running", &m, Some(&who));
        }
        Err(NotAnswered::Twice) => (
            StatusCode::CONFLICT,
            format!("Approval request {approval_id} was already answered."),
        ),
        Err(NotAnswered::Refused(Refusal::Unknown(m))) => (StatusCode::NOT_FOUND, m),
        Err(NotAnswered::Refused(Refusal::Repeated(m) | Refusal::Gone(m))) => {
            (StatusCode::CONFLICT, m)
        }
    };
    error_page(status, "Not answered", &m, Some(&who))
}

/// The most levels a value shown on a page is indented for.
const INDENTED_LEVELS: usize = 32;

/// A JSON value as a page shows it: indented, unless it nests deeper than
/// [`INDENTED_LEVELS`]; then compact. Each level indents every line inside
/// it, so indented text grows with the square of the depth (20 kB nested
/// 10,000 deep, as deep as lt takes a tool's output, would be 200 MB).
fn shown_json(v: &Value) -> String {
    let compact = String::from_utf8(crate::runtime::deep_json::to_compact(v)).unwrap_or_default();
    if crate::serve::input::depth_of(compact.as_bytes()) <= INDENTED_LEVELS {
        serde_json::to_string_pretty(v).unwrap_or(compact)
    } else {
        compact
    }
}
