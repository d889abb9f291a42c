//! Resume: continuing a session that stopped without `session_ended` (a
//! crash, a SIGKILL, a power cut after the last flushed event).
//!
//! The program is deterministic given the tool outcomes, so the session is
//! re-run from the start against its own log: every call the log records
//! to the end is answered from it ([`ReplayHost`], which checks each call
//! like `lt replay`). At the first call the log does not record to the end
//! — or at the end of the program, if every call was recorded — the
//! session switches to live: `session_resumed` is appended and the control
//! plane takes over, with the pipeline's budgets as the replay left them.
//!
//! A call that the log shows *scheduled* but without an outcome may or may
//! not have acted. It runs again only if tools.toml declares its tool
//! `idempotent = true` (with the same idempotency key, so the tool can
//! recognise the repeat); otherwise the program receives
//! `Err("outcome unknown: …")`, recorded as a `failed` event with failure
//! `unknown`. A call logged only as proposed or allowed had not started:
//! it continues from the recorded stage without re-recording it. A call
//! that a log ending in `session_interrupted` lists as stopped before it
//! started (lt was interrupted before handing it to its tool) runs now.
//!
//! ```text
//! log:    … proposed decided scheduled ▌(crash)
//! resume: replay … ──▶ session_resumed ──▶ failed (unknown) | scheduled + run again ──▶ live …
//! ```

use super::replay::{Divergence, ReplayHost, Replayed};
use super::{ControlPlane, Recorded};
use crate::log::{EventBody, EventSink};
use crate::runtime::host::{CallRequest, FailureKind, Host, Outcome, ToolFailure};

/// A [`Host`] that replays a session's log, then continues it live.
pub struct ResumeHost<'a, H: Host, S: EventSink> {
    /// `Some` while replaying.
    replay: Option<ReplayHost<'a>>,
    live: Option<ControlPlane<'a, H, S>>,
    /// The `session_resumed` event, appended at the switch to live.
    marker: Option<EventBody>,
    replayed: u64,
    divergence: Option<Divergence>,
    /// The log's last line was cut short: the first live call may have
    /// started ([`Recorded::Lost`]).
    torn: bool,
    /// Calls the log shows scheduled that lt itself stopped before handing
    /// them to their tools (`session_interrupted`): they did not act.
    not_started: std::collections::HashSet<String>,
}

impl<'a, H: Host, S: EventSink> ResumeHost<'a, H, S> {
    /// Resumes with `replay` (over the log's events, in resume mode, see
    /// [`ReplayHost::resuming`]) and continues with `live` (the control
    /// plane appending to the same log), appending `marker` (a
    /// `session_resumed` event) when it switches.
    pub fn new(replay: ReplayHost<'a>, live: ControlPlane<'a, H, S>, marker: EventBody) -> Self {
        ResumeHost {
            replay: Some(replay),
            live: Some(live),
            marker: Some(marker),
            replayed: 0,
            divergence: None,
            torn: false,
            not_started: Default::default(),
        }
    }

    /// Reads the log's last event: when it is `session_interrupted`, the
    /// calls it stopped before they reached their tools run now (a second
    /// `scheduled`), whatever their tool, instead of being `outcome
    /// unknown`: lt knows they did not act.
    pub fn after_interruption(mut self, events: &[crate::log::Event]) -> Self {
        if let Some(EventBody::SessionInterrupted { stopped, .. }) = events.last().map(|e| &e.body)
        {
            self.not_started = stopped
                .as_array()
                .map(|a| a.as_slice())
                .unwrap_or_default()
                .iter()
                .filter(|c| c.get("started").and_then(serde_json::Value::as_bool) == Some(false))
                .filter_map(|c| c.get("call_id").and_then(serde_json::Value::as_str))
                .map(str::to_string)
                .collect();
        }
        self
    }

    /// `stage`, unless the call is one lt stopped before it started: then
    /// [`Recorded::Queued`] (scheduled anew, run now).
    fn stage_of(&self, request: &CallRequest<'_>, stage: Recorded) -> Recorded {
        if stage == Recorded::Scheduled && self.not_started.contains(&request.id.to_string()) {
            Recorded::Queued
        } else {
            stage
        }
    }

