//! One HTTP attempt: send, read the body up to the cap, classify the
//! outcome (a 2xx body, or a [`Failure`] saying whether to retry), and
//! the error texts of failures.

use super::{redact, retry, HttpProposer, MAX_REPLY_BYTES};
use crate::agent::model::ProposeErrorKind;
use reqwest::header::LOCATION;
use serde_json::Value as Json;
use std::time::Duration;

/// How many characters of an API's error message go into an error.
const DETAIL_CHARS: usize = 300;

/// A failed attempt.
pub(super) struct Failure {
    pub(super) kind: ProposeErrorKind,
    pub(super) message: String,
    /// Whether another attempt may succeed.
    pub(super) retry: bool,
    /// The server's `Retry-After`.
    pub(super) wait: Option<Duration>,
}

impl Failure {
    pub(super) fn new(kind: ProposeErrorKind, retry: bool, message: String) -> Failure {
        Failure {
            kind,
            message,
            retry,
            wait: None,
        }
    }
}

impl HttpProposer {
    pub(super) fn malformed(&self, why: String) -> Failure {
        Failure::new(
            ProposeErrorKind::Malformed,
            true,
            format!("{}: {why}", self.shown_endpoint),
        )
    }

    /// One HTTP request, blocking: a 2xx reply's body, or why not.
    pub(super) fn attempt(&self, body: Vec<u8>) -> Result<Vec<u8>, Failure> {
        let Some(runtime) = &self.runtime else {
            return Err(Failure::new(
                ProposeErrorKind::Other,
                false,
                "the proposer is shut down".to_string(),
            ));
        };
        if let Some(f) = self.cancelled() {
            return Err(f);
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return runtime.block_on(self.cancellable(body));
        }
        // Inside some tokio runtime, whose thread must not block_on: use a
        // thread of our own.
        std::thread::scope(|s| {
            s.spawn(|| runtime.block_on(self.cancellable(body)))
                .join()
                .unwrap_or_else(|_| {
                    Err(Failure::new(
                        ProposeErrorKind::Other,
                        false,
                        "the HTTP request's thread panicked".to_string(),
                    ))
                })
        })
    }

    /// [`HttpProposer::exchange`], ended early by the cancel token.
    async fn cancellable(&self, body: Vec<u8>) -> Result<Vec<u8>, Failure> {
        let Some(c) = &self.cancel else {
            return self.exchange(body).await;
        };
        tokio::select! {
            r = self.exchange(body) => r,
            () = c.cancelled() => Err(self.cancelled().unwrap_or_else(|| {
                Failure::new(ProposeErrorKind::Other, false, "the session was cancelled".into())
            })),
        }
    }

    async fn exchange(&self, body: Vec<u8>) -> Result<Vec<u8>, Failure> {
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .body(body);
        let exchange = async {
            let mut response = request.send().await.map_err(|e| self.transport(&e))?;
            let status = response.status();
            let wait = retry::retry_after(response.headers());
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(redact);
            let mut bytes = Vec::new();
            let mut over = false;
            loop {
                match response.chunk().await {
                    Ok(Some(chunk)) => {
                        let room = MAX_REPLY_BYTES - bytes.len();
                        if chunk.len() > room {
                            bytes.extend_from_slice(&chunk[..room]);
                            over = true;
                            break;
                        }
                        bytes.extend_from_slice(&chunk);
                    }
                    Ok(None) => break,
                    Err(e) => {
                        return Err(Failure::new(
                            ProposeErrorKind::Transport,
                            true,
                            format!(
                                "{}: the reply (HTTP {status}) broke off: {}",
                                self.shown_endpoint,
                                chain(&e)
                            ),
                        ))
                    }
                }
            }
            Ok((status, wait, location, bytes, over))
        };
        let (status, wait, location, bytes, over) =
            match tokio::time::timeout(self.config.timeout, exchange).await {
                Ok(result) => result?,
                Err(_) => {
                    return Err(Failure::new(
                        ProposeErrorKind::Timeout,
                        true,
                        format!(
                            "{}: no complete reply within {} ms",
                            self.shown_endpoint,
                            self.config.timeout.as_millis()
                        ),
                    ))
                }
            };
        if status.is_success() {
            if over {
                return Err(self.malformed(format!(
                    "the reply body is larger than {} MiB",
                    MAX_REPLY_BYTES / (1024 * 1024)
                )));
            }
            return Ok(bytes);
        }
        let code = status.as_u16();
        let head = format!(
            "{}: HTTP {status}: {}",
            self.shown_endpoint,
            error_detail(&bytes)
        );
        let failure = match code {
            401 | 403 => Failure::new(
                ProposeErrorKind::Auth,
                false,
                format!("{head} (check the API key, {})", self.config.kind.key_env()),
            ),
            404 => Failure::new(
                ProposeErrorKind::Status,
                false,
                format!(
                    "{head} (check the base URL, --base-url, and the model name, --model {:?})",
                    self.config.model
                ),
            ),
            300..=399 => Failure::new(
                ProposeErrorKind::Status,
                false,
                format!(
                    "{head} (a redirect to {}, not followed: use that URL's base as --base-url)",
                    location.as_deref().unwrap_or("nowhere")
                ),
            ),
            429 => Failure::new(ProposeErrorKind::RateLimited, true, head),
            c => Failure::new(ProposeErrorKind::Status, retry::status_is_retried(c), head),
        };
        Err(Failure { wait, ..failure })
    }

