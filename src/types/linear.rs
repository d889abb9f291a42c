//! Usage pass: linear bindings are used exactly once on every path, and a
//! `Result` bound by `let` is matched (used) somewhere.
//!
//! Runs after type synthesis, using the type of each binder. For every binder
//! of a linear type (`!T`, or a record, list or Result holding one; bound by
//! a `let`, a parameter, or an `Ok(x)`/`Err(x)` pattern) it
//! collects the uses along each control-flow path:
//!
//! * used twice or more → E0501 ("Linearity violation for 'token': used 2
//!   times (must be exactly once)", each use labelled);
//! * never used, or discarded by `_` → E0502;
//! * used inside a `fn` that does not bind it → E0503 (a function may run
//!   any number of times, so it cannot capture a single-use value);
//! * `if`/`match` branches that use it a different number of times → E0504.
//!
//! A `let` or a parameter whose type holds a `Result` (directly, or in a
//! record field or list element) and whose name is never used is E0603: the
//! failure it carries would be silently dropped.

use super::ty::Type;
use super::unify::Metas;
use crate::diag::{Code, Diagnostic};
use crate::scope::Scope;
use crate::source::Span;
use crate::syntax::ast::*;
use rustc_hash::FxHashMap as HashMap;

#[derive(Clone)]
struct BinderInfo {
    span: Span,
    linear: bool,
    holds_result: bool,
    level: u32,
    /// A function parameter: its Result comes from the caller, so uses in
    /// nested (curried) functions count.
    param: bool,
}

struct Usage<'a> {
    /// The binders in scope.
    env: Scope<BinderInfo>,
    /// The name of every binder, by binder span.
    names: HashMap<Span, Name>,
    /// `(binder, length of its use list before the use)` for every use made
    /// inside `if`/`match` branches, so that a branch can be undone.
    log: Vec<(Span, usize)>,
    branch_depth: u32,
    /// Linear `let`s whose value was a second use of another linear binder
    /// (`let b = token` after `token` was used): not reported again as unused.
    aliases: std::collections::HashSet<Span>,
    types: &'a BinderTypes<'a>,
    /// Uses of each linear binder along the current path.
    uses: HashMap<Span, Vec<Span>>,
    /// How often each `let`-bound Result is mentioned anywhere.
    /// Result binders mentioned only inside a function (for the E0603 note).
    captured_results: std::collections::HashSet<Span>,
    /// For each tracked binder: true when linear (exactly once), false when it
    /// holds a Result (at least once on every path).
    kinds: HashMap<Span, bool>,
    diags: Vec<Diagnostic>,
    captured: std::collections::HashSet<Span>,
    /// For a binder of a record type holding Results: the fields read by a
    /// projection `r.f` (at the binder's level).
    projected: HashMap<Span, std::collections::HashSet<Name>>,
    /// Binders (holding Results) used whole, not only through projections.
    whole: std::collections::HashSet<Span>,
    /// Set while walking the record of a projection `r.f`.
    projecting: bool,
}

/// The type of every binder (let, parameter, pattern), by binder span, as
/// the checker left them: read through its metavariables, so that the
/// pass's questions (is it linear, does it hold a Result) cost no copy.
pub struct BinderTypes<'a> {
    types: &'a HashMap<Span, std::rc::Rc<Type>>,
    metas: &'a Metas,
}

impl<'a> BinderTypes<'a> {
    /// The binder types `types`, whose metavariables `metas` solves.
    pub fn new(types: &'a HashMap<Span, std::rc::Rc<Type>>, metas: &'a Metas) -> Self {
        BinderTypes { types, metas }
    }

    /// The zonked type of the binder at `span`.
    fn get(&self, span: &Span) -> Option<Type> {
        self.types.get(span).map(|t| self.metas.zonk(t))
    }

    /// Whether the binder's zonked type satisfies [`Type::holds`]`(is)`.
    fn holds(&self, span: &Span, is: fn(&Type) -> bool) -> bool {
        self.types
            .get(span)
            .is_some_and(|t| self.metas.holds(t, is))
    }

