//! A scoped name table with O(1) bind, lookup and unwind, for passes that
//! walk the tree once in order (validation, the checker, the usage pass,
//! lowering).
//!
//! Bindings shadow earlier ones of the same name; [`Scope::mark`] and
//! [`Scope::reset`] undo every binding made since the mark. The table is one
//! hash map from each name to its innermost binding and one vector of every
//! binding in order, each remembering the binding it shadows: binding and
//! unbinding a name cost one hash lookup and no allocation once the vector
//! has grown. Names are compared by pointer first: the lexer shares one
//! allocation between equal names, so a lookup rarely compares the text.

use rustc_hash::FxHashMap;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

/// A name: shared text (the same type as `syntax::ast::Name`, which the
/// lexer interns; `scope` sits below `syntax` and names it by its shape).
type Name = Rc<str>;

/// A name as a key: hashed as its text, equal when the text is (checked
/// by pointer first).
#[derive(Clone)]
struct Key(Name);

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        Rc::ptr_eq(&self.0, &other.0) || *self.0 == *other.0
    }
}

impl Eq for Key {}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (*self.0).hash(state);
    }
}

/// No binding (a name not bound, or a binding that shadows nothing).
const NONE: u32 = u32::MAX;

/// One binding, in order of binding.
struct Entry<V> {
    name: Name,
    value: V,
    /// The binding of the same name this one shadows, or [`NONE`].
    shadows: u32,
}

/// A table from names to the innermost `V` bound to them.
pub struct Scope<V> {
    /// Name → index in `entries` of its innermost binding ([`NONE`] once
    /// every binding of the name has been undone).
    innermost: FxHashMap<Key, u32>,
    entries: Vec<Entry<V>>,
}

impl<V> Default for Scope<V> {
    fn default() -> Self {
        Scope {
            innermost: FxHashMap::default(),
            entries: Vec::new(),
        }
    }
}

impl<V> Scope<V> {
    /// An empty table with room for `names` distinct names and as many
    /// bindings in scope at once.
    pub fn with_capacity(names: usize) -> Self {
        Scope {
            innermost: FxHashMap::with_capacity_and_hasher(names, Default::default()),
            entries: Vec::with_capacity(names),
        }
    }

    /// True when nothing is bound.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// A position to [`reset`](Scope::reset) to.
    pub fn mark(&self) -> usize {
        self.entries.len()
    }

    /// Binds `name` to `value`, shadowing any earlier binding.
    pub fn push(&mut self, name: Name, value: V) {
        let at = u32::try_from(self.entries.len()).unwrap_or(NONE);
        let key = Key(name);
        let shadows = match self.innermost.get_mut(&key) {
            Some(slot) => std::mem::replace(slot, at),
            None => {
                self.innermost.insert(key.clone(), at);
                NONE
            }
        };
        let Key(name) = key;
        self.entries.push(Entry {
            name,
            value,
            shadows,
        });
    }

    fn index(&self, name: &Name) -> Option<usize> {
        match self.innermost.get(&Key(name.clone())) {
            Some(&i) if i != NONE => Some(i as usize),
            _ => None,
        }
    }

    /// The innermost binding of `name`.
    pub fn get(&self, name: &Name) -> Option<&V> {
        let i = self.index(name)?;
        self.entries.get(i).map(|e| &e.value)
    }

    /// The innermost binding of `name`, mutably.
    pub fn get_mut(&mut self, name: &Name) -> Option<&mut V> {
        let i = self.index(name)?;
        self.entries.get_mut(i).map(|e| &mut e.value)
    }

    /// True when `name` is bound.
    pub fn contains(&self, name: &Name) -> bool {
        self.index(name).is_some()
    }

    /// Undoes every binding made since `mark`.
    pub fn reset(&mut self, mark: usize) {
        while self.entries.len() > mark {
            let Some(e) = self.entries.pop() else { break };
            if let Some(slot) = self.innermost.get_mut(&Key(e.name)) {
                *slot = e.shadows;
            }
        }
    }

    /// Every name currently bound, innermost binding each (unordered).
    pub fn iter(&self) -> impl Iterator<Item = (&Name, &V)> {
        self.innermost.iter().filter_map(|(n, &i)| {
            (i != NONE)
                .then(|| self.entries.get(i as usize))
                .flatten()
                .map(|e| (&n.0, &e.value))
        })
    }
}
