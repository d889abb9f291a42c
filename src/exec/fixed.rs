//! `fixed` executors: canned answers, for tests and for stubbing a tool
//! that does not exist yet.
//!
//! ```toml
//! fixed = { ok = { sent = true } }                      # always this result
//! fixed = { error = "mailbox full" }                    # always this failure
//! fixed = { sequence = [ { ok = 1 }, { error = "boom" } ] }   # one per call
//! ```
//!
//! A sequence's position is an atomic counter, so concurrent calls each take
//! a distinct response. Past the end every call fails with
//! `tool NAME: fixed sequence exhausted after N calls`.

use crate::runtime::host::{FailureKind, Outcome, ToolFailure};
use serde_json::Value as Json;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One canned response.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Response {
    /// The tool's JSON result.
    Ok(Json),
    /// A failure with this message (without the `tool NAME failed: ` prefix).
    Error(String),
}

/// A `fixed` executor.
#[derive(Debug)]
pub(crate) struct FixedTool {
    responses: Vec<Response>,
    /// `true`: `responses` has one element, answered on every call.
    repeat: bool,
    next: AtomicUsize,
}

impl FixedTool {
    pub(crate) fn always(response: Response) -> FixedTool {
        FixedTool {
            responses: vec![response],
            repeat: true,
            next: AtomicUsize::new(0),
        }
    }

    pub(crate) fn sequence(responses: Vec<Response>) -> FixedTool {
        FixedTool {
            responses,
            repeat: false,
            next: AtomicUsize::new(0),
        }
    }

    pub(crate) fn describe(&self) -> String {
        match (self.repeat, self.responses.first()) {
            (true, Some(Response::Ok(v))) => format!("fixed ok {v}"),
            (true, Some(Response::Error(e))) => format!("fixed error {e:?}"),
            _ => format!("fixed sequence of {} responses", self.responses.len()),
        }
    }

    /// The next response for tool `name`.
    pub(crate) fn call(&self, name: &str) -> Outcome {
        let index = if self.repeat {
            0
        } else {
            // Saturating, so that even absurdly many calls never wrap around.
            match self
                .next
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_add(1))
            {
                Ok(n) | Err(n) => n,
            }
        };
        match self.responses.get(index) {
            Some(Response::Ok(v)) => Ok(v.clone()),
            Some(Response::Error(e)) => Err(ToolFailure {
                stderr: None,
                kind: FailureKind::Failed,
                message: format!("tool {name} failed: {e}"),
            }),
            None => Err(ToolFailure {
                stderr: None,
                kind: FailureKind::Failed,
                message: format!(
                    "tool {name}: fixed sequence exhausted after {} calls",
                    self.responses.len()
                ),
            }),
        }
    }
}
