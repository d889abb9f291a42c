//! Python's exit, made safe for the threads lt runs (issue 28, break-it
//! pass). While CPython finalizes, a thread that tries to take the GIL is
//! ended with `pthread_exit` (3.9–3.13); the forced unwind that ends it
//! cannot cross Rust frames (`catch_unwind`, PyO3's trampolines), and the
//! process aborts ("FATAL: exception not rethrown"). So no thread with
//! Rust frames may take the GIL once finalization has begun.
//!
//! The package registers [`python_exiting`] with `atexit`: it runs before
//! finalization, while every thread can still take the GIL. It closes the
//! gate, waits for the threads inside it, cancels every session in flight
//! and waits (a bounded time) for them to end, so that their logs end with
//! `session_ended` (cancelled). After that:
//!
//! - a thread that released the GIL through [`detach`] and comes back
//!   finds the gate closed and parks for good, without the GIL (a daemon
//!   thread waiting for a run, a worker waiting for a job); Python
//!   abandons such threads at exit anyway;
//! - a Rust thread that wants the GIL ([`attach`]) is refused and treats
//!   the call as cancelled.
//!
//! Python functions (the tools) run on Python threads
//! ([`crate::worker`]), whose stacks hold no Rust frame while the function
//! runs: such a thread may be ended by finalization like any daemon thread.

use lt::runtime::cancel::Cancel;
use pyo3::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The gate's state that changes once a run, under a lock.
pub(crate) struct Gate {
    /// The thread that ran `atexit` (the thread that finalizes, which is
    /// never ended): it may still pass the closed gate.
    closer: Option<std::thread::ThreadId>,
    /// The sessions in flight, by id.
    sessions: BTreeMap<u64, Cancel>,
    next_id: u64,
}

static GATE: Mutex<Gate> = Mutex::new(Gate {
    closer: None,
    sessions: BTreeMap::new(),
    next_id: 0,
});
static CHANGED: Condvar = Condvar::new();
/// `atexit` has run: no thread may take the GIL from here on, but the
/// closer. Read on every pass (each tool call passes twice), so an atomic,
/// not the lock.
static CLOSED: AtomicBool = AtomicBool::new(false);
/// Threads between passing the gate and holding the GIL (or inside an
/// [`attach`]).
static INSIDE: AtomicUsize = AtomicUsize::new(0);

/// How long `atexit` waits for the cancelled sessions to end.
const SESSION_GRACE: Duration = Duration::from_secs(5);

fn gate() -> MutexGuard<'static, Gate> {
    GATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Passes the gate (the caller is about to take the GIL), or `false` when
/// it is closed. `INSIDE` is raised before `CLOSED` is read, and `atexit`
/// sets `CLOSED` before it reads `INSIDE` (both `SeqCst`): a thread either
/// sees the gate closed or is waited for.
fn enter() -> bool {
    INSIDE.fetch_add(1, Ordering::SeqCst);
    if CLOSED.load(Ordering::SeqCst) && gate().closer != Some(std::thread::current().id()) {
        leave();
        return false;
    }
    true
}

fn leave() {
    if INSIDE.fetch_sub(1, Ordering::SeqCst) == 1 && CLOSED.load(Ordering::SeqCst) {
        // `atexit` may be waiting for the last one out.
        let _g = gate();
        CHANGED.notify_all();
    }
}

/// The gate, locked by the thread about to `fork` ([`crate::fork`]).
pub(crate) fn hold_for_fork() -> MutexGuard<'static, Gate> {
    gate()
}

/// In a forked child, the gate held across the fork: the parent's
/// sessions and the threads inside the gate do not exist here.
pub(crate) fn reset_in_child(mut g: MutexGuard<'static, Gate>) {
    std::mem::forget(std::mem::take(&mut g.sessions));
    INSIDE.store(0, Ordering::SeqCst);
}

/// `py.detach(f)`, except that the thread takes the GIL back only while
/// Python is not exiting; once it is, the thread parks for good.
pub fn detach<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> T {
    let v = py.detach(|| {
        let v = f();
        if !enter() {
            park_forever();
        }
        v
    });
    leave();
    v
}

/// `Python::attach(f)` from a thread Python did not start, or `None` when
/// Python is exiting (nothing ran). `f` must not wait for long: `atexit`
/// waits for it.
pub fn attach<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> Option<R> {
    if !enter() {
        return None;
    }
    let r = Python::attach(f);
    leave();
    Some(r)
}

fn park_forever() -> ! {
    loop {
        std::thread::park();
    }
}

/// A session in flight, registered so that `atexit` can cancel it;
/// unregistered when dropped (the session has ended).
pub struct Registered(u64);

/// Registers `cancel`; `None` when Python is exiting (the run must not
/// start).
pub fn register(cancel: &Cancel) -> Option<Registered> {
    let mut g = gate();
    if CLOSED.load(Ordering::SeqCst) {
        return None;
    }
    g.next_id += 1;
    let id = g.next_id;
    g.sessions.insert(id, cancel.clone());
    Some(Registered(id))
}

impl Drop for Registered {
    fn drop(&mut self) {
        gate().sessions.remove(&self.0);
        CHANGED.notify_all();
    }
}

/// `atexit`: closes the gate, cancels the sessions in flight and waits for
/// them (at most [`SESSION_GRACE`]). The number of sessions still running
/// when it gave up.
#[pyfunction]
pub fn python_exiting(py: Python<'_>) -> usize {
    let me = std::thread::current().id();
    py.detach(move || {
        let mut g = gate();
        g.closer = Some(me);
        CLOSED.store(true, Ordering::SeqCst);
        let sessions: Vec<Cancel> = g.sessions.values().cloned().collect();
        drop(g);
        for c in &sessions {
            c.cancel("Python is exiting");
        }
        let mut g = gate();
        while INSIDE.load(Ordering::SeqCst) > 0 {
            g = CHANGED
                .wait_timeout(g, Duration::from_millis(10))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        let until = Instant::now() + SESSION_GRACE;
        while !g.sessions.is_empty() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            g = CHANGED
                .wait_timeout(g, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        g.sessions.len()
    })
}
