//! The `CallObserver` port: a front end told of each call as it ends
//! (`lt run --verbose` prints a line per call), without touching the run.

use crate::runtime::host::{
    AnnotationEvent, ApprovalRequest, BatchEvent, CallRequest, Host, Outcome,
};
use std::time::Instant;

/// One call that ended, as an observer sees it.
#[derive(Debug)]
pub struct FinishedCall<'a> {
    /// 1-based number of the call in the session.
    pub n: u64,
    /// Its call identity.
    pub id: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// Its argument, as compact JSON text.
    pub argument: &'a str,
    /// When the call started (for a batch: when it took its slot).
    pub started: Instant,
    /// How it ended, as the control plane gives it to the program.
    pub outcome: &'a Outcome,
}

/// Told of each call of a session as it ends (in completion order within a
/// `gather`). Runs on the session's thread; it should be quick.
pub trait CallObserver {
    /// A call ended.
    fn call_finished(&mut self, call: &FinishedCall<'_>);
}

/// A [`Host`] that tells an observer of each call `inner` answers.
pub(super) struct Observed<'o, H> {
    pub(super) inner: H,
    pub(super) observer: &'o mut dyn CallObserver,
    pub(super) n: u64,
}

impl<H: Host> Host for Observed<'_, H> {
    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        self.n += 1;
        let (id, tool) = (request.id.to_string(), request.tool.to_string());
        let argument = request.arg.to_string();
        let started = Instant::now();
        let outcome = self.inner.call(request);
        self.observer.call_finished(&FinishedCall {
            n: self.n,
            id: &id,
            tool: &tool,
            argument: &argument,
            started,
            outcome: &outcome,
        });
        outcome
    }

    /// The inner host's batch (so the calls still run concurrently), the
    /// observer told of each call as it finishes, timed from its start.
    fn call_batch(
        &mut self,
        requests: Vec<CallRequest<'_>>,
        limit: usize,
        events: &mut dyn FnMut(BatchEvent<'_>) -> bool,
    ) -> Vec<Outcome> {
        let first = self.n + 1;
        self.n += requests.len() as u64;
        let calls: Vec<(String, String, String)> = requests
            .iter()
            .map(|r| (r.id.to_string(), r.tool.to_string(), r.arg.to_string()))
            .collect();
        let batch_start = Instant::now();
        let mut started: Vec<Option<Instant>> = vec![None; calls.len()];
        let observer = &mut *self.observer;
        let mut watch = |event: BatchEvent<'_>| {
            match &event {
                BatchEvent::Starting(i) => {
                    if let Some(s) = started.get_mut(*i) {
                        *s = Some(Instant::now());
                    }
                }
                BatchEvent::Done(i, outcome) => {
                    if let Some((id, tool, argument)) = calls.get(*i) {
                        observer.call_finished(&FinishedCall {
                            n: first + *i as u64,
                            id,
                            tool,
                            argument,
                            started: started.get(*i).copied().flatten().unwrap_or(batch_start),
                            outcome,
                        });
                    }
                }
            }
            events(event)
        };
        self.inner.call_batch(requests, limit, &mut watch)
    }

    fn approve(&mut self, request: ApprovalRequest<'_>) -> Result<String, String> {
        self.inner.approve(request)
    }

    fn annotation(&mut self, event: AnnotationEvent<'_>) {
        self.inner.annotation(event)
    }
}
