//! The HTTP model providers (`lt::agent::provider::HttpProposer`) against
//! the fake model server (`tests/fixtures/fake_model/server.py`): the
//! request shapes of both APIs, samples, retries (429 with `Retry-After`,
//! 5xx, malformed replies, timeouts, cut connections), final errors, and
//! the cap on a reply's size. Backoffs are 10 ms, so the file runs in a few
//! seconds (the `Retry-After: 1` test waits its second).

use crate::support::fake_model::FakeModel;
use lt::agent::model::{Message, ModelRequest, ProposeErrorKind, Proposer, RetryNotice};
use lt::agent::provider::{HttpProposer, ProviderConfig, ProviderKind};
use serde_json::{json, Value as Json};
use std::time::{Duration, Instant};

/// A config for the fake server with a test key and quick backoffs.
fn config(kind: ProviderKind, base_url: String) -> ProviderConfig {
    let mut c = ProviderConfig::new(kind, "fake-model");
    c.base_url = base_url;
    c.api_key = Some("sk-test".to_string());
    c.timeout = Duration::from_secs(10);
    c.backoff_initial = Duration::from_millis(10);
    c.backoff_max = Duration::from_secs(1);
    c
}

fn openai(server: &FakeModel) -> HttpProposer {
    HttpProposer::new(config(ProviderKind::OpenAi, server.base_url_openai())).expect("proposer")
}

fn anthropic(server: &FakeModel) -> HttpProposer {
    HttpProposer::new(config(ProviderKind::Anthropic, server.base_url_anthropic()))
        .expect("proposer")
}

fn request(samples: u32) -> ModelRequest {
    ModelRequest {
        system: "You write lt programs.".to_string(),
        messages: vec![Message::user("Refund customer 42.")],
        samples,
        max_tokens: 512,
    }
}

/// `complete`, with the retry notices.
fn complete(
    p: &mut HttpProposer,
    r: &ModelRequest,
) -> (
    Result<lt::agent::model::ModelReply, lt::agent::model::ProposeError>,
    Vec<RetryNotice>,
) {
    let mut notices = Vec::new();
    let result = p.complete(r, &mut |n| notices.push(n));
    (result, notices)
}

fn texts(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn openai_request_and_reply_shapes() {
    let server = FakeModel::start(vec![json!({"text": "let x = 1; x"})]);
    let mut cfg = config(
        ProviderKind::OpenAi,
        format!("{}/", server.base_url_openai()),
    );
    cfg.temperature = Some(0.25);
    let mut p = HttpProposer::new(cfg).expect("proposer");
    let r = ModelRequest {
        messages: vec![
            Message::user("task"),
            Message::assistant("attempt"),
            Message::user("feedback"),
        ],
        ..request(1)
    };
    let (reply, notices) = complete(&mut p, &r);
    let reply = reply.expect("reply");
    assert_eq!(reply.texts, texts(&["let x = 1; x"]));
    assert!(notices.is_empty());
    assert!(
        reply.usage["input"].as_u64().is_some_and(|n| n > 0),
        "{}",
        reply.usage
    );
    assert_eq!(reply.usage["output"], json!(3));
    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["path"], "/v1/chat/completions");
    assert_eq!(sent[0]["headers"]["authorization"], "Bearer sk-test");
    assert_eq!(sent[0]["headers"]["content-type"], "application/json");
    assert_eq!(
        sent[0]["body"],
        json!({
            "model": "fake-model",
            "max_tokens": 512,
            "temperature": 0.25,
            "messages": [
                {"role": "system", "content": "You write lt programs."},
                {"role": "user", "content": "task"},
                {"role": "assistant", "content": "attempt"},
                {"role": "user", "content": "feedback"},
            ],
        })
    );
    let described = p.describe();
    assert_eq!(
        described,
        json!({"provider": "openai", "model": "fake-model",
               "base_url": format!("{}/", server.base_url_openai())})
    );
    assert!(!format!("{p:?} {:?}", p.config()).contains("sk-test"));
}

