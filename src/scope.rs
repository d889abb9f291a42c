//! A scoped name table with O(1) bind, lookup and unwind, for passes that
//! walk the tree once in order (validation, the usage pass).
//!
//! Bindings shadow earlier ones of the same name; [`Scope::mark`] and
//! [`Scope::reset`] undo every binding made since the mark. (The checker's
//! own environment is a persistent `im::HashMap`, which it snapshots; these
//! passes only need a stack discipline and are kept linear in program size.)

use crate::syntax::ast::Name;
use rustc_hash::FxHashMap;

/// A table from names to the innermost `V` bound to them.
pub struct Scope<V> {
    map: FxHashMap<Name, Vec<V>>,
    log: Vec<Name>,
}

impl<V> Default for Scope<V> {
    fn default() -> Self {
        Scope {
            map: FxHashMap::default(),
            log: Vec::new(),
        }
    }
}

impl<V> Scope<V> {
    /// A position to [`reset`](Scope::reset) to.
    pub fn mark(&self) -> usize {
        self.log.len()
    }

    /// Binds `name` to `value`, shadowing any earlier binding.
    pub fn push(&mut self, name: Name, value: V) {
        self.map.entry(name.clone()).or_default().push(value);
        self.log.push(name);
    }

    /// The innermost binding of `name`.
    pub fn get(&self, name: &str) -> Option<&V> {
        self.map.get(name).and_then(|stack| stack.last())
    }

    /// The innermost binding of `name`, mutably.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut V> {
        self.map.get_mut(name).and_then(|stack| stack.last_mut())
    }

    /// Undoes every binding made since `mark`.
    pub fn reset(&mut self, mark: usize) {
        while self.log.len() > mark {
            let Some(name) = self.log.pop() else { break };
            if let Some(stack) = self.map.get_mut(&name) {
                stack.pop();
            }
        }
    }

    /// Every name currently bound, innermost binding each (unordered).
    pub fn iter(&self) -> impl Iterator<Item = (&Name, &V)> {
        self.map
            .iter()
            .filter_map(|(n, s)| s.last().map(|v| (n, v)))
    }
}
