//! The `Approver` port: who answers an approval request when the profile
//! says `approvals = "prompt"` (`allow` and `deny` are answered by the
//! policy itself, without asking).
//!
//! ```text
//! approve tool T arg ──▶ ControlPlane ── approval_requested ──▶ profile.approvals
//!     allow / deny ──▶ policy answers             prompt ──▶ Approver::decide
//!   ──▶ approval_decided {decision, by, reason} ──▶ a minted !Approval token, or Err
//! ```
//!
//! Implementations: [`TerminalApprover`] (`lt run` on a terminal),
//! [`FixedApprover`] (the same answer every time: tests, batch jobs);
//! a server answers through its API.

use serde_json::Value as Json;
use std::time::Duration;

/// One approval request, as the approver sees it.
#[derive(Clone, Copy, Debug)]
pub struct ApprovalQuestion<'a> {
    /// The session's id.
    pub session: &'a str,
    /// The request's identity (the call identity of its `approve` site).
    pub approval_id: &'a str,
    /// The tool the approval is for.
    pub tool: &'a str,
    /// The argument the approved call will be made with (without its
    /// `!Approval` fields).
    pub argument: &'a Json,
    /// The time the run has left (`None`: no deadline); an approver must
    /// answer within it, or refuse.
    pub time_left: Option<Duration>,
}

/// An approver's answer, recorded in `approval_decided`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalAnswer {
    /// Granted or refused.
    pub granted: bool,
    /// Who decided (`terminal`, `policy`, `api`, …): the event's `by`.
    pub by: String,
    /// Why, in words: the event's `reason`, and part of the program's
    /// `Err` when refused.
    pub reason: String,
}

/// Answers approval requests the profile leaves to someone
/// (`approvals = "prompt"`). Called on the session's thread; it may block
/// until the answer comes, but not past `time_left`.
pub trait Approver: Send {
    /// Decides one request.
    fn decide(&mut self, question: &ApprovalQuestion<'_>) -> ApprovalAnswer;

    /// Whether answers come from an API (`lt serve`), as a profile with
    /// `approvals = "api"` needs. When not, such a profile's requests are
    /// refused by policy without asking.
    fn answers_api(&self) -> bool {
        false
    }
}

/// The same answer to every request.
#[derive(Clone, Debug)]
pub struct FixedApprover {
    answer: ApprovalAnswer,
}

impl FixedApprover {
    /// Grants (or refuses) every request, as `by` with `reason`.
    pub fn new(granted: bool, by: impl Into<String>, reason: impl Into<String>) -> FixedApprover {
        FixedApprover {
            answer: ApprovalAnswer {
                granted,
                by: by.into(),
                reason: reason.into(),
            },
        }
    }
}

impl Approver for FixedApprover {
    fn decide(&mut self, _: &ApprovalQuestion<'_>) -> ApprovalAnswer {
        self.answer.clone()
    }
}

/// Asks on the terminal (`lt: approve a call of T with {…}? [y/N]` on
/// stderr, the answer read from stdin). Refuses (by `policy`) when stdin or
/// stderr is not a terminal, and (by `terminal`) when no answer comes
/// within the run's time left.
#[derive(Clone, Copy, Debug, Default)]
pub struct TerminalApprover;

impl Approver for TerminalApprover {
    fn decide(&mut self, q: &ApprovalQuestion<'_>) -> ApprovalAnswer {
        use std::io::{BufRead, IsTerminal, Write};
        let answer = |granted: bool, by: &str, reason: &str| ApprovalAnswer {
            granted,
            by: by.to_string(),
            reason: reason.to_string(),
        };
        if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
            return answer(
                false,
                "policy",
                "no terminal to ask (approvals = \"prompt\" needs stdin and stderr on a terminal)",
            );
        }
        let mut shown = q.argument.to_string();
        if shown.chars().count() > 300 {
            shown = shown.chars().take(300).collect::<String>() + "…";
        }
        let mut err = std::io::stderr();
        let _ = write!(err, "lt: approve a call of {} with {shown}? [y/N] ", q.tool);
        let _ = err.flush();
        // Read on a thread of its own, so that the run's deadline still holds.
        let (send, line) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::stdin().lock().read_line(&mut text);
            let _ = send.send(text);
        });
        let line = match q.time_left {
            Some(t) => line.recv_timeout(t).ok(),
            None => line.recv().ok(),
        };
        let Some(line) = line else {
            let _ = writeln!(err);
            return answer(false, "terminal", "no answer before the run's deadline");
        };
        if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            answer(true, "terminal", "approved on the terminal")
        } else {
            answer(false, "terminal", "refused on the terminal")
        }
    }
}