#[test]
fn anthropic_request_and_reply_shapes() {
    let server = FakeModel::start(vec![json!({"text": "ok"})]);
    let mut p = anthropic(&server);
    let r = ModelRequest {
        messages: vec![
            Message::user("task"),
            Message::user("more"),
            Message::assistant("a"),
            Message::assistant("b"),
            Message::user("feedback"),
        ],
        ..request(1)
    };
    let (reply, _) = complete(&mut p, &r);
    let reply = reply.expect("reply");
    assert_eq!(reply.texts, texts(&["ok"]));
    assert_eq!(reply.usage["output"], json!(1));
    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["path"], "/v1/messages");
    let headers = &sent[0]["headers"];
    assert_eq!(headers["x-api-key"], "sk-test");
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    assert_eq!(headers["content-type"], "application/json");
    assert!(headers.get("authorization").is_none());
    assert_eq!(
        sent[0]["body"],
        json!({
            "model": "fake-model",
            "system": "You write lt programs.",
            "max_tokens": 512,
            "messages": [
                {"role": "user", "content": "task\n\nmore"},
                {"role": "assistant", "content": "a\n\nb"},
                {"role": "user", "content": "feedback"},
            ],
        })
    );
    assert_eq!(p.describe()["provider"], "anthropic");
}

#[test]
fn openai_samples_in_one_request() {
    let server = FakeModel::start(vec![json!({"texts": ["a", "b", "c"]})]);
    let (reply, _) = complete(&mut openai(&server), &request(3));
    assert_eq!(reply.expect("reply").texts, texts(&["a", "b", "c"]));
    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["body"]["n"], 3);
}

#[test]
fn openai_server_ignoring_n_is_asked_again() {
    let server = FakeModel::start(vec![
        json!({"text": "a"}),
        json!({"texts": ["b"]}),
        json!({"text": "c"}),
    ]);
    let (reply, notices) = complete(&mut openai(&server), &request(3));
    let reply = reply.expect("reply");
    assert_eq!(reply.texts, texts(&["a", "b", "c"]));
    assert!(notices.is_empty());
    assert_eq!(reply.usage["output"], json!(3), "summed over the requests");
    let ns: Vec<Json> = server
        .requests()
        .iter()
        .map(|r| r["body"].get("n").cloned().unwrap_or(Json::Null))
        .collect();
    assert_eq!(ns, [json!(3), json!(2), Json::Null]);
}

#[test]
fn anthropic_samples_are_separate_requests() {
    let server = FakeModel::start(vec![json!({"text": "a"}), json!({"texts": ["b", "x"]})]);
    let (reply, _) = complete(&mut anthropic(&server), &request(2));
    assert_eq!(reply.expect("reply").texts, texts(&["a", "b"]));
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    assert!(sent.iter().all(|r| r["body"].get("n").is_none()));
}

#[test]
fn openai_content_parts_and_null() {
    let body = json!({"choices": [
        {"index": 0, "message": {"role": "assistant",
            "content": [{"type": "text", "text": "x "}, {"type": "text", "text": "y"}]}},
        {"index": 1, "message": {"role": "assistant", "content": null}},
    ]});
    let server = FakeModel::start(vec![json!({"status": 200, "body": body})]);
    let (reply, _) = complete(&mut openai(&server), &request(2));
    let reply = reply.expect("reply");
    assert_eq!(reply.texts, texts(&["x y", ""]));
    assert_eq!(reply.usage, Json::Null);
}

#[test]
fn rate_limit_honours_retry_after() {
    let server = FakeModel::start(vec![
        json!({"status": 429, "headers": {"Retry-After": "1"},
               "body": {"error": {"message": "Rate limit reached", "type": "requests"}}}),
        json!({"text": "ok"}),
    ]);
    let started = Instant::now();
    let (reply, notices) = complete(&mut openai(&server), &request(1));
    assert_eq!(reply.expect("reply").texts, texts(&["ok"]));
    assert!(started.elapsed() >= Duration::from_millis(950));
    assert_eq!(notices.len(), 1);
    let n = &notices[0];
    assert_eq!(
        (n.attempt, n.kind, n.delay_ms),
        (1, ProposeErrorKind::RateLimited, 1000)
    );
    assert!(
        n.message.contains("429") && n.message.contains("Rate limit reached"),
        "{}",
        n.message
    );
}

#[test]
fn server_error_is_retried() {
    let server = FakeModel::start(vec![
        json!({"status": 500, "body": {"type": "error",
               "error": {"type": "api_error", "message": "Internal server error"}}}),
        json!({"text": "ok"}),
    ]);
    let (reply, notices) = complete(&mut anthropic(&server), &request(1));
    assert_eq!(reply.expect("reply").texts, texts(&["ok"]));
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].kind, ProposeErrorKind::Status);
    assert!(
        notices[0].delay_ms <= 10,
        "backoff: {}",
        notices[0].delay_ms
    );
    assert!(
        notices[0].message.contains("500") && notices[0].message.contains("Internal server error"),
        "{}",
        notices[0].message
    );
}

