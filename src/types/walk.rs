//! Walks over types through the metavariable table: substitution (zonk),
//! size, the first unsolved metavariable, and the data predicates of
//! [`Type::holds`] on the substituted type without building it.
//!
//! Types can nest as deeply as the program (a record literal 999 levels
//! deep), so every walk grows the stack on demand, checking it every
//! [`STACK_CHECK_EVERY`] levels rather than at each node ([`deep`], in
//! `ty.rs`, whose copy of a type is such a walk too).

#[cfg(doc)]
use super::ty::STACK_CHECK_EVERY;
use super::ty::{deep, Type};
use super::unify::Metas;

impl Metas {
    /// Substitutes every solved metavariable in `t`.
    pub fn zonk(&self, t: &Type) -> Type {
        self.zonk_at(t, 0)
    }

    fn zonk_at(&self, t: &Type, depth: u32) -> Type {
        let t = self.resolve_ref(t);
        let d = depth + 1;
        let part = |t: &Type| Box::new(self.zonk_at(t, d));
        match t {
            Type::Record(fs) | Type::OpenRecord(fs) => deep(depth, || {
                let fs = fs.iter().map(|(n, t)| (n.clone(), self.zonk_at(t, d)));
                match t {
                    Type::OpenRecord(_) => Type::OpenRecord(fs.collect()),
                    _ => Type::Record(fs.collect()),
                }
            }),
            Type::List(t) => deep(depth, || Type::List(part(t))),
            Type::Option(t) => deep(depth, || Type::Option(part(t))),
            Type::Linear(t) => deep(depth, || Type::Linear(part(t))),
            Type::Result(a, b) => deep(depth, || Type::Result(part(a), part(b))),
            Type::Fun(a, e, b) => deep(depth, || Type::Fun(part(a), e.clone(), part(b))),
            t => t.clone(),
        }
    }

    /// [`Metas::zonk`] of an owned type, rewriting only its metavariables
    /// (no copy of the rest).
    pub fn zonk_owned(&self, mut t: Type) -> Type {
        self.zonk_in_place(&mut t, 0);
        t
    }

    fn zonk_in_place(&self, t: &mut Type, depth: u32) {
        let d = depth + 1;
        match t {
            Type::Meta(_) => *t = self.zonk(t),
            Type::Record(fs) | Type::OpenRecord(fs) => deep(depth, || {
                fs.iter_mut().for_each(|(_, t)| self.zonk_in_place(t, d))
            }),
            Type::List(t) | Type::Option(t) | Type::Linear(t) => {
                deep(depth, || self.zonk_in_place(t, d))
            }
            Type::Result(a, b) | Type::Fun(a, _, b) => deep(depth, || {
                self.zonk_in_place(a, d);
                self.zonk_in_place(b, d);
            }),
            _ => {}
        }
    }

    /// [`Type::holds`] of the zonked `t`, without building it.
    pub fn holds(&self, t: &Type, is: fn(&Type) -> bool) -> bool {
        self.holds_at(t, is, 0)
    }

    fn holds_at(&self, t: &Type, is: fn(&Type) -> bool, depth: u32) -> bool {
        let t = self.resolve_ref(t);
        let d = depth + 1;
        is(t)
            || match t {
                Type::Record(fs) | Type::OpenRecord(fs) => {
                    deep(depth, || fs.iter().any(|(_, t)| self.holds_at(t, is, d)))
                }
                Type::List(t) | Type::Linear(t) | Type::Option(t) => {
                    deep(depth, || self.holds_at(t, is, d))
                }
                Type::Result(a, b) => {
                    deep(depth, || self.holds_at(a, is, d) || self.holds_at(b, is, d))
                }
                _ => false,
            }
    }

    /// [`Type::is_linear`] and [`Type::contains_result`] of the zonked `t`,
    /// in one walk.
    pub fn linear_and_result(&self, t: &Type) -> (bool, bool) {
        let mut found = (false, false);
        self.find_data(t, &mut found, 0);
        found
    }

    fn find_data(&self, t: &Type, found: &mut (bool, bool), depth: u32) {
        if found.0 && found.1 {
            return;
        }
        let t = self.resolve_ref(t);
        let d = depth + 1;
        match t {
            Type::Linear(_) => found.0 = true,
            Type::Result(..) => found.1 = true,
            _ => {}
        }
        match t {
            Type::Record(fs) | Type::OpenRecord(fs) => deep(depth, || {
                fs.iter().for_each(|(_, t)| self.find_data(t, found, d))
            }),
            Type::List(t) | Type::Linear(t) | Type::Option(t) => {
                deep(depth, || self.find_data(t, found, d))
            }
            Type::Result(a, b) => deep(depth, || {
                self.find_data(a, found, d);
                self.find_data(b, found, d);
            }),
            _ => {}
        }
    }

    /// The number of nodes of `t` (metavariables resolved), counted no
    /// further than just past `cap`, so the count is cheap even for a type
    /// too large to walk.
    pub fn size(&self, t: &Type, cap: usize) -> usize {
        let mut n = 0;
        self.count(t, cap, &mut n);
        n
    }

    /// Adds the number of nodes of `t` to `n`, counting no further than
    /// just past `cap` (what [`Metas::size`] does for each part).
    pub fn count(&self, t: &Type, cap: usize, n: &mut usize) {
        self.count_at(t, cap, n, 0)
    }

    fn count_at(&self, t: &Type, cap: usize, n: &mut usize, depth: u32) {
        if *n > cap {
            return;
        }
        *n += 1;
        let d = depth + 1;
        match self.resolve_ref(t) {
            Type::Record(fs) | Type::OpenRecord(fs) => deep(depth, || {
                fs.iter().for_each(|(_, t)| self.count_at(t, cap, n, d))
            }),
            Type::List(t) | Type::Linear(t) | Type::Option(t) => {
                deep(depth, || self.count_at(t, cap, n, d))
            }
            Type::Result(a, b) | Type::Fun(a, _, b) => deep(depth, || {
                self.count_at(a, cap, n, d);
                self.count_at(b, cap, n, d);
            }),
            _ => {}
        }
    }

    /// The first unsolved metavariable in `t`, if any.
    pub fn first_unsolved(&self, t: &Type) -> Option<u32> {
        self.find_meta(t, &|_| true)
    }

    /// The first unsolved metavariable in `t` that `pick` accepts.
    pub(super) fn find_meta(&self, t: &Type, pick: &dyn Fn(u32) -> bool) -> Option<u32> {
        self.find_meta_at(t, pick, 0)
    }

    fn find_meta_at(&self, t: &Type, pick: &dyn Fn(u32) -> bool, depth: u32) -> Option<u32> {
        let d = depth + 1;
        match self.resolve_ref(t) {
            Type::Meta(id) => Some(*id).filter(|id| pick(*id)),
            Type::Record(fs) | Type::OpenRecord(fs) => deep(depth, || {
                fs.iter().find_map(|(_, t)| self.find_meta_at(t, pick, d))
            }),
            Type::List(t) | Type::Linear(t) | Type::Option(t) => {
                deep(depth, || self.find_meta_at(t, pick, d))
            }
            Type::Result(a, b) | Type::Fun(a, _, b) => deep(depth, || {
                self.find_meta_at(a, pick, d)
                    .or_else(|| self.find_meta_at(b, pick, d))
            }),
            _ => None,
        }
    }
}
