//! The console's test bench: a real `lt serve` with two tenants (acme,
//! globex) running the support desk's Python tools on SQLite databases of
//! their own, a profile whose approvals wait for the API (`supervised`),
//! one that allows a single call (`limited`), one with a client-venue tool (`client`); and a cookie-keeping HTTP client
//! that logs in through `/login` as a browser does (no redirect followed,
//! so each answer can be inspected).
#![allow(dead_code)]

use super::serve_support::{sha256_line, Scratch, Server};
use std::path::PathBuf;
use std::time::Duration;

pub const ACME: &str = "acme-dev-key";
pub const GLOBEX: &str = "globex-dev-key";

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn support_program() -> String {
    std::fs::read_to_string(repo().join("examples/support_desk/program.lt")).expect("program")
}

/// A program that waits for an approval of `delete_file`, then calls it.
pub const APPROVAL_PROGRAM: &str = r#"effect Delete;
tool delete_file: {path: String, approval: !Approval} -{Delete}-> {deleted: String};
match approve tool delete_file {path = "tmp/a.log"} {
  Ok(a) => match exec tool delete_file {path = "tmp/a.log", approval = a} {
    Ok(d) => "deleted " ++ d.deleted,
    Err(e) => "delete failed: " ++ e
  },
  Err(why) => "not approved: " ++ why
}"#;

/// A program that asks the client (a client-venue tool) a question.
pub const CLIENT_PROGRAM: &str = r#"tool confirm: {question: String} -{Read}-> {yes: Bool};
match exec tool confirm {question = "refund?"} {
  Ok(r) => if r.yes then "confirmed" else "declined",
  Err(e) => "no answer: " ++ e
}"#;

/// A program whose text and value carry markup.
pub const XSS_PROGRAM: &str = "// <script>window.pwned = 1</script>\n\"<script>window.pwned = 2</script><img src=x onerror=\\\"window.pwned = 3\\\">\"";

/// A scratch folder with serve.toml and each tenant's tools.
pub fn setup(name: &str) -> (Scratch, PathBuf, String) {
    setup_with_model(name, None)
}

/// [`setup`], acme's task sessions asking the OpenAI-compatible model at
/// `model_url` when given.
pub fn setup_with_model(name: &str, model_url: Option<&str>) -> (Scratch, PathBuf, String) {
    let s = Scratch::new(name);
    let tools = repo().join("examples/support_desk/tools");
    for t in ["acme", "globex"] {
        let db = s.path(&format!("{t}.db"));
        let mut out = String::new();
        for name in ["lookup_account", "issue_refund", "send_reply"] {
            out.push_str(&format!(
                "[tools.{name}]\ncommand = [\"python3\", \"{}\"]\nenv = {{ LT_EXAMPLE_DB = \"{}\" }}\ntimeout_ms = 20000\n\n",
                tools.join(format!("{name}.py")).display(),
                db.display()
            ));
        }
        out.push_str("[tools.delete_file]\nfixed = { ok = { deleted = \"ok\" } }\n");
        if model_url.is_none() {
            // Task sessions have no client: a tenant with a model has no client-venue tool.
            out.push_str("[tools.confirm]\nvenue = \"client\"\n");
        }
        s.write(&format!("{t}-tools.toml"), &out);
    }
    let decls = s.write(
        "decls.lt",
        &format!(
            "{}\neffect Delete;\ntool delete_file: {{path: String, approval: !Approval}} -{{Delete}}-> {{deleted: String}};\n{}",
            std::fs::read_to_string(repo().join("examples/serve/tools.lt")).expect("decls"),
            if model_url.is_none() {
                "tool confirm: {question: String} -{Read}-> {yes: Bool};\n"
            } else {
                ""
            }
        ),
    );
    let mut config = String::new();
    for (t, key) in [("acme", ACME), ("globex", GLOBEX)] {
        config.push_str(&format!(
            r#"
[tenants.{t}]
keys = ["{k}"]
declarations = "{d}"
executors = "{t}-tools.toml"
[tenants.{t}.profiles.support]
allow = ["lookup_account", "issue_refund", "send_reply"]
[tenants.{t}.profiles.limited]
allow = ["lookup_account", "issue_refund", "send_reply"]
max_calls = 1
[tenants.{t}.profiles.client]
allow = ["confirm"]
[tenants.{t}.profiles.supervised]
allow = ["delete_file"]
approvals = "api"
"#,
            k = sha256_line(key),
            d = decls.display(),
        ));
    }
    if let Some(url) = model_url {
        config.push_str(&format!(
            "[tenants.acme.model]\nprovider = \"openai\"\nmodel = \"fake-model\"\nbase_url = \"{url}\"\nmax_retries = 0\n"
        ));
    }
    let config = s.write("serve.toml", &config);
    let store = format!("sqlite:{}", s.path("data/lt.db").display());
    (s, config, store)
}

