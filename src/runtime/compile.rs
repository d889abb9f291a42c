//! Closure compilation: the IR → a tree of Rust closures, built once per
//! run, which the [`Machine`] then calls.
//!
//! Each node becomes one boxed closure that evaluates its children by
//! calling theirs, so dispatch is an indirect call instead of a `match` on
//! the node kind, and the common shapes are specialised when compiled:
//! an operator whose operands are variables or literals reads them in place
//! (`acc + x` is one closure, charged three steps as before). Fuel is one
//! step per IR node, exactly as documented in [`super::limits::Limits`].
//!
//! Stack safety: Rust recursion follows the IR's nesting; every 16 levels of
//! nesting inside a function body, and at every function entry
//! ([`Machine::invoke`]), the stack is grown on demand (`stacker`).

use super::host::PathStep;
use super::machine::{internal, Callee, Code, Compiled, Eval, LambdaCode, Machine};
use super::ops;
use super::value::{Closure, Value};
use crate::ir::{Arm, ArmTest, ForEachMode, Ir, NodeId, NodeKind, VarRef};
use crate::syntax::ast::{BinOp, Name};
use std::rc::Rc;

/// Every this many levels of nesting the stack is checked.
const CHECK_EVERY: u32 = 16;

/// Compiles `ir`.
pub(super) fn compile(ir: &Ir) -> Compiled {
    let mut c = Compiler {
        ir,
        lambdas: (0..ir.nodes.len()).map(|_| None).collect(),
    };
    let root = c.node(ir.root, 0);
    Compiled {
        root,
        lambdas: c.lambdas,
    }
}

struct Compiler<'a> {
    ir: &'a Ir,
    lambdas: Vec<Option<LambdaCode>>,
}

/// Where an operand comes from when it can be read in place.
#[derive(Clone)]
enum Leaf {
    Local(usize),
    Const(Value),
}

impl Leaf {
    #[inline(always)]
    fn read<'v>(&'v self, m: &'v Machine<'_>) -> &'v Value {
        match self {
            Leaf::Local(s) => &m.stack[m.base + s],
            Leaf::Const(v) => v,
        }
    }
}

/// The body of a `fold` function that is one operator: see
/// [`Compiler::operator_step`].
struct OperatorStep {
    /// The operator's node (charged, and named by its errors).
    body: NodeId,
    op: BinOp,
    a: Operand,
    b: Operand,
}

/// An operand of an [`OperatorStep`].
enum Operand {
    /// The accumulator (the function's first parameter).
    Acc,
    /// The element (its second parameter).
    Elem,
    /// A literal.
    Const(Value),
}

impl Operand {
    #[inline(always)]
    fn pick<'v>(&'v self, acc: &'v Value, x: &'v Value) -> &'v Value {
        match self {
            Operand::Acc => acc,
            Operand::Elem => x,
            Operand::Const(v) => v,
        }
    }
}

