//! The interpreter: runs the IR, strictly, left to right, deterministically
//! given the tool outcomes.
//!
//! Design:
//!
//! * **Direct-style and synchronous.** Pure evaluation is a recursive walk
//!   over the IR with no future and no allocation per node; a tool call asks
//!   the [`Host`], which may block this thread on a tokio future. Rust
//!   recursion follows the IR's nesting (bounded by the parser) and function
//!   calls; every function entry goes through `stacker`, so neither a deep
//!   expression nor a long chain of calls can overflow the stack.
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
use super::host::{CallId, CallRequest, Host, PathStep};
use super::limits::{Limits, RunError, RunErrorKind};
use super::ops;
use super::value::{Closure, Value};
use crate::ir::{Arm, ArmTest, ForEachMode, Ir, NodeId, NodeKind, VarRef};
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
    let started = Instant::now();
    let mut m = Machine {
        ir,
        host,
        limits,
        stack: vec![Value::Unit; ir.frame_size as usize],
        base: 0,
        captures: Rc::from(Vec::new()),
        path: Vec::new(),
        steps: 0,
        next_check: 0,
        calls: 0,
        deadline: limits.timeout.map(|t| started + t),
    };
    let result = m
        .eval(ir.root)
        .and_then(|v| {
            m.check_size(&v, ir.node(ir.root).span, "the program's value")?;
            Ok(v)
        })
        .map_err(|e| *e);
    let stats = RunStats {
        calls: m.calls,
        steps: m.steps,
    };
    (result, stats)
}

struct Machine<'a> {
    ir: &'a Ir,
    host: &'a mut dyn Host,
    limits: &'a Limits,
    stack: Vec<Value>,
    base: usize,
    captures: Rc<[Value]>,
    path: Vec<PathStep>,
    steps: u64,
    /// The step count at which `charge` next looks at the limit and the clock.
    next_check: u64,
    calls: u64,
    deadline: Option<Instant>,
}

/// Errors are boxed so that the hot `Ok` path returns a small value.
type Eval = Result<Value, Box<RunError>>;
type Unit = Result<(), Box<RunError>>;