    /// The log's last line was cut short (reopening dropped bytes): that
    /// line may have been the `scheduled` of the first call that goes
    /// live, so that call is treated as one that may have started.
    pub fn after_torn_line(mut self) -> Self {
        self.torn = true;
        self
    }

    /// Where the program and the log disagreed during the replay, if they
    /// did (nothing runs live after that).
    pub fn divergence(&self) -> Option<&Divergence> {
        self.divergence.as_ref()
    }

    /// Calls answered from the log.
    pub fn replayed(&self) -> u64 {
        self.replayed
    }

    /// Switches to live: hands the replay's pipeline to the control plane
    /// and appends `session_resumed`. Errors: the log cannot be written.
    pub fn go_live(&mut self) -> Result<(), String> {
        if self.replay.is_none() || self.live.is_none() {
            return Ok(());
        }
        let (Some(replay), Some(live)) = (self.replay.take(), self.live.take()) else {
            return Ok(());
        };
        self.replayed = replay.calls();
        let mut live = live.with_pipeline(replay.into_pipeline());
        let result = match self.marker.take() {
            Some(marker) => live.record(marker),
            None => Ok(()),
        };
        self.live = Some(live);
        result
    }

    /// The live control plane, once the replay is over (or failed).
    pub fn into_live(mut self) -> Option<ControlPlane<'a, H, S>> {
        if let Some(replay) = self.replay.take() {
            self.replayed = replay.calls();
        }
        self.live.take()
    }

    /// The replay's events not consumed (when the program ended while
    /// still replaying: these must be none, or only narration).
    pub fn unreplayed(&self) -> Option<&[crate::log::Event]> {
        self.replay.as_ref().map(ReplayHost::remaining)
    }
}