impl Compiler<'_> {
    fn leaf(&self, id: NodeId) -> Option<Leaf> {
        match &self.ir.node(id).kind {
            NodeKind::Local(s, _) => Some(Leaf::Local(*s as usize)),
            NodeKind::Const(v) => Some(Leaf::Const(v.clone())),
            _ => None,
        }
    }

    /// Compiles node `id` at nesting `depth` within its function body.
    fn node(&mut self, id: NodeId, depth: u32) -> Code {
        let code = stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.node_inner(id, depth));
        if depth > 0 && depth.is_multiple_of(CHECK_EVERY) {
            Box::new(move |m: &mut Machine<'_>| {
                stacker::maybe_grow(256 * 1024, 4 * 1024 * 1024, || code(m))
            })
        } else {
            code
        }
    }

    fn node_inner(&mut self, id: NodeId, depth: u32) -> Code {
        let ir = self.ir;
        let d = depth + 1;
        match &ir.node(id).kind {
            NodeKind::Const(v) => {
                let v = v.clone();
                Box::new(move |m| {
                    m.charge(1, id)?;
                    Ok(v.clone())
                })
            }
            NodeKind::Local(s, _) => {
                let s = *s as usize;
                Box::new(move |m| {
                    m.charge(1, id)?;
                    Ok(m.stack[m.base + s].clone())
                })
            }
            NodeKind::Capture(c, _) => {
                let c = *c as usize;
                Box::new(move |m| {
                    m.charge(1, id)?;
                    Ok(m.captures[c].clone())
                })
            }
            NodeKind::Sequence { steps, body } | NodeKind::Pipe { steps, body } => {
                let steps: Vec<(usize, Code)> = steps
                    .iter()
                    .map(|s| (s.slot as usize, self.node(s.value, d)))
                    .collect();
                let body = self.node(*body, d);
                Box::new(move |m| {
                    m.charge(1, id)?;
                    for (slot, code) in &steps {
                        let v = code(m)?;
                        let at = m.base + slot;
                        m.stack[at] = v;
                    }
                    body(m)
                })
            }
            NodeKind::Gather { fields } => {
                let names: Vec<Name> = fields.iter().map(|(n, _)| n.clone()).collect();
                let codes: Vec<Code> = fields.iter().map(|(_, f)| self.node(*f, d)).collect();
                Box::new(move |m| {
                    m.charge(1, id)?;
                    let values = m.batch(id, codes.len(), |m| {
                        for code in &codes {
                            code(m)?;
                        }
                        Ok(())
                    })?;
                    let out: Vec<(Name, Value)> = names.iter().cloned().zip(values).collect();
                    Ok(Value::Record(out.into()))
                })
            }
            NodeKind::Annotate { annotation, body } => {
                let (annotation, body) = (annotation.clone(), self.node(*body, d));
                Box::new(move |m| {
                    m.charge(1, id)?;
                    m.annotate(id, &annotation, |m| body(m))
                })
            }
            NodeKind::Approve { tool, arg } => {
                let (tool, arg) = (*tool, self.node(*arg, d));
                Box::new(move |m| {
                    m.charge(1, id)?;
                    let a = arg(m)?;
                    m.approve(id, tool, &a)
                })
            }
            NodeKind::Scope { body } => {
                let body = self.node(*body, d);
                Box::new(move |m| {
                    m.charge(1, id)?;
                    m.scope(id, |m| body(m))
                })
            }
            NodeKind::BoundedLoop { max, init, step } => {
                let (max, init, step) = (*max, self.node(*init, d), self.node(*step, d));
                Box::new(move |m| {
                    m.charge(1, id)?;
                    let s = init(m)?;
                    let f = step(m)?;
                    m.bounded_loop(id, max, s, &f)
                })
            }
            NodeKind::Record(fields) => {
                let fields: Vec<(Name, Code)> = fields
                    .iter()
                    .map(|(n, f)| (n.clone(), self.node(*f, d)))
                    .collect();
                Box::new(move |m| {
                    m.charge(1, id)?;
                    let mut out = Vec::with_capacity(fields.len());
                    for (name, code) in &fields {
                        out.push((name.clone(), code(m)?));
                    }
                    Ok(Value::Record(out.into()))
                })
            }
            NodeKind::Field(r, name) => {
                let r = self.node(*r, d);
                let name = name.clone();
                Box::new(move |m| {
                    m.charge(1, id)?;
                    match r(m)? {
                        Value::Record(fields) => fields
                            .iter()
                            .find(|(n, _)| Rc::ptr_eq(n, &name) || *n == name)
                            .map(|(_, v)| v.clone())
                            .ok_or_else(|| {
                                internal(m.span(id), format!("record has no field `{name}`"))
                            }),
                        other => Err(internal(
                            m.span(id),
                            format!("field `{name}` of a non-record {other}"),
                        )),
                    }
                })
            }
            NodeKind::List(items) => {
                let items: Vec<Code> = items.iter().map(|x| self.node(*x, d)).collect();
                Box::new(move |m| {
                    m.charge(1, id)?;
                    let mut out = Vec::with_capacity(items.len());
                    for code in &items {
                        out.push(code(m)?);
                    }
                    Ok(Value::List(out.into()))
                })
            }
            NodeKind::Ok(x) => {
                let x = self.node(*x, d);
                Box::new(move |m| {
                    m.charge(1, id)?;
                    Ok(Value::Ok(Rc::new(x(m)?)))
                })
            }
            NodeKind::Err(x) => {
                let x = self.node(*x, d);
                Box::new(move |m| {
                    m.charge(1, id)?;
                    Ok(Value::Err(Rc::new(x(m)?)))
                })
            }
            NodeKind::Some(x) => {
                let x = self.node(*x, d);
                Box::new(move |m| {
                    m.charge(1, id)?;
                    Ok(Value::Some(Rc::new(x(m)?)))
                })
            }
            NodeKind::Update(base, fields) => {
                let base = self.node(*base, d);
                let fields: Vec<(Name, Code)> = fields
                    .iter()
                    .map(|(n, f)| (n.clone(), self.node(*f, d)))
                    .collect();
                Box::new(move |m| {
                    m.charge(1, id)?;
                    let Value::Record(old) = base(m)? else {
                        return Err(internal(m.span(id), "update of a non-record"));
                    };
                    let mut out: Vec<(Name, Value)> = old.to_vec();
                    for (name, code) in &fields {
                        let v = code(m)?;
                        match out.iter_mut().find(|(n, _)| n == name) {
                            Some(slot) => slot.1 = v,
                            None => {
                                return Err(internal(
                                    m.span(id),
                                    format!("record has no field `{name}` to update"),
                                ))
                            }
                        }
                    }
                    Ok(Value::Record(out.into()))
                })
            }
            NodeKind::Native { func, args } => {
                let func = *func as usize;
                let args: Vec<Code> = args.iter().map(|a| self.node(*a, d)).collect();
                Box::new(move |m| {
                    m.charge(1, id)?;
                    let mut vals = Vec::with_capacity(args.len());
                    for a in &args {
                        vals.push(a(m)?);
                    }
                    super::natives::call(m, id, func, vals)
                })
            }
            NodeKind::Binary(op, a, b) => self.binary(id, *op, *a, *b, d),
            NodeKind::Neg(x) => {
                let x = self.node(*x, d);
                Box::new(move |m| {
                    m.charge(1, id)?;
                    match x(m)? {
                        Value::Float(x) => Ok(Value::Float(-x)),
                        Value::Int(n) => n.checked_neg().map(Value::Int).ok_or_else(|| {
                            Box::new(super::limits::RunError::new(
                                super::limits::RunErrorKind::Arithmetic,
                                m.span(id),
                                format!("integer overflow: -({n})"),
                            )
                            .with_help("the result does not fit in an Int (-9223372036854775808 to 9223372036854775807)"))
                        }),
                        other => Err(internal(m.span(id), format!("negation of {other}"))),
                    }
                })
            }
            NodeKind::If(c, a, b) => {
                let (c, a, b) = (self.node(*c, d), self.node(*a, d), self.node(*b, d));
                Box::new(move |m| {
                    m.charge(1, id)?;
                    match c(m)? {
                        Value::Bool(true) => a(m),
                        Value::Bool(false) => b(m),
                        other => Err(internal(m.span(id), format!("`if` on {other}"))),
                    }
                })
            }
            NodeKind::Match { scrutinee: s, arms } | NodeKind::TryAndCheck { call: s, arms } => {
                let s = self.node(*s, d);
                let arms: Vec<(ArmTest, Option<usize>, Code)> = arms
                    .iter()
                    .map(|a: &Arm| {
                        (
                            a.test.clone(),
                            a.bind.map(|b| b as usize),
                            self.node(a.body, d),
                        )
                    })
                    .collect();
                Box::new(move |m| {
                    m.charge(1, id)?;
                    let v = s(m)?;
                    for (test, bind, body) in &arms {
                        let bound = match (test, &v) {
                            (ArmTest::Ok, Value::Ok(x))
                            | (ArmTest::Err, Value::Err(x))
                            | (ArmTest::Some, Value::Some(x)) => (**x).clone(),
                            (ArmTest::None, Value::None) => Value::Unit,
                            (ArmTest::Str(lit), Value::Str(s)) if lit == s => Value::Unit,
                            (ArmTest::Any, _) => v.clone(),
                            _ => continue,
                        };
                        if let Some(slot) = bind {
                            let at = m.base + slot;
                            m.stack[at] = bound;
                        }
                        return body(m);
                    }
                    Err(internal(m.span(id), format!("no arm matches {v}")))
                })
            }
            NodeKind::Lambda(l) => {
                let body = self.node(l.body, 0);
                self.lambdas[id as usize] = Some(LambdaCode {
                    arity: l.params.len(),
                    frame_size: l.frame_size as usize,
                    body,
                });
                let captures: Vec<VarRef> = l.captures.iter().map(|(r, _)| *r).collect();
                Box::new(move |m| {
                    m.charge(1, id)?;
                    let captures: Rc<[Value]> = captures
                        .iter()
                        .map(|r| match r {
                            VarRef::Local(s) => m.stack[m.base + *s as usize].clone(),
                            VarRef::Capture(c) => m.captures[*c as usize].clone(),
                        })
                        .collect();
                    Ok(Value::Fn(Rc::new(Closure {
                        lambda: id,
                        captures,
                        args: Vec::new(),
                    })))
                })
            }
            NodeKind::Apply(f, args) => {
                let f = self.node(*f, d);
                let args: Vec<Code> = args.iter().map(|a| self.node(*a, d)).collect();
                Box::new(move |m| {
                    m.charge(1, id)?;
                    let f = f(m)?;
                    for a in &args {
                        let v = a(m)?;
                        m.stack.push(v);
                    }
                    m.invoke(&f, args.len(), PathStep::Apply { node: id }, id)
                })
            }
            NodeKind::ForEach { mode, func, items } => {
                let (mode, func, items) = (*mode, self.node(*func, d), self.node(*items, d));
                Box::new(move |m| {
                    m.charge(1, id)?;
                    let f = func(m)?;
                    let xs = items(m)?;
                    let items = list(m, id, xs)?;
                    for_each(m, id, mode, &f, items)
                })
            }
            NodeKind::Reduce { func, init, items } => {
                if let Some(step) = self.operator_step(*func) {
                    return self.reduce_operator(id, step, *func, *init, *items, d);
                }
                let (func, init, items) = (
                    self.node(*func, d),
                    self.node(*init, d),
                    self.node(*items, d),
                );
                Box::new(move |m| {
                    m.charge(1, id)?;
                    let f = func(m)?;
                    let mut acc = init(m)?;
                    let xs = items(m)?;
                    let items = list(m, id, xs)?;
                    let callee = m.enter(&f, 2);
                    // A list nobody else holds gives its elements away.
                    match Rc::try_unwrap(items) {
                        Ok(owned) => {
                            for (i, x) in owned.into_iter().enumerate() {
                                acc = m.call2(&callee, acc, x, item(id, i), id)?;
                            }
                        }
                        Err(shared) => {
                            for (i, x) in shared.iter().enumerate() {
                                acc = m.call2(&callee, acc, x.clone(), item(id, i), id)?;
                            }
                        }
                    }
                    m.leave(callee);
                    Ok(acc)
                })
            }
            NodeKind::Exec { tool, arg } => {
                let (tool, arg) = (*tool, self.node(*arg, d));
                Box::new(move |m| {
                    m.charge(1, id)?;
                    // A call inside the argument runs now, even in a batch.
                    let queue = m.deferred.take();
                    let a = arg(m);
                    m.deferred = queue;
                    let a = a?;
                    if m.deferred.is_some() {
                        return m.defer_exec(id, tool, &a);
                    }
                    m.exec(id, tool, &a)
                })
            }
        }
    }

    /// `Some` when `func` is `fn acc => fn x => e` with no captures and `e`
    /// an operator (not `&&`/`||`) over `acc`, `x` and literals: the body
    /// of `fold (+) 0 xs` and of stdlib `sum`.
    fn operator_step(&self, func: NodeId) -> Option<OperatorStep> {
        let NodeKind::Lambda(lam) = &self.ir.node(func).kind else {
            return None;
        };
        if lam.params.len() != 2 || !lam.captures.is_empty() {
            return None;
        }
        let NodeKind::Binary(op, a, b) = &self.ir.node(lam.body).kind else {
            return None;
        };
        if matches!(op, BinOp::And | BinOp::Or) {
            return None;
        }
        let operand = |n: NodeId| match self.leaf(n)? {
            Leaf::Local(0) => Some(Operand::Acc),
            Leaf::Local(1) => Some(Operand::Elem),
            Leaf::Const(v) => Some(Operand::Const(v)),
            Leaf::Local(_) => None,
        };
        Some(OperatorStep {
            body: lam.body,
            op: *op,
            a: operand(*a)?,
            b: operand(*b)?,
        })
    }

    /// A `fold` whose function is an [`OperatorStep`]: the operator is
    /// applied in a loop, without entering the function for each element.
    /// Observably the same as the general `fold`: the function value is
    /// still built, each element is charged the body's 3 steps at the body's
    /// node, and an operator error (overflow, division by zero) is the same
    /// error at the same node. (A body without calls needs no call path.)
    fn reduce_operator(
        &mut self,
        id: NodeId,
        step: OperatorStep,
        func: NodeId,
        init: NodeId,
        items: NodeId,
        d: u32,
    ) -> Code {
        let (func, init, items) = (self.node(func, d), self.node(init, d), self.node(items, d));
        let OperatorStep { body, op, a, b } = step;
        Box::new(move |m| {
            m.charge(1, id)?;
            drop(func(m)?);
            let mut acc = init(m)?;
            let xs = items(m)?;
            let xs = list(m, id, xs)?;
            for x in xs.iter() {
                m.charge(3, body)?;
                let (l, r) = (a.pick(&acc, x), b.pick(&acc, x));
                acc = match ops::fast(op, l, r) {
                    Some(v) => v,
                    None => {
                        let (l, r) = (l.clone(), r.clone());
                        m.binary_slow(body, op, &l, &r)?
                    }
                };
            }
            Ok(acc)
        })
    }

    /// An operator. Operands that are variables or literals are read in
    /// place; Int operations that cannot fail take the fast path.
    fn binary(&mut self, id: NodeId, op: BinOp, a: NodeId, b: NodeId, d: u32) -> Code {
        if let (Some(x), Some(y)) = (self.leaf(a), self.leaf(b)) {
            if !matches!(op, BinOp::And | BinOp::Or) {
                return Box::new(move |m| {
                    m.charge(3, id)?;
                    let (xv, yv) = (x.read(m), y.read(m));
                    if let Some(v) = ops::fast(op, xv, yv) {
                        return Ok(v);
                    }
                    let (xv, yv) = (xv.clone(), yv.clone());
                    m.binary_slow(id, op, &xv, &yv)
                });
            }
        }
        let (ca, cb) = (self.node(a, d), self.node(b, d));
        Box::new(move |m| {
            m.charge(1, id)?;
            let x = ca(m)?;
            if let Some(v) = ops::short_circuit(op, &x) {
                return Ok(v);
            }
            let y = cb(m)?;
            if let Some(v) = ops::fast(op, &x, &y) {
                return Ok(v);
            }
            m.binary_slow(id, op, &x, &y)
        })
    }
}

