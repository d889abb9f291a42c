//! Semantic types and effect rows, and how they print.
//!
//! Types print as λ-Tool prints them: `Int`, `{name: String, age: Int}`
//! (fields in declaration order), `List String`, `Result<Int, String>`,
//! `!String`, and `Int -{Read, Write}-> Bool` (a pure function prints as
//! `Int -{}-> Bool`). Unsolved metavariables print as `_`.

use crate::syntax::ast::Name;
use std::fmt;

/// An effect label: an ASCII capital letter, then ASCII letters, digits
/// or `_` (`Read`, `Payment`, `Pure`). Here, below every reader of labels
/// (`tools.toml` in `exec`, profiles in `control`), which share it.
pub fn is_effect_label(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A set of effect labels, kept sorted in canonical order (`Read`, `Write`,
/// `Network`, then any other label alphabetically). Empty means pure.
///
/// The row of a function type the checker made also carries a hidden
/// *undo variable* ([`EffectSet::undo`]): whether the function may make a
/// call that a `scope` cannot roll back (a tool with an effect beyond
/// `Read` and no `undo`). It is solved once the program is typed (E0220;
/// see `types/undo.rs`), never printed, and ignored by equality: two rows
/// are equal when their labels are.
#[derive(Clone, Debug, Default)]
pub struct EffectSet(Vec<Name>, Option<u32>);

impl PartialEq for EffectSet {
    fn eq(&self, other: &EffectSet) -> bool {
        self.0 == other.0
    }
}

impl Eq for EffectSet {}

impl std::hash::Hash for EffectSet {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl Clone for Type {
    /// A deep copy. Inferred types can nest as deeply as the program's
    /// expressions (a record literal 999 levels deep), so the copy grows
    /// the stack on demand rather than trusting the caller's thread to be
    /// large (checked at the root and every
    /// [`STACK_CHECK_EVERY`] levels).
    fn clone(&self) -> Type {
        match self.copy_leaf() {
            Some(t) => t,
            None => self.copy_at(0),
        }
    }
}

impl Type {
    /// True for the type of an approval field of a tool's input, `!Approval`.
    pub fn is_approval(&self) -> bool {
        matches!(self, Type::Linear(inner) if matches!(**inner, Type::Approval))
    }

    /// The copy of a type without parts (no recursion needed).
    fn copy_leaf(&self) -> Option<Type> {
        Some(match self {
            Type::Unit => Type::Unit,
            Type::Bool => Type::Bool,
            Type::Int => Type::Int,
            Type::String => Type::String,
            Type::Float => Type::Float,
            Type::Json => Type::Json,
            Type::Approval => Type::Approval,
            Type::Enum(lits) => Type::Enum(lits.clone()),
            Type::Meta(m) => Type::Meta(*m),
            Type::Error => Type::Error,
            _ => return None,
        })
    }

    /// The deep copy of `self`, `depth` levels below the copy's root.
    fn copy_at(&self, depth: u32) -> Type {
        if let Some(t) = self.copy_leaf() {
            return t;
        }
        deep(depth, || self.copy_parts(depth + 1))
    }

    /// A type with parts, copied part by part at `depth`.
    fn copy_parts(&self, depth: u32) -> Type {
        let part = |t: &Type| Box::new(t.copy_at(depth));
        let fields = |fs: &[(Name, Type)]| -> Vec<(Name, Type)> {
            fs.iter()
                .map(|(n, t)| (n.clone(), t.copy_at(depth)))
                .collect()
        };
        match self {
            Type::Option(t) => Type::Option(part(t)),
            Type::OpenRecord(fs) => Type::OpenRecord(fields(fs)),
            Type::Record(fs) => Type::Record(fields(fs)),
            Type::List(t) => Type::List(part(t)),
            Type::Result(a, b) => Type::Result(part(a), part(b)),
            Type::Linear(t) => Type::Linear(part(t)),
            Type::Fun(a, e, b) => Type::Fun(part(a), e.clone(), part(b)),
            leaf => leaf.copy_leaf().unwrap_or(Type::Error),
        }
    }
}

/// The effect labels λ-Tool defines (`Pure` is the empty row, not a label).
pub const BUILTIN_EFFECTS: [&str; 3] = ["Read", "Write", "Network"];

fn rank(label: &str) -> (usize, &str) {
    (
        BUILTIN_EFFECTS
            .iter()
            .position(|b| *b == label)
            .unwrap_or(BUILTIN_EFFECTS.len()),
        label,
    )
}

impl EffectSet {
    /// The empty (pure) row.
    pub fn pure() -> EffectSet {
        EffectSet(Vec::new(), None)
    }

    /// Adds a label (idempotent).
    pub fn insert(&mut self, label: Name) {
        if let Err(pos) = self.0.binary_search_by(|x| rank(x).cmp(&rank(&label))) {
            self.0.insert(pos, label);
        }
    }

    /// Adds every label of `other`.
    pub fn extend(&mut self, other: &EffectSet) {
        for l in &other.0 {
            self.insert(l.clone());
        }
    }

    /// True when every label of `self` is in `other`.
    pub fn is_subset(&self, other: &EffectSet) -> bool {
        self.0.iter().all(|l| other.0.contains(l))
    }

    /// The labels of `self` that are not in `other`.
    pub fn minus(&self, other: &EffectSet) -> EffectSet {
        EffectSet(
            self.0
                .iter()
                .filter(|l| !other.0.contains(l))
                .cloned()
                .collect(),
            None,
        )
    }

    /// True when no label is present.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The labels in canonical order.
    pub fn labels(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|l| &**l)
    }

    /// The undo variable of a function's row: whether the function may
    /// make a call a `scope` cannot roll back (`None`: it makes none, as
    /// for the rows of tools, natives and the builtins' pure callbacks).
    pub fn undo(&self) -> Option<u32> {
        self.1
    }

    /// The same labels with the undo variable `var`.
    pub fn with_undo(mut self, var: Option<u32>) -> EffectSet {
        self.1 = var;
        self
    }
}

impl fmt::Display for EffectSet {
    /// `{Read, Write}`; `{}` when pure.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, l) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(l)?;
        }
        f.write_str("}")
    }
}

