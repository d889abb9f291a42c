//! Python functions run on Python threads, so that a call can time out or
//! be cancelled even when its function never returns (issue 28, break-it
//! pass).
//!
//! The session's thread does not call the function itself: it queues a
//! [`Job`] and waits for its outcome with the GIL released, until the
//! call's deadline (the run's time left, the profile's timeout for the
//! tool) or the session's cancellation. A pool of daemon threads started
//! by Python (`lt._tools._work`) takes the jobs: each runs
//!
//! ```python
//! f, arg, job = _lt.next_job()           # waits, GIL released
//! try: r = f(arg, job)                    # the tool (pure Python frames)
//! except BaseException as e: job.fail(e)
//! else: job.done(r)                       # the result as JSON, to the session
//! ```
//!
//! A call that times out or is cancelled is abandoned: its `Err` goes to
//! the program at once; an `async` function's task is cancelled (the
//! canceller it gave with `job.on_cancel`); a sync function cannot be
//! stopped, so its thread runs it to its end and its result is dropped,
//! and later calls go to other threads (the pool grows when no thread is
//! idle). While the function runs, its thread holds no Rust frame, so
//! Python's exit may end it like any daemon thread ([`crate::gate`]).

use crate::convert::to_py;
use crate::gate;
use lt::runtime::cancel::Cancel;
use lt::runtime::host::{FailureKind, Outcome, ToolFailure};
use pyo3::prelude::*;
use serde_json::Value as Json;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// What a job computes, and how its Python result becomes outcomes.
pub enum Work {
    /// One call of `tool`: the function takes the argument.
    One(String),
    /// A batch (`gather`, `fan_out`) of calls of these tools: the function
    /// takes a list of `(tool, argument)` pairs.
    Batch(Vec<String>),
}

#[derive(Default)]
struct SlotState {
    outcomes: Option<Vec<Outcome>>,
    abandoned: bool,
    canceller: Option<Py<PyAny>>,
}

/// Where a job's outcome goes.
#[derive(Default)]
struct Slot {
    state: Mutex<SlotState>,
    done: Condvar,
    /// The outcomes are in `state` (read without the lock while spinning).
    ready: AtomicBool,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct Queued {
    f: Arc<Py<PyAny>>,
    arg: Json,
    work: Arc<Work>,
    slot: Arc<Slot>,
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Queued>,
    /// Threads waiting in `next_job`.
    idle: usize,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue {
    jobs: VecDeque::new(),
    idle: 0,
});
static QUEUED: Condvar = Condvar::new();
/// `QUEUE.jobs.len()`, read without the lock while spinning.
static PENDING: AtomicUsize = AtomicUsize::new(0);

/// How long a thread keeps looking (yielding its core between looks)
/// before it sleeps, waiting for a job or an outcome: a call into a quick
/// function then costs no wake-up of a sleeping thread (two per call).
/// Yielding, not spinning: on a loaded machine a spinning thread takes the
/// core the other side needs (a busy spin made a call 170–220 µs under a
/// load of 12 on two cores; yielding, 12–14 µs).
const SPIN: Duration = Duration::from_micros(200);

/// Yields until `done()` or [`SPIN`] has passed.
fn spin(done: impl Fn() -> bool) {
    let until = Instant::now() + SPIN;
    while !done() && Instant::now() < until {
        std::thread::yield_now();
    }
}

fn queue() -> MutexGuard<'static, Queue> {
    QUEUE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One call (or batch) handed to a Python thread.
#[pyclass(frozen, module = "lt._lt")]
pub struct Job {
    f: Arc<Py<PyAny>>,
    arg: Json,
    work: Arc<Work>,
    slot: Arc<Slot>,
}

#[pymethods]
impl Job {
    /// The function to call (with `arg` and the job).
    #[getter]
    fn f(&self, py: Python<'_>) -> Py<PyAny> {
        self.f.clone_ref(py)
    }

    /// The argument, as Python data.
    #[getter]
    fn arg<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.arg)
    }

    /// The function returned `result`.
    fn done(&self, result: &Bound<'_, PyAny>) {
        let outcomes = match &*self.work {
            Work::One(tool) => vec![crate::tools::outcome(tool, result)],
            Work::Batch(tools) => crate::tools::batch_outcomes(tools, result),
        };
        self.finish(outcomes);
    }

    /// The function raised `e`.
    fn fail(&self, e: &Bound<'_, PyAny>) {
        let err = PyErr::from_value(e.clone());
        let outcomes = match &*self.work {
            Work::One(tool) => vec![Err(crate::tools::raised(e.py(), tool, &err))],
            Work::Batch(tools) => tools
                .iter()
                .map(|t| {
                    Err(failure(
                        FailureKind::Failed,
                        format!("tool {t}: the batch raised: {err}"),
                    ))
                })
                .collect(),
        };
        self.finish(outcomes);
    }

    /// `f()` stops the call (an `async` function's task): called when the
    /// call is abandoned, at once if it already is.
    fn on_cancel(&self, f: Bound<'_, PyAny>) {
        let mut s = self.slot.lock();
        if s.abandoned {
            drop(s);
            let _ = f.call0();
        } else {
            s.canceller = Some(f.unbind());
        }
    }
}

