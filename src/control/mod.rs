//! The control plane (seed 001): every tool call is proposed, decided,
//! dispatched and recorded.
//!
//! ```text
//! interpreter ──CallRequest──▶ ControlPlane (a Host)
//!     proposed ──▶ pipeline (profile rules, fail closed) ──▶ decided
//!     deny  ──▶ Err("denied: <rule>: <reason>") to the program
//!     dry run ──▶ completed (configured or empty answer), nothing executed
//!     allow ──▶ scheduled (flushed) ──▶ inner host (executors) ──▶ completed | failed | timed_out
//! ```
//!
//! The control plane is itself a [`Host`] wrapped around the executor host,
//! so the interpreter is unchanged: it still sees one door to the world.
//! Every event goes to an [`EventSink`] (the JSON Lines log of
//! `docs/log-format.md`); `scheduled` is written and flushed before the
//! side effect. If the log cannot be written the call is not made (fail
//! closed) and the failure is kept for the caller to report.

pub mod approver;
mod batch;
pub mod client;
pub mod pipeline;
pub mod profile;
mod record;
pub mod replay;
pub mod report;
pub mod resume;
pub mod session;
pub mod static_check;
mod value_call;

use crate::log::{CallEvent, Decision as Verdict, EventBody, EventSink};
use crate::runtime::host::{
    AnnotationEvent, Answer, ApprovalRequest, CallRequest, FailureKind, Host, Outcome, ToolFailure,
    ValueCall,
};
use crate::runtime::limits::Limits;
use crate::types::ToolSig;
use profile::Profile;
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};

pub use crate::exec::Venue;
pub use client::ClientChannel;
pub use pipeline::Pipeline;
pub use record::{empty_json, result_json};
use record::{outcome_event, record_call_to, record_to, unavailable};

/// A [`Host`] that applies a profile to every call and records it.
pub struct ControlPlane<'a, H: Host, S: EventSink> {
    inner: H,
    pipeline: Pipeline,
    tools: &'a [ToolSig],
    sink: S,
    session: String,
    log_error: Option<String>,
    limits: Limits,
    venues: BTreeMap<String, Venue>,
    idempotent: BTreeSet<String>,
    client: Option<ClientChannel>,
    approver: Box<dyn approver::Approver + 'a>,
}

impl<'a, H: Host, S: EventSink> ControlPlane<'a, H, S> {
    /// A control plane for session `session` (its id) over `inner`, under
    /// `profile`, recording to `sink`. `tools` are the program's declared tools.
    pub fn new(inner: H, profile: Profile, tools: &'a [ToolSig], sink: S, session: String) -> Self {
        ControlPlane {
            inner,
            pipeline: Pipeline::new(profile),
            tools,
            sink,
            session,
            log_error: None,
            limits: Limits::default(),
            venues: BTreeMap::new(),
            idempotent: BTreeSet::new(),
            client: None,
            approver: Box::new(approver::TerminalApprover),
        }
    }

    /// Who answers approval requests under `approvals = "prompt"` (default:
    /// [`approver::TerminalApprover`]).
    pub fn with_approver(mut self, approver: Box<dyn approver::Approver + 'a>) -> Self {
        self.approver = approver;
        self
    }

    /// The run's limits, so that the `result` the log records is what the
    /// program receives (list length and value bounds apply).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Records an event; a failure is kept (the first one) and returned.
    pub fn record(&mut self, body: EventBody) -> Result<(), String> {
        record_to(&mut self.sink, &mut self.log_error, body)
    }

    /// Records a call's `proposed`, `decided` or `scheduled`: handed
    /// borrowed to a sink that [observes](EventSink::observes) them (no
    /// log, a tap), else built and appended as [`ControlPlane::record`].
    fn record_call(&mut self, event: CallEvent<'_>) -> Result<(), String> {
        record_call_to(&mut self.sink, &mut self.log_error, event)
    }

    /// Appends `body`, the last event of an interrupted session
    /// (`session_interrupted`), even after an earlier append was refused:
    /// the session's guard refuses the outcomes of the calls it stopped, and
    /// a sink that really failed refuses this one too.
    pub fn record_last(&mut self, body: EventBody) -> Result<(), String> {
        self.sink
            .append(body)
            .map_err(|e| format!("the event log could not be written: {e}"))
    }

