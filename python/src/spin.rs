//! How a thread waits for the other side of a hand-off ([`crate::worker`]):
//! a busy spin on its core while that pays off, then yielding the core
//! for a while, before the caller sleeps on its condition variable.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long a thread keeps looking (yielding its core between looks)
/// before it sleeps, waiting for a job or an outcome: a call into a quick
/// function then costs no wake-up of a sleeping thread (two per call).
/// Yielding, not spinning: on a loaded machine a spinning thread takes the
/// core the other side needs (a busy spin made a call 170–220 µs under a
/// load of 12 on two cores; yielding, 12–14 µs).
pub const SPIN: Duration = Duration::from_micros(200);

/// How long a thread first spins on its core without yielding, unless
/// the last spins missed ([`MAX_SKIP`]): with both threads on cores
/// of their own, an answer is seen a few hundred nanoseconds after it is
/// given, where a `sched_yield` costs a system call a look (a call went
/// from 5.3–6.3 µs to 4.0 µs on an idle machine).
pub const BUSY: Duration = Duration::from_micros(20);

/// The most waits that skip the busy spin after ones that found nothing:
/// the other side was not running (a loaded machine) or is slow (a tool
/// doing real work); then a busy spin only takes a core from someone, and
/// the waits yield at once. Each miss in a row doubles the waits skipped
/// (1, 2, 4, … up to this), a hit starts again from none: a lone miss (a
/// new run's first call, a garbage collection) costs one wait.
const MAX_SKIP: u32 = 64;

/// Whether the waits of one side (for jobs, for outcomes) spin busily:
/// the waits still to skip the busy spin, and how many the last miss made
/// skip.
pub struct Spinner {
    skip: AtomicU32,
    level: AtomicU32,
}

impl Spinner {
    /// A spinner whose waits start with the busy spin.
    pub const fn new() -> Spinner {
        Spinner {
            skip: AtomicU32::new(0),
            level: AtomicU32::new(0),
        }
    }

    /// Looks until `done()`: a busy spin of [`BUSY`] unless the last ones
    /// missed, then yielding until [`SPIN`] has passed. The caller looks
    /// again under its lock, and sleeps if it is still not done.
    pub fn spin(&self, done: impl Fn() -> bool) {
        if self.busy_for(BUSY, &done) {
            return;
        }
        let until = Instant::now() + SPIN;
        while Instant::now() < until {
            std::thread::yield_now();
            if done() {
                return;
            }
        }
    }

    /// Spins on the core only (no yielding), for at most `limit`, unless
    /// the last such spins missed ([`MAX_SKIP`]): whether `done()`. The
    /// busy spin of [`Spinner::spin`], and the pool's look for a job with
    /// the GIL kept.
    pub fn busy_for(&self, limit: Duration, done: &impl Fn() -> bool) -> bool {
        if done() {
            return true;
        }
        let skip = self.skip.load(Ordering::Relaxed);
        if skip > 0 {
            self.skip.store(skip - 1, Ordering::Relaxed);
            return false;
        }
        if busy_within(limit, done) {
            self.level.store(0, Ordering::Relaxed);
            return true;
        }
        let level = (self.level.load(Ordering::Relaxed) * 2).clamp(1, MAX_SKIP);
        self.level.store(level, Ordering::Relaxed);
        self.skip.store(level, Ordering::Relaxed);
        false
    }
}

/// Spins on the core (no system call) until `done()` or `limit` has
/// passed: whether it is done.
fn busy_within(limit: Duration, done: &impl Fn() -> bool) -> bool {
    let until = Instant::now() + limit;
    loop {
        for _ in 0..64 {
            if done() {
                return true;
            }
            std::hint::spin_loop();
        }
        if Instant::now() >= until {
            return false;
        }
    }
}