#[test]
fn malformed_reply_is_retried() {
    let server = FakeModel::start(vec![
        json!({"malformed": "<html>gateway</html>"}),
        json!({"status": 200, "body": {"id": "x", "object": "chat.completion"}}),
        json!({"text": "ok"}),
    ]);
    let (reply, notices) = complete(&mut openai(&server), &request(1));
    assert_eq!(reply.expect("reply").texts, texts(&["ok"]));
    let kinds: Vec<_> = notices.iter().map(|n| n.kind).collect();
    assert_eq!(kinds, [ProposeErrorKind::Malformed; 2]);
    assert!(notices[0].message.contains("not JSON") && notices[0].message.contains("<html>"));
    assert!(
        notices[1].message.contains("choices"),
        "{}",
        notices[1].message
    );
}

#[test]
fn timeout_is_retried() {
    // The first reply comes after a minute; the 2 s timeout cuts it short.
    // Neither figure races the machine: the second reply has 2 s to arrive
    // (it is immediate), and waiting out the slow reply would take 60 s.
    let server = FakeModel::start(vec![
        json!({"delay_ms": 60_000, "text": "late"}),
        json!({"text": "ok"}),
    ]);
    let mut cfg = config(ProviderKind::OpenAi, server.base_url_openai());
    cfg.timeout = Duration::from_secs(2);
    let started = Instant::now();
    let (reply, notices) = complete(&mut HttpProposer::new(cfg).expect("proposer"), &request(1));
    assert_eq!(reply.expect("reply").texts, texts(&["ok"]));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the slow reply was waited for: {:?}",
        started.elapsed()
    );
    // Two attempts reached the server: the one cut short, and its retry.
    assert_eq!(server.requests().len(), 2);
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].kind, ProposeErrorKind::Timeout);
    assert!(
        notices[0].message.contains("2000 ms"),
        "{}",
        notices[0].message
    );
}

#[test]
fn closed_connection_is_retried() {
    let server = FakeModel::start(vec![json!({"close": true}), json!({"text": "ok"})]);
    let (reply, notices) = complete(&mut anthropic(&server), &request(1));
    assert_eq!(reply.expect("reply").texts, texts(&["ok"]));
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].kind, ProposeErrorKind::Transport);
}

#[test]
fn refused_connection_fails_after_the_retries() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let mut cfg = config(ProviderKind::OpenAi, format!("http://127.0.0.1:{port}/v1"));
    cfg.max_retries = 2;
    let (result, notices) = complete(&mut HttpProposer::new(cfg).expect("proposer"), &request(1));
    let e = result.expect_err("nothing listens");
    assert_eq!(
        (e.kind, e.attempts, notices.len()),
        (ProposeErrorKind::Transport, 3, 2)
    );
    assert!(e.message.contains("cannot connect"), "{e}");
}

