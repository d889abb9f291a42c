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
//! job = _lt.Job()                         # the thread's, for all its calls
//! f, arg = job.next()                     # waits, GIL released
//! try:
//!     r = f(arg)                          # the user's function (pure Python frames)
//!     settle = job.done(r)                # plain data: on the wire, to the session
//!     if settle is not None:              # else (an awaitable): the run's settle
//!         job.done(settle(r, job))
//! except BaseException as e: job.fail(e)
//! ```
//!
//! No Python wrapper runs around the function: `done` tells a result of a
//! plain type (`dict`, `list`, `str`, `int`, `float`, `bool`, `tuple`,
//! `None`, by an exact type check) from one to settle first.
//!
//! A call that times out or is cancelled is abandoned: its `Err` goes to
//! the program at once; an `async` function's task is cancelled (the
//! canceller it gave with `job.on_cancel`); a sync function cannot be
//! stopped, so its thread runs it to its end and its result is dropped,
//! and later calls go to other threads (the pool grows when no thread is
//! idle). While the function runs, its thread holds no Rust frame, so
//! Python's exit may end it like any daemon thread ([`crate::gate`]).
//!
//! A function that raises `KeyboardInterrupt` or `SystemExit` stops the
//! run as Ctrl-C does: the session is cancelled and the exception is
//! raised by `lt.run` ([`RunState::take_escaped`]), whether the function
//! was sync, `async`, or part of a batch.
//!
//! A pool thread idle for [`retire_after`] (60 s) while more than
//! [`KEEP_IDLE`] threads are idle ends (`job.next()` raises
//! `StopIteration`, which ends `_work`): a burst of sessions in many
//! threads does not leave as many idle threads behind for the life of the
//! process.
//!
//! The hand-off costs two wake-ups a call at most: a thread about to wait
//! first spins on its core for a while, then yields it for a while
//! ([`crate::spin`]), and a condition variable is signalled only when a
//! thread sleeps on it.

use crate::answer::{batch_outcomes, failure, outcome, raised};
use crate::convert::{wire_to_py, Keys};
use crate::gate;
use crate::slot::{arrived, pop_live, queue, slot_for, take_queued, Slot, HUB, QUEUED};
use crate::spin::Spinner;
use crate::work::{Outcomes, RunState, Work};
use lt::runtime::host::FailureKind;
use lt::runtime::wire::Wire;
use pyo3::exceptions::{PyKeyboardInterrupt, PyStopIteration, PySystemExit};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

/// Whether `e` stops the run rather than failing the call.
fn stops_the_run(e: &Bound<'_, PyAny>) -> bool {
    e.is_instance_of::<PyKeyboardInterrupt>() || e.is_instance_of::<PySystemExit>()
}

/// The waits for jobs (pool threads) and for outcomes (sessions' threads).
static FOR_JOBS: Spinner = Spinner::new();
/// The wait for a job with the GIL kept, before [`FOR_JOBS`]'s.
static HELD: Spinner = Spinner::new();
/// The longest a pool thread back from a call looks for the next job
/// with the GIL kept: Python's other threads wait for it that long at
/// most (their switch interval is 5 ms), and only while such looks find a
/// job ([`Spinner::busy_for`] skips them after misses).
const HOLD: Duration = Duration::from_micros(5);
static FOR_OUTCOMES: Spinner = Spinner::new();

/// The call (or batch) a pool thread is running, and where its outcome
/// goes: one object per thread, given each call's slot in turn by
/// [`next_job`] (no object a call). A call's first `done` or `fail`
/// gives its outcome; later ones are ignored.
#[pyclass(module = "lt._lt")]
pub struct Job {
    /// The call's slot, from `next_job` until its `done` or `fail`.
    slot: Option<Arc<Slot>>,
    /// `done` handed the result to the run's `settle`: the next `done` is
    /// given its value, converted whatever its type.
    settling: bool,
    /// The `str` keys of this thread's arguments' dicts.
    keys: Keys,
    /// The call's argument's buffer, read by the time the function is
    /// called: its result is written into it. Dropped by the next
    /// `next_job` when the outcome did not take it (the session's thread
    /// goes on meanwhile).
    spent: Option<Wire>,
}

