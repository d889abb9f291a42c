//! The lt types the importer writes, and their size once aliases are
//! expanded (the checker refuses aliases of more than
//! [`MAX_TYPE_SIZE`](crate::types::MAX_TYPE_SIZE) parts, E0215).

use std::collections::BTreeMap;

/// A written lt type.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Ty {
    /// `Unit` (JSON `null`).
    Unit,
    /// `Bool`.
    Bool,
    /// `Int`.
    Int,
    /// `Float`.
    Float,
    /// `String`.
    Str,
    /// `Json`.
    Json,
    /// `"a" | "b"`: sorted, distinct, not empty.
    Enum(Vec<String>),
    /// `List T`.
    List(Box<Ty>),
    /// `Option T`.
    Option(Box<Ty>),
    /// `{f: T, g?: U}`.
    Record(Vec<Field>),
    /// A `type` alias.
    Named(String),
}

/// A record field.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Field {
    /// The field's (and the JSON property's) name.
    pub name: String,
    /// Its type; for an optional field, the type inside the `Option`.
    pub ty: Ty,
    /// `name?: T`: the property may be absent.
    pub optional: bool,
    /// The property's description, briefly (a comment line above the field).
    pub doc: Option<String>,
    /// Notes (a comment after the field): checks, defaults, why `Json`.
    pub notes: Vec<String>,
}

/// A `type Name = T;` declaration.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Alias {
    /// Its name.
    pub name: String,
    /// What it stands for.
    pub ty: Ty,
    /// Comment lines above it (the schema's description).
    pub doc: Vec<String>,
    /// Notes after it.
    pub notes: Vec<String>,
    /// Its size with the aliases it uses expanded.
    pub size: usize,
}

impl Ty {
    /// `Option self`, unless it is one already (or `Unit`, which is `null`).
    pub fn optional(self) -> Ty {
        match self {
            Ty::Option(_) | Ty::Unit | Ty::Json => self,
            other => Ty::Option(Box::new(other)),
        }
    }
}

/// The number of parts of `ty` once the aliases it uses are expanded
/// (saturating; no recursion: the records the importer writes are flat).
pub(super) fn size(ty: &Ty, sizes: &BTreeMap<String, usize>) -> usize {
    let mut n = 0usize;
    let mut work = vec![ty];
    while let Some(t) = work.pop() {
        match t {
            Ty::Named(name) => n = n.saturating_add(sizes.get(name).copied().unwrap_or(1)),
            Ty::List(t) | Ty::Option(t) => {
                n = n.saturating_add(1);
                work.push(t);
            }
            Ty::Record(fields) => {
                n = n.saturating_add(1);
                for f in fields {
                    if f.optional {
                        n = n.saturating_add(1);
                    }
                    work.push(&f.ty);
                }
            }
            _ => n = n.saturating_add(1),
        }
    }
    n
}
