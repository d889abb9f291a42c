//! The combinator IR: what a checked program lowers to and what the
//! interpreter runs.
//!
//! ```text
//! CheckedProgram ──lower──▶ Ir { nodes (arena, pre-order ids), root, tools }
//! ```
//!
//! Node kinds carry the names of the tool-call combinators (seed 000,
//! "Tool Call Combinators") wherever the surface construct has the same
//! meaning; everything else is a pure expression node. The mapping:
//!
//! | surface | IR node | seed meaning |
//! |---|---|---|
//! | `let x = a in let y = b in c` | `sequence` | `bind`: each step sees the ones before |
//! | a `let` chain in which every step reads only the step just before it, and the body only the last | `pipe` | Kleisli composition: A's output feeds B |
//! | `traverse f xs` | `for_each[traverse]` | `traverse`: in list order, stops at the first `Err` |
//! | `map f xs`, `filter p xs` | `for_each[map]`, `for_each[filter]` | apply a template over a list (pure) |
//! | `fold f init xs` | `reduce` | `foldMap`: accumulate across items |
//! | `gather {a = exec tool t x, b = exec tool u y}` (extension) | `gather` | named results of independent calls, run concurrently |
//! | `fan_out (fn x => exec tool t e) xs` (extension) | `for_each[fan_out]` | one call per item, run concurrently, results in list order |
//! | `bounded_loop N init step` (extension) | `bounded_loop` | repeat the step at most N times, until it says `done` |
//! | `scope { e }` (extension) | `scope` | on `Err`, undo the calls that completed inside, newest first |
//! | `approve tool t x` (extension) | `approve` | ask the control plane for a one-call approval token |
//! | `@intent("…") e` (extension) | `annotate` | intent, hypothesis and notes recorded with the calls of `e` |
//! | `match exec tool t x { Ok(r) => …exec…, Err(e) => … }` (the `Ok` arm calls a tool) | `try_and_check` | do A, then check with B |
//! | `exec tool t x` | `exec` | one tool call, with a call identity |
//!
//! A plain record whose fields are calls is a `record`: its calls run one
//! after another, left to right, as in λ-Tool.
//!
//! Invariants the interpreter relies on:
//!
//! * ids are pre-order positions: the same program text always lowers to the
//!   same ids, so a call identity ([`crate::runtime::host::CallId`]: `exec`
//!   node id + iteration path) is stable across runs;
//! * names are resolved: a variable is a slot of the current function's
//!   frame ([`NodeKind::Local`]) or of its closure ([`NodeKind::Capture`]);
//! * curried lambdas `fn a => fn b => e` are one [`Lambda`] of arity 2, so a
//!   `fold` callback is entered once per element without building a closure;
//! * builtins are resolved: a partial application such as `map f` becomes a
//!   `sequence` that evaluates `f` once and a lambda over the missing list.

pub mod lower;
pub mod print;
pub mod value;

use crate::source::Span;
use crate::syntax::ast::{BinOp, Name};
use crate::types::{EffectSet, ToolSig, Type};
use std::rc::Rc;
use value::Value;

/// An index into [`Ir::nodes`]; also the node's stable id (pre-order).
pub type NodeId = u32;

/// A lowered program.
#[derive(Debug)]
pub struct Ir {
    /// Every node; `nodes[id]` is node `id`.
    pub nodes: Vec<Node>,
    /// The program's expression.
    pub root: NodeId,
    /// Slots the top-level frame needs.
    pub frame_size: u32,
    /// The declared tools; [`NodeKind::Exec`] refers to them by index.
    pub tools: Vec<ToolSig>,
    /// The program's type.
    pub ty: Type,
    /// The program's effects.
    pub effects: EffectSet,
}

impl Ir {
    /// The node with id `id`.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id as usize]
    }

    /// The tools the program may call, by name, in declaration order.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| &*t.name)
    }
}

/// One node: its kind and the source it came from.
#[derive(Clone, Debug)]
pub struct Node {
    /// What it computes.
    pub kind: NodeKind,
    /// The surface expression it was lowered from.
    pub span: Span,
}

