//! Lowering: a checked program → the combinator IR.
//!
//! One walk over the AST, in source order, that
//!
//! * numbers nodes in pre-order (a node's id is taken before its children's),
//!   so ids depend only on the program text;
//! * resolves every name to a frame slot or a closure capture (flat closure
//!   conversion: a lambda lists the variables it copies when created);
//! * resolves `map`/`filter`/`fold`/`traverse` (unless shadowed) to
//!   `for_each`/`reduce`, eta-expanding partial applications;
//! * recognises the combinator shapes listed in [`super`] (`pipe`, `gather`,
//!   `try_and_check`).
//!
//! Only a [`CheckedProgram`] is accepted, so every name is bound and every
//! call well-typed; a violation is an internal error, never a panic.

use super::value::Value;
use super::{Arm, ArmTest, ForEachMode, Ir, Lambda, Node, NodeId, NodeKind, Step, VarRef};
use crate::scope::Scope;
use crate::source::Span;
use crate::syntax::ast::{Binder, Expr, ExprKind, Ident, Name, PatternKind};
use crate::types::CheckedProgram;
use rustc_hash::FxHashMap;
use std::rc::Rc;

/// Lowering found a program the checker should have rejected (a bug in lt).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LowerError {
    /// What was wrong.
    pub message: String,
    /// Where.
    pub span: Span,
}

/// Lowers a checked program. Errors only on internal inconsistencies.
pub fn lower(program: &CheckedProgram) -> Result<Ir, LowerError> {
    let mut lw = Lowerer {
        nodes: Vec::new(),
        frames: vec![Frame::default()],
        tools: program
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), u32::try_from(i).unwrap_or(u32::MAX)))
            .collect(),
        omitted: program
            .omitted_fields
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect(),
        inlining: Vec::new(),
    };
    let root = lw.expr(&program.program.body)?;
    let frame_size = lw.frames[0].next_slot;
    Ok(Ir {
        nodes: lw.nodes,
        root,
        frame_size,
        tools: program.tools.clone(),
        ty: program.ty.clone(),
        effects: program.effects.clone(),
    })
}

/// The lowering state of one function body (or the top level).
#[derive(Default)]
struct Frame {
    names: Scope<u32>,
    next_slot: u32,
    captures: Vec<(VarRef, Name)>,
    capture_index: FxHashMap<VarRef, u32>,
    /// Every slot of this frame that a name resolved to, in order (for `pipe`).
    touched: Vec<u32>,
}

struct Lowerer {
    nodes: Vec<Node>,
    frames: Vec<Frame>,
    tools: FxHashMap<Name, u32>,
    omitted: FxHashMap<Span, Vec<Name>>,
    /// The library functions written in lt being inlined (innermost last).
    inlining: Vec<Name>,
}

/// The builtins and their arities (one list, in `stdlib`).
const BUILTINS: [(&str, usize); 6] = crate::stdlib::BUILTIN_ARITIES;

fn internal(message: impl Into<String>, span: Span) -> LowerError {
    LowerError {
        message: message.into(),
        span,
    }
}

impl Lowerer {
    /// Reserves the next id (pre-order); the kind is filled in by [`Lowerer::set`].
    fn reserve(&mut self, span: Span) -> NodeId {
        let id = NodeId::try_from(self.nodes.len()).unwrap_or(NodeId::MAX);
        self.nodes.push(Node {
            kind: NodeKind::Const(Value::Unit),
            span,
        });
        id
    }

    fn set(&mut self, id: NodeId, kind: NodeKind) -> NodeId {
        self.nodes[id as usize].kind = kind;
        id
    }

    fn leaf(&mut self, kind: NodeKind, span: Span) -> NodeId {
        let id = self.reserve(span);
        self.set(id, kind)
    }

    fn frame(&mut self) -> &mut Frame {
        let last = self.frames.len() - 1;
        &mut self.frames[last]
    }

    fn bind(&mut self, name: Name) -> u32 {
        let f = self.frame();
        let slot = f.next_slot;
        f.next_slot += 1;
        f.names.push(name, slot);
        slot
    }

    /// Resolves `name` as seen from frame `depth`, adding captures on the way.
    fn resolve_in(&mut self, depth: usize, name: &Name) -> Option<VarRef> {
        if let Some(&slot) = self.frames[depth].names.get(name) {
            self.frames[depth].touched.push(slot);
            return Some(VarRef::Local(slot));
        }
        if depth == 0 {
            return None;
        }
        let outer = self.resolve_in(depth - 1, name)?;
        let f = &mut self.frames[depth];
        let idx = match f.capture_index.get(&outer) {
            Some(&i) => i,
            None => {
                let i = u32::try_from(f.captures.len()).unwrap_or(u32::MAX);
                f.captures.push((outer, name.clone()));
                f.capture_index.insert(outer, i);
                i
            }
        };
        Some(VarRef::Capture(idx))
    }

