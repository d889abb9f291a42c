//! A batch of independent calls (`gather`, `fan_out`) through the control
//! plane: every call proposed, decided and scheduled in request order,
//! the allowed server-venue calls run together (at most the profile's
//! `max_concurrency`), each outcome recorded as it arrives; client-venue
//! calls after, one at a time. `lt resume` continues a batch the log holds
//! in part ([`ControlPlane::call_batch_staged`]).

use super::record::{outcome_event, record_call_to, record_to, unavailable};
use super::{ControlPlane, Prepared, Recorded, Venue};
use crate::log::CallEvent;
use crate::log::EventSink;
use crate::runtime::host::{CallRequest, Host, Outcome};
use crate::types::ToolSig;

impl<H: Host, S: EventSink> ControlPlane<'_, H, S> {
    /// Performs independent calls (a `gather`, a `fan_out`): each is
    /// proposed, decided and scheduled in request order, then the allowed
    /// server-venue calls run concurrently (at most the profile's
    /// `max_concurrency` at once) and each outcome is recorded as it
    /// arrives, so the log's outcome events are in completion order (replay
    /// matches them by call identity). Client-venue calls run after, one
    /// at a time.
    pub fn call_batch_from(
        &mut self,
        requests: Vec<CallRequest<'_>>,
        limit: usize,
    ) -> Vec<Outcome> {
        let staged = requests
            .into_iter()
            .map(|r| (r, Recorded::Nothing))
            .collect();
        self.call_batch_staged(staged, limit)
    }

    /// [`ControlPlane::call_batch_from`] for a batch the log already holds
    /// in part (`lt resume`): each call continues from its recorded stage
    /// (see [`ControlPlane::call_from`]). The calls whose record was cut
    /// within their proposed/decided/scheduled go first, then the ones
    /// scheduled without an outcome, then the unrecorded ones, so that the
    /// log reads as a batch that replay can match.
    pub fn call_batch_staged(
        &mut self,
        requests: Vec<(CallRequest<'_>, Recorded)>,
        limit: usize,
    ) -> Vec<Outcome> {
        self.call_batch_observed(requests, limit, &mut |_| true)
    }

    /// [`ControlPlane::call_batch_staged`], telling `events` (the caller of
    /// [`Host::call_batch`], e.g. `--verbose`) as each server call takes its
    /// slot (`Starting`, asked before `scheduled` is recorded: `false` and
    /// the call does not start) and as each call finishes (`Done`, after its
    /// outcome is recorded), with the indices of `requests`. Calls answered
    /// without the executor (denied, dry run) and client-venue calls are
    /// `Done` once the server calls have finished.
    pub(super) fn call_batch_observed(
        &mut self,
        requests: Vec<(CallRequest<'_>, Recorded)>,
        limit: usize,
        events: &mut dyn FnMut(crate::runtime::host::BatchEvent<'_>) -> bool,
    ) -> Vec<Outcome> {
        let n = requests.len();
        let mut out: Vec<Option<Outcome>> = (0..n).map(|_| None).collect();
        let mut server = Vec::new();
        let mut client = Vec::new();
        let rank = |r: Recorded| match r {
            Recorded::Proposed | Recorded::Decided => 0,
            Recorded::Scheduled | Recorded::Restarted | Recorded::Queued => 1,
            Recorded::Nothing | Recorded::Lost => 2,
        };
        let mut order: Vec<(usize, CallRequest<'_>, Recorded)> = requests
            .into_iter()
            .enumerate()
            .map(|(i, (r, s))| (i, r, s))
            .collect();
        order.sort_by_key(|(i, _, s)| (rank(*s), *i));
        for (i, request, stage) in order {
            match self.prepare(request, stage) {
                Prepared::Done(o) => out[i] = Some(o),
                Prepared::Dispatch {
                    schedule,
                    venue: Venue::Server,
                    request,
                    key,
                    call_id,
                    tool,
                } => server.push((i, request, key, call_id, tool, schedule)),
                Prepared::Dispatch {
                    schedule,
                    venue: Venue::Client,
                    request,
                    key,
                    call_id,
                    tool,
                } => client.push((i, request, key, call_id, tool, schedule)),
            }
        }
        let limit = limit.min(self.pipeline.profile().concurrency()).max(1);
        let keys: Vec<Option<String>> = server.iter().map(|s| s.2.clone()).collect();
        let mut index = Vec::with_capacity(server.len());
        let mut requests = Vec::with_capacity(server.len());
        let mut finishing: Vec<(String, &ToolSig)> = Vec::with_capacity(server.len());
        let mut schedules: Vec<bool> = Vec::with_capacity(server.len());
        for ((i, r, _, id, t, schedule), key) in server.into_iter().zip(&keys) {
            index.push(i);
            requests.push(CallRequest {
                idempotency_key: key.as_deref(),
                ..r
            });
            finishing.push((id, t));
            schedules.push(schedule);
        }
        // The calls whose `Done` was told as they finished.
        let mut reported: Vec<usize> = Vec::new();
        if !requests.is_empty() {
            let recording = self.sink.records();
            let payloads = self.sink.payloads();
            let limits = self.limits.clone();
            let sink = &mut self.sink;
            let log_error = &mut self.log_error;
            let outcomes = self
                .inner
                .call_batch(requests, limit, &mut |event| match event {
                    // `scheduled` is written (and flushed) as a call takes its
                    // slot, before it starts; if it cannot be, it does not start.
                    crate::runtime::host::BatchEvent::Starting(j) => {
                        if !events(crate::runtime::host::BatchEvent::Starting(index[j])) {
                            return false;
                        }
                        match (schedules.get_mut(j), finishing.get(j), keys.get(j)) {
                            (Some(schedule), Some((call_id, tool)), Some(key)) if *schedule => {
                                *schedule = false;
                                let event = CallEvent::Scheduled {
                                    call_id,
                                    tool: &tool.name,
                                    venue: Venue::Server.as_str(),
                                    idempotency_key: key.as_deref().unwrap_or_default(),
                                };
                                record_call_to(sink, log_error, event).is_ok()
                            }
                            _ => true,
                        }
                    }
                    crate::runtime::host::BatchEvent::Done(j, outcome) => {
                        if recording {
                            let (call_id, tool) = &finishing[j];
                            let body =
                                outcome_event(tool, call_id.clone(), outcome, &limits, payloads);
                            let _ = record_to(sink, log_error, body);
                        }
                        events(crate::runtime::host::BatchEvent::Done(index[j], outcome));
                        reported.push(index[j]);
                        true
                    }
                });
            for (j, o) in outcomes.into_iter().enumerate() {
                out[index[j]] = Some(o);
            }
        }
        for (i, request, key, call_id, tool, schedule) in client {
            if schedule {
                let event = CallEvent::Scheduled {
                    call_id: &call_id,
                    tool: &tool.name,
                    venue: Venue::Client.as_str(),
                    idempotency_key: key.as_deref().unwrap_or_default(),
                };
                if let Err(e) = self.record_call(event) {
                    out[i] = Some(Err(unavailable(e)));
                    continue;
                }
            }
            let request = CallRequest {
                idempotency_key: key.as_deref(),
                ..request
            };
            let outcome = self.dispatch(Venue::Client, request);
            self.finish(tool, call_id, &outcome);
            out[i] = Some(outcome);
        }
        let out: Vec<Outcome> = out
            .into_iter()
            .map(|o| {
                o.unwrap_or_else(|| Err(unavailable("the call was not performed".to_string())))
            })
            .collect();
        for (i, o) in out.iter().enumerate() {
            if !reported.contains(&i) {
                events(crate::runtime::host::BatchEvent::Done(i, o));
            }
        }
        out
    }
}
