//! The session threads: reusable threads with a session's stack.
//!
//! ```text
//! spawn(job) ─▶ queue ─▶ a waiting thread takes it (notify_one)
//!                     └▶ none free: a new thread (SESSION_STACK_BYTES) takes it
//! thread: run job ─▶ wait up to KEEP_ALIVE for the next ─▶ none: exit
//! ```
//!
//! Why not a thread per session: creating one maps a 256 MiB stack and
//! tears it down after (a tenth of the server's CPU at 64 clients), and
//! every new thread parses the library's signatures and checks its lt
//! definitions afresh (they are cached per thread). A session blocks its
//! thread for as long as it runs (waiting for a client or an approval
//! included), so the pool has no upper bound of its own: the hub's
//! `max_sessions` is the bound.
//!
//! Invariant: `idle` is the number of threads waiting in `worker`; a job
//! is only queued without a new thread when more threads wait than jobs
//! are queued, so no job waits for a busy thread. A panicking job ends
//! its job only; the thread goes on.

use crate::control::session::SESSION_STACK_BYTES;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// How long a thread without a job waits for one before it ends.
const KEEP_ALIVE: Duration = Duration::from_secs(30);

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The pool (cheap to share: clone the `Arc` it lives in).
pub struct SessionThreads {
    name: String,
    keep_alive: Duration,
    state: Mutex<State>,
    work: Condvar,
}

#[derive(Default)]
struct State {
    /// Jobs not taken yet, with their numbers.
    queue: VecDeque<(u64, Job)>,
    /// Threads waiting for a job.
    idle: usize,
    /// The next job's number.
    next: u64,
}

impl SessionThreads {
    /// A pool whose threads are named `name`.
    pub fn new(name: &str) -> Arc<SessionThreads> {
        SessionThreads::with_keep_alive(name, KEEP_ALIVE)
    }

    fn with_keep_alive(name: &str, keep_alive: Duration) -> Arc<SessionThreads> {
        Arc::new(SessionThreads {
            name: name.to_string(),
            keep_alive,
            state: Mutex::new(State::default()),
            work: Condvar::new(),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `job` on a thread of the pool. Errors: no thread was free and
    /// a new one could not be started; `job` then never runs.
    pub fn spawn(self: &Arc<Self>, job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        let mut st = self.state();
        let number = st.next;
        st.next += 1;
        st.queue.push_back((number, Box::new(job)));
        if st.idle >= st.queue.len() {
            self.work.notify_one();
            return Ok(());
        }
        drop(st);
        let pool = Arc::clone(self);
        let started = std::thread::Builder::new()
            .name(self.name.clone())
            .stack_size(SESSION_STACK_BYTES)
            .spawn(move || worker(&pool));
        match started {
            Ok(_) => Ok(()),
            Err(e) => {
                // Taken back, unless a thread already took it.
                let mut st = self.state();
                match st.queue.iter().position(|(n, _)| *n == number) {
                    Some(at) => {
                        st.queue.remove(at);
                        Err(e)
                    }
                    None => Ok(()),
                }
            }
        }
    }

    /// Threads waiting for a job (tests).
    #[cfg(test)]
    fn idle(&self) -> usize {
        self.state().idle
    }
}

/// One thread: jobs until none comes for `keep_alive`.
fn worker(pool: &SessionThreads) {
    let mut st = pool.state();
    loop {
        if let Some((_, job)) = st.queue.pop_front() {
            drop(st);
            // A session's panic is its own: the thread takes the next job.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            st = pool.state();
            continue;
        }
        st.idle += 1;
        let (guard, waited) = pool
            .work
            .wait_timeout(st, pool.keep_alive)
            .unwrap_or_else(PoisonError::into_inner);
        st = guard;
        st.idle -= 1;
        if waited.timed_out() && st.queue.is_empty() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::mpsc;

    fn name() -> String {
        format!("{:?}", std::thread::current().id())
    }

    #[test]
    fn threads_are_reused_and_blocked_jobs_get_threads_of_their_own() {
        let pool = SessionThreads::with_keep_alive("t", Duration::from_secs(5));
        // One after another: one thread does them all.
        let (tx, rx) = mpsc::channel();
        let mut one = HashSet::new();
        for _ in 0..5 {
            let tx = tx.clone();
            pool.spawn(move || tx.send(name()).expect("send"))
                .expect("spawn");
            one.insert(rx.recv().expect("ran"));
            while pool.idle() == 0 {
                std::thread::yield_now();
            }
        }
        assert_eq!(one.len(), 1, "{one:?}");
        // Eight jobs that block until all eight run: none waits for another.
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let gate = Arc::new(Mutex::new(gate_rx));
        let (ran_tx, ran_rx) = mpsc::channel();
        for _ in 0..8 {
            let (gate, ran) = (Arc::clone(&gate), ran_tx.clone());
            pool.spawn(move || {
                ran.send(name()).expect("send");
                let _ = gate.lock().expect("gate").recv();
            })
            .expect("spawn");
        }
        let names: HashSet<String> = (0..8)
            .map(|_| {
                ran_rx
                    .recv_timeout(Duration::from_secs(10))
                    .expect("every job runs")
            })
            .collect();
        assert_eq!(names.len(), 8);
        drop(gate_tx);
        // A panic ends its job only.
        pool.spawn(|| panic!("a session's bug")).expect("spawn");
        pool.spawn(move || tx.send(name()).expect("send"))
            .expect("spawn");
        rx.recv_timeout(Duration::from_secs(10))
            .expect("still runs");
    }

    #[test]
    fn an_idle_thread_ends_after_its_keep_alive() {
        let pool = SessionThreads::with_keep_alive("t", Duration::from_millis(50));
        let (tx, rx) = mpsc::channel();
        pool.spawn(move || tx.send(()).expect("send"))
            .expect("spawn");
        rx.recv().expect("ran");
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while Arc::strong_count(&pool) > 1 {
            assert!(std::time::Instant::now() < deadline, "the thread stayed");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(pool.idle(), 0);
    }
}