    /// The first failure to write the log, if any.
    pub fn log_error(&self) -> Option<&str> {
        self.log_error.as_deref()
    }

    /// Ends the session: the sink, for the caller to finish.
    pub fn into_sink(self) -> S {
        self.sink
    }

    /// Ends the session: the pipeline, its budgets charged with the calls
    /// made (an agent's next run continues with it).
    pub fn into_pipeline(self) -> Pipeline {
        self.pipeline
    }

    /// The session's profile.
    pub fn profile(&self) -> &Profile {
        self.pipeline.profile()
    }

    /// The host the control plane dispatches to.
    pub fn inner(&self) -> &H {
        &self.inner
    }

    /// The idempotency key of a call: the session id and the call identity.
    pub fn idempotency_key(&self, call_id: &str) -> String {
        format!("{}:{call_id}", self.session)
    }
}

/// The failure of a call the pipeline denied.
fn denied(decision: &pipeline::Decision) -> ToolFailure {
    ToolFailure {
        stderr: None,
        kind: FailureKind::Denied,
        message: format!("denied: {}: {}", decision.rule, decision.reason),
    }
}

/// What a dry run answers for a call of `tool`: the profile's configured
/// result, else the empty value of the tool's output type.
fn dry_run_output(policy: Option<&profile::ToolPolicy>, tool: &ToolSig) -> Json {
    policy
        .and_then(|p| p.dry_run_result.clone())
        .unwrap_or_else(|| empty_json(&tool.output))
}

/// The time a call may take: the smaller of the run's time left and the
/// profile's timeout for its tool (`None`: neither limits it).
fn within(
    time_left: Option<std::time::Duration>,
    timeout: Option<std::time::Duration>,
) -> Option<std::time::Duration> {
    match (time_left, timeout) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A call after [`ControlPlane::prepare`]: finished, or ready to dispatch.
enum Prepared<'r, 't> {
    /// Its outcome (denied, dry run, unknown, the log not writable).
    Done(Outcome),
    /// Allowed: to run at `venue`, its `scheduled` event (when `schedule`:
    /// the session records) written just before it starts.
    Dispatch {
        schedule: bool,
        venue: Venue,
        request: CallRequest<'r>,
        /// Its idempotency key (the request borrows it at dispatch), when
        /// the log, the venue or the host uses it ([`Host::uses_idempotency_keys`]).
        key: Option<String>,
        /// Its identity as text; empty when neither the log nor the key
        /// uses it (then no event is built).
        call_id: String,
        tool: &'t ToolSig,
    },
}

/// How far the log got with a call before `lt` stopped (for `lt resume`,
/// which replays the log and continues live from there).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Recorded {
    /// Nothing of the call is in the log: a call made live.
    Nothing,
    /// Nothing of the call is in the log, but the log's last line was cut
    /// short (or lines were lost), and may have been this call's
    /// `scheduled`: the first call `lt resume` makes live after a torn line.
    Lost,
    /// Its `proposed` event.
    Proposed,
    /// Its `proposed` and allowing `decided` events.
    Decided,
    /// A call of a batch (`gather`, `fan_out`) with its `proposed` and
    /// `decided` events but no `scheduled`: it was waiting for a slot, and
    /// a batch call's `scheduled` is written before it starts, so it did
    /// not start.
    Queued,
    /// Its `scheduled` event, but no outcome: the call may have started.
    Scheduled,
    /// Its `scheduled` event [`MAX_STARTS`] times (run again by as many
    /// resumes), never an outcome: lt stopped during each start, perhaps
    /// because of the call itself (a tool that kills the process running
    /// it). Not run again, idempotent or not: its outcome is unknown.
    Restarted,
}

/// How many times a call whose outcome is never recorded is started, at
/// most: a resume runs an idempotent call again until its log holds this
/// many `scheduled` events for it ([`Recorded::Restarted`]).
pub const MAX_STARTS: usize = 3;

// Every stage but `Nothing` and `Queued` means the call may have started:
// `lt` writes a single call's `proposed`, `decided` and `scheduled` together
// in one write, so a log ending in the first two (or in a torn line) lost
// the third.