impl Machine<'_> {
    fn span(&self, id: NodeId) -> Span {
        self.ir.node(id).span
    }

    /// Charges `n` steps of fuel; one comparison on the hot path, the limit
    /// and the clock (every 1,024 steps) checked out of line.
    #[inline(always)]
    fn charge(&mut self, n: u64, id: NodeId) -> Unit {
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

    fn check_clock(&self, id: NodeId) -> Unit {
        match (self.deadline, self.limits.timeout) {
            (Some(d), Some(t)) if Instant::now() >= d => Err(Box::new(
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

    /// Evaluates node `id`. The frequent kinds are handled here; the rest
    /// out of line, which keeps this function's stack frame small.
    fn eval(&mut self, id: NodeId) -> Eval {
        self.charge(1, id)?;
        let ir = self.ir;
        match &ir.node(id).kind {
            NodeKind::Const(v) => Ok(v.clone()),
            NodeKind::Local(s, _) => Ok(self.stack[self.base + *s as usize].clone()),
            NodeKind::Capture(c, _) => Ok(self.captures[*c as usize].clone()),
            NodeKind::Binary(op, a, b) => {
                let op = *op;
                let a = self.operand(*a)?;
                if let Some(v) = ops::short_circuit(op, &a) {
                    return Ok(v);
                }
                let b = self.operand(*b)?;
                if let Some(v) = ops::fast(op, &a, &b) {
                    return Ok(v);
                }
                self.binary_slow(id, op, &a, &b)
            }
            NodeKind::Apply(f, args) => {
                let f = self.eval(*f)?;
                for a in args {
                    let v = self.eval(*a)?;
                    self.stack.push(v);
                }
                self.invoke(&f, args.len(), PathStep::Apply { node: id }, id)
            }
            _ => self.eval_other(id),
        }
    }

    /// [`Machine::eval`] with variables and literals read in place (the
    /// operands of most operators), saving a call per leaf. Same fuel.
    #[inline(always)]
    fn operand(&mut self, id: NodeId) -> Eval {
        let ir = self.ir;
        match &ir.node(id).kind {
            NodeKind::Local(s, _) => {
                self.charge(1, id)?;
                Ok(self.stack[self.base + *s as usize].clone())
            }
            NodeKind::Const(v) => {
                self.charge(1, id)?;
                Ok(v.clone())
            }
            _ => self.eval(id),
        }
    }

    #[inline(never)]
    fn binary_slow(
        &mut self,
        id: NodeId,
        op: crate::syntax::ast::BinOp,
        a: &Value,
        b: &Value,
    ) -> Eval {
        let span = self.span(id);
        ops::binary(op, a, b, self.limits, &mut self.steps, span).map_err(Box::new)
    }

    /// Every compound node passes here, so the stack is checked at every
    /// level of nesting but a run of operators (`a + b + …`, at most the
    /// parser's depth limit of small `eval` frames, about 200 KB) — less
    /// than the 256 KB red zone.
    #[inline(never)]
    fn eval_other(&mut self, id: NodeId) -> Eval {
        stacker::maybe_grow(256 * 1024, 4 * 1024 * 1024, || self.eval_compound(id))
    }

    fn eval_compound(&mut self, id: NodeId) -> Eval {
        let ir = self.ir;
        let node = ir.node(id);
        match &node.kind {
            NodeKind::Const(_)
            | NodeKind::Local(..)
            | NodeKind::Capture(..)
            | NodeKind::Binary(..)
            | NodeKind::Apply(..) => Err(internal(node.span, "hot node kind in eval_other")),
            NodeKind::Sequence { steps, body } | NodeKind::Pipe { steps, body } => {
                for step in steps {
                    let v = self.eval(step.value)?;
                    self.stack[self.base + step.slot as usize] = v;
                }
                self.eval(*body)
            }
            NodeKind::Record(fields) | NodeKind::Gather { fields } => {
                let mut out = Vec::with_capacity(fields.len());
                for (name, f) in fields {
                    out.push((name.clone(), self.eval(*f)?));
                }
                Ok(Value::Record(out.into()))
            }
            NodeKind::Field(r, name) => match self.eval(*r)? {
                Value::Record(fields) => fields
                    .iter()
                    .find(|(n, _)| Rc::ptr_eq(n, name) || n == name)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| internal(node.span, format!("record has no field `{name}`"))),
                other => Err(internal(
                    node.span,
                    format!("field `{name}` of a non-record {other}"),
                )),
            },
            NodeKind::List(items) => {
                let mut out = Vec::with_capacity(items.len());
                for x in items {
                    out.push(self.eval(*x)?);
                }
                Ok(Value::List(out.into()))
            }
            NodeKind::Ok(x) => Ok(Value::Ok(Rc::new(self.eval(*x)?))),
            NodeKind::Err(x) => Ok(Value::Err(Rc::new(self.eval(*x)?))),
            NodeKind::Neg(x) => match self.eval(*x)? {
                Value::Int(n) => n.checked_neg().map(Value::Int).ok_or_else(|| {
                    Box::new(RunError::new(
                        RunErrorKind::Arithmetic,
                        node.span,
                        format!("integer overflow: -({n})"),
                    ))
                }),
                other => Err(internal(node.span, format!("negation of {other}"))),
            },
            NodeKind::If(c, a, b) => match self.eval(*c)? {
                Value::Bool(true) => self.eval(*a),
                Value::Bool(false) => self.eval(*b),
                other => Err(internal(node.span, format!("`if` on {other}"))),
            },
            NodeKind::Match { scrutinee, arms } => {
                let v = self.eval(*scrutinee)?;
                self.select(id, v, arms)
            }
            NodeKind::TryAndCheck { call, arms } => {
                let v = self.eval(*call)?;
                self.select(id, v, arms)
            }
            NodeKind::Lambda(l) => {
                let captures: Rc<[Value]> = l
                    .captures
                    .iter()
                    .map(|(r, _)| match r {
                        VarRef::Local(s) => self.stack[self.base + *s as usize].clone(),
                        VarRef::Capture(c) => self.captures[*c as usize].clone(),
                    })
                    .collect();
                Ok(Value::Fn(Rc::new(Closure {
                    lambda: id,
                    captures,
                    args: Vec::new(),
                })))
            }
            NodeKind::ForEach { mode, func, items } => self.for_each(id, *mode, *func, *items),
            NodeKind::Reduce { func, init, items } => {
                let f = self.eval(*func)?;
                let mut acc = self.eval(*init)?;
                let items = self.list(*items)?;
                let callee = self.enter(&f, 2);
                for (i, x) in items.iter().enumerate() {
                    acc = self.call(&callee, [acc, x.clone()], item(id, i), id)?;
                }
                self.leave(callee);
                Ok(acc)
            }
            NodeKind::Exec { tool, arg } => {
                let arg = self.eval(*arg)?;
                self.exec(id, *tool, &arg)
            }
        }
    }

    /// Runs the first arm that accepts `v`, with its binder set.
    fn select(&mut self, id: NodeId, v: Value, arms: &[Arm]) -> Eval {
        for arm in arms {
            let bound = match (arm.test, &v) {
                (ArmTest::Ok, Value::Ok(x)) | (ArmTest::Err, Value::Err(x)) => (**x).clone(),
                (ArmTest::Any, _) => v.clone(),
                _ => continue,
            };
            if let Some(slot) = arm.bind {
                self.stack[self.base + slot as usize] = bound;
            }
            return self.eval(arm.body);
        }
        Err(internal(self.span(id), format!("no arm matches {v}")))
    }

    fn list(&mut self, id: NodeId) -> Result<Rc<[Value]>, Box<RunError>> {
        match self.eval(id)? {
            Value::List(items) => Ok(items),
            other => Err(internal(
                self.span(id),
                format!("expected a list, found {other}"),
            )),
        }
    }

    fn for_each(&mut self, id: NodeId, mode: ForEachMode, func: NodeId, items: NodeId) -> Eval {
        let f = self.eval(func)?;
        let items = self.list(items)?;
        let mut out = Vec::with_capacity(if mode == ForEachMode::Filter {
            0
        } else {
            items.len()
        });
        let callee = self.enter(&f, 1);
        for (i, x) in items.iter().enumerate() {
            let r = self.call(&callee, [x.clone()], item(id, i), id)?;
            match (mode, r) {
                (ForEachMode::Map, v) => out.push(v),
                (ForEachMode::Filter, Value::Bool(keep)) => {
                    if keep {
                        out.push(x.clone());
                    }
                }
                (ForEachMode::Traverse, Value::Ok(v)) => out.push((*v).clone()),
                (ForEachMode::Traverse, Value::Err(e)) => {
                    self.leave(callee);
                    return Ok(Value::Err(e));
                }
                (_, other) => {
                    return Err(internal(
                        self.span(id),
                        format!("unexpected callback result {other}"),
                    ))
                }
            }
        }
        self.leave(callee);
        let list = Value::List(out.into());
        Ok(if mode == ForEachMode::Traverse {
            Value::Ok(Rc::new(list))
        } else {
            list
        })
    }

    /// Prepares `f` to be called once per item with `arity` arguments. A
    /// lambda of exactly that arity gets its frame set up here, once for the
    /// whole loop (the common `fold (fn acc => fn x => …)`); any other
    /// function value is applied through [`Machine::invoke`] each time.
    fn enter(&mut self, f: &Value, arity: usize) -> Callee {
        let ir = self.ir;
        if let Value::Fn(clo) = f {
            if let NodeKind::Lambda(lam) = &ir.node(clo.lambda).kind {
                if clo.args.is_empty() && lam.params.len() == arity {
                    let base = self.stack.len();
                    self.stack
                        .resize(base + lam.frame_size as usize, Value::Unit);
                    let saved_base = std::mem::replace(&mut self.base, base);
                    let saved_captures =
                        std::mem::replace(&mut self.captures, clo.captures.clone());
                    return Callee::Frame {
                        body: lam.body,
                        base,
                        saved_base,
                        saved_captures,
                    };
                }
            }
        }
        Callee::General(f.clone())
    }

    /// Calls a callee prepared by [`Machine::enter`] with one item's arguments.
    fn call<const N: usize>(
        &mut self,
        callee: &Callee,
        args: [Value; N],
        site: PathStep,
        at: NodeId,
    ) -> Eval {
        match callee {
            Callee::Frame { body, base, .. } => {
                for (k, a) in args.into_iter().enumerate() {
                    self.stack[base + k] = a;
                }
                // No stack check here: a compound body checks in
                // `eval_other`, an application in `invoke`.
                self.path.push(site);
                let r = self.eval(*body);
                self.path.pop();
                r
            }
            Callee::General(f) => {
                self.stack.extend(args);
                self.invoke(f, N, site, at)
            }
        }
    }

    /// Ends a loop begun with [`Machine::enter`], restoring the caller's frame.
    fn leave(&mut self, callee: Callee) {
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
        }
    }

    /// Applies `f` to the `nargs` values on top of the stack (curried:
    /// fewer arguments make a partial application, more apply the result to
    /// the rest). `site` is pushed on the call path while the body runs.
    fn invoke(&mut self, f: &Value, nargs: usize, site: PathStep, at: NodeId) -> Eval {
        let Value::Fn(clo) = f else {
            return Err(internal(
                self.span(at),
                format!("applying a non-function {f}"),
            ));
        };
        let ir = self.ir;
        let NodeKind::Lambda(lam) = &ir.node(clo.lambda).kind else {
            return Err(internal(self.span(at), "closure without a lambda"));
        };
        let mut nargs = nargs;
        if !clo.args.is_empty() {
            let at = self.stack.len() - nargs;
            self.stack.splice(at..at, clo.args.iter().cloned());
            nargs += clo.args.len();
        }
        let arity = lam.params.len();
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
        if lam.frame_size as usize > arity {
            self.stack
                .resize(base + lam.frame_size as usize, Value::Unit);
        }
        let saved_base = std::mem::replace(&mut self.base, base);
        let saved_captures = std::mem::replace(&mut self.captures, clo.captures.clone());
        self.path.push(site);
        let result = stacker::maybe_grow(256 * 1024, 4 * 1024 * 1024, || self.eval(lam.body));
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
    fn exec(&mut self, id: NodeId, tool: u32, arg: &Value) -> Eval {
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
        self.check_size(arg, span, &format!("the argument of {}", sig.name))?;
        self.check_clock(id)?;
        self.calls += 1;
        let call_id = CallId {
            node: id,
            path: self.path.clone(),
        };
        let time_left = self
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()));
        let outcome = self.host.call(CallRequest {
            id: &call_id,
            tool: &sig.name,
            arg: arg.to_json(),
            time_left,
        });
        let value = match outcome {
            Ok(json) => match boundary::check_lists(&json, self.limits.max_list_len) {
                Err(msg) => Value::Err(Rc::new(Value::Str(Rc::from(format!(
                    "tool {} returned an invalid result: {msg}",
                    sig.name
                ))))),
                Ok(()) => match boundary::tool_result(&sig.name, &json, &sig.output) {
                    Ok(v) => Value::Ok(Rc::new(v)),
                    Err(msg) => Value::Err(Rc::new(Value::Str(Rc::from(msg)))),
                },
            },
            Err(failure) => Value::Err(Rc::new(Value::Str(Rc::from(failure.message)))),
        };
        self.check_clock(id)?;
        Ok(value)
    }

    fn check_size(&self, v: &Value, span: Span, what: &str) -> Unit {
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

#[cold]
fn internal(span: Span, message: impl Into<String>) -> Box<RunError> {
    Box::new(RunError::internal(span, message))
}

/// A callback prepared for a loop (see [`Machine::enter`]).
enum Callee {
    /// A lambda whose frame is in place: each call writes the parameters.
    Frame {
        body: NodeId,
        base: usize,
        saved_base: usize,
        saved_captures: Rc<[Value]>,
    },
    /// Any other function value.
    General(Value),
}

fn item(node: NodeId, index: usize) -> PathStep {
    PathStep::Item {
        node,
        index: u32::try_from(index).unwrap_or(u32::MAX),
    }
}
