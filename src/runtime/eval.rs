//! The interpreter: runs the IR, strictly, left to right, deterministically
//! given the tool outcomes.
//!
//! Design:
//!
//! * **Direct-style and synchronous.** The IR is first compiled to one
//!   closure per node (`runtime/compile.rs`); running it is a recursive
//!   descent with no future and no allocation per node. A tool call asks the
//!   [`Host`], which may block this thread on a tokio future. Rust recursion
//!   follows the IR's nesting (bounded by the parser) and function calls;
//!   every 16 levels and every function entry go through `stacker`, so
//!   neither a deep expression nor a long chain of calls can overflow the
//!   stack.
//! * **One value stack.** A function's frame is a window of slots on a
//!   shared stack (parameters first); arguments are pushed where the callee's
//!   frame begins, so calling a lambda allocates nothing. Closures copy their
//!   captured variables when created (flat closures).
//! * **Call identity.** A stack of [`PathStep`]s (iteration index of each
//!   enclosing `for_each`/`reduce`, application site of each enclosing
//!   function call) is snapshotted into each call's [`CallId`].
//! * **Limits.** Every node evaluated costs one step of fuel; the clock is
//!   read every 1,024 steps and after each tool call; lists, strings and
//!   encoded values are bounded ([`Limits`]).
//! * **The boundary.** Arguments are encoded to JSON; a tool's JSON result is
//!   validated against the declared output type ([`super::boundary`]), and a
//!   failure or an invalid result becomes the program's `Err(message)`.

use super::boundary;
use super::cancel::Cancel;
use super::compile;
use super::host::{Answer, CallId, CallRequest, Host, PathStep, ToolFailure, ValueCall};
use super::limits::{Limits, RunError, RunErrorKind};
use super::machine::{internal, Callee, Code, Eval, Machine};
use super::ops;
use super::value::{Closure, Value};
use super::wire::{typed, Wire};
use crate::ir::{Ir, NodeId};
use crate::source::Span;
use std::rc::Rc;
use std::time::Instant;

/// What a run did, whatever its result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Tool calls made.
    pub calls: u64,
    /// Evaluation steps used.
    pub steps: u64,
}

/// Runs `ir` against `host` within `limits`: the program's value, or why the
/// run stopped, plus what it used.
pub fn run(ir: &Ir, host: &mut dyn Host, limits: &Limits) -> (Result<Value, RunError>, RunStats) {
    run_cancellable(ir, host, limits, None)
}

/// [`run`], stopping with a `cancelled` [`RunError`] once `cancel` is
/// tripped: the token is read with the clock (every 1,024 steps and before
/// each tool call), so a cancelled run stops within microseconds of pure
/// work, or as soon as the call it waits for returns.
pub fn run_cancellable(
    ir: &Ir,
    host: &mut dyn Host,
    limits: &Limits,
    cancel: Option<&Cancel>,
) -> (Result<Value, RunError>, RunStats) {
    let started = Instant::now();
    let code = compile::compile(ir);
    let mut m = Machine {
        ir,
        code: &code,
        host,
        limits,
        stack: vec![Value::Unit; ir.frame_size as usize],
        base: 0,
        captures: Rc::from(Vec::new()),
        path: Vec::new(),
        steps: 0,
        next_check: 0,
        calls: 0,
        built_bytes: 0,
        deadline: limits.timeout.map(|t| started + t),
        cancel,
        deferred: None,
        intents: Vec::new(),
        scopes: Vec::new(),
    };
    let result = (code.root)(&mut m)
        .and_then(|v| {
            m.check_size(&v, ir.node(ir.root).span, &"the program's value")?;
            Ok(v)
        })
        .map_err(|e| *e);
    let stats = RunStats {
        calls: m.calls,
        steps: m.steps,
    };
    (result, stats)
}

type Unit = Result<(), Box<RunError>>;

