//! Approvals on the stateless 2026-07-28 revision: the MRTR
//! (multi round-trip request) input-required round trip. That revision has
//! no server-to-client requests, so an `approve tool …` whose profile
//! answer is `prompt` cannot send `elicitation/create`; the `tools/call`
//! of `run_program` answers with an `InputRequiredResult` instead, and the
//! client retries the call with the person's answer.
//!
//! ```text
//! tools/call run_program {program}
//!   ─▶ session thread (the one engine: program::run_program) ─ approve ─▶ MrtrApprover
//!        ─ Step::Ask ─▶ handler: the run paused under a random requestState
//!   ◀── {resultType: "input_required",
//!        inputRequests: {approval: elicitation/create {message, requestedSchema: {approve}, _meta: {tool, argument, reason}}},
//!        requestState: "<64 hex digits>"}
//! tools/call run_program {program, requestState, inputResponses: {approval: {action, content}}}
//!   ─▶ the paused run taken (once) ─ the answer ─▶ the same session goes on
//!   ◀── the result (or the next approval's InputRequiredResult)
//! ```
//!
//! The paused run stays on its thread, keyed by the request state (32
//! random bytes, never derived from the program): the state is a handle,
//! not data, so a client can neither forge nor replay it (it is taken on
//! its first use). A retry that does not come within the question's bound
//! (`--approval-timeout-ms`, or the run's deadline if sooner), or the
//! client's hang-up (stdin ended), refuses the approval and cancels the
//! run: `approval_decided` deny and `session_ended` cancelled are logged,
//! and nothing more runs. The decision is logged as any other approval's,
//! `by: "elicitation"`. At most [`MAX_PAUSED`] runs wait at once (each
//! holds its session thread); a question past them is refused.

