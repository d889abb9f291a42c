//! The control plane's door for a call whose argument is the interpreter's
//! value ([`Host::call_value`]): the same policy as [`ControlPlane::call_from`]
//! gives a fresh call in a session without a log, with no JSON built unless
//! a rule or the inner host needs it. A session that records events (a log,
//! a tap), a client-venue tool and an undeclared one take the JSON door,
//! which builds their events and words.

use super::{denied, dry_run_output, within, ControlPlane, Venue};
use crate::log::EventSink;
use crate::runtime::host::{Answer, CallRequest, Host, ValueCall};

impl<H: Host, S: EventSink> ControlPlane<'_, H, S> {
    /// [`Host::call_value`]: decided by the pipeline on the value, then
    /// given to the inner host as a value where it takes one (and reads no
    /// idempotency key), else as JSON. `None`: the call is for the JSON
    /// door, and nothing was done.
    pub(super) fn value_call(&mut self, request: ValueCall<'_>) -> Option<Answer> {
        if self.sink.records() {
            return None;
        }
        let tools = self.tools;
        let tool = tools.iter().find(|t| *t.name == *request.tool)?;
        if self
            .venues
            .get(request.tool)
            .copied()
            .unwrap_or(Venue::Server)
            != Venue::Server
        {
            return None;
        }
        let decision = self.pipeline.decide_value(tool, request.arg, false);
        if !decision.allow {
            return Some(Answer::Json(Err(denied(&decision))));
        }
        let policy = self.pipeline.profile().tools.get(request.tool);
        if decision.dry_run {
            return Some(Answer::Json(Ok(dry_run_output(policy, tool))));
        }
        let time_left = within(request.time_left, policy.and_then(|p| p.timeout));
        // A host whose tools see keys gets the JSON, with the call's key.
        let key = self
            .inner
            .uses_idempotency_keys()
            .then(|| self.idempotency_key(&request.id.to_string()));
        if key.is_none() {
            let call = ValueCall {
                time_left,
                ..request
            };
            if let Some(answer) = self.inner.call_value(call) {
                return Some(answer);
            }
        }
        Some(Answer::Json(self.inner.call(CallRequest {
            id: request.id,
            tool: request.tool,
            arg: request.arg.to_json(),
            time_left,
            idempotency_key: key.as_deref(),
        })))
    }
}
