//! The writer thread of a database store (SQLite, PostgreSQL): the
//! requests its sinks and methods queue, and group commit.
//!
//! ```text
//! sinks, create_session, set_status ──Request──▶ queue (mpsc)
//! writer: take one request, drain the queue (up to MAX_BATCH); while no
//!   request of the batch has a waiter, wait up to GATHER for one, then
//!   Transact::apply(batch): one transaction (the database's own code)
//!   ─▶ release the claims of the batch's dropped sinks
//!   ─▶ Transact::after_batch (SQLite: kick the checkpointer)
//!   ─▶ hand the batch to the answering thread, take the next one
//! answering thread (lt-store-answer), batch after batch in commit order:
//!   broadcast Committed {session, seq, line} ─▶ answer every waiter
//!   ─▶ observer(took, events)
//! ```
//!
//! Why a thread for the answers: waking a hundred waiting session threads
//! is a futex call each (a fifth of the writer's time under load, in
//! `perf`); on its own thread the writer gathers and writes the next batch
//! meanwhile, so a commit is not lengthened by the previous one's wake-ups.
//!
//! Why GATHER: a `Buffer` event (an outcome, say) has nobody waiting for
//! it, and its session's next `Commit` event (the next call's `scheduled`)
//! is usually microseconds behind it. Committing the outcome alone would
//! cost an fsync nobody asked for; waiting for the next one puts both in
//! one transaction (PostgreSQL's `commit_delay` does the same for
//! concurrent transactions). A batch with a waiter never waits.
//!
//! Invariant: nothing is answered `Ok` before the transaction holding it
//! has committed; when the commit fails every request of the batch is
//! answered with the error. A request's own failure (a broken chain, a
//! taken id) fails that request alone and writes nothing for it.

use super::claim::Claim;
use super::shared::Shared;
use super::{CommitObserver, Committed, Created, NewSession, SessionStatus};
use crate::log::StoreError;
use std::io;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// At most this many requests per transaction (bounds a commit's latency).
const MAX_BATCH: usize = 4096;

/// How long a batch nobody waits for waits for a request somebody does
/// (see the module note).
const GATHER: Duration = Duration::from_millis(2);

/// Where one answer goes (a channel of one, per request).
pub type Reply<T> = SyncSender<T>;

/// What a sink hands the writer: one event, numbered, chained and hashed.
pub struct Append {
    /// The session.
    pub session: String,
    /// The event's `seq`.
    pub seq: u64,
    /// Its `prev`.
    pub prev: String,
    /// Its `hash`.
    pub hash: String,
    /// Its line (`docs/log-format.md`, no `\n`).
    pub line: String,
    /// The tool a `proposed` event calls (`None` for any other event): the
    /// writer (SQLite and PostgreSQL) records it in `session_tools` with
    /// the event.
    pub tool: Option<String>,
    /// The lease epoch it is written under (0 without leases).
    pub epoch: i64,
    /// For a `Commit` event: told once the transaction holding it
    /// committed (or why not). `None` for a `Buffer` event.
    pub reply: Option<Reply<Result<(), String>>>,
    /// Where the failure of a `Buffer` event is left for its sink.
    pub failed: Arc<Mutex<Option<String>>>,
}

/// A request to the writer thread.
pub enum Request {
    /// Append one event to a session's log.
    Append(Append),
    /// Record a new session ([`super::ServerStore::create_session`]).
    CreateSession {
        new: NewSession,
        request: String,
        reply: CreateReply,
    },
    /// Let a dropped sink's claim go once everything before it committed.
    Release(Claim),
    /// Set a session's status ([`super::ServerStore::set_status`]).
    SetStatus {
        id: String,
        status: SessionStatus,
        output: Option<String>,
        calls: i64,
        at_ms: i64,
        /// The lease epoch this worker holds the session under (`None`:
        /// no lease, nothing to check).
        epoch: Option<i64>,
        reply: StatusReply,
    },
    /// Answered once everything queued before it is committed.
    Flush(Reply<()>),
    /// Stops the thread, answering nothing (tests of a dead writer).
    #[cfg(test)]
    Stop,
}

/// Where the answer to a `CreateSession` goes.
pub enum CreateReply {
    /// A caller blocked on it.
    Wait(Reply<Result<Created, StoreError>>),
    /// Called after the commit; nobody is blocked (the batch may gather).
    Then(Box<dyn FnOnce(Result<Created, StoreError>) + Send>),
}

