//! Concurrent calls (`gather`, `fan_out`), `@intent` annotations,
//! `scope` compensation and `bounded_loop` (extension; seed 000's
//! combinators).
//!
//! **Compensation.** While a `scope` is evaluated, every call that
//! completes with `Ok` and whose tool declares an `undo` leaves a
//! [`Compensation`] (the undo tool and its argument: the call's input or
//! output, cut to the undo's fields) in the innermost scope. A scope whose
//! value is `Err` runs its compensations newest first, each an ordinary
//! call through the host (so proposed, decided and logged like any other),
//! with the identity of the undone call plus `undo@n<scope>`; their outcomes
//! do not change the scope's `Err`. A scope whose value is `Ok` hands its
//! compensations to the enclosing scope, which may still fail. A run that
//! stops on a limit inside a scope undoes nothing (the log shows what ran).
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

use super::host::{AnnotationEvent, CallId, CallRequest, PathStep};
use super::machine::{Compensation, Deferred, Eval, Machine};
use super::value::Value;
use crate::ir::NodeId;
use crate::syntax::ast::{Annotation, Name};
use std::rc::Rc;

/// `v` cut to the fields of `ty` when both are records (the undo is given
/// only what it declares); otherwise `v`.
fn project(v: &Value, ty: &crate::types::Type) -> Value {
    match (v, ty) {
        (Value::Record(fields), crate::types::Type::Record(want)) => {
            let out: Vec<(Name, Value)> = want
                .iter()
                .filter_map(|(n, t)| {
                    fields
                        .iter()
                        .find(|(m, _)| m == n)
                        .map(|(m, x)| (m.clone(), project(x, t)))
                })
                .collect();
            Value::Record(out.into())
        }
        _ => v.clone(),
    }
}

impl Machine<'_> {
    /// `exec` while a batch is collected: queue the call (argument already
    /// evaluated); the placeholder value is never seen by the program.
    pub(super) fn defer_exec(&mut self, id: NodeId, tool: u32, arg: &Value) -> Eval {
        let (call_id, time_left) = self.prepare_call(id, tool, arg)?;
        if let Some(q) = self.deferred.as_mut() {
            q.push(Deferred {
                tool,
                value: arg.clone(),
                call_id,
                arg: arg.to_json(),
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
            return Err(super::machine::internal(
                self.span(id),
                format!(
                    "{expected} concurrent calls expected, {} collected",
                    queued.len()
                ),
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
        let mut completed: Vec<usize> = Vec::with_capacity(queued.len());
        let outcomes = self.host().call_batch(requests, usize::MAX, &mut |e| {
            if let super::host::BatchEvent::Done(i, _) = e {
                completed.push(i);
            }
            true
        });
        let values: Vec<Value> = queued
            .iter()
            .zip(outcomes)
            .map(|(d, o)| self.receive(d.tool, o))
            .collect();
        // Undos are kept in completion order, so a scope undoes the call
        // that completed last first.
        let mut seen = vec![false; queued.len()];
        for i in completed.into_iter().chain(0..queued.len()) {
            if let (Some(d), Some(v), Some(false)) =
                (queued.get(i), values.get(i), seen.get(i).copied())
            {
                seen[i] = true;
                self.note_undo(d.tool, &d.value, &d.call_id, v);
            }
        }
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

    /// After a call of `tool` with `arg` answered `value`: inside a scope,
    /// an `Ok` of a tool with an undo leaves its compensation.
    pub(super) fn note_undo(&mut self, tool: u32, arg: &Value, call_id: &CallId, value: &Value) {
        if self.scopes.is_empty() {
            return;
        }
        let tools = &self.ir().tools;
        let Some(undo) = tools.get(tool as usize).and_then(|t| t.undo.as_ref()) else {
            return;
        };
        let Some(undo_index) = tools.iter().position(|t| t.name == undo.tool) else {
            return;
        };
        let Value::Ok(out) = value else {
            return;
        };
        let given = if undo.from_output { &**out } else { arg };
        let arg = project(given, &tools[undo_index].input);
        if let Some(scope) = self.scopes.last_mut() {
            scope.push(Compensation {
                tool: u32::try_from(undo_index).unwrap_or(u32::MAX),
                arg,
                of: call_id.clone(),
            });
        }
    }

    /// `approve tool NAME arg`, `arg` evaluated: `Ok(token)` or `Err(why)`.
    pub(super) fn approve(&mut self, id: NodeId, tool: u32, arg: &Value) -> Eval {
        let request_id = CallId {
            node: id,
            path: self.path().to_vec(),
        };
        let tool = self.tool_name(tool);
        let time_left = self.time_left();
        let answer = self.host().approve(super::host::ApprovalRequest {
            id: &request_id,
            tool,
            arg: arg.to_json(),
            time_left,
        });
        self.check_clock(id)?;
        Ok(match answer {
            Ok(token) => Value::Ok(Rc::new(Value::Str(Rc::from(token)))),
            Err(why) => Value::Err(Rc::new(Value::Str(Rc::from(why)))),
        })
    }

    /// `scope { body }`.
    pub(super) fn scope(&mut self, id: NodeId, body: impl FnOnce(&mut Self) -> Eval) -> Eval {
        self.scopes.push(Vec::new());
        let result = body(self);
        let undos = self.scopes.pop().unwrap_or_default();
        match &result {
            Ok(Value::Err(_)) => {
                for c in undos.into_iter().rev() {
                    let mut path = c.of.path.clone();
                    path.push(PathStep::Undo { node: id });
                    let call_id = CallId {
                        node: c.of.node,
                        path,
                    };
                    self.count_call();
                    let time_left = self.time_left();
                    let tool = self.tool_name(c.tool);
                    let outcome = self.host().call(CallRequest {
                        id: &call_id,
                        tool,
                        arg: c.arg.to_json(),
                        time_left,
                        idempotency_key: None,
                    });
                    if let Ok(json) = outcome {
                        super::boundary::drop_deep(json);
                    }
                }
                self.check_clock(id)?;
            }
            Ok(_) => {
                if let Some(outer) = self.scopes.last_mut() {
                    outer.extend(undos);
                }
            }
            Err(_) => {}
        }
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
                    fields
                        .iter()
                        .find(|(n, _)| &**n == "done")
                        .map(|(_, v)| v.clone()),
                    fields
                        .iter()
                        .find(|(n, _)| &**n == "value")
                        .map(|(_, v)| v.clone()),
                ),
                _ => (None, None),
            };
            let (Some(Value::Bool(d)), Some(v)) = (d, v) else {
                self.leave(callee);
                return Err(super::machine::internal(
                    self.span(id),
                    format!("a bounded_loop step returned {r}"),
                ));
            };
            state = v;
            if d {
                done = true;
                break;
            }
        }
        self.leave(callee);
        let fields: Vec<(Name, Value)> = vec![
            (Rc::from("done"), Value::Bool(done)),
            (Rc::from("value"), state),
        ];
        Ok(Value::Record(fields.into()))
    }
}
