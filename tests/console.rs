//! The console (`docs/console.md`) over HTTP, against the real `lt serve`:
//! the login cookie, CSRF on every action, one tenant's pages only,
//! escaping, the list's filter and pages, replay and approvals through the
//! forms. `tests/console_browser.rs` drives the same pages in Chromium.

#[path = "support/console.rs"]
mod console_support;
#[path = "support/serve.rs"]
mod serve_support;

use console_support::*;
use serve_support::{Backend, Server};
use std::time::Duration;

#[test]
fn a_key_is_exchanged_for_an_httponly_strict_cookie_that_is_not_the_key() {
    let (_s, config, store) = setup("console-login");
    let server = Server::start(&config, &store);
    // No cookie, or a made-up one: every page sends to the login (a
    // session id that is not UTF-8 too: the break-it pass found it
    // answered text/plain before the login was looked at).
    for cookie in ["", "lt_console=0000", "lt_console=", "lt_console=%%%; x"] {
        for page in ["/", "/sessions/%FF", "/sessions/%FF/ir"] {
            let a = request(&server, "GET", page, cookie, None);
            assert_eq!(a.status, 303, "{page} {cookie}: {}", a.body);
            assert_eq!(a.location.as_deref(), Some("/login"));
        }
    }
    let c = login(&server, ACME);
    // Logged in, such an id is the 404 page of any unknown session.
    for page in ["/sessions/%FF", "/sessions/%FF/ir"] {
        let a = c.get(&server, page);
        assert_eq!(a.status, 404, "{page}: {}", a.body);
        assert!(a.body.contains("<html"), "{page}: {}", a.body);
    }
    let line = c.set_cookie.to_ascii_lowercase();
    for flag in ["httponly", "samesite=strict", "path=/;"] {
        assert!(line.contains(flag), "{flag} missing: {}", c.set_cookie);
    }
    let token = c.cookie.trim_start_matches("lt_console=");
    assert_eq!(token.len(), 64, "{token}");
    assert!(!c.set_cookie.contains(ACME), "the key is never the cookie");
    let home = c.get(&server, "/");
    assert!(home.body.contains("id=\"tenant\">acme<"), "{}", home.body);
    assert!(!home.body.contains(ACME), "the key is not in the page");
    // A wrong key: 401 and no session cookie.
    let form = request(&server, "GET", "/login", "", None);
    let pre = cookie_value(&form.set_cookies, "lt_login_csrf").expect("cookie");
    let bad = request(
        &server,
        "POST",
        "/login",
        &format!("lt_login_csrf={pre}"),
        Some(&[("csrf", pre), ("key", "acme-dev-ke")]),
    );
    assert_eq!(bad.status, 401, "{}", bad.body);
    assert!(cookie_value(&bad.set_cookies, "lt_console").is_none());
    // The login form without its double-submit cookie, or with another token: 403.
    let forged = request(
        &server,
        "POST",
        "/login",
        "",
        Some(&[("csrf", pre), ("key", ACME)]),
    );
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert!(cookie_value(&forged.set_cookies, "lt_console").is_none());
    let forged = request(
        &server,
        "POST",
        "/login",
        &format!("lt_login_csrf={pre}"),
        Some(&[("csrf", "x"), ("key", ACME)]),
    );
    assert_eq!(forged.status, 403, "{}", forged.body);
    // Garbage bodies never crash the server.
    let junk = request(
        &server,
        "POST",
        "/login",
        "lt_login_csrf=a",
        Some(&[("csrf", "a\u{0}\u{ffff}")]),
    );
    assert!(junk.status == 401 || junk.status == 403, "{}", junk.status);
    assert_eq!(c.get(&server, "/").status, 200, "the server still answers");
}

