//! Logging in to the console: an API key, typed once into `/login`, is
//! exchanged for a session cookie. The cookie holds an opaque random token
//! (32 bytes from the system's source, hex); this table maps the token's
//! SHA-256 to the tenant, a CSRF token and an expiry. The key itself is
//! never stored or sent back. The cookie is `HttpOnly; SameSite=Strict;
//! Path=/`. Logins live in the server's memory: a restart logs everyone
//! out.
//!
//! CSRF: every state-changing form carries the login's CSRF token (a second
//! random value, shown only in the pages' forms), compared in constant time
//! before anything happens ([`Console::check`]). The login form itself
//! carries a token that must match a short-lived `lt_login_csrf` cookie
//! (double submit), so another site cannot log a browser in. Failed
//! logins are rate-limited per client address (`throttle.rs`).

use super::html::{self, Who};
use super::{error_page, forbidden, page, redirect, secure, Console, Shared};
use axum::extract::rejection::FormRejection;
use axum::extract::{ConnectInfo, Form};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::Extension;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// How long a login lasts.
pub const LOGIN_TTL: Duration = Duration::from_secs(12 * 3600);

/// At most this many logins are kept; past it the oldest goes.
const MAX_LOGINS: usize = 10_000;

/// The session cookie's name.
pub const COOKIE: &str = "lt_console";

/// The login form's double-submit cookie.
const LOGIN_COOKIE: &str = "lt_login_csrf";

struct Entry {
    who: Who,
    expires: Instant,
}

/// The logins: SHA-256 of the cookie's token ─▶ who, until when.
pub struct Logins {
    map: Mutex<HashMap<[u8; 32], Entry>>,
    ttl: Duration,
}

/// 32 random bytes as 64 hex digits. `None` when the system gave none.
fn token() -> Option<String> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).ok()?;
    Some(hex::encode(b))
}

fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