/// Whether `obj`'s type is exactly one that is plain data (never
/// awaitable): `dict`, `list`, `str`, `int`, `float`, `bool`, `tuple` or
/// `None`.
fn plain(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_exact_instance_of::<PyDict>()
        || obj.is_exact_instance_of::<PyInt>()
        || obj.is_exact_instance_of::<PyString>()
        || obj.is_exact_instance_of::<PyList>()
        || obj.is_none()
        || obj.is_exact_instance_of::<PyFloat>()
        || obj.is_exact_instance_of::<PyBool>()
        || obj.is_exact_instance_of::<PyTuple>()
}

#[pymethods]
impl Job {
    /// A job object with no call yet, for one pool thread.
    #[new]
    fn new() -> Job {
        Job {
            slot: None,
            settling: false,
            keys: Keys::new(),
            spent: None,
        }
    }

    /// `job.next()`: `(f, arg)` of the next job, once there is one (the
    /// GIL released while waiting), its outcome to go through this job.
    /// A method without arguments: Python calls it without building an
    /// argument tuple (the stable ABI of 3.9 has no faster convention).
    fn next<'py>(slf: &Bound<'py, Self>) -> PyResult<(Py<PyAny>, Bound<'py, PyAny>)> {
        next_job(slf.py(), slf)
    }

    /// The function returned `result`: its outcome, unless `result` is not
    /// of a plain type and the run settles such results; then the run's
    /// `settle`, to call with `(result, job)` and give its value to `done`.
    pub(crate) fn done(&mut self, result: &Bound<'_, PyAny>) -> Option<Py<PyAny>> {
        let slot = self.slot.as_ref()?;
        if !std::mem::take(&mut self.settling) && !plain(result) {
            if let Some(settle) = &slot.run.settle {
                self.settling = true;
                return Some(settle.clone_ref(result.py()));
            }
        }
        let slot = self.slot.take()?;
        let outcomes = match &slot.work {
            // The result written into the argument's buffer (read by now).
            Work::One(tool) => {
                let buffer = self.spent.take();
                Outcomes::One(outcome(tool, result, buffer.unwrap_or_default()))
            }
            Work::Batch(calls) => Outcomes::Batch(batch_outcomes(calls, result)),
        };
        finish(&slot, outcomes);
        None
    }

    /// The function raised `e`. `KeyboardInterrupt` and `SystemExit` stop
    /// the run (the session is cancelled; `lt.run` raises them).
    fn fail(&mut self, e: &Bound<'_, PyAny>) {
        self.settling = false;
        let Some(slot) = self.slot.take() else {
            return;
        };
        let py = e.py();
        let err = PyErr::from_value(e.clone());
        let work = &slot.work;
        if stops_the_run(e) {
            slot.run.escape(py, &work.label(), err);
            finish(&slot, work.cancelled());
            return;
        }
        let outcomes = match work {
            Work::One(tool) => Outcomes::One(Err(raised(py, tool, &err))),
            Work::Batch(calls) => Outcomes::Batch(
                calls
                    .iter()
                    .map(|(t, _)| {
                        Err(failure(
                            FailureKind::Failed,
                            format!("tool {t}: the batch raised: {err}"),
                        ))
                    })
                    .collect(),
            ),
        };
        finish(&slot, outcomes);
    }

    /// `f()` stops the call (an `async` function's task): called when the
    /// call is abandoned, at once if it already is; ignored once the call
    /// has its outcome.
    fn on_cancel(slf: PyRef<'_, Self>, f: Bound<'_, PyAny>) {
        let Some(slot) = slf.slot.clone() else {
            return;
        };
        // Not borrowed while the canceller runs (it may be any code).
        drop(slf);
        let mut s = slot.lock();
        if s.abandoned {
            drop(s);
            let _ = f.call0();
        } else {
            s.canceller = Some(f.unbind());
        }
    }
}

/// Gives `slot` its `outcomes` (its thread is on its way back).
fn finish(slot: &Slot, outcomes: Outcomes) {
    HUB.coming.fetch_add(1, Ordering::AcqRel);
    give(slot, outcomes);
}

