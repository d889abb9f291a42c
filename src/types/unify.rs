//! Metavariables and subsumption (`actual ≤ expected`).
//!
//! Metavariables stand for types not yet known: the element type of `[]`, the
//! other side of `Ok(e)`/`Err(e)`, an unannotated parameter, and the type
//! parameters of the builtins. They are solved by [`Metas::coerce`], which is
//! structural unification extended with three subsumption rules:
//!
//! * effect rows: `A -{E1}-> B ≤ A -{E2}-> B` when `E1 ⊆ E2` (a purer function
//!   may be used where effects are allowed; parameters are contravariant;
//!   the first's undo variable flows into the second's, see [`super::undo`]);
//! * linearity: `!T ≤ T` (using a linear value consumes it) and `T ≤ !T`;
//! * records are closed rows compared as sets of fields (order is irrelevant);
//!   an open record `{a: T, ..}` (extension) accepts any record with at least
//!   its fields (width subtyping), so one function serves several records;
//! * enums (extension): `"a" | "b" ≤ "a" | "b" | "c"` and every enum `≤ String`.

use super::ty::{write_type, EffectSet, Type};
use super::undo_vars::UndoVars;
use crate::source::Span;
use crate::syntax::ast::Name;
use std::borrow::Cow;

/// Why `actual ≤ expected` failed, with the path to the failing part.
#[derive(Clone, Debug)]
pub enum Mismatch {
    /// Two different type constructors.
    Types {
        /// Where inside the compared types (`field \`a\``, `list element`…).
        path: Vec<String>,
        /// The expected part.
        expected: Type,
        /// The actual part.
        found: Type,
    },
    /// Records with different field sets.
    Fields {
        /// Where inside the compared types.
        path: Vec<String>,
        /// Fields the expected record has and the actual lacks.
        missing: Vec<Name>,
        /// Fields the actual record has and the expected lacks.
        extra: Vec<Name>,
    },
    /// A function performs effects its expected type does not allow.
    Effects {
        /// Where inside the compared types.
        path: Vec<String>,
        /// What is allowed.
        allowed: EffectSet,
        /// What the function may perform.
        got: EffectSet,
    },
    /// A linear `!T` where a plain `T` is expected, outside a tool argument:
    /// the plain value could be copied.
    Unlinear {
        /// Where inside the compared types.
        path: Vec<String>,
        /// The linear type found.
        found: Type,
    },
    /// A record passed as an open record `{a: T, ..}` would hide a field
    /// that must be used: one holding a Result (never matched) or a `!T`
    /// (never consumed).
    Dropped {
        /// Where inside the compared types.
        path: Vec<String>,
        /// The hidden field.
        field: Name,
        /// Its type.
        ty: Type,
    },
    /// Solving would build an infinite type.
    Occurs,
}

/// One metavariable.
#[derive(Clone, Debug)]
struct Meta {
    solution: Option<Type>,
    origin: Span,
    what: &'static str,
    /// The other side of `Ok(e)`/`Err(e)`: given where `!T` is expected, it
    /// is solved with the plain `T` (`T ≤ !T`), so that a binder of this
    /// type is not made linear by the field it is passed to.
    plain: bool,
}

/// The table of metavariables of one checking run.
#[derive(Default)]
pub struct Metas {
    table: Vec<Meta>,
    /// Whether `!T ≤ T` holds: only while checking a tool's argument, where
    /// the tool consumes the value (elsewhere the plain copy could be reused).
    pub allow_unlinear: bool,
    /// The undo variables of function types ([`super::undo`]): `A -{E1}-> B
    /// ≤ A -{E2}-> B` makes the first's flow into the second's.
    pub undo: UndoVars,
}

impl Metas {
    /// A fresh metavariable created at `origin` for `what` (e.g.
    /// "the element type of this empty list").
    pub fn fresh(&mut self, origin: Span, what: &'static str) -> Type {
        let id = u32::try_from(self.table.len()).unwrap_or(u32::MAX);
        self.table.push(Meta {
            solution: None,
            origin,
            what,
            plain: false,
        });
        Type::Meta(id)
    }

