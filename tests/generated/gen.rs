//! The generator: random well-typed programs, built as syntax trees.
//!
//! A program is a random set of declarations (tools with random record
//! inputs and outputs and effect rows, `effect` labels, `type` aliases, undo
//! tools) and one expression of a random target type, generated
//! type-directed from an environment of typed variables: to make a value of
//! type `T`, the generator picks a form that yields a `T` (a literal, a
//! variable or a field path, a `let`, an `if`, a `match` on a tool call, on
//! an Option or an enum, an application of a lambda or a function variable,
//! a standard-library function, `map`/`filter`/`fold`/`traverse`, a
//! `gather`, a `scope`, an approval, …) and generates its parts in turn.
//!
//! Two things keep every program well-typed by construction:
//!
//! * **Modes.** lt's checker is bidirectional: a string literal is an enum
//!   only where an enum is expected, a bare `None` or `[]` needs an expected
//!   type, a record literal may leave out `Option` fields only when checked
//!   against a record type. Each position is generated in [`Mode::Check`]
//!   (the checker pushes the expected type in: tool arguments, annotated
//!   `let`s, arguments of typed functions, and the branches, arms, fields and
//!   payloads of such positions) or [`Mode::Synth`] (everything else), where
//!   only forms whose synthesized type is exactly `T` are used.
//! * **Obligations.** A linear value (a `!String` token from a tool's
//!   output, an `!Approval`, a `!String` parameter) and a `let`-bound Result
//!   are never put in the environment. They are an *obligation* ([`Ob`])
//!   handed to exactly one sub-expression on every path, which must consume
//!   it exactly once: pass it to a tool, return it, or hand it on (an `if`
//!   or a `match` hands it to every branch; a `let` to its value or to its
//!   body). Functions never capture one.
//!
//! Effects are tracked per context: `map`/`filter`/`fold` and library
//! callbacks are pure, a lambda of type `A -{E}-> B` may only call tools
//! whose effects are in `E`, and a call written inside a `scope` must be
//! read-only or have an undo (whose effects must be allowed too).
//!
//! Two patterns the checker rejects are not generated in accepted
//! programs (the mutations of `mutate.rs` make them): tokens collected by a
//! `traverse`, `fan_out` or `gather` (E0506), and functions whose calls
//! cannot be undone applied inside a `scope` (E0220). Their accepted
//! neighbours are: a token minted and spent inside one `traverse` callback,
//! a token spent by one of a `gather`'s calls, and a function whose calls
//! have undos applied inside a `scope`, defined outside it or given as an
//! argument to a function that applies it in its scope.

use lt::source::Span;
use lt::syntax::ast::*;
use std::collections::{BTreeMap, VecDeque};

/// A small deterministic generator (SplitMix64): the same seed gives the
/// same program on every machine.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `pct` percent.
    pub fn chance(&mut self, pct: u64) -> bool {
        self.next() % 100 < pct
    }

    /// One of the words `xs` (non-empty).
    pub fn word(&mut self, xs: &[&'static str]) -> &'static str {
        xs[self.below(xs.len())]
    }

    /// One of `xs` (non-empty).
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// An effect row, labels in canonical order.
pub type Effs = Vec<String>;

fn rank(l: &str) -> (usize, String) {
    let builtin = ["Read", "Write", "Network"];
    (
        builtin.iter().position(|b| *b == l).unwrap_or(3),
        l.to_string(),
    )
}

/// Sorts and dedups a row into canonical order.
pub fn norm(mut e: Effs) -> Effs {
    e.sort_by_key(|l| rank(l));
    e.dedup();
    e
}

fn subset(a: &[String], b: &[String]) -> bool {
    a.iter().all(|l| b.contains(l))
}

/// The types the generator works with (a subset of lt's, enough to cover
/// every construct).
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    Unit,
    Bool,
    Int,
    Float,
    Str,
    Json,
    /// Sorted, distinct literals.
    Enum(Vec<String>),
    Option(Box<Ty>),
    List(Box<Ty>),
    /// A closed record.
    Record(Vec<(String, Ty)>),
    /// An open record `{…, ..}` (only a lambda parameter's annotation).
    Open(Vec<(String, Ty)>),
    /// `Result<T, String>`.
    Result(Box<Ty>),
    /// `!T`: `!String` or `!Approval`.
    Lin(Box<Ty>),
    Approval,
    Fun(Box<Ty>, Effs, Box<Ty>),
}

impl Ty {
    fn list(t: Ty) -> Ty {
        Ty::List(Box::new(t))
    }
    fn option(t: Ty) -> Ty {
        Ty::Option(Box::new(t))
    }
    fn result(t: Ty) -> Ty {
        Ty::Result(Box::new(t))
    }

    /// True when an enum occurs in the type (outside functions).
    pub fn has_enum(&self) -> bool {
        match self {
            Ty::Enum(_) => true,
            Ty::Option(t) | Ty::List(t) | Ty::Result(t) | Ty::Lin(t) => t.has_enum(),
            Ty::Record(fs) | Ty::Open(fs) => fs.iter().any(|(_, t)| t.has_enum()),
            _ => false,
        }
    }

    /// True when a linear `!T` occurs in the type's data.
    pub fn has_linear(&self) -> bool {
        match self {
            Ty::Lin(_) | Ty::Approval => true,
            Ty::Option(t) | Ty::List(t) | Ty::Result(t) => t.has_linear(),
            Ty::Record(fs) | Ty::Open(fs) => fs.iter().any(|(_, t)| t.has_linear()),
            _ => false,
        }
    }

    /// True for types compared and ordered by the operators (`<` …).
    fn ordered(&self) -> bool {
        matches!(self, Ty::Int | Ty::Str | Ty::Float)
    }
}

/// Same type, records compared as sets of fields.
fn same(a: &Ty, b: &Ty) -> bool {
    match (a, b) {
        (Ty::Record(x), Ty::Record(y)) | (Ty::Open(x), Ty::Open(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(n, t)| y.iter().any(|(m, u)| n == m && same(t, u)))
        }
        (Ty::Option(x), Ty::Option(y))
        | (Ty::List(x), Ty::List(y))
        | (Ty::Result(x), Ty::Result(y))
        | (Ty::Lin(x), Ty::Lin(y)) => same(x, y),
        (Ty::Fun(a1, e1, b1), Ty::Fun(a2, e2, b2)) => same(a1, a2) && e1 == e2 && same(b1, b2),
        _ => a == b,
    }
}

/// Whether a value of type `have` may be given where `want` is expected
/// (exact, or width subtyping into an open record).
fn fits(have: &Ty, want: &Ty) -> bool {
    match (have, want) {
        (Ty::Record(h) | Ty::Open(h), Ty::Open(w)) => w
            .iter()
            .all(|(n, t)| h.iter().any(|(m, u)| n == m && same(u, t))),
        _ => same(have, want),
    }
}

/// A declared tool.
#[derive(Clone, Debug)]
pub struct ToolDef {
    pub name: String,
    pub input: Ty,
    pub effects: Effs,
    pub output: Ty,
    /// `undo NAME(output)` (true) or `undo NAME(input)` (false).
    pub undo: Option<(String, bool)>,
}

impl ToolDef {
    /// The field of the input that takes a `!String` token, if any.
    fn token_field(&self) -> Option<&str> {
        match &self.input {
            Ty::Record(fs) => fs
                .iter()
                .find(|(n, t)| n == "token" && matches!(t, Ty::Lin(_) | Ty::Str))
                .map(|(n, _)| n.as_str()),
            _ => None,
        }
    }

    /// The `!Approval` field of the input, if any.
    pub fn approval_field(&self) -> Option<&str> {
        match &self.input {
            Ty::Record(fs) => fs
                .iter()
                .find(|(_, t)| matches!(t, Ty::Lin(x) if **x == Ty::Approval))
                .map(|(n, _)| n.as_str()),
            _ => None,
        }
    }

    /// Whether a successful call hands out a linear token.
    pub fn mints(&self) -> bool {
        self.output.has_linear()
    }
}

/// A variable in scope (never linear, never a Result).
#[derive(Clone, Debug)]
struct Var {
    name: String,
    ty: Ty,
}

/// Where a position gets its type from (see the module note).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Check,
    Synth,
}

/// The context of a position.
#[derive(Clone, Debug)]
struct Cx {
    env: Vec<Var>,
    /// The effects allowed here; `None`: any.
    effects: Option<Effs>,
    /// Inside a `scope` (textually).
    in_scope: bool,
}

impl Cx {
    fn with(&self, name: &str, ty: Ty) -> Cx {
        assert!(
            !ty.has_linear() && !matches!(ty, Ty::Result(_)),
            "{name}: {ty:?} is an obligation, not a variable"
        );
        let mut c = self.clone();
        c.env.push(Var {
            name: name.to_string(),
            ty,
        });
        c
    }
    fn pure(&self) -> bool {
        self.effects.as_ref().is_some_and(|e| e.is_empty())
    }
}

/// A linear value or a Result that must be consumed exactly once.
#[derive(Clone, Debug)]
enum Ob {
    /// A `!String` variable.
    Token(String),
    /// A record variable holding a `!String` in its field `token` (a mint
    /// tool's output).
    Minted(String),
    /// An `!Approval` for a call of `tool` with the argument fields `arg`.
    Approval(String, usize, Vec<Field>),
    /// A `let`-bound `Result<T, String>`.
    Res(String, Ty),
    /// A list of minted records (no longer generated: a `traverse` spending
    /// it is E0506).
    MintedList(String),
}

/// A generated program: its tree, its text, its tools, and what it covers.
pub struct Generated {
    pub program: Program,
    pub source: String,
    pub tools: Vec<ToolDef>,
    pub target: Ty,
    /// How often each construct was generated.
    pub constructs: BTreeMap<&'static str, u32>,
}

// ------------------------------------------------------------- tree builders

