//! Per-session cancellation: a token the front end (a signal handler, an
//! API request, a test on another thread) trips, and that the interpreter
//! and the executors watch.
//!
//! ```text
//! Cancel::cancel() ──▶ flag set ──▶ interpreter: RunError `cancelled` at the next
//!                  │                 clock check (every 1,024 steps, before each call)
//!                  ├──▶ hooks run once (an executor host kills its running tools)
//!                  └──▶ waiters woken (a call waiting on a tool returns `Unavailable`)
//! ```
//!
//! A token is cheap to clone; clones share the state. Cancelling twice is
//! the same as once. Nothing here is process-wide: each session has its
//! own token (the CLI's signal handler trips the one session it runs).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

type Hook = Box<dyn Fn() -> usize + Send + Sync>;

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    abandoned: AtomicBool,
    interrupted: AtomicBool,
    /// The status the front end exits with after the interruption (0: none).
    exit_status: std::sync::atomic::AtomicU8,
    /// An executor host records the calls it hands to their tools.
    tracks_starts: AtomicBool,
    /// The idempotency keys of the calls handed to their tools.
    started: Mutex<std::collections::HashSet<String>>,
    /// A session records its interruption and will settle.
    settles: AtomicBool,
    settled: AtomicBool,
    settled_notify: tokio::sync::Notify,
    reason: Mutex<Option<String>>,
    hooks: Mutex<Vec<Hook>>,
    notify: tokio::sync::Notify,
}

/// A cancellation token shared by a session and whoever may stop it.
#[derive(Clone, Default)]
pub struct Cancel(Arc<Inner>);

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancel")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl Cancel {
    /// A token that has not been cancelled.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Cancels: the flag is set, every hook runs (once, on this thread),
    /// then every waiter wakes. Returns the sum of what the hooks returned
    /// (for an executor host: the tools it stopped). `reason` is kept for
    /// the run's error message (the first reason wins).
    pub fn cancel(&self, reason: impl Into<String>) -> usize {
        {
            let mut r = self.0.reason.lock().unwrap_or_else(PoisonError::into_inner);
            if r.is_none() {
                *r = Some(reason.into());
            }
        }
        // The flag first, so that a call the hooks end is seen as cancelled
        // by the interpreter; then the hooks, which count (and kill) what is
        // running; the waiters last, so none drops its call before it is
        // counted.
        self.0.cancelled.store(true, Ordering::SeqCst);
        let stopped = {
            let hooks = self.0.hooks.lock().unwrap_or_else(PoisonError::into_inner);
            hooks.iter().map(|h| h()).sum()
        };
        self.0.notify.notify_waiters();
        stopped
    }

    /// Cancels and abandons: as [`Cancel::cancel`], and the session records
    /// nothing more (not the outcomes of the calls it stops, not
    /// `session_ended`), so its log ends as a killed process would have
    /// left it and can be resumed. For a front end that is about to exit
    /// (a signal) or a server shutting down.
    pub fn abandon(&self, reason: impl Into<String>) -> usize {
        self.0.abandoned.store(true, Ordering::SeqCst);
        self.cancel(reason)
    }

    /// Interrupts: as [`Cancel::abandon`] (the running tools stopped, no
    /// outcome recorded, the log resumable), except that the session records
    /// one last event, `session_interrupted`, saying why it ended and which
    /// calls it stopped, then [settles](Cancel::settle). For a front end
    /// stopped by a signal, which waits for [`Cancel::settled`] before it
    /// exits.
    pub fn interrupt(&self, reason: impl Into<String>) -> usize {
        self.0.interrupted.store(true, Ordering::SeqCst);
        self.abandon(reason)
    }

    /// [`Cancel::interrupt`], for a front end that then exits with
    /// `status` (128 + the signal's number): whichever of its threads ends
    /// the process, once the session has settled, exits with it
    /// ([`Cancel::exit_status`]).
    pub fn interrupt_exiting(&self, reason: impl Into<String>, status: u8) -> usize {
        // Before the interruption, so that whoever sees the session
        // interrupted sees the status too.
        self.0.exit_status.store(status, Ordering::SeqCst);
        self.interrupt(reason)
    }

    /// The status given to [`Cancel::interrupt_exiting`], if it was called.
    pub fn exit_status(&self) -> Option<u8> {
        match self.0.exit_status.load(Ordering::SeqCst) {
            0 => None,
            status => Some(status),
        }
    }

    /// Whether [`Cancel::interrupt`] was called.
    pub fn is_interrupted(&self) -> bool {
        self.0.interrupted.load(Ordering::SeqCst)
    }

    /// Says that the calls handed to their tools will be noted
    /// ([`Cancel::note_started`]): an executor host watching this token does.
    pub fn track_starts(&self) {
        self.0.tracks_starts.store(true, Ordering::SeqCst);
    }

    /// Notes that the call with idempotency `key` was handed to its tool (a
    /// process spawned, a request sent): from here it may act.
    pub fn note_started(&self, key: &str) {
        if self.0.tracks_starts.load(Ordering::SeqCst) {
            self.0
                .started
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key.to_string());
        }
    }

    /// Whether the call with idempotency `key` may have reached its tool:
    /// `true` when it was noted, and whenever starts are not tracked (then
    /// nothing is known, and every call may have started).
    pub fn may_have_started(&self, key: &str) -> bool {
        !self.0.tracks_starts.load(Ordering::SeqCst)
            || self
                .0
                .started
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(key)
    }

    /// The session has recorded all it will: a front end waiting in
    /// [`Cancel::settled`] may exit now.
    pub fn settle(&self) {
        self.0.settled.store(true, Ordering::SeqCst);
        self.0.settled_notify.notify_waiters();
    }

    /// Says that a session watching this token records its interruption
    /// and will [settle](Cancel::settle) (a session does once its log is
    /// open): until then, [`Cancel::settled`] has nothing to wait for.
    pub fn will_settle(&self) {
        self.0.settles.store(true, Ordering::SeqCst);
    }

    /// Resolves once [`Cancel::settle`] was called, or at once when no
    /// session said it [will settle](Cancel::will_settle) (a front end
    /// calling tools without a session: nothing more to record).
    pub async fn settled(&self) {
        if !self.0.settles.load(Ordering::SeqCst) {
            return;
        }
        loop {
            let notified = self.0.settled_notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.0.settled.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }

    /// Whether [`Cancel::abandon`] was called.
    pub fn is_abandoned(&self) -> bool {
        self.0.abandoned.load(Ordering::SeqCst)
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// Why it was cancelled (`None`: it was not).
    pub fn reason(&self) -> Option<String> {
        self.0
            .reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Runs `hook` when the token is cancelled (at once, if it already
    /// is). A hook returns a count for [`Cancel::cancel`]'s caller.
    pub fn on_cancel(&self, hook: impl Fn() -> usize + Send + Sync + 'static) {
        let mut hooks = self.0.hooks.lock().unwrap_or_else(PoisonError::into_inner);
        if self.is_cancelled() {
            hook();
        }
        hooks.push(Box::new(hook));
    }

    /// Resolves once the token is cancelled (at once if it already is).
    pub async fn cancelled(&self) {
        loop {
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cancel;

    #[test]
    fn hooks_run_once_and_clones_share_the_flag() {
        let c = Cancel::new();
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let s = seen.clone();
        c.on_cancel(move || {
            s.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            2
        });
        let other = c.clone();
        assert!(!other.is_cancelled());
        assert_eq!(c.cancel("stop"), 2);
        assert!(other.is_cancelled());
        assert_eq!(other.reason().as_deref(), Some("stop"));
        assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