    /// [`BinderTypes::is_linear`] and [`BinderTypes::contains_result`] at once.
    fn linear_and_result(&self, span: &Span) -> (bool, bool) {
        self.types
            .get(span)
            .map_or((false, false), |t| self.metas.linear_and_result(t))
    }

    /// [`Type::is_linear`] of the binder's zonked type.
    fn is_linear(&self, span: &Span) -> bool {
        self.holds(span, |t| matches!(t, Type::Linear(_)))
    }

    /// [`Type::contains_result`] of the binder's zonked type.
    fn contains_result(&self, span: &Span) -> bool {
        self.holds(span, |t| matches!(t, Type::Result(..)))
    }

    /// Whether the binder's type is itself a Result.
    fn is_result(&self, span: &Span) -> bool {
        self.types
            .get(span)
            .is_some_and(|t| matches!(self.metas.resolve_ref(t), Type::Result(..)))
    }
}

/// Runs the usage pass over `program`, whose binders have `types`.
pub fn check_usage(program: &Program, types: &BinderTypes<'_>) -> Vec<Diagnostic> {
    let mut u = Usage {
        env: Scope::with_capacity(program.binders_hint()),
        names: HashMap::default(),
        log: Vec::new(),
        branch_depth: 0,
        aliases: std::collections::HashSet::new(),
        types,
        uses: HashMap::default(),
        kinds: HashMap::default(),
        captured_results: std::collections::HashSet::new(),
        diags: Vec::new(),
        captured: std::collections::HashSet::new(),
        projected: HashMap::default(),
        whole: std::collections::HashSet::new(),
        projecting: false,
    };
    u.walk(&program.body, 0);
    u.diags
}

