//! Replay: re-running a session's program against its event log instead of
//! the tools.
//!
//! The interpreter is deterministic given the tool outcomes, and the log
//! holds every outcome, so feeding the recorded outcomes back must make the
//! program issue exactly the recorded calls and reach the recorded value.
//! [`ReplayHost`] answers each call from the log after checking that the
//! call is the one the log expects next (same call identity, tool and
//! argument) and that the pipeline decides it the same way (same decision
//! and rule). The first difference is a non-determinism error naming the
//! event, the expected call and the issued call; from then on every call
//! fails, so the run ends quickly, and the caller reports the divergence.

use super::pipeline::Pipeline;
use super::profile::Profile;
use super::Recorded;
use crate::log::{Decision, Event, EventBody};
use crate::runtime::host::{ApprovalRequest, CallRequest, FailureKind, Host, Outcome, ToolFailure};
use crate::runtime::limits::Limits;
use crate::types::ToolSig;
use serde_json::Value as Json;

/// What [`ReplayHost::replay_approval`] answers, when resuming, for a
/// request the log records but does not answer: the live control plane
/// answers it without recording the request again.
pub const REQUESTED_NOT_ANSWERED: &str = "(the log ends after this approval request)";

/// Where replay and the log first disagreed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// The `seq` of the event that was expected (or the last event + 1 when
    /// the log ended).
    pub seq: u64,
    /// What the log says.
    pub expected: String,
    /// What the program did.
    pub issued: String,
    /// The log simply ended there (a session cut short), rather than
    /// recording something else.
    pub log_ended: bool,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "at event #{}: the log has {}, the program issued {}",
            self.seq, self.expected, self.issued
        )
    }
}

/// A [`Host`] that answers from a session's recorded events.
pub struct ReplayHost<'a> {
    events: &'a [Event],
    next: usize,
    pipeline: Pipeline,
    tools: &'a [ToolSig],
    divergence: Option<Divergence>,
    calls: u64,
    limits: Limits,
    /// `lt resume`: a call the log records only in part ends the replay
    /// ([`Replayed::Ended`]) instead of diverging.
    resuming: bool,
}

/// What [`ReplayHost::replay_call`] made of a call.
#[derive(Debug)]
pub enum Replayed {
    /// The log holds the whole call: its outcome as the program received it
    /// (an `Err` also after a divergence, see [`ReplayHost::divergence`]).
    Answered(Outcome),
    /// The log ends within this call (or before it), having recorded the
    /// stages given: the call is to be continued live from there. The
    /// pipeline has not decided it.
    Ended(Recorded),
}

fn describe(tool: &str, call_id: &str, arg: &Json) -> String {
    let mut a = arg.to_string();
    if a.chars().count() > 120 {
        a = a.chars().take(120).collect::<String>() + "…";
    }
    format!("a call of {tool} ({call_id}) with {a}")
}