impl<H: Host, S: EventSink> Host for ResumeHost<'_, H, S> {
    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        let recorded = match self.replay.as_mut() {
            Some(replay) => match replay.replay_call(request.clone()) {
                Replayed::Answered(outcome) => {
                    if let Some(d) = replay.divergence() {
                        self.divergence.get_or_insert_with(|| d.clone());
                    }
                    return outcome;
                }
                Replayed::Ended(Recorded::Nothing) if std::mem::take(&mut self.torn) => {
                    Recorded::Lost
                }
                Replayed::Ended(stage) => self.stage_of(&request, stage),
            },
            None => Recorded::Nothing,
        };
        if self.divergence.is_some() {
            return Err(ToolFailure {
                stderr: None,
                kind: FailureKind::Unavailable,
                message: "resume diverged from the log".to_string(),
            });
        }
        if let Err(msg) = self.go_live() {
            return Err(ToolFailure {
                stderr: None,
                kind: FailureKind::Unavailable,
                message: msg,
            });
        }
        match self.live.as_mut() {
            Some(live) => live.call_from(request, recorded),
            None => Err(ToolFailure {
                stderr: None,
                kind: FailureKind::Unavailable,
                message: "the session could not go live".to_string(),
            }),
        }
    }

    /// Answered from the log while it lasts, then live.
    fn approve(
        &mut self,
        request: crate::runtime::host::ApprovalRequest<'_>,
    ) -> Result<String, String> {
        let mut requested = false;
        if let Some(replay) = self.replay.as_mut() {
            match replay.replay_approval(&request) {
                Some(Err(e)) if e == super::replay::REQUESTED_NOT_ANSWERED => requested = true,
                Some(answer) => {
                    if let Some(d) = replay.divergence() {
                        self.divergence.get_or_insert_with(|| d.clone());
                    }
                    return answer;
                }
                None => {}
            }
        }
        if self.divergence.is_some() {
            return Err("resume diverged from the log".to_string());
        }
        self.go_live()?;
        match self.live.as_mut() {
            Some(live) => live.approve_from(request, requested),
            None => Err("the session could not go live".to_string()),
        }
    }

    /// Recorded only once live: while replaying, the log already holds it.
    fn annotation(&mut self, event: crate::runtime::host::AnnotationEvent<'_>) {
        if self.replay.is_none() {
            if let Some(live) = self.live.as_mut() {
                live.annotation(event);
            }
        }
    }

    /// While replaying: the batch is answered from the log as far as it
    /// goes, and the calls it does not finish continue live one at a time
    /// (from the stage the log reached). Once live: a concurrent batch.
    fn call_batch(
        &mut self,
        requests: Vec<CallRequest<'_>>,
        limit: usize,
        events: &mut dyn FnMut(crate::runtime::host::BatchEvent<'_>) -> bool,
    ) -> Vec<Outcome> {
        let outcomes = match self.replay.as_mut() {
            None => match self.live.as_mut() {
                Some(live) => live.call_batch_from(requests, limit),
                None => requests.into_iter().map(|r| self.call(r)).collect(),
            },
            Some(replay) => {
                let replayed = replay.replay_batch(requests.clone());
                if let Some(d) = replay.divergence() {
                    self.divergence.get_or_insert_with(|| d.clone());
                }
                let mut out: Vec<Option<Outcome>> = Vec::with_capacity(requests.len());
                let mut live: Vec<(usize, CallRequest<'_>, Recorded)> = Vec::new();
                for (i, (request, r)) in requests.into_iter().zip(replayed).enumerate() {
                    match r {
                        Replayed::Answered(outcome) => out.push(Some(outcome)),
                        Replayed::Ended(stage) => {
                            out.push(None);
                            let stage = self.stage_of(&request, stage);
                            live.push((i, request, stage));
                        }
                    }
                }
                if !live.is_empty() {
                    // A torn last line belongs to the first call the log
                    // ends within; only an unrecorded one becomes `Lost`.
                    // A batch call waiting for a slot may have had its
                    // `scheduled` in that torn line.
                    if std::mem::take(&mut self.torn) {
                        if live[0].2 == Recorded::Nothing {
                            live[0].2 = Recorded::Lost;
                        }
                        for call in live.iter_mut() {
                            if call.2 == Recorded::Queued {
                                call.2 = Recorded::Decided;
                            }
                        }
                    }
                    let answers = self.continue_live_batch(
                        live.iter().map(|(_, r, s)| (r.clone(), *s)).collect(),
                        limit,
                    );
                    for ((i, _, _), o) in live.into_iter().zip(answers) {
                        out[i] = Some(o);
                    }
                }
                out.into_iter()
                    .map(|o| {
                        o.unwrap_or_else(|| {
                            Err(ToolFailure {
                                stderr: None,
                                kind: FailureKind::Unavailable,
                                message: "the call was not performed".to_string(),
                            })
                        })
                    })
                    .collect()
            }
        };
        for (i, o) in outcomes.iter().enumerate() {
            events(crate::runtime::host::BatchEvent::Done(i, o));
        }
        outcomes
    }
}

impl<H: Host, S: EventSink> ResumeHost<'_, H, S> {
    /// The calls of a batch the log does not finish, continued live (as a
    /// batch) from their stages.
    fn continue_live_batch(
        &mut self,
        calls: Vec<(CallRequest<'_>, Recorded)>,
        limit: usize,
    ) -> Vec<Outcome> {
        let refuse = |msg: String, n: usize| -> Vec<Outcome> {
            (0..n)
                .map(|_| {
                    Err(ToolFailure {
                        stderr: None,
                        kind: FailureKind::Unavailable,
                        message: msg.clone(),
                    })
                })
                .collect()
        };
        if self.divergence.is_some() {
            return refuse("resume diverged from the log".to_string(), calls.len());
        }
        if let Err(msg) = self.go_live() {
            return refuse(msg, calls.len());
        }
        match self.live.as_mut() {
            Some(live) => live.call_batch_staged(calls, limit),
            None => refuse("the session could not go live".to_string(), calls.len()),
        }
    }
}
