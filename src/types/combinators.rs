//! Typing seed 000's combinators that λ-Tool lacks (extension):
//!
//! ```text
//! gather { a = exec tool A x, b = exec tool B y }  : {a: Result<A_out, String>, b: Result<B_out, String>}
//! fan_out      : (a -{E}-> Result<b, e>) -> List a -{E}-> List (Result<b, e>)
//! bounded_loop : Int(literal) -> s -> (s -{E}-> {done: Bool, value: s}) -{E}-> {done: Bool, value: s}
//! @intent("why", hypothesis = "…", notes = "…") e  : the type of e
//! ```
//!
//! The calls of a `gather` and of a `fan_out` run concurrently, so each
//! must be *one* tool call the runtime can start without waiting for
//! another: a field of a `gather` is `exec tool NAME arg`, and `fan_out`'s
//! function is `fn x => exec tool NAME arg` (E0217 otherwise). Their
//! arguments are evaluated first, in order. Every Result must be matched,
//! as for any call.
//!
//! `scope { e }` needs a Result-valued `e`; every call that runs inside it
//! of a tool that may change something (any effect but `Read`) must have an
//! `undo` (E0220), so that an `Err` can roll back what completed. Scopes are
//! dynamic: a call written inside it, or made by a function applied inside
//! it (defined anywhere, given as an argument, held in a record or a list,
//! called by `traverse`), runs in the scope; a lambda written inside but
//! applied after it does not. Function types record whether their calls
//! may be irrevocable ([`super::undo`]).
//!
//! `approve tool NAME arg` asks for an approval of one call: `NAME`'s
//! input must have `!Approval` fields (E0221), `arg` is the input without
//! them, and the value is `Result<!Approval, String>`; the `!Approval` is
//! linear, so it serves exactly one call (E0501 used twice, E0502 never).
//! Asking performs no effect (nothing changes until the approved call).
//!
//! A `traverse` stops at its first `Err` and drops the `Ok` values it
//! collected before it and the elements it did not reach; a `fan_out` and
//! a `gather` hold their results in a list or a record of Results, which
//! nothing can take apart element by element so that each linear value in
//! it is consumed exactly once. So none of them may collect a linear value:
//! a `traverse` whose elements or results, a `fan_out` whose results, or a
//! `gather` whose calls' outputs hold a `!T` (directly or in a record,
//! list, Option or Result) is E0506, checked once the program is typed (the
//! types may be solved late). A `fan_out` may *spend* a list of linear
//! values: it makes every call, so each element reaches its tool.
//!
//! `bounded_loop`'s bound is an Int literal from 1 to [`MAX_LOOP_BOUND`]
//! (E0218), so it is visible in the program and the IR; the step decides to
//! stop early with `done = true`. The result says whether it did.

use super::checker::{Checker, Collected};
use super::ty::{EffectSet, Type};
use crate::diag::{Code, Diagnostic};
use crate::source::Span;
use crate::syntax::ast::{Expr, ExprKind, Ident, Name};
use std::rc::Rc;

/// The largest bound a `bounded_loop` may have.
pub const MAX_LOOP_BOUND: i64 = 10_000;

/// `{done: Bool, value: s}`: a `bounded_loop` step's result and the loop's.
pub fn loop_state(s: Type) -> Type {
    Type::Record(vec![(Rc::from("done"), Type::Bool), (Rc::from("value"), s)])
}

fn one_call_help(what: &str) -> String {
    format!(
        "{what} runs its tool calls concurrently, so each must be one call, `exec tool NAME arg`; \
         compute other values before it with `let`, or use `traverse` / a record for calls that depend on each other"
    )
}

