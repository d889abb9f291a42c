//! The server's store: sessions' logs (an [`EventStore`], so the session
//! engine writes through it as through any store) and the table of
//! sessions the API lists (tenant, status, final output, idempotency key).
//!
//! ```text
//! ServerStore ── EventStore (create / load / reopen: the hash-chained log)
//!             ── create_session ──▶ Created::New | Created::Existing (Idempotency-Key)
//!             ── session / list_sessions (one tenant's, newest first, paged)
//!             ── set_status (running … ended, the final output)
//!             ── unfinished ──▶ sessions to resume after a restart
//!             ── events_after(id, seq) ──▶ committed log lines (SSE, GET …/log)
//!             ── subscribe ──▶ Committed {session, seq} as each event commits
//!             ── lease(hooks) ──▶ many workers on one database (PostgreSQL):
//!                claimed / lost sessions, deliveries from other workers
//!                (holds, let_go, deliver); SQLite: no leases, one server
//! implementations: SqliteStore (sqlite/, the default), PostgresStore
//!                  (postgres/): both write through one writer thread with
//!                  group commit (queue.rs), sinks (sink.rs) and the log
//!                  logic (logs.rs) in common
//! ```
//!
//! Invariant (as for every [`EventStore`]): an event whose kind
//! [`write_ahead`](crate::log::write_ahead) says `Commit` is durable (on
//! disk, fsynced) before its sink's `append` returns; `Buffer` events are
//! committed with it or before. One writer per session, enforced by the
//! store: `create` refuses a taken id, `reopen` refuses a session being
//! written, and an append must continue the chain the store holds (its
//! `prev` is the stored last hash, its `seq` the next number).

/// The [`ServerStore`] methods both database stores answer alike, in one
/// place: the log of a minted id, statuses, flushes and the commit observer
/// through the writer's queue (`queue.rs`), log pages through [`LogReads`]
/// (`logs.rs`), commits from the shared broadcast, the unfinished sessions
/// through `readable_records` (damaged rows left out, `damage.rs`).
/// Expands inside `impl ServerStore for T` where `T: LogReads` has an
/// inherent `queue()` returning a [`queue::Queue`], an inherent
/// `readable_records(filter, args)` and a `shared: Arc<Shared>` field;
/// `$dialect` names its SQL's [`list::Dialect`] (`SQLITE`, `POSTGRES`).
macro_rules! queued_store_methods {
    ($dialect:ident) => {
        fn create_minted(
            &self,
            id: &str,
        ) -> Result<Box<dyn $crate::log::EventSink + Send>, $crate::log::StoreError> {
            $crate::serve::store::logs::create_minted(self, id)
        }

        fn flush(&self) {
            self.queue().flush();
        }

        fn set_status(
            &self,
            id: &str,
            status: $crate::serve::store::SessionStatus,
            output: Option<&serde_json::Value>,
            calls: u64,
        ) -> Result<i64, $crate::log::StoreError> {
            self.queue().set_status(id, status, output, calls)
        }

        fn set_status_then(
            &self,
            id: &str,
            status: $crate::serve::store::SessionStatus,
            output: Option<&serde_json::Value>,
            calls: u64,
            done: $crate::serve::store::StatusThen,
        ) {
            self.queue()
                .set_status_then(id, status, output, calls, done);
        }

        fn events_after(
            &self,
            id: &str,
            after: Option<u64>,
        ) -> Result<Vec<String>, $crate::log::StoreError> {
            $crate::serve::store::logs::events_after(self, id, after)
        }

        fn events_page(
            &self,
            id: &str,
            after: Option<u64>,
            limit: usize,
        ) -> Result<Vec<String>, $crate::log::StoreError> {
            $crate::serve::store::logs::events_page(self, id, after, limit)
        }

        fn subscribe(&self) -> tokio::sync::broadcast::Receiver<$crate::serve::store::Committed> {
            self.shared.commits.subscribe()
        }

        fn observe_commits(&self, observer: $crate::serve::store::CommitObserver) {
            self.queue().observe_commits(observer);
        }

        fn unfinished(
            &self,
        ) -> Result<Vec<$crate::serve::store::SessionRecord>, $crate::log::StoreError> {
            self.readable_records(
                &$crate::serve::store::list::unfinished(&$crate::serve::store::list::$dialect),
                Vec::new(),
            )
        }
    };
}

mod claim;
mod damage;
mod list;
mod logs;
pub mod postgres;
mod queue;
mod shared;
mod sink;
pub mod sqlite;
#[cfg(test)]
mod tools_fixture;

use crate::log::{EventSink, EventStore, StoreError};
use serde_json::Value as Json;
use std::time::Duration;

