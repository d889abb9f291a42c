//! The pretty-printer: AST → source text that parses back to the same tree.
//!
//! Design note. The printer is the inverse of the parser up to spans (and
//! the spellings that build the same node: `[T]` is `List T`, `fn (x: T)` is
//! `fn x: T`, `Ok x` is `Ok(x)`, `A -> B` is `A -{}-> B`, a trailing comma).
//! It is *faithful*: every node of the tree shows in the text, so printing
//! is injective on trees, and two trees are equal modulo spans exactly when
//! they print the same. That is how the tests compare trees
//! (`print(parse(print(p))) == print(p)`), with no span-erasing equality.
//!
//! Parentheses are added only where the grammar needs them. Each expression
//! form has a level (`grammar/lt.lalrpop`, lowest first): the open forms
//! that extend as far right as they can (`let`, `fn`, `if`, `@intent`,
//! loops), then `||`, `&&`, comparisons (non-associative), `+ - ++`,
//! `* / %` (left-associative), unary `-`, application, the prefix forms
//! (`exec tool`, `approve tool`, `Ok`, `Err`, `Some`, whose argument is an
//! atom), and atoms. A child printed where a higher level is required is
//! parenthesized. A few places need more than levels:
//!
//! * a `let` chain's body that is itself a `let` (a nested chain, not one
//!   longer chain) is parenthesized;
//! * the base of a record update `{(e) with …}` where `e` starts with
//!   `Ok`, `Err`, `Some` or `None`: the lexer would take that `{` for the
//!   start of match arms, so `e` is parenthesized;
//! * `[]: T` is parenthesized wherever a higher level than the open forms'
//!   is required, and a double negation is `-(-e)` (never `--`).
//!
//! Matches and `let` chains are laid out on several lines (two spaces per
//! level), except a one-binding chain of small values (`let v = 1 in v`);
//! everything else stays on one line. Trees the parser cannot
//! produce print as best they can: an error node is `__error__`, a negative
//! Int literal `-5` (which reads back as a negation), a `for` loop's
//! variable (not kept in the tree) `_x`.

use super::ast::*;
use std::fmt::Write as _;

/// The level of the open forms (`let`, `fn`, `if`, `@intent`, loops).
const OPEN: u8 = 0;
const OR: u8 = 1;
const AND: u8 = 2;
const CMP: u8 = 3;
const ADD: u8 = 4;
const MUL: u8 = 5;
const UNARY: u8 = 6;
const APP: u8 = 7;
const PREFIX: u8 = 8;
const ATOM: u8 = 9;

/// A whole program: each declaration on its own line, then the expression.
pub fn print_program(program: &Program) -> String {
    let mut out = String::new();
    for d in &program.decls {
        match d {
            Decl::Tool(t) => {
                let _ = write!(out, "tool {}: {}", t.name.name, print_type(&t.ty));
                if let Some(u) = &t.undo {
                    let _ = write!(out, " undo {}({})", u.tool.name, u.from.name);
                }
                out.push_str(";\n");
            }
            Decl::Type(a) => {
                let _ = writeln!(out, "type {} = {};", a.name.name, print_type(&a.ty));
            }
            Decl::Effect(labels, _) => {
                let names: Vec<&str> = labels.iter().map(|l| &*l.name).collect();
                let _ = writeln!(out, "effect {};", names.join(", "));
            }
            Decl::Error(_) => {}
        }
    }
    out.push_str(&print_expr(&program.body));
    out.push('\n');
    out
}

/// One expression, as it would stand alone (no enclosing parentheses).
pub fn print_expr(e: &Expr) -> String {
    let mut p = Printer {
        out: String::new(),
        indent: 0,
    };
    p.expr(e, OPEN);
    p.out
}

/// A type as written in source (not the checker's printing of a semantic
/// type: aliases stay names, `()` stays `()`).
pub fn print_type(t: &TypeExpr) -> String {
    let mut out = String::new();
    write_type(t, &mut out, false);
    out
}

/// The level at which an expression's form sits (see the module note).
fn level(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Let(_)
        | ExprKind::Fn { .. }
        | ExprKind::If(..)
        | ExprKind::Annotate(..)
        | ExprKind::Loop { .. } => OPEN,
        ExprKind::Binary(op, ..) => match op {
            BinOp::Or => OR,
            BinOp::And => AND,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge => CMP,
            BinOp::Add | BinOp::Sub | BinOp::Concat => ADD,
            BinOp::Mul | BinOp::Div | BinOp::Rem => MUL,
        },
        ExprKind::Neg(_) => UNARY,
        ExprKind::Int(n) if *n < 0 => UNARY,
        ExprKind::Float(x) if x.is_sign_negative() => UNARY,
        ExprKind::App(..) => APP,
        ExprKind::Exec(..)
        | ExprKind::Approve(..)
        | ExprKind::Ok(_)
        | ExprKind::Err(_)
        | ExprKind::Some(_) => PREFIX,
        // Parenthesized wherever it stands (see the module note).
        ExprKind::List(items, Some(_)) if items.is_empty() => OPEN,
        _ => ATOM,
    }
}