impl<'a> Machine<'a> {
    /// The run's limits.
    pub(super) fn limits(&self) -> &'a Limits {
        self.limits
    }

    /// The source span of node `id`.
    pub(super) fn span(&self, id: NodeId) -> Span {
        self.ir.node(id).span
    }

    /// Charges `n` steps of fuel; one comparison on the hot path, the limit
    /// and the clock (every 1,024 steps) checked out of line.
    #[inline(always)]
    pub(super) fn charge(&mut self, n: u64, id: NodeId) -> Unit {
        self.steps += n;
        if self.steps >= self.next_check {
            return self.charge_slow(id);
        }
        Ok(())
    }

    #[inline(never)]
    fn charge_slow(&mut self, id: NodeId) -> Unit {
        self.next_check = (self.steps + 1024).min(self.limits.max_steps.saturating_add(1));
        if self.steps > self.limits.max_steps {
            return Err(Box::new(
                RunError::new(
                    RunErrorKind::StepLimit,
                    self.span(id),
                    format!("step limit of {} exceeded", self.limits.max_steps),
                )
                .with_help(
                    "the program does more work than allowed; raise the limit with --max-steps N",
                ),
            ));
        }
        self.check_clock(id)
    }

    pub(super) fn check_clock(&self, id: NodeId) -> Unit {
        self.check_clock_at(id, Instant::now)
    }

    /// [`Machine::check_clock`], the time read from `now` (called only
    /// when the run has a deadline).
    fn check_clock_at(&self, id: NodeId, now: impl FnOnce() -> Instant) -> Unit {
        if let Some(c) = self.cancel.filter(|c| c.is_cancelled()) {
            let why = c.reason().unwrap_or_else(|| "cancelled".to_string());
            return Err(Box::new(
                RunError::new(
                    RunErrorKind::Cancelled,
                    self.span(id),
                    format!("the session was cancelled ({why})"),
                )
                .with_help("the session was stopped from outside; run it again to finish it"),
            ));
        }
        match (self.deadline, self.limits.timeout) {
            (Some(d), Some(t)) if now() >= d => Err(Box::new(
                RunError::new(
                    RunErrorKind::Timeout,
                    self.span(id),
                    format!("the run exceeded its time limit of {} ms", t.as_millis()),
                )
                .with_help(
                    "raise the limit with --timeout-ms N, or lower the tools' own timeout_ms",
                ),
            )),
            _ => Ok(()),
        }
    }

    #[inline(never)]
    pub(super) fn binary_slow(
        &mut self,
        id: NodeId,
        op: crate::syntax::ast::BinOp,
        a: &Value,
        b: &Value,
    ) -> Eval {
        let span = self.span(id);
        if let (crate::syntax::ast::BinOp::Concat, Value::Str(x), Value::Str(y)) = (op, a, b) {
            // `++` copies both sides: charged by length, and bounded in total.
            let len = x.len() + y.len();
            self.charge((len / 64) as u64, id)?;
            self.built_bytes += len;
            if self.built_bytes > self.limits.max_string_total_bytes {
                return Err(Box::new(
                    RunError::new(
                        RunErrorKind::SizeLimit,
                        span,
                        format!(
                            "the strings built by `++` add up to more than {} bytes",
                            self.limits.max_string_total_bytes
                        ),
                    )
                    .with_help("build less text (each `++` copies both sides), or raise the budget with --max-concat-mb N"),
                ));
            }
        }
        ops::binary(op, a, b, self.limits, &mut self.steps, span).map_err(Box::new)
    }

    /// Prepares `f` to be called once per item with `arity` arguments. A
    /// lambda of exactly that arity gets its frame set up here, once for the
    /// whole loop (the common `fold (fn acc => fn x => …)`); any other
    /// function value is applied through [`Machine::invoke`] each time.
    pub(super) fn enter(&mut self, f: &Value, arity: usize) -> Callee<'a> {
        let code = self.code;
        if let Value::Fn(clo) = f {
            if let Some(Some(lam)) = code.lambdas.get(clo.lambda as usize) {
                if clo.args.is_empty() && lam.arity == arity {
                    let base = self.stack.len();
                    self.stack.resize(base + lam.frame_size, Value::Unit);
                    let saved_base = std::mem::replace(&mut self.base, base);
                    let saved_captures =
                        std::mem::replace(&mut self.captures, clo.captures.clone());
                    // The loop's entry on the call path, overwritten with
                    // each call's site (see `run_body`), popped by `leave`.
                    self.path.push(PathStep::Apply { node: 0 });
                    return Callee::Frame {
                        body: &lam.body,
                        base,
                        saved_base,
                        saved_captures,
                    };
                }
            }
        }
        Callee::General(f.clone())
    }

    /// Calls a callee prepared by [`Machine::enter`] with one argument.
    /// (One method per arity: each argument is stored straight into its
    /// slot, no temporary array, which the measurements showed stalling.)
    #[inline]
    pub(super) fn call1(
        &mut self,
        callee: &Callee<'a>,
        a: Value,
        site: PathStep,
        at: NodeId,
    ) -> Eval {
        match callee {
            Callee::Frame { body, base, .. } => {
                self.stack[*base] = a;
                self.run_body(body, site)
            }
            Callee::General(f) => {
                self.stack.push(a);
                self.invoke(f, 1, site, at)
            }
        }
    }

    /// [`Machine::call1`] with two arguments (a `fold` step).
    #[inline]
    pub(super) fn call2(
        &mut self,
        callee: &Callee<'a>,
        a: Value,
        b: Value,
        site: PathStep,
        at: NodeId,
    ) -> Eval {
        match callee {
            Callee::Frame { body, base, .. } => {
                self.stack[*base] = a;
                self.stack[*base + 1] = b;
                self.run_body(body, site)
            }
            Callee::General(f) => {
                self.stack.push(a);
                self.stack.push(b);
                self.invoke(f, 2, site, at)
            }
        }
    }

    #[inline(always)]
    fn run_body(&mut self, body: &Code, site: PathStep) -> Eval {
        // No stack check here: the body checks every 16 levels, an
        // application in `invoke`. The path's last entry is the loop's own
        // (pushed by `enter`; a body leaves the path as it found it), so a
        // call only overwrites it: no push and pop per element.
        if let Some(last) = self.path.last_mut() {
            *last = site;
        }
        body(self)
    }

    /// Ends a loop begun with [`Machine::enter`], restoring the caller's frame.
    pub(super) fn leave(&mut self, callee: Callee<'a>) {
        if let Callee::Frame {
            base,
            saved_base,
            saved_captures,
            ..
        } = callee
        {
            self.stack.truncate(base);
            self.base = saved_base;
            self.captures = saved_captures;
            self.path.pop();
        }
    }

    /// Applies `f` to the `nargs` values on top of the stack (curried:
    /// fewer arguments make a partial application, more apply the result to
    /// the rest). `site` is pushed on the call path while the body runs.
    pub(super) fn invoke(&mut self, f: &Value, nargs: usize, site: PathStep, at: NodeId) -> Eval {
        let Value::Fn(clo) = f else {
            return Err(internal(
                self.span(at),
                format!("applying a non-function {f}"),
            ));
        };
        let code = self.code;
        let Some(Some(lam)) = code.lambdas.get(clo.lambda as usize) else {
            return Err(internal(self.span(at), "closure without a lambda"));
        };
        let mut nargs = nargs;
        if !clo.args.is_empty() {
            let at = self.stack.len() - nargs;
            self.stack.splice(at..at, clo.args.iter().cloned());
            nargs += clo.args.len();
        }
        let arity = lam.arity;
        if nargs < arity {
            let args = self.stack.split_off(self.stack.len() - nargs);
            return Ok(Value::Fn(Rc::new(Closure {
                lambda: clo.lambda,
                captures: clo.captures.clone(),
                args,
            })));
        }
        let extra = if nargs > arity {
            self.stack.split_off(self.stack.len() - (nargs - arity))
        } else {
            Vec::new()
        };
        let base = self.stack.len() - arity;
        if lam.frame_size > arity {
            self.stack.resize(base + lam.frame_size, Value::Unit);
        }
        let saved_base = std::mem::replace(&mut self.base, base);
        let saved_captures = std::mem::replace(&mut self.captures, clo.captures.clone());
        self.path.push(site);
        let result = stacker::maybe_grow(256 * 1024, 4 * 1024 * 1024, || (lam.body)(self));
        self.path.pop();
        self.captures = saved_captures;
        self.base = saved_base;
        self.stack.truncate(base);
        let v = result?;
        if extra.is_empty() {
            return Ok(v);
        }
        let n = extra.len();
        self.stack.extend(extra);
        self.invoke(&v, n, site, at)
    }

    /// One tool call through the host, its result validated at the boundary.
    /// A host that takes the argument as a value ([`Host::call_value`])
    /// is given it so; any other is given its JSON.
    pub(super) fn exec(&mut self, id: NodeId, tool: u32, arg: &Value) -> Eval {
        let (call_id, time_left) = self.prepare_call(id, tool, arg)?;
        let sig = &self.ir.tools[tool as usize];
        let answer = self.host.call_value(ValueCall {
            id: &call_id,
            tool: &sig.name,
            arg,
            time_left,
        });
        let value = match answer {
            Some(Answer::Wire(result)) => self.receive_wire(tool, result),
            Some(Answer::Json(outcome)) => self.receive(tool, outcome),
            None => {
                let outcome = self.host.call(CallRequest {
                    id: &call_id,
                    tool: &sig.name,
                    arg: arg.to_json(),
                    time_left,
                    idempotency_key: None,
                });
                self.receive(tool, outcome)
            }
        };
        self.note_undo(tool, arg, &call_id, &value);
        self.check_clock(id)?;
        Ok(value)
    }

    /// Everything before a call: the call limit, the argument's size, the
    /// clock; the call's identity (linked to the innermost `@intent`) and
    /// the time left.
    pub(super) fn prepare_call(
        &mut self,
        id: NodeId,
        tool: u32,
        arg: &Value,
    ) -> Result<(CallId, Option<std::time::Duration>), Box<RunError>> {
        let span = self.span(id);
        let ir = self.ir;
        let Some(sig) = ir.tools.get(tool as usize) else {
            return Err(internal(span, "unknown tool index"));
        };
        if self.calls >= self.limits.max_calls {
            return Err(Box::new(
                RunError::new(
                    RunErrorKind::CallLimit,
                    span,
                    format!(
                        "tool call limit of {} reached before calling {}",
                        self.limits.max_calls, sig.name
                    ),
                )
                .with_help("raise the limit with --max-calls N"),
            ));
        }
        self.check_size(arg, span, &format_args!("the argument of {}", sig.name))?;
        // One reading of the clock for the deadline's check and the time left.
        let now = self.deadline.map(|_| Instant::now());
        self.check_clock_at(id, || now.unwrap_or_else(Instant::now))?;
        self.calls += 1;
        let call_id = CallId {
            node: id,
            path: self.path.clone(),
        };
        if let Some((_, calls)) = self.intents.last_mut() {
            calls.push(call_id.to_string());
        }
        let time_left = self
            .deadline
            .zip(now)
            .map(|(d, now)| d.saturating_duration_since(now));
        Ok((call_id, time_left))
    }

    /// The program's view of a call's outcome: `Ok(v)` of the validated
    /// output, or `Err(message)`.
    pub(super) fn receive(&self, tool: u32, outcome: super::host::Outcome) -> Value {
        let sig = &self.ir.tools[tool as usize];
        let limits = self.limits;
        let received = outcome.map_err(|f| f.message).and_then(|json| {
            let v = boundary::program_result(
                &sig.name,
                &json,
                &sig.output,
                limits.max_list_len,
                limits.max_value_nodes,
            );
            boundary::drop_deep(json);
            v
        });
        as_result(received)
    }

    /// [`Machine::receive`] of a result on the wire ([`Answer::Wire`]).
    fn receive_wire(&self, tool: u32, result: Result<Wire, ToolFailure>) -> Value {
        let sig = &self.ir.tools[tool as usize];
        let limits = self.limits;
        as_result(result.map_err(|f| f.message).and_then(|wire| {
            typed::program_result(
                &sig.name,
                &wire,
                &sig.output,
                limits.max_list_len,
                limits.max_value_nodes,
            )
        }))
    }

    /// The host, the current path and the tool table, for [`super::batch`].
    pub(super) fn host(&mut self) -> &mut dyn Host {
        &mut *self.host
    }

    /// The program.
    pub(super) fn ir(&self) -> &'a Ir {
        self.ir
    }

    /// Counts a call the program did not issue itself (an undo): undos run
    /// even past the call limit, which they must not leave half done.
    pub(super) fn count_call(&mut self) {
        self.calls += 1;
    }

    /// The time left in the run, for a call's deadline.
    pub(super) fn time_left(&self) -> Option<std::time::Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// The current iteration/application path.
    pub(super) fn path(&self) -> &[PathStep] {
        &self.path
    }

    /// The declared name of tool `tool`.
    pub(super) fn tool_name(&self, tool: u32) -> &'a str {
        &self.ir.tools[tool as usize].name
    }

    /// `v` within the value-size limit; else a size error naming `what`
    /// (formatted only then: a call's check builds no string).
    fn check_size(&self, v: &Value, span: Span, what: &dyn std::fmt::Display) -> Unit {
        let cap = self.limits.max_value_nodes;
        match v.size_up_to(cap) {
            Some(_) => Ok(()),
            None => Err(Box::new(
                RunError::new(
                    RunErrorKind::SizeLimit,
                    span,
                    format!("{what} has more than {cap} parts"),
                )
                .with_help("the value repeats shared parts many times over; build a smaller one"),
            )),
        }
    }
}

/// A call's result as the program's value: `Ok(v)`, or `Err(message)`.
fn as_result(received: Result<Value, String>) -> Value {
    match received {
        Ok(v) => Value::Ok(Rc::new(v)),
        Err(msg) => Value::Err(Rc::new(Value::Str(Rc::from(msg)))),
    }
}