/// Gives `slot` its `outcomes`, unless it was abandoned.
fn give(slot: &Slot, outcomes: Outcomes) {
    let mut s = slot.lock();
    s.canceller = None;
    if !s.abandoned {
        s.outcomes = Some(outcomes);
        slot.ready.store(true, Ordering::Release);
        if s.sleeping {
            slot.done.notify_one();
        }
    }
}

impl Drop for Job {
    /// A pool thread that ends with a call in hand (an exception raised
    /// in it outside the tool, e.g. one injected into the thread) gives
    /// the call its `Err` rather than leave it to its deadline. The thread
    /// is not on its way back: no count is raised.
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let outcomes = slot.work.all(
                FailureKind::Unavailable,
                |t, _| format!("tool {t}: the Python thread running it ended before it finished"),
                None,
            );
            give(&slot, outcomes);
        }
    }
}

/// `(f, arg)` of the next job, once there is one (the GIL released while
/// waiting), its outcome to go through `job` (the calling thread's):
/// [`Job::next`]. Abandoned jobs are skipped.
fn next_job<'py>(
    py: Python<'py>,
    job: &Bound<'py, Job>,
) -> PyResult<(Py<PyAny>, Bound<'py, PyAny>)> {
    // The last call's, its outcome given.
    job.borrow_mut().spent = None;
    loop {
        // The session's thread queues its next call about a microsecond
        // after it has the outcome: a job queued within [`HOLD`] is taken
        // with the GIL kept (releasing and taking it back is two locks of
        // the GIL's mutex, a signal and the gate's atomics a call).
        let soon = if HELD.busy_for(HOLD, &|| HUB.pending.load(Ordering::Acquire) > 0) {
            take_queued()
        } else {
            None
        };
        let (slot, arg) = match soon {
            Some(q) => q,
            None => match wait_for_job(py) {
                Some(q) => q,
                // Idle too long, with enough others idle: this thread ends.
                None => return Err(PyStopIteration::new_err("this pool thread retires")),
            },
        };
        let mut j = job.borrow_mut();
        match wire_to_py(py, &arg, &mut j.keys) {
            Ok(argument) => {
                let function = slot.f.clone_ref(py);
                j.slot = Some(slot);
                j.settling = false;
                j.spent = Some(arg);
                return Ok((function, argument));
            }
            Err(e) => {
                // Not given to the function: the call's `Err`, and this
                // thread goes on to the next job (an exception here would
                // end the pool thread and leave the call to its deadline).
                let why = e.to_string();
                let outcomes = slot.work.all(
                    FailureKind::Failed,
                    |t, _| format!("tool {t}: its argument could not be given to Python: {why}"),
                    None,
                );
                finish(&slot, outcomes);
            }
        }
    }
}

/// How many idle pool threads are always kept (a retiring thread leaves
/// at least this many idle).
pub const KEEP_IDLE: u32 = 2;

/// How long a pool thread sleeps without a job before it may retire, in
/// milliseconds ([`set_retire_after`]).
static RETIRE_AFTER_MS: AtomicU64 = AtomicU64::new(60_000);

/// How long a pool thread sleeps without a job before it may retire.
pub fn retire_after() -> Duration {
    Duration::from_millis(RETIRE_AFTER_MS.load(Ordering::Relaxed))
}

/// Sets [`retire_after`] (`_lt._retire_after(seconds)`, for the tests).
pub fn set_retire_after(after: Duration) {
    let ms = u64::try_from(after.as_millis()).unwrap_or(u64::MAX).max(1);
    RETIRE_AFTER_MS.store(ms, Ordering::Relaxed);
}