impl<'a> ReplayHost<'a> {
    /// Replays `events` (the whole log, `session_started` first) under
    /// `profile` for a program declaring `tools`.
    pub fn new(events: &'a [Event], profile: Profile, tools: &'a [ToolSig]) -> ReplayHost<'a> {
        let start = usize::from(matches!(
            events.first().map(|e| &e.body),
            Some(EventBody::SessionStarted { .. })
        ));
        ReplayHost {
            events,
            next: start,
            pipeline: Pipeline::new(profile),
            tools,
            divergence: None,
            calls: 0,
            limits: Limits::default(),
            resuming: false,
        }
    }

    /// For `lt resume`: a call the log ends within is reported by
    /// [`ReplayHost::replay_call`] as [`Replayed::Ended`], not as a
    /// divergence.
    pub fn resuming(mut self) -> Self {
        self.resuming = true;
        self
    }

    /// The pipeline, its budgets charged with the calls replayed, for the
    /// live control plane that continues the session.
    pub fn into_pipeline(self) -> Pipeline {
        self.pipeline
    }

    /// Continues with `pipeline` (its budgets charged by the earlier runs
    /// of an agent session) instead of a fresh one.
    pub fn with_pipeline(mut self, pipeline: Pipeline) -> Self {
        self.pipeline = pipeline;
        self
    }

    /// The recorded run's limits (list length and value bounds decide what
    /// a program received for a tool's output).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The first divergence, if any.
    pub fn divergence(&self) -> Option<&Divergence> {
        self.divergence.as_ref()
    }

    /// Calls answered from the log.
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// The events not consumed by the calls (normally just `session_ended`).
    pub fn remaining(&self) -> &'a [Event] {
        &self.events[self.next.min(self.events.len())..]
    }

    fn seq(&self) -> u64 {
        self.events
            .get(self.next)
            .map_or_else(|| self.events.last().map_or(0, |e| e.seq + 1), |e| e.seq)
    }

    fn diverge(&mut self, expected: String, issued: String) -> Outcome {
        if self.divergence.is_none() {
            self.divergence = Some(Divergence {
                seq: self.seq(),
                log_ended: self.next >= self.events.len(),
                expected,
                issued,
            });
        }
        Err(ToolFailure {
            stderr: None,
            kind: FailureKind::Unavailable,
            message: "replay diverged from the log".to_string(),
        })
    }

    /// The next event that replay checks, consumed. Events that only
    /// narrate (`client_dispatched`, `client_reported`, `client_rejected`:
    /// the outcome event after them carries what the program received;
    /// `session_resumed`, `session_interrupted`: markers between two runs
    /// of the same session;
    /// `annotation_started`/`annotation_ended`: what the program said it was
    /// doing, which replay re-derives from the program)
    /// are passed over.
    fn take(&mut self) -> Option<&'a EventBody> {
        self.skip_narration();
        let e = self.events.get(self.next)?;
        self.next += 1;
        Some(&e.body)
    }

    fn skip_narration(&mut self) {
        while let Some(e) = self.events.get(self.next) {
            match e.body {
                EventBody::ClientDispatched { .. }
                | EventBody::ClientReported { .. }
                | EventBody::ClientRejected { .. }
                | EventBody::SessionResumed { .. }
                | EventBody::SessionInterrupted { .. }
                | EventBody::AnnotationStarted { .. }
                | EventBody::AnnotationEnded { .. } => self.next += 1,
                _ => break,
            }
        }
    }
}

/// The kind of a logged failure (`failed` for a name this build does not know).
fn failure_kind(name: &str) -> FailureKind {
    FailureKind::from_name(name).unwrap_or(FailureKind::Failed)
}

impl ReplayHost<'_> {
    /// Replays an approval request: its `approval_requested` (same id,
    /// tool and argument) and `approval_decided` events; a granted token is
    /// registered with the pipeline again. `None` when resuming and the log
    /// ends before the request, or `Some(Err(REQUESTED_NOT_ANSWERED))` when it
    /// ends between the request and its answer (see [`REQUESTED_NOT_ANSWERED`]).
    pub fn replay_approval(
        &mut self,
        request: &ApprovalRequest<'_>,
    ) -> Option<Result<String, String>> {
        let id = request.id.to_string();
        let issued = format!(
            "an approval request {id} for {} with {}",
            request.tool, request.arg
        );
        let refused = || Err("replay diverged from the log".to_string());
        if self.divergence.is_some() {
            return Some(refused());
        }
        self.skip_narration();
        if self.resuming && self.next >= self.events.len() {
            return None;
        }
        let at = self.next;
        match self.take() {
            Some(EventBody::ApprovalRequested {
                approval_id,
                tool,
                argument,
            }) if *approval_id == id && tool == request.tool && *argument == request.arg => {}
            other => {
                let expected = other.map_or("no more events".to_string(), |b| {
                    format!("a {} event", b.kind())
                });
                self.next = at;
                let _ = self.diverge(expected, issued);
                return Some(refused());
            }
        }
        let at = self.next;
        match self.take() {
            Some(EventBody::ApprovalDecided {
                approval_id,
                decision,
                reason,
                token,
                ..
            }) if *approval_id == id => match (decision, token) {
                (Decision::Allow, Json::String(t)) => {
                    self.pipeline.grant(t, request.tool, &request.arg);
                    Some(Ok(t.clone()))
                }
                _ => Some(Err(format!(
                    "approval for {} refused: {reason}",
                    request.tool
                ))),
            },
            None if self.resuming => {
                // Asked, never answered: answered live, without asking twice in the log.
                self.next = self.events.len();
                Some(Err(REQUESTED_NOT_ANSWERED.to_string()))
            }
            other => {
                let expected = other.map_or("no more events".to_string(), |b| {
                    format!("a {} event", b.kind())
                });
                self.next = at;
                let _ = self.diverge(expected, format!("the answer to {issued}"));
                Some(refused())
            }
        }
    }
}

