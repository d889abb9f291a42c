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
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Gate {
    /// `atexit` has run: no thread may take the GIL from here on, but the
    /// one that ran it (the thread that finalizes, which is never ended).
    closed: bool,
    closer: Option<std::thread::ThreadId>,
    /// Threads between passing the gate and holding the GIL (or inside an
    /// [`attach`]).
    inside: usize,
    /// The sessions in flight, by id.
    sessions: BTreeMap<u64, Cancel>,
    next_id: u64,
}

static GATE: Mutex<Gate> = Mutex::new(Gate {
    closed: false,
    closer: None,
    inside: 0,
    sessions: BTreeMap::new(),
    next_id: 0,
});
static CHANGED: Condvar = Condvar::new();

/// How long `atexit` waits for the cancelled sessions to end.
const SESSION_GRACE: Duration = Duration::from_secs(5);

fn gate() -> MutexGuard<'static, Gate> {
    GATE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Passes the gate (the caller is about to take the GIL), or `false` when
/// it is closed.
fn enter() -> bool {
    let mut g = gate();
    if g.closed && g.closer != Some(std::thread::current().id()) {
        return false;
    }
    g.inside += 1;
    true
}

fn leave() {
    gate().inside -= 1;
    CHANGED.notify_all();
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
    if g.closed {
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
        g.closed = true;
        g.closer = Some(me);
        let sessions: Vec<Cancel> = g.sessions.values().cloned().collect();
        drop(g);
        for c in &sessions {
            c.cancel("Python is exiting");
        }
        let mut g = gate();
        while g.inside > 0 {
            g = CHANGED.wait(g).unwrap_or_else(PoisonError::into_inner);
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