/// The first word of `e`'s text when it is one of `Ok`, `Err`, `Some`,
/// `None`: the words after which the lexer's context rules misread a `{`
/// (see the module note).
fn first_word(e: &Expr) -> Option<&'static str> {
    match &e.kind {
        ExprKind::Ok(_) => Some("Ok"),
        ExprKind::Err(_) => Some("Err"),
        ExprKind::Some(_) => Some("Some"),
        ExprKind::None => Some("None"),
        ExprKind::App(f, _) | ExprKind::Binary(_, _, f, _) | ExprKind::Field(f, _)
            if level(f) >= level(e) =>
        {
            first_word(f)
        }
        _ => None,
    }
}

/// Whether `e`'s text starts with a token that makes the `{` before it
/// open match arms (`Ok`, `Err`, `Some`, `None`).
fn starts_like_arms(e: &Expr) -> bool {
    first_word(e).is_some()
}

/// Whether `e` is a leaf, or a record, list, field, application, operator
/// or constructor of small parts, at most `depth` levels deep (and never a
/// match or a `let`): what a one-line `let` may hold.
fn small(e: &Expr, depth: u32) -> bool {
    if depth == 0 {
        return false;
    }
    let d = depth - 1;
    match &e.kind {
        ExprKind::Unit
        | ExprKind::Bool(_)
        | ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Str(_)
        | ExprKind::Var(_)
        | ExprKind::None => true,
        ExprKind::Field(x, _) | ExprKind::Ok(x) | ExprKind::Err(x) | ExprKind::Some(x) => {
            small(x, d)
        }
        ExprKind::Neg(x) => small(x, d),
        ExprKind::App(a, b) | ExprKind::Binary(_, _, a, b) => small(a, d) && small(b, d),
        ExprKind::Record(fs) => fs.len() <= 3 && fs.iter().all(|f| small(&f.value, d)),
        ExprKind::List(xs, _) => xs.len() <= 3 && xs.iter().all(|x| small(x, d)),
        _ => false,
    }
}

struct Printer {
    out: String,
    indent: usize,
}

impl Printer {
    fn newline(&mut self) {
        self.out.push('\n');
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
    }

    /// Prints `e` where the grammar requires level `min` or higher.
    fn expr(&mut self, e: &Expr, min: u8) {
        stacker::maybe_grow(64 * 1024, 2 * 1024 * 1024, || {
            if level(e) < min {
                self.out.push('(');
                self.form(e);
                self.out.push(')');
            } else {
                self.form(e);
            }
        })
    }