/// A session's status, as the API names it (`docs/api.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SessionStatus {
    /// Running (or queued to resume after a restart).
    Running,
    /// Waiting for the client to report a client-venue call's outcome.
    WaitingClient,
    /// Waiting for an answer to an approval request (`approvals = "api"`).
    WaitingApproval,
    /// Ended with a value (`output` holds `lt run --json`'s object).
    Ended,
    /// Ended without a value: the run failed, the program was rejected,
    /// the session could not start.
    Failed,
    /// Cancelled through the API.
    Cancelled,
}

impl SessionStatus {
    /// Every status, in the API's order.
    pub const ALL: [SessionStatus; 6] = [
        SessionStatus::Running,
        SessionStatus::WaitingClient,
        SessionStatus::WaitingApproval,
        SessionStatus::Ended,
        SessionStatus::Failed,
        SessionStatus::Cancelled,
    ];

    /// The API's name: `running`, `waiting_client`, `waiting_approval`,
    /// `ended`, `failed`, `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Running => "running",
            SessionStatus::WaitingClient => "waiting_client",
            SessionStatus::WaitingApproval => "waiting_approval",
            SessionStatus::Ended => "ended",
            SessionStatus::Failed => "failed",
            SessionStatus::Cancelled => "cancelled",
        }
    }

    /// The status named `s` ([`SessionStatus::as_str`]).
    pub fn parse(s: &str) -> Option<SessionStatus> {
        SessionStatus::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Whether the session is over (nothing more will be appended).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            SessionStatus::Ended | SessionStatus::Failed | SessionStatus::Cancelled
        )
    }
}

/// A session to record, as the API accepted it.
#[derive(Clone, Debug)]
pub struct NewSession {
    /// Its id: 32 lowercase hex digits (the log's).
    pub id: String,
    /// The tenant it belongs to.
    pub tenant: String,
    /// The profile's name (in the tenant's configuration).
    pub profile: String,
    /// The request as accepted (`program` or `task`, the client's
    /// capabilities), kept to run it again after a restart.
    pub request: Json,
    /// The client's `Idempotency-Key` header, if any: unique per tenant.
    pub idempotency_key: Option<String>,
    /// When it was accepted: milliseconds since the Unix epoch.
    pub created_ms: i64,
}

/// A recorded session.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionRecord {
    /// Its id.
    pub id: String,
    /// Its tenant.
    pub tenant: String,
    /// Its profile's name.
    pub profile: String,
    /// Its status.
    pub status: SessionStatus,
    /// The request as accepted ([`NewSession::request`]).
    pub request: Json,
    /// The `Idempotency-Key` it was created with.
    pub idempotency_key: Option<String>,
    /// Accepted at (ms since the epoch).
    pub created_ms: i64,
    /// Status last changed at (ms since the epoch).
    pub updated_ms: i64,
    /// The final output once the session is over: `lt run --json`'s
    /// object (a value, a failure, a rejection).
    pub output: Option<Json>,
    /// Tool calls made so far (as last recorded with the status).
    pub calls: u64,
    /// Events committed to its log.
    pub events: u64,
}

impl SessionRecord {
    /// Whether it is a task session (`lt agent`'s loop, `serve/task.rs`):
    /// its request has a `task` where a program session's has a `program`.
    pub fn is_task(&self) -> bool {
        self.request.get("task").is_some()
    }
}

/// What [`ServerStore::set_status_then`] calls with the result: the
/// `updated_ms` recorded, or why not.
pub type StatusThen = Box<dyn FnOnce(Result<i64, StoreError>) + Send>;

/// What [`ServerStore::create_session`] did.
#[derive(Clone, Debug, PartialEq)]
pub enum Created {
    /// Recorded as new (status `running`, no log yet).
    New,
    /// The tenant already has a session with this idempotency key: that
    /// one, unchanged.
    Existing(SessionRecord),
}

/// One page of a tenant's sessions, newest first, with the filters the
/// API and the console offer (each `None` lets everything through).
#[derive(Clone, Debug, Default)]
pub struct ListQuery {
    /// The tenant whose sessions are listed (no other tenant's, ever).
    pub tenant: String,
    /// Only sessions with this status.
    pub status: Option<SessionStatus>,
    /// Only sessions run under this profile.
    pub profile: Option<String>,
    /// Only sessions whose log proposes a call to this tool (a denied
    /// call counts: the program called it).
    pub tool: Option<String>,
    /// Only sessions created at or after this time (ms since the epoch).
    pub since_ms: Option<i64>,
    /// Only sessions created before this time (ms since the epoch).
    pub until_ms: Option<i64>,
    /// At most this many (1..=1000).
    pub limit: usize,
    /// Only sessions older than this one, in list order (`created_ms`,
    /// then `id`, both descending): the cursor of the next page.
    pub before: Option<(i64, String)>,
}