fn list(
    m: &Machine<'_>,
    id: NodeId,
    v: Value,
) -> Result<Rc<Vec<Value>>, Box<super::limits::RunError>> {
    match v {
        Value::List(items) => Ok(items),
        other => Err(internal(
            m.span(id),
            format!("expected a list, found {other}"),
        )),
    }
}

/// `map` / `filter` / `traverse` / `fan_out` of `f` over `items`. When this
/// is the only reference to the list (a temporary, such as the result of
/// `range` or of an inner `map`), its elements are moved into the calls
/// instead of cloned, and `map` and `filter` write their results into the
/// same buffer: a chain such as `filter p (map f (range 0 n))` allocates one
/// list, not three.
fn for_each(
    m: &mut Machine<'_>,
    id: NodeId,
    mode: ForEachMode,
    f: &Value,
    items: Rc<Vec<Value>>,
) -> Eval {
    if mode == ForEachMode::FanOut {
        let callee = m.enter(f, 1);
        let collected = m.batch(id, items.len(), |m| {
            for (i, x) in items.iter().enumerate() {
                m.call1(&callee, x.clone(), item(id, i), id)?;
            }
            Ok(())
        });
        m.leave(callee);
        return Ok(Value::List(Rc::new(collected?)));
    }
    let callee = m.enter(f, 1);
    let result = match Rc::try_unwrap(items) {
        Ok(owned) => for_each_owned(m, id, mode, &callee, owned),
        Err(shared) => for_each_shared(m, id, mode, &callee, &shared),
    };
    m.leave(callee);
    result
}

