//! `GET /sessions/{id}/ir`: a program session's IR on request, the text
//! `lt check --emit ir` prints (`ir::print`), from the program as the
//! server checked and lowered it (`serve::check::lower`: the tenant's
//! declarations and the session's profile) on a session thread, since
//! lowering a deep program needs its stack. A task session has no program
//! of its own (its model's programs are in the timeline): a 404 page
//! saying so.

use super::html::{esc, layout, pct};
use super::{error_page, page, unavailable, Shared};
use crate::serve::check::{self, PROGRAM_NAME};
use crate::source::SourceFile;
use axum::extract::rejection::PathRejection;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use std::sync::Arc;

/// What lowering the stored program gave.
enum Lowered {
    /// The IR's text.
    Ir(String),
    /// Why there is none (the tenant's configuration changed since).
    Refused(String),
}

/// `GET /sessions/{id}/ir`.
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
    let r = match state.app.hub.store.session(&who.tenant, &id) {
        Ok(Some(r)) => r,
        Ok(None) => return super::not_found(&id, &who),
        Err(e) => return unavailable(e, &who),
    };
    let Some(program) = r.request["program"].as_str().map(str::to_string) else {
        return error_page(
            StatusCode::NOT_FOUND,
            "No program",
            "A task session has no program of its own: the programs its model proposed are in the session's timeline.",
            Some(&who),
        );
    };
    let (reply, answer) = tokio::sync::oneshot::channel();
    let st = Arc::clone(&state);
    let (tenant, profile) = (r.tenant.clone(), r.profile.clone());
    if let Err(e) = state.app.hub.spawn(move || {
        let _ = reply.send(lower(&st, &tenant, &profile, program));
    }) {
        return unavailable(
            format!("cannot start a thread to lower the program: {e}"),
            &who,
        );
    }
    let text = match answer.await {
        Ok(Lowered::Ir(t)) => t,
        Ok(Lowered::Refused(why)) => {
            return error_page(StatusCode::CONFLICT, "No IR", &why, Some(&who))
        }
        Err(_) => return unavailable("the lowering thread ended without an answer", &who),
    };
    let body = format!(
        "<h1>IR of session <code id=\"session-id\">{id}</code></h1><p><a id=\"back\" href=\"/sessions/{idp}\">← the session</a> · the program lowered as <code>lt check --emit ir</code> prints it</p><pre class=\"program\" id=\"ir\">{ir}</pre>",
        id = esc(&r.id),
        idp = pct(&r.id),
        ir = esc(text.trim_end()),
    );
    page(
        StatusCode::OK,
        layout(&format!("IR of session {}", r.id), Some(&who), false, &body),
    )
}

/// The IR of `program` as tenant `tenant` runs it under `profile`.
fn lower(state: &super::Console, tenant: &str, profile: &str, program: String) -> Lowered {
    let Some(t) = state.app.hub.tenants.get(tenant) else {
        return Lowered::Refused(format!("the tenant {tenant} is no longer configured"));
    };
    let Some(p) = t.config.profile(profile) else {
        return Lowered::Refused(format!(
            "the profile {profile} is no longer in the tenant's configuration"
        ));
    };
    let file = SourceFile::new(PROGRAM_NAME, program);
    match check::lower(&t.config, &p, &file) {
        Ok(ir) => Lowered::Ir(crate::ir::print::print(&ir, &file)),
        Err(_) => Lowered::Refused(
            "the program no longer checks against the tenant's declarations and profile, so it has no IR; the session's log keeps what ran".into(),
        ),
    }
}
