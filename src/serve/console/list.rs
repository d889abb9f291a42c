//! `GET /`: the tenant's sessions, newest first, 50 a page, filtered by
//! status, profile, tool and time (`crate::serve::listing`); the first
//! page refreshes itself while it is open. `GET /approvals`: the approval requests waiting for an answer, each with its
//! tool, its argument and Approve / Deny buttons.

use super::html::Who;
use super::html::{esc, layout, pct, when};
use super::{error_page, page, unavailable, Console, Shared};
use crate::serve::listing::Filters;
use crate::serve::state::{pending_approvals, summary};
use crate::serve::store::{ListQuery, SessionRecord, SessionStatus};
use axum::extract::rejection::QueryRejection;
use axum::extract::Query;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::Value;

/// Sessions on a page.
const PAGE: usize = 50;

/// A value shown in a cell: at most `n` characters.
pub fn short(v: &Value, n: usize) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => v.to_string(),
    };
    if s.chars().count() > n {
        s.chars().take(n).collect::<String>() + "…"
    } else {
        s
    }
}

/// A status as a badge.
pub fn badge(status: &str) -> String {
    format!("<span class=\"badge {0}\">{0}</span>", esc(status))
}

/// `GET /`.
pub async fn sessions(
    state: Shared,
    headers: HeaderMap,
    params: Result<Query<Filters>, QueryRejection>,
) -> Response {
    let who = match state.viewer(&headers) {
        Ok(w) => w,
        Err(r) => return r,
    };
    let Ok(Query(p)) = params else {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Bad query",
            "The page's query could not be read.",
            Some(&who),
        );
    };
    let query = match p.query(&who.tenant, PAGE) {
        Ok(q) => q,
        Err(e) => return error_page(StatusCode::BAD_REQUEST, "Bad query", &e, Some(&who)),
    };
    let first_page = query.before.is_none();
    let rows = match state.app.hub.store.list_sessions(&query) {
        Ok(r) => r,
        Err(e) => return unavailable(e, &who),
    };
    let status = query.status;
    let mut body = String::from("<h1>Sessions</h1><form method=\"get\" action=\"/\" class=\"filter\"><label>Status <select name=\"status\" id=\"status\"><option value=\"\">any</option>");
    for s in SessionStatus::ALL {
        body.push_str(&format!(
            "<option value=\"{0}\"{1}>{0}</option>",
            s.as_str(),
            if status == Some(s) { " selected" } else { "" }
        ));
    }
    body.push_str("</select></label>");
    let field = |v: &Option<String>| esc(v.as_deref().unwrap_or(""));
    body.push_str(&format!(
        " <label>Profile <input name=\"profile\" id=\"profile\" value=\"{}\" size=\"12\"></label>\
         <label>Tool <input name=\"tool\" id=\"tool\" value=\"{}\" size=\"14\"></label>\
         <label>From <input type=\"datetime-local\" name=\"since\" id=\"since\" value=\"{}\"></label>\
         <label>To <input type=\"datetime-local\" name=\"until\" id=\"until\" value=\"{}\"></label>\
         <span class=\"note\">(UTC)</span>",
        field(&p.profile),
        field(&p.tool),
        field(&p.since),
        field(&p.until),
    ));
    body.push_str(" <button type=\"submit\" id=\"filter\">Filter</button></form><div id=\"live\">");
    if rows.is_empty() {
        body.push_str("<p class=\"note\" id=\"no-sessions\">No session.</p>");
    } else {
        body.push_str("<table class=\"sessions\" id=\"sessions\"><thead><tr><th>session</th><th>status</th><th>profile</th><th>created</th><th>calls</th><th>events</th><th>value</th></tr></thead><tbody>");
        for r in &rows {
            let v = summary(&state.app, r);
            body.push_str(&format!(
                "<tr data-id=\"{id}\" data-status=\"{st}\"><td><a class=\"session-link\" href=\"/sessions/{idp}\"><code>{id}</code></a></td><td>{badge}</td><td>{profile}</td><td>{created}</td><td>{calls}</td><td>{events}</td><td class=\"value\">{value}</td></tr>",
                id = esc(&r.id),
                idp = pct(&r.id),
                st = esc(v["status"].as_str().unwrap_or("")),
                badge = badge(v["status"].as_str().unwrap_or("")),
                profile = esc(&r.profile),
                created = when(r.created_ms),
                calls = v["calls"],
                events = v["events"],
                value = esc(&short(&v["value"], 80)),
            ));
        }
        body.push_str("</tbody></table>");
    }
    body.push_str("</div>");
    if rows.len() == PAGE {
        if let Some(last) = rows.last() {
            let cursor = format!("{}.{}", last.created_ms, last.id);
            body.push_str(&format!(
                "<p><a id=\"older\" href=\"/?{}cursor={}\">Older sessions →</a></p>",
                esc(&p.query_string()),
                pct(&cursor)
            ));
        }
    }
    page(
        StatusCode::OK,
        layout("Sessions", Some(&who), first_page, &body),
    )
}