    /// A full expression inside braces that the lexer might take for match
    /// arms: parenthesized when it starts with `Ok`, `Err`, `Some`, `None`.
    fn fields(&mut self, fields: &[Field]) {
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            let _ = write!(self.out, "{} = ", f.name.name);
            self.expr(&f.value, OPEN);
        }
    }

    fn form(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Unit => self.out.push_str("()"),
            ExprKind::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            ExprKind::Int(n) if *n < 0 => {
                let _ = write!(self.out, "-{}", n.unsigned_abs());
            }
            ExprKind::Int(n) => {
                let _ = write!(self.out, "{n}");
            }
            ExprKind::Float(x) => write_float(*x, &mut self.out),
            ExprKind::Str(s) => write_string(s, &mut self.out),
            ExprKind::Var(x) => self.out.push_str(&x.name),
            ExprKind::None => self.out.push_str("None"),
            ExprKind::Error => self.out.push_str("__error__"),
            ExprKind::Let(chain) => {
                // One line for a short chain of small values (`let v = 1 in v`).
                let inline = chain.bindings.len() == 1
                    && small(&chain.body, 2)
                    && chain.bindings.iter().all(|b| small(&b.value, 3));
                for b in &chain.bindings {
                    self.out.push_str("let ");
                    if b.rec_kw.is_some() {
                        self.out.push_str("rec ");
                    }
                    self.out.push_str(&b.name.name);
                    if let Some(t) = &b.annot {
                        self.out.push_str(": ");
                        write_type(t, &mut self.out, false);
                    }
                    self.out.push_str(" = ");
                    // A `let` value that is a chain reads better in parentheses.
                    let min = if matches!(b.value.kind, ExprKind::Let(_)) {
                        UNARY
                    } else {
                        OPEN
                    };
                    self.expr(&b.value, min);
                    self.out.push_str(" in");
                    if inline {
                        self.out.push(' ');
                    } else {
                        self.newline();
                    }
                }
                let min = if matches!(chain.body.kind, ExprKind::Let(_)) {
                    UNARY
                } else {
                    OPEN
                };
                self.expr(&chain.body, min);
            }
            ExprKind::Fn { param, annot, body } => {
                let _ = write!(self.out, "fn {}", param.name);
                if let Some(t) = annot {
                    self.out.push_str(": ");
                    write_type(t, &mut self.out, false);
                }
                self.out.push_str(" => ");
                self.expr(body, OPEN);
            }
            ExprKind::App(f, a) => {
                self.expr(f, APP);
                self.out.push(' ');
                self.expr(a, ATOM);
            }
            ExprKind::If(c, t, f) => {
                self.out.push_str("if ");
                self.expr(c, OPEN);
                self.out.push_str(" then ");
                self.expr(t, OPEN);
                self.out.push_str(" else ");
                self.expr(f, OPEN);
            }
            ExprKind::Match(s, arms) => {
                self.out.push_str("match ");
                // An open scrutinee is legal but hard to read: parenthesize it.
                self.expr(s, OR);
                self.out.push_str(" {");
                self.indent += 1;
                for (i, arm) in arms.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.newline();
                    write_pattern(&arm.pattern.kind, &mut self.out);
                    self.out.push_str(" => ");
                    self.expr(&arm.body, OPEN);
                }
                self.indent -= 1;
                self.newline();
                self.out.push('}');
            }
            ExprKind::Record(fields) => {
                self.out.push('{');
                self.fields(fields);
                self.out.push('}');
            }
            ExprKind::Field(r, f) => {
                self.expr(r, ATOM);
                let _ = write!(self.out, ".{}", f.name);
            }
            ExprKind::List(items, annot) => {
                self.out.push('[');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.expr(x, OPEN);
                }
                self.out.push(']');
                if let Some(t) = annot {
                    self.out.push_str(": ");
                    write_type(t, &mut self.out, true);
                }
            }
            ExprKind::Ok(x) => self.prefix("Ok", x),
            ExprKind::Err(x) => self.prefix("Err", x),
            ExprKind::Some(x) => self.prefix("Some", x),
            ExprKind::Update(base, fields) => {
                self.out.push('{');
                if starts_like_arms(base) || level(base) == OPEN {
                    self.out.push('(');
                    self.expr(base, OPEN);
                    self.out.push(')');
                } else {
                    self.expr(base, OPEN);
                }
                self.out.push_str(" with ");
                self.fields(fields);
                self.out.push('}');
            }
            ExprKind::Exec(tool, arg) => {
                let _ = write!(self.out, "exec tool {} ", tool.name);
                self.expr(arg, ATOM);
            }
            ExprKind::Approve(tool, arg) => {
                let _ = write!(self.out, "approve tool {} ", tool.name);
                self.expr(arg, ATOM);
            }
            ExprKind::Gather(record) => {
                self.out.push_str("gather ");
                match &record.kind {
                    ExprKind::Record(_) => self.expr(record, ATOM),
                    _ => {
                        self.out.push('{');
                        self.expr(record, OPEN);
                        self.out.push('}');
                    }
                }
            }
            ExprKind::Scope(body) => {
                self.out.push_str("scope { ");
                self.expr(body, OPEN);
                self.out.push_str(" }");
            }
            ExprKind::Annotate(a, body) => {
                self.out.push_str("@intent(");
                write_string(&a.intent, &mut self.out);
                if let Some(h) = &a.hypothesis {
                    self.out.push_str(", hypothesis = ");
                    write_string(h, &mut self.out);
                }
                if let Some(n) = &a.notes {
                    self.out.push_str(", notes = ");
                    write_string(n, &mut self.out);
                }
                self.out.push_str(") ");
                self.expr(body, OPEN);
            }
            ExprKind::Binary(op, _, a, b) => {
                let l = level(e);
                // Left-associative operators take their own level on the
                // left; comparisons are non-associative.
                let (left, right) = if l == CMP { (ADD, ADD) } else { (l, l + 1) };
                self.expr(a, left);
                let _ = write!(self.out, " {} ", op.as_str());
                self.expr(b, right);
            }
            ExprKind::Neg(x) => {
                self.out.push('-');
                let min = if matches!(x.kind, ExprKind::Neg(_)) {
                    ATOM
                } else {
                    UNARY
                };
                self.expr(x, min);
            }
            ExprKind::Loop {
                kind, head, body, ..
            } => {
                self.out.push_str(match kind {
                    LoopKind::While => "while ",
                    LoopKind::For => "for _x in ",
                });
                self.expr(head, ATOM);
                self.out.push_str(" { ");
                self.expr(body, OPEN);
                self.out.push_str(" }");
            }
        }
    }

    /// `Ok(x)`, `Err(x)`, `Some(x)`: the argument always in parentheses.
    fn prefix(&mut self, word: &str, x: &Expr) {
        self.out.push_str(word);
        self.out.push('(');
        self.expr(x, OPEN);
        self.out.push(')');
    }
}