impl Host for ReplayHost<'_> {
    fn approve(&mut self, request: ApprovalRequest<'_>) -> Result<String, String> {
        self.replay_approval(&request)
            .unwrap_or_else(|| Err("the log ends here".to_string()))
    }

    fn call_batch(
        &mut self,
        requests: Vec<CallRequest<'_>>,
        _limit: usize,
        events: &mut dyn FnMut(crate::runtime::host::BatchEvent<'_>) -> bool,
    ) -> Vec<Outcome> {
        let outcomes: Vec<Outcome> = self
            .replay_batch(requests)
            .into_iter()
            .map(|r| match r {
                Replayed::Answered(o) => o,
                Replayed::Ended(_) => Err(ToolFailure {
                    stderr: None,
                    kind: FailureKind::Unavailable,
                    message: "the log ends here".to_string(),
                }),
            })
            .collect();
        for (i, o) in outcomes.iter().enumerate() {
            events(crate::runtime::host::BatchEvent::Done(i, o));
        }
        outcomes
    }

    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        match self.replay_call(request) {
            Replayed::Answered(outcome) => outcome,
            // Only when resuming; a plain replay reports the end as a divergence.
            Replayed::Ended(_) => Err(ToolFailure {
                stderr: None,
                kind: FailureKind::Unavailable,
                message: "the log ends here".to_string(),
            }),
        }
    }
}

