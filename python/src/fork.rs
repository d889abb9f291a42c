//! `os.fork()` with lt loaded (issue 28, break-it pass). A forked child
//! has one thread, the one that forked; the state lt keeps for the
//! parent's other threads would be wrong there: the pool counts idle
//! threads that do not exist (a call would wait for them until its
//! deadline), the gate counts threads inside it and sessions in flight
//! (`atexit` would wait for them), and a lock another thread held at the
//! fork would stay locked for good.
//!
//! `lt/__init__.py` registers these functions with `os.register_at_fork`:
//! [`before_fork`] takes the gate's and the pool's locks (so that no other
//! thread holds them across the fork), [`after_fork_in_parent`] releases
//! them, and [`after_fork_in_child`] resets both to "no thread, no
//! session" and releases them. The child's first call starts a pool
//! thread of its own.

use crate::{gate, slot};
use pyo3::prelude::*;
use std::cell::RefCell;
use std::sync::MutexGuard;

type Held = (
    MutexGuard<'static, gate::Gate>,
    MutexGuard<'static, slot::Queue>,
);

thread_local! {
    /// The locks the forking thread holds across the fork.
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// `os.register_at_fork(before=…)`: takes the gate's lock, then the
/// pool's (the order every thread takes them in). The GIL stays held: no
/// thread holding either lock waits for the GIL.
#[pyfunction]
pub fn before_fork() {
    let held = (gate::hold_for_fork(), slot::hold_for_fork());
    HELD.with(|h| *h.borrow_mut() = Some(held));
}

/// `after_in_parent`: releases the locks; nothing else changed.
#[pyfunction]
pub fn after_fork_in_parent() {
    HELD.with(|h| drop(h.borrow_mut().take()));
}

/// `after_in_child`: the parent's threads, jobs and sessions forgotten,
/// the locks released.
#[pyfunction]
pub fn after_fork_in_child() {
    if let Some((g, q)) = HELD.with(|h| h.borrow_mut().take()) {
        slot::reset_in_child(q);
        gate::reset_in_child(g);
    }
}