/// A Float literal that reads back as the same Float: Rust's shortest
/// round-trip form, with `.0` added when it has neither a point nor an
/// exponent (`2.0`, `0.1`, `1e300`).
fn write_float(x: f64, out: &mut String) {
    let s = format!("{x:?}");
    out.push_str(&s);
    if !s.contains(['.', 'e', 'E']) {
        out.push_str(".0");
    }
}

fn write_pattern(p: &PatternKind, out: &mut String) {
    let binder = |b: &Binder| match b {
        Binder::Var(x) => x.name.to_string(),
        Binder::Wildcard(_) => "_".to_string(),
    };
    match p {
        PatternKind::Ok(b) => {
            let _ = write!(out, "Ok({})", binder(b));
        }
        PatternKind::Err(b) => {
            let _ = write!(out, "Err({})", binder(b));
        }
        PatternKind::Some(b) => {
            let _ = write!(out, "Some({})", binder(b));
        }
        PatternKind::Wildcard => out.push('_'),
        PatternKind::Var(x) => out.push_str(&x.name),
        PatternKind::None => out.push_str("None"),
        PatternKind::Str(s) => write_string(s, out),
    }
}

/// A string literal, escaped so that the lexer reads back `s`: `"…"` with
/// `\n \t \r \0 \" \\` and `\u{…}` for other control characters.
pub fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Writes a type; `app` when the grammar wants an application type there
/// (the argument of `List`, `!`, `Option`, the left of an arrow, `[]: T`),
/// where a function type needs parentheses.
fn write_type(t: &TypeExpr, out: &mut String, app: bool) {
    stacker::maybe_grow(64 * 1024, 2 * 1024 * 1024, || match &t.kind {
        TypeExprKind::Named(n) => out.push_str(&n.name),
        TypeExprKind::Unit => out.push_str("()"),
        TypeExprKind::Error => out.push_str("__error__"),
        TypeExprKind::Record(fields, open) => {
            out.push('{');
            for (i, (name, ty)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&name.name);
                match &ty.kind {
                    TypeExprKind::Optional(inner) => {
                        out.push_str("?: ");
                        write_type(inner, out, false);
                    }
                    _ => {
                        out.push_str(": ");
                        write_type(ty, out, false);
                    }
                }
            }
            if *open {
                out.push_str(if fields.is_empty() { ".." } else { ", .." });
            }
            out.push('}');
        }
        // Only a record field's type is optional; elsewhere it is an Option.
        TypeExprKind::Optional(inner) | TypeExprKind::Option(inner) => {
            out.push_str("Option ");
            write_type(inner, out, true);
        }
        TypeExprKind::Enum(lits) => {
            for (i, (s, _)) in lits.iter().enumerate() {
                if i > 0 {
                    out.push_str(" | ");
                }
                write_string(s, out);
            }
        }
        TypeExprKind::List(inner) => {
            out.push_str("List ");
            write_type(inner, out, true);
        }
        TypeExprKind::Linear(inner) => {
            out.push('!');
            write_type(inner, out, true);
        }
        TypeExprKind::Result(a, b) => {
            out.push_str("Result<");
            write_type(a, out, false);
            out.push_str(", ");
            write_type(b, out, false);
            out.push('>');
        }
        TypeExprKind::Fun(a, row, b) => {
            if app {
                out.push('(');
            }
            write_type(a, out, true);
            let labels: Vec<&str> = row.labels.iter().map(|l| &*l.name).collect();
            let _ = write!(out, " -{{{}}}-> ", labels.join(", "));
            write_type(b, out, false);
            if app {
                out.push(')');
            }
        }
    })
}