impl CreateReply {
    pub fn send(self, r: Result<Created, StoreError>) {
        match self {
            CreateReply::Wait(reply) => {
                let _ = reply.send(r);
            }
            CreateReply::Then(done) => done(r),
        }
    }
}

/// Where the answer to a `SetStatus` goes.
pub enum StatusReply {
    /// A caller blocked on it.
    Wait(Reply<Result<(), StoreError>>),
    /// Called on the answering thread after the commit (nobody blocks, but
    /// the batch commits at once all the same: a session's end is waited
    /// for by its clients).
    Then(Box<dyn FnOnce(Result<(), StoreError>) + Send>),
}

impl StatusReply {
    pub fn send(self, r: Result<(), StoreError>) {
        match self {
            StatusReply::Wait(reply) => {
                let _ = reply.send(r);
            }
            StatusReply::Then(done) => done(r),
        }
    }
}

impl Request {
    /// Whether somebody is blocked until this request's batch commits.
    fn awaited(&self) -> bool {
        match self {
            Request::Append(a) => a.reply.is_some(),
            Request::CreateSession { reply, .. } => matches!(reply, CreateReply::Wait(_)),
            Request::SetStatus { .. } | Request::Flush(_) => true,
            Request::Release(_) => false,
            #[cfg(test)]
            Request::Stop => true,
        }
    }
}

/// What became of one request (before the commit).
pub enum Outcome {
    Appended(Result<(), String>),
    Created(Result<Created, StoreError>),
    Status(Result<(), StoreError>),
    Flushed,
}

/// A database's side of the writer: one batch, one transaction.
pub trait Transact {
    /// The database's error.
    type Error: std::fmt::Display;

    /// Runs `batch` in one transaction and commits it: one [`Outcome`]
    /// per request, in order. `Err`: the transaction failed as a whole
    /// (nothing of it is committed).
    fn apply(&mut self, batch: &[Request]) -> Result<Vec<Outcome>, Self::Error>;

    /// A dropped sink's claim of `session` goes (after the commit holding
    /// its last events).
    fn released(&mut self, _session: &str) {}

    /// After each batch, committed or not.
    fn after_batch(&mut self) {}
}

/// A written batch on its way to the answers: what became of each request,
/// or why the transaction failed as a whole, and how long it took.
struct Written {
    batch: Vec<Request>,
    outcomes: Result<Vec<Outcome>, String>,
    took: Duration,
}

/// Runs the writer until every sender is gone (the store and its sinks);
/// returns once every batch is answered.
pub fn run<T: Transact>(mut db: T, shared: &Arc<Shared>, requests: Receiver<Request>) {
    let (written, answers) = std::sync::mpsc::channel::<Written>();
    let answering = {
        let shared = Arc::clone(shared);
        std::thread::Builder::new()
            .name("lt-store-answer".into())
            .stack_size(crate::serve::DEEP_STACK_BYTES)
            .spawn(move || {
                for w in answers {
                    answer(&shared, w);
                }
            })
    };
    // Without the thread (it could not be spawned) the writer answers.
    let (written, answering) = match answering {
        Ok(handle) => (Some(written), Some(handle)),
        Err(_) => (None, None),
    };
    writer_loop(&mut db, shared, &requests, written.as_ref());
    drop(written);
    if let Some(handle) = answering {
        let _ = handle.join();
    }
}

