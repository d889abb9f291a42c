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
//! The hand-off costs two wake-ups a call at most: a thread about to wait
//! first spins on its core for a while, then yields it for a while
//! ([`crate::spin`]), and a condition variable is signalled only when a
//! thread sleeps on it.

use crate::answer::{batch_outcomes, failure, outcome, raised, timed_out_message, Answered};
use crate::convert::{wire_to_py, Keys};
use crate::gate;
use crate::spin::Spinner;
use lt::runtime::cancel::Cancel;
use lt::runtime::host::FailureKind;
use lt::runtime::wire::Wire;
use pyo3::exceptions::{PyKeyboardInterrupt, PySystemExit};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// What one run's calls share: its cancellation, and the
/// `KeyboardInterrupt` / `SystemExit` a tool raised, to raise from
/// `lt.run`.
pub struct RunState {
    /// The session's cancellation.
    pub cancel: Cancel,
    /// `settle(result, job)`: the value of a function's result that is
    /// not of a plain type (an awaitable, awaited); `None`: such a result
    /// is converted as it is.
    settle: Option<Py<PyAny>>,
    escaped: Mutex<Option<PyErr>>,
}

impl RunState {
    /// The state of a run cancelled by `cancel`, whose results not of a
    /// plain type go through `settle` first.
    pub fn new(cancel: Cancel, settle: Option<Py<PyAny>>) -> Arc<RunState> {
        Arc::new(RunState {
            cancel,
            settle,
            escaped: Mutex::new(None),
        })
    }

    /// The `KeyboardInterrupt` or `SystemExit` a tool raised (the first),
    /// which cancelled the session.
    pub fn take_escaped(&self) -> Option<PyErr> {
        self.escaped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Records `err`, raised by `tool`, and cancels the session.
    fn escape(&self, py: Python<'_>, tool: &str, err: PyErr) {
        let ty = err
            .get_type(py)
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        {
            let mut e = self.escaped.lock().unwrap_or_else(PoisonError::into_inner);
            if e.is_none() {
                *e = Some(err);
            }
        }
        self.cancel.cancel(format!("tool {tool} raised {ty}"));
    }
}

/// Whether `e` stops the run rather than failing the call.
fn stops_the_run(e: &Bound<'_, PyAny>) -> bool {
    e.is_instance_of::<PyKeyboardInterrupt>() || e.is_instance_of::<PySystemExit>()
}

/// What a job computes, and how its Python result becomes outcomes.
pub enum Work {
    /// One call of the tool: the function takes the argument.
    One(Arc<str>),
    /// A batch (the `async` calls of a `gather` or `fan_out`): the
    /// function takes a list of `(tool, argument, timeout_s)` triples.
    /// Each call's tool and time left.
    Batch(Vec<(String, Option<Duration>)>),
}

impl Work {
    /// Whether `other` is one call of this work's tool (the same `Arc`);
    /// a batch is never the same.
    fn same(&self, other: &Work) -> bool {
        matches!((self, other), (Work::One(a), Work::One(b)) if Arc::ptr_eq(a, b))
    }

