//! Where a job waits and where its outcome goes ([`crate::worker`]): a
//! job's [`Slot`] (its function, work, argument, outcome, and whether it
//! was abandoned), reused by the session's thread that made it, and the
//! queue of jobs not yet taken by a pool thread, on one cache line with
//! the counts read without its lock ([`Hub`]).

use crate::work::{Outcomes, RunState, Work};
use lt::runtime::wire::Wire;
use pyo3::prelude::*;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

#[derive(Default)]
pub(crate) struct SlotState {
    /// The argument, on the wire, until a pool thread takes the job.
    pub(crate) arg: Option<Wire>,
    pub(crate) outcomes: Option<Outcomes>,
    pub(crate) abandoned: bool,
    pub(crate) canceller: Option<Py<PyAny>>,
    /// The session's thread sleeps on `done`: signal it.
    pub(crate) sleeping: bool,
}

/// One job: the function, its work, and where its outcome goes. A
/// session's thread reuses its slots ([`SPARE`]): a slot's function, work
/// and run are replaced only when they change, so a call moves no
/// reference count the pool's threads also move.
pub(crate) struct Slot {
    pub(crate) f: Arc<Py<PyAny>>,
    pub(crate) work: Work,
    pub(crate) run: Arc<RunState>,
    pub(crate) state: Mutex<SlotState>,
    pub(crate) done: Condvar,
    /// The outcomes are in `state` (read without the lock while spinning).
    pub(crate) ready: AtomicBool,
}

impl SlotState {
    /// The state of a job just queued with `arg`.
    fn of(arg: Wire) -> SlotState {
        SlotState {
            arg: Some(arg),
            ..SlotState::default()
        }
    }
}

impl Slot {
    pub(crate) fn lock(&self) -> MutexGuard<'_, SlotState> {
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
pub(crate) fn slot_for(
    f: &Arc<Py<PyAny>>,
    arg: Wire,
    work: Work,
    run: &Arc<RunState>,
) -> Arc<Slot> {
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
                *s.state.get_mut().unwrap_or_else(PoisonError::into_inner) = SlotState::of(arg);
                return slot.clone();
            }
        }
        let slot = Arc::new(Slot {
            f: f.clone(),
            work,
            run: run.clone(),
            state: Mutex::new(SlotState::of(arg)),
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

/// Drops this thread's spare slots: a session's thread calls it when its
/// run is over, so that the functions and the run they hold are let go
/// before the run's report is sent (`lt.run` returns), not whenever the
/// thread ends.
pub(crate) fn release_spares() {
    SPARE.with_borrow_mut(|(spare, next)| {
        spare.clear();
        *next = 0;
    });
}

/// The jobs not yet taken, and the pool's threads.
pub(crate) struct Queue {
    /// The oldest job, when it is the only one (no second line to touch).
    first: Option<Arc<Slot>>,
    /// The jobs after `first` (all of them while `first` is empty).
    rest: VecDeque<Arc<Slot>>,
    /// Threads waiting in `next_job` (spinning or sleeping).
    pub(crate) idle: u32,
    /// Of those, the threads sleeping on [`QUEUED`].
    pub(crate) sleeping: u32,
}

impl Queue {
    pub(crate) fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }

    pub(crate) fn push(&mut self, slot: Arc<Slot>) {
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
pub(crate) struct Hub {
    queue: Mutex<Queue>,
    /// `queue.len()`, read without the lock while spinning.
    pub(crate) pending: AtomicU32,
    /// Threads on their way to `next_job`: started and not yet in it, or
    /// back from a job (its outcome given). A submitter counts them with
    /// the idle ones: without them, a job queued the moment a thread gave
    /// its outcome started a second thread, and on a loaded machine the
    /// two then took turns spinning for jobs. Raised under the queue's
    /// lock or before the outcome is published; lowered under the lock.
    pub(crate) coming: AtomicU32,
}

pub(crate) static HUB: Hub = Hub {
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
pub(crate) static QUEUED: Condvar = Condvar::new();

/// One thread fewer on its way (it has reached `next_job` in
/// [`crate::worker`]).
pub(crate) fn arrived() {
    let _ = HUB
        .coming
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
}

pub(crate) fn queue() -> MutexGuard<'static, Queue> {
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

/// The job at the queue's head, if there is one not abandoned (taken by
/// a thread back from a call, before it waits).
pub(crate) fn take_queued() -> Option<(Arc<Slot>, Wire)> {
    let job = pop_live(&mut queue())?;
    arrived();
    Some(job)
}

/// The first job of `q` not abandoned, with its argument, the abandoned
/// ones before it dropped; `None` once the queue is empty.
pub(crate) fn pop_live(q: &mut Queue) -> Option<(Arc<Slot>, Wire)> {
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