impl<'a, H: Host, S: EventSink> ControlPlane<'a, H, S> {
    /// Declares where tools run and which are idempotent (from tools.toml):
    /// tools not named run on the server and are not idempotent. The sink
    /// is told the idempotent ones ([`EventSink::idempotent_tools`]).
    pub fn with_tool_traits(
        mut self,
        venues: BTreeMap<String, Venue>,
        idempotent: BTreeSet<String>,
    ) -> Self {
        self.venues = venues;
        self.sink.idempotent_tools(&idempotent);
        self.idempotent = idempotent;
        self
    }

    /// A resumed session: every call's `scheduled` is committed before the
    /// call starts, idempotent or not (the sink is told of no idempotent
    /// tool), so that its log counts each start of a call lt stops
    /// during ([`MAX_STARTS`]); a `scheduled` buffered and lost with the
    /// process would let such a call run on every resume.
    pub fn resumed(mut self) -> Self {
        self.sink.idempotent_tools(&BTreeSet::new());
        self
    }

    /// Takes over the pipeline (its budgets already charged with the calls
    /// replayed so far) from a replay of the same session.
    pub fn with_pipeline(mut self, pipeline: Pipeline) -> Self {
        self.pipeline = pipeline;
        self
    }

    /// Hands calls of client-venue tools to `channel` (`client/`); without
    /// one, such a call fails as `unavailable`.
    pub fn with_client(mut self, channel: ClientChannel) -> Self {
        self.client = Some(channel);
        self
    }

    /// Performs `request`, the log already holding the stages of it that
    /// `recorded` says (not recorded again). From any stage but
    /// [`Recorded::Nothing`] the call may have started, so it is run (again)
    /// only if its tool is idempotent; otherwise its
    /// outcome is recorded as unknown (`failed` with failure `unknown`) and
    /// the program receives `Err("outcome unknown: …")`.
    pub fn call_from(&mut self, request: CallRequest<'_>, recorded: Recorded) -> Outcome {
        match self.prepare(request, recorded) {
            Prepared::Done(outcome) => outcome,
            Prepared::Dispatch {
                schedule,
                venue,
                request,
                key,
                call_id,
                tool,
            } => {
                if schedule {
                    let event = CallEvent::Scheduled {
                        call_id: &call_id,
                        tool: &tool.name,
                        venue: venue.as_str(),
                        idempotency_key: key.as_deref().unwrap_or_default(),
                    };
                    if let Err(e) = self.record_call(event) {
                        return Err(unavailable(e));
                    }
                }
                let request = CallRequest {
                    idempotency_key: key.as_deref(),
                    ..request
                };
                let outcome = self.dispatch(venue, request);
                self.finish(tool, call_id, &outcome);
                outcome
            }
        }
    }

    /// Answers an approval request as the profile's `approvals` says
    /// (`prompt`: on the terminal), records the request (unless `requested`:
    /// the log already holds it) and the answer, and mints the token of a
    /// granted one.
    pub fn approve_from(
        &mut self,
        request: ApprovalRequest<'_>,
        requested: bool,
    ) -> Result<String, String> {
        let id = request.id.to_string();
        if self.sink.records() && !requested {
            self.record(EventBody::ApprovalRequested {
                approval_id: id.clone(),
                tool: request.tool.to_string(),
                argument: request.arg.clone(),
            })?;
        }
        let profile = self.pipeline.profile();
        let (granted, by, reason) = match profile.approvals {
            profile::ApprovalMode::Allow => (
                true,
                "policy".to_string(),
                format!(
                    "profile {} approves every request (approvals = \"allow\")",
                    profile.name
                ),
            ),
            profile::ApprovalMode::Deny => (
                false,
                "policy".to_string(),
                format!(
                    "profile {} approves nothing (approvals = \"deny\")",
                    profile.name
                ),
            ),
            profile::ApprovalMode::Api if !self.approver.answers_api() => (
                false,
                "policy".to_string(),
                format!(
                    "profile {} waits for approvals posted to lt serve's API (approvals = \"api\"), and this session has no API",
                    profile.name
                ),
            ),
            profile::ApprovalMode::Prompt | profile::ApprovalMode::Api => {
                let a = self.approver.decide(&approver::ApprovalQuestion {
                    session: &self.session,
                    approval_id: &id,
                    tool: request.tool,
                    argument: &request.arg,
                    time_left: request.time_left,
                });
                (a.granted, a.by, a.reason)
            }
        };
        let token = granted.then(|| {
            self.pipeline
                .mint(&self.session, &id, request.tool, &request.arg)
        });
        if self.sink.records() {
            self.record(EventBody::ApprovalDecided {
                approval_id: id,
                decision: if granted {
                    Verdict::Allow
                } else {
                    Verdict::Deny
                },
                by,
                reason: reason.clone(),
                token: token.clone().map_or(Json::Null, Json::String),
            })?;
        }
        token.ok_or_else(|| format!("approval for {} refused: {reason}", request.tool))
    }

