//! The Anthropic Messages wire format.
//!
//! Source: Anthropic API reference, "Messages"
//! (<https://docs.anthropic.com/en/api/messages>) and "Versions"
//! (`anthropic-version: 2023-06-01`).
//!
//! Request, `POST {base_url}/v1/messages` with `x-api-key: KEY` and
//! `anthropic-version: 2023-06-01`:
//!
//! ```json
//! {"model": "claude-sonnet-4-5", "max_tokens": 2048, "system": "…",
//!  "temperature": 0.2,
//!  "messages": [{"role": "user", "content": "…"},
//!               {"role": "assistant", "content": "…"}, …]}
//! ```
//!
//! There is no `n`: each sample is its own request. The API wants the
//! messages to alternate, starting with a user message, each non-empty:
//! consecutive messages of one role are merged (joined by a blank line), a
//! conversation that would start with the assistant (or is empty) gets a
//! first user message [`OPENING`], and an empty text becomes [`EMPTY`].
//! Reply:
//!
//! ```json
//! {"id": "msg_…", "type": "message", "role": "assistant", "model": "…",
//!  "content": [{"type": "text", "text": "…"}],
//!  "stop_reason": "end_turn", "usage": {"input_tokens": 9, "output_tokens": 12}}
//! ```
//!
//! The texts of the `text` blocks are joined; other blocks (thinking, tool
//! use) are skipped. A reply without a `content` array (missing, `null`, a
//! string) is malformed (retried), not an empty reply; an empty array is
//! the empty text.

use super::Parsed;
use crate::agent::model::{Message, ModelRequest, Role};
use serde_json::{json, Value as Json};

/// The `anthropic-version` header's value.
pub(super) const VERSION: &str = "2023-06-01";

/// The first user message of a conversation that has none.
const OPENING: &str = "(The conversation begins.)";

/// The text of a message that has none (the API refuses empty ones).
const EMPTY: &str = "(empty)";

/// The messages as the API takes them: alternating, from a user message.
pub(super) fn alternate(messages: &[Message]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len() + 1);
    for m in messages {
        let text = if m.content.trim().is_empty() {
            EMPTY
        } else {
            m.content.as_str()
        };
        match out.last_mut() {
            Some(last) if last.role == m.role => {
                last.content.push_str("\n\n");
                last.content.push_str(text);
            }
            None if m.role == Role::Assistant => {
                out.push(Message::user(OPENING));
                out.push(Message::assistant(text));
            }
            _ => out.push(Message {
                role: m.role,
                content: text.to_string(),
            }),
        }
    }
    if out.is_empty() {
        out.push(Message::user(OPENING));
    }
    out
}

/// The body of a request for one sample.
pub(super) fn request_body(model: &str, temperature: Option<f64>, request: &ModelRequest) -> Json {
    let messages: Vec<Json> = alternate(&request.messages)
        .into_iter()
        .map(|m| json!({"role": m.role, "content": m.content}))
        .collect();
    let mut body = json!({
        "model": model,
        "system": request.system,
        "messages": messages,
        "max_tokens": request.max_tokens,
    });
    if request.system.is_empty() {
        if let Some(o) = body.as_object_mut() {
            o.remove("system");
        }
    }
    if let Some(t) = temperature {
        body["temperature"] = json!(t);
    }
    body
}

/// The text and usage of a 2xx reply; `Err`: why the body is not a message.
pub(super) fn parse_reply(reply: &Json) -> Result<Parsed, String> {
    let Some(blocks) = reply.get("content").and_then(Json::as_array) else {
        return Err(
            match (super::api_error_message(reply), reply.get("content")) {
                (Some(message), _) => format!("the reply is an error, not a message: {message}"),
                (None, None) => "the reply has no `content` array".to_string(),
                (None, Some(_)) => "the reply's `content` is not an array".to_string(),
            },
        );
    };
    let text: String = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Json::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Json::as_str))
        .collect();
    let usage = reply.get("usage").and_then(|u| {
        Some((
            u.get("input_tokens")?.as_u64()?,
            u.get("output_tokens")?.as_u64()?,
        ))
    });
    Ok(Parsed {
        texts: vec![text],
        usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternation() {
        let got = alternate(&[
            Message::assistant("a"),
            Message::assistant(""),
            Message::user("b"),
            Message::user("c"),
        ]);
        assert_eq!(
            got,
            [
                Message::user(OPENING),
                Message::assistant("a\n\n(empty)"),
                Message::user("b\n\nc")
            ]
        );
        assert_eq!(alternate(&[]), [Message::user(OPENING)]);
    }

    #[test]
    fn blocks() {
        let reply = json!({"content": [{"type": "thinking", "thinking": "x"},
            {"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "usage": {"input_tokens": 1, "output_tokens": 2}});
        let parsed = parse_reply(&reply).expect("parses");
        assert_eq!(
            (parsed.texts, parsed.usage),
            (vec!["ab".to_string()], Some((1, 2)))
        );
        let err = parse_reply(&json!({"type": "error", "error": {"message": "overloaded"}}))
            .expect_err("error");
        assert!(err.contains("overloaded"), "{err}");
        let err =
            parse_reply(&json!({"type": "message", "role": "assistant"})).expect_err("no content");
        assert!(err.contains("no `content` array"), "{err}");
        for content in [Json::Null, json!("a"), json!({"type": "text", "text": "a"})] {
            let err = parse_reply(&json!({"type": "message", "content": content}))
                .expect_err("content not an array");
            assert!(err.contains("not an array"), "{err}");
        }
        let parsed = parse_reply(&json!({"content": []})).expect("empty array");
        assert_eq!(parsed.texts, [""]);
    }
}
