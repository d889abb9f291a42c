//! Approvals in `lt mcp`: an `approve tool …` of a program run by
//! `run_program`, under a profile with `approvals = "prompt"`, becomes a
//! question to the person at the MCP client: an `elicitation/create`
//! request in form mode (a yes/no question naming the tool and the
//! argument), when the client declared the `elicitation` capability.
//!
//! ```text
//! session thread: ControlPlane::approve_from ── prompt ──▶ ElicitApprover::decide
//!   ──spawned on the server's runtime──▶ Peer::create_elicitation_with_timeout
//!        {message: "Approve a call of `T` with {…}?", requestedSchema: {approve: boolean}}
//!   ◀── accept {approve: true} ── granted (by "elicitation")
//!   ◀── accept {approve: false}, decline, cancel, an error, no answer in time,
//!       the run cancelled ── refused: an Err in the program, `approval_decided` deny
//! ```
//!
//! A client without the capability gets the profile's answer as before:
//! the request is refused (by `mcp`), an `Err` the program handles.
//! `approvals = "allow"` and `"deny"` are answered by the policy without
//! asking; a profile with `"api"` (`lt serve`'s) is refused at start
//! ([`super::catalog`]). On the stateless 2026-07-28 revision the question
//! is the MRTR round trip instead ([`super::mrtr`]).
//!
//! A question waits for its answer until the run's deadline or
//! `--approval-timeout-ms` ([`APPROVAL_WAIT_MS`], 5 minutes, by default),
//! whichever comes first: with no deadline (`--timeout-ms 0`) an unanswered
//! question is refused after that bound, never left waiting for ever.
//!
//! The approver blocks the session thread (as the terminal's does), never
//! the server's runtime: the request runs as a task there and its answer
//! comes back over a channel.

use crate::control::approver::{ApprovalAnswer, ApprovalQuestion, Approver, FixedApprover};
use crate::runtime::cancel::Cancel;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, Peer, ServiceError};
use rmcp::RoleServer;
use serde_json::Value as Json;

/// The `by` of an answer that came through elicitation.
pub const BY_ELICITATION: &str = "elicitation";

/// The form's one field: whether the person approves the call.
pub const APPROVE_FIELD: &str = "approve";

/// Longest argument shown in the question, in characters.
const MAX_SHOWN_ARGUMENT: usize = 500;

/// A way to ask the person at one MCP client: its peer and the runtime
/// that serves it.
#[derive(Clone)]
pub struct Asker {
    peer: Peer<RoleServer>,
    runtime: tokio::runtime::Handle,
}

impl Asker {
    /// The asker of `peer`, when its client declared form elicitation;
    /// `None` otherwise (or outside a tokio runtime).
    pub fn of(peer: &Peer<RoleServer>) -> Option<Asker> {
        if !peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
        {
            return None;
        }
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        Some(Asker {
            peer: peer.clone(),
            runtime,
        })
    }
}

/// The default of `--approval-timeout-ms`: how long a question waits for
/// the person's answer at most, whatever the run's deadline (5 minutes).
pub const APPROVAL_WAIT_MS: u64 = 300_000;

/// The approver of one `run_program` call: elicitation through `asker`
/// when there is one, else a refusal that says why. `cancel` is the run's:
/// a cancelled run stops waiting for the answer. `wait` bounds the wait
/// for an answer (the run's deadline may end it sooner).
pub fn approver(
    asker: Option<Asker>,
    cancel: Cancel,
    wait: std::time::Duration,
) -> Box<dyn Approver> {
    match asker {
        Some(asker) => Box::new(ElicitApprover { asker, cancel, wait }),
        None => Box::new(FixedApprover::new(
            false,
            "mcp",
            "the MCP client did not declare the elicitation capability, so there is no person to ask",
        )),
    }
}

/// Asks the person at the client, one elicitation per approval request.
pub struct ElicitApprover {
    asker: Asker,
    cancel: Cancel,
    wait: std::time::Duration,
}

/// The question's text: the tool and the argument (clipped).
pub fn question_text(tool: &str, argument: &Json) -> String {
    let mut shown = argument.to_string();
    if shown.chars().count() > MAX_SHOWN_ARGUMENT {
        shown = shown.chars().take(MAX_SHOWN_ARGUMENT).collect::<String>() + "…";
    }
    format!("An lt program asks to call the tool `{tool}` with {shown}. Approve this call?")
}

/// The form: one required boolean, [`APPROVE_FIELD`].
pub(super) fn form() -> ElicitationSchema {
    ElicitationSchema::builder()
        .required_bool_with(APPROVE_FIELD, |b| {
            b.title("Approve")
                .description("true lets the program make this call; false refuses it")
        })
        .build_unchecked()
}