    /// Records the outcome of a dispatched call.
    fn finish(&mut self, tool: &ToolSig, call_id: String, outcome: &Outcome) {
        if self.sink.records() {
            let body = outcome_event(tool, call_id, outcome, &self.limits, self.sink.payloads());
            // The outcome happened: it is returned even if it cannot be
            // logged (the caller reports the log failure and ends the session).
            let _ = self.record(body);
        }
    }

    /// Everything before a call's dispatch: proposed, decided, scheduled
    /// (as far as `recorded` has not), or the call's outcome when it ends
    /// here (denied, dry run, unknown, a log that cannot be written).
    fn prepare<'r>(&mut self, request: CallRequest<'r>, recorded: Recorded) -> Prepared<'r, 'a> {
        match self.prepare_inner(request, recorded) {
            Ok(p) => p,
            Err(outcome) => Prepared::Done(outcome),
        }
    }

    fn prepare_inner<'r>(
        &mut self,
        request: CallRequest<'r>,
        recorded: Recorded,
    ) -> Result<Prepared<'r, 'a>, Outcome> {
        let tools = self.tools;
        let Some(tool) = tools.iter().find(|t| *t.name == *request.tool) else {
            return Err(Err(unavailable(format!(
                "tool {} is not declared",
                request.tool
            ))));
        };
        let log = |r: Result<(), String>| r.map_err(|e| Err(unavailable(e)));
        // Events are built only when the sink keeps them (`--log`): without
        // a log the policy still applies, at the cost of the pipeline alone.
        let recording = self.sink.records();
        let venue = self
            .venues
            .get(request.tool)
            .copied()
            .unwrap_or(Venue::Server);
        // The call's identity as text and its idempotency key are built
        // only when used: by the log's events, by a resumed call's checks,
        // or by the tool (a client venue, a host whose tools see keys).
        let named = recording
            || recorded != Recorded::Nothing
            || venue == Venue::Client
            || self.inner.uses_idempotency_keys();
        let call_id = if named {
            request.id.to_string()
        } else {
            String::new()
        };
        if recording && recorded < Recorded::Proposed {
            log(self.record_call(CallEvent::Proposed {
                call_id: &call_id,
                tool: request.tool,
                argument: &request.arg,
            }))?;
        }
        let decision = self
            .pipeline
            .decide_explaining(tool, &request.arg, recording);
        if recording && recorded < Recorded::Decided {
            log(self.record_call(CallEvent::Decided {
                call_id: &call_id,
                decision: if decision.allow {
                    Verdict::Allow
                } else {
                    Verdict::Deny
                },
                rule: decision.rule,
                reason: &decision.reason,
            }))?;
        }
        if !decision.allow {
            return Err(Err(denied(&decision)));
        }
        let policy = self.pipeline.profile().tools.get(request.tool);
        if decision.dry_run {
            let output = dry_run_output(policy, tool);
            let outcome: Outcome = Ok(output.clone());
            if recording {
                let result = result_json(tool, &outcome, &self.limits);
                log(self.record(EventBody::Completed {
                    call_id,
                    output,
                    result,
                }))?;
            }
            return Err(outcome);
        }
        let timeout = policy.and_then(|p| p.timeout);
        let key = named.then(|| self.idempotency_key(&call_id));
        if recorded > Recorded::Nothing
            && recorded != Recorded::Queued
            && (recorded == Recorded::Restarted || !self.idempotent.contains(request.tool))
        {
            // Built: `recorded` is not `Nothing`.
            let key = key.unwrap_or_default();
            let why_not = if recorded == Recorded::Restarted {
                format!("it was started {MAX_STARTS} times, so it was not run again")
            } else {
                "the tool is not declared idempotent, so it was not run again".to_string()
            };
            let how = if recorded == Recorded::Restarted {
                format!(
                    "lt stopped during this call of {} each time it started (the process running it may have died because of it)",
                    request.tool
                )
            } else if recorded == Recorded::Scheduled {
                format!(
                    "lt stopped after starting this call of {} and before recording how it ended",
                    request.tool
                )
            } else {
                format!("lt stopped while recording this call of {} (the log's end was cut short or lost), so it may have started", request.tool)
            };
            let outcome: Outcome = Err(ToolFailure {
                stderr: None,
                kind: FailureKind::Unknown,
                message: format!("outcome unknown: {how}; {why_not} (idempotency key {key})"),
            });
            if recording && recorded < Recorded::Scheduled {
                // What the cut-short line may have said, so that the log
                // reads as every other call that may have started.
                log(self.record_call(CallEvent::Scheduled {
                    call_id: &call_id,
                    tool: request.tool,
                    venue: venue.as_str(),
                    idempotency_key: &key,
                }))?;
            }
            if recording {
                let body =
                    outcome_event(tool, call_id, &outcome, &self.limits, self.sink.payloads());
                log(self.record(body))?;
            }
            return Err(outcome);
        }
        // Written just before the call starts (see `Prepared::Dispatch`).
        let schedule = recording;
        let time_left = within(request.time_left, timeout);
        Ok(Prepared::Dispatch {
            schedule,
            venue,
            request: CallRequest {
                time_left,
                idempotency_key: None,
                ..request
            },
            key,
            call_id,
            tool,
        })
    }

    /// Runs an allowed, scheduled call at its venue.
    fn dispatch(&mut self, venue: Venue, request: CallRequest<'_>) -> Outcome {
        match venue {
            Venue::Server => self.inner.call(request),
            Venue::Client => {
                let Some(mut channel) = self.client.take() else {
                    return Err(unavailable(format!(
                        "tool {} runs in the client venue, and this session has no client channel",
                        request.tool
                    )));
                };
                // Narration events are kept like the others: a failure to
                // write them is remembered and stops the next call.
                let outcome = if self.sink.records() {
                    channel.call(request, Some(&mut |body| drop(self.record(body))))
                } else {
                    channel.call(request, None)
                };
                self.client = Some(channel);
                outcome
            }
        }
    }
}