impl ReplayHost<'_> {
    /// When resuming: how far the log records the call starting at event
    /// `at` (its `proposed`), if it does not record the call to the end (an
    /// outcome or a denial). `None`: the log goes on past this call, which
    /// is then replayed (and checked) as usual.
    fn partial_call(&mut self, at: usize) -> Option<Recorded> {
        let saved = self.next;
        let this = self
            .events
            .get(at)
            .and_then(|e| e.body.call_id())
            .map(str::to_string);
        let ours = |c: &String| Some(c) == this.as_ref();
        self.next = at + 1;
        let stage = match self.take() {
            None => Some(Recorded::Proposed),
            Some(EventBody::Decided {
                decision: Decision::Allow,
                ..
            }) => {
                // (In a batch, the events after this call's may be another
                // call's: then the log goes on past this call's stage.)
                let mut stage = match self.take() {
                    None => Some(Recorded::Decided),
                    Some(EventBody::Scheduled { call_id, .. }) if ours(call_id) => {
                        Some(Recorded::Scheduled)
                    }
                    Some(_) => None,
                };
                // A call run again after an earlier resume is scheduled
                // again: counted, up to `MAX_STARTS`.
                let mut starts = 1;
                while stage == Some(Recorded::Scheduled) {
                    match self.take() {
                        None => break,
                        Some(EventBody::Scheduled { call_id, .. }) if ours(call_id) => starts += 1,
                        Some(_) => stage = None,
                    }
                }
                if stage == Some(Recorded::Scheduled) && starts >= super::MAX_STARTS {
                    stage = Some(Recorded::Restarted);
                }
                stage
            }
            Some(_) => None,
        };
        self.next = saved;
        stage
    }

    /// Replays one call: answers it from the log, or (when resuming) says
    /// where the log ends within it.
    pub fn replay_call(&mut self, request: CallRequest<'_>) -> Replayed {
        Replayed::Answered(match self.replay_inner(request) {
            Ok(outcome) => outcome,
            Err(stage) => return Replayed::Ended(stage),
        })
    }

    fn replay_inner(&mut self, request: CallRequest<'_>) -> Result<Outcome, Recorded> {
        match self.replay_pre(request, false)? {
            Pre::Done(outcome) => Ok(outcome),
            Pre::Pending(p) => {
                let at = self.next;
                let event = self.take();
                Ok(self.replay_outcome(&p, event, at))
            }
        }
    }

    /// Replays independent calls recorded by a concurrent batch: each
    /// call's proposed, decided and scheduled events in request order, then
    /// the outcomes of the dispatched ones in whatever order they were
    /// recorded (matched by call identity).
    pub fn replay_batch(&mut self, requests: Vec<CallRequest<'_>>) -> Vec<Replayed> {
        let n = requests.len();
        let mut out: Vec<Option<Replayed>> = (0..n).map(|_| None).collect();
        let mut pending: Vec<(usize, Pending)> = Vec::new();
        for (i, request) in requests.into_iter().enumerate() {
            // `lt resume` may have finished earlier calls of the batch before
            // proposing later ones: their outcomes come first then.
            self.absorb(&mut pending, &mut out);
            match self.replay_pre(request, true) {
                Ok(Pre::Done(o)) => out[i] = Some(Replayed::Answered(o)),
                Ok(Pre::Pending(p)) => pending.push((i, p)),
                Err(stage) => out[i] = Some(Replayed::Ended(stage)),
            }
        }
        while !pending.is_empty() {
            self.absorb(&mut pending, &mut out);
            if pending.is_empty() {
                break;
            }
            self.skip_narration();
            if self.resuming && self.next >= self.events.len() {
                // Scheduled, outcome never recorded: it may have started;
                // not scheduled: it was waiting for a slot.
                for (i, p) in pending.drain(..) {
                    let stage = if p.scheduled {
                        Recorded::Scheduled
                    } else {
                        Recorded::Queued
                    };
                    out[i] = Some(Replayed::Ended(stage));
                }
                break;
            }
            let at = self.next;
            let event = self.take();
            let which = match event {
                Some(
                    EventBody::Completed { call_id, .. }
                    | EventBody::Failed { call_id, .. }
                    | EventBody::TimedOut { call_id, .. },
                ) => pending.iter().position(|(_, p)| p.call_id == *call_id),
                _ => None,
            };
            // An event of no pending call is a divergence, reported against the first.
            let k = which.unwrap_or(0);
            let (i, p) = pending.remove(k);
            out[i] = Some(Replayed::Answered(self.replay_outcome(&p, event, at)));
        }
        out.into_iter()
            .map(|o| o.unwrap_or(Replayed::Ended(Recorded::Nothing)))
            .collect()
    }

    /// Consumes the events at the cursor that belong to calls of the batch
    /// already scheduled: their outcomes (answered), and a `scheduled` again
    /// (an idempotent call run again by `lt resume`).
    fn absorb(&mut self, pending: &mut Vec<(usize, Pending)>, out: &mut [Option<Replayed>]) {
        loop {
            if self.divergence.is_some() {
                return;
            }
            self.skip_narration();
            let Some(event) = self.events.get(self.next).map(|e| &e.body) else {
                return;
            };
            match event {
                EventBody::Scheduled { call_id, .. }
                    if pending.iter().any(|(_, p)| p.call_id == *call_id) =>
                {
                    if let Some((_, p)) = pending.iter_mut().find(|(_, p)| p.call_id == *call_id) {
                        p.scheduled = true;
                    }
                    self.next += 1;
                }
                EventBody::Completed { call_id, .. }
                | EventBody::Failed { call_id, .. }
                | EventBody::TimedOut { call_id, .. } => {
                    let Some(k) = pending
                        .iter()
                        .position(|(_, p)| p.call_id == *call_id && p.scheduled)
                    else {
                        return;
                    };
                    let at = self.next;
                    let event = self.take();
                    let (i, p) = pending.remove(k);
                    out[i] = Some(Replayed::Answered(self.replay_outcome(&p, event, at)));
                }
                _ => return,
            }
        }
    }

    /// A call up to its dispatch: its proposed, decided and (unless a dry
    /// run) scheduled events; a dry run's outcome too.
    /// In a batch (`batch`), a call's `scheduled` is written when it starts,
    /// so it is not expected here but later ([`ReplayHost::absorb`]).
    fn replay_pre(&mut self, request: CallRequest<'_>, batch: bool) -> Result<Pre, Recorded> {
        let call_id = request.id.to_string();
        let issued = describe(request.tool, &call_id, &request.arg);
        if self.divergence.is_some() {
            return Ok(Pre::Done(self.diverge(String::new(), issued)));
        }
        self.skip_narration();
        if self.resuming && self.next >= self.events.len() {
            return Err(Recorded::Nothing);
        }
        let at = self.next;
        let Some(EventBody::Proposed {
            call_id: c,
            tool,
            argument,
        }) = self.take()
        else {
            self.next = at;
            let expected = match self.events.get(at).map(|e| &e.body) {
                Some(b) => format!("a {} event", b.kind()),
                None => "no more events (the log ends here)".to_string(),
            };
            return Ok(Pre::Done(self.diverge(expected, issued)));
        };
        if *c != call_id || tool != request.tool || *argument != request.arg {
            self.next = at;
            return Ok(Pre::Done(self.diverge(describe(tool, c, argument), issued)));
        }
        if self.resuming {
            if let Some(stage) = self.partial_call(at) {
                // A batch call without `scheduled` never started.
                let stage = match stage {
                    Recorded::Decided if batch => Recorded::Queued,
                    s => s,
                };
                // The live control plane continues the call; these events
                // are its record so far.
                self.next = self.events.len();
                return Err(stage);
            }
        }
        self.calls += 1;
        let tools = self.tools;
        let Some(sig) = tools.iter().find(|t| *t.name == *request.tool) else {
            return Ok(Pre::Done(self.diverge("a declared tool".into(), issued)));
        };
        let decision = self.pipeline.decide(sig, &request.arg);
        let at = self.next;
        match self.take() {
            Some(EventBody::Decided {
                decision: d, rule, ..
            }) if (*d == Decision::Allow) == decision.allow && *rule == decision.rule => {}
            Some(EventBody::Decided {
                decision: d, rule, ..
            }) => {
                self.next = at;
                return Ok(Pre::Done(self.diverge(
                    format!("the decision {} by {rule}", d.as_str()),
                    format!(
                        "the decision {} by {} for {issued}",
                        if decision.allow { "allow" } else { "deny" },
                        decision.rule
                    ),
                )));
            }
            other => {
                let expected = other.map_or("no more events".to_string(), |b| {
                    format!("a {} event", b.kind())
                });
                self.next = at;
                return Ok(Pre::Done(
                    self.diverge(expected, format!("a decision for {issued}")),
                ));
            }
        }
        if !decision.allow {
            return Ok(Pre::Done(Err(ToolFailure {
                stderr: None,
                kind: FailureKind::Denied,
                message: format!("denied: {}: {}", decision.rule, decision.reason),
            })));
        }
        if !decision.dry_run && !batch {
            let at = self.next;
            match self.take() {
                Some(EventBody::Scheduled {
                    call_id: c, tool, ..
                }) if *c == call_id && tool == request.tool => {
                    // Run again by `lt resume` (an idempotent tool): scheduled twice.
                    self.skip_narration();
                    while let Some(EventBody::Scheduled { call_id: c, .. }) =
                        self.events.get(self.next).map(|e| &e.body)
                    {
                        if *c != call_id {
                            break;
                        }
                        self.next += 1;
                        self.skip_narration();
                    }
                }
                other => {
                    let expected = other.map_or(
                        "no more events (the call's outcome was never recorded)".to_string(),
                        |b| format!("a {} event", b.kind()),
                    );
                    self.next = at;
                    return Ok(Pre::Done(
                        self.diverge(expected, format!("the execution of {issued}")),
                    ));
                }
            }
        }
        let pending = Pending {
            scheduled: !batch,
            call_id,
            issued,
            dry_run: decision.dry_run,
            tool: request.tool.to_string(),
        };
        if decision.dry_run {
            let at = self.next;
            let event = self.take();
            return Ok(Pre::Done(self.replay_outcome(&pending, event, at)));
        }
        Ok(Pre::Pending(pending))
    }

    /// Checks a call's outcome event (`event`, taken at index `at`) and
    /// gives the outcome the program receives.
    fn replay_outcome(&mut self, p: &Pending, event: Option<&EventBody>, at: usize) -> Outcome {
        let (call_id, issued) = (&p.call_id, &p.issued);
        let tools = self.tools;
        let Some(sig) = tools.iter().find(|t| *t.name == *p.tool) else {
            return self.diverge("a declared tool".into(), issued.clone());
        };
        let (outcome, recorded) = match event {
            Some(EventBody::Completed {
                call_id: c,
                output,
                result,
            }) if *c == *call_id => (Ok(output.clone()), result),
            Some(EventBody::Failed {
                call_id: c,
                failure,
                message,
                result,
                stderr,
            }) if *c == *call_id => (
                Err(ToolFailure {
                    stderr: stderr.clone(),
                    kind: failure_kind(failure),
                    message: message.clone(),
                }),
                result,
            ),
            Some(EventBody::TimedOut {
                call_id: c,
                message,
                result,
                stderr,
            }) if *c == *call_id => (
                Err(ToolFailure {
                    stderr: stderr.clone(),
                    kind: FailureKind::TimedOut,
                    message: message.clone(),
                }),
                result,
            ),
            other => {
                let expected = other.map_or(
                    "no more events (the call's outcome was never recorded)".to_string(),
                    |b| format!("a {} event", b.kind()),
                );
                self.next = at;
                return self.diverge(expected, format!("the outcome of {issued}"));
            }
        };
        // A dry-run answer comes from the policy, not a tool: the profile
        // replayed under must give the recorded one.
        if p.dry_run {
            if let Ok(output) = &outcome {
                let answer = self
                    .pipeline
                    .profile()
                    .tools
                    .get(p.tool.as_str())
                    .and_then(|p| p.dry_run_result.clone())
                    .unwrap_or_else(|| super::empty_json(&sig.output));
                if answer != *output {
                    self.next = at;
                    return self.diverge(
                        format!("the dry-run answer {output} for {call_id}"),
                        format!("the dry-run answer {answer}, which the profile gives"),
                    );
                }
            }
        }
        // The recorded `result` must be what the recorded output gives the
        // program: an edited `result` (or output) is caught here.
        let derived = super::result_json(sig, &outcome, &self.limits);
        if derived != *recorded {
            self.next = at;
            return self.diverge(
                format!("the result {recorded} for {call_id}"),
                format!("the result {derived}, which the recorded output gives"),
            );
        }
        outcome
    }
}

/// A replayed call waiting for its outcome event.
struct Pending {
    /// Its `scheduled` event was read.
    scheduled: bool,
    call_id: String,
    issued: String,
    dry_run: bool,
    tool: String,
}

/// A call replayed up to its dispatch.
enum Pre {
    /// Its outcome (denied, dry run, a divergence).
    Done(Outcome),
    /// Scheduled: the outcome event comes later.
    Pending(Pending),
}