pub(super) fn answer(granted: bool, reason: impl Into<String>) -> ApprovalAnswer {
    ApprovalAnswer {
        granted,
        by: BY_ELICITATION.to_string(),
        reason: reason.into(),
    }
}

/// How long a question waits: the run's deadline (`time_left`) or the
/// approval bound `wait`, whichever comes first, and the reason of the
/// refusal when no answer came by then.
pub(super) fn bound(
    time_left: Option<std::time::Duration>,
    wait: std::time::Duration,
) -> (std::time::Duration, String) {
    match time_left {
        Some(t) if t <= wait => (
            t,
            "no answer from the MCP client before the run's deadline".to_string(),
        ),
        _ => (
            wait,
            format!(
                "no answer from the MCP client within {} ms (--approval-timeout-ms): refused",
                wait.as_millis()
            ),
        ),
    }
}

/// What the client's answer (or its absence) means; `timed_out` is the
/// reason when no answer came in time.
pub(super) fn interpret(
    result: Result<rmcp::model::ElicitResult, ServiceError>,
    timed_out: &str,
) -> ApprovalAnswer {
    let r = match result {
        Ok(r) => r,
        Err(ServiceError::Timeout { .. }) => return answer(false, timed_out),
        Err(e) => {
            return answer(
                false,
                format!("the MCP client did not answer the question: {e}"),
            )
        }
    };
    match r.action {
        ElicitationAction::Accept => match r.content.as_ref().and_then(|c| c.get(APPROVE_FIELD)) {
            Some(Json::Bool(true)) => answer(true, "approved by the person at the MCP client"),
            Some(Json::Bool(false)) => answer(false, "the person at the MCP client answered no"),
            _ => answer(
                false,
                format!("the MCP client's answer has no `{APPROVE_FIELD}: true`"),
            ),
        },
        ElicitationAction::Decline => answer(false, "declined by the person at the MCP client"),
        ElicitationAction::Cancel => answer(false, "cancelled by the person at the MCP client"),
        // A later revision's action: not a yes.
        other => answer(
            false,
            format!("the MCP client answered {other:?}, which is not an approval"),
        ),
    }
}

impl Approver for ElicitApprover {
    fn decide(&mut self, q: &ApprovalQuestion<'_>) -> ApprovalAnswer {
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: question_text(q.tool, q.argument),
            requested_schema: form(),
        };
        let peer = self.asker.peer.clone();
        let cancel = self.cancel.clone();
        let (wait, timed_out) = bound(q.time_left, self.wait);
        let (send, receive) = std::sync::mpsc::channel();
        self.asker.runtime.spawn(async move {
            let a = tokio::select! {
                r = peer.create_elicitation_with_timeout(params, Some(wait)) => interpret(r, &timed_out),
                _ = cancel.cancelled() => answer(false, "the run was cancelled while waiting for the approval"),
            };
            let _ = send.send(a);
        });
        receive.recv().unwrap_or_else(|_| {
            answer(
                false,
                "the question to the MCP client ended without an answer (the server is stopping)",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ElicitResult;
    use serde_json::json;

    fn accepted(content: Json) -> Result<ElicitResult, ServiceError> {
        let mut r = ElicitResult::new(ElicitationAction::Accept);
        r.content = Some(content);
        Ok(r)
    }

    #[test]
    fn only_an_explicit_yes_grants() {
        assert!(
            interpret(
                accepted(json!({"approve": true})),
                "no answer before the run's deadline"
            )
            .granted
        );
        for no in [
            json!({"approve": false}),
            json!({}),
            json!({"approve": "yes"}),
        ] {
            assert!(!interpret(accepted(no), "no answer before the run's deadline").granted);
        }
        for action in [ElicitationAction::Decline, ElicitationAction::Cancel] {
            let a = interpret(
                Ok(ElicitResult::new(action)),
                "no answer before the run's deadline",
            );
            assert!(!a.granted);
            assert_eq!(a.by, BY_ELICITATION);
        }
        let timeout = ServiceError::Timeout {
            timeout: std::time::Duration::from_secs(1),
        };
        assert!(
            interpret(Err(timeout), "no answer before the run's deadline")
                .reason
                .contains("deadline")
        );
    }

    #[test]
    fn the_question_names_the_tool_and_a_clipped_argument() {
        let q = question_text("delete_file", &json!({"path": "a.log"}));
        assert_eq!(
            q,
            "An lt program asks to call the tool `delete_file` with {\"path\":\"a.log\"}. Approve this call?"
        );
        let long = question_text("t", &json!({"s": "x".repeat(2000)}));
        assert!(long.chars().count() < 600 && long.contains('…'), "{long}");
        let schema = serde_json::to_value(form()).unwrap_or_default();
        assert_eq!(schema["properties"]["approve"]["type"], "boolean");
        assert_eq!(schema["required"], json!(["approve"]));
    }
}