fn sp() -> Span {
    Span::new(0, 0)
}
fn ident(n: &str) -> Ident {
    Ident {
        name: n.into(),
        span: sp(),
    }
}
fn mk(kind: ExprKind) -> Expr {
    Expr::new(kind, sp())
}
fn var(n: &str) -> Expr {
    mk(ExprKind::Var(ident(n)))
}
fn app(f: Expr, a: Expr) -> Expr {
    mk(ExprKind::App(Box::new(f), Box::new(a)))
}
/// `name a b …`
fn call(name: &str, args: Vec<Expr>) -> Expr {
    args.into_iter().fold(var(name), app)
}
fn lam(p: &str, annot: Option<TypeExpr>, body: Expr) -> Expr {
    mk(ExprKind::Fn {
        param: ident(p),
        annot: annot.map(Box::new),
        body: Box::new(body),
    })
}
fn str_lit(s: &str) -> Expr {
    mk(ExprKind::Str(s.to_string()))
}
fn int(n: i64) -> Expr {
    mk(ExprKind::Int(n))
}
fn field(e: Expr, f: &str) -> Expr {
    mk(ExprKind::Field(Box::new(e), ident(f)))
}
fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    mk(ExprKind::Binary(op, sp(), Box::new(a), Box::new(b)))
}
fn record(fields: Vec<Field>) -> Expr {
    mk(ExprKind::Record(fields))
}
fn fld(n: &str, value: Expr) -> Field {
    Field {
        name: ident(n),
        value,
    }
}
fn arm(p: PatternKind, body: Expr) -> Arm {
    Arm {
        pattern: Pattern {
            kind: p,
            span: sp(),
        },
        body,
        span: sp(),
    }
}
fn binder(n: &str) -> Binder {
    if n == "_" {
        Binder::Wildcard(sp())
    } else {
        Binder::Var(ident(n))
    }
}
fn mtch(s: Expr, arms: Vec<Arm>) -> Expr {
    mk(ExprKind::Match(Box::new(s), arms))
}
/// `let name[: T] = value in body`, joined to `body`'s chain.
fn let_in(name: &str, annot: Option<TypeExpr>, value: Expr, body: Expr) -> Expr {
    let binding = LetBinding {
        rec_kw: None,
        name: ident(name),
        annot: annot.map(Box::new),
        value,
        span: sp(),
    };
    match body.kind {
        ExprKind::Let(mut chain) => {
            chain.bindings.push_front(binding);
            mk(ExprKind::Let(chain))
        }
        kind => {
            let body = Expr::new(kind, sp());
            mk(ExprKind::Let(Box::new(LetChain {
                bindings: VecDeque::from([binding]),
                body,
            })))
        }
    }
}
fn texpr_kind(kind: TypeExprKind) -> TypeExpr {
    TypeExpr::new(kind, sp())
}

/// The written form of a type.
pub fn texpr(t: &Ty) -> TypeExpr {
    texpr_with(t, &mut |_, _| false)
}

/// The written form, `optional(field, type)` saying which `Option` fields
/// of records are written `f?: T`.
fn texpr_with(t: &Ty, optional: &mut dyn FnMut(&str, &Ty) -> bool) -> TypeExpr {
    let named = |n: &str| texpr_kind(TypeExprKind::Named(ident(n)));
    match t {
        Ty::Unit => named("Unit"),
        Ty::Bool => named("Bool"),
        Ty::Int => named("Int"),
        Ty::Float => named("Float"),
        Ty::Str => named("String"),
        Ty::Json => named("Json"),
        Ty::Approval => named("Approval"),
        Ty::Enum(ls) => texpr_kind(TypeExprKind::Enum(
            ls.iter().map(|l| (l.clone(), sp())).collect(),
        )),
        Ty::Option(x) => texpr_kind(TypeExprKind::Option(Box::new(texpr_with(x, optional)))),
        Ty::List(x) => texpr_kind(TypeExprKind::List(Box::new(texpr_with(x, optional)))),
        Ty::Lin(x) => texpr_kind(TypeExprKind::Linear(Box::new(texpr_with(x, optional)))),
        Ty::Result(x) => texpr_kind(TypeExprKind::Result(
            Box::new(texpr_with(x, optional)),
            Box::new(named("String")),
        )),
        Ty::Record(fs) | Ty::Open(fs) => {
            let fields = fs
                .iter()
                .map(|(n, ft)| {
                    let te = match ft {
                        Ty::Option(inner) if optional(n, ft) => texpr_kind(TypeExprKind::Optional(
                            Box::new(texpr_with(inner, optional)),
                        )),
                        _ => texpr_with(ft, optional),
                    };
                    (ident(n), te)
                })
                .collect();
            texpr_kind(TypeExprKind::Record(fields, matches!(t, Ty::Open(_))))
        }
        Ty::Fun(a, e, b) => texpr_kind(TypeExprKind::Fun(
            Box::new(texpr_with(a, optional)),
            EffectRowExpr {
                labels: e.iter().map(|l| ident(l)).collect(),
                span: sp(),
            },
            Box::new(texpr_with(b, optional)),
        )),
    }
}

// ------------------------------------------------------------------ generator

const FIELDS: [&str; 14] = [
    "id", "name", "amount", "count", "status", "email", "tags", "note", "score", "active", "ratio",
    "kind", "total", "label",
];
const LITERALS: [&str; 6] = ["open", "closed", "paid", "pending", "failed", "ok"];
const STRINGS: [&str; 9] = [
    "",
    "a",
    "cust_1",
    "x y",
    "héllo",
    "say \"hi\"",
    "two\nlines",
    "tab\tbed",
    "back\\slash",
];
const EXTRA_EFFECTS: [&str; 4] = ["Delete", "Email", "Payment", "Refund"];

/// The program generator.
pub struct Generator {
    rng: Rng,
    tools: Vec<ToolDef>,
    labels: Vec<String>,
    next: u32,
    fuel: i32,
    constructs: BTreeMap<&'static str, u32>,
}

/// Generates the program of `seed` at `size` (1 = tiny, 10 = large).
pub fn generate(seed: u64, size: u32) -> Generated {
    let mut g = Generator {
        rng: Rng::new(seed),
        tools: Vec::new(),
        labels: vec!["Read".into(), "Write".into(), "Network".into()],
        next: 0,
        fuel: 10 + 12 * size as i32,
        constructs: BTreeMap::new(),
    };
    let mut decls = g.declarations();
    let target = g.data_ty(2);
    let cx = Cx {
        env: Vec::new(),
        effects: None,
        in_scope: false,
    };
    let depth = 2 + size;
    let body = g.expr(&target, &cx, Mode::Synth, None, depth);
    let mut aliases: Vec<Decl> = Vec::new();
    g.alias_records(&mut decls, &mut aliases);
    aliases.append(&mut decls);
    let program = Program {
        decls: aliases,
        body,
        span: sp(),
    };
    let source = lt::syntax::print::print_program(&program);
    Generated {
        program,
        source,
        tools: g.tools,
        target,
        constructs: g.constructs,
    }
}