/// How `for_each` combines its callback's results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForEachMode {
    /// `map`: collect every result.
    Map,
    /// `filter`: keep the items for which the predicate is `true`.
    Filter,
    /// `traverse`: collect `Ok` payloads, stop at the first `Err` and return it.
    Traverse,
    /// `fan_out` (extension): the function's body is one `exec`; every
    /// item's call is started (concurrently) and the Results collected in
    /// list order.
    FanOut,
}

impl ForEachMode {
    /// `map`, `filter`, `traverse` or `fan_out`.
    pub fn as_str(self) -> &'static str {
        match self {
            ForEachMode::Map => "map",
            ForEachMode::Filter => "filter",
            ForEachMode::Traverse => "traverse",
            ForEachMode::FanOut => "fan_out",
        }
    }
}

/// What a match arm accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArmTest {
    /// `Ok(_)`: binds the payload.
    Ok,
    /// `Err(_)`: binds the payload.
    Err,
    /// `_` or a variable: anything; binds the whole value.
    Any,
    /// `Some(_)`: binds the payload (extension).
    Some,
    /// `None` (extension).
    None,
    /// A string literal (extension): an equal string.
    Str(Rc<str>),
}

/// A match arm: a test, the slot its binder fills (none for `_`), a body.
#[derive(Clone, Debug)]
pub struct Arm {
    /// What the arm accepts.
    pub test: ArmTest,
    /// The slot of the bound name in the current frame, if any.
    pub bind: Option<u32>,
    /// The bound name (for printing).
    pub name: Option<Name>,
    /// The body.
    pub body: NodeId,
}

/// One binding of a `sequence` or `pipe`.
#[derive(Clone, Debug)]
pub struct Step {
    /// The bound name (for printing).
    pub name: Name,
    /// Its slot in the current frame.
    pub slot: u32,
    /// The bound value.
    pub value: NodeId,
}

/// Where a lambda's captured variable comes from, in the frame where the
/// lambda is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VarRef {
    /// A slot of the creating frame.
    Local(u32),
    /// A capture of the creating closure.
    Capture(u32),
}

/// A function literal, possibly of several curried parameters.
#[derive(Clone, Debug)]
pub struct Lambda {
    /// The parameter names (slots `0..params.len()`).
    pub params: Vec<Name>,
    /// Slots the function's frame needs (parameters included).
    pub frame_size: u32,
    /// What the closure copies when it is created, in capture-index order,
    /// with the captured variables' names.
    pub captures: Vec<(VarRef, Name)>,
    /// The body.
    pub body: NodeId,
}

