//! The console (`docs/console.md`): `lt serve`'s web pages at `/`,
//! server-rendered HTML with one small script and one stylesheet compiled
//! into the binary (`assets/`), no request to any other host.
//!
//! ```text
//! mod.rs       routes, the console's state, answers (headers, error pages)
//! login.rs     GET/POST /login, POST /logout: a key exchanged for a session
//!              cookie (an opaque token mapped here to the tenant), CSRF tokens
//! throttle.rs  the login's rate limit: failures per client address ─▶ 429
//! html.rs      escaping, the page layout, the program's highlighting
//! list.rs      GET / (sessions, by status, profile, tool and time, newest
//!              first, paged), GET /approvals
//! session.rs   GET /sessions/{id}, POST …/replay, POST …/approve
//! ir.rs        GET /sessions/{id}/ir: the program's IR, as `lt check --emit ir`
//! timeline.rs  a session's log ─▶ the waterfall's rows
//! ```
//!
//! Every page but `/login` needs the session cookie (without one, a page
//! redirects to `/login`; an action answers 403). Every state-changing
//! form carries the login's CSRF token, checked here before anything
//! happens. A session of another tenant is a 404 page, as in the API.

mod html;
mod ir;
mod list;
mod login;
mod session;
mod throttle;
pub(crate) mod timeline;

use super::state::AppState;
use axum::extract::DefaultBodyLimit;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::sync::Arc;

/// What the console's handlers share.
pub struct Console {
    /// The API's state: the hub (sessions, store) and the keys.
    pub app: Arc<AppState>,
    /// The logged-in browsers.
    pub logins: login::Logins,
    /// Failed logins by client address (the login's rate limit).
    pub throttle: throttle::Throttle,
}

type Shared = axum::extract::State<Arc<Console>>;

const CSS: &str = include_str!("assets/console.css");
const JS: &str = include_str!("assets/console.js");

/// The console's routes, to merge with the API's router.
pub fn router(app: Arc<AppState>) -> Router {
    let console = Arc::new(Console {
        app,
        logins: login::Logins::new(login::LOGIN_TTL),
        throttle: throttle::Throttle::new(throttle::MAX_FAILURES, throttle::WINDOW),
    });
    Router::new()
        .route("/", get(list::sessions))
        .route("/approvals", get(list::approvals))
        .route("/login", get(login::form).post(login::submit))
        .route("/logout", post(login::logout))
        .route("/sessions/{id}", get(session::show))
        .route("/sessions/{id}/ir", get(ir::show))
        .route("/sessions/{id}/replay", post(session::replay))
        .route("/sessions/{id}/approve", post(session::approve))
        .route(
            "/console/console.css",
            get(|| async { asset("text/css", CSS) }),
        )
        .route(
            "/console/console.js",
            get(|| async { asset("text/javascript", JS) }),
        )
        .layer(DefaultBodyLimit::max(64 * 1024))
        .with_state(console)
}

/// The headers every console answer carries: no caching, no framing, and
/// a content security policy that allows only this server's script and
/// stylesheet (no inline script runs, even one that slipped through).
fn secure(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
             connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r
}

/// An HTML page with `status`.
fn page(status: StatusCode, body: String) -> Response {
    secure(
        (
            status,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            body,
        )
            .into_response(),
    )
}

/// A 303 to `to` (a path of this server).
fn redirect(to: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    secure(r)
}

fn asset(kind: &'static str, text: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "no-cache"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        text,
    )
        .into_response()
}

/// An error page: `status`, a title and what to do.
fn error_page(status: StatusCode, title: &str, message: &str, who: Option<&html::Who>) -> Response {
    let body = format!(
        "<h1>{}</h1><p class=\"error-message\">{}</p><p><a href=\"/\">Sessions</a> · <a href=\"/login\">Log in</a></p>",
        html::esc(title),
        html::esc(message)
    );
    page(status, html::layout(title, who, false, &body))
}

/// The 403 of an action without a valid CSRF token or login.
fn forbidden(message: &str) -> Response {
    error_page(StatusCode::FORBIDDEN, "Forbidden", message, None)
}

/// The session id of a page's path, read after the login is checked: one
/// that is not UTF-8 once percent-decoded (`/sessions/%FF`) is text no
/// session has, so the page is the 404 of any unknown id (axum's own
/// rejection would answer text/plain before the login).
fn path_id(
    path: Result<axum::extract::Path<String>, axum::extract::rejection::PathRejection>,
) -> String {
    match path {
        Ok(axum::extract::Path(id)) => id,
        Err(_) => "\u{fffd}".to_string(),
    }
}

/// The 404 of a session that does not exist for this tenant.
fn not_found(id: &str, who: &html::Who) -> Response {
    error_page(
        StatusCode::NOT_FOUND,
        "Not found",
        &format!("There is no session {id}."),
        Some(who),
    )
}

/// A 503 page: the store failed.
fn unavailable(why: impl std::fmt::Display, who: &html::Who) -> Response {
    error_page(
        StatusCode::SERVICE_UNAVAILABLE,
        "The store did not answer",
        &format!("{why}. Try again in a moment."),
        Some(who),
    )
}
