//! Semantic types and effect rows, and how they print.
//!
//! Types print as λ-Tool prints them: `Int`, `{name: String, age: Int}`
//! (fields in declaration order), `List String`, `Result<Int, String>`,
//! `!String`, and `Int -{Read, Write}-> Bool` (a pure function prints as
//! `Int -{}-> Bool`). Unsolved metavariables print as `_`.

use crate::syntax::ast::Name;
use std::fmt;

/// A set of effect labels, kept sorted in canonical order (`Read`, `Write`,
/// `Network`, then any other label alphabetically). Empty means pure.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct EffectSet(Vec<Name>);

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
        EffectSet(Vec::new())
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
#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    /// `Unit`, the type of `()`.
    Unit,
    /// `Bool`.
    Bool,
    /// `Int` (64-bit signed).
    Int,
    /// `String`.
    String,
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

    /// True when a `Result` occurs in this type outside function types.
    pub fn contains_result(&self) -> bool {
        stacker::maybe_grow(32 * 1024, 1024 * 1024, || match self {
            Type::Result(..) => true,
            Type::Record(fs) => fs.iter().any(|(_, t)| t.contains_result()),
            Type::List(t) | Type::Linear(t) => t.contains_result(),
            _ => false,
        })
    }

    /// True when values of this type must be used exactly once: the type is
    /// `!T`, or holds a `!T` in a record field, list element or Result
    /// payload (a record holding a token is as single-use as the token).
    pub fn is_linear(&self) -> bool {
        stacker::maybe_grow(32 * 1024, 1024 * 1024, || match self {
            Type::Linear(_) => true,
            Type::Record(fs) => fs.iter().any(|(_, t)| t.is_linear()),
            Type::List(t) => t.is_linear(),
            Type::Result(a, b) => a.is_linear() || b.is_linear(),
            _ => false,
        })
    }

    /// True when a function type occurs in this type.
    pub fn contains_fun(&self) -> bool {
        stacker::maybe_grow(32 * 1024, 1024 * 1024, || match self {
            Type::Fun(..) => true,
            Type::Record(fs) => fs.iter().any(|(_, t)| t.contains_fun()),
            Type::List(t) | Type::Linear(t) => t.contains_fun(),
            Type::Result(a, b) => a.contains_fun() || b.contains_fun(),
            _ => false,
        })
    }

    /// True when the type has no metavariables and no errors.
    pub fn is_complete(&self) -> bool {
        stacker::maybe_grow(32 * 1024, 1024 * 1024, || match self {
            Type::Meta(_) | Type::Error => false,
            Type::Unit | Type::Bool | Type::Int | Type::String => true,
            Type::Record(fs) => fs.iter().all(|(_, t)| t.is_complete()),
            Type::List(t) | Type::Linear(t) => t.is_complete(),
            Type::Result(a, b) | Type::Fun(a, _, b) => a.is_complete() && b.is_complete(),
        })
    }

    fn fmt_atom(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Fun(..) | Type::List(..) | Type::Linear(..) => write!(f, "({self})"),
            t => write!(f, "{t}"),
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        stacker::maybe_grow(32 * 1024, 1024 * 1024, || match self {
            Type::Unit => f.write_str("Unit"),
            Type::Bool => f.write_str("Bool"),
            Type::Int => f.write_str("Int"),
            Type::String => f.write_str("String"),
            Type::Record(fs) => {
                f.write_str("{")?;
                for (i, (n, t)) in fs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{n}: {t}")?;
                }
                f.write_str("}")
            }
            Type::List(t) => {
                f.write_str("List ")?;
                match **t {
                    Type::Fun(..) => write!(f, "({t})"),
                    _ => write!(f, "{t}"),
                }
            }
            Type::Result(a, b) => write!(f, "Result<{a}, {b}>"),
            Type::Linear(t) => {
                f.write_str("!")?;
                t.fmt_atom(f)
            }
            Type::Fun(a, e, b) => {
                match **a {
                    Type::Fun(..) => write!(f, "({a})")?,
                    _ => write!(f, "{a}")?,
                }
                write!(f, " -{e}-> {b}")
            }
            Type::Meta(_) | Type::Error => f.write_str("_"),
        })
    }
}