/// The node kinds: the seed's combinators, `exec`, and pure expressions.
#[derive(Clone, Debug)]
pub enum NodeKind {
    // ---- combinators (seed 000) ----
    /// `let` chain: bind each step in order, then the body.
    Sequence {
        /// The bindings, in order.
        steps: Vec<Step>,
        /// The chain's value.
        body: NodeId,
    },
    /// A `let` chain where each step feeds only the next (see the module table).
    Pipe {
        /// The stages, in order.
        steps: Vec<Step>,
        /// The chain's value.
        body: NodeId,
    },
    /// `map` / `filter` / `traverse`: the callback over the list, in order.
    ForEach {
        /// How results combine.
        mode: ForEachMode,
        /// The callback (a function value).
        func: NodeId,
        /// The list.
        items: NodeId,
    },
    /// `fold f init xs`: `acc = f acc x` for each item, in order.
    Reduce {
        /// The step function `acc -> item -> acc`.
        func: NodeId,
        /// The initial accumulator.
        init: NodeId,
        /// The list.
        items: NodeId,
    },
    /// A record of tool calls: each field an `exec`, run left to right.
    Gather {
        /// The named calls.
        fields: Vec<(Name, NodeId)>,
    },
    /// A match on a call whose `Ok` arm calls a tool (the check).
    TryAndCheck {
        /// The `exec` node (the "do").
        call: NodeId,
        /// The arms, in source order.
        arms: Vec<Arm>,
    },
    /// `@intent(…) body` (extension): the annotation is recorded, and the
    /// calls made while `body` runs are linked to it.
    Annotate {
        /// What the program says it is doing.
        annotation: Rc<crate::syntax::ast::Annotation>,
        /// The annotated expression.
        body: NodeId,
    },
    /// `approve tool NAME arg` (extension): asks the host for an approval
    /// token for one call of tool `tool` with `arg`.
    Approve {
        /// Index into [`Ir::tools`].
        tool: u32,
        /// The argument (the input without its `!Approval` fields).
        arg: NodeId,
    },
    /// `scope { body }` (extension): when `body`'s value is `Err`, the
    /// undo of every call that completed inside it runs, newest first; when
    /// it is `Ok`, the undos pass to the enclosing scope, if any.
    Scope {
        /// The scoped expression (a Result).
        body: NodeId,
    },
    /// `bounded_loop max init step` (extension): `state = init`; up to
    /// `max` times `r = step state`, stopping when `r.done`; the value is
    /// `{done, value}` of the last step (`done = false`: the bound was reached).
    BoundedLoop {
        /// The most iterations (the literal in the program).
        max: u32,
        /// The initial state.
        init: NodeId,
        /// The step function `s -> {done: Bool, value: s}`.
        step: NodeId,
    },
    /// `exec tool NAME arg`.
    Exec {
        /// Index into [`Ir::tools`].
        tool: u32,
        /// The argument.
        arg: NodeId,
    },
    // ---- pure expression nodes ----
    /// A literal.
    Const(Value),
    /// A slot of the current frame, and the variable's name (for printing).
    Local(u32, Name),
    /// A captured variable of the current closure, and its name.
    Capture(u32, Name),
    /// A record literal (fields in source order).
    Record(Vec<(Name, NodeId)>),
    /// `e.field`.
    Field(NodeId, Name),
    /// A list literal.
    List(Vec<NodeId>),
    /// `Ok(e)`.
    Ok(NodeId),
    /// `Err(e)`.
    Err(NodeId),
    /// `Some(e)` (extension).
    Some(NodeId),
    /// `{r with f = v, …}` (extension): the record with fields replaced.
    Update(NodeId, Vec<(Name, NodeId)>),
    /// A standard-library function applied to all its arguments
    /// (extension): `func` indexes [`crate::stdlib::NATIVES`].
    Native {
        /// Which native.
        func: u32,
        /// The arguments, left to right.
        args: Vec<NodeId>,
    },
    /// `a op b` (`&&` and `||` short-circuit).
    Binary(BinOp, NodeId, NodeId),
    /// `-e`.
    Neg(NodeId),
    /// `if c then a else b`.
    If(NodeId, NodeId, NodeId),
    /// `match e { arms }`.
    Match {
        /// The matched value.
        scrutinee: NodeId,
        /// The arms, in source order; the first that accepts runs.
        arms: Vec<Arm>,
    },
    /// `fn x => e` (curried parameters merged).
    Lambda(Box<Lambda>),
    /// `f a b …`: the function, then the arguments, left to right.
    Apply(NodeId, Vec<NodeId>),
}

impl NodeKind {
    /// The kind's name as printed by `--emit ir` (the seed's name for combinators).
    pub fn name(&self) -> &'static str {
        match self {
            NodeKind::Sequence { .. } => "sequence",
            NodeKind::Pipe { .. } => "pipe",
            NodeKind::ForEach { .. } => "for_each",
            NodeKind::Reduce { .. } => "reduce",
            NodeKind::Gather { .. } => "gather",
            NodeKind::TryAndCheck { .. } => "try_and_check",
            NodeKind::Exec { .. } => "exec",
            NodeKind::Annotate { .. } => "annotate",
            NodeKind::Scope { .. } => "scope",
            NodeKind::Approve { .. } => "approve",
            NodeKind::BoundedLoop { .. } => "bounded_loop",
            NodeKind::Const(_) => "const",
            NodeKind::Local(..) => "local",
            NodeKind::Capture(..) => "capture",
            NodeKind::Record(_) => "record",
            NodeKind::Field(..) => "field",
            NodeKind::List(_) => "list",
            NodeKind::Ok(_) => "ok",
            NodeKind::Err(_) => "err",
            NodeKind::Some(_) => "some",
            NodeKind::Update(..) => "update",
            NodeKind::Native { .. } => "native",
            NodeKind::Binary(..) => "binary",
            NodeKind::Neg(_) => "neg",
            NodeKind::If(..) => "if",
            NodeKind::Match { .. } => "match",
            NodeKind::Lambda(_) => "lambda",
            NodeKind::Apply(..) => "apply",
        }
    }
}