#[test]
fn failed_logins_from_one_address_are_limited_with_429_and_retry_after() {
    let (_s, config, store) = setup("console-throttle");
    let server = Server::start(&config, &store);
    let attempt = |key: &str| -> Answer {
        let form = request(&server, "GET", "/login", "", None);
        let pre = cookie_value(&form.set_cookies, "lt_login_csrf")
            .expect("cookie")
            .to_string();
        request(
            &server,
            "POST",
            "/login",
            &format!("lt_login_csrf={pre}"),
            Some(&[("csrf", &pre), ("key", key)]),
        )
    };
    for i in 0..5 {
        let a = attempt("wrong-key");
        assert_eq!(a.status, 401, "failure {i}: {}", a.body);
        assert!(a.retry_after.is_none());
    }
    for key in ["wrong-key", ACME] {
        let a = attempt(key);
        assert_eq!(a.status, 429, "{key}: {}", a.body);
        assert!(cookie_value(&a.set_cookies, "lt_console").is_none());
        let secs: u64 = a
            .retry_after
            .as_deref()
            .and_then(|s| s.parse().ok())
            .expect("Retry-After in seconds");
        assert!((1..=60).contains(&secs), "{secs}");
        assert!(a.body.contains("Too many failed logins"), "{}", a.body);
    }
    // The API's keys are not the console's logins: still served.
    let (st, _) = server.call("GET", "/v1/sessions", Some(ACME), None);
    assert_eq!(st, 200);
}

#[test]
fn every_action_needs_the_logins_csrf_token_and_logout_ends_the_login() {
    let (_s, config, store) = setup("console-csrf");
    let server = Server::start(&config, &store);
    let id = server.submit(ACME, &support_program(), "support");
    server.wait_final(ACME, &id, Duration::from_secs(60));
    let c = login(&server, ACME);
    let other = login(&server, ACME);
    assert_ne!(c.csrf, other.csrf, "each login has its own token");
    let replay = format!("/sessions/{id}/replay");
    for form in [
        vec![],
        vec![("csrf", "")],
        vec![("csrf", other.csrf.as_str())],
        vec![("csrf", "x")],
    ] {
        let a = c.post(&server, &replay, &form);
        assert_eq!(a.status, 403, "{form:?}: {}", a.body);
        assert!(a.body.contains("security token"), "{}", a.body);
    }
    // Without a login at all, an action is a 403 too (not a redirect).
    let a = request(&server, "POST", &replay, "", Some(&[("csrf", &c.csrf)]));
    assert_eq!(a.status, 403);
    let a = c.post(&server, &replay, &[("csrf", &c.csrf)]);
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(
        a.body.contains("id=\"replay-result\" data-ok=\"true\""),
        "{}",
        a.body
    );
    assert_eq!(c.post(&server, "/logout", &[("csrf", "x")]).status, 403);
    let out = c.post(&server, "/logout", &[("csrf", &c.csrf)]);
    assert_eq!(out.status, 303);
    assert_eq!(out.location.as_deref(), Some("/login"));
    assert!(out
        .set_cookies
        .iter()
        .any(|l| l.starts_with("lt_console=;") && l.contains("Max-Age=0")));
    let after = c.get(&server, "/");
    assert_eq!(after.status, 303, "the old cookie no longer logs in");
    assert_eq!(
        other.get(&server, "/").status,
        200,
        "the other login is untouched"
    );
}

