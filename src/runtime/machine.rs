//! The interpreter's state and the shapes its parts share: the
//! [`Machine`] that `eval.rs` runs, the compiled closures it calls
//! ([`Compiled`], built by `compile.rs`), the callbacks of loops
//! ([`Callee`]), and what a batch or a `scope` keeps ([`Deferred`],
//! [`Compensation`]). Below `eval.rs`, `compile.rs`, `natives.rs` and
//! `batch.rs`, which add the machine's methods.

use super::cancel::Cancel;
use super::host::{CallId, Host, PathStep};
use super::limits::{Limits, RunError};
use super::value::Value;
use crate::ir::Ir;
use crate::source::Span;
use std::rc::Rc;
use std::time::Instant;

/// A compiled node.
pub(super) type Code = Box<dyn Fn(&mut Machine<'_>) -> Eval>;

/// A compiled lambda: what [`Machine::invoke`] needs to enter it.
pub(super) struct LambdaCode {
    /// Parameters (slots `0..arity`).
    pub arity: usize,
    /// Slots of its frame.
    pub frame_size: usize,
    /// The body.
    pub body: Code,
}

/// A compiled program.
pub(super) struct Compiled {
    /// The program's expression.
    pub root: Code,
    /// `lambdas[id]` is the lambda at node `id` (`None` for other nodes).
    pub lambdas: Vec<Option<LambdaCode>>,
}

/// The interpreter's state. The compiled closures ([`super::compile`])
/// read and write it directly.
pub(super) struct Machine<'a> {
    pub(super) ir: &'a Ir,
    pub(super) code: &'a Compiled,
    pub(super) host: &'a mut dyn Host,
    pub(super) limits: &'a Limits,
    /// The value stack; the current frame is `stack[base..]`.
    pub(super) stack: Vec<Value>,
    /// Where the current frame begins.
    pub(super) base: usize,
    /// The current closure's captured values.
    pub(super) captures: Rc<[Value]>,
    pub(super) path: Vec<PathStep>,
    pub(super) steps: u64,
    /// The step count at which `charge` next looks at the limit and the clock.
    pub(super) next_check: u64,
    pub(super) calls: u64,
    /// Bytes of strings built by `++` so far.
    pub(super) built_bytes: usize,
    pub(super) deadline: Option<Instant>,
    /// Tripped from outside: the run stops at the next clock check.
    pub(super) cancel: Option<&'a Cancel>,
    /// While the calls of a `gather`/`fan_out` are collected: an `exec`
    /// evaluates its argument, then is queued here instead of run
    /// ([`super::batch`]).
    pub(super) deferred: Option<Vec<Deferred>>,
    /// The `@intent` annotations being evaluated, innermost last, each with
    /// the calls made directly under it.
    pub(super) intents: Vec<(String, Vec<String>)>,
    /// The `scope`s being evaluated, innermost last, each with the undos of
    /// the calls that completed inside it, oldest first.
    pub(super) scopes: Vec<Vec<Compensation>>,
}

/// The result of evaluating a node. Errors are boxed so that the hot `Ok`
/// path returns a small value.
pub(super) type Eval = Result<Value, Box<RunError>>;

/// An internal error (a bug in lt) at `span`, boxed.
#[cold]
pub(super) fn internal(span: Span, message: impl Into<String>) -> Box<RunError> {
    Box::new(RunError::internal(span, message))
}

/// A callback prepared for a loop (see [`Machine::enter`]).
pub(super) enum Callee<'a> {
    /// A lambda whose frame is in place: each call writes the parameters.
    Frame {
        body: &'a Code,
        base: usize,
        saved_base: usize,
        saved_captures: Rc<[Value]>,
    },
    /// Any other function value.
    General(Value),
}

/// The undo of a completed call, kept by the innermost `scope`.
pub(crate) struct Compensation {
    /// The undo tool.
    pub(super) tool: u32,
    /// Its argument.
    pub(super) arg: Value,
    /// The undone call.
    pub(super) of: CallId,
}

/// A call queued while a batch is collected.
pub(crate) struct Deferred {
    pub(super) tool: u32,
    pub(super) value: Value,
    pub(super) call_id: CallId,
    pub(super) arg: serde_json::Value,
    pub(super) time_left: Option<std::time::Duration>,
}