    fn resolve(&mut self, name: &Name) -> Option<VarRef> {
        self.resolve_in(self.frames.len() - 1, name)
    }

    fn var(&mut self, id: &Ident) -> Result<NodeId, LowerError> {
        let kind = match self.resolve(&id.name) {
            Some(VarRef::Local(s)) => NodeKind::Local(s, id.name.clone()),
            Some(VarRef::Capture(c)) => NodeKind::Capture(c, id.name.clone()),
            None => return Err(internal(format!("unbound name `{}`", id.name), id.span)),
        };
        Ok(self.leaf(kind, id.span))
    }

    fn expr(&mut self, e: &Expr) -> Result<NodeId, LowerError> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.expr_inner(e))
    }

    fn expr_inner(&mut self, e: &Expr) -> Result<NodeId, LowerError> {
        let span = e.span;
        Ok(match &e.kind {
            ExprKind::Unit => self.leaf(NodeKind::Const(Value::Unit), span),
            ExprKind::Bool(b) => self.leaf(NodeKind::Const(Value::Bool(*b)), span),
            ExprKind::Int(n) => self.leaf(NodeKind::Const(Value::Int(*n)), span),
            ExprKind::Float(x) => self.leaf(NodeKind::Const(Value::Float(*x)), span),
            ExprKind::None => self.leaf(NodeKind::Const(Value::None), span),
            ExprKind::Str(s) => self.leaf(NodeKind::Const(Value::Str(Rc::from(s.as_str()))), span),
            ExprKind::Var(id) => match crate::stdlib::lookup(&id.name) {
                Some(native) if native.file.is_some() && self.resolve(&id.name).is_none() => {
                    self.inline(id)?
                }
                Some(native) if self.resolve(&id.name).is_none() => {
                    self.builtin_app(span, id, native.arity(), &[])?
                }
                _ => self.var(id)?,
            },
            ExprKind::Let(chain) => {
                let id = self.reserve(span);
                let mark = self.frame().names.mark();
                let mut steps = Vec::with_capacity(chain.bindings.len());
                let mut uses = Vec::with_capacity(chain.bindings.len());
                for b in &chain.bindings {
                    let t0 = self.frame().touched.len();
                    let value = self.expr(&b.value)?;
                    uses.push(self.frame().touched.split_off(t0));
                    let slot = self.bind(b.name.name.clone());
                    steps.push(Step {
                        name: b.name.name.clone(),
                        slot,
                        value,
                    });
                }
                let t0 = self.frame().touched.len();
                let body = self.expr(&chain.body)?;
                uses.push(self.frame().touched.split_off(t0));
                self.frame().names.reset(mark);
                let kind = if is_pipe(&steps, &uses) {
                    NodeKind::Pipe { steps, body }
                } else {
                    NodeKind::Sequence { steps, body }
                };
                self.set(id, kind)
            }
            ExprKind::Fn { .. } => self.lambda(e)?,
            ExprKind::App(..) => self.app(e)?,
            ExprKind::If(c, a, b) => {
                let id = self.reserve(span);
                let c = self.expr(c)?;
                let a = self.expr(a)?;
                let b = self.expr(b)?;
                self.set(id, NodeKind::If(c, a, b))
            }
            ExprKind::Match(scrutinee, arms) => {
                let id = self.reserve(span);
                let checks = matches!(scrutinee.kind, ExprKind::Exec(..))
                    && arms.iter().any(|a| {
                        matches!(a.pattern.kind, PatternKind::Ok(_)) && contains_exec(&a.body)
                    });
                let s = self.expr(scrutinee)?;
                let mut out = Vec::with_capacity(arms.len());
                for arm in arms {
                    let (test, binder) = match &arm.pattern.kind {
                        PatternKind::Ok(b) => (ArmTest::Ok, binder_name(b)),
                        PatternKind::Err(b) => (ArmTest::Err, binder_name(b)),
                        PatternKind::Wildcard => (ArmTest::Any, None),
                        PatternKind::Var(x) => (ArmTest::Any, Some(x.name.clone())),
                        PatternKind::Some(b) => (ArmTest::Some, binder_name(b)),
                        PatternKind::None => (ArmTest::None, None),
                        PatternKind::Str(s) => (ArmTest::Str(Rc::from(s.as_str())), None),
                    };
                    let mark = self.frame().names.mark();
                    let bind = binder.clone().map(|n| self.bind(n));
                    let body = self.expr(&arm.body)?;
                    self.frame().names.reset(mark);
                    out.push(Arm {
                        test,
                        bind,
                        name: binder,
                        body,
                    });
                }
                let kind = if checks {
                    NodeKind::TryAndCheck { call: s, arms: out }
                } else {
                    NodeKind::Match {
                        scrutinee: s,
                        arms: out,
                    }
                };
                self.set(id, kind)
            }
            ExprKind::Gather(record) => {
                let id = self.reserve(span);
                let ExprKind::Record(fields) = &record.kind else {
                    return Err(internal("a gather that is not a record", span));
                };
                let mut out = Vec::with_capacity(fields.len());
                for f in fields {
                    out.push((f.name.name.clone(), self.expr(&f.value)?));
                }
                self.set(id, NodeKind::Gather { fields: out })
            }
            ExprKind::Approve(tool, arg) => {
                let id = self.reserve(span);
                let Some(&t) = self.tools.get(&tool.name) else {
                    return Err(internal(format!("unknown tool `{}`", tool.name), tool.span));
                };
                let arg = self.expr(arg)?;
                self.set(id, NodeKind::Approve { tool: t, arg })
            }
            ExprKind::Scope(body) => {
                let id = self.reserve(span);
                let body = self.expr(body)?;
                self.set(id, NodeKind::Scope { body })
            }
            ExprKind::Annotate(annotation, body) => {
                let id = self.reserve(span);
                let body = self.expr(body)?;
                self.set(
                    id,
                    NodeKind::Annotate {
                        annotation: Rc::new((**annotation).clone()),
                        body,
                    },
                )
            }
            ExprKind::Record(fields) => {
                let id = self.reserve(span);
                let mut out = Vec::with_capacity(fields.len());
                for f in fields {
                    out.push((f.name.name.clone(), self.expr(&f.value)?));
                }
                // `Option` fields the literal leaves out are `None`.
                if let Some(omitted) = self.omitted.get(&span) {
                    for n in omitted.clone() {
                        let none = self.leaf(NodeKind::Const(Value::None), span);
                        out.push((n, none));
                    }
                }
                self.set(id, NodeKind::Record(out))
            }
            ExprKind::Field(r, name) => {
                let id = self.reserve(span);
                let r = self.expr(r)?;
                self.set(id, NodeKind::Field(r, name.name.clone()))
            }
            ExprKind::List(elems, _) => {
                let id = self.reserve(span);
                let mut out = Vec::with_capacity(elems.len());
                for x in elems {
                    out.push(self.expr(x)?);
                }
                self.set(id, NodeKind::List(out))
            }
            ExprKind::Ok(x) => {
                let id = self.reserve(span);
                let x = self.expr(x)?;
                self.set(id, NodeKind::Ok(x))
            }
            ExprKind::Err(x) => {
                let id = self.reserve(span);
                let x = self.expr(x)?;
                self.set(id, NodeKind::Err(x))
            }
            ExprKind::Some(x) => {
                let id = self.reserve(span);
                let x = self.expr(x)?;
                self.set(id, NodeKind::Some(x))
            }
            ExprKind::Update(base, fields) => {
                let id = self.reserve(span);
                let base = self.expr(base)?;
                let mut out = Vec::with_capacity(fields.len());
                for f in fields {
                    out.push((f.name.name.clone(), self.expr(&f.value)?));
                }
                self.set(id, NodeKind::Update(base, out))
            }
            ExprKind::Exec(tool, arg) => {
                let id = self.reserve(span);
                let Some(&t) = self.tools.get(&tool.name) else {
                    return Err(internal(format!("unknown tool `{}`", tool.name), tool.span));
                };
                let arg = self.expr(arg)?;
                self.set(id, NodeKind::Exec { tool: t, arg })
            }
            ExprKind::Binary(op, _, a, b) => {
                let id = self.reserve(span);
                let a = self.expr(a)?;
                let b = self.expr(b)?;
                self.set(id, NodeKind::Binary(*op, a, b))
            }
            ExprKind::Neg(x) => {
                let id = self.reserve(span);
                let x = self.expr(x)?;
                self.set(id, NodeKind::Neg(x))
            }
            ExprKind::Loop { .. } | ExprKind::Error => {
                return Err(internal(
                    "a construct the checker rejects reached lowering",
                    span,
                ))
            }
        })
    }

    /// `fn a => fn b => body` → one lambda of arity 2.
    fn lambda(&mut self, e: &Expr) -> Result<NodeId, LowerError> {
        let id = self.reserve(e.span);
        let mut params = Vec::new();
        let mut body = e;
        while let ExprKind::Fn { param, body: b, .. } = &body.kind {
            params.push(param.name.clone());
            body = b;
        }
        self.frames.push(Frame::default());
        for p in &params {
            self.bind(p.clone());
        }
        let body = self.expr(body);
        let frame = self.frames.pop().unwrap_or_default();
        let body = body?;
        self.set(
            id,
            NodeKind::Lambda(Box::new(Lambda {
                params,
                frame_size: frame.next_slot,
                captures: frame.captures,
                body,
            })),
        );
        Ok(id)
    }

    /// An application spine `f a b …`, a builtin call when `f` names one.
    fn app(&mut self, e: &Expr) -> Result<NodeId, LowerError> {
        let mut args = Vec::new();
        let mut head = e;
        while let ExprKind::App(f, a) = &head.kind {
            args.push(&**a);
            head = f;
        }
        args.reverse();
        if let ExprKind::Var(id) = &head.kind {
            if &*id.name == "bounded_loop" && args.len() >= 3 && self.resolve(&id.name).is_none() {
                return self.bounded_loop(e.span, id, &args);
            }
            if let Some(&(_, arity)) = BUILTINS.iter().find(|(n, _)| **n == *id.name) {
                if self.resolve(&id.name).is_none() {
                    return self.builtin_app(e.span, id, arity, &args);
                }
            }
            if let Some(native) = crate::stdlib::lookup(&id.name) {
                // A function written in lt is inlined as a lambda (below).
                if native.file.is_none() && self.resolve(&id.name).is_none() {
                    return self.builtin_app(e.span, id, native.arity(), &args);
                }
            }
        }
        let id = self.reserve(e.span);
        let f = self.expr(head)?;
        let mut out = Vec::with_capacity(args.len());
        for a in args {
            out.push(self.expr(a)?);
        }
        Ok(self.set(id, NodeKind::Apply(f, out)))
    }

    /// `bounded_loop N init step …` (the checker requires all three and a
    /// literal bound).
    fn bounded_loop(
        &mut self,
        span: Span,
        name: &Ident,
        args: &[&Expr],
    ) -> Result<NodeId, LowerError> {
        let max = match args[0].kind {
            ExprKind::Int(n) => {
                u32::try_from(n).map_err(|_| internal("a bound out of range", args[0].span))?
            }
            _ => {
                return Err(internal(
                    "a bounded_loop without a literal bound",
                    args[0].span,
                ))
            }
        };
        let outer = (args.len() > 3).then(|| self.reserve(span));
        let inner_span = if args.len() > 3 {
            name.span.to(args[2].span)
        } else {
            span
        };
        let id = self.reserve(inner_span);
        let init = self.expr(args[1])?;
        let step = self.expr(args[2])?;
        self.set(id, NodeKind::BoundedLoop { max, init, step });
        let Some(outer) = outer else {
            return Ok(id);
        };
        let mut rest = Vec::new();
        for a in &args[3..] {
            rest.push(self.expr(a)?);
        }
        Ok(self.set(outer, NodeKind::Apply(id, rest)))
    }

    /// A use of a library function written in lt: its definition (a closed
    /// `fn`) lowered in place, every node given the use's span. The
    /// definition is lowered with the program's scopes set aside, so a
    /// program variable can never be captured by it.
    fn inline(&mut self, id: &Ident) -> Result<NodeId, LowerError> {
        let def = match crate::types::definition::library_definition(&id.name) {
            Some(Ok(def)) => def,
            Some(Err(e)) => {
                return Err(internal(
                    format!(
                        "the library function `{}` ({}) does not check: {}",
                        e.name,
                        e.file,
                        e.problems.join("; ")
                    ),
                    id.span,
                ))
            }
            None => {
                return Err(internal(
                    format!("unknown library function `{}`", id.name),
                    id.span,
                ))
            }
        };
        if self.inlining.contains(&id.name) {
            return Err(internal(
                format!("the library function `{}` uses itself", id.name),
                id.span,
            ));
        }
        self.inlining.push(id.name.clone());
        let first = self.nodes.len();
        let frames = std::mem::replace(&mut self.frames, vec![Frame::default()]);
        let omitted = std::mem::replace(
            &mut self.omitted,
            def.omitted_fields
                .iter()
                .map(|(k, v)| (*k, v.clone()))
                .collect(),
        );
        let result = self.lambda(&def.value);
        self.frames = frames;
        self.omitted = omitted;
        self.inlining.pop();
        for node in &mut self.nodes[first..] {
            node.span = id.span;
        }
        result
    }

    fn builtin_app(
        &mut self,
        span: Span,
        name: &Ident,
        arity: usize,
        args: &[&Expr],
    ) -> Result<NodeId, LowerError> {
        if args.len() > arity {
            // The builtin's result (a function) applied to the rest.
            let id = self.reserve(span);
            let inner_span = name.span.to(args[arity - 1].span);
            let inner = self.builtin_app(inner_span, name, arity, &args[..arity])?;
            let mut rest = Vec::new();
            for a in &args[arity..] {
                rest.push(self.expr(a)?);
            }
            return Ok(self.set(id, NodeKind::Apply(inner, rest)));
        }
        if args.len() == arity {
            let id = self.reserve(span);
            let mut lowered = Vec::with_capacity(arity);
            for a in args {
                lowered.push(self.expr(a)?);
            }
            return Ok(self.set(id, builtin_kind(&name.name, &lowered)));
        }
        // Partial: evaluate the given arguments once, then a lambda over the rest.
        let id = self.reserve(span);
        let mark = self.frame().names.mark();
        let mut steps = Vec::new();
        let mut names = Vec::new();
        let roles: Vec<String> = if crate::stdlib::lookup(&name.name).is_some() {
            (0..arity).map(|i| format!("${i}")).collect()
        } else if arity == 3 {
            vec!["$f".into(), "$init".into(), "$xs".into()]
        } else {
            vec!["$f".into(), "$xs".into()]
        };
        for (a, role) in args.iter().zip(&roles) {
            let value = self.expr(a)?;
            let n: Name = Rc::from(role.as_str());
            let slot = self.bind(n.clone());
            steps.push(Step {
                name: n.clone(),
                slot,
                value,
            });
            names.push(n);
        }
        let lam = self.reserve(span);
        self.frames.push(Frame::default());
        let mut params = Vec::new();
        for role in &roles[args.len()..arity] {
            let n: Name = Rc::from(role.as_str());
            self.bind(n.clone());
            params.push(n.clone());
            names.push(n);
        }
        let result = (|| {
            let body = self.reserve(span);
            let mut lowered = Vec::with_capacity(arity);
            for n in &names {
                let ident = Ident {
                    name: n.clone(),
                    span,
                };
                lowered.push(self.var(&ident)?);
            }
            Ok(self.set(body, builtin_kind(&name.name, &lowered)))
        })();
        let frame = self.frames.pop().unwrap_or_default();
        let body = result?;
        self.set(
            lam,
            NodeKind::Lambda(Box::new(Lambda {
                params,
                frame_size: frame.next_slot,
                captures: frame.captures,
                body,
            })),
        );
        self.frame().names.reset(mark);
        Ok(self.set(id, NodeKind::Sequence { steps, body: lam }))
    }
}

