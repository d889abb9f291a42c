//! The model as the host's job (`lt agent --provider stdio`): for hosts in
//! other languages that have their own model client, in the manner of the
//! `lambda_tool` JSON protocol (docs/protocol.md). lt writes one
//! `model_request` line on stdout and reads one `model_reply` line from
//! stdin per request:
//!
//! ```text
//! → {"type":"model_request","id":1,"system":"…","messages":[{"role":"user","content":"Task: …"}],"samples":1,"max_tokens":4096}
//! ← {"type":"model_reply","id":1,"texts":["```lt\n…\n```"]}
//! ← {"type":"model_error","id":1,"message":"quota exhausted"}     (the session ends: status error)
//! ```
//!
//! Blank lines (only whitespace) are skipped. A line that is not one of
//! these, for another id, or with fewer texts than samples, is an error of
//! kind `malformed` (the host is a program: it is told, not retried) that
//! quotes the line (clipped to about 200 characters, control characters
//! escaped). A `model_error` is an error of kind `other`, `the host
//! reported: MESSAGE`. No line within the timeout is `timeout`; stdin
//! closed, or a line that is not UTF-8, is `transport`. Lines are read on a
//! thread, at most 16 MiB each.

use super::model::{
    ModelReply, ModelRequest, ProposeError, ProposeErrorKind, Proposer, RetryNotice,
};
use serde_json::{json, Value as Json};
use std::io::{BufRead, Read, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The longest line read from the host.
const MAX_LINE: u64 = 16 * 1024 * 1024;

/// How many characters of a host's line an error quotes.
const QUOTED_CHARS: usize = 200;

/// A host's line as an error quotes it: without its line end, at most
/// [`QUOTED_CHARS`] characters (then `…`), in double quotes, with control
/// characters, quotes and backslashes escaped as Rust does (`\n`, `\u{1b}`).
fn quote(line: &str) -> String {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let line = line.strip_suffix('\r').unwrap_or(line);
    let mut chars = line.chars();
    let head: String = chars.by_ref().take(QUOTED_CHARS).collect();
    let more = if chars.next().is_some() { "…" } else { "" };
    format!("{head:?}{more}")
}

/// A [`Proposer`] that asks the process on the other end of stdin/stdout.
pub struct StdioProposer {
    lines: Receiver<Result<String, String>>,
    next_id: u64,
    timeout: Duration,
}

impl StdioProposer {
    /// Starts reading stdin on a thread; each request waits at most
    /// `timeout` for its reply.
    pub fn new(timeout: Duration) -> StdioProposer {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            let mut lock = stdin.lock();
            loop {
                let mut buf = Vec::new();
                let read = (&mut lock).take(MAX_LINE + 1).read_until(b'\n', &mut buf);
                let item = match read {
                    Ok(0) => Err("the host closed stdin".to_string()),
                    Ok(_) if buf.len() as u64 > MAX_LINE => Err(format!(
                        "the host sent a line longer than {} MiB",
                        MAX_LINE / (1024 * 1024)
                    )),
                    Ok(_) => String::from_utf8(buf).map_err(|e| {
                        format!(
                            "the host sent a line that is not UTF-8: {}",
                            quote(&String::from_utf8_lossy(e.as_bytes()))
                        )
                    }),
                    Err(e) => Err(format!("cannot read stdin: {e}")),
                };
                let end = item.is_err();
                if tx.send(item).is_err() || end {
                    break;
                }
            }
        });
        StdioProposer {
            lines: rx,
            next_id: 0,
            timeout,
        }
    }
}

impl Proposer for StdioProposer {
    fn describe(&self) -> Json {
        json!({"provider": "stdio"})
    }

    fn complete(
        &mut self,
        request: &ModelRequest,
        _retried: &mut dyn FnMut(RetryNotice),
    ) -> Result<ModelReply, ProposeError> {
        self.next_id += 1;
        let id = self.next_id;
        let fail = |kind, message: String| ProposeError {
            kind,
            message,
            attempts: 1,
        };
        let line = json!({
            "type": "model_request",
            "id": id,
            "system": request.system,
            "messages": request.messages,
            "samples": request.samples,
            "max_tokens": request.max_tokens,
        });
        {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{line}")
                .and_then(|_| out.flush())
                .map_err(|e| {
                    fail(
                        ProposeErrorKind::Transport,
                        format!("cannot write the request: {e}"),
                    )
                })?;
        }
        // Blank lines are skipped, within the one timeout.
        let deadline = Instant::now() + self.timeout;
        let text = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(Ok(text)) if text.trim().is_empty() => continue,
                Ok(Ok(text)) => break text,
                Ok(Err(e)) => return Err(fail(ProposeErrorKind::Transport, e)),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(fail(
                        ProposeErrorKind::Timeout,
                        format!(
                            "no model_reply for request {id} within {} ms",
                            self.timeout.as_millis()
                        ),
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(fail(
                        ProposeErrorKind::Transport,
                        "the host closed stdin".into(),
                    ))
                }
            }
        };
        let malformed = |why: &str| {
            fail(
                ProposeErrorKind::Malformed,
                format!("{why}; expected {{\"type\":\"model_reply\",\"id\":{id},\"texts\":[…]}}"),
            )
        };
        let v: Json = serde_json::from_str(text.trim())
            .map_err(|_| malformed(&format!("the host's line is not JSON: {}", quote(&text))))?;
        if v.get("id").and_then(Json::as_u64) != Some(id) {
            return Err(malformed(&format!(
                "the host's line is not for request {id}: {}",
                quote(&text)
            )));
        }
        match v.get("type").and_then(Json::as_str) {
            Some("model_reply") => {
                let texts: Option<Vec<String>> = v
                    .get("texts")
                    .and_then(Json::as_array)
                    .and_then(|t| t.iter().map(|x| x.as_str().map(str::to_string)).collect());
                match texts {
                    Some(t) if t.len() as u32 >= request.samples && !t.is_empty() => {
                        Ok(ModelReply {
                            texts: t.into_iter().take(request.samples as usize).collect(),
                            usage: v.get("usage").cloned().unwrap_or(Json::Null),
                        })
                    }
                    Some(t) => Err(malformed(&format!(
                        "{} texts for {} samples",
                        t.len(),
                        request.samples
                    ))),
                    None => Err(malformed("`texts` is not an array of strings")),
                }
            }
            Some("model_error") => Err(fail(
                ProposeErrorKind::Other,
                match v.get("message").and_then(Json::as_str).map(str::trim) {
                    Some(message) if !message.is_empty() => {
                        format!("the host reported: {message}")
                    }
                    _ => format!("the host reported an error for request {id}, without a message"),
                },
            )),
            _ => Err(malformed(&format!(
                "`type` is neither model_reply nor model_error: {}",
                quote(&text)
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn quoted_lines_are_clipped_and_escaped() {
        assert_eq!(quote("hello\n"), r#""hello""#);
        assert_eq!(quote("a\u{1b}[31mb\t\"c\"\r\n"), r#""a\u{1b}[31mb\t\"c\"""#);
        let long = "é".repeat(500);
        assert_eq!(quote(&long), format!("\"{}\"…", "é".repeat(200)));
        assert_eq!(quote(&"x".repeat(200)), format!("\"{}\"", "x".repeat(200)));
    }
}