    /// A fresh metavariable like [`Metas::fresh`], solved with `T` rather
    /// than `!T` when first given where `!T` is expected: the type of a
    /// value whose linearity nothing has decided yet (the Err type of
    /// `Ok(…)`), which its uses must not make linear.
    pub fn fresh_plain(&mut self, origin: Span, what: &'static str) -> Type {
        let t = self.fresh(origin, what);
        if let Some(m) = self.table.last_mut() {
            m.plain = true;
        }
        t
    }

    fn is_plain(&self, id: u32) -> bool {
        self.table.get(id as usize).is_some_and(|m| m.plain)
    }

    /// Where and why an unsolved metavariable was created.
    pub fn origin(&self, id: u32) -> Option<(Span, &'static str)> {
        self.table.get(id as usize).map(|m| (m.origin, m.what))
    }

    /// Follows solved metavariables at the root of `t` (borrowing `t` when
    /// it is not a metavariable).
    pub fn resolve<'t>(&self, t: &'t Type) -> Cow<'t, Type> {
        let Type::Meta(mut id) = t else {
            return Cow::Borrowed(t);
        };
        loop {
            match self
                .table
                .get(id as usize)
                .and_then(|m| m.solution.as_ref())
            {
                Some(Type::Meta(next)) => id = *next,
                Some(solved) => return Cow::Owned(solved.clone()),
                None => return Cow::Owned(Type::Meta(id)),
            }
        }
    }

    /// Follows solved metavariables at the root of `t`, borrowing from `t`
    /// or from the solution (no copy): the same type as [`Metas::resolve`].
    pub fn resolve_ref<'t>(&'t self, t: &'t Type) -> &'t Type {
        let mut cur = t;
        while let Type::Meta(id) = cur {
            match self
                .table
                .get(*id as usize)
                .and_then(|m| m.solution.as_ref())
            {
                Some(solved) => cur = solved,
                None => break,
            }
        }
        cur
    }

    /// `t` resolved one level further when it is `!T`: the type whose shape
    /// decides what can be done with a value (apply it, read a field, match it).
    pub fn resolve_peeled<'t>(&self, t: &'t Type) -> Cow<'t, Type> {
        match self.resolve(t) {
            Cow::Borrowed(Type::Linear(inner)) => self.resolve(inner),
            Cow::Owned(Type::Linear(inner)) => Cow::Owned(self.resolve(&inner).into_owned()),
            other => other,
        }
    }

    /// `t` printed as [`Type`]'s `Display` does (metavariables resolved),
    /// stopping with `…` after about `max` bytes: messages about huge
    /// records stay small and cost no more than their length.
    pub fn show_bounded(&self, t: &Type, max: usize) -> String {
        let mut out = String::new();
        write_type(t, &mut out, max, &|t| self.resolve_ref(t));
        if out.len() > max {
            let mut cut = max;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
            out.push('…');
        }
        out
    }

    fn occurs(&self, id: u32, t: &Type) -> bool {
        self.find_meta(t, &|m| m == id).is_some()
    }

    fn bind(&mut self, id: u32, t: Type) -> Result<(), Mismatch> {
        if let Type::Meta(other) = t {
            if other == id {
                return Ok(());
            }
        }
        if self.occurs(id, &t) {
            return Err(Mismatch::Occurs);
        }
        if let Some(m) = self.table.get_mut(id as usize) {
            m.solution = Some(t);
        }
        Ok(())
    }

    /// The least type both `a` and `b` fit: like unification, except that
    /// the effect rows of function types are joined (unioned), so that
    /// branches returning a pure and an effectful function agree on the
    /// effectful type. Parameters must be equal.
    pub fn join(&mut self, a: &Type, b: &Type) -> Result<Type, Mismatch> {
        stacker::maybe_grow(32 * 1024, 1024 * 1024, || {
            let (ra, rb) = (self.resolve(a).into_owned(), self.resolve(b).into_owned());
            match (&ra, &rb) {
                (Type::Fun(a1, e1, r1), Type::Fun(a2, e2, r2)) => {
                    self.coerce(a1, a2)?;
                    self.coerce(a2, a1)?;
                    let w = self.undo.fresh();
                    self.undo.flow(e1.undo(), Some(w));
                    self.undo.flow(e2.undo(), Some(w));
                    let mut e = e1.clone().with_undo(Some(w));
                    e.extend(e2);
                    let r = self.join(r1, r2)?;
                    Ok(Type::fun((**a1).clone(), e, r))
                }
                (Type::Record(fa), Type::Record(fb))
                    if fa.len() == fb.len()
                        && fa.iter().all(|(n, _)| fb.iter().any(|(m, _)| m == n)) =>
                {
                    let mut out = Vec::with_capacity(fa.len());
                    for (n, ta) in fa {
                        let tb = fb
                            .iter()
                            .find(|(m, _)| m == n)
                            .map(|(_, t)| t.clone())
                            .unwrap_or(Type::Error);
                        out.push((n.clone(), self.join(ta, &tb)?));
                    }
                    Ok(Type::Record(out))
                }
                (Type::List(x), Type::List(y)) => Ok(Type::list(self.join(x, y)?)),
                (Type::Option(x), Type::Option(y)) => Ok(Type::option(self.join(x, y)?)),
                // Two enums join to their union; an enum and a String to String.
                (Type::Enum(x), Type::Enum(y)) => Ok(Type::enumeration(
                    x.iter().chain(y.iter()).cloned().collect(),
                )),
                (Type::Enum(_), Type::String) | (Type::String, Type::Enum(_)) => Ok(Type::String),
                (Type::Result(x1, x2), Type::Result(y1, y2)) => {
                    let ok = self.join(x1, y1)?;
                    Ok(Type::result(ok, self.join(x2, y2)?))
                }
                (Type::Linear(x), Type::Linear(y)) => Ok(Type::Linear(Box::new(self.join(x, y)?))),
                _ => {
                    self.coerce(&rb, &ra)?;
                    Ok(ra)
                }
            }
        })
    }

    /// Checks `actual ≤ expected`, solving metavariables on the way.
    pub fn coerce(&mut self, actual: &Type, expected: &Type) -> Result<(), Mismatch> {
        let mut path = Vec::new();
        self.coerce_at(actual, expected, &mut path)
    }

    fn coerce_at(
        &mut self,
        actual: &Type,
        expected: &Type,
        path: &mut Vec<String>,
    ) -> Result<(), Mismatch> {
        stacker::maybe_grow(32 * 1024, 1024 * 1024, || {
            self.coerce_inner(actual, expected, path)
        })
    }

    fn coerce_inner(
        &mut self,
        actual: &Type,
        expected: &Type,
        path: &mut Vec<String>,
    ) -> Result<(), Mismatch> {
        let a = self.resolve(actual);
        let e = self.resolve(expected);
        let (a, e): (&Type, &Type) = (&a, &e);
        let mismatch = |path: &Vec<String>, this: &Self| Mismatch::Types {
            path: path.clone(),
            expected: this.zonk(e),
            found: this.zonk(a),
        };
        match (a, e) {
            (Type::Error, _) | (_, Type::Error) => Ok(()),
            (Type::Meta(x), Type::Linear(y)) if self.is_plain(*x) => self.coerce_at(a, y, path),
            (Type::Meta(x), _) => self.bind(*x, e.clone()),
            (_, Type::Meta(y)) => self.bind(*y, a.clone()),
            (Type::Linear(x), Type::Linear(y)) => self.coerce_at(x, y, path),
            (Type::Linear(x), _) if self.allow_unlinear => self.coerce_at(x, e, path),
            (Type::Linear(_), _) => Err(Mismatch::Unlinear {
                path: path.clone(),
                found: self.zonk(a),
            }),
            (_, Type::Linear(y)) => self.coerce_at(a, y, path),
            (Type::Unit, Type::Unit) | (Type::Bool, Type::Bool) | (Type::Int, Type::Int) => Ok(()),
            (Type::String, Type::String)
            | (Type::Float, Type::Float)
            | (Type::Json, Type::Json)
            | (Type::Approval, Type::Approval)
            | (Type::Enum(_), Type::String) => Ok(()),
            (Type::Enum(x), Type::Enum(y)) => {
                if x.iter().all(|l| y.contains(l)) {
                    Ok(())
                } else {
                    Err(mismatch(path, self))
                }
            }
            (Type::Option(x), Type::Option(y)) => {
                path.push("Some value".into());
                self.coerce_at(x, y, path)?;
                path.pop();
                Ok(())
            }
            (Type::Record(fa) | Type::OpenRecord(fa), Type::OpenRecord(fe)) => {
                let ia: rustc_hash::FxHashMap<&str, &Type> =
                    fa.iter().map(|(n, t)| (&**n, t)).collect();
                let missing: Vec<Name> = fe
                    .iter()
                    .filter(|(n, _)| !ia.contains_key(&**n))
                    .map(|(n, _)| n.clone())
                    .collect();
                if !missing.is_empty() {
                    return Err(Mismatch::Fields {
                        path: path.clone(),
                        missing,
                        extra: Vec::new(),
                    });
                }
                let listed: rustc_hash::FxHashSet<&str> = fe.iter().map(|(n, _)| &**n).collect();
                for (n, ta) in fa {
                    if listed.contains(&**n) {
                        continue;
                    }
                    let t = self.zonk(ta);
                    if t.contains_result() || t.is_linear() {
                        return Err(Mismatch::Dropped {
                            path: path.clone(),
                            field: n.clone(),
                            ty: t,
                        });
                    }
                }
                for (n, te) in fe {
                    if let Some(ta) = ia.get(&**n).copied() {
                        path.push(format!("field `{n}`"));
                        self.coerce_at(ta, te, path)?;
                        path.pop();
                    }
                }
                Ok(())
            }
            (Type::List(x), Type::List(y)) => {
                path.push("list element".into());
                self.coerce_at(x, y, path)?;
                path.pop();
                Ok(())
            }
            (Type::Result(x1, x2), Type::Result(y1, y2)) => {
                path.push("Ok value".into());
                self.coerce_at(x1, y1, path)?;
                path.pop();
                path.push("Err value".into());
                self.coerce_at(x2, y2, path)?;
                path.pop();
                Ok(())
            }
            (Type::Fun(a1, ea, r1), Type::Fun(a2, ee, r2)) => {
                path.push("parameter".into());
                self.coerce_at(a2, a1, path)?;
                path.pop();
                if !ea.is_subset(ee) {
                    return Err(Mismatch::Effects {
                        path: path.clone(),
                        allowed: ee.clone(),
                        got: ea.clone(),
                    });
                }
                self.undo.flow(ea.undo(), ee.undo());
                path.push("result".into());
                self.coerce_at(r1, r2, path)?;
                path.pop();
                Ok(())
            }
            (Type::Record(fa), Type::Record(fe)) => {
                let ia: rustc_hash::FxHashMap<&str, &Type> =
                    fa.iter().map(|(n, t)| (&**n, t)).collect();
                let ie: rustc_hash::FxHashSet<&str> = fe.iter().map(|(n, _)| &**n).collect();
                let missing: Vec<Name> = fe
                    .iter()
                    .filter(|(n, _)| !ia.contains_key(&**n))
                    .map(|(n, _)| n.clone())
                    .collect();
                let extra: Vec<Name> = fa
                    .iter()
                    .filter(|(n, _)| !ie.contains(&**n))
                    .map(|(n, _)| n.clone())
                    .collect();
                if !missing.is_empty() || !extra.is_empty() {
                    return Err(Mismatch::Fields {
                        path: path.clone(),
                        missing,
                        extra,
                    });
                }
                for (n, te) in fe {
                    if let Some(ta) = ia.get(&**n).copied() {
                        path.push(format!("field `{n}`"));
                        self.coerce_at(ta, te, path)?;
                        path.pop();
                    }
                }
                Ok(())
            }
            _ => Err(mismatch(path, self)),
        }
    }
}