impl Checker<'_> {
    /// `approve tool NAME arg`.
    pub(super) fn approve(&mut self, tool: &Ident, arg: &Expr, span: Span) -> Type {
        let result = Type::result(Type::Linear(Box::new(Type::Approval)), Type::String);
        let Some(sig) = self.tool(&tool.name) else {
            // The unknown tool is reported as for `exec`.
            self.exec(tool, arg, span);
            return result;
        };
        let fields: Vec<(Name, Type)> = match &*self.metas.resolve(&sig.input) {
            Type::Record(fs) => fs.clone(),
            _ => Vec::new(),
        };
        let (approvals, rest): (Vec<_>, Vec<_>) =
            fields.into_iter().partition(|(_, t)| t.is_approval());
        if approvals.is_empty() {
            self.synth(arg);
            self.diags.push(
                Diagnostic::error(Code::E0221, tool.span, format!("`{}` takes no approval: its input has no `!Approval` field", tool.name))
                    .with_label("nothing to approve")
                    .with_help(format!(
                        "a tool that needs approval declares where the token goes: `tool {}: {{…, approval: !Approval}} -{{…}}-> …;`; otherwise call it with `exec tool`",
                        tool.name
                    )),
            );
            return result;
        }
        match &arg.kind {
            ExprKind::Record(fs) => self.check_record(fs, &rest, arg.span, Some(&sig.name), false),
            _ => self.check(arg, &Type::Record(rest)),
        }
        result
    }

    /// Reports every [`Collected`] whose type holds a linear value (E0506).
    pub(super) fn check_collected(&mut self) {
        let mut reported: Vec<Span> = Vec::new();
        for c in std::mem::take(&mut self.collected) {
            let t = self.metas.zonk(&c.ty);
            if !t.is_linear() || reported.contains(&c.span) {
                continue;
            }
            reported.push(c.span);
            let name = c.name;
            let (message, label, help) = if c.elements {
                (
                    format!("`{name}` over linear values: it stops at the first Err and drops the elements it did not reach"),
                    format!("walks a list of {t}"),
                    "spend the whole list with `fan_out (fn x => exec tool NAME x) xs`, which calls the tool for every element, \
                     or keep the tokens out of the list"
                        .to_string(),
                )
            } else if name == "traverse" {
                (
                    format!("`{name}` collecting linear values: it stops at the first Err and drops the ones it collected before it"),
                    format!("collects {t}"),
                    "spend each token inside the callback and return a plain value: \
                     `traverse (fn x => match exec tool mint x { Ok(m) => exec tool spend {token = m.token}, Err(e) => Err(e) }) xs`"
                        .to_string(),
                )
            } else {
                (
                    format!("`{name}` collecting linear values: its Results cannot each be consumed exactly once"),
                    format!("collects {t}"),
                    format!(
                        "make a call whose output holds a `!T` on its own, with `exec tool`, and spend the value in its `Ok` arm; \
                         keep `{name}` for calls whose outputs are plain data"
                    ),
                )
            };
            self.diags.push(
                Diagnostic::error(Code::E0506, c.span, message)
                    .with_label(label)
                    .with_help(help),
            );
        }
    }

    /// `scope { body }`. The calls that run inside it, written there or
    /// made by a function applied there, must each have an undo when they
    /// may change something (E0220, [`super::undo`]).
    pub(super) fn scope(&mut self, body: &Expr, span: Span) -> Type {
        self.enter_scope(span);
        let t = self.synth(body);
        self.leave_scope();
        let ok = self.metas.fresh(span, "the Ok type of the scope");
        let err = self.metas.fresh(span, "the Err type of the scope");
        if self.metas.coerce(&t, &Type::result(ok, err)).is_err() {
            let shown = self.show(&t);
            self.diags.push(
                Diagnostic::error(Code::E0201, body.span, format!("a `scope` needs a Result (its Err rolls back), but this is {shown}"))
                    .with_label(format!("has type {shown}"))
                    .with_expected_found("Result<T, E>", shown)
                    .with_help("end the scope's expression with `Ok(v)` or `Err(e)`, e.g. the match on the last call"),
            );
        }
        t
    }

    /// `gather { … }`: every field one tool call.
    pub(super) fn gather(&mut self, record: &Expr, span: Span) -> Type {
        let ExprKind::Record(fields) = &record.kind else {
            return self.synth(record);
        };
        if fields.is_empty() {
            self.diags.push(
                Diagnostic::error(Code::E0217, span, "this `gather` has no calls")
                    .with_label("empty")
                    .with_help("name each call: `gather { a = exec tool A x, b = exec tool B y }`"),
            );
        }
        for f in fields {
            if !matches!(f.value.kind, ExprKind::Exec(..)) {
                self.diags.push(
                    Diagnostic::error(
                        Code::E0217,
                        f.value.span,
                        format!("field `{}` of a `gather` is not a tool call", f.name.name),
                    )
                    .with_label("not `exec tool …`")
                    .with_help(one_call_help("`gather`")),
                );
            }
        }
        let t = self.synth(record);
        self.collected.push(Collected {
            ty: t.clone(),
            span,
            name: "gather",
            elements: false,
        });
        t
    }

    /// Reports a `fan_out` function that is not `fn x => exec tool NAME arg`.
    pub(super) fn fan_out_shape(&mut self, callback: &Expr) {
        let ok = match &callback.kind {
            ExprKind::Fn { body, .. } => matches!(body.kind, ExprKind::Exec(..)),
            _ => false,
        };
        if !ok {
            self.diags.push(
                Diagnostic::error(
                    Code::E0217,
                    callback.span,
                    "`fan_out` needs a function whose body is one tool call",
                )
                .with_label("not `fn x => exec tool …`")
                .with_help(one_call_help("`fan_out`"))
                .with_note("e.g. `fan_out (fn o => exec tool charge {order_id = o.id}) orders`"),
            );
        }
    }

    /// `bounded_loop N init step`.
    pub(super) fn bounded_loop(&mut self, id: &Ident, args: &[(&Expr, Span)]) -> Type {
        let bound_ok = match args.first().map(|(e, _)| &e.kind) {
            Some(ExprKind::Int(n)) => (1..=MAX_LOOP_BOUND).contains(n),
            _ => false,
        };
        if !bound_ok {
            let at = args.first().map_or(id.span, |(e, _)| e.span);
            self.diags.push(
                Diagnostic::error(
                    Code::E0218,
                    at,
                    format!("`bounded_loop` needs its bound as an Int literal from 1 to {MAX_LOOP_BOUND}"),
                )
                .with_label(if matches!(args.first().map(|(e, _)| &e.kind), Some(ExprKind::Int(_))) {
                    "out of range"
                } else {
                    "not a literal bound"
                })
                .with_help("write the most iterations in the program: `bounded_loop 10 init (fn s => …)`"),
            );
        }
        if args.len() < 3 {
            for (a, _) in args.iter().skip(1) {
                self.synth(a);
            }
            self.diags.push(
                Diagnostic::error(
                    Code::E0218,
                    id.span,
                    "`bounded_loop` must be given its bound, initial state and step",
                )
                .with_label("missing arguments")
                .with_help(
                    "`bounded_loop 10 {status = \"pending\"} (fn s => … {done = …, value = …})`",
                ),
            );
            return Type::Error;
        }
        let s = self.metas.fresh(args[1].0.span, "the loop's state type");
        self.check(args[1].0, &s);
        let step = args[2].0;
        let ft = match &step.kind {
            ExprKind::Fn {
                param,
                annot: None,
                body,
            } => self.synth_fn(param, None, body, Some(s.clone())),
            _ => self.synth(step),
        };
        let want = loop_state(s.clone());
        let eff = match self.metas.resolve_peeled(&ft).into_owned() {
            Type::Fun(p, eff, r) => {
                self.expect(step.span, &s, &p);
                self.expect(step.span, &r, &want);
                eff
            }
            Type::Error => EffectSet::pure(),
            other => {
                let shown = self.show(&other);
                self.diags.push(
                    Diagnostic::error(
                        Code::E0201,
                        step.span,
                        format!("`bounded_loop` needs a step function, but this is {shown}"),
                    )
                    .with_label("not a function")
                    .with_expected_found("s -{E}-> {done: Bool, value: s}", shown)
                    .with_help("pass `fn s => …` returning `{done = …, value = …}`"),
                );
                EffectSet::pure()
            }
        };
        let whole = args[2].1;
        self.perform(&eff, whole, "`bounded_loop` calling its step");
        let mut ty = want;
        let mut callee = whole;
        for &(arg, app) in &args[3..] {
            ty = self.apply(ty, callee, arg, app, "this call");
            callee = app;
        }
        ty
    }
}