/// [`for_each`] over a list nobody else holds: in place.
fn for_each_owned<'a>(
    m: &mut Machine<'a>,
    id: NodeId,
    mode: ForEachMode,
    callee: &Callee<'a>,
    mut xs: Vec<Value>,
) -> Eval {
    let mut kept = 0;
    for i in 0..xs.len() {
        let x = std::mem::replace(&mut xs[i], Value::Unit);
        match mode {
            ForEachMode::Map => xs[i] = m.call1(callee, x, item(id, i), id)?,
            ForEachMode::Filter => match m.call1(callee, x.clone(), item(id, i), id)? {
                Value::Bool(true) => {
                    xs[kept] = x;
                    kept += 1;
                }
                Value::Bool(false) => {}
                other => return Err(unexpected(m, id, &other)),
            },
            _ => match m.call1(callee, x, item(id, i), id)? {
                Value::Ok(v) => xs[i] = Rc::try_unwrap(v).unwrap_or_else(|v| (*v).clone()),
                Value::Err(e) => return Ok(Value::Err(e)),
                other => return Err(unexpected(m, id, &other)),
            },
        }
    }
    if mode == ForEachMode::Filter {
        xs.truncate(kept);
    }
    Ok(wrap(mode, xs))
}

/// [`for_each`] over a shared list: the elements are cloned into the calls.
fn for_each_shared<'a>(
    m: &mut Machine<'a>,
    id: NodeId,
    mode: ForEachMode,
    callee: &Callee<'a>,
    items: &[Value],
) -> Eval {
    let mut out = Vec::with_capacity(if mode == ForEachMode::Filter {
        0
    } else {
        items.len()
    });
    for (i, x) in items.iter().enumerate() {
        let r = m.call1(callee, x.clone(), item(id, i), id)?;
        match (mode, r) {
            (ForEachMode::Map, v) => out.push(v),
            (ForEachMode::Filter, Value::Bool(keep)) => {
                if keep {
                    out.push(x.clone());
                }
            }
            (ForEachMode::Traverse, Value::Ok(v)) => {
                out.push(Rc::try_unwrap(v).unwrap_or_else(|v| (*v).clone()))
            }
            (ForEachMode::Traverse, Value::Err(e)) => return Ok(Value::Err(e)),
            (_, other) => return Err(unexpected(m, id, &other)),
        }
    }
    Ok(wrap(mode, out))
}

/// The value of a `map` / `filter` (`xs`) or a `traverse` (`Ok(xs)`).
fn wrap(mode: ForEachMode, xs: Vec<Value>) -> Value {
    let list = Value::List(Rc::new(xs));
    if mode == ForEachMode::Traverse {
        Value::Ok(Rc::new(list))
    } else {
        list
    }
}

/// A callback returned a value of the wrong shape (a checker bug).
fn unexpected(m: &Machine<'_>, id: NodeId, other: &Value) -> Box<super::limits::RunError> {
    internal(m.span(id), format!("unexpected callback result {other}"))
}

fn item(node: NodeId, index: usize) -> PathStep {
    PathStep::Item {
        node,
        index: u32::try_from(index).unwrap_or(u32::MAX),
    }
}
