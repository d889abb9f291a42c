//! The undo variables of one checking run (E0220, [`super::undo`]): one
//! per function type, the facts between them (sources, flows), and their
//! solution. Held by the metavariable table ([`super::unify::Metas`]), so
//! that unification can add flows; the rule itself is in `undo.rs`.

use super::ty::Type;
use crate::source::Span;
use crate::syntax::ast::Name;

/// The undo variables of one checking run and the facts about them.
#[derive(Default)]
pub struct UndoVars {
    /// For each variable, the variables it flows into.
    next: Vec<Vec<u32>>,
    /// Irrevocable calls: `(variable of the function making it, tool, call)`.
    sources: Vec<(u32, Name, Span)>,
}

impl UndoVars {
    /// A fresh variable.
    pub fn fresh(&mut self) -> u32 {
        let id = u32::try_from(self.next.len()).unwrap_or(u32::MAX);
        self.next.push(Vec::new());
        id
    }

    /// If `from` then `to` (nothing when either is absent).
    pub fn flow(&mut self, from: Option<u32>, to: Option<u32>) {
        if let (Some(a), Some(b)) = (from, to) {
            if a != b {
                if let Some(out) = self.next.get_mut(a as usize) {
                    out.push(b);
                }
            }
        }
    }

    /// The function of variable `var` makes an irrevocable call of `tool` at `call`.
    pub fn source(&mut self, var: u32, tool: Name, call: Span) {
        self.sources.push((var, tool, call));
    }

    /// For each variable, the irrevocable call that makes it true (the
    /// first found), or `None` when it is false.
    pub fn solve(&self) -> Vec<Option<(Name, Span)>> {
        let mut why: Vec<Option<(Name, Span)>> = vec![None; self.next.len()];
        let mut queue: Vec<u32> = Vec::new();
        for (var, tool, call) in &self.sources {
            if let Some(slot @ None) = why.get_mut(*var as usize) {
                *slot = Some((tool.clone(), *call));
                queue.push(*var);
            }
        }
        while let Some(v) = queue.pop() {
            let reason = why[v as usize].clone();
            for &n in &self.next[v as usize] {
                if let Some(slot @ None) = why.get_mut(n as usize) {
                    *slot = reason.clone();
                    queue.push(n);
                }
            }
        }
        why
    }

    /// Gives every function type in `t` without a variable a fresh one: a
    /// written type (an annotation, an alias's expansion) stands for the
    /// functions given where it is written.
    pub fn freshen(&mut self, t: &mut Type) {
        stacker::maybe_grow(32 * 1024, 1024 * 1024, || match t {
            Type::Fun(a, e, b) => {
                if e.undo().is_none() {
                    *e = std::mem::take(e).with_undo(Some(self.fresh()));
                }
                self.freshen(a);
                self.freshen(b);
            }
            Type::Record(fs) | Type::OpenRecord(fs) => {
                for (_, f) in fs {
                    self.freshen(f);
                }
            }
            Type::List(x) | Type::Linear(x) | Type::Option(x) => self.freshen(x),
            Type::Result(a, b) => {
                self.freshen(a);
                self.freshen(b);
            }
            _ => {}
        })
    }
}