    fn transport(&self, e: &reqwest::Error) -> Failure {
        if e.is_timeout() {
            return Failure::new(
                ProposeErrorKind::Timeout,
                true,
                format!("{}: timed out: {}", self.shown_endpoint, chain(e)),
            );
        }
        let what = if e.is_connect() {
            "cannot connect"
        } else {
            "the request failed"
        };
        Failure::new(
            ProposeErrorKind::Transport,
            true,
            format!("{}: {what}: {}", self.shown_endpoint, chain(e)),
        )
    }
}

/// The error text an API put in a JSON body: `error.message` (OpenAI,
/// Anthropic), else `error` as a string (ollama), `message`, or `detail`
/// (FastAPI servers such as vLLM).
pub(super) fn api_error_message(body: &Json) -> Option<String> {
    let text = |v: &Json| match v {
        Json::String(s) => Some(s.clone()),
        Json::Null => None,
        other => Some(other.to_string()),
    };
    let error = body.get("error");
    error
        .and_then(|e| e.get("message"))
        .and_then(text)
        .or_else(|| error.and_then(Json::as_str).map(str::to_string))
        .or_else(|| body.get("message").and_then(text))
        .or_else(|| body.get("detail").and_then(text))
}

/// The API's error message in an error reply's body, else the start of the
/// body, clipped.
fn error_detail(body: &[u8]) -> String {
    if let Ok(json) = serde_json::from_slice::<Json>(body) {
        if let Some(message) = api_error_message(&json) {
            return clip(&message);
        }
    }
    let text = String::from_utf8_lossy(&body[..body.len().min(4096)]);
    if text.trim().is_empty() {
        "no response body".to_string()
    } else {
        clip(&text)
    }
}

/// `text` on one line (whitespace runs become one space), at most
/// [`DETAIL_CHARS`] characters (then `…`).
pub(super) fn clip(text: &str) -> String {
    let mut out = String::new();
    for (i, word) in text.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(word);
        if out.len() > DETAIL_CHARS * 4 {
            break;
        }
    }
    if out.chars().count() > DETAIL_CHARS {
        let mut clipped: String = out.chars().take(DETAIL_CHARS).collect();
        clipped.push('…');
        return clipped;
    }
    out
}

/// An error and its sources, `: `-separated (shared with the http
/// executor).
pub(super) use crate::exec::http::chain;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_texts_are_clipped() {
        let long = "é ".repeat(1000);
        assert_eq!(clip(&long).chars().count(), DETAIL_CHARS + 1);
        assert_eq!(
            error_detail(br#"{"error": {"message": "bad\nkey"}}"#),
            "bad key"
        );
        assert_eq!(
            error_detail(br#"{"error": "model not found"}"#),
            "model not found"
        );
        assert_eq!(
            error_detail(br#"{"detail": [{"msg": "x"}]}"#),
            r#"[{"msg":"x"}]"#
        );
        assert_eq!(error_detail(b"  "), "no response body");
        assert_eq!(error_detail(b"<html>\n bad gateway"), "<html> bad gateway");
    }
}