    fn label(&self) -> String {
        match self {
            Work::One(t) => t.to_string(),
            Work::Batch(calls) => calls
                .iter()
                .map(|c| c.0.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    /// Every call's `Err` of `kind`: `message(tool, time_left)`.
    fn all(
        &self,
        kind: FailureKind,
        message: impl Fn(&str, Option<Duration>) -> String,
        time_left: Option<Duration>,
    ) -> Outcomes {
        match self {
            Work::One(t) => Outcomes::One(Err(failure(kind, message(t, time_left)))),
            Work::Batch(calls) => Outcomes::Batch(
                calls
                    .iter()
                    .map(|(t, left)| Err(failure(kind, message(t, *left))))
                    .collect(),
            ),
        }
    }

    fn cancelled(&self) -> Outcomes {
        self.all(
            FailureKind::Unavailable,
            |t, _| format!("tool {t}: the session was cancelled"),
            None,
        )
    }

    fn timed_out(&self, time_left: Option<Duration>) -> Outcomes {
        self.all(
            FailureKind::TimedOut,
            |t, left| timed_out_message(t, left.unwrap_or_default()),
            time_left,
        )
    }
}

/// A job's outcomes: its one call's, or its batch's, one per call in
/// order (a single call allocates no vector).
pub enum Outcomes {
    /// The outcome of a [`Work::One`].
    One(Answered),
    /// The outcomes of a [`Work::Batch`].
    Batch(Vec<Answered>),
}

impl Outcomes {
    /// The outcome of a single call of `tool` (a batch's first).
    pub fn one(self, tool: &str) -> Answered {
        match self {
            Outcomes::One(o) => o,
            Outcomes::Batch(v) => v.into_iter().next().unwrap_or_else(|| {
                Err(failure(
                    FailureKind::Unavailable,
                    format!("tool {tool}: no outcome"),
                ))
            }),
        }
    }

    /// Every outcome, in order.
    pub fn into_vec(self) -> Vec<Answered> {
        match self {
            Outcomes::One(o) => vec![o],
            Outcomes::Batch(v) => v,
        }
    }
}

#[derive(Default)]
struct SlotState {
    /// The argument, on the wire, until a pool thread takes the job.
    arg: Option<Wire>,
    outcomes: Option<Outcomes>,
    abandoned: bool,
    canceller: Option<Py<PyAny>>,
    /// The session's thread sleeps on `done`: signal it.
    sleeping: bool,
}

/// One job: the function, its work, and where its outcome goes. A
/// session's thread reuses its slots ([`SPARE`]): a slot's function, work
/// and run are replaced only when they change, so a call moves no
/// reference count the pool's threads also move.
struct Slot {
    f: Arc<Py<PyAny>>,
    work: Work,
    run: Arc<RunState>,
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

/// How many slots a session's thread keeps for reuse: the pool thread
/// may still hold the last call's slot for a moment after giving its
/// outcome, and then the one before is free.
const SPARES: usize = 2;

thread_local! {
    /// This thread's slots, reused while no one else holds them
    /// (`Arc::get_mut`): no allocation a call, and the slot's lines stay
    /// where its last use left them.
    static SPARE: RefCell<(Vec<Arc<Slot>>, usize)> = const { RefCell::new((Vec::new(), 0)) };
}

/// A slot for `f` with `arg` and `work` of `run`: one of this thread's
/// spares no other thread holds, else a new one (kept as a spare, in
/// place of the oldest when there are [`SPARES`]).
fn slot_for(f: &Arc<Py<PyAny>>, arg: Wire, work: Work, run: &Arc<RunState>) -> Arc<Slot> {
    SPARE.with_borrow_mut(|(spare, next)| {
        for slot in spare.iter_mut() {
            if let Some(s) = Arc::get_mut(slot) {
                if !Arc::ptr_eq(&s.f, f) {
                    s.f = f.clone();
                }
                if !Arc::ptr_eq(&s.run, run) {
                    s.run = run.clone();
                }
                if !s.work.same(&work) {
                    s.work = work;
                }
                *s.ready.get_mut() = false;
                let state = s.state.get_mut().unwrap_or_else(PoisonError::into_inner);
                *state = SlotState {
                    arg: Some(arg),
                    ..SlotState::default()
                };
                return slot.clone();
            }
        }
        let slot = Arc::new(Slot {
            f: f.clone(),
            work,
            run: run.clone(),
            state: Mutex::new(SlotState {
                arg: Some(arg),
                ..SlotState::default()
            }),
            done: Condvar::new(),
            ready: AtomicBool::new(false),
        });
        if spare.len() < SPARES {
            spare.push(slot.clone());
        } else {
            spare[*next] = slot.clone();
            *next = (*next + 1) % SPARES;
        }
        slot
    })
}

/// The jobs not yet taken, and the pool's threads.
pub(crate) struct Queue {
    /// The oldest job, when it is the only one (no second line to touch).
    first: Option<Arc<Slot>>,
    /// The jobs after `first` (all of them while `first` is empty).
    rest: VecDeque<Arc<Slot>>,
    /// Threads waiting in `next_job` (spinning or sleeping).
    idle: u32,
    /// Of those, the threads sleeping on [`QUEUED`].
    sleeping: u32,
}

impl Queue {
    fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }

    fn push(&mut self, slot: Arc<Slot>) {
        if self.first.is_none() && self.rest.is_empty() {
            self.first = Some(slot);
        } else {
            self.rest.push_back(slot);
        }
    }

    fn pop(&mut self) -> Option<Arc<Slot>> {
        self.first.take().or_else(|| self.rest.pop_front())
    }
}

/// The queue and the counts read without its lock, on one cache line: a
/// call's hand-off moves this line to the pool's thread and back, not one
/// line per count.
#[repr(align(64))]
struct Hub {
    queue: Mutex<Queue>,
    /// `queue.len()`, read without the lock while spinning.
    pending: AtomicU32,
    /// Threads on their way to `next_job`: started and not yet in it, or
    /// back from a job (its outcome given). A submitter counts them with
    /// the idle ones: without them, a job queued the moment a thread gave
    /// its outcome started a second thread, and on a loaded machine the
    /// two then took turns spinning for jobs. Raised under the queue's
    /// lock or before the outcome is published; lowered under the lock.
    coming: AtomicU32,
}

static HUB: Hub = Hub {
    queue: Mutex::new(Queue {
        first: None,
        rest: VecDeque::new(),
        idle: 0,
        sleeping: 0,
    }),
    pending: AtomicU32::new(0),
    coming: AtomicU32::new(0),
};
// One cache line, as its note says.
const _: () = assert!(std::mem::size_of::<Hub>() == 64);
static QUEUED: Condvar = Condvar::new();

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

/// One thread fewer on its way (it has reached `next_job`).
fn arrived() {
    let _ = HUB
        .coming
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
}

fn queue() -> MutexGuard<'static, Queue> {
    HUB.queue.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The queue, locked by the thread about to `fork` ([`crate::fork`]).
pub(crate) fn hold_for_fork() -> MutexGuard<'static, Queue> {
    queue()
}

/// In a forked child, the queue held across the fork: the parent's jobs
/// and threads do not exist here. Its jobs are forgotten (their sessions'
/// threads are gone too), no thread is idle.
pub(crate) fn reset_in_child(mut q: MutexGuard<'static, Queue>) {
    std::mem::forget(q.first.take());
    std::mem::forget(std::mem::take(&mut q.rest));
    q.idle = 0;
    q.sleeping = 0;
    HUB.pending.store(0, Ordering::Release);
    HUB.coming.store(0, Ordering::Release);
}

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
    fn done(&mut self, result: &Bound<'_, PyAny>) -> Option<Py<PyAny>> {
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
            None => wait_for_job(py),
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

/// The job at the queue's head, if there is one not abandoned (taken by
/// a thread back from a call, before it waits).
fn take_queued() -> Option<(Arc<Slot>, Wire)> {
    let job = pop_live(&mut queue())?;
    arrived();
    Some(job)
}

/// The first job of `q` not abandoned, with its argument, the abandoned
/// ones before it dropped; `None` once the queue is empty.
fn pop_live(q: &mut Queue) -> Option<(Arc<Slot>, Wire)> {
    loop {
        let slot = q.pop()?;
        HUB.pending.store(q.len() as u32, Ordering::Release);
        let mut s = slot.lock();
        if !s.abandoned {
            let arg = s.arg.take().unwrap_or_default();
            drop(s);
            return Some((slot, arg));
        }
    }
}

/// Waits for the next job with the GIL released, spinning first, then
/// asleep on [`QUEUED`]; abandoned jobs are skipped.
fn wait_for_job(py: Python<'_>) -> (Arc<Slot>, Wire) {
    gate::detach(py, || {
        let mut q = queue();
        arrived();
        loop {
            if let Some(job) = pop_live(&mut q) {
                return job;
            }
            // Idle (a submitter counts on this thread), spinning first.
            q.idle += 1;
            drop(q);
            FOR_JOBS.spin(|| HUB.pending.load(Ordering::Acquire) > 0);
            q = queue();
            if q.len() == 0 {
                q.sleeping += 1;
                q = QUEUED.wait(q).unwrap_or_else(PoisonError::into_inner);
                q.sleeping -= 1;
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
