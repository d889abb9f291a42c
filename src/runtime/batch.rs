//! Concurrent calls (`gather`, `fan_out`), `@intent` annotations and
//! `bounded_loop` (extension; seed 000's combinators).
//!
//! The interpreter stays synchronous: a `gather` or a `fan_out` first
//! *collects* its calls and then hands them to the host in one
//! [`Host::call_batch`](super::host::Host::call_batch), which may run them
//! concurrently. Collecting works by setting [`Machine::deferred`]: an
//! `exec` evaluated while it is set evaluates its argument (with the queue
//! put aside, so a call inside an argument runs at once, as usual), takes
//! its call identity, and queues itself instead of calling. The checker
//! guarantees that each field of a `gather` and the body of a `fan_out`'s
//! function is exactly one `exec`, so the n-th queued call is the n-th
//! field or item. Arguments are evaluated in order and call identities are
//! the same as for sequential calls, so a log written concurrently replays
//! by call identity whatever order the calls completed in.

use super::eval::{Eval, Machine};
use super::host::{AnnotationEvent, CallId, CallRequest, PathStep};
use super::value::Value;
use crate::ir::NodeId;
use crate::syntax::ast::{Annotation, Name};
use std::rc::Rc;

/// A call queued while a batch is collected.
pub(crate) struct Deferred {
    tool: u32,
    call_id: CallId,
    arg: serde_json::Value,
    time_left: Option<std::time::Duration>,
}

impl Machine<'_> {
    /// `exec` while a batch is collected: queue the call (argument already
    /// evaluated); the placeholder value is never seen by the program.
    pub(super) fn defer_exec(&mut self, id: NodeId, tool: u32, arg: &Value) -> Eval {
        let (call_id, arg, time_left) = self.prepare_call(id, tool, arg)?;
        if let Some(q) = self.deferred.as_mut() {
            q.push(Deferred {
                tool,
                call_id,
                arg,
                time_left,
            });
        }
        Ok(Value::Unit)
    }

    /// Evaluates `collect` with calls queued, then performs the queued
    /// calls as one batch; the Results in queue order.
    pub(super) fn batch(
        &mut self,
        id: NodeId,
        expected: usize,
        collect: impl FnOnce(&mut Self) -> Result<(), Box<super::limits::RunError>>,
    ) -> Result<Vec<Value>, Box<super::limits::RunError>> {
        let saved = self.deferred.replace(Vec::with_capacity(expected));
        let collected = collect(self);
        let queued = std::mem::replace(&mut self.deferred, saved).unwrap_or_default();
        collected?;
        if queued.len() != expected {
            return Err(super::eval::internal(
                self.span(id),
                format!("{expected} concurrent calls expected, {} collected", queued.len()),
            ));
        }
        let requests: Vec<CallRequest<'_>> = queued
            .iter()
            .map(|d| CallRequest {
                id: &d.call_id,
                tool: self.tool_name(d.tool),
                arg: d.arg.clone(),
                time_left: d.time_left,
                idempotency_key: None,
            })
            .collect();
        let outcomes = self.host().call_batch(requests, usize::MAX, &mut |_, _| {});
        let values = queued
            .iter()
            .zip(outcomes)
            .map(|(d, o)| self.receive(d.tool, o))
            .collect();
        self.check_clock(id)?;
        Ok(values)
    }

    /// `@intent(…) body`: tells the host, runs `body`, tells the host how it ended.
    pub(super) fn annotate(
        &mut self,
        id: NodeId,
        annotation: &Annotation,
        body: impl FnOnce(&mut Self) -> Eval,
    ) -> Eval {
        let aid = CallId {
            node: id,
            path: self.path().to_vec(),
        }
        .to_string();
        let parent = self.intents.last().map(|(p, _)| p.clone());
        self.host().annotation(AnnotationEvent::Started {
            id: &aid,
            intent: &annotation.intent,
            hypothesis: annotation.hypothesis.as_deref(),
            notes: annotation.notes.as_deref(),
            parent: parent.as_deref(),
        });
        self.intents.push((aid, Vec::new()));
        let result = body(self);
        let (aid, calls) = self.intents.pop().unwrap_or_default();
        let outcome = match &result {
            Ok(Value::Ok(_)) => "ok",
            Ok(Value::Err(_)) => "err",
            Ok(_) => "value",
            Err(_) => "stopped",
        };
        self.host().annotation(AnnotationEvent::Ended {
            id: &aid,
            calls: &calls,
            outcome,
        });
        result
    }

    /// `bounded_loop max init step`, with `init` and `step` evaluated.
    pub(super) fn bounded_loop(&mut self, id: NodeId, max: u32, init: Value, step: &Value) -> Eval {
        let callee = self.enter(step, 1);
        let mut state = init;
        let mut done = false;
        for i in 0..max {
            let site = PathStep::Item { node: id, index: i };
            let r = match self.call1(&callee, state, site, id) {
                Ok(r) => r,
                Err(e) => {
                    self.leave(callee);
                    return Err(e);
                }
            };
            let (d, v) = match &r {
                Value::Record(fields) => (
                    fields.iter().find(|(n, _)| &**n == "done").map(|(_, v)| v.clone()),
                    fields.iter().find(|(n, _)| &**n == "value").map(|(_, v)| v.clone()),
                ),
                _ => (None, None),
            };
            let (Some(Value::Bool(d)), Some(v)) = (d, v) else {
                self.leave(callee);
                return Err(super::eval::internal(self.span(id), format!("a bounded_loop step returned {r}")));
            };
            state = v;
            if d {
                done = true;
                break;
            }
        }
        self.leave(callee);
        let fields: Vec<(Name, Value)> = vec![(Rc::from("done"), Value::Bool(done)), (Rc::from("value"), state)];
        Ok(Value::Record(fields.into()))
    }
}
