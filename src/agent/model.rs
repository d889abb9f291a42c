//! The model side of the agent loop: what the loop asks a model for
//! ([`ModelRequest`]), what comes back ([`ModelReply`]), and the
//! [`Proposer`] trait that hosts implement to plug in their own client.
//!
//! The loop is provider-neutral: a request is a system prompt and a list of
//! user/assistant messages (the shape both the OpenAI chat-completions API
//! and the Anthropic Messages API take), plus how many samples to draw.
//! A provider turns it into its wire format (`provider/`).

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// Who wrote a message of the conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The loop (the task, diagnostics, run results).
    User,
    /// The model.
    Assistant,
}

/// One message of the conversation (the system prompt is separate).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its text.
    pub content: String,
}

impl Message {
    /// A message of the loop.
    pub fn user(content: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }

    /// A message of the model.
    pub fn assistant(content: impl Into<String>) -> Message {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// What the loop asks the model for.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelRequest {
    /// The system prompt (`lt prompt`'s text, or the classifier's).
    pub system: String,
    /// The conversation so far; the last message is the loop's (`User`).
    pub messages: Vec<Message>,
    /// How many independent replies (samples) to draw, at least 1.
    pub samples: u32,
    /// The most tokens per reply.
    pub max_tokens: u32,
}

/// What the model answered: one text per sample, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelReply {
    /// The reply texts, `samples` of them.
    pub texts: Vec<String>,
    /// Token usage as the provider reported it (`{"input": n, "output": m}`,
    /// summed over the samples), or `null`.
    pub usage: Json,
}

/// Why a model request failed, after the retries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProposeErrorKind {
    /// The connection failed, or was cut.
    Transport,
    /// No answer within the request timeout.
    Timeout,
    /// HTTP 429 (rate limited) every time.
    RateLimited,
    /// HTTP 401/403: the API key is missing or wrong (not retried).
    Auth,
    /// Another HTTP error status (4xx are not retried, 5xx are).
    Status,
    /// The body was not the API's reply shape (not JSON, no text).
    Malformed,
    /// A configuration problem found before any request (no API key, bad URL).
    Config,
    /// The host's proposer gave up for its own reason.
    Other,
}

impl ProposeErrorKind {
    /// The kind's name in logs and JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            ProposeErrorKind::Transport => "transport",
            ProposeErrorKind::Timeout => "timeout",
            ProposeErrorKind::RateLimited => "rate_limited",
            ProposeErrorKind::Auth => "auth",
            ProposeErrorKind::Status => "status",
            ProposeErrorKind::Malformed => "malformed",
            ProposeErrorKind::Config => "config",
            ProposeErrorKind::Other => "other",
        }
    }
}

/// A model request that failed for good (after the retries).
#[derive(Clone, Debug, PartialEq)]
pub struct ProposeError {
    /// What went wrong.
    pub kind: ProposeErrorKind,
    /// One sentence, with the HTTP status and the body's error text when
    /// there is one.
    pub message: String,
    /// How many HTTP attempts were made.
    pub attempts: u32,
}

impl std::fmt::Display for ProposeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({} after {} attempt{})",
            self.message,
            self.kind.as_str(),
            self.attempts,
            if self.attempts == 1 { "" } else { "s" }
        )
    }
}

/// One failed attempt that will be retried, reported to the loop (which
/// logs it as `model_retried`).
#[derive(Clone, Debug, PartialEq)]
pub struct RetryNotice {
    /// The attempt that failed, from 1.
    pub attempt: u32,
    /// Why.
    pub kind: ProposeErrorKind,
    /// The message.
    pub message: String,
    /// How long the proposer waits before the next attempt, in ms
    /// (`Retry-After` when the server sent one, else the backoff).
    pub delay_ms: u64,
}

/// A source of programs: the agent's model. Implemented by the HTTP
/// providers (`provider::HttpProposer`: OpenAI-compatible and Anthropic), by the recorded
/// replies of a log (replay), and by hosts with their own model client.
///
/// `complete` returns `request.samples` texts or an error; it retries what
/// is worth retrying itself and reports each retry through `retried`.
pub trait Proposer {
    /// What to record about the model in `agent_started`
    /// (`{"provider": …, "model": …, "base_url": …}`; never a key).
    fn describe(&self) -> Json;

    /// Asks the model. Errors: the request failed for good.
    fn complete(
        &mut self,
        request: &ModelRequest,
        retried: &mut dyn FnMut(RetryNotice),
    ) -> Result<ModelReply, ProposeError>;
}