use super::approval::{answer, bound, form, interpret, question_text};
use super::program::Reply;
use crate::control::approver::{ApprovalAnswer, ApprovalQuestion, Approver};
use crate::runtime::cancel::Cancel;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest, InputRequests,
    InputRequiredResult, InputResponses, RequestMetaObject,
};
use serde_json::{json, Value as Json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// The key of the approval's question in `inputRequests` and of its answer
/// in `inputResponses`.
pub const INPUT_KEY: &str = "approval";

/// The `_meta` key of the question's structured form (tool, argument, reason).
pub const META_KEY: &str = "lt/approval";

/// Most runs paused at once (each holds a session thread until its retry
/// or its bound); a question past them is refused.
pub const MAX_PAUSED: usize = 256;

/// Why a question is asked at all.
const REASON: &str = "the server's profile leaves approvals to a person (approvals = \"prompt\")";

/// What a session thread tells the request that awaits it.
pub enum Step {
    /// The program reached an approval the profile leaves to a person.
    Ask(Question),
    /// The run (or check) is over: its reply.
    Done(Reply),
}

/// One approval waiting for the person's answer.
pub struct Question {
    /// The tool the approval is for.
    pub tool: String,
    /// The argument of the approved call.
    pub argument: Json,
    /// How long the answer may take.
    pub wait: Duration,
    /// The refusal's reason when no answer came within `wait`.
    pub timed_out: String,
    reply: std::sync::mpsc::Sender<ApprovalAnswer>,
}

impl Question {
    /// Gives the answer to the waiting session.
    pub fn answer(self, a: ApprovalAnswer) {
        let _ = self.reply.send(a);
    }

    /// The `inputRequests` that ask it: one form elicitation, its `_meta`
    /// naming the tool, the argument and why a person is asked.
    pub fn input_requests(&self) -> InputRequests {
        let mut meta = RequestMetaObject::default();
        meta.0 .0.insert(
            META_KEY.to_string(),
            json!({"tool": self.tool, "argument": self.argument, "reason": REASON}),
        );
        let params = ElicitRequestParams::FormElicitationParams {
            meta: Some(meta),
            message: question_text(&self.tool, &self.argument),
            requested_schema: form(),
        };
        let mut requests = InputRequests::new();
        requests.insert(
            INPUT_KEY.to_string(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        );
        requests
    }
}

/// The answer a retry's `inputResponses` carries for the question.
pub fn answer_of(responses: Option<&InputResponses>) -> ApprovalAnswer {
    match responses.and_then(|r| r.get(INPUT_KEY)) {
        None => answer(
            false,
            format!("the MCP client's retry carried no answer under `{INPUT_KEY}`"),
        ),
        Some(v) => match serde_json::from_value::<ElicitResult>(v.clone()) {
            Ok(r) => interpret(Ok(r), "no answer"),
            Err(e) => answer(
                false,
                format!("the MCP client's answer is not an elicitation result: {e}"),
            ),
        },
    }
}

/// The approver of a `run_program` on 2026-07-28: each question goes to
/// the request awaiting the session, which returns it to the client.
pub struct MrtrApprover {
    steps: mpsc::UnboundedSender<Step>,
    cancel: Cancel,
    wait: Duration,
}

impl MrtrApprover {
    /// Asks through `steps`; `cancel` is the run's, `wait` the approval bound.
    pub fn new(steps: mpsc::UnboundedSender<Step>, cancel: Cancel, wait: Duration) -> MrtrApprover {
        MrtrApprover {
            steps,
            cancel,
            wait,
        }
    }
}

impl Approver for MrtrApprover {
    fn decide(&mut self, q: &ApprovalQuestion<'_>) -> ApprovalAnswer {
        if self.cancel.is_cancelled() {
            return answer(false, "the run was cancelled before the approval was asked");
        }
        let (wait, timed_out) = bound(q.time_left, self.wait);
        let (reply, answered) = std::sync::mpsc::channel();
        let question = Question {
            tool: q.tool.to_string(),
            argument: q.argument.clone(),
            wait,
            timed_out,
            reply,
        };
        if self.steps.send(Step::Ask(question)).is_err() {
            return answer(false, "no MCP request is waiting to ask the question");
        }
        // Every question is answered: by the retry, its bound, the
        // client's hang-up, or (its sender dropped) the server stopping.
        answered.recv().unwrap_or_else(|_| {
            answer(
                false,
                "the question to the MCP client ended without an answer (the server is stopping)",
            )
        })
    }
}

/// A run waiting for the retry that answers its question.
pub struct Paused {
    /// The arguments of the call that started the run: a retry must
    /// repeat them (MRTR retries the same request), or it is refused.
    pub arguments: Option<rmcp::model::JsonObject>,
    /// The run's next steps.
    pub steps: mpsc::UnboundedReceiver<Step>,
    /// The run's cancel.
    pub cancel: Cancel,
    /// The question asked.
    pub question: Question,
}

/// The paused runs of a server, by request state; shared by its sessions
/// (an HTTP client may retry on another connection).
#[derive(Clone, Default)]
pub struct PausedRuns(Arc<Mutex<HashMap<String, Paused>>>);

/// A new request state: 32 random bytes in hex.
fn new_state() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(hex::encode(bytes))
}

impl PausedRuns {
    /// Keeps `paused` and returns the `InputRequiredResult` that asks its
    /// question. After the question's bound, or when `closed` turns true
    /// (the client hung up), a run still paused is refused and cancelled.
    /// `Err`: the run, given back unpaused, and why (its question is the
    /// caller's to refuse): [`MAX_PAUSED`] runs already wait, or no random
    /// state could be made.
    pub fn pause(
        &self,
        paused: Paused,
        mut closed: watch::Receiver<bool>,
    ) -> Result<InputRequiredResult, Box<(Paused, String)>> {
        if self.len() >= MAX_PAUSED {
            return Err(Box::new((
                paused,
                format!("{MAX_PAUSED} runs already wait for an approval's answer on this server"),
            )));
        }
        let Some(state) = new_state() else {
            return Err(Box::new((
                paused,
                "no random request state could be made".to_string(),
            )));
        };
        let requests = paused.question.input_requests();
        let (wait, timed_out) = (paused.question.wait, paused.question.timed_out.clone());
        self.lock().insert(state.clone(), paused);
        let runs = self.clone();
        let key = state.clone();
        tokio::spawn(async move {
            let hung_up = async {
                if closed.wait_for(|c| *c).await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            let reason = tokio::select! {
                _ = tokio::time::sleep(wait) => timed_out,
                _ = hung_up => "the MCP client closed the connection before answering the approval".to_string(),
            };
            if let Some(p) = runs.take(&key) {
                p.cancel.cancel(reason.clone());
                p.question.answer(answer(false, reason));
            }
        });
        Ok(InputRequiredResult::new(Some(requests), Some(state)))
    }

    /// The run paused under `state`, taken (a state answers once).
    pub fn take(&self, state: &str) -> Option<Paused> {
        self.lock().remove(state)
    }

    /// Puts a run taken by a retry that was refused back under `state`
    /// (its question's bound still runs).
    pub fn put_back(&self, state: &str, paused: Paused) {
        self.lock().insert(state.to_string(), paused);
    }

    /// How many runs are paused.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no run is paused.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Paused>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_accepted_yes_in_the_retry_grants() {
        let yes: InputResponses = [(
            INPUT_KEY.to_string(),
            json!({"action": "accept", "content": {"approve": true}}),
        )]
        .into();
        assert!(answer_of(Some(&yes)).granted);
        let no: InputResponses = [(INPUT_KEY.to_string(), json!({"action": "decline"}))].into();
        assert!(!answer_of(Some(&no)).granted);
        let junk: InputResponses = [(INPUT_KEY.to_string(), json!(42))].into();
        assert!(!answer_of(Some(&junk)).granted);
        assert!(answer_of(None)
            .reason
            .contains("no answer under `approval`"));
    }

    #[test]
    fn states_are_random_and_long() {
        let (a, b) = (new_state(), new_state());
        assert_ne!(a, b);
        assert_eq!(a.map(|s| s.len()), Some(64));
    }
}