/// A semantic type.
#[derive(Debug, PartialEq)]
pub enum Type {
    /// `Unit`, the type of `()`.
    Unit,
    /// `Bool`.
    Bool,
    /// `Int` (64-bit signed).
    Int,
    /// `String`.
    String,
    /// `Float` (extension): a finite 64-bit IEEE 754 number.
    Float,
    /// `Json` (extension): JSON data whose shape is not declared, read only
    /// through accessors that return `Option`.
    Json,
    /// `Approval` (extension), used as `!Approval`: a token the control
    /// plane mints for one call of one tool with one argument (`approve
    /// tool NAME arg`); the program cannot make one.
    Approval,
    /// `"a" | "b"` (extension): a string-literal union, as JSON Schema's
    /// string `enum` produces; literals sorted and distinct. A subtype of
    /// `String`.
    Enum(std::rc::Rc<[Name]>),
    /// `Option T` (extension): `Some(v)` or `None`, consumed by `match`.
    Option(Box<Type>),
    /// `{a: T, ..}` (extension): any record with at least these fields
    /// (width subtyping; only where a record is expected, never a tool's input).
    OpenRecord(Vec<(Name, Type)>),
    /// A closed record row `{a: T, b: U}`, fields in declaration order;
    /// equality ignores order.
    Record(Vec<(Name, Type)>),
    /// `List T`.
    List(Box<Type>),
    /// `Result<T, E>`.
    Result(Box<Type>, Box<Type>),
    /// `!T`: a value that must be used exactly once.
    Linear(Box<Type>),
    /// `A -{E}-> B`: a function with latent effect row `E`.
    Fun(Box<Type>, EffectSet, Box<Type>),
    /// A metavariable solved by unification (index into the checker's table).
    Meta(u32),
    /// The type of an erroneous expression; compatible with everything, so
    /// one error is reported once.
    Error,
}

impl Type {
    /// `List t`.
    pub fn list(t: Type) -> Type {
        Type::List(Box::new(t))
    }

    /// `Option t`.
    pub fn option(t: Type) -> Type {
        Type::Option(Box::new(t))
    }

    /// The enum of `lits` (sorted, duplicates removed).
    pub fn enumeration(mut lits: Vec<Name>) -> Type {
        lits.sort();
        lits.dedup();
        Type::Enum(lits.into())
    }

    /// `Result<t, e>`.
    pub fn result(t: Type, e: Type) -> Type {
        Type::Result(Box::new(t), Box::new(e))
    }

    /// `a -{e}-> b`.
    pub fn fun(a: Type, e: EffectSet, b: Type) -> Type {
        Type::Fun(Box::new(a), e, Box::new(b))
    }

    /// The type without an outer `!`.
    pub fn peel_linear(&self) -> &Type {
        match self {
            Type::Linear(t) => t,
            t => t,
        }
    }

    /// True when `is` holds for this type or for a part of its data (record
    /// fields, list elements, Result payloads, the inside of `!T`; not the
    /// inside of function types, whose values are not data).
    pub fn holds(&self, is: fn(&Type) -> bool) -> bool {
        is(self)
            || stacker::maybe_grow(32 * 1024, 1024 * 1024, || match self {
                Type::Record(fs) | Type::OpenRecord(fs) => fs.iter().any(|(_, t)| t.holds(is)),
                Type::List(t) | Type::Linear(t) | Type::Option(t) => t.holds(is),
                Type::Result(a, b) => a.holds(is) || b.holds(is),
                _ => false,
            })
    }

