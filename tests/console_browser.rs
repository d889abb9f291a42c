//! The console in a real browser: headless Chromium (Debian's `chromium`
//! and `chromium-driver`, which `.ci/run` installs) driven over WebDriver
//! against the real `lt serve`. It logs in, opens the sessions page (and
//! sees a new session appear without a reload), follows a session to its
//! timeline and replays it, approves a waiting approval and sees the
//! session continue, finds another tenant's session unreachable and
//! markup inert, and logs out. A screenshot of each page is saved under
//! `target/tmp/console-screenshots/`. Without Chromium the test says
//! loudly that it is skipped; under CI (`CI=true`) it fails instead.

#[path = "support/console.rs"]
mod console_support;
#[path = "support/serve.rs"]
mod serve_support;
#[path = "support/webdriver.rs"]
mod webdriver;

use console_support::*;
use serve_support::Server;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use webdriver::Browser;

fn shots() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots")
}

/// Waits up to `secs` for `pred` over the element `css`'s attribute `name`.
fn wait_attr(b: &Browser, css: &str, name: &str, secs: u64, pred: impl Fn(&str) -> bool) -> String {
    let until = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(e) = b.find(css) {
            let v = b.attr(&e, name);
            if pred(&v) {
                return v;
            }
        }
        assert!(
            Instant::now() < until,
            "{css}[{name}] never matched: {}",
            b.source()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn in_chromium_a_user_logs_in_follows_a_session_approves_and_cannot_reach_another_tenant() {
    let Some((chromium, driver)) = webdriver::available("console_browser") else {
        return;
    };
    let (_s, config, store) = setup("console-browser");
    let server = Server::start(&config, &store);
    let done = server.submit(ACME, &support_program(), "support");
    server.wait_final(ACME, &done, Duration::from_secs(60));
    let xss = server.submit(ACME, XSS_PROGRAM, "support");
    server.wait_final(ACME, &xss, Duration::from_secs(60));
    let theirs = server.submit(GLOBEX, &support_program(), "support");
    server.wait_final(GLOBEX, &theirs, Duration::from_secs(60));
    let waiting = server.submit(ACME, APPROVAL_PROGRAM, "supervised");
    server.wait_for(ACME, &waiting, Duration::from_secs(30), |v| {
        v["status"] == "waiting_approval"
    });

    let b = Browser::start(&chromium, &driver);
    // Not logged in: the console sends to the login page.
    b.goto(&format!("{}/", server.url));
    let key = b.wait("#key", 20);
    assert!(b.url().ends_with("/login"), "{}", b.url());
    b.screenshot(&shots().join("login.png"));
    b.type_into(&key, "not-a-key");
    b.click(&b.wait("#login", 5));
    let err = b.wait("#login-error", 10);
    assert!(b.text(&err).contains("not valid"));
    b.type_into(&b.wait("#key", 5), ACME);
    b.click(&b.wait("#login", 5));

    // The sessions page: acme's sessions, newest first, none of globex's.
    let table = b.wait("#sessions", 10);
    assert_eq!(b.text(&b.wait("#tenant", 5)), "acme");
    let text = b.text(&table);
    assert!(text.contains(&done) && text.contains(&waiting), "{text}");
    assert!(
        !text.contains(&theirs),
        "another tenant's session is not listed"
    );
    let rows = b.find_all("#sessions tbody tr");
    assert_eq!(rows.len(), 3);
    assert_eq!(b.attr(&rows[0], "data-id"), waiting, "newest first");
    // The HttpOnly cookie is out of the page's reach.
    assert_eq!(b.run("return document.cookie;"), serde_json::json!(""));
    // A session started now shows up without a reload.
    let fresh = server.submit(ACME, "\"hello\"", "support");
    b.wait(&format!("#sessions tr[data-id=\"{fresh}\"]"), 15);
    b.screenshot(&shots().join("sessions.png"));
    // Filter by tool: only the session that called lookup_account.
    b.type_into(&b.wait("#tool", 5), "lookup_account");
    b.click(&b.wait("#filter", 5));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !b.url().contains("tool=lookup_account") {
        assert!(std::time::Instant::now() < deadline, "{}", b.url());
        std::thread::sleep(Duration::from_millis(100));
    }
    let rows = b.find_all("#sessions tbody tr");
    let ids: Vec<String> = rows.iter().map(|r| b.attr(r, "data-id")).collect();
    assert_eq!(ids, [done.as_str()]);
    b.screenshot(&shots().join("filtered.png"));

    // Follow a session to its timeline; replay it.
    b.click(&b.wait(
        &format!("#sessions tr[data-id=\"{done}\"] a.session-link"),
        5,
    ));
    b.wait("#timeline", 10);
    assert!(
        b.url().ends_with(&format!("/sessions/{done}")),
        "{}",
        b.url()
    );
    let calls = b.find_all("#timeline tr[data-kind=\"Call\"][data-outcome=\"ok\"]");
    assert_eq!(calls.len(), 3);
    assert_eq!(b.attr(&b.wait("#verified", 5), "data-ok"), "true");
    assert!(b
        .text(&b.wait("#value", 5))
        .contains("refund tx_000001 processed"));
    b.screenshot(&shots().join("session.png"));
    b.click(&b.wait("#replay", 5));
    let replayed = b.wait("#replay-result", 20);
    assert_eq!(b.attr(&replayed, "data-ok"), "true");
    b.screenshot(&shots().join("replay.png"));
    // Its IR, on request.
    b.click(&b.wait("#show-ir", 5));
    let ir = b.wait("#ir", 20);
    assert!(
        b.text(&ir).contains("exec lookup_account"),
        "{}",
        b.text(&ir)
    );
    b.screenshot(&shots().join("ir.png"));

    // Approve the waiting approval; the session goes on and ends.
    b.click(&b.wait("#nav-approvals", 5));
    let card = b.wait(&format!(".approval[data-session=\"{waiting}\"]"), 10);
    assert!(b.text(&card).contains("delete_file"));
    b.screenshot(&shots().join("approvals.png"));
    b.click(&b.wait(
        &format!(".approval[data-session=\"{waiting}\"] button.approve"),
        5,
    ));
    b.wait("#no-approvals", 15);
    b.goto(&format!("{}/sessions/{waiting}", server.url));
    wait_attr(&b, "#status", "data-status", 20, |s| s == "ended");
    assert!(b.text(&b.wait("#value", 10)).contains("deleted ok"));
    b.wait(
        "#timeline tr[data-kind=\"Approval\"][data-outcome=\"approved\"]",
        5,
    );
    b.screenshot(&shots().join("approved.png"));

    // Markup in a program and its value stays text.
    b.goto(&format!("{}/sessions/{xss}", server.url));
    let program = b.wait("#program", 10);
    assert!(b
        .text(&program)
        .contains("<script>window.pwned = 1</script>"));
    assert!(b.text(&b.wait("#value", 5)).contains("<img src=x"));
    assert_eq!(
        b.run("return window.pwned === undefined;"),
        serde_json::json!(true)
    );
    assert!(b.find("#value img").is_none() && b.find("main script").is_none());

    // Another tenant's session does not exist here.
    b.goto(&format!("{}/sessions/{theirs}", server.url));
    let h = b.wait("h1", 10);
    assert_eq!(b.text(&h), "Not found");
    assert!(b.find("#timeline").is_none());
    b.screenshot(&shots().join("not-found.png"));

    // Log out: the console asks for a key again.
    b.click(&b.wait("#logout", 5));
    b.wait("#key", 10);
    b.goto(&format!("{}/", server.url));
    b.wait("#key", 10);
    assert!(b.url().ends_with("/login"));
}