/// Waits for the next job with the GIL released, spinning first, then
/// asleep on [`QUEUED`]; abandoned jobs are skipped. `None`: this thread
/// slept [`retire_after`] with no job while more than [`KEEP_IDLE`]
/// threads were idle, and retires (no longer counted idle, under the
/// queue's lock, so no submitter counts on it after).
fn wait_for_job(py: Python<'_>) -> Option<(Arc<Slot>, Wire)> {
    gate::detach(py, || {
        let mut q = queue();
        arrived();
        loop {
            if let Some(job) = pop_live(&mut q) {
                return Some(job);
            }
            // Idle (a submitter counts on this thread), spinning first.
            q.idle += 1;
            drop(q);
            FOR_JOBS.spin(|| HUB.pending.load(Ordering::Acquire) > 0);
            q = queue();
            if q.len() == 0 {
                q.sleeping += 1;
                let (guard, waited) = QUEUED
                    .wait_timeout(q, retire_after())
                    .unwrap_or_else(PoisonError::into_inner);
                q = guard;
                q.sleeping -= 1;
                if waited.timed_out() && q.len() == 0 && q.idle > KEEP_IDLE {
                    q.idle -= 1;
                    return None;
                }
            }
            q.idle -= 1;
        }
    })
}

/// How often a waiting call looks at the session's cancellation.
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// A job handed to the pool, not yet waited for ([`Pending::wait`]).
pub struct Pending {
    slot: Arc<Slot>,
    /// When its time is up (read from the clock only when it has a limit).
    deadline: Option<Instant>,
    time_left: Option<Duration>,
}

/// Hands `work` (`f` with `arg`) to a Python thread; it may take
/// `time_left`. `Err`: its outcomes already (the deadline has passed, the
/// session is cancelled, no thread can run it). Never needs the GIL,
/// except to start a thread when none is idle.
pub fn submit(
    f: &Arc<Py<PyAny>>,
    arg: Wire,
    work: Work,
    time_left: Option<Duration>,
    run: &Arc<RunState>,
) -> Result<Pending, Outcomes> {
    if let Some(t) = time_left.filter(|t| t.is_zero()) {
        return Err(work.timed_out(Some(t)));
    }
    if run.cancel.is_cancelled() {
        return Err(work.cancelled());
    }
    let deadline = time_left.map(|t| Instant::now() + t);
    let slot = slot_for(f, arg, work, run);
    let spawn = {
        let mut q = queue();
        q.push(slot.clone());
        let queued = q.len();
        HUB.pending.store(queued as u32, Ordering::Release);
        if q.sleeping > 0 {
            QUEUED.notify_one();
        }
        let ready = q.idle as usize + HUB.coming.load(Ordering::Acquire) as usize;
        let spawn = queued > ready;
        if spawn {
            HUB.coming.fetch_add(1, Ordering::AcqRel);
        }
        spawn
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
            arrived();
            abandon(&slot);
            let label = slot.work.label();
            return Err(slot.work.all(
                FailureKind::Unavailable,
                |_, _| format!("tool {label}: {why}"),
                None,
            ));
        }
    }
    Ok(Pending {
        slot,
        deadline,
        time_left,
    })
}

impl Pending {
    /// Waits for the job's outcomes, at most its time left, until the
    /// session is cancelled; an unfinished job is then abandoned.
    pub fn wait(self) -> Outcomes {
        let slot = &self.slot;
        let cancel = &slot.run.cancel;
        let deadline = self.deadline;
        FOR_OUTCOMES.spin(|| slot.ready.load(Ordering::Acquire) || cancel.is_cancelled());
        let mut s = slot.lock();
        loop {
            if let Some(outcomes) = s.outcomes.take() {
                return outcomes;
            }
            let now = Instant::now();
            let stop = if cancel.is_cancelled() {
                Some(slot.work.cancelled())
            } else {
                match deadline {
                    Some(d) if now >= d => Some(slot.work.timed_out(self.time_left)),
                    _ => None,
                }
            };
            if let Some(outcomes) = stop {
                drop(s);
                abandon(slot);
                return outcomes;
            }
            let wait = deadline.map_or(CANCEL_POLL, |d| (d - now).min(CANCEL_POLL));
            s.sleeping = true;
            s = slot
                .done
                .wait_timeout(s, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            s.sleeping = false;
        }
    }
}

/// Runs `work` on a Python thread and waits for its outcomes
/// ([`submit`], then [`Pending::wait`]).
pub fn perform(
    f: &Arc<Py<PyAny>>,
    arg: Wire,
    work: Work,
    time_left: Option<Duration>,
    run: &Arc<RunState>,
) -> Outcomes {
    match submit(f, arg, work, time_left, run) {
        Ok(pending) => pending.wait(),
        Err(outcomes) => outcomes,
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
