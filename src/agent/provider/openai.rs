//! The OpenAI chat-completions wire format (also spoken by ollama, vLLM,
//! llama.cpp's server, LiteLLM, OpenRouter and most other gateways).
//!
//! Source: OpenAI API reference, "Chat → Create chat completion"
//! (<https://platform.openai.com/docs/api-reference/chat/create>).
//!
//! Request, `POST {base_url}/chat/completions` with `Authorization: Bearer
//! KEY`:
//!
//! ```json
//! {"model": "gpt-4o", "max_tokens": 2048, "n": 3, "temperature": 0.2,
//!  "messages": [{"role": "system", "content": "…"},
//!               {"role": "user", "content": "…"}, …]}
//! ```
//!
//! `n` is left out when it is 1, `temperature` when it is not configured.
//! Reply:
//!
//! ```json
//! {"id": "chatcmpl-…", "object": "chat.completion", "model": "…",
//!  "choices": [{"index": 0, "finish_reason": "stop",
//!               "message": {"role": "assistant", "content": "…"}}],
//!  "usage": {"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21}}
//! ```
//!
//! A message's `content` is a string, `null` (a refusal or a tool call: read
//! as the empty text), or an array of parts `{"type": "text", "text": …}`
//! (some compatible servers), whose texts are joined. A choice without a
//! `message` object, or a message without a `content` key (and no
//! `refusal`), is malformed (retried), not an empty reply. When no choice
//! has any text but some carry a `refusal` string (`"content": null,
//! "refusal": "I can't help with that."`), the refusals are the replies, so
//! that the loop shows the model's own words rather than an empty answer.

use super::Parsed;
use crate::agent::model::{ModelRequest, Role};
use serde_json::{json, Value as Json};

/// The body of a request for `n` choices.
pub(super) fn request_body(
    model: &str,
    temperature: Option<f64>,
    request: &ModelRequest,
    n: u32,
) -> Json {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    messages.push(json!({"role": "system", "content": request.system}));
    for m in &request.messages {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        messages.push(json!({"role": role, "content": m.content}));
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "max_tokens": request.max_tokens,
    });
    if n > 1 {
        body["n"] = json!(n);
    }
    if let Some(t) = temperature {
        body["temperature"] = json!(t);
    }
    body
}

/// The choices' texts and the usage of a 2xx reply; `Err`: why the body is
/// not a chat completion.
pub(super) fn parse_reply(reply: &Json) -> Result<Parsed, String> {
    let Some(choices) = reply.get("choices").and_then(Json::as_array) else {
        return Err(match super::api_error_message(reply) {
            Some(message) => format!("the reply is an error, not a completion: {message}"),
            None => "the reply has no `choices` array".to_string(),
        });
    };
    if choices.is_empty() {
        return Err("the reply's `choices` array is empty".to_string());
    }
    let mut texts = Vec::with_capacity(choices.len());
    let mut refusals = Vec::with_capacity(choices.len());
    for (i, choice) in choices.iter().enumerate() {
        let Some(message) = choice.get("message").filter(|m| m.is_object()) else {
            return Err(format!("choice {i} has no `message` object"));
        };
        let refusal = message
            .get("refusal")
            .and_then(Json::as_str)
            .filter(|r| !r.trim().is_empty());
        let text = match message.get("content") {
            None if refusal.is_none() => {
                return Err(format!(
                    "choice {i}'s `message` has no `content` (nor `refusal`)"
                ))
            }
            None | Some(Json::Null) => String::new(),
            Some(Json::String(s)) => s.clone(),
            Some(Json::Array(parts)) => parts
                .iter()
                .filter(|p| p.get("type").is_none_or(|t| t == "text"))
                .filter_map(|p| p.get("text").and_then(Json::as_str))
                .collect(),
            Some(_) => return Err(format!("choice {i}'s `message.content` is not text")),
        };
        texts.push(text);
        refusals.push(refusal);
    }
    if texts.iter().all(String::is_empty) && refusals.iter().any(Option::is_some) {
        texts = refusals
            .into_iter()
            .map(|r| r.unwrap_or_default().to_string())
            .collect();
    }
    let usage = reply.get("usage").and_then(|u| {
        Some((
            u.get("prompt_tokens")?.as_u64()?,
            u.get("completion_tokens")?.as_u64()?,
        ))
    });
    Ok(Parsed { texts, usage })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::model::Message;

    #[test]
    fn content_forms() {
        let reply = json!({"choices": [
            {"message": {"content": "a"}},
            {"message": {"content": null}},
            {"message": {"content": [{"type": "text", "text": "b"}, {"type": "image_url"},
                                     {"type": "text", "text": "c"}]}},
        ], "usage": {"prompt_tokens": 3, "completion_tokens": 4}});
        let parsed = parse_reply(&reply).expect("parses");
        assert_eq!(parsed.texts, ["a", "", "bc"]);
        assert_eq!(parsed.usage, Some((3, 4)));
        assert!(parse_reply(&json!({"choices": []})).is_err());
        assert!(parse_reply(&json!({"choices": [{"message": {"content": 3}}]})).is_err());
        let err = parse_reply(&json!({"choices": [{"message": {}}]})).expect_err("no content");
        assert!(err.contains("no `content`"), "{err}");
        let err = parse_reply(&json!({"choices": [{"index": 0}]})).expect_err("no message");
        assert!(err.contains("no `message`"), "{err}");
        let err =
            parse_reply(&json!({"choices": [{"message": {"content": "a"}}, {"message": {}}]}))
                .expect_err("one without content");
        assert!(err.contains("choice 1"), "{err}");
        let err = parse_reply(&json!({"error": {"message": "busy"}})).expect_err("error");
        assert!(err.contains("busy"), "{err}");
    }

    #[test]
    fn refusals() {
        let refusal = |content: Json| json!({"message": {"role": "assistant", "content": content, "refusal": "No."}});
        // No text anywhere: the refusals are the replies.
        let reply = json!({"choices": [refusal(Json::Null), {"message": {"content": null}}]});
        assert_eq!(parse_reply(&reply).expect("parses").texts, ["No.", ""]);
        let reply = json!({"choices": [{"message": {"refusal": "No."}}]});
        assert_eq!(parse_reply(&reply).expect("parses").texts, ["No."]);
        let reply = json!({"choices": [refusal(json!(""))]});
        assert_eq!(parse_reply(&reply).expect("parses").texts, ["No."]);
        // A choice with text: the texts stand.
        let reply = json!({"choices": [refusal(Json::Null), {"message": {"content": "a"}}]});
        assert_eq!(parse_reply(&reply).expect("parses").texts, ["", "a"]);
        // A blank or non-string refusal is none.
        let reply = json!({"choices": [{"message": {"content": null, "refusal": " "}}]});
        assert_eq!(parse_reply(&reply).expect("parses").texts, [""]);
        let reply = json!({"choices": [{"message": {"content": null, "refusal": null}}]});
        assert_eq!(parse_reply(&reply).expect("parses").texts, [""]);
    }

    #[test]
    fn body_shape() {
        let request = ModelRequest {
            system: "S".into(),
            messages: vec![Message::user("u")],
            samples: 1,
            max_tokens: 10,
        };
        let body = request_body("m", None, &request, 1);
        assert_eq!(
            body,
            json!({"model": "m", "max_tokens": 10, "messages": [
                {"role": "system", "content": "S"}, {"role": "user", "content": "u"}]})
        );
        let body = request_body("m", Some(0.5), &request, 2);
        assert_eq!(
            (body["n"].clone(), body["temperature"].clone()),
            (json!(2), json!(0.5))
        );
    }
}
