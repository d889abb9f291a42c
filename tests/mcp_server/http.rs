//! `lt mcp --http`: streamable HTTP behind a bearer token and `Origin` checks.

use super::*;

/// `lt mcp --http 127.0.0.1:0 ARGS` started in `dir`: the child and its URL.
pub(super) fn http_server(
    dir: &TempDir,
    args: &[&str],
    envs: &[(&str, &str)],
) -> (std::process::Child, String) {
    let mut child = Command::new(LT)
        .args(["mcp", "--http", "127.0.0.1:0"])
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(&dir.0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lt mcp --http");
    let stderr = child.stderr.take().expect("stderr");
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stderr), &mut line).expect("a line");
    let url = line
        .trim()
        .strip_prefix("lt mcp: serving MCP at ")
        .unwrap_or_else(|| panic!("no address: {line}"))
        .to_string();
    (child, url)
}

#[test]
fn over_http_with_a_token_and_origin_checks() {
    let dir = setup("http", "");
    let mut args = ARGS.to_vec();
    args.extend([
        "--token-env",
        "LT_MCP_TOKEN",
        "--allow-origin",
        "http://localhost:3000",
    ]);
    let (mut server, url) = http_server(&dir, &args, &[("LT_MCP_TOKEN", "s3cret")]);
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let post = |auth: Option<&str>, origin: Option<&str>| {
        let mut r = ureq::post(&url)
            .set("Content-Type", "application/json")
            .set("Accept", "application/json, text/event-stream");
        if let Some(a) = auth {
            r = r.set("Authorization", a);
        }
        if let Some(o) = origin {
            r = r.set("Origin", o);
        }
        match r.send_string(init) {
            Ok(resp) => resp.status(),
            Err(ureq::Error::Status(code, _)) => code,
            Err(e) => panic!("{e}"),
        }
    };
    // The door: no token, a wrong token, a foreign origin.
    assert_eq!(post(None, None), 401);
    assert_eq!(post(Some("Bearer nope"), None), 401);
    assert_eq!(
        post(Some("Bearer s3cret"), Some("http://evil.example")),
        403
    );
    assert_eq!(
        post(Some("Bearer s3cret"), Some("http://localhost:3000")),
        200
    );
    // A real client with the token runs a program.
    let steps = client(
        &dir,
        &["--url".to_string(), url.clone()],
        &[("LT_TEST_TOKEN", "s3cret")],
        json!([
            {"list": true},
            run("match exec tool journal {line = \"over http\"} { Ok(j) => j.n, Err(e) => 0 }"),
        ]),
    );
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(
        steps[1]["tools"].as_array().map(Vec::len),
        Some(4),
        "{}",
        steps[1]
    );
    assert_eq!(steps[2]["structuredContent"]["value"], 1, "{}", steps[2]);
    assert_eq!(
        std::fs::read_to_string(dir.path("journal.txt")).expect("journal"),
        "over http\n"
    );
}

#[test]
fn over_http_an_approval_is_asked_through_elicitation() {
    use super::approvals::{approvals_setup, args, decided, SIGNED};
    let dir = approvals_setup("http-elicit");
    let (mut server, url) = http_server(&dir, &args(), &[]);
    let out = client_output(
        &dir,
        &["--url".to_string(), url],
        &[],
        json!({"elicitation": "accept", "steps": [run(SIGNED)]}),
    );
    let _ = server.kill();
    let _ = server.wait();
    let r = &out["steps"][1];
    assert_eq!(
        r["structuredContent"]["value"],
        json!({"n": 1, "why": ""}),
        "{r}"
    );
    assert_eq!(
        out["elicitations"].as_array().map(Vec::len),
        Some(1),
        "{out}"
    );
    let (decision, by, _) = decided(&dir, r);
    assert_eq!((decision.as_str(), by.as_str()), ("allow", "elicitation"));
}

/// A POST to `url` with `body` as JSON: the status and the body.
fn post_raw(url: &str, body: &str, session: Option<&str>) -> (u16, String) {
    let mut req = ureq::post(url)
        .set("Content-Type", "application/json")
        .set("Accept", "application/json, text/event-stream");
    if let Some(s) = session {
        req = req.set("Mcp-Session-Id", s);
    }
    match req.send_string(body) {
        Ok(r) => (r.status(), r.into_string().unwrap_or_default()),
        Err(ureq::Error::Status(code, r)) => (code, r.into_string().unwrap_or_default()),
        Err(e) => panic!("POST {url}: {e}"),
    }
}

#[test]
fn over_http_a_bad_body_is_400_with_a_json_rpc_error_and_delete_is_200() {
    let dir = setup("http-raw", "");
    let (mut child, url) = http_server(&dir, ARGS, &[]);
    let (status, body) = post_raw(&url, "{this is not json", None);
    assert_eq!(status, 400, "{body}");
    let j: Json = serde_json::from_str(&body).expect("a JSON-RPC error");
    assert_eq!(j["error"]["code"], -32700, "{j}");
    assert_eq!(j["id"], Json::Null, "{j}");
    let (status, body) = post_raw(&url, r#"{"hello": 1}"#, None);
    assert_eq!(status, 400, "{body}");
    let j: Json = serde_json::from_str(&body).expect("a JSON-RPC error");
    assert_eq!(j["error"]["code"], -32600, "{j}");
    // A session, then its DELETE.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}});
    let r = ureq::post(&url)
        .set("Content-Type", "application/json")
        .set("Accept", "application/json, text/event-stream")
        .send_string(&init.to_string())
        .expect("initialize");
    let session = r
        .header("Mcp-Session-Id")
        .expect("a session id")
        .to_string();
    let deleted = match ureq::delete(&url)
        .set("Mcp-Session-Id", &session)
        .set("MCP-Protocol-Version", "2025-11-25")
        .call()
    {
        Ok(r) => r.status(),
        Err(ureq::Error::Status(code, _)) => code,
        Err(e) => panic!("DELETE: {e}"),
    };
    assert_eq!(deleted, 200);
    let _ = child.kill();
    let _ = child.wait();
}