impl<H: Host, S: EventSink> Host for ControlPlane<'_, H, S> {
    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        self.call_from(request, Recorded::Nothing)
    }

    fn call_value(&mut self, request: ValueCall<'_>) -> Option<Answer> {
        self.value_call(request)
    }

    /// Answers an approval request as the profile's `approvals` says
    /// (`prompt`: on the terminal), records the request and the answer, and
    /// mints the token of a granted one.
    fn approve(&mut self, request: ApprovalRequest<'_>) -> Result<String, String> {
        self.approve_from(request, false)
    }

    /// Records the annotation (a log that cannot be written is remembered
    /// and stops the next call, as for every event).
    fn annotation(&mut self, event: AnnotationEvent<'_>) {
        if !self.sink.records() {
            return;
        }
        let opt = |v: Option<&str>| v.map_or(Json::Null, |s| Json::String(s.to_string()));
        let body = match event {
            AnnotationEvent::Started {
                id,
                intent,
                hypothesis,
                notes,
                parent,
            } => EventBody::AnnotationStarted {
                annotation_id: id.to_string(),
                intent: intent.to_string(),
                hypothesis: opt(hypothesis),
                notes: opt(notes),
                parent: opt(parent),
            },
            AnnotationEvent::Ended { id, calls, outcome } => EventBody::AnnotationEnded {
                annotation_id: id.to_string(),
                calls: Json::Array(calls.iter().map(|c| Json::String(c.clone())).collect()),
                outcome: outcome.to_string(),
            },
        };
        let _ = self.record(body);
    }

    fn call_batch(
        &mut self,
        requests: Vec<CallRequest<'_>>,
        limit: usize,
        events: &mut dyn FnMut(crate::runtime::host::BatchEvent<'_>) -> bool,
    ) -> Vec<Outcome> {
        let staged = requests
            .into_iter()
            .map(|r| (r, Recorded::Nothing))
            .collect();
        self.call_batch_observed(staged, limit, events)
    }
}