/// Takes batches from `requests` and writes them until the queue is gone.
fn writer_loop<T: Transact>(
    db: &mut T,
    shared: &Shared,
    requests: &Receiver<Request>,
    written: Option<&std::sync::mpsc::Sender<Written>>,
) {
    while let Ok(first) = requests.recv() {
        let mut batch = vec![first];
        drain(requests, &mut batch);
        let until = Instant::now() + GATHER;
        while batch.len() < MAX_BATCH && !batch.iter().any(Request::awaited) {
            let left = until.saturating_duration_since(Instant::now());
            match requests.recv_timeout(left) {
                Ok(r) => {
                    batch.push(r);
                    drain(requests, &mut batch);
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        #[cfg(test)]
        if batch.iter().any(|r| matches!(r, Request::Stop)) {
            return;
        }
        let w = write_batch(db, shared, batch);
        db.after_batch();
        match written {
            Some(to_answer) => {
                if let Err(std::sync::mpsc::SendError(w)) = to_answer.send(w) {
                    answer(shared, w);
                }
            }
            None => answer(shared, w),
        }
    }
}

/// Moves what is queued into `batch`, up to [`MAX_BATCH`].
fn drain(requests: &Receiver<Request>, batch: &mut Vec<Request>) {
    while batch.len() < MAX_BATCH {
        match requests.try_recv() {
            Ok(r) => batch.push(r),
            Err(_) => break,
        }
    }
}

/// Writes `batch` in one transaction and lets the claims of its dropped
/// sinks go (the writer's own state); the answers are [`answer`]'s.
fn write_batch<T: Transact>(db: &mut T, shared: &Shared, mut batch: Vec<Request>) -> Written {
    let started = Instant::now();
    let result = db.apply(&batch);
    let took = started.elapsed();
    let outcomes = match result {
        Ok(outcomes) => outcomes,
        Err(e) => {
            let why = format!("the store {} could not commit: {e}", shared.name);
            return Written {
                batch,
                outcomes: Err(why),
                took,
            };
        }
    };
    // After the commit that holds each dropped sink's last events.
    for req in &mut batch {
        if let Request::Release(claim) = req {
            db.released(&claim.session);
        }
    }
    Written {
        batch,
        outcomes: Ok(outcomes),
        took,
    }
}

/// Announces a written batch's events and answers its requests (every one
/// with the error when the transaction failed); then tells the observer.
fn answer(shared: &Shared, w: Written) {
    let Written {
        batch,
        outcomes,
        took,
    } = w;
    let outcomes = match outcomes {
        Ok(outcomes) => outcomes,
        Err(why) => return fail_all(batch, &why),
    };
    // Announced first: once an append returns, its notice is out.
    let mut events = 0;
    for (req, outcome) in batch.iter().zip(&outcomes) {
        if let (Request::Append(a), Outcome::Appended(Ok(()))) = (req, outcome) {
            events += 1;
            // No receiver is not an error: nobody is following.
            let _ = shared.commits.send(Committed {
                session: a.session.clone(),
                seq: a.seq,
                line: Arc::from(a.line.as_str()),
            });
        }
    }
    for (req, outcome) in batch.into_iter().zip(outcomes) {
        match (req, outcome) {
            (Request::Append(a), Outcome::Appended(r)) => answer_append(a.reply, &a.failed, r),
            (Request::CreateSession { reply, .. }, Outcome::Created(r)) => reply.send(r),
            (Request::SetStatus { reply, .. }, Outcome::Status(r)) => reply.send(r),
            (Request::Flush(reply), Outcome::Flushed) => {
                let _ = reply.send(());
            }
            // Released by the writer (`write_batch`); the claim goes now.
            (Request::Release(claim), _) => drop(claim),
            // `apply` answers each request with its own kind of outcome.
            _ => {}
        }
    }
    let observer = shared
        .observer
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(observe) = observer.as_ref() {
        // A panicking observer must not take the writer down with it.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| observe(took, events)));
    }
}

/// Answers every request of a batch that did not commit with `why`.
fn fail_all(batch: Vec<Request>, why: &str) {
    for req in batch {
        match req {
            Request::Append(a) => answer_append(a.reply, &a.failed, Err(why.to_string())),
            Request::CreateSession { reply, .. } => {
                reply.send(Err(StoreError::Io(io::Error::other(why))));
            }
            Request::Release(claim) => drop(claim),
            Request::SetStatus { reply, .. } => {
                reply.send(Err(StoreError::Io(io::Error::other(why))));
            }
            Request::Flush(reply) => {
                let _ = reply.send(());
            }
            #[cfg(test)]
            Request::Stop => {}
        }
    }
}

/// Tells an append's sink its outcome: the waiter of a `Commit` event, the
/// failure slot of a `Buffer` one (read by the sink's next append).
fn answer_append(
    reply: Option<Reply<Result<(), String>>>,
    failed: &Mutex<Option<String>>,
    r: Result<(), String>,
) {
    match reply {
        Some(reply) => {
            let _ = reply.send(r);
        }
        None => {
            if let Err(why) = r {
                let mut slot = failed.lock().unwrap_or_else(PoisonError::into_inner);
                slot.get_or_insert(why);
            }
        }
    }
}

/// The message of an append refused because the log does not end where
/// the sink believes (`held`: the events the log holds).
pub fn extended_by_another(session: &str, held: u64, seq: u64) -> String {
    format!(
        "the log of session {session} was extended by another writer (it holds {held} events; this one's event has seq {seq}); nothing more is written by this one"
    )
}

/// `n` as a database integer (saturating: counts never get there).
pub fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The writer's queue as a store's methods use it.
pub struct Queue<'a> {
    pub shared: &'a Shared,
    pub requests: Option<&'a std::sync::mpsc::Sender<Request>>,
}

impl Queue<'_> {
    fn gone(&self) -> StoreError {
        StoreError::Io(io::Error::other(self.shared.writer_gone()))
    }

    /// Sends a request to the writer thread and waits for its answer.
    pub fn call<T>(
        &self,
        request: impl FnOnce(Reply<Result<T, StoreError>>) -> Request,
    ) -> Result<T, StoreError> {
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        let requests = self.requests.ok_or_else(|| self.gone())?;
        requests.send(request(reply)).map_err(|_| self.gone())?;
        answer.recv().map_err(|_| self.gone())?
    }

    /// [`super::ServerStore::create_session`].
    pub fn create_session(&self, s: &NewSession) -> Result<Created, StoreError> {
        let request = s.request.to_string();
        let new = s.clone();
        self.call(|reply| Request::CreateSession {
            new,
            request,
            reply: CreateReply::Wait(reply),
        })
    }

    /// [`super::ServerStore::create_session_then`].
    pub fn create_session_then(&self, s: &NewSession, done: super::CreatedThen) {
        let request = Request::CreateSession {
            new: s.clone(),
            request: s.request.to_string(),
            reply: CreateReply::Then(done),
        };
        let Some(requests) = self.requests else {
            if let Request::CreateSession { reply, .. } = request {
                reply.send(Err(self.gone()));
            }
            return;
        };
        if let Err(std::sync::mpsc::SendError(Request::CreateSession { reply, .. })) =
            requests.send(request)
        {
            reply.send(Err(self.gone()));
        }
    }

    /// [`super::ServerStore::flush`].
    pub fn flush(&self) {
        if let Some(requests) = self.requests {
            let (reply, answer) = std::sync::mpsc::sync_channel(1);
            if requests.send(Request::Flush(reply)).is_ok() {
                let _ = answer.recv();
            }
        }
    }

    /// [`super::ServerStore::set_status`]; `Ok`: the `updated_ms` recorded.
    pub fn set_status(
        &self,
        id: &str,
        status: SessionStatus,
        output: Option<&serde_json::Value>,
        calls: u64,
    ) -> Result<i64, StoreError> {
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        self.set_status_then(
            id,
            status,
            output,
            calls,
            Box::new(move |r| {
                let _ = reply.send(r);
            }),
        );
        answer.recv().map_err(|_| self.gone())?
    }

    /// [`super::ServerStore::set_status_then`]: `done` gets what
    /// [`Queue::set_status`] returns, on the answering thread (on the
    /// caller's when the writer is gone or the lease was lost).
    pub fn set_status_then(
        &self,
        id: &str,
        status: SessionStatus,
        output: Option<&serde_json::Value>,
        calls: u64,
        done: super::StatusThen,
    ) {
        let id = id.to_string();
        let output = output.map(serde_json::Value::to_string);
        let at_ms = now_ms();
        if self.shared.lost().contains(&id) {
            return done(Err(StoreError::Conflict(format!(
                "session {id} is no longer this worker's (its lease was taken over); its status is not set here"
            ))));
        }
        let epoch = self.shared.leases().get(&id).copied();
        let reply = StatusReply::Then(Box::new(move |r: Result<(), StoreError>| {
            done(r.map(|()| at_ms));
        }));
        let request = Request::SetStatus {
            id,
            status,
            output,
            calls: to_i64(calls),
            at_ms,
            epoch,
            reply,
        };
        let unsent = match self.requests {
            Some(requests) => match requests.send(request) {
                Ok(()) => return,
                Err(std::sync::mpsc::SendError(request)) => request,
            },
            None => request,
        };
        // The writer is gone: answered here, on the caller's thread.
        if let Request::SetStatus { reply, .. } = unsent {
            reply.send(Err(self.gone()));
        }
    }

    /// [`super::ServerStore::observe_commits`].
    pub fn observe_commits(&self, observer: CommitObserver) {
        *self
            .shared
            .observer
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(observer);
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
