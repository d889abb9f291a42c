//! `http` executors: one POST per call.
//!
//! The argument is the request body (`Content-Type: application/json`),
//! plus any configured headers. A 2xx response's body is the result: JSON,
//! or an empty (whitespace-only) body for `null`. Any other status is a
//! failure carrying the start of the body. Redirects are not followed (a
//! 3xx is a failure), so a POST is never silently turned into a GET. The
//! body is capped at [`super::MAX_OUTPUT_BYTES`]; like a command's stdout it
//! may be nested to any depth.

use super::command::MAX_OUTPUT_BYTES;
use super::text::{excerpt, parse_json, to_json_bytes};
use crate::runtime::host::{FailureKind, Outcome, ToolFailure};
use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use reqwest::{Client, Url};
use serde_json::Value as Json;
use std::time::Duration;

/// An `http` executor.
#[derive(Debug)]
pub(crate) struct HttpTool {
    url: Url,
    headers: HeaderMap,
    pub(crate) timeout: Duration,
}

/// How much of a failing response's body goes into the message.
const BODY_EXCERPT_CHARS: usize = 2000;

impl HttpTool {
    pub(crate) fn new(url: Url, headers: HeaderMap, timeout: Duration) -> HttpTool {
        HttpTool {
            url,
            headers,
            timeout,
        }
    }

    pub(crate) fn describe(&self) -> String {
        format!(
            "http POST {} (timeout {} ms)",
            self.url,
            self.timeout.as_millis()
        )
    }

    /// POSTs `arg`; gives up after `timeout` (already the smaller of the
    /// tool's and the run's).
    pub(crate) async fn call(
        &self,
        client: &Client,
        name: &str,
        arg: &Json,
        timeout: Duration,
        key: Option<&str>,
    ) -> Outcome {
        match tokio::time::timeout(timeout, self.exchange(client, name, arg, key)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(ToolFailure {
                stderr: None,
                kind: FailureKind::TimedOut,
                message: format!("tool {name} timed out after {} ms", timeout.as_millis()),
            }),
        }
    }

    async fn exchange(
        &self,
        client: &Client,
        name: &str,
        arg: &Json,
        key: Option<&str>,
    ) -> Outcome {
        let fail = |kind, message| {
            Err(ToolFailure {
                kind,
                message,
                stderr: None,
            })
        };
        let mut request = client.post(self.url.clone()).headers(self.headers.clone());
        if let Some(k) = key.and_then(|k| HeaderValue::from_str(k).ok()) {
            request = request.header("Idempotency-Key", k);
        }
        let sent = request
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(to_json_bytes(arg))
            .send()
            .await;
        let mut response = match sent {
            Ok(r) => r,
            Err(e) if e.is_timeout() => {
                return fail(
                    FailureKind::TimedOut,
                    format!("tool {name} timed out: {}", chain(&e)),
                )
            }
            Err(e) => {
                return fail(
                    FailureKind::Unavailable,
                    format!(
                        "tool {name} could not be reached at {}: {}",
                        self.url,
                        chain(&e)
                    ),
                )
            }
        };
        let status = response.status();
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > MAX_OUTPUT_BYTES {
                        return fail(
                            FailureKind::BadOutput,
                            format!(
                                "tool {name} returned a response body larger than {} MiB",
                                MAX_OUTPUT_BYTES / (1024 * 1024)
                            ),
                        );
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => {
                    return fail(
                        FailureKind::Unavailable,
                        format!(
                            "tool {name}: the response (HTTP {status}) broke off: {}",
                            chain(&e)
                        ),
                    )
                }
            }
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            let text = text.trim();
            let detail = if text.is_empty() {
                "no response body".to_string()
            } else {
                excerpt(text.as_bytes(), BODY_EXCERPT_CHARS)
            };
            return fail(
                FailureKind::Failed,
                format!("tool {name} failed (HTTP {status}): {detail}"),
            );
        }
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Json::Null);
        }
        if let Err(why) = super::text::check_shape(&body) {
            return Err(ToolFailure {
                stderr: None,
                kind: FailureKind::BadOutput,
                message: format!("tool {name} returned a body that lt refuses: {why}"),
            });
        }
        parse_json(&body).map_err(|e| ToolFailure {
            stderr: None,
            kind: FailureKind::BadOutput,
            message: format!(
                "tool {name} returned a body that is not JSON: {e} (body starts: {:?})",
                excerpt(&body, 80)
            ),
        })
    }
}

/// An error and its sources, `: `-separated (reqwest's own message is terse:
/// "error sending request"; the cause is in the chain). Also used by the
/// model providers (`agent::provider`).
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}