fn builtin_kind(name: &str, args: &[NodeId]) -> NodeKind {
    if let Some(i) = crate::stdlib::index(name) {
        return NodeKind::Native {
            func: u32::try_from(i).unwrap_or(u32::MAX),
            args: args.to_vec(),
        };
    }
    match name {
        "fold" => NodeKind::Reduce {
            func: args[0],
            init: args[1],
            items: args[2],
        },
        _ => NodeKind::ForEach {
            mode: match name {
                "map" => ForEachMode::Map,
                "filter" => ForEachMode::Filter,
                "fan_out" => ForEachMode::FanOut,
                _ => ForEachMode::Traverse,
            },
            func: args[0],
            items: args[1],
        },
    }
}

fn binder_name(b: &Binder) -> Option<Name> {
    match b {
        Binder::Var(x) => Some(x.name.clone()),
        Binder::Wildcard(_) => None,
    }
}

/// True when `e` contains an `exec` (anywhere, lambdas included).
fn contains_exec(e: &Expr) -> bool {
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        if matches!(x.kind, ExprKind::Exec(..)) {
            return true;
        }
        x.kind.for_each_child(|c| stack.push(c));
    }
    false
}

/// A `let` chain of at least two steps is a `pipe` when each step after the
/// first reads the step just before it and no other step of the chain, and
/// the body reads only the last. `uses[i]` are the slots read by step `i`
/// (the body last).
fn is_pipe(steps: &[Step], uses: &[Vec<u32>]) -> bool {
    if steps.len() < 2 {
        return false;
    }
    let chain: rustc_hash::FxHashSet<u32> = steps.iter().map(|s| s.slot).collect();
    (1..=steps.len()).all(|i| {
        let prev = steps[i - 1].slot;
        let read: Vec<u32> = uses[i]
            .iter()
            .copied()
            .filter(|s| chain.contains(s))
            .collect();
        !read.is_empty() && read.iter().all(|s| *s == prev)
    })
}