/// One waiting approval: its session, id, tool and argument.
struct Waiting {
    session: String,
    approval_id: String,
    tool: String,
    argument: String,
}

/// The approvals waiting in `who`'s sessions (at most 200 sessions).
fn waiting(state: &Console, who: &Who) -> Result<Vec<Waiting>, crate::log::StoreError> {
    let hub = &state.app.hub;
    let rows = hub.store.list_sessions(&ListQuery {
        tenant: who.tenant.clone(),
        status: Some(SessionStatus::WaitingApproval),
        limit: 200,
        ..ListQuery::default()
    })?;
    let mut out = Vec::new();
    for r in rows {
        // Those of a session another worker runs too: the answer is
        // forwarded to it (`session::approve`).
        let pending = pending_approvals(&state.app, &r)?;
        if pending.is_empty() {
            continue;
        }
        out.extend(requests(state, &r.id, &pending)?);
    }
    Ok(out)
}

/// The `approval_requested` events of session `id` among `pending`.
fn requests(
    state: &Console,
    id: &str,
    pending: &[String],
) -> Result<Vec<Waiting>, crate::log::StoreError> {
    let lines = state.app.hub.store.events_after(id, None)?;
    let mut out = Vec::new();
    for l in lines {
        let Ok(e) = serde_json::from_str::<Value>(&l) else {
            continue;
        };
        if e["kind"] != "approval_requested" {
            continue;
        }
        let aid = e["approval_id"].as_str().unwrap_or_default();
        if pending.iter().any(|p| p == aid) && !out.iter().any(|w: &Waiting| w.approval_id == aid) {
            out.push(Waiting {
                session: id.to_string(),
                approval_id: aid.to_string(),
                tool: e["tool"].as_str().unwrap_or_default().to_string(),
                argument: e["argument"].to_string(),
            });
        }
    }
    Ok(out)
}

/// The Approve / Deny forms of a waiting approval; `back`: the page to
/// return to.
fn buttons(w: &Waiting, who: &Who, back: &str) -> String {
    format!(
        "<div class=\"approval\" data-session=\"{s}\" data-approval=\"{a}\"><p>session <a href=\"/sessions/{sp}\"><code>{s}</code></a> asks to call <b class=\"tool\">{t}</b> (<code>{a}</code>) with</p><pre class=\"argument\">{arg}</pre>\
         <form method=\"post\" action=\"/sessions/{sp}/approve\" class=\"inline\"><input type=\"hidden\" name=\"csrf\" value=\"{c}\"><input type=\"hidden\" name=\"approval_id\" value=\"{a}\"><input type=\"hidden\" name=\"back\" value=\"{b}\">\
         <button type=\"submit\" name=\"decision\" value=\"allow\" class=\"approve\">Approve</button> <button type=\"submit\" name=\"decision\" value=\"deny\" class=\"deny\">Deny</button></form></div>",
        s = esc(&w.session),
        sp = pct(&w.session),
        a = esc(&w.approval_id),
        t = esc(&w.tool),
        arg = esc(&w.argument),
        c = esc(&who.csrf),
        b = esc(back),
    )
}

/// The approvals section of session `r`'s page (empty when none waits).
pub fn session_approvals(state: &Console, who: &Who, r: &SessionRecord) -> String {
    let id = &r.id;
    let pending = match pending_approvals(&state.app, r) {
        Ok(p) if p.is_empty() => return String::new(),
        Ok(p) => p,
        Err(e) => return format!("<p class=\"error-message\">{}</p>", esc(&e.to_string())),
    };
    match requests(state, id, &pending) {
        Ok(ws) => {
            let mut s = String::from("<section id=\"approvals\"><h2>Waiting for an answer</h2>");
            for w in &ws {
                s.push_str(&buttons(w, who, &format!("/sessions/{}", pct(id))));
            }
            s.push_str("</section>");
            s
        }
        Err(e) => format!("<p class=\"error-message\">{}</p>", esc(&e.to_string())),
    }
}

/// `GET /approvals`.
pub async fn approvals(state: Shared, headers: HeaderMap) -> Response {
    let who = match state.viewer(&headers) {
        Ok(w) => w,
        Err(r) => return r,
    };
    let ws = match waiting(&state, &who) {
        Ok(w) => w,
        Err(e) => return unavailable(e, &who),
    };
    let mut body = String::from("<h1>Approvals</h1><div id=\"live\">");
    if ws.is_empty() {
        body.push_str("<p class=\"note\" id=\"no-approvals\">No approval is waiting.</p>");
    }
    for w in &ws {
        body.push_str(&buttons(w, &who, "/approvals"));
    }
    body.push_str("</div>");
    page(StatusCode::OK, layout("Approvals", Some(&who), true, &body))
}