#[test]
fn a_tenant_sees_only_its_own_sessions() {
    let (_s, config, store) = setup("console-tenants");
    let server = Server::start(&config, &store);
    let mine = server.submit(ACME, &support_program(), "support");
    let theirs = server.submit(GLOBEX, &support_program(), "support");
    let waiting = server.submit(ACME, APPROVAL_PROGRAM, "supervised");
    server.wait_final(ACME, &mine, Duration::from_secs(60));
    server.wait_final(GLOBEX, &theirs, Duration::from_secs(60));
    let v = server.wait_for(ACME, &waiting, Duration::from_secs(30), |v| {
        v["status"] == "waiting_approval"
    });
    let approval = v["pending_approvals"][0]
        .as_str()
        .expect("pending")
        .to_string();
    let acme = login(&server, ACME);
    let globex = login(&server, GLOBEX);
    let list = globex.get(&server, "/");
    assert!(
        list.body.contains(&theirs) && !list.body.contains(&mine) && !list.body.contains(&waiting)
    );
    for path in [format!("/sessions/{mine}"), format!("/sessions/{waiting}")] {
        let a = globex.get(&server, &path);
        assert_eq!(a.status, 404, "{path}: {}", a.body);
        assert!(!a.body.contains("Timeline"), "{}", a.body);
    }
    let a = globex.post(
        &server,
        &format!("/sessions/{mine}/replay"),
        &[("csrf", &globex.csrf)],
    );
    assert_eq!(a.status, 404);
    let a = globex.post(
        &server,
        &format!("/sessions/{waiting}/approve"),
        &[
            ("csrf", &globex.csrf),
            ("approval_id", &approval),
            ("decision", "allow"),
        ],
    );
    assert_eq!(a.status, 404, "{}", a.body);
    assert!(!globex.get(&server, "/approvals").body.contains(&waiting));
    // Still waiting: globex's answer did nothing.
    let (_, v) = server.call("GET", &format!("/v1/sessions/{waiting}"), Some(ACME), None);
    assert_eq!(v["status"], "waiting_approval", "{v}");
    assert_eq!(acme.get(&server, &format!("/sessions/{mine}")).status, 200);
    assert_eq!(acme.get(&server, "/sessions/nonexistent").status, 404);
}

#[test]
fn a_session_page_shows_its_waterfall_value_verification_and_replay() {
    let (_s, config, store) = setup("console-session");
    let server = Server::start(&config, &store);
    let id = server.submit(ACME, &support_program(), "support");
    server.wait_final(ACME, &id, Duration::from_secs(60));
    let denied = server.submit(ACME, &support_program(), "limited");
    server.wait_final(ACME, &denied, Duration::from_secs(60));
    let c = login(&server, ACME);
    let p = c.get(&server, &format!("/sessions/{id}"));
    assert_eq!(p.status, 200);
    assert_eq!(
        p.body
            .matches("data-kind=\"Call\" data-outcome=\"ok\"")
            .count(),
        3,
        "{}",
        p.body
    );
    assert!(
        p.body.contains("id=\"verified\" data-ok=\"true\""),
        "{}",
        p.body
    );
    assert!(p.body.contains("refund tx_000001 processed"), "{}", p.body);
    assert!(
        p.body.contains("<span class=\"k\">match</span>"),
        "highlighted: {}",
        p.body
    );
    assert!(
        p.body.contains("data-live=\"0\""),
        "an ended session is not refreshed"
    );
    let d = c.get(&server, &format!("/sessions/{denied}"));
    assert!(d.body.contains("data-outcome=\"denied\""), "{}", d.body);
    assert!(
        d.body.contains("deny ("),
        "the decision is shown: {}",
        d.body
    );
}

#[test]
fn user_controlled_text_is_escaped() {
    let (_s, config, store) = setup("console-xss");
    let server = Server::start(&config, &store);
    let id = server.submit(ACME, XSS_PROGRAM, "support");
    let v = server.wait_final(ACME, &id, Duration::from_secs(60));
    assert!(
        v["value"].as_str().unwrap_or("").contains("<script>"),
        "{v}"
    );
    let c = login(&server, ACME);
    for path in ["/".to_string(), format!("/sessions/{id}")] {
        let a = c.get(&server, &path);
        assert_eq!(a.status, 200);
        assert!(!a.body.contains("<script>window"), "{path}: {}", a.body);
        assert!(!a.body.contains("<img"), "{path}: {}", a.body);
        assert!(
            a.body.contains("&lt;script&gt;window.pwned"),
            "{path}: {}",
            a.body
        );
    }
    let a = c.get(&server, "/sessions/%3Cscript%3Ealert(1)%3C%2Fscript%3E");
    assert_eq!(a.status, 404);
    assert!(!a.body.contains("<script>alert"), "{}", a.body);
    assert!(a.body.contains("&lt;script&gt;alert(1)"), "{}", a.body);
    let csp = ureq::get(&format!("{}/", server.url))
        .set("Cookie", &c.cookie)
        .call()
        .expect("page");
    assert!(csp
        .header("content-security-policy")
        .unwrap_or("")
        .contains("script-src 'self'"));
}