    /// True when a `Result` occurs in this type outside function types.
    pub fn contains_result(&self) -> bool {
        self.holds(|t| matches!(t, Type::Result(..)))
    }

    /// True when values of this type must be used exactly once: the type is
    /// `!T`, or holds a `!T` in a record field, list element or Result
    /// payload (a record holding a token is as single-use as the token).
    pub fn is_linear(&self) -> bool {
        self.holds(|t| matches!(t, Type::Linear(_)))
    }

    /// True when a function type occurs in this type (outside other functions).
    pub fn contains_fun(&self) -> bool {
        self.holds(|t| matches!(t, Type::Fun(..)))
    }

    /// Whether an enum occurs anywhere in the type (branches holding one
    /// are joined, so that a String beside it widens it).
    pub fn contains_enum(&self) -> bool {
        self.holds(|t| matches!(t, Type::Enum(..)))
    }
}

/// Writes `t` as types print (see the module note), looking through
/// metavariables with `resolve` and stopping once `out` is longer than `max`
/// bytes (the caller marks the cut). `Display` and the checker's bounded
/// messages share this one printer.
pub fn write_type<'t>(
    t: &'t Type,
    out: &mut String,
    max: usize,
    resolve: &dyn Fn(&'t Type) -> &'t Type,
) {
    if out.len() > max {
        return;
    }
    stacker::maybe_grow(32 * 1024, 1024 * 1024, || {
        let t = resolve(t);
        let paren = |inner: &'t Type, out: &mut String, wrap: bool| {
            if wrap {
                out.push('(');
            }
            write_type(inner, out, max, resolve);
            if wrap {
                out.push(')');
            }
        };
        match t {
            Type::Unit => out.push_str("Unit"),
            Type::Bool => out.push_str("Bool"),
            Type::Int => out.push_str("Int"),
            Type::String => out.push_str("String"),
            Type::Float => out.push_str("Float"),
            Type::Json => out.push_str("Json"),
            Type::Approval => out.push_str("Approval"),
            Type::Enum(lits) => {
                for (i, l) in lits.iter().enumerate() {
                    if out.len() > max {
                        return;
                    }
                    if i > 0 {
                        out.push_str(" | ");
                    }
                    out.push_str(&format!("{:?}", &**l));
                }
            }
            Type::Option(e) => {
                out.push_str("Option ");
                paren(e, out, matches!(resolve(e), Type::Fun(..) | Type::Enum(..)));
            }
            Type::Record(fs) | Type::OpenRecord(fs) => {
                out.push('{');
                for (i, (n, ft)) in fs.iter().enumerate() {
                    if out.len() > max {
                        return;
                    }
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(n);
                    out.push_str(": ");
                    write_type(ft, out, max, resolve);
                }
                if matches!(t, Type::OpenRecord(_)) {
                    out.push_str(if fs.is_empty() { ".." } else { ", .." });
                }
                out.push('}');
            }
            Type::List(e) => {
                out.push_str("List ");
                paren(e, out, matches!(resolve(e), Type::Fun(..) | Type::Enum(..)));
            }
            Type::Result(a, b) => {
                out.push_str("Result<");
                write_type(a, out, max, resolve);
                out.push_str(", ");
                write_type(b, out, max, resolve);
                out.push('>');
            }
            Type::Linear(inner) => {
                out.push('!');
                paren(
                    inner,
                    out,
                    matches!(
                        resolve(inner),
                        Type::Fun(..)
                            | Type::List(..)
                            | Type::Linear(..)
                            | Type::Option(..)
                            | Type::Enum(..)
                    ),
                );
            }
            Type::Fun(a, e, b) => {
                paren(a, out, matches!(resolve(a), Type::Fun(..) | Type::Enum(..)));
                out.push_str(&format!(" -{e}-> "));
                write_type(b, out, max, resolve);
            }
            Type::Meta(_) | Type::Error => out.push('_'),
        }
    })
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        write_type(self, &mut out, usize::MAX, &|t| t);
        f.write_str(&out)
    }
}

/// How many levels a walk over a type descends between two stack checks
/// (each level's frame is small: 16 of them stay far within the 32 KiB red
/// zone the check guarantees).
pub const STACK_CHECK_EVERY: u32 = 16;

/// Runs `f`, the work at `depth` of a walk, on a stack with room for
/// [`STACK_CHECK_EVERY`] more levels.
pub fn deep<R>(depth: u32, f: impl FnOnce() -> R) -> R {
    if depth.is_multiple_of(STACK_CHECK_EVERY) {
        stacker::maybe_grow(32 * 1024, 1024 * 1024, f)
    } else {
        f()
    }
}