#[test]
fn unauthorized_is_not_retried() {
    let server = FakeModel::start(vec![
        json!({"status": 401, "body": {"error": {"message": "Incorrect API key provided",
               "type": "invalid_request_error", "code": "invalid_api_key"}}}),
        json!({"text": "never"}),
    ]);
    let (result, notices) = complete(&mut openai(&server), &request(1));
    let e = result.expect_err("401");
    assert_eq!((e.kind, e.attempts), (ProposeErrorKind::Auth, 1));
    assert!(notices.is_empty());
    assert!(e.message.contains("401") && e.message.contains("Incorrect API key provided"));
    assert!(e.message.contains("OPENAI_API_KEY"), "{e}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn bad_request_and_not_found_are_not_retried() {
    let server = FakeModel::start(vec![json!({"status": 400, "body": {"type": "error",
               "error": {"type": "invalid_request_error", "message": "max_tokens: too big"}}})]);
    let (result, _) = complete(&mut anthropic(&server), &request(1));
    let e = result.expect_err("400");
    assert_eq!((e.kind, e.attempts), (ProposeErrorKind::Status, 1));
    assert!(
        e.message.contains("400") && e.message.contains("max_tokens: too big"),
        "{e}"
    );

    // A wrong base URL: the server answers 404 for paths it does not serve.
    let cfg = config(
        ProviderKind::OpenAi,
        format!("{}/wrong", server.base_url_anthropic()),
    );
    let (result, _) = complete(&mut HttpProposer::new(cfg).expect("proposer"), &request(1));
    let e = result.expect_err("404");
    assert_eq!((e.kind, e.attempts), (ProposeErrorKind::Status, 1));
    assert!(
        e.message.contains("404") && e.message.contains("--base-url"),
        "{e}"
    );
    assert!(e.message.contains("/wrong/chat/completions"), "{e}");
}

#[test]
fn retries_exhausted() {
    let overloaded = json!({"status": 529, "body": {"type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"}}});
    let server = FakeModel::start(vec![overloaded.clone(), overloaded.clone(), overloaded]);
    let mut cfg = config(ProviderKind::Anthropic, server.base_url_anthropic());
    cfg.max_retries = 2;
    let (result, notices) = complete(&mut HttpProposer::new(cfg).expect("proposer"), &request(1));
    let e = result.expect_err("overloaded every time");
    assert_eq!((e.kind, e.attempts), (ProposeErrorKind::Status, 3));
    assert_eq!(
        notices.iter().map(|n| n.attempt).collect::<Vec<_>>(),
        [1, 2]
    );
    let shown = e.to_string();
    assert!(
        shown.contains("529") && shown.contains("Overloaded"),
        "{shown}"
    );
    assert!(shown.ends_with("(status after 3 attempts)"), "{shown}");
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn exhausted_script_is_a_clear_failure() {
    let server = FakeModel::start(vec![]);
    let mut cfg = config(ProviderKind::OpenAi, server.base_url_openai());
    cfg.max_retries = 0;
    let (result, _) = complete(&mut HttpProposer::new(cfg).expect("proposer"), &request(1));
    let e = result.expect_err("nothing scripted");
    assert!(e.message.contains("script is exhausted"), "{e}");
}

#[test]
fn huge_body_is_capped() {
    let huge = "x".repeat(20 * 1024 * 1024);
    let server = FakeModel::start(vec![json!({ "malformed": huge })]);
    let mut cfg = config(ProviderKind::OpenAi, server.base_url_openai());
    cfg.max_retries = 0;
    let (result, _) = complete(&mut HttpProposer::new(cfg).expect("proposer"), &request(1));
    let e = result.expect_err("too big");
    assert_eq!((e.kind, e.attempts), (ProposeErrorKind::Malformed, 1));
    assert!(e.message.contains("larger than 8 MiB"), "{e}");
}

#[test]
fn config_errors() {
    let no_key = |kind, base: &str| {
        let mut c = ProviderConfig::new(kind, "m");
        c.base_url = base.to_string();
        HttpProposer::new(c)
    };
    let e = no_key(ProviderKind::OpenAi, "https://api.openai.com/v1").expect_err("no key");
    assert_eq!((e.kind, e.attempts), (ProposeErrorKind::Config, 0));
    assert!(e.message.contains("OPENAI_API_KEY"), "{e}");
    let e = no_key(ProviderKind::Anthropic, "https://api.anthropic.com").expect_err("no key");
    assert!(e.message.contains("ANTHROPIC_API_KEY"), "{e}");
    assert!(no_key(ProviderKind::OpenAi, "http://localhost:11434/v1").is_ok());
    assert!(no_key(ProviderKind::OpenAi, "http://127.0.0.1:8000/v1").is_ok());
    let e = no_key(ProviderKind::OpenAi, "localhost:11434").expect_err("no scheme");
    assert_eq!(e.kind, ProposeErrorKind::Config);
    let mut c = config(ProviderKind::OpenAi, "not a url".to_string());
    assert_eq!(
        HttpProposer::new(c.clone()).expect_err("bad").kind,
        ProposeErrorKind::Config
    );
    c.base_url = "https://api.openai.com/v1".to_string();
    c.api_key = Some("sk\nx".to_string());
    assert_eq!(
        HttpProposer::new(c).expect_err("bad key").kind,
        ProposeErrorKind::Config
    );
}

#[test]
fn keyless_local_server_gets_no_auth_header() {
    let server = FakeModel::start(vec![json!({"text": "ok"})]);
    let mut cfg = config(ProviderKind::OpenAi, server.base_url_openai());
    cfg.api_key = None;
    let (reply, _) = complete(&mut HttpProposer::new(cfg).expect("proposer"), &request(1));
    assert_eq!(reply.expect("reply").texts, texts(&["ok"]));
    assert!(server.requests()[0]["headers"]
        .get("authorization")
        .is_none());
}

#[test]
fn works_from_inside_a_tokio_runtime() {
    let server = FakeModel::start(vec![json!({"text": "ok"})]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let texts = rt.block_on(async {
        let mut p = openai(&server);
        let reply = p.complete(&request(1), &mut |_| {});
        drop(p);
        reply.map(|r| r.texts)
    });
    assert_eq!(texts.expect("reply"), ["ok"]);
}

/// A `Retry-After` longer than lt waits (4 × `backoff_max`, here 40 s) ends
/// the call at once, saying so, instead of waiting the cap before each retry.
#[test]
fn retry_after_beyond_the_cap_fails_fast() {
    let limited = json!({"status": 429, "headers": {"Retry-After": "99999"},
        "body": {"error": {"message": "Rate limit reached", "type": "requests"}}});
    let server = FakeModel::start(vec![limited.clone(), limited, json!({"text": "never"})]);
    let mut cfg = config(ProviderKind::OpenAi, server.base_url_openai());
    cfg.backoff_max = Duration::from_secs(10);
    let started = Instant::now();
    let (result, notices) = complete(&mut HttpProposer::new(cfg).expect("proposer"), &request(1));
    // Waiting the cap would take 40 s: half of it is far beyond one local
    // request on any machine.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "waited {:?}",
        started.elapsed()
    );
    let e = result.expect_err("asked to wait too long");
    assert_eq!((e.kind, e.attempts), (ProposeErrorKind::RateLimited, 1));
    assert!(notices.is_empty());
    assert!(
        e.message.contains("429") && e.message.contains("Rate limit reached"),
        "{e}"
    );
    assert!(
        e.message
            .contains("the server asks to wait 99999 s, more than lt waits (cap 40 s): try later"),
        "{e}"
    );
    assert_eq!(server.requests().len(), 1);

    // Within the cap, it is still honoured (`retry-after-ms` too).
    let server = FakeModel::start(vec![
        json!({"status": 429, "headers": {"retry-after-ms": "200", "Retry-After": "99999"}}),
        json!({"text": "ok"}),
    ]);
    let (reply, notices) = complete(&mut openai(&server), &request(1));
    assert_eq!(reply.expect("reply").texts, texts(&["ok"]));
    assert_eq!(
        notices.iter().map(|n| n.delay_ms).collect::<Vec<_>>(),
        [200]
    );
}

/// A choice without `message`, or a message without `content`, is malformed
/// (retried), not an empty reply; `content: null` with a `refusal` gives the
/// refusal's text.
#[test]
fn openai_reply_without_content_is_malformed_and_a_refusal_is_the_text() {
    let server = FakeModel::start(vec![
        json!({"status": 200, "body": {"choices": [{"message": {}}]}}),
        json!({"status": 200, "body": {"choices": [{"index": 0, "finish_reason": "stop"}]}}),
        json!({"status": 200, "body": {"choices": [{"index": 0, "message": {"role": "assistant",
            "content": null, "refusal": "I can't help with that."}}]}}),
    ]);
    let (reply, notices) = complete(&mut openai(&server), &request(1));
    assert_eq!(
        reply.expect("reply").texts,
        texts(&["I can't help with that."])
    );
    let kinds: Vec<_> = notices.iter().map(|n| n.kind).collect();
    assert_eq!(kinds, [ProposeErrorKind::Malformed; 2]);
    assert!(
        notices[0].message.contains("no `content`"),
        "{}",
        notices[0].message
    );
    assert!(
        notices[1].message.contains("no `message`"),
        "{}",
        notices[1].message
    );

    // Nothing but malformed replies: a malformed error at the end.
    let server = FakeModel::start(vec![
        json!({"status": 200, "body": {"choices": [{"message": {}}]}}),
    ]);
    let mut cfg = config(ProviderKind::OpenAi, server.base_url_openai());
    cfg.max_retries = 0;
    let (result, _) = complete(&mut HttpProposer::new(cfg).expect("proposer"), &request(1));
    let e = result.expect_err("no content");
    assert_eq!((e.kind, e.attempts), (ProposeErrorKind::Malformed, 1));
}

/// An Anthropic reply whose `content` is missing or not an array is
/// malformed (retried), not an empty reply.
#[test]
fn anthropic_reply_without_a_content_array_is_malformed() {
    let message = |content: Option<Json>| {
        let mut body = json!({"id": "msg_1", "type": "message", "role": "assistant",
            "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}});
        if let Some(c) = content {
            body["content"] = c;
        }
        json!({"status": 200, "body": body})
    };
    let server = FakeModel::start(vec![
        message(None),
        message(Some(Json::Null)),
        message(Some(json!("text"))),
        json!({"text": "ok"}),
    ]);
    let (reply, notices) = complete(&mut anthropic(&server), &request(1));
    assert_eq!(reply.expect("reply").texts, texts(&["ok"]));
    let kinds: Vec<_> = notices.iter().map(|n| n.kind).collect();
    assert_eq!(kinds, [ProposeErrorKind::Malformed; 3]);
    assert!(
        notices[0].message.contains("no `content` array"),
        "{}",
        notices[0].message
    );
    assert!(
        notices[1].message.contains("`content` is not an array"),
        "{}",
        notices[1].message
    );
}