impl Logins {
    /// An empty table whose logins last `ttl`.
    pub fn new(ttl: Duration) -> Logins {
        Logins {
            map: Mutex::new(HashMap::new()),
            ttl,
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Entry>> {
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new login of `tenant`: the cookie's token. `None` without
    /// randomness.
    fn create(&self, tenant: &str) -> Option<String> {
        let cookie = token()?;
        let csrf = token()?;
        let now = Instant::now();
        let mut map = self.map();
        map.retain(|_, e| e.expires > now);
        if map.len() >= MAX_LOGINS {
            if let Some(oldest) = map.iter().min_by_key(|(_, e)| e.expires).map(|(k, _)| *k) {
                map.remove(&oldest);
            }
        }
        map.insert(
            Sha256::digest(cookie.as_bytes()).into(),
            Entry {
                who: Who {
                    tenant: tenant.to_string(),
                    csrf,
                },
                expires: now + self.ttl,
            },
        );
        Some(cookie)
    }

    /// Who holds the cookie token `t`, if its login has not expired.
    fn get(&self, t: &str) -> Option<Who> {
        let key: [u8; 32] = Sha256::digest(t.as_bytes()).into();
        let mut map = self.map();
        match map.get(&key) {
            Some(e) if e.expires > Instant::now() => Some(e.who.clone()),
            Some(_) => {
                map.remove(&key);
                None
            }
            None => None,
        }
    }

    fn remove(&self, t: &str) {
        let key: [u8; 32] = Sha256::digest(t.as_bytes()).into();
        self.map().remove(&key);
    }
}

/// The value of cookie `name` in the request, if any.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
}

impl Console {
    /// Who the request's session cookie says, if a valid login.
    pub fn who(&self, headers: &HeaderMap) -> Option<Who> {
        cookie(headers, COOKIE).and_then(|t| self.logins.get(t))
    }

    /// A page's login, or the answer to give instead: a redirect to
    /// `/login`.
    #[allow(clippy::result_large_err)] // the page to answer, built once
    pub fn viewer(&self, headers: &HeaderMap) -> Result<Who, Response> {
        self.who(headers).ok_or_else(|| redirect("/login"))
    }

    /// An action's login, checked with the form's CSRF token. Errors: a
    /// 403 page saying what was wrong.
    #[allow(clippy::result_large_err)] // the 403 page to answer
    pub fn check(&self, headers: &HeaderMap, csrf: Option<&str>) -> Result<Who, Response> {
        let who = self.who(headers).ok_or_else(|| {
            forbidden("You are not logged in, or your login expired. Log in again, then retry.")
        })?;
        match csrf {
            Some(c) if same(c, &who.csrf) => Ok(who),
            _ => Err(forbidden(
                "The form's security token is missing or wrong (it was sent from another page or an old login). Reload the page and try again.",
            )),
        }
    }
}

fn set_cookie(r: &mut Response, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        r.headers_mut().append(header::SET_COOKIE, v);
    }
}

/// The login page, with `message` (an error) if any, and a fresh
/// double-submit token.
fn login_page(status: StatusCode, message: Option<&str>) -> Response {
    let Some(t) = token() else {
        return error_page(
            StatusCode::SERVICE_UNAVAILABLE,
            "No randomness",
            "The server could not draw a random token; try again.",
            None,
        );
    };
    let err = message
        .map(|m| {
            format!(
                "<p class=\"error-message\" id=\"login-error\">{}</p>",
                html::esc(m)
            )
        })
        .unwrap_or_default();
    let body = format!(
        "<h1>Log in</h1>{err}\
         <form method=\"post\" action=\"/login\" class=\"login\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{t}\">\
         <label>API key <input type=\"password\" name=\"key\" id=\"key\" autocomplete=\"off\" required autofocus></label>\
         <button type=\"submit\" id=\"login\">Log in</button></form>\
         <p class=\"note\">The key is exchanged for a session cookie and not kept.</p>"
    );
    let mut r = page(status, html::layout("Log in", None, false, &body));
    set_cookie(
        &mut r,
        &format!("{LOGIN_COOKIE}={t}; HttpOnly; SameSite=Strict; Path=/login; Max-Age=600"),
    );
    r
}

/// `GET /login`.
pub async fn form(state: Shared, headers: HeaderMap) -> Response {
    if state.who(&headers).is_some() {
        return redirect("/");
    }
    login_page(StatusCode::OK, None)
}

#[derive(Deserialize)]
pub struct LoginForm {
    key: Option<String>,
    csrf: Option<String>,
}

/// The client's address, when the server knows it.
pub type Peer = Option<Extension<ConnectInfo<SocketAddr>>>;

/// `POST /login`: the key for a session cookie. An address that failed
/// too often lately is refused first (429, `Retry-After`: `throttle.rs`).
pub async fn submit(
    state: Shared,
    peer: Peer,
    headers: HeaderMap,
    form: Result<Form<LoginForm>, FormRejection>,
) -> Response {
    let addr = peer.map(|Extension(ConnectInfo(a))| a.ip());
    if let Err(wait) = state.throttle.check(addr, Instant::now()) {
        let secs = wait.as_secs().max(1);
        let mut r = error_page(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many failed logins",
            &format!("Too many failed logins from your address. Try again in {secs} seconds."),
            None,
        );
        if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
            r.headers_mut().insert(header::RETRY_AFTER, v);
        }
        return r;
    }
    let Ok(Form(f)) = form else {
        return login_page(StatusCode::BAD_REQUEST, Some("The form could not be read."));
    };
    let paired = match (cookie(&headers, LOGIN_COOKIE), f.csrf.as_deref()) {
        (Some(c), Some(t)) => same(c, t),
        _ => false,
    };
    if !paired {
        return forbidden(
            "The login form's security token is missing or does not match. Open /login again and retry.",
        );
    }
    let key = f.key.unwrap_or_default();
    let tenant = state
        .app
        .keys
        .tenant(Some(&format!("Bearer {}", key.trim())))
        .map(str::to_string);
    let Some(tenant) = tenant else {
        state.throttle.failed(addr, Instant::now());
        return login_page(StatusCode::UNAUTHORIZED, Some("That key is not valid."));
    };
    state.throttle.succeeded(addr);
    let Some(t) = state.logins.create(&tenant) else {
        return error_page(
            StatusCode::SERVICE_UNAVAILABLE,
            "No randomness",
            "The server could not draw a random token; try again.",
            None,
        );
    };
    let mut r = redirect("/");
    set_cookie(
        &mut r,
        &format!(
            "{COOKIE}={t}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
            state.logins.ttl.as_secs()
        ),
    );
    set_cookie(
        &mut r,
        &format!("{LOGIN_COOKIE}=; HttpOnly; SameSite=Strict; Path=/login; Max-Age=0"),
    );
    r
}

#[derive(Deserialize)]
pub struct CsrfForm {
    csrf: Option<String>,
}

/// `POST /logout`: forgets the login and clears the cookie.
pub async fn logout(
    state: Shared,
    headers: HeaderMap,
    form: Result<Form<CsrfForm>, FormRejection>,
) -> Response {
    let csrf = form.ok().and_then(|Form(f)| f.csrf);
    if let Err(r) = state.check(&headers, csrf.as_deref()) {
        return r;
    }
    if let Some(t) = cookie(&headers, COOKIE) {
        state.logins.remove(t);
    }
    let mut r = redirect("/login");
    set_cookie(
        &mut r,
        &format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"),
    );
    secure(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_maps_its_token_to_the_tenant_until_it_expires() {
        let l = Logins::new(Duration::from_secs(60));
        let t = l.create("acme").expect("random");
        assert_eq!(l.get(&t).map(|w| w.tenant), Some("acme".to_string()));
        assert!(l.get("nope").is_none());
        l.remove(&t);
        assert!(l.get(&t).is_none());
        let short = Logins::new(Duration::ZERO);
        let t = short.create("acme").expect("random");
        assert!(short.get(&t).is_none(), "expired");
    }

    #[test]
    fn cookies_are_read_by_name() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; lt_console=abc ; b=2"),
        );
        assert_eq!(cookie(&h, COOKIE), Some("abc"));
        assert_eq!(cookie(&h, "c"), None);
    }
}