/// An event committed to a session's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Committed {
    /// The session.
    pub session: String,
    /// The event's `seq`.
    pub seq: u64,
    /// Its line, exactly as [`ServerStore::events_after`] would return it
    /// (so a follower need not read it back).
    pub line: std::sync::Arc<str>,
}

/// Called once a session recorded by [`ServerStore::create_session_then`]
/// is committed (or could not be).
pub type CreatedThen = Box<dyn FnOnce(Result<Created, StoreError>) + Send>;

/// Told of each commit: its duration and its number of events.
pub type CommitObserver = Box<dyn Fn(Duration, usize) + Send + Sync>;

/// How a shared store's workers hold their sessions and reach the
/// database (serve.toml's `[server]` `lease_ms`, `lease_renew_ms`,
/// `pool_size`; PostgreSQL only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    /// How long a claimed session stays this worker's without a renewal.
    pub lease: Duration,
    /// How often the worker renews its leases, claims runnable sessions and
    /// reads its mailbox (below `lease`).
    pub renew: Duration,
    /// Connections for reads (the writer and the lease thread have one
    /// each besides).
    pub pool_size: usize,
}

/// The lease by default: 10 s.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);
/// The renewal interval by default: 2 s.
pub const DEFAULT_RENEW: Duration = Duration::from_secs(2);
/// Read connections by default.
pub const DEFAULT_POOL_SIZE: usize = 4;

impl Default for StoreOptions {
    fn default() -> StoreOptions {
        StoreOptions {
            lease: DEFAULT_LEASE,
            renew: DEFAULT_RENEW,
            pool_size: DEFAULT_POOL_SIZE,
        }
    }
}

/// A client outcome, approval answer or cancel posted to another worker
/// than the one running the session: `kind` is `outcome` (`body`:
/// `{"call_id", "line"}`), `approval` (`{"approval_id", "granted",
/// "reason"}`) or `cancel` (`{}`).
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    /// The session.
    pub session: String,
    /// What it is.
    pub kind: String,
    /// Its content.
    pub body: Json,
    /// It has waited in the mailbox past [`OVERDUE`] for its session to
    /// ask for it: an outcome or approval of an id the session does not
    /// know is now refused (and logged) rather than kept.
    pub overdue: bool,
}

/// How long a forwarded outcome or approval waits for its session to know
/// its id (a session resuming on the claiming worker asks again soon)
/// before it is taken as an unknown id and refused.
pub const OVERDUE: std::time::Duration = std::time::Duration::from_secs(10);

/// Told that a session this worker held was taken over: its id and why.
pub type LostHook = Box<dyn Fn(&str, &str) + Send>;

/// What a store with leases tells the hub (called on the store's lease
/// thread: each must return quickly).
pub struct LeaseHooks {
    /// How many more sessions this worker may take.
    pub room: Box<dyn Fn() -> usize + Send>,
    /// Sessions this worker claimed: resume them from their logs.
    pub claimed: Box<dyn Fn(Vec<SessionRecord>) + Send>,
    /// A session this worker held was taken over (id, why).
    pub lost: LostHook,
    /// A delivery for a session this worker holds: `true` when it was
    /// taken (applied, or refused for good), `false` to leave it in the
    /// mailbox for a later round (the session claimed but not running
    /// here yet, or not yet waiting for it).
    pub delivered: Box<dyn Fn(&Delivery) -> bool + Send>,
    /// Another worker committed events of this session.
    pub committed: Box<dyn Fn(&str) + Send>,
}

/// The server's store: logs and the sessions table (see the module note).
/// Errors are [`StoreError`]s; `NotFound` for an unknown session.
pub trait ServerStore: EventStore {
    /// Records a new session, status `running`. With an idempotency key
    /// the tenant already used, records nothing and returns that session.
    fn create_session(&self, s: &NewSession) -> Result<Created, StoreError>;

    /// [`ServerStore::create_session`] without waiting: `done` is called
    /// once the record is committed (or failed), and the caller may go on
    /// appending to the session's log meanwhile (the store keeps the
    /// order: the record commits with or before the log's first events).
    /// For a session without an idempotency key, whose id is new.
    fn create_session_then(&self, s: &NewSession, done: CreatedThen) {
        done(self.create_session(s));
    }