/// An answer: status, headers we look at, body.
pub struct Answer {
    pub status: u16,
    pub location: Option<String>,
    /// The `Retry-After` header, if any.
    pub retry_after: Option<String>,
    pub set_cookies: Vec<String>,
    pub body: String,
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .redirects(0)
        .timeout(Duration::from_secs(60))
        .build()
}

/// A request to `server` with `cookie` (a `Cookie` header value) and, for
/// a POST, a form body.
pub fn request(
    server: &Server,
    method: &str,
    path: &str,
    cookie: &str,
    form: Option<&[(&str, &str)]>,
) -> Answer {
    let mut req = agent().request(method, &format!("{}{path}", server.url));
    if !cookie.is_empty() {
        req = req.set("Cookie", cookie);
    }
    let resp = match form {
        Some(f) => req.send_form(f),
        None => req.call(),
    };
    let resp = match resp {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {path}: {e}"),
    };
    Answer {
        status: resp.status(),
        location: resp.header("location").map(str::to_string),
        retry_after: resp.header("retry-after").map(str::to_string),
        set_cookies: resp
            .all("set-cookie")
            .into_iter()
            .map(str::to_string)
            .collect(),
        body: resp.into_string().unwrap_or_default(),
    }
}

/// The value of `name=…` in a `Set-Cookie` line.
pub fn cookie_value<'a>(set_cookies: &'a [String], name: &str) -> Option<&'a str> {
    set_cookies.iter().find_map(|c| {
        c.split(';')
            .next()
            .and_then(|kv| kv.split_once('='))
            .filter(|(k, _)| *k == name)
            .map(|(_, v)| v)
    })
}

/// The first hidden `csrf` field's value in a page.
pub fn csrf_of(body: &str) -> Option<String> {
    let at = body.find("name=\"csrf\" value=\"")? + "name=\"csrf\" value=\"".len();
    body[at..].split('"').next().map(str::to_string)
}

/// A logged-in browser, over plain HTTP.
pub struct Client {
    pub cookie: String,
    pub csrf: String,
    /// The `Set-Cookie` line of the login.
    pub set_cookie: String,
}

/// Logs in with `key` as a browser would: GET /login, POST the form.
pub fn login(server: &Server, key: &str) -> Client {
    let form = request(server, "GET", "/login", "", None);
    assert_eq!(form.status, 200, "{}", form.body);
    let pre = cookie_value(&form.set_cookies, "lt_login_csrf").expect("the login form's cookie");
    let token = csrf_of(&form.body).expect("the login form's token");
    let done = request(
        server,
        "POST",
        "/login",
        &format!("lt_login_csrf={pre}"),
        Some(&[("csrf", &token), ("key", key)]),
    );
    assert_eq!(done.status, 303, "{}", done.body);
    let value = cookie_value(&done.set_cookies, "lt_console").expect("the session cookie");
    let cookie = format!("lt_console={value}");
    let home = request(server, "GET", "/", &cookie, None);
    assert_eq!(home.status, 200, "{}", home.body);
    Client {
        csrf: csrf_of(&home.body).expect("a csrf token on the page"),
        set_cookie: done
            .set_cookies
            .iter()
            .find(|c| c.starts_with("lt_console="))
            .cloned()
            .unwrap_or_default(),
        cookie,
    }
}

impl Client {
    pub fn get(&self, server: &Server, path: &str) -> Answer {
        request(server, "GET", path, &self.cookie, None)
    }

    /// GETs `path` until its body contains `text` (10 s at most; the
    /// page with it). A session's status reaches the store a moment after
    /// the API shows it waiting, and the approvals page lists sessions by
    /// the stored status.
    pub fn get_until(&self, server: &Server, path: &str, text: &str) -> Answer {
        let until = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let page = self.get(server, path);
            if page.body.contains(text) || std::time::Instant::now() > until {
                return page;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    pub fn post(&self, server: &Server, path: &str, form: &[(&str, &str)]) -> Answer {
        request(server, "POST", path, &self.cookie, Some(form))
    }
}