impl Generator {
    fn count(&mut self, what: &'static str) {
        *self.constructs.entry(what).or_insert(0) += 1;
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}{}", self.next)
    }

    // ------------------------------------------------------------- types

    fn base_ty(&mut self) -> Ty {
        match self.rng.below(12) {
            0..=2 => Ty::Int,
            3..=5 => Ty::Str,
            6 | 7 => Ty::Bool,
            8 => Ty::Float,
            9 | 10 => self.enum_ty(),
            _ => Ty::Int,
        }
    }

    fn enum_ty(&mut self) -> Ty {
        let mut ls: Vec<String> = Vec::new();
        for _ in 0..2 + self.rng.below(2) {
            ls.push(self.rng.pick(&LITERALS).to_string());
        }
        ls.sort();
        ls.dedup();
        Ty::Enum(ls)
    }

    fn record_ty(&mut self, depth: u32, max: usize) -> Vec<(String, Ty)> {
        let n = 1 + self.rng.below(max);
        let mut fs: Vec<(String, Ty)> = Vec::new();
        for _ in 0..n {
            let name = self.rng.pick(&FIELDS).to_string();
            if fs.iter().any(|(f, _)| *f == name) {
                continue;
            }
            let t = self.data_ty(depth.saturating_sub(1));
            fs.push((name, t));
        }
        fs
    }

    /// A random data type (no function, Result or linear part).
    fn data_ty(&mut self, depth: u32) -> Ty {
        if depth == 0 {
            return self.base_ty();
        }
        match self.rng.below(10) {
            0..=3 => self.base_ty(),
            4..=6 => Ty::Record(self.record_ty(depth, 3)),
            7 | 8 => Ty::list(self.data_ty(depth - 1)),
            _ => Ty::option(self.base_ty()),
        }
    }

    fn effects(&mut self) -> Effs {
        let mut e: Effs = Vec::new();
        let n = self.rng.below(3);
        for _ in 0..n {
            let l = self.rng.pick(&self.labels.clone()).clone();
            e.push(l);
        }
        norm(e)
    }

    // ------------------------------------------------------ declarations

    fn declarations(&mut self) -> Vec<Decl> {
        let mut decls = Vec::new();
        let mut declared: Vec<Ident> = Vec::new();
        for l in EXTRA_EFFECTS {
            if self.rng.chance(30) {
                self.labels.push(l.to_string());
                declared.push(ident(l));
            }
        }
        if !declared.is_empty() {
            self.count("effect_decl");
            decls.push(Decl::Effect(declared, sp()));
        }
        let plain = 1 + self.rng.below(4);
        for _ in 0..plain {
            let input = self.tool_input();
            let output = self.tool_output();
            let effects = self.effects();
            self.add_tool("get", input, effects, output);
        }
        if self.rng.chance(50) {
            // A tool that hands out single-use tokens, and one that spends them.
            let mut out = self.record_ty(1, 2);
            out.retain(|(n, _)| n != "token");
            out.push(("token".into(), Ty::Lin(Box::new(Ty::Str))));
            let input = self.tool_input();
            let effects = self.effects();
            self.add_tool("mint", input, effects, Ty::Record(out));
            let mut input = self.record_ty(0, 2);
            input.retain(|(n, _)| n != "token");
            let tok = if self.rng.chance(50) {
                Ty::Lin(Box::new(Ty::Str))
            } else {
                Ty::Str
            };
            input.push(("token".into(), tok));
            let effects = self.effects();
            let output = self.tool_output();
            self.add_tool("spend", Ty::Record(input), effects, output);
        }
        if self.rng.chance(40) {
            // A tool whose calls need an approval.
            let mut input = self.record_ty(0, 2);
            input.push(("approval".into(), Ty::Lin(Box::new(Ty::Approval))));
            let mut effects = self.effects();
            if self.labels.iter().any(|l| l == "Delete") {
                effects.push("Delete".into());
            } else {
                effects.push("Write".into());
            }
            let output = self.tool_output();
            self.add_tool("del", Ty::Record(input), norm(effects), output);
        }
        for _ in 0..self.rng.below(3) {
            // A tool with an undo, given the call's output or its input.
            let input = Ty::Record(self.record_ty(1, 2));
            let output = Ty::Record(self.record_ty(1, 3));
            let mut effects = self.effects();
            effects.push("Write".into());
            let k = self.tools.len();
            let from_output = self.rng.chance(50);
            let given = if from_output { &output } else { &input };
            let Ty::Record(fs) = given.clone() else {
                continue;
            };
            // The undo takes some of the fields.
            let mut taken: Vec<(String, Ty)> =
                fs.iter().filter(|_| self.rng.chance(70)).cloned().collect();
            if taken.is_empty() {
                taken = fs.clone();
            }
            let undo_name = format!("undo{k}");
            self.add_tool("book", input, norm(effects), output);
            self.tools[k].undo = Some((undo_name.clone(), from_output));
            let mut undo_effects = self.effects();
            if self.labels.iter().any(|l| l == "Refund") && self.rng.chance(60) {
                undo_effects = norm([undo_effects, vec!["Refund".to_string()]].concat());
            }
            let undo_out = if self.rng.chance(50) {
                Ty::Unit
            } else {
                self.tool_output()
            };
            self.tools.push(ToolDef {
                name: undo_name,
                input: Ty::Record(taken),
                effects: undo_effects,
                output: undo_out,
                undo: None,
            });
        }
        // Declarations in a random order (a tool's undo may come first).
        let mut order: Vec<usize> = (0..self.tools.len()).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, self.rng.below(i + 1));
        }
        for i in order {
            let t = self.tools[i].clone();
            let mut rng = self.rng.clone();
            let mut optional = |_: &str, _: &Ty| rng.chance(50);
            let ty = texpr_kind(TypeExprKind::Fun(
                Box::new(texpr_with(&t.input, &mut optional)),
                EffectRowExpr {
                    labels: t.effects.iter().map(|l| ident(l)).collect(),
                    span: sp(),
                },
                Box::new(texpr_with(&t.output, &mut optional)),
            ));
            self.rng.next();
            decls.push(Decl::Tool(ToolDecl {
                name: ident(&t.name),
                ty,
                undo: t.undo.as_ref().map(|(u, out)| UndoDecl {
                    tool: ident(u),
                    from: ident(if *out { "output" } else { "input" }),
                    span: sp(),
                }),
                span: sp(),
            }));
        }
        decls
    }

    fn add_tool(&mut self, prefix: &str, input: Ty, effects: Effs, output: Ty) {
        let name = format!("{prefix}{}", self.tools.len());
        self.tools.push(ToolDef {
            name,
            input,
            effects,
            output,
            undo: None,
        });
    }

    fn tool_input(&mut self) -> Ty {
        match self.rng.below(6) {
            0 => Ty::Str,
            1 => Ty::Unit,
            2 => Ty::Int,
            _ => {
                let mut fs = self.record_ty(1, 3);
                if self.rng.chance(40) && !fs.iter().any(|(n, _)| n == "note") {
                    // An optional field, which a call may leave out.
                    let t = self.base_ty();
                    fs.push(("note".into(), Ty::option(t)));
                }
                Ty::Record(fs)
            }
        }
    }

    fn tool_output(&mut self) -> Ty {
        match self.rng.below(8) {
            0 => Ty::Str,
            1 => Ty::Unit,
            2 => Ty::list(Ty::Record(self.record_ty(1, 2))),
            3 => {
                let mut fs = self.record_ty(1, 2);
                if !fs.iter().any(|(n, _)| n == "data") {
                    fs.push(("data".into(), Ty::Json));
                }
                Ty::Record(fs)
            }
            _ => Ty::Record(self.record_ty(2, 3)),
        }
    }

    /// Replaces some record types in tool declarations by `type` aliases.
    fn alias_records(&mut self, decls: &mut [Decl], aliases: &mut Vec<Decl>) {
        for d in decls.iter_mut() {
            let Decl::Tool(t) = d else { continue };
            let TypeExprKind::Fun(input, _, output) = &mut t.ty.kind else {
                continue;
            };
            for side in [input, output] {
                if matches!(side.kind, TypeExprKind::Record(..)) && self.rng.chance(25) {
                    let name = format!("T{}", aliases.len());
                    let ty = std::mem::replace(
                        &mut **side,
                        texpr_kind(TypeExprKind::Named(ident(&name))),
                    );
                    self.count("type_alias");
                    aliases.push(Decl::Type(TypeAlias {
                        name: ident(&name),
                        ty,
                        span: sp(),
                    }));
                }
            }
        }
    }

    // -------------------------------------------------------- tool usage

    /// The effects a call of tool `k` performs where it is written: a tool
    /// with an undo performs the undo's too (a scope may undo it, wherever
    /// the call is written).
    fn call_effects(&self, k: usize, cx: &Cx) -> Option<Effs> {
        let t = &self.tools[k];
        let mut e = t.effects.clone();
        match &t.undo {
            Some((u, _)) => {
                let u = self.tools.iter().find(|x| x.name == *u)?;
                e.extend(u.effects.iter().cloned());
            }
            None if cx.in_scope && !subset(&t.effects, &["Read".to_string()]) => return None,
            None => {}
        }
        Some(norm(e))
    }

    /// Whether tool `k` may be called here.
    fn usable(&self, k: usize, cx: &Cx) -> bool {
        match (self.call_effects(k, cx), &cx.effects) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(e), Some(allowed)) => subset(&e, allowed),
        }
    }

    /// Tools callable here with `exec` (no approval needed) returning `out`
    /// (any output when `None`).
    fn callable(&self, cx: &Cx, out: Option<&Ty>) -> Vec<usize> {
        (0..self.tools.len())
            .filter(|&k| {
                self.tools[k].approval_field().is_none()
                    && self.usable(k, cx)
                    && out.is_none_or(|o| same(&self.tools[k].output, o))
                    && (!self.tools[k].mints() || self.can_spend(cx))
            })
            .collect()
    }

    /// Whether a token can be spent here (a spend tool is callable).
    fn can_spend(&self, cx: &Cx) -> bool {
        (0..self.tools.len()).any(|k| {
            self.tools[k].token_field().is_some()
                && self.tools[k].approval_field().is_none()
                && self.usable(k, cx)
        })
    }

    /// The argument of a call of tool `k`: a record literal (checked
    /// against the input), with `token` and `approval` given when present.
    fn tool_arg(
        &mut self,
        k: usize,
        cx: &Cx,
        d: u32,
        token: Option<Expr>,
        approval: Option<Expr>,
    ) -> Expr {
        let input = self.tools[k].input.clone();
        let Ty::Record(fs) = input else {
            return self.expr(&input, cx, Mode::Check, None, d.min(1));
        };
        let mut token = token;
        let mut approval = approval;
        let mut fields = Vec::new();
        for (n, t) in fs {
            let value = match &t {
                Ty::Lin(x) if **x == Ty::Approval => match approval.take() {
                    Some(a) => a,
                    None => continue,
                },
                _ if n == "token" && token.is_some() => token.take().expect("token"),
                Ty::Lin(x) => self.expr(x, cx, Mode::Check, None, d.min(1)),
                // An Option field may be left out of a checked literal.
                Ty::Option(_) if self.rng.chance(30) => {
                    self.count("optional_field_omitted");
                    continue;
                }
                _ => self.expr(&t, cx, Mode::Check, None, d.min(2)),
            };
            fields.push(fld(&n, value));
        }
        if fields.len() > 1 && self.rng.chance(30) {
            fields.reverse();
        }
        record(fields)
    }

    /// `exec tool k ARG` (a Result).
    fn exec(&mut self, k: usize, cx: &Cx, d: u32, token: Option<Expr>) -> Expr {
        self.count("exec");
        let arg = self.tool_arg(k, cx, d, token, None);
        mk(ExprKind::Exec(
            ident(&self.tools[k].name.clone()),
            Box::new(arg),
        ))
    }

    // ------------------------------------------------------- expressions

    /// An expression of type `t` in context `cx`, consuming `ob` exactly
    /// once when given.
    fn expr(&mut self, t: &Ty, cx: &Cx, m: Mode, ob: Option<Ob>, d: u32) -> Expr {
        // Synthesized, an open record's value has the type of the record it
        // is: make it a record of exactly the listed fields (branches of
        // records with more fields would not join).
        if let (Ty::Open(fs), Mode::Synth) = (t, m) {
            return self.expr(&Ty::Record(fs.clone()), cx, m, ob, d);
        }
        if let Some(ob) = ob {
            return self.expr_ob(t, cx, m, ob, d);
        }
        if d == 0 || self.fuel <= 0 {
            return self.leaf(t, cx, m);
        }
        self.fuel -= 1;
        for _ in 0..6 {
            if let Some(e) = self.form(t, cx, m, d) {
                return e;
            }
        }
        self.leaf(t, cx, m)
    }

    /// A closed value or a variable.
    fn leaf(&mut self, t: &Ty, cx: &Cx, m: Mode) -> Expr {
        if self.rng.chance(60) {
            if let Some(e) = self.var_of(t, cx, m) {
                return e;
            }
        }
        self.literal(t, cx, m)
    }

    /// A variable (or a field path from one) of type `t`.
    fn var_of(&mut self, t: &Ty, cx: &Cx, m: Mode) -> Option<Expr> {
        let mut found: Vec<Expr> = Vec::new();
        for v in &cx.env {
            // An enum may stand for a String where the checker expects one.
            let widen = m == Mode::Check && *t == Ty::Str && matches!(v.ty, Ty::Enum(_));
            if fits(&v.ty, t) || widen {
                found.push(var(&v.name));
            }
            if let Ty::Record(fs) | Ty::Open(fs) = &v.ty {
                for (f, ft) in fs {
                    if same(ft, t) {
                        found.push(field(var(&v.name), f));
                    }
                    if let Ty::Record(gs) = ft {
                        for (g2, gt) in gs {
                            if same(gt, t) {
                                found.push(field(field(var(&v.name), f), g2));
                            }
                        }
                    }
                }
            }
        }
        if found.is_empty() {
            return None;
        }
        let i = self.rng.below(found.len());
        let e = found.swap_remove(i);
        if matches!(e.kind, ExprKind::Field(..)) {
            self.count("field_access");
        }
        Some(e)
    }

    /// A value of type `t` built from literals (and variables, for
    /// functions' bodies).
    fn literal(&mut self, t: &Ty, cx: &Cx, m: Mode) -> Expr {
        match t {
            Ty::Unit => mk(ExprKind::Unit),
            Ty::Bool => mk(ExprKind::Bool(self.rng.chance(50))),
            Ty::Int => int(*self.rng.pick(&[0, 1, 2, 3, 7, 10, 42, 1000])),
            Ty::Float => {
                self.count("float");
                mk(ExprKind::Float(
                    *self.rng.pick(&[0.5, 2.0, 1.25, 0.1, 3e10, 1e-3]),
                ))
            }
            Ty::Str => str_lit(self.rng.word(&STRINGS)),
            Ty::Json => {
                self.count("json");
                let inner = self.literal(&Ty::Int, cx, Mode::Synth);
                call("to_json", vec![inner])
            }
            Ty::Enum(ls) => {
                let l = str_lit(&self.rng.pick(ls).clone());
                self.count("enum_literal");
                match m {
                    Mode::Check => l,
                    Mode::Synth => self.annotated(t, l),
                }
            }
            Ty::Option(x) => {
                if m == Mode::Check && self.rng.chance(40) {
                    self.count("none");
                    return mk(ExprKind::None);
                }
                self.count("some");
                let inner = self.literal(x, cx, m);
                mk(ExprKind::Some(Box::new(inner)))
            }
            Ty::List(x) => {
                self.count("list");
                let n = self.rng.below(3);
                if n == 0 {
                    return if m == Mode::Check {
                        mk(ExprKind::List(vec![], None))
                    } else {
                        mk(ExprKind::List(vec![], Some(Box::new(texpr(x)))))
                    };
                }
                let items = (0..n).map(|_| self.literal(x, cx, m)).collect();
                mk(ExprKind::List(items, None))
            }
            Ty::Record(fs) => {
                self.count("record");
                let fields = fs
                    .iter()
                    .map(|(n, ft)| {
                        let v = self.literal(ft, cx, m);
                        fld(n, v)
                    })
                    .collect();
                record(fields)
            }
            // A record literal is never checked against an open record
            // (the checker synthesizes it): no enum literals inside.
            Ty::Open(fs) => self.literal(&Ty::Record(fs.clone()), cx, Mode::Synth),
            Ty::Result(x) if m == Mode::Check => {
                let inner = self.literal(x, cx, m);
                self.count("ok");
                mk(ExprKind::Ok(Box::new(inner)))
            }
            Ty::Result(x) => {
                // `Ok(v)` alone leaves the Err type open: `ok_or` fixes it.
                let inner = self.literal(x, cx, m);
                self.count("ok_or");
                call(
                    "ok_or",
                    vec![str_lit("missing"), mk(ExprKind::Some(Box::new(inner)))],
                )
            }
            Ty::Fun(a, e, b) => {
                let p = self.fresh("p");
                let inner = Cx {
                    effects: Some(e.clone()),
                    ..cx.with(&p, (**a).clone())
                };
                let body = self.leaf(b, &inner, Mode::Synth);
                self.count("lambda");
                lam(&p, Some(texpr(a)), body)
            }
            Ty::Lin(_) | Ty::Approval => str_lit("plain"),
        }
    }

    /// `let v: T = e in v`: `e` checked against `T` in a synthesized position.
    fn annotated(&mut self, t: &Ty, e: Expr) -> Expr {
        let v = self.fresh("v");
        self.count("let_annotated");
        let_in(&v, Some(texpr(t)), e, var(&v))
    }

    /// One random compound form of type `t`, or `None` when the one drawn
    /// does not apply here.
    fn form(&mut self, t: &Ty, cx: &Cx, m: Mode, d: u32) -> Option<Expr> {
        let d1 = d - 1;
        match self.rng.below(24) {
            0 | 1 => {
                // let x = e in body
                let u = if self.rng.chance(20) {
                    // Often a function that the body can call for its value.
                    let ret = self.rng.chance(60).then(|| t.clone());
                    self.fun_ty(cx, ret)
                } else {
                    self.data_ty(1)
                };
                let x = self.fresh("v");
                let annot = u.has_enum() || matches!(u, Ty::Fun(..)) || self.rng.chance(20);
                let value = self.expr(
                    &u,
                    cx,
                    if annot { Mode::Check } else { Mode::Synth },
                    None,
                    d1,
                );
                if self.rng.chance(10) && !matches!(u, Ty::Fun(..)) {
                    // let _ = e in body: the value is discarded
                    let body = self.expr(t, cx, m, None, d1);
                    self.count("let_underscore");
                    return Some(let_in("_", annot.then(|| texpr(&u)), value, body));
                }
                let body = self.expr(t, &cx.with(&x, u.clone()), m, None, d1);
                self.count(if annot { "let_annotated" } else { "let" });
                Some(let_in(&x, annot.then(|| texpr(&u)), value, body))
            }
            2 | 3 => {
                self.count("if");
                let c = self.expr(&Ty::Bool, cx, Mode::Synth, None, d1);
                let a = self.expr(t, cx, m, None, d1);
                let b = self.expr(t, cx, m, None, d1);
                Some(mk(ExprKind::If(Box::new(c), Box::new(a), Box::new(b))))
            }
            4..=6 => self.match_call(t, cx, m, d1),
            7 => {
                // match on an Option
                let u = self.base_ty();
                let s = self.expr(&Ty::option(u.clone()), cx, Mode::Synth, None, d1);
                let x = self.fresh("v");
                let some = self.expr(t, &cx.with(&x, u), m, None, d1);
                let none = self.expr(t, cx, m, None, d1);
                self.count("match_option");
                let mut arms = vec![
                    arm(PatternKind::Some(binder(&x)), some),
                    arm(PatternKind::None, none),
                ];
                if self.rng.chance(25) {
                    arms[1].pattern.kind = PatternKind::Wildcard;
                } else if self.rng.chance(30) {
                    arms.reverse();
                }
                Some(mtch(s, arms))
            }
            8 => {
                // match on an enum (or a String, with a catch-all)
                let u = self.enum_ty();
                let on_string = self.rng.chance(20);
                let s = if on_string {
                    self.count("match_string");
                    self.expr(&Ty::Str, cx, Mode::Synth, None, d1)
                } else {
                    self.expr(&u, cx, Mode::Synth, None, d1)
                };
                let Ty::Enum(ls) = &u else { return None };
                let catch_all = on_string || self.rng.chance(30);
                let mut arms = Vec::new();
                for l in ls.clone() {
                    if catch_all && !on_string && arms.len() == 1 {
                        break;
                    }
                    let body = self.expr(t, cx, m, None, d1);
                    arms.push(arm(PatternKind::Str(l), body));
                }
                if catch_all {
                    let body = self.expr(t, cx, m, None, d1);
                    arms.push(arm(PatternKind::Wildcard, body));
                }
                if !on_string {
                    self.count("match_enum");
                }
                Some(mtch(s, arms))
            }
            9 | 10 => {
                // (fn x: U => body) arg, or a named function used later
                let u = self.data_ty(1);
                let p = self.fresh("p");
                let body = self.expr(t, &cx.with(&p, u.clone()), Mode::Synth, None, d1);
                let f = lam(&p, Some(texpr(&u)), body);
                let arg = self.expr(&u, cx, Mode::Check, None, d1);
                self.count("lambda");
                self.count("apply_lambda");
                Some(app(f, arg))
            }
            11 => {
                // a function variable of the environment
                let fs: Vec<(String, Ty)> = cx
                    .env
                    .iter()
                    .filter_map(|v| match &v.ty {
                        // A function may call a tool without an undo: inside
                        // a scope only read-only ones (E0220 otherwise).
                        Ty::Fun(a, e, b)
                            if same(b, t)
                                && cx.effects.as_ref().is_none_or(|al| subset(e, al))
                                && (!cx.in_scope || subset(e, &["Read".to_string()])) =>
                        {
                            Some((v.name.clone(), (**a).clone()))
                        }
                        _ => None,
                    })
                    .collect();
                if fs.is_empty() {
                    return None;
                }
                let (f, a) = fs[self.rng.below(fs.len())].clone();
                let arg = self.expr(&a, cx, Mode::Check, None, d1);
                self.count("apply_function_variable");
                Some(app(var(&f), arg))
            }
            12 => {
                self.count("intent");
                let body = self.expr(t, cx, m, None, d1);
                let a = Annotation {
                    intent: self
                        .rng
                        .pick(&["check the data", "why \"this\""])
                        .to_string(),
                    hypothesis: self.rng.chance(50).then(|| "it works".to_string()),
                    notes: self.rng.chance(30).then(|| "n".to_string()),
                    span: sp(),
                };
                Some(mk(ExprKind::Annotate(Box::new(a), Box::new(body))))
            }
            13 if self.rng.chance(30) => self.scope_through_function(t, cx, m, d1),
            13 => self.gather(t, cx, m, d1),
            14 => self.approval(t, cx, m, d1),
            15 => self.row_poly(t, cx, m, d1),
            16 => self.let_result(t, cx, m, d1),
            17 => self.bounded_loop(t, cx, d1),
            18 => self.linear_param(t, cx, d1),
            _ => self.typed(t, cx, m, d1),
        }
    }

    /// A function type whose effects are allowed here.
    fn fun_ty(&mut self, cx: &Cx, ret: Option<Ty>) -> Ty {
        let a = self.base_ty();
        let b = match ret {
            Some(t) if !t.has_linear() && !matches!(t, Ty::Result(_) | Ty::Fun(..)) => t,
            _ => self.data_ty(1),
        };
        let mut e = match &cx.effects {
            Some(allowed) => allowed.clone(),
            None => {
                let ks = self.callable(cx, None);
                if ks.is_empty() {
                    Vec::new()
                } else {
                    let k = *self.rng.pick(&ks);
                    self.call_effects(k, cx).unwrap_or_default()
                }
            }
        };
        if self.rng.chance(30) {
            e.clear();
        }
        Ty::Fun(Box::new(a), norm(e), Box::new(b))
    }

    /// `match exec tool k ARG { Ok(x) => …, Err(e) => … }`, or a match on
    /// another Result source.
    fn match_call(&mut self, t: &Ty, cx: &Cx, m: Mode, d: u32) -> Option<Expr> {
        let (scrutinee, u) = self.result_source(cx, d)?;
        Some(self.match_result(scrutinee, &u, t, cx, m, d))
    }

    /// A Result-typed expression (and its Ok type), from the tools and the
    /// Result combinators.
    fn result_source(&mut self, cx: &Cx, d: u32) -> Option<(Expr, Ty)> {
        match self.rng.below(8) {
            0 if self.rng.chance(30) => self.traverse_minting(cx, d),
            0 => {
                // traverse f xs (with no tool that mints tokens: a
                // traverse that stops at an Err would drop them, E0506)
                let ks = self.callable(cx, None);
                let ks: Vec<usize> = ks.into_iter().filter(|&k| !self.tools[k].mints()).collect();
                if ks.is_empty() {
                    return None;
                }
                let k = *self.rng.pick(&ks);
                let w = self.base_ty();
                let xs = self.expr(&Ty::list(w.clone()), cx, Mode::Synth, None, d);
                let x = self.fresh("p");
                let inner = cx.with(&x, w.clone());
                let call = self.exec(k, &inner, d.min(2), None);
                let out = self.tools[k].output.clone();
                let body = if self.rng.chance(50) {
                    call
                } else {
                    // match … { Ok(o) => Ok(o), Err(e) => Err(e ++ "!") }
                    let o = self.fresh("v");
                    let e = self.fresh("e");
                    mtch(
                        call,
                        vec![
                            arm(
                                PatternKind::Ok(binder(&o)),
                                mk(ExprKind::Ok(Box::new(var(&o)))),
                            ),
                            arm(
                                PatternKind::Err(binder(&e)),
                                mk(ExprKind::Err(Box::new(bin(
                                    BinOp::Concat,
                                    var(&e),
                                    str_lit("!"),
                                )))),
                            ),
                        ],
                    )
                };
                let annot = self.rng.chance(50).then(|| texpr(&w));
                self.count("traverse");
                Some((call_fn("traverse", lam(&x, annot, body), xs), Ty::list(out)))
            }
            1 => {
                // scope { … }
                let ks: Vec<usize> = {
                    let inner = Cx {
                        in_scope: true,
                        ..cx.clone()
                    };
                    self.callable(&inner, None)
                };
                if ks.is_empty() {
                    return None;
                }
                let u = self.data_ty(1);
                let inner = Cx {
                    in_scope: true,
                    ..cx.clone()
                };
                let body = self.expr(&Ty::result(u.clone()), &inner, Mode::Synth, None, d);
                self.count("scope");
                Some((mk(ExprKind::Scope(Box::new(body))), u))
            }
            2 => {
                // ok_or "…" opt
                let u = self.base_ty();
                let o = self.expr(&Ty::option(u.clone()), cx, Mode::Synth, None, d);
                self.count("ok_or");
                Some((call("ok_or", vec![str_lit("missing"), o]), u))
            }
            3 => {
                // traverse (fn r => r) (fan_out (fn x => exec tool k …) xs)
                let ks: Vec<usize> = self
                    .callable(cx, None)
                    .into_iter()
                    .filter(|&k| !self.tools[k].mints())
                    .collect();
                if ks.is_empty() {
                    return None;
                }
                let k = *self.rng.pick(&ks);
                let w = self.base_ty();
                let xs = self.expr(&Ty::list(w.clone()), cx, Mode::Synth, None, d);
                let x = self.fresh("p");
                let call = self.exec(k, &cx.with(&x, w), 1, None);
                let out = self.tools[k].output.clone();
                let r = self.fresh("r");
                self.count("fan_out");
                let fanned = call_fn("fan_out", lam(&x, None, call), xs);
                Some((
                    call_fn("traverse", lam(&r, None, var(&r)), fanned),
                    Ty::list(out),
                ))
            }
            4 => {
                // if c then R1 else R2, both the same call's type
                let ks = self.callable(cx, None);
                if ks.is_empty() {
                    return None;
                }
                let k = *self.rng.pick(&ks);
                let c = self.expr(&Ty::Bool, cx, Mode::Synth, None, d);
                let a = self.exec(k, cx, d, None);
                let out = self.tools[k].output.clone();
                let b = if self.rng.chance(50) {
                    self.exec(k, cx, d, None)
                } else {
                    self.count("err");
                    mk(ExprKind::Err(Box::new(str_lit("skipped"))))
                };
                self.count("if_result");
                Some((mk(ExprKind::If(Box::new(c), Box::new(a), Box::new(b))), out))
            }
            _ => {
                let ks = self.callable(cx, None);
                if ks.is_empty() {
                    return None;
                }
                let k = *self.rng.pick(&ks);
                let out = self.tools[k].output.clone();
                Some((self.exec(k, cx, d, None), out))
            }
        }
    }

    /// Tokens minted and spent inside one `traverse` callback, each
    /// iteration's before the next (collected, they would be E0506):
    /// `traverse (fn x => match exec tool MINT … { Ok(tk) => exec tool SPEND
    /// {token = tk.token, …}, Err(e) => Err(e) }) xs`.
    fn traverse_minting(&mut self, cx: &Cx, d: u32) -> Option<(Expr, Ty)> {
        let w = self.base_ty();
        let x = self.fresh("p");
        let inner = cx.with(&x, w.clone());
        let plain =
            |g: &Self, k: usize| g.tools[k].approval_field().is_none() && g.usable(k, &inner);
        let mints: Vec<usize> = (0..self.tools.len())
            .filter(|&k| self.tools[k].mints() && plain(self, k))
            .collect();
        let spends: Vec<usize> = (0..self.tools.len())
            .filter(|&k| {
                self.tools[k].token_field().is_some() && !self.tools[k].mints() && plain(self, k)
            })
            .collect();
        if mints.is_empty() || spends.is_empty() {
            return None;
        }
        let (mk_k, sp_k) = (*self.rng.pick(&mints), *self.rng.pick(&spends));
        let xs = self.expr(&Ty::list(w.clone()), cx, Mode::Synth, None, d);
        let mint = self.exec(mk_k, &inner, d.min(2), None);
        let tk = self.fresh("tk");
        let e = self.fresh("e");
        let spend = self.exec(sp_k, &inner, 1, Some(field(var(&tk), "token")));
        let body = mtch(
            mint,
            vec![
                arm(PatternKind::Ok(binder(&tk)), spend),
                arm(
                    PatternKind::Err(binder(&e)),
                    mk(ExprKind::Err(Box::new(var(&e)))),
                ),
            ],
        );
        let annot = self.rng.chance(50).then(|| texpr(&w));
        self.count("traverse");
        self.count("token_minted_in_traverse");
        let out = self.tools[sp_k].output.clone();
        Some((call_fn("traverse", lam(&x, annot, body), xs), Ty::list(out)))
    }

    /// `match R { Ok(x) => …, Err(e) => … }` with `R: Result<u, String>`.
    fn match_result(&mut self, r: Expr, u: &Ty, t: &Ty, cx: &Cx, m: Mode, d: u32) -> Expr {
        let x = if u.has_linear() {
            self.fresh("tk")
        } else if self.rng.chance(15) {
            "_".to_string()
        } else {
            self.fresh("v")
        };
        let ok = if u.has_linear() {
            self.count("linear_minted");
            let ob = match u {
                Ty::List(_) => Ob::MintedList(x.clone()),
                _ => Ob::Minted(x.clone()),
            };
            self.expr(t, cx, m, Some(ob), d)
        } else if x == "_" {
            self.expr(t, cx, m, None, d)
        } else {
            self.expr(t, &cx.with(&x, u.clone()), m, None, d)
        };
        let e = if self.rng.chance(20) {
            "_".to_string()
        } else {
            self.fresh("e")
        };
        let err = if e == "_" {
            self.expr(t, cx, m, None, d)
        } else {
            self.expr(t, &cx.with(&e, Ty::Str), m, None, d)
        };
        self.count("match_result");
        let mut arms = vec![
            arm(PatternKind::Ok(binder(&x)), ok),
            arm(PatternKind::Err(binder(&e)), err),
        ];
        if self.rng.chance(20) {
            self.count("err_arm_first");
            arms.reverse();
        }
        mtch(r, arms)
    }

    /// `let g = gather { a = exec tool …, b = exec tool … } in` every
    /// field matched on every path.
    fn gather(&mut self, t: &Ty, cx: &Cx, m: Mode, d: u32) -> Option<Expr> {
        let ks: Vec<usize> = self
            .callable(cx, None)
            .into_iter()
            .filter(|&k| !self.tools[k].mints())
            .collect();
        if ks.is_empty() {
            return None;
        }
        let n = 2 + self.rng.below(2);
        let g = self.fresh("g");
        let mut fields = Vec::new();
        let mut outs = Vec::new();
        for i in 0..n {
            let k = *self.rng.pick(&ks);
            let call = self.exec(k, cx, d.min(2), None);
            let name = format!("c{i}");
            fields.push(fld(&name, call));
            outs.push((name, self.tools[k].output.clone()));
        }
        let body = self.match_fields(&g, &outs, t, cx, m, d);
        self.count("gather");
        let gathered = mk(ExprKind::Gather(Box::new(record(fields))));
        Some(let_in(&g, None, gathered, body))
    }

    /// Nested matches of `g.f` for each field, on every path.
    fn match_fields(
        &mut self,
        g: &str,
        outs: &[(String, Ty)],
        t: &Ty,
        cx: &Cx,
        m: Mode,
        d: u32,
    ) -> Expr {
        let Some(((f, u), rest)) = outs.split_first() else {
            return self.expr(t, cx, m, None, d.min(2));
        };
        let x = self.fresh("v");
        let e = self.fresh("e");
        let ok = self.match_fields(g, rest, t, &cx.with(&x, u.clone()), m, d);
        let err = self.match_fields(g, rest, t, &cx.with(&e, Ty::Str), m, d);
        mtch(
            field(var(g), f),
            vec![
                arm(PatternKind::Ok(binder(&x)), ok),
                arm(PatternKind::Err(binder(&e)), err),
            ],
        )
    }

    /// A call of a tool with an undo, made by a
    /// function defined outside a `scope` and applied inside it:
    /// `let f = fn p: Unit => exec tool book … in match scope { match f () {…} } {…}`,
    /// or given as an argument to a function applying it in its scope:
    /// `let run = fn g: Unit -{…}-> Result<…> => scope { match g () {…} } in
    /// match run f {…}` (the function's type says its calls can be undone).
    fn scope_through_function(&mut self, t: &Ty, cx: &Cx, m: Mode, d: u32) -> Option<Expr> {
        if cx.in_scope || cx.effects.is_some() {
            return None;
        }
        let ks: Vec<usize> = self
            .callable(cx, None)
            .into_iter()
            .filter(|&k| self.tools[k].undo.is_some())
            .collect();
        if ks.is_empty() {
            return None;
        }
        let k = *self.rng.pick(&ks);
        let f = self.fresh("f");
        let p = self.fresh("p");
        let inner = Cx {
            in_scope: true,
            ..cx.clone()
        };
        // The call runs inside the scope, its argument's calls too: they
        // are generated as if written there (read-only or with an undo).
        let call = self.exec(k, &inner, 1, None);
        let out = self.tools[k].output.clone();
        let out_ty = out.clone();
        let u = self.data_ty(1);
        // match f () { Ok(v) => Err("…") or …, Err(e) => Err(e) }: the scope
        // often ends in Err after the call succeeded, so its undo runs.
        let v = self.fresh("v");
        let e = self.fresh("e");
        let inner_v = inner.with(&v, out);
        let ok = self.expr(&Ty::result(u.clone()), &inner_v, Mode::Synth, None, d);
        let ok = if self.rng.chance(60) {
            // if c then Err("roll back") else …, the else fixing the Ok type
            let c = self.expr(&Ty::Bool, &inner_v, Mode::Synth, None, d.min(1));
            let back = mk(ExprKind::Err(Box::new(str_lit("roll back"))));
            mk(ExprKind::If(Box::new(c), Box::new(back), Box::new(ok)))
        } else {
            ok
        };
        let through_param = self.rng.chance(40);
        let g = if through_param {
            self.fresh("p")
        } else {
            f.clone()
        };
        let body = mtch(
            app(var(&g), mk(ExprKind::Unit)),
            vec![
                arm(PatternKind::Ok(binder(&v)), ok),
                arm(
                    PatternKind::Err(binder(&e)),
                    mk(ExprKind::Err(Box::new(var(&e)))),
                ),
            ],
        );
        let scoped = mk(ExprKind::Scope(Box::new(body)));
        let f_value = lam(&p, Some(texpr(&Ty::Unit)), call);
        if through_param {
            // Every declared effect: a row that admits whatever `f`'s
            // call (and its argument's calls) perform.
            let row = norm(self.labels.clone());
            let g_ty = Ty::Fun(Box::new(Ty::Unit), row, Box::new(Ty::result(out_ty)));
            let run = self.fresh("f");
            let run_value = lam(&g, Some(texpr(&g_ty)), scoped);
            let rest = self.match_result(app(var(&run), var(&f)), &u, t, cx, m, d);
            self.count("scope_function_argument");
            return Some(let_in(
                &f,
                None,
                f_value,
                let_in(&run, None, run_value, rest),
            ));
        }
        let rest = self.match_result(scoped, &u, t, cx, m, d);
        self.count("scope_through_function");
        Some(let_in(&f, None, f_value, rest))
    }

    /// `match approve tool k {…} { Ok(a) => … (a spent), Err(why) => … }`.
    fn approval(&mut self, t: &Ty, cx: &Cx, m: Mode, d: u32) -> Option<Expr> {
        let ks: Vec<usize> = (0..self.tools.len())
            .filter(|&k| self.tools[k].approval_field().is_some() && self.usable(k, cx))
            .collect();
        if ks.is_empty() || cx.pure() {
            return None;
        }
        let k = *self.rng.pick(&ks);
        // The approved argument: closed values, so that the call can repeat it.
        let Ty::Record(fs) = self.tools[k].input.clone() else {
            return None;
        };
        let mut fields = Vec::new();
        for (n, ft) in fs {
            if matches!(&ft, Ty::Lin(x) if **x == Ty::Approval) {
                continue;
            }
            let v = self.literal(&ft, cx, Mode::Check);
            fields.push(fld(&n, v));
        }
        let a = self.fresh("tk");
        let why = self.fresh("e");
        self.count("approve");
        let ok = self.expr(
            t,
            cx,
            m,
            Some(Ob::Approval(a.clone(), k, fields.clone())),
            d,
        );
        let err = self.expr(t, &cx.with(&why, Ty::Str), m, None, d);
        let name = self.tools[k].name.clone();
        let req = mk(ExprKind::Approve(ident(&name), Box::new(record(fields))));
        Some(mtch(
            req,
            vec![
                arm(PatternKind::Ok(binder(&a)), ok),
                arm(PatternKind::Err(binder(&why)), err),
            ],
        ))
    }

    /// A row-polymorphic function: `let f = fn r: {a: T, ..} => … in f rec`.
    fn row_poly(&mut self, t: &Ty, cx: &Cx, m: Mode, d: u32) -> Option<Expr> {
        let recs: Vec<(String, Vec<(String, Ty)>)> = cx
            .env
            .iter()
            .filter_map(|v| match &v.ty {
                Ty::Record(fs) if !fs.is_empty() => Some((v.name.clone(), fs.clone())),
                _ => None,
            })
            .collect();
        if recs.is_empty() {
            return None;
        }
        let (rv, fs) = recs[self.rng.below(recs.len())].clone();
        let mut part: Vec<(String, Ty)> =
            fs.iter().filter(|_| self.rng.chance(60)).cloned().collect();
        if part.is_empty() {
            part.push(fs[0].clone());
        }
        let open = Ty::Open(part);
        let f = self.fresh("f");
        let p = self.fresh("p");
        let inner = Cx {
            env: vec![Var {
                name: p.clone(),
                ty: open.clone(),
            }],
            effects: Some(Vec::new()),
            in_scope: cx.in_scope,
        };
        let body = self.expr(t, &inner, Mode::Synth, None, d.min(2));
        self.count("open_record");
        let use_it = app(var(&f), var(&rv));
        let rest = if matches!(t, Ty::Result(_)) || self.rng.chance(50) {
            use_it
        } else {
            // Bound, and usable again on any record with these fields.
            let y = self.fresh("v");
            let more = cx.with(&y, t.clone()).with(
                &f,
                Ty::Fun(Box::new(open.clone()), Vec::new(), Box::new(t.clone())),
            );
            let body = self.expr(t, &more, m, None, d);
            let_in(&y, None, use_it, body)
        };
        let value = lam(&p, Some(texpr(&open)), body);
        Some(let_in(&f, None, value, rest))
    }

    /// `let r = exec tool … in … match r {…}`: a Result bound and matched later.
    fn let_result(&mut self, t: &Ty, cx: &Cx, m: Mode, d: u32) -> Option<Expr> {
        let (r, u) = self.result_source(cx, d)?;
        let name = self.fresh("rs");
        self.count("let_result");
        let body = self.expr(t, cx, m, Some(Ob::Res(name.clone(), u)), d);
        Some(let_in(&name, None, r, body))
    }

    /// `(bounded_loop N init (fn s => {done = …, value = …})).value`.
    fn bounded_loop(&mut self, t: &Ty, cx: &Cx, d: u32) -> Option<Expr> {
        if !matches!(t, Ty::Int | Ty::Str | Ty::Bool) {
            return None;
        }
        let init = self.expr(t, cx, Mode::Synth, None, d.min(1));
        let s = self.fresh("p");
        let inner = cx.with(&s, t.clone());
        let done = self.expr(&Ty::Bool, &inner, Mode::Synth, None, d.min(2));
        let value = self.expr(t, &inner, Mode::Synth, None, d.min(2));
        let step = lam(
            &s,
            self.rng.chance(50).then(|| texpr(t)),
            record(vec![fld("done", done), fld("value", value)]),
        );
        let n = 1 + self.rng.below(4) as i64;
        self.count("bounded_loop");
        let lp = call("bounded_loop", vec![int(n), init, step]);
        Some(field(lp, "value"))
    }

    /// `(fn p: !String => … p spent …) "…"`: a linear parameter.
    fn linear_param(&mut self, t: &Ty, cx: &Cx, d: u32) -> Option<Expr> {
        if !self.can_spend(cx) {
            return None;
        }
        let p = self.fresh("tk");
        let body = self.expr(t, cx, Mode::Synth, Some(Ob::Token(p.clone())), d);
        self.count("linear_param");
        let f = lam(&p, Some(texpr(&Ty::Lin(Box::new(Ty::Str)))), body);
        Some(app(f, str_lit("plain")))
    }

    /// The forms specific to the target type: operators, records, lists,
    /// the builtins and the standard library.
    fn typed(&mut self, t: &Ty, cx: &Cx, m: Mode, d: u32) -> Option<Expr> {
        let s = Mode::Synth;
        Some(match t {
            Ty::Int => match self.rng.below(9) {
                0..=2 => {
                    let op = *self.rng.pick(&[
                        BinOp::Add,
                        BinOp::Sub,
                        BinOp::Mul,
                        BinOp::Div,
                        BinOp::Rem,
                    ]);
                    self.count("arithmetic");
                    let a = self.expr(t, cx, s, None, d);
                    let b = self.expr(t, cx, s, None, d);
                    bin(op, a, b)
                }
                3 => {
                    self.count("negation");
                    let a = self.expr(t, cx, s, None, d);
                    mk(ExprKind::Neg(Box::new(a)))
                }
                4 => {
                    let u = self.data_ty(1);
                    let xs = self.expr(&Ty::list(u), cx, s, None, d);
                    self.count("stdlib");
                    call("length", vec![xs])
                }
                5 => {
                    // fold (fn acc => fn x => …) init xs
                    let u = self.base_ty();
                    let xs = self.expr(&Ty::list(u.clone()), cx, s, None, d);
                    let init = self.expr(t, cx, s, None, d.min(1));
                    let acc = self.fresh("p");
                    let x = self.fresh("p");
                    let pure = Cx {
                        effects: Some(Vec::new()),
                        ..cx.with(&acc, t.clone()).with(&x, u)
                    };
                    let body = self.expr(t, &pure, s, None, d.min(2));
                    self.count("fold");
                    call("fold", vec![lam(&acc, None, lam(&x, None, body)), init, xs])
                }
                6 => {
                    let str_ = self.expr(&Ty::Str, cx, s, None, d);
                    self.count("stdlib");
                    call("string_length", vec![str_])
                }
                7 => {
                    let o = self.expr(&Ty::option(Ty::Int), cx, s, None, d);
                    let dflt = self.expr(t, cx, s, None, 0);
                    self.count("with_default");
                    call("with_default", vec![dflt, o])
                }
                _ => {
                    let f = self.expr(&Ty::Float, cx, s, None, d);
                    self.count("stdlib");
                    call(self.rng.word(&["round", "truncate", "floor"]), vec![f])
                }
            },
            Ty::Float => {
                if self.rng.chance(50) {
                    let op = *self
                        .rng
                        .pick(&[BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div]);
                    self.count("float_arithmetic");
                    let a = self.expr(t, cx, s, None, d);
                    let b = self.expr(t, cx, s, None, d);
                    bin(op, a, b)
                } else {
                    let i = self.expr(&Ty::Int, cx, s, None, d);
                    self.count("stdlib");
                    call("to_float", vec![i])
                }
            }
            Ty::Str => match self.rng.below(5) {
                0 | 1 => {
                    self.count("concat");
                    let a = self.expr(t, cx, s, None, d);
                    let b = self.expr(t, cx, s, None, d);
                    bin(BinOp::Concat, a, b)
                }
                2 => {
                    let u = self.data_ty(1);
                    let x = self.expr(&u, cx, s, None, d);
                    self.count("to_string");
                    call("to_string", vec![x])
                }
                3 => {
                    let xs = self.expr(&Ty::list(Ty::Str), cx, s, None, d);
                    self.count("stdlib");
                    call("join", vec![str_lit(", "), xs])
                }
                _ => {
                    let a = self.expr(t, cx, s, None, d);
                    self.count("stdlib");
                    call(self.rng.word(&["upper", "lower", "trim"]), vec![a])
                }
            },
            Ty::Bool => match self.rng.below(7) {
                0 | 1 => {
                    let u = self.rng.pick(&[Ty::Int, Ty::Str, Ty::Float]).clone();
                    let op = *self.rng.pick(&[
                        BinOp::Eq,
                        BinOp::Ne,
                        BinOp::Lt,
                        BinOp::Gt,
                        BinOp::Le,
                        BinOp::Ge,
                    ]);
                    self.count("comparison");
                    let a = self.expr(&u, cx, s, None, d);
                    let b = self.expr(&u, cx, s, None, d);
                    debug_assert!(u.ordered());
                    bin(op, a, b)
                }
                2 => {
                    let op = *self.rng.pick(&[BinOp::And, BinOp::Or]);
                    self.count("logic");
                    let a = self.expr(t, cx, s, None, d);
                    let b = self.expr(t, cx, s, None, d);
                    bin(op, a, b)
                }
                3 => {
                    self.count("not");
                    let a = self.expr(t, cx, s, None, d);
                    call("not", vec![a])
                }
                4 => {
                    // an enum compared with one of its literals
                    let u = self.enum_ty();
                    let a = self.expr(&u, cx, s, None, d);
                    let Ty::Enum(ls) = &u else { return None };
                    let l = str_lit(&self.rng.pick(ls).clone());
                    self.count("enum_compare");
                    bin(BinOp::Eq, a, l)
                }
                5 => {
                    // any/all/is_some/is_empty over a pure predicate
                    let u = self.base_ty();
                    let xs = self.expr(&Ty::list(u.clone()), cx, s, None, d);
                    let x = self.fresh("p");
                    let pure = Cx {
                        effects: Some(Vec::new()),
                        ..cx.with(&x, u)
                    };
                    let body = self.expr(t, &pure, s, None, d.min(2));
                    self.count("stdlib");
                    call(
                        self.rng.word(&["any", "all"]),
                        vec![lam(&x, None, body), xs],
                    )
                }
                _ => {
                    let u = self.base_ty();
                    let o = self.expr(&Ty::option(u), cx, s, None, d);
                    self.count("stdlib");
                    call(self.rng.word(&["is_some", "is_none"]), vec![o])
                }
            },
            Ty::List(u) => match self.rng.below(6) {
                0 | 1 => {
                    // map (fn x => …) xs
                    let w = self.base_ty();
                    let xs = self.expr(&Ty::list(w.clone()), cx, s, None, d);
                    let x = self.fresh("p");
                    let pure = Cx {
                        effects: Some(Vec::new()),
                        ..cx.with(&x, w.clone())
                    };
                    let body = self.expr(u, &pure, s, None, d.min(2));
                    let annot = self.rng.chance(40).then(|| texpr(&w));
                    self.count("map");
                    call_fn("map", lam(&x, annot, body), xs)
                }
                2 => {
                    let xs = self.expr(t, cx, s, None, d);
                    let x = self.fresh("p");
                    let pure = Cx {
                        effects: Some(Vec::new()),
                        ..cx.with(&x, (**u).clone())
                    };
                    let body = self.expr(&Ty::Bool, &pure, s, None, d.min(2));
                    self.count("filter");
                    call_fn("filter", lam(&x, None, body), xs)
                }
                3 => {
                    let xs = self.expr(t, cx, s, None, d);
                    let n = self.expr(&Ty::Int, cx, s, None, 0);
                    self.count("stdlib");
                    call(self.rng.word(&["take", "drop"]), vec![n, xs])
                }
                4 if **u == Ty::Int => {
                    self.count("range");
                    let a = int(self.rng.below(3) as i64);
                    let b = int(self.rng.below(6) as i64);
                    call("range", vec![a, b])
                }
                _ => {
                    let a = self.expr(t, cx, s, None, d);
                    let b = self.expr(t, cx, s, None, d);
                    self.count("stdlib");
                    call("concat", vec![a, b])
                }
            },
            Ty::Option(u) => match self.rng.below(4) {
                0 => {
                    let xs = self.expr(&Ty::list((**u).clone()), cx, s, None, d);
                    self.count("stdlib");
                    call("head", vec![xs])
                }
                1 => {
                    let xs = self.expr(&Ty::list((**u).clone()), cx, s, None, d);
                    let x = self.fresh("p");
                    let pure = Cx {
                        effects: Some(Vec::new()),
                        ..cx.with(&x, (**u).clone())
                    };
                    let body = self.expr(&Ty::Bool, &pure, s, None, d.min(2));
                    self.count("stdlib");
                    call_fn("find", lam(&x, None, body), xs)
                }
                2 if **u == Ty::Int => {
                    let j = self.expr(&Ty::Json, cx, s, None, d);
                    self.count("json");
                    call("json_int", vec![j])
                }
                _ => {
                    self.count("some");
                    let x = self.expr(u, cx, m, None, d);
                    mk(ExprKind::Some(Box::new(x)))
                }
            },
            Ty::Record(fs) => {
                // a record literal, or an update of a variable of this type
                let base = cx
                    .env
                    .iter()
                    .filter(|v| same(&v.ty, t))
                    .map(|v| v.name.clone())
                    .collect::<Vec<_>>();
                if self.rng.chance(35) {
                    // {base with f = v}: a variable of this type, or any
                    // expression of it
                    let b = if !base.is_empty() && self.rng.chance(60) {
                        var(&base[self.rng.below(base.len())].clone())
                    } else {
                        self.expr(t, cx, Mode::Synth, None, d)
                    };
                    let (f, ft) = fs[self.rng.below(fs.len())].clone();
                    let v = self.expr(&ft, cx, Mode::Check, None, d);
                    self.count("record_update");
                    mk(ExprKind::Update(Box::new(b), vec![fld(&f, v)]))
                } else {
                    self.count("record");
                    let mut fields = Vec::new();
                    for (f, ft) in fs {
                        let v = self.expr(ft, cx, m, None, d);
                        fields.push(fld(f, v));
                    }
                    record(fields)
                }
            }
            Ty::Result(u) => {
                let (r, ru) = self.result_source(cx, d)?;
                if !same(&ru, u) {
                    return None;
                }
                r
            }
            Ty::Fun(a, e, b) => {
                // fn p: A => body, the body's calls within the row
                let p = self.fresh("p");
                let inner = Cx {
                    effects: Some(e.clone()),
                    ..cx.with(&p, (**a).clone())
                };
                let body = self.expr(b, &inner, m, None, d);
                let annot = (m == Mode::Synth || self.rng.chance(60)).then(|| texpr(a));
                self.count("lambda");
                lam(&p, annot, body)
            }
            Ty::Json => {
                let u = self.data_ty(1);
                let x = self.expr(&u, cx, s, None, d);
                self.count("json");
                call("to_json", vec![x])
            }
            _ => return None,
        })
    }

    // ------------------------------------------------------- obligations

    /// An expression of type `t` that consumes `ob` exactly once.
    fn expr_ob(&mut self, t: &Ty, cx: &Cx, m: Mode, ob: Ob, d: u32) -> Expr {
        if d > 0 && self.fuel > 0 {
            self.fuel -= 1;
            for _ in 0..4 {
                if let Some(e) = self.pass_along(t, cx, m, &ob, d - 1) {
                    return e;
                }
            }
        }
        self.consume(t, cx, m, ob, d.saturating_sub(1))
    }

    /// Consumes `ob` here: returns it, spends it in a call, or matches it.
    fn consume(&mut self, t: &Ty, cx: &Cx, m: Mode, ob: Ob, d: u32) -> Expr {
        match &ob {
            Ob::Token(x) if *t == Ty::Lin(Box::new(Ty::Str)) => return var(x),
            Ob::Res(r, u) => {
                let u = u.clone();
                return self.match_result(var(r), &u, t, cx, m, d);
            }
            Ob::MintedList(xs) => {
                // match traverse (fn tk => exec tool spend {token = tk.token, …}) xs {…}
                let k = self.spender(cx);
                let p = self.fresh("tk");
                let call = self.exec(k, cx, d.min(1), Some(field(var(&p), "token")));
                let out = self.tools[k].output.clone();
                let spent = call_fn("traverse", lam(&p, None, call), var(xs));
                self.count("token_list_spent");
                return self.match_result(spent, &Ty::list(out), t, cx, m, d);
            }
            _ => {}
        }
        let token = match &ob {
            Ob::Approval(a, k, fields) => {
                let k = *k;
                // Usually the argument approved, else another one (a
                // control plane then refuses the call).
                let mut fields = fields.clone();
                if !fields.is_empty() && self.rng.chance(10) {
                    self.count("approval_other_argument");
                    let i = self.rng.below(fields.len());
                    let ft = match &self.tools[k].input {
                        Ty::Record(fs) => fs
                            .iter()
                            .find(|(n, _)| *n == *fields[i].name.name)
                            .map(|(_, t)| t.clone()),
                        _ => None,
                    };
                    if let Some(ft) = ft {
                        fields[i].value = self.literal(&ft, cx, Mode::Check);
                    }
                }
                let field_name = self.tools[k]
                    .approval_field()
                    .unwrap_or("approval")
                    .to_string();
                fields.push(fld(&field_name, var(a)));
                let name = self.tools[k].name.clone();
                self.count("approval_spent");
                let call = mk(ExprKind::Exec(ident(&name), Box::new(record(fields))));
                let out = self.tools[k].output.clone();
                return self.match_result(call, &out, t, cx, m, d);
            }
            Ob::Token(x) => var(x),
            Ob::Minted(x) => field(var(x), "token"),
            Ob::Res(..) | Ob::MintedList(_) => unreachable!("consumed above"),
        };
        if self.rng.chance(20) {
            return self.gather_spending(t, cx, m, token, d);
        }
        let k = self.spender(cx);
        self.count("token_spent");
        let call = self.exec(k, cx, d.min(1), Some(token));
        let out = self.tools[k].output.clone();
        self.match_result(call, &out, t, cx, m, d)
    }

    /// `let g = gather { c0 = exec tool SPEND {token = …}, c1 = … } in`
    /// every field matched on every path: the token spent by one of the
    /// concurrent calls (their outputs plain data: E0506 otherwise).
    fn gather_spending(&mut self, t: &Ty, cx: &Cx, m: Mode, token: Expr, d: u32) -> Expr {
        let spends: Vec<usize> = (0..self.tools.len())
            .filter(|&k| {
                self.tools[k].token_field().is_some()
                    && self.tools[k].approval_field().is_none()
                    && !self.tools[k].mints()
                    && self.usable(k, cx)
            })
            .collect();
        let k = match spends.is_empty() {
            true => self.spender(cx),
            false => *self.rng.pick(&spends),
        };
        if self.tools[k].mints() {
            self.count("token_spent");
            let call = self.exec(k, cx, d.min(1), Some(token));
            let out = self.tools[k].output.clone();
            return self.match_result(call, &out, t, cx, m, d);
        }
        let others: Vec<usize> = self
            .callable(cx, None)
            .into_iter()
            .filter(|&j| !self.tools[j].mints())
            .collect();
        let mut calls = vec![(self.exec(k, cx, d.min(1), Some(token)), k)];
        for _ in 0..self.rng.below(3) {
            if let Some(&j) = (!others.is_empty()).then(|| self.rng.pick(&others)) {
                calls.push((self.exec(j, cx, d.min(1), None), j));
            }
        }
        if calls.len() > 1 && self.rng.chance(50) {
            calls.swap(0, 1);
        }
        let g = self.fresh("g");
        let mut fields = Vec::new();
        let mut outs = Vec::new();
        for (i, (call, j)) in calls.into_iter().enumerate() {
            let name = format!("c{i}");
            fields.push(fld(&name, call));
            outs.push((name, self.tools[j].output.clone()));
        }
        let body = self.match_fields(&g, &outs, t, cx, m, d);
        self.count("gather");
        self.count("token_spent_in_gather");
        let gathered = mk(ExprKind::Gather(Box::new(record(fields))));
        let_in(&g, None, gathered, body)
    }

    /// A tool that spends a token here (one exists wherever a token does).
    fn spender(&mut self, cx: &Cx) -> usize {
        let spenders: Vec<usize> = (0..self.tools.len())
            .filter(|&k| {
                self.tools[k].token_field().is_some()
                    && self.tools[k].approval_field().is_none()
                    && self.usable(k, cx)
            })
            .collect();
        *self.rng.pick(&spenders)
    }

    /// A form that hands `ob` on to exactly one part on every path.
    fn pass_along(&mut self, t: &Ty, cx: &Cx, m: Mode, ob: &Ob, d: u32) -> Option<Expr> {
        match self.rng.below(9) {
            0 => {
                // if c then … else …: both branches consume it
                let c = self.expr(&Ty::Bool, cx, Mode::Synth, None, d);
                let a = self.expr_ob(t, cx, m, ob.clone(), d);
                let b = self.expr_ob(t, cx, m, ob.clone(), d);
                self.count("linear_branches");
                Some(mk(ExprKind::If(Box::new(c), Box::new(a), Box::new(b))))
            }
            1 => {
                // let y = … in (consumed in the body)
                let u = self.data_ty(1);
                let y = self.fresh("v");
                let annot = u.has_enum();
                let value = self.expr(
                    &u,
                    cx,
                    if annot { Mode::Check } else { Mode::Synth },
                    None,
                    d,
                );
                let body = self.expr_ob(t, &cx.with(&y, u.clone()), m, ob.clone(), d);
                Some(let_in(&y, annot.then(|| texpr(&u)), value, body))
            }
            2 => {
                // let y = (consumed in the value) in …
                let u = *self.rng.pick(&[&Ty::Int, &Ty::Str, &Ty::Bool]);
                let u = u.clone();
                let y = self.fresh("v");
                let value = self.expr_ob(&u, cx, Mode::Synth, ob.clone(), d);
                let body = self.expr(t, &cx.with(&y, u), m, None, d);
                Some(let_in(&y, None, value, body))
            }
            3 => {
                // the token out of a minted record: let k = m.token in …
                let Ob::Minted(x) = ob else { return None };
                let k = self.fresh("tk");
                let body = self.expr_ob(t, cx, m, Ob::Token(k.clone()), d);
                self.count("linear_field");
                Some(let_in(&k, None, field(var(x), "token"), body))
            }
            4 => {
                // (fn p: !String => …) token
                let arg = match ob {
                    Ob::Token(x) => var(x),
                    Ob::Minted(x) => field(var(x), "token"),
                    _ => return None,
                };
                let p = self.fresh("tk");
                let body = self.expr_ob(t, cx, Mode::Synth, Ob::Token(p.clone()), d);
                self.count("linear_param");
                Some(app(
                    lam(&p, Some(texpr(&Ty::Lin(Box::new(Ty::Str)))), body),
                    arg,
                ))
            }
            5 => {
                // match on an Option: every arm consumes it
                let u = self.base_ty();
                let s = self.expr(&Ty::option(u.clone()), cx, Mode::Synth, None, d);
                let x = self.fresh("v");
                let some = self.expr_ob(t, &cx.with(&x, u), m, ob.clone(), d);
                let none = self.expr_ob(t, cx, m, ob.clone(), d);
                self.count("linear_branches");
                Some(mtch(
                    s,
                    vec![
                        arm(PatternKind::Some(binder(&x)), some),
                        arm(PatternKind::None, none),
                    ],
                ))
            }
            6 => {
                // an operand of an operator, or a field of a record
                match t {
                    Ty::Int | Ty::Str => {
                        let op = if *t == Ty::Int {
                            BinOp::Add
                        } else {
                            BinOp::Concat
                        };
                        let a = self.expr_ob(t, cx, Mode::Synth, ob.clone(), d);
                        let b = self.expr(t, cx, Mode::Synth, None, d);
                        Some(if self.rng.chance(50) {
                            bin(op, a, b)
                        } else {
                            bin(op, b, a)
                        })
                    }
                    Ty::Record(fs) => {
                        let i = self.rng.below(fs.len());
                        let mut fields = Vec::new();
                        for (j, (f, ft)) in fs.iter().enumerate() {
                            let o = (i == j).then(|| ob.clone());
                            let v = self.expr(ft, cx, m, o, d);
                            fields.push(fld(f, v));
                        }
                        Some(record(fields))
                    }
                    _ => None,
                }
            }
            7 => {
                self.count("intent");
                let body = self.expr_ob(t, cx, m, ob.clone(), d);
                let a = Annotation {
                    intent: "spend it".to_string(),
                    hypothesis: None,
                    notes: None,
                    span: sp(),
                };
                Some(mk(ExprKind::Annotate(Box::new(a), Box::new(body))))
            }
            _ => {
                // a call first: match exec tool … { Ok(x) => …, Err(e) => … }
                let ks = self.callable(cx, None);
                let ks: Vec<usize> = ks.into_iter().filter(|&k| !self.tools[k].mints()).collect();
                if ks.is_empty() {
                    return None;
                }
                let k = *self.rng.pick(&ks);
                let call = self.exec(k, cx, d.min(1), None);
                let u = self.tools[k].output.clone();
                let x = self.fresh("v");
                let e = self.fresh("e");
                let ok = self.expr_ob(t, &cx.with(&x, u), m, ob.clone(), d);
                let err = self.expr_ob(t, &cx.with(&e, Ty::Str), m, ob.clone(), d);
                self.count("match_result");
                Some(mtch(
                    call,
                    vec![
                        arm(PatternKind::Ok(binder(&x)), ok),
                        arm(PatternKind::Err(binder(&e)), err),
                    ],
                ))
            }
        }
    }
}

/// `name (fn …) xs`.
fn call_fn(name: &str, f: Expr, xs: Expr) -> Expr {
    call(name, vec![f, xs])
}

/// A closed value of type `t` (literals only, checked against `t`), for the
/// mutations.
pub fn closed_value(t: &Ty, seed: u64) -> Expr {
    let mut g = Generator {
        rng: Rng::new(seed),
        tools: Vec::new(),
        labels: Vec::new(),
        next: 1_000_000,
        fuel: 0,
        constructs: BTreeMap::new(),
    };
    let cx = Cx {
        env: Vec::new(),
        effects: Some(Vec::new()),
        in_scope: false,
    };
    g.literal(t, &cx, Mode::Check)
}