impl Job {
    fn finish(&self, outcomes: Vec<Outcome>) {
        let mut s = self.slot.lock();
        s.canceller = None;
        if !s.abandoned {
            s.outcomes = Some(outcomes);
            self.slot.ready.store(true, Ordering::Release);
            self.slot.done.notify_all();
        }
    }
}

/// `next_job()`: `(f, arg, job)` of the next job, once there is one (the
/// GIL released while waiting). Abandoned jobs are skipped.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn next_job(py: Python<'_>) -> PyResult<(Py<PyAny>, Bound<'_, PyAny>, Py<Job>)> {
    let q = gate::detach(py, || {
        let mut q = queue();
        loop {
            if let Some(job) = q.jobs.pop_front() {
                PENDING.store(q.jobs.len(), Ordering::Release);
                if job.slot.lock().abandoned {
                    continue;
                }
                return job;
            }
            // Idle (a submitter counts on this thread), spinning first.
            q.idle += 1;
            drop(q);
            spin(|| PENDING.load(Ordering::Acquire) > 0);
            q = queue();
            if q.jobs.is_empty() {
                q = QUEUED.wait(q).unwrap_or_else(PoisonError::into_inner);
            }
            q.idle -= 1;
        }
    });
    let f = q.f.clone_ref(py);
    let arg = to_py(py, &q.arg)?;
    let job = Py::new(
        py,
        Job {
            f: q.f,
            arg: q.arg,
            work: q.work,
            slot: q.slot,
        },
    )?;
    Ok((f, arg, job))
}

fn failure(kind: FailureKind, message: String) -> ToolFailure {
    ToolFailure {
        stderr: None,
        kind,
        message,
    }
}

/// How often a waiting call looks at the session's cancellation.
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// Runs `work` (`f` with `arg`) on a Python thread and waits for its
/// outcomes, at most `time_left`, until `cancel` is cancelled. `label`
/// names the call in failures. Never needs the GIL, except to start a
/// thread when none is idle and to cancel an abandoned `async` call.
pub fn perform(
    f: &Arc<Py<PyAny>>,
    arg: Json,
    work: Work,
    time_left: Option<Duration>,
    cancel: &Cancel,
) -> Vec<Outcome> {
    let n = match &work {
        Work::One(_) => 1,
        Work::Batch(t) => t.len(),
    };
    let label = match &work {
        Work::One(t) => t.clone(),
        Work::Batch(t) => t.join(", "),
    };
    let all = |kind: FailureKind, message: String| -> Vec<Outcome> {
        (0..n)
            .map(|_| Err(failure(kind, message.clone())))
            .collect()
    };
    let timed_out = |t: Duration| {
        all(
            FailureKind::TimedOut,
            format!("tool {label} timed out after {} ms", t.as_millis()),
        )
    };
    let cancelled = || {
        all(
            FailureKind::Unavailable,
            format!("tool {label}: the session was cancelled"),
        )
    };
    if let Some(t) = time_left.filter(|t| t.is_zero()) {
        return timed_out(t);
    }
    if cancel.is_cancelled() {
        return cancelled();
    }
    let began = Instant::now();
    let slot = Arc::new(Slot::default());
    let spawn = {
        let mut q = queue();
        q.jobs.push_back(Queued {
            f: f.clone(),
            arg,
            work: Arc::new(work),
            slot: slot.clone(),
        });
        PENDING.store(q.jobs.len(), Ordering::Release);
        QUEUED.notify_one();
        q.jobs.len() > q.idle
    };
    if spawn {
        let started = gate::attach(|py| -> PyResult<()> {
            py.import("lt._tools")?.call_method0("_start_worker")?;
            Ok(())
        });
        let why = match started {
            Some(Ok(())) => None,
            Some(Err(e)) => Some(format!("no thread could run it: {e}")),
            None => Some("Python is exiting".to_string()),
        };
        if let Some(why) = why {
            abandon(&slot);
            return all(FailureKind::Unavailable, format!("tool {label}: {why}"));
        }
    }
    let deadline = time_left.map(|t| began + t);
    spin(|| slot.ready.load(Ordering::Acquire) || cancel.is_cancelled());
    let mut s = slot.lock();
    loop {
        if let Some(outcomes) = s.outcomes.take() {
            return outcomes;
        }
        let now = Instant::now();
        let stop = if cancel.is_cancelled() {
            Some(cancelled())
        } else {
            match (deadline, time_left) {
                (Some(d), Some(t)) if now >= d => Some(timed_out(t)),
                _ => None,
            }
        };
        if let Some(outcomes) = stop {
            drop(s);
            abandon(&slot);
            return outcomes;
        }
        let wait = deadline.map_or(CANCEL_POLL, |d| (d - now).min(CANCEL_POLL));
        s = slot
            .done
            .wait_timeout(s, wait)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

/// Marks the job abandoned (its outcome will be dropped) and runs its
/// canceller.
fn abandon(slot: &Slot) {
    let canceller = {
        let mut s = slot.lock();
        s.abandoned = true;
        s.canceller.take()
    };
    if let Some(c) = canceller {
        let mut c = Some(c);
        let ran = gate::attach(|py| {
            if let Some(c) = c.take() {
                let _ = c.bind(py).call0();
            }
        });
        if ran.is_none() {
            // Python is exiting: the reference is not released.
            std::mem::forget(c);
        }
    }
}