#[test]
fn the_list_is_newest_first_filtered_by_status_and_paged() {
    let (_s, config, store) = setup("console-list");
    let server = Server::start(&config, &store);
    let mut ids = Vec::new();
    for i in 0..51 {
        ids.push(server.submit(ACME, &format!("\"s{i}\""), "support"));
        // Newest first is by creation time in ms: two sessions of one ms
        // are ordered by their ids, at random.
        std::thread::sleep(Duration::from_millis(2));
    }
    let waiting = server.submit(ACME, APPROVAL_PROGRAM, "supervised");
    server.wait_for(ACME, &waiting, Duration::from_secs(30), |v| {
        v["status"] == "waiting_approval"
    });
    for id in &ids {
        server.wait_final(ACME, id, Duration::from_secs(60));
    }
    let c = login(&server, ACME);
    let first = c.get(&server, "/");
    assert_eq!(first.body.matches("class=\"session-link\"").count(), 50);
    let at = |id: &str| first.body.find(id).unwrap_or(usize::MAX);
    assert!(
        at(&waiting) < at(&ids[50]) && at(&ids[50]) < at(&ids[49]),
        "newest first"
    );
    assert!(!first.body.contains(&ids[0]), "the oldest is on page 2");
    let href = first
        .body
        .split("id=\"older\" href=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("older link");
    let second = c.get(&server, &href.replace("&amp;", "&"));
    assert!(second.body.contains(&ids[0]), "{}", second.body);
    assert_eq!(second.body.matches("class=\"session-link\"").count(), 2);
    // The next page keeps the filters.
    let support = c.get(&server, "/?profile=support");
    assert_eq!(support.body.matches("class=\"session-link\"").count(), 50);
    let href = support
        .body
        .split("id=\"older\" href=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("older link")
        .replace("&amp;", "&");
    assert!(href.starts_with("/?profile=support&cursor="), "{href}");
    let rest = c.get(&server, &href);
    assert_eq!(rest.body.matches("class=\"session-link\"").count(), 1);
    assert!(rest.body.contains(&ids[0]) && !rest.body.contains(&waiting));
    let only = c.get(&server, "/?status=waiting_approval");
    assert_eq!(only.body.matches("class=\"session-link\"").count(), 1);
    assert!(only.body.contains(&waiting));
    assert_eq!(c.get(&server, "/?status=bogus").status, 400);
    assert_eq!(c.get(&server, "/?cursor=nope").status, 400);
}

#[test]
fn the_list_filters_by_profile_tool_and_time_in_the_page_and_the_api() {
    let (_s, config, store) = setup("console-filters");
    let server = Server::start(&config, &store);
    let calls = server.submit(ACME, &support_program(), "support");
    let plain = server.submit(ACME, "\"no call\"", "limited");
    let theirs = server.submit(GLOBEX, &support_program(), "support");
    for (key, id) in [(ACME, &calls), (ACME, &plain), (GLOBEX, &theirs)] {
        server.wait_final(key, id, Duration::from_secs(60));
    }
    let c = login(&server, ACME);
    let shown = |path: &str| -> Vec<String> {
        let a = c.get(&server, path);
        assert_eq!(a.status, 200, "{path}: {}", a.body);
        [&calls, &plain, &theirs]
            .into_iter()
            .filter(|id| a.body.contains(id.as_str()))
            .cloned()
            .collect()
    };
    assert_eq!(shown("/"), [calls.as_str(), plain.as_str()]);
    assert_eq!(shown("/?tool=lookup_account"), [calls.as_str()]);
    assert_eq!(shown("/?tool=lookup"), Vec::<String>::new());
    assert_eq!(shown("/?profile=limited"), [plain.as_str()]);
    assert_eq!(shown("/?profile=support&tool=send_reply"), [calls.as_str()]);
    assert_eq!(
        shown("/?since=2000-01-01&until=2100-01-01"),
        [calls.as_str(), plain.as_str()]
    );
    assert_eq!(shown("/?since=2100-01-01T00:00"), Vec::<String>::new());
    assert_eq!(shown("/?until=2000-01-01"), Vec::<String>::new());
    // The form keeps the filters it was given.
    let a = c.get(&server, "/?tool=lookup_account&profile=support");
    assert!(
        a.body
            .contains("name=\"tool\" id=\"tool\" value=\"lookup_account\""),
        "{}",
        a.body
    );
    let bad = c.get(&server, "/?since=yesterday");
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("is not a time"), "{}", bad.body);
    // The API takes the same filters; globex's session never appears.
    let (st, v) = server.call("GET", "/v1/sessions?tool=lookup_account", Some(ACME), None);
    assert_eq!(st, 200, "{v}");
    let ids: Vec<&str> = v["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(ids, [calls.as_str()]);
    let (st, v) = server.call("GET", "/v1/sessions?until=soon", Some(ACME), None);
    assert_eq!(st, 400, "{v}");
}

/// `s` with the console's five escapes undone.
fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

#[test]
fn a_sessions_ir_is_shown_on_request_as_lt_check_emit_ir_prints_it() {
    let (s, config, store) = setup("console-ir");
    let server = Server::start(&config, &store);
    let program = support_program();
    let id = server.submit(ACME, &program, "support");
    server.wait_final(ACME, &id, Duration::from_secs(60));
    let c = login(&server, ACME);
    let page = c.get(&server, &format!("/sessions/{id}"));
    assert!(
        page.body
            .contains(&format!("id=\"show-ir\" href=\"/sessions/{id}/ir\"")),
        "{}",
        page.body
    );
    let a = c.get(&server, &format!("/sessions/{id}/ir"));
    assert_eq!(a.status, 200, "{}", a.body);
    let shown = a
        .body
        .split("<pre class=\"program\" id=\"ir\">")
        .nth(1)
        .and_then(|r| r.split("</pre>").next())
        .map(unescape)
        .expect("the IR's <pre>");
    // The CLI's IR of the same text.
    let file = s.write("same.lt", &program);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lt"))
        .args(["check", "--json", "--emit", "ir"])
        .arg(&file)
        .output()
        .expect("lt check");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let cli = v["ir"].as_str().expect("ir");
    assert!(shown.contains("exec lookup_account"), "{shown}");
    assert_eq!(shown, cli.trim_end());
    // Another tenant's session has no IR page; nor does an unknown one.
    let globex = login(&server, GLOBEX);
    assert_eq!(
        globex.get(&server, &format!("/sessions/{id}/ir")).status,
        404
    );
    assert_eq!(c.get(&server, "/sessions/0123/ir").status, 404);
}

/// Approves `approval` of session `id` with the approvals page's form on
/// `server`: back to that page, the session ends with the tool run, and
/// its timeline shows the approval.
fn allow_from_the_approvals_page(c: &Client, server: &Server, id: &str, approval: &str) {
    let a = c.post(
        server,
        &format!("/sessions/{id}/approve"),
        &[
            ("csrf", &c.csrf),
            ("approval_id", approval),
            ("decision", "allow"),
            ("back", "/approvals"),
        ],
    );
    assert_eq!(a.status, 303, "{}", a.body);
    assert_eq!(a.location.as_deref(), Some("/approvals"));
    let v = server.wait_final(ACME, id, Duration::from_secs(30));
    assert_eq!(v["value"], "deleted ok", "{v}");
    let p = c.get(server, &format!("/sessions/{id}"));
    let approved = "data-kind=\"Approval\" data-outcome=\"approved\"";
    assert!(p.body.contains(approved), "{}", p.body);
}

#[test]
fn an_approval_answered_in_the_console_lets_the_session_continue() {
    let (_s, config, store) = setup("console-approve");
    let server = Server::start(&config, &store);
    let id = server.submit(ACME, APPROVAL_PROGRAM, "supervised");
    let v = server.wait_for(ACME, &id, Duration::from_secs(30), |v| {
        v["status"] == "waiting_approval"
    });
    let approval = v["pending_approvals"][0]
        .as_str()
        .expect("pending")
        .to_string();
    let c = login(&server, ACME);
    let marker = format!("data-approval=\"{approval}\"");
    let page = c.get_until(&server, "/approvals", &marker);
    assert!(page.body.contains(&marker), "{}", page.body);
    assert!(
        page.body.contains("delete_file") && page.body.contains("tmp/a.log"),
        "{}",
        page.body
    );
    let path = format!("/sessions/{id}/approve");
    let no = c.post(
        &server,
        &path,
        &[("approval_id", &approval), ("decision", "allow")],
    );
    assert_eq!(no.status, 403, "no token, no answer");
    allow_from_the_approvals_page(&c, &server, &id, &approval);
    let again = c.post(
        &server,
        &path,
        &[
            ("csrf", &c.csrf),
            ("approval_id", &approval),
            ("decision", "deny"),
        ],
    );
    assert_eq!(again.status, 409, "{}", again.body);
}

#[test]
fn an_approval_waiting_on_another_worker_is_listed_and_answered_in_this_ones_console() {
    // Many workers on one PostgreSQL database behind one address: the
    // console of a worker that does not run the session lists its request
    // and forwards the answer (it used to list nothing and answer 409).
    if !Backend::Postgres.available("console_cross_approval") {
        return;
    }
    let (s, config, _) = setup("console-cross-approve");
    let store = Backend::Postgres.store(&s, "console_cross_approval");
    let a = Server::start(&config, &store);
    let b = Server::start(&config, &store);
    let id = a.submit(ACME, APPROVAL_PROGRAM, "supervised");
    let approval = a.pending_approval(ACME, &id);
    let c = login(&b, ACME);
    let marker = format!("data-approval=\"{approval}\"");
    for page in ["/approvals".to_string(), format!("/sessions/{id}")] {
        let p = c.get_until(&b, &page, &marker);
        assert!(
            p.body.contains(&marker) && p.body.contains("tmp/a.log"),
            "{page}: {}",
            p.body
        );
    }
    allow_from_the_approvals_page(&c, &b, &id, &approval);
    assert!(!c.get(&b, "/approvals").body.contains(&marker));
}

#[test]
fn a_client_venue_call_is_marked_in_the_timeline() {
    let (_s, config, store) = setup("console-client");
    let server = Server::start(&config, &store);
    let (status, v) = server.call(
        "POST",
        "/v1/sessions",
        Some(ACME),
        Some(&serde_json::json!({"program": CLIENT_PROGRAM, "profile": "client", "capabilities": {"tools": ["confirm"]}})),
    );
    assert_eq!(status, 201, "{v}");
    let id = v["id"].as_str().expect("id").to_string();
    let mut stream = server.stream(ACME, &id, None);
    let call = loop {
        let e = stream.next_event().expect("a tool_call comes");
        if e.event == "tool_call" {
            break e.json();
        }
    };
    // The record's status follows the event by a moment (it is set once
    // the call is handed over): waited for as the API shows it.
    server.wait_for(ACME, &id, Duration::from_secs(30), |v| {
        v["status"] == "waiting_client"
    });
    let c = login(&server, ACME);
    let page = c.get(&server, &format!("/sessions/{id}"));
    assert!(
        page.body.contains("data-status=\"waiting_client\""),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains("data-outcome=\"running\" data-venue=\"client\""),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("data-live=\"1\""),
        "a running session refreshes itself"
    );
    let (status, v) = server.call(
        "POST",
        &format!("/v1/sessions/{id}/outcomes"),
        Some(ACME),
        Some(&serde_json::json!({"call_id": call["call_id"], "ok": {"yes": true}})),
    );
    assert_eq!(status, 202, "{v}");
    let v = server.wait_final(ACME, &id, Duration::from_secs(30));
    assert_eq!(v["value"], "confirmed", "{v}");
    let page = c.get(&server, &format!("/sessions/{id}"));
    assert!(
        page.body
            .contains("data-outcome=\"ok\" data-venue=\"client\""),
        "{}",
        page.body
    );
    assert!(page.body.contains("client venue"), "{}", page.body);
}