    /// The log of a session whose id this server has just minted
    /// ([`crate::log::new_session_id`]: 80 random bits) and recorded:
    /// [`EventStore::create`] without its read for events already stored,
    /// which such an id cannot have. Should one be there all the same, the
    /// store still refuses the first append, whose `seq` 0 does not
    /// continue the stored chain. Errors: as `create`.
    fn create_minted(&self, id: &str) -> Result<Box<dyn EventSink + Send>, StoreError>;

    /// Waits until everything sent to the store before this call is
    /// committed (a dropped sink's buffered events included), so a read
    /// sees it.
    fn flush(&self);

    /// The session `id` of `tenant` (`None` when it does not exist or is
    /// another tenant's).
    fn session(&self, tenant: &str, id: &str) -> Result<Option<SessionRecord>, StoreError>;

    /// The session of `tenant` that the Idempotency-Key `key` started
    /// (`None`: none yet). Errors: `Damaged` when its record cannot be
    /// read.
    fn session_by_key(&self, tenant: &str, key: &str) -> Result<Option<SessionRecord>, StoreError>;

    /// A page of a tenant's sessions ([`ListQuery`]).
    fn list_sessions(&self, q: &ListQuery) -> Result<Vec<SessionRecord>, StoreError>;

    /// Sets a session's status (and, once it is over, its final output)
    /// and its call count. A final status ([`SessionStatus::is_final`])
    /// never changes again. Errors: `NotFound`; `Conflict` when the
    /// session is already over. `Ok`: the `updated_ms` it recorded.
    fn set_status(
        &self,
        id: &str,
        status: SessionStatus,
        output: Option<&Json>,
        calls: u64,
    ) -> Result<i64, StoreError>;

    /// [`ServerStore::set_status`] without waiting: `done` gets its result
    /// once the status committed (or failed), on the store's answering
    /// thread, so it must not block; the caller's thread goes on at once.
    fn set_status_then(
        &self,
        id: &str,
        status: SessionStatus,
        output: Option<&Json>,
        calls: u64,
        done: StatusThen,
    );

    /// Every session of every tenant whose status is not final, oldest
    /// first: what a restarted server resumes.
    fn unfinished(&self) -> Result<Vec<SessionRecord>, StoreError>;

    /// The committed log lines of session `id` with `seq > after` (all of
    /// them with `None`), in order, each exactly as `docs/log-format.md`
    /// writes it (no trailing newline).
    fn events_after(&self, id: &str, after: Option<u64>) -> Result<Vec<String>, StoreError>;

    /// As [`ServerStore::events_after`], at most `limit` lines: a page of
    /// a long log (a stream reads one page at a time, so a client that
    /// does not read holds one page, not the whole log).
    fn events_page(
        &self,
        id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError>;

    /// Told of every event as it commits (after it is durable), in commit
    /// order. A receiver that falls behind by more than the channel holds
    /// sees `Lagged` and reads the rest with [`ServerStore::events_after`].
    fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Committed>;

    /// Whether the store answers (a trivial read).
    fn health(&self) -> Result<(), StoreError>;

    /// Called after each commit with how long it took (the transaction,
    /// fsync included) and how many events it held (metrics). Replaces the
    /// observer set before.
    fn observe_commits(&self, observer: CommitObserver);

    /// What `/healthz` says of the store: `{"kind", "name"}` (never a
    /// password) and, with leases, `"worker"`.
    fn describe(&self) -> Json;

    /// Starts taking part in leases with `hooks` (many workers on one
    /// database): `Some(n)`, the sessions claimed by the first round
    /// (waited for). `None`: this store has no leases; the server is alone
    /// on it and resumes every unfinished session itself.
    fn lease(&self, _hooks: LeaseHooks) -> Option<usize> {
        None
    }

    /// Whether this worker still holds session `id` (always, without
    /// leases). `false` once its lease was taken over or a write fenced.
    fn holds(&self, _id: &str) -> bool {
        true
    }

    /// Session `id` no longer runs here: `abandoned` (shutdown) hands its
    /// lease back for another worker to take at once; otherwise (it ended)
    /// the lease is simply no longer renewed.
    fn let_go(&self, _id: &str, _abandoned: bool) {}

    /// A stream on this server follows session `id` (`on`), or none does
    /// any more: a store shared by many workers asks the session's writer,
    /// wherever it runs, to tell this worker when its events commit
    /// (PostgreSQL: `followers.rs`). Nothing for a store of one server.
    fn follow(&self, _id: &str, _on: bool) {}

    /// Posts `kind`/`body` for session `id`, which runs on another worker
    /// ([`Delivery`]). `Ok(false)`: this store has no mailbox.
    fn deliver(&self, _id: &str, _kind: &str, _body: &Json) -> Result<bool, StoreError> {
        Ok(false)
    }
}