impl Usage<'_> {
    fn info(&self, id: &Ident, level: u32, is_named: bool) -> BinderInfo {
        let (linear, result) = self.types.linear_and_result(&id.span);
        let holds_result = is_named && result;
        BinderInfo {
            span: id.span,
            linear,
            holds_result,
            level,
            param: false,
        }
    }

    fn bind(&mut self, id: &Ident, level: u32, is_named: bool) {
        let info = self.info(id, level, is_named);
        if info.linear || info.holds_result {
            self.uses.insert(id.span, Vec::new());
            self.kinds.insert(id.span, info.linear);
            // Only tracked binders are named in messages (`branches`).
            self.names.insert(id.span, id.name.clone());
        }
        self.env.push(id.name.clone(), info);
    }

    /// Reports on a binder going out of scope.
    fn close(&mut self, id: &Ident) {
        let Some(uses) = self.uses.remove(&id.span) else {
            return;
        };
        let linear = self.kinds.remove(&id.span).unwrap_or(false);
        let projected = self.projected.remove(&id.span);
        let whole = self.whole.remove(&id.span);
        if !linear && !uses.is_empty() && !whole {
            self.unread_result_fields(id, projected.unwrap_or_default());
        }
        if linear && uses.len() != 1 && !(uses.is_empty() && self.aliases.contains(&id.span)) {
            let n = uses.len();
            let (code, label) = if n == 0 {
                (Code::E0502, "never used")
            } else {
                (Code::E0501, "bound here")
            };
            let mut d = Diagnostic::error(
                code,
                id.span,
                format!(
                    "Linearity violation for '{}': used {n} times (must be exactly once)",
                    id.name
                ),
            )
            .with_label(label);
            for (i, u) in uses.iter().enumerate() {
                d = d.with_secondary(*u, format!("use {}", i + 1));
            }
            d = d.with_help(if n == 0 {
                    format!("a `!` value must be consumed exactly once: pass `{}` to the call that needs it", id.name)
                } else {
                    format!(
                        "a `!` value can be consumed only once: keep one use of `{}`, and obtain a fresh value for each other use",
                        id.name
                    )
                });
            self.diags.push(d);
        }
        if !linear && uses.is_empty() {
            let ty = self.types.get(&id.span);
            let shown = ty.as_ref().map(ToString::to_string).unwrap_or_default();
            let direct = matches!(ty, Some(Type::Result(..)));
            let name = if &*id.name == "_" {
                "this value".to_string()
            } else {
                format!("`{}`", id.name)
            };
            let label = if direct {
                format!("{name} has type {shown}")
            } else {
                format!("{name} has type {shown}, which holds a Result")
            };
            let help = match (direct, &*id.name) {
                (true, "_") => "bind it to a name and match it: `match r { Ok(v) => …, Err(e) => … }`".to_string(),
                (true, n) => format!("match it: `match {n} {{ Ok(v) => …, Err(e) => … }}`, so that a failure is handled"),
                (false, _) => format!(
                    "use {name} so that each Result it holds is matched (for a list of tool calls, use `traverse` instead)"
                ),
            };
            let d = Diagnostic::error(
                Code::E0603,
                id.span,
                format!("Unhandled Result: {name} is never matched"),
            )
            .with_label(label)
            .with_help(help);
            let d = if self.captured_results.contains(&id.span) {
                d.with_note(
                    "it is used only inside a function, which may never be called: match it outside the function",
                )
            } else {
                d
            };
            self.diags.push(d);
        }
    }

    fn walk(&mut self, e: &Expr, level: u32) {
        stacker::maybe_grow(64 * 1024, 2 * 1024 * 1024, || self.walk_inner(e, level))
    }

    fn walk_inner(&mut self, e: &Expr, level: u32) {
        match &e.kind {
            ExprKind::Var(id) => {
                let Some(b) = self.env.get(&id.name).cloned() else {
                    return;
                };
                if b.linear {
                    if level > b.level && self.captured.insert(b.span) {
                        let d = Diagnostic::error(
                            Code::E0503,
                            id.span,
                            format!("linear value `{}` is captured by a function", id.name),
                        )
                        .with_label("used inside a function that may run several times")
                        .with_secondary(b.span, "bound outside the function")
                        .with_help(format!(
                            "pass `{}` as an argument instead, or use it outside the function",
                            id.name
                        ));
                        self.diags.push(d);
                    }
                    self.record_use(b.span, id.span);
                }
                if b.holds_result && !b.linear {
                    // A use inside a function that does not bind the Result does
                    // not count: the function may never be called.
                    if level == b.level || b.param {
                        self.record_use(b.span, id.span);
                        if !self.projecting {
                            self.whole.insert(b.span);
                        }
                    } else {
                        self.captured_results.insert(b.span);
                    }
                }
            }
            ExprKind::Let(chain) => {
                let mark = self.env.mark();
                for b in &chain.bindings {
                    self.walk(&b.value, level);
                    if let ExprKind::Var(x) = &b.value.kind {
                        let overused = self
                            .env
                            .get(&x.name)
                            .and_then(|i| self.uses.get(&i.span))
                            .is_some_and(|u| u.len() > 1);
                        if overused {
                            self.aliases.insert(b.name.span);
                        }
                    }
                    self.bind(&b.name, level, true);
                }
                self.walk(&chain.body, level);
                for b in chain.bindings.iter().rev() {
                    self.close(&b.name);
                }
                self.env.reset(mark);
            }
            ExprKind::Fn { param, body, .. } => {
                let mark = self.env.mark();
                self.bind(param, level + 1, true);
                if let Some(info) = self.env.get_mut(&param.name) {
                    info.param = true;
                }
                self.walk(body, level + 1);
                self.close(param);
                self.env.reset(mark);
            }
            ExprKind::Field(inner, field) if matches!(inner.kind, ExprKind::Var(_)) => {
                if let ExprKind::Var(x) = &inner.kind {
                    if let Some(b) = self.env.get(&x.name).cloned() {
                        if b.holds_result && !b.linear && (level == b.level || b.param) {
                            self.projected
                                .entry(b.span)
                                .or_default()
                                .insert(field.name.clone());
                        }
                    }
                }
                let outer = std::mem::replace(&mut self.projecting, true);
                self.walk(inner, level);
                self.projecting = outer;
            }
            ExprKind::If(c, t, f) => {
                self.walk(c, level);
                self.branches(level, &[(t, None), (f, None)]);
            }
            ExprKind::Match(s, arms) => {
                self.walk(s, level);
                let branches: Vec<(&Expr, Option<&Pattern>)> =
                    arms.iter().map(|a| (&a.body, Some(&a.pattern))).collect();
                self.branches(level, &branches);
            }
            kind => kind.for_each_child(|c| self.walk(c, level)),
        }
    }

    /// A record binder that is only ever read through projections: every
    /// field holding a Result must be read somewhere, or its failure is
    /// dropped (`let c = {a = exec …, b = exec …} in match c.a {…}`).
    fn unread_result_fields(&mut self, id: &Ident, read: std::collections::HashSet<Name>) {
        let Some(Type::Record(fields)) = self.types.get(&id.span) else {
            return;
        };
        // A read of a field the record lacks is a misspelling, already
        // E0202 (whose help names the field): one mistake, one diagnostic.
        if read.iter().any(|n| fields.iter().all(|(f, _)| f != n)) {
            return;
        }
        let unread: Vec<(&Name, &Type)> = fields
            .iter()
            .filter(|(n, t)| t.contains_result() && !read.contains(n))
            .map(|(n, t)| (n, t))
            .collect();
        let Some((first, ty)) = unread.first() else {
            return;
        };
        let list: Vec<String> = unread.iter().map(|(n, _)| format!("`{n}`")).collect();
        let d = Diagnostic::error(
            Code::E0603,
            id.span,
            if list.len() == 1 {
                format!("Unhandled Result: field {} of `{}` is never matched", list[0], id.name)
            } else {
                format!(
                    "Unhandled Result: fields {} of `{}` are never matched",
                    list.join(", "),
                    id.name
                )
            },
        )
        .with_label(format!("`{}.{first}` has type {ty}", id.name))
        .with_help(format!(
            "match it as well: `match {}.{first} {{ Ok(v) => …, Err(e) => … }}`, so that its failure is handled",
            id.name
        ));
        self.diags.push(d);
    }

    /// Walks alternative branches from the same starting state and requires
    /// every outer linear binder to be used equally often in each.
    fn branches(&mut self, level: u32, branches: &[(&Expr, Option<&Pattern>)]) {
        // Each branch starts from the same state. Uses only ever append, so a
        // branch is undone by truncating the lists it touched (found in the
        // undo log); the cost is proportional to the uses inside the branches,
        // not to the number of binders in scope.
        let mut added: Vec<HashMap<Span, Vec<Span>>> = Vec::new();
        let mut touched: Vec<Span> = Vec::new();
        let mut touched_set: std::collections::HashSet<Span> = std::collections::HashSet::new();
        self.branch_depth += 1;
        for (body, pattern) in branches {
            let log_start = self.log.len();
            let mark = self.env.mark();
            let bound = pattern.and_then(|p| self.pattern_binder(p));
            if let Some(x) = bound {
                self.bind(x, level, true);
            }
            self.walk(body, level);
            if let Some(x) = bound {
                self.close(x);
            }
            self.env.reset(mark);
            let mut mine: HashMap<Span, Vec<Span>> = HashMap::default();
            while self.log.len() > log_start {
                let Some((binder, len_before)) = self.log.pop() else {
                    break;
                };
                let Some(list) = self.uses.get_mut(&binder) else {
                    continue;
                };
                let mut extra: Vec<Span> = list.drain(len_before.min(list.len())..).collect();
                let entry = mine.entry(binder).or_default();
                extra.append(entry);
                *entry = extra;
                if touched_set.insert(binder) {
                    touched.push(binder);
                }
            }
            added.push(mine);
        }
        self.branch_depth -= 1;
        // Merge: report disagreements, continue with the branch that used most.
        for binder in touched {
            let count = |m: &HashMap<Span, Vec<Span>>| m.get(&binder).map_or(0, Vec::len);
            let (Some(min), Some(max)) =
                (added.iter().map(count).min(), added.iter().map(count).max())
            else {
                continue;
            };
            let prior = self.uses.get(&binder).map_or(0, Vec::len);
            // With a use before the branches, any use inside is already a second
            // use: E0501 reports it when the binder closes.
            let linear = self.kinds.get(&binder).copied().unwrap_or(false);
            let disagree = if linear {
                min != max
            } else {
                min == 0 && max > 0
            };
            if disagree && prior == 0 {
                let name = self
                    .names
                    .get(&binder)
                    .map(|n| n.to_string())
                    .unwrap_or_default();
                let (code, message, help) = if linear {
                    (
                        Code::E0504,
                        format!("branches use linear value `{name}` differently (between {min} and {max} times)"),
                        format!("use `{name}` exactly once in every branch of the `if`/`match` (or once before it)"),
                    )
                } else {
                    (
                        Code::E0603,
                        format!("Unhandled Result: `{name}` is matched on some paths but not on others"),
                        format!(
                            "match `{name}` in every branch (or once, before the `if`/`match`), so that its failure is always handled"
                        ),
                    )
                };
                let mut d = Diagnostic::error(code, binder, message).with_label("bound here");
                for m in &added {
                    for u in m.get(&binder).into_iter().flatten() {
                        d = d.with_secondary(*u, "used in this branch");
                    }
                }
                self.diags.push(d.with_help(help));
            }
            let richest = added
                .iter()
                .max_by_key(|m| count(m))
                .and_then(|m| m.get(&binder))
                .cloned()
                .unwrap_or_default();
            for u in richest {
                self.record_use(binder, u);
            }
        }
    }

    /// Appends a use of `binder`, logging it while inside branches.
    fn record_use(&mut self, binder: Span, at: Span) {
        if let Some(list) = self.uses.get_mut(&binder) {
            if self.branch_depth > 0 {
                self.log.push((binder, list.len()));
            }
            list.push(at);
        }
    }

    /// The name an arm's pattern binds; reports a linear value discarded by `_`.
    fn pattern_binder<'p>(&mut self, p: &'p Pattern) -> Option<&'p Ident> {
        match &p.kind {
            PatternKind::Ok(Binder::Var(x))
            | PatternKind::Err(Binder::Var(x))
            | PatternKind::Some(Binder::Var(x))
            | PatternKind::Var(x) => Some(x),
            PatternKind::None | PatternKind::Str(_) => None,
            PatternKind::Ok(Binder::Wildcard(w))
            | PatternKind::Err(Binder::Wildcard(w))
            | PatternKind::Some(Binder::Wildcard(w)) => {
                if self.types.contains_result(w) {
                    let d = Diagnostic::error(
                        Code::E0603,
                        *w,
                        "Unhandled Result: `_` discards a value that holds a Result",
                    )
                    .with_label("this Result is never matched")
                    .with_help(
                        "bind it to a name and match it: `match x { Ok(v) => …, Err(e) => … }`",
                    );
                    self.diags.push(d);
                }
                if self.types.is_linear(w) {
                    let d = Diagnostic::error(Code::E0502, *w, "linear value discarded by `_`")
                        .with_label("this `!` value is never used")
                        .with_help("bind it to a name and consume it exactly once");
                    self.diags.push(d);
                }
                None
            }
            PatternKind::Wildcard => {
                if self.types.contains_result(&p.span) && !self.types.is_result(&p.span) {
                    let d = Diagnostic::error(
                        Code::E0603,
                        p.span,
                        "Unhandled Result: `_` discards a value that holds a Result",
                    )
                    .with_label("the matched value holds a Result that is never matched")
                    .with_help("bind it with a name (`x => …`) and match the Result inside");
                    self.diags.push(d);
                }
                if self.types.is_linear(&p.span) {
                    let d = Diagnostic::error(Code::E0502, p.span, "linear value discarded by `_`")
                        .with_label("the matched `!` value is never used")
                        .with_help("bind it with a name (`x => …`) and consume it exactly once");
                    self.diags.push(d);
                }
                None
            }
        }
    }
}
