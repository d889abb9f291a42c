//! The server's sessions: starting them (each on a thread of its own,
//! through the session engine), resuming the unfinished ones after a
//! restart, cancelling, and draining at shutdown.
//!
//! ```text
//! start(tenant, request) ─▶ session thread: check against the tenant
//!     ─▶ rejected: 422 (nothing recorded)
//!     ─▶ store.create_session (Idempotency-Key: the existing one instead)
//!     ─▶ reply {id} ─▶ Session::new(&file).executors(Shared tenant host)
//!        .profile(Given).log(Sink(Narrated(store sink))).client(Channel)
//!        .approver(ApiApprover).cancel(live).run(&ir)
//!     ─▶ store.set_status(final, output) ─▶ `finished` broadcast
//! start_resuming() ─▶ no leases (SQLite): resume_unfinished() now
//!                  └▶ leases (PostgreSQL): store.lease(hooks); its thread
//!                     claims runnable sessions ─▶ resume_one each
//! resume_one(record) ─▶ store.reopen ─▶
//!     Session::resume (the engine's resume rules) | start afresh (no events)
//!     (a task session: task.rs, marked failed, never run again)
//! lease lost / a write fenced ─▶ the session is let go here (not finished,
//!     not retried): another worker resumes it from the log
//! ```
//!
//! Invariant: a session is run by one thread of one server; a session the
//! server abandons at shutdown keeps status `running` and is resumed at
//! the next start (or, with leases, at once by another worker).

use super::check;
use super::config::Tenant;
use super::follow::Followers;
use super::live::{ApiApprover, Live, Narrated};
use super::metrics::Metrics;
use super::store::{Created, NewSession, ServerStore, SessionStatus};
use super::threads::SessionThreads;
use crate::control::client::ClientChannel;
use crate::control::report::{Stage, StartErrorKind, StartFailure};
use crate::control::session::replay::Recorded;
use crate::control::session::{self, ClientPort, Executors, LogTarget, ProfileSource, Session};
use crate::exec::{ExecutorHost, Venue};
use crate::ir::Ir;
use crate::log::{EventBody, ReopenError, ReopenedLog, StoreError};
use crate::runtime::cancel::Cancel;
use crate::runtime::limits::RunErrorKind;
use crate::source::SourceFile;
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, oneshot, watch};

/// A tenant as the server runs it: its configuration and its executors.
pub struct TenantRuntime {
    /// The configuration (its registry moved into `host`).
    pub config: Tenant,
    /// Its executors, shared by its sessions (`None`: no tools.toml).
    pub host: Option<ExecutorHost>,
}

impl TenantRuntime {
    /// The tool's venue in the tenant's tools.toml (server when not named).
    pub fn venue(&self, tool: &str) -> Venue {
        self.host
            .as_ref()
            .and_then(|h| h.registry().tool_traits().0.get(tool).copied())
            .unwrap_or(Venue::Server)
    }

    /// The tools the tenant's tools.toml runs in the client venue: the
    /// names a request's `capabilities.tools` may list.
    pub fn client_tools(&self) -> Vec<String> {
        self.host.as_ref().map_or_else(Vec::new, |h| {
            let (venues, _) = h.registry().tool_traits();
            venues
                .into_iter()
                .filter(|(_, v)| *v == Venue::Client)
                .map(|(name, _)| name)
                .collect()
        })
    }
}

/// A request to start a session from a program.
#[derive(Clone, Debug)]
pub struct StartRequest {
    /// The program's text.
    pub program: String,
    /// The profile's name.
    pub profile: String,
    /// The client-venue tools the client runs.
    pub client_tools: Vec<String>,
    /// The `Idempotency-Key` header.
    pub idempotency_key: Option<String>,
    /// The request body as accepted (kept with the session).
    pub body: Json,
}

/// What starting a session gave.
pub enum Started {
    /// A new session.
    New(String),
    /// The session the idempotency key already names.
    Existing(String),
    /// The idempotency key names a session started by another request
    /// (another program, profile or task): its id. Nothing ran.
    KeyReused(String),
    /// The program was refused before anything was recorded: `lt run
    /// --json`'s rejection (or refusal) object.
    Refused(Json),
    /// The store could not record the session (nothing ran): why.
    Unavailable(String),
    /// The session the idempotency key names has a record the store
    /// cannot read (changed past lt serve; no retry mends it): why, which
    /// names it. Nothing ran.
    Damaged(String),
}

impl Started {
    /// The answer when the store failed to record a start: `Damaged` for a
    /// damaged record, else `Unavailable`.
    pub fn store_failed(e: crate::log::StoreError) -> Started {
        match e {
            crate::log::StoreError::Damaged(why) => Started::Damaged(why),
            e => Started::Unavailable(format!("the store could not record the session: {e}")),
        }
    }
}

/// What a start whose idempotency key the store already holds gives: that
/// session when `request` is the one it was started by, else
/// [`Started::KeyReused`] (the IETF Idempotency-Key draft's "key reused
/// with a different payload", as Stripe refuses it too).
pub fn existing(rec: super::store::SessionRecord, request: &Json) -> Started {
    if rec.request == *request {
        Started::Existing(rec.id)
    } else {
        Started::KeyReused(rec.id)
    }
}

/// The server's sessions.
pub struct Hub {
    /// The store.
    pub store: Arc<dyn ServerStore>,
    /// The tenants, by name.
    pub tenants: BTreeMap<String, TenantRuntime>,
    /// The metrics.
    pub metrics: Arc<Metrics>,
    handle: tokio::runtime::Handle,
    live: Mutex<HashMap<String, Arc<Live>>>,
    /// The SSE streams' sessions: a change counter and recent lines each.
    pub(super) followers: Followers,
    /// The threads sessions (and checks and replays) run on.
    threads: Arc<SessionThreads>,
    stopping: watch::Sender<bool>,
    accepting: AtomicBool,
    /// Sessions that may run at once.
    pub(super) max_sessions: usize,
    /// Starts admitted and not yet registered in `live` ([`Hub::admit`]).
    admitted: Arc<AtomicUsize>,
}

/// A start's place under `max_sessions` ([`Hub::admit`]): held until the
/// start is answered (by then the session is in the live map, or it never
/// ran); dropping it gives the place back.
pub struct Admission(Arc<AtomicUsize>);

impl Drop for Admission {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Now, in milliseconds since the Unix epoch.
pub(super) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Hub {
    /// A hub over `store`, running tools on `handle` (multi-thread).
    pub fn new(
        store: Arc<dyn ServerStore>,
        tenants: BTreeMap<String, TenantRuntime>,
        metrics: Arc<Metrics>,
        handle: tokio::runtime::Handle,
        max_sessions: usize,
    ) -> Hub {
        Hub {
            store,
            tenants,
            metrics,
            handle,
            live: Mutex::new(HashMap::new()),
            followers: Followers::default(),
            threads: SessionThreads::new("lt-session"),
            stopping: watch::channel(false).0,
            accepting: AtomicBool::new(true),
            max_sessions,
            admitted: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// A place for a new session under `max_sessions`, counting the
    /// sessions that run and the starts admitted before it (`None`: no
    /// room). Concurrent starts cannot both take the last place.
    pub fn admit(&self) -> Option<Admission> {
        loop {
            let pending = self.admitted.load(Ordering::SeqCst);
            if self.live_map().len() + pending >= self.max_sessions {
                return None;
            }
            if self
                .admitted
                .compare_exchange(pending, pending + 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return Some(Admission(Arc::clone(&self.admitted)));
            }
        }
    }

    /// A receiver that changes whenever an event of session `id` commits
    /// or its record becomes final (it may also change for no reason).
    pub fn watch(&self, id: &str) -> watch::Receiver<u64> {
        self.store.follow(id, true);
        self.followers.watch(id)
    }

    /// Session `id`'s committed lines from `next` on, if the followers'
    /// ring holds them ([`Followers::recent_after`]).
    pub fn recent_after(&self, id: &str, next: u64) -> Option<Vec<Arc<str>>> {
        self.followers.recent_after(id, next)
    }

    pub(super) fn bump(&self, id: Option<&str>) {
        self.followers.bump(id);
    }

    /// Routes the store's commit notices to the followers; runs until the
    /// store's channel closes. Spawn it once.
    pub async fn dispatch_commits(self: Arc<Self>) {
        let mut commits = self.store.subscribe();
        loop {
            match commits.recv().await {
                Ok(c) => self.followers.committed(&c.session, c.seq, c.line),
                Err(broadcast::error::RecvError::Lagged(_)) => self.bump(None),
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    /// Changes to `true` when the server begins to stop.
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.stopping.subscribe()
    }

    /// The session `id` if it runs here and is `tenant`'s.
    pub fn live(&self, tenant: &str, id: &str) -> Option<Arc<Live>> {
        self.live_map()
            .get(id)
            .filter(|l| l.tenant == tenant)
            .cloned()
    }

    pub(super) fn live_map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Live>>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `job` on a session thread (a thread of the pool, with a
    /// session's stack). Errors: no thread could be started.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        self.threads.spawn(job)
    }

    /// Whether new sessions are accepted (not shutting down).
    pub fn accepting(&self) -> bool {
        self.accepting.load(Ordering::SeqCst)
    }

    /// Starts a session of `tenant` from `req`, replying once it is
    /// recorded (or refused). Errors: the session thread could not start.
    pub async fn start(
        self: &Arc<Self>,
        tenant: &str,
        req: StartRequest,
    ) -> Result<Started, String> {
        let (reply, answer) = oneshot::channel();
        let hub = Arc::clone(self);
        let tenant = tenant.to_string();
        self.spawn(move || hub.start_on_thread(&tenant, req, reply))
            .map_err(|e| format!("cannot start the session's thread: {e}"))?;
        answer
            .await
            .map_err(|_| "the session's thread ended before answering".to_string())
    }

    fn start_on_thread(
        self: Arc<Self>,
        tenant_name: &str,
        req: StartRequest,
        reply: oneshot::Sender<Started>,
    ) {
        let Some(tenant) = self.tenants.get(tenant_name) else {
            let _ = reply.send(Started::Refused(
                json!({"ok": false, "error": "no such tenant"}),
            ));
            return;
        };
        let Some(profile) = tenant.config.profile(&req.profile) else {
            let _ = reply.send(Started::Refused(
                json!({"ok": false, "error": "no such profile"}),
            ));
            return;
        };
        let file = SourceFile::new(check::PROGRAM_NAME, req.program.clone());
        let ir = match check::lower(&tenant.config, &profile, &file) {
            Ok(ir) => ir,
            Err(rejected) => {
                let _ = reply.send(Started::Refused(rejected));
                return;
            }
        };
        if let Err(f) = self.executors_cover(tenant, &file, &ir, &req.client_tools) {
            let _ = reply.send(Started::Refused(
                serde_json::to_value(f.output()).unwrap_or(Json::Null),
            ));
            return;
        }
        let id = crate::log::new_session_id();
        let new = NewSession {
            id: id.clone(),
            tenant: tenant_name.to_string(),
            profile: req.profile.clone(),
            request: req.body.clone(),
            idempotency_key: req.idempotency_key.clone(),
            created_ms: now_ms(),
        };
        let live = self.register(&id, tenant_name);
        live.started_fresh(&new.profile, new.created_ms);
        if new.idempotency_key.is_none() {
            // Nothing of it is committed yet: followed from seq 0 on.
            self.followers.pin(&id);
            // A new id: nothing to look up, so the record is not waited
            // for here; the POST is answered once it commits, with (or
            // before) the session's first events.
            let (answer_id, cancel) = (id.clone(), live.cancel.clone());
            self.store.create_session_then(
                &new,
                Box::new(move |r| match r {
                    Ok(_) => {
                        let _ = reply.send(Started::New(answer_id));
                    }
                    Err(e) => {
                        let why = format!("the store could not record the session: {e}");
                        cancel.cancel(why.clone());
                        let _ = reply.send(Started::Unavailable(why));
                    }
                }),
            );
            self.metrics.started.with_label_values(&[tenant_name]).inc();
            return self.run(tenant, live, &file, &ir, profile, None);
        }
        match self.store.create_session(&new) {
            Ok(Created::New) => {}
            Ok(Created::Existing(rec)) => {
                self.unregister(&id);
                let _ = reply.send(existing(rec, &new.request));
                return;
            }
            Err(e) => {
                self.unregister(&id);
                let _ = reply.send(Started::store_failed(e));
                return;
            }
        }
        self.followers.pin(&id);
        self.metrics.started.with_label_values(&[tenant_name]).inc();
        let _ = reply.send(Started::New(id.clone()));
        self.run(tenant, live, &file, &ir, profile, None);
    }

    /// Every tool the program calls runs somewhere: a server-venue tool
    /// has an executor, a client-venue one is run by the client.
    fn executors_cover(
        &self,
        tenant: &TenantRuntime,
        file: &SourceFile,
        ir: &Ir,
        client_tools: &[String],
    ) -> Result<(), StartFailure> {
        let called = session::called_tools(ir);
        for tool in &called {
            let known = tenant
                .host
                .as_ref()
                .is_some_and(|h| h.registry().missing([*tool]).is_empty());
            if !known {
                return Err(StartFailure::new(
                    Stage::Executors,
                    StartErrorKind::MissingExecutor,
                    format!(
                        "tool {tool} has no executor in tenant {}'s tools.toml",
                        tenant.config.name
                    ),
                )
                .with_help("add it to the tenant's executors, or call only the tenant's tools"));
            }
            if tenant.venue(tool) == Venue::Client && !client_tools.iter().any(|t| t == tool) {
                return Err(StartFailure::new(
                    Stage::Executors,
                    StartErrorKind::Usage,
                    format!("tool {tool} runs in the client venue, and this client does not run it"),
                )
                .with_help(format!(
                    "list it in the request's capabilities (\"capabilities\": {{\"tools\": [\"{tool}\"]}}) when the client runs it"
                )));
            }
        }
        if let Some(h) = &tenant.host {
            let path = tenant
                .config
                .executors_path
                .as_ref()
                .map(|p| p.display().to_string());
            if let Some(f) = session::understated_effects(
                file,
                &ir.tools,
                &called,
                h.registry(),
                path.as_deref(),
            ) {
                return Err(f);
            }
        }
        Ok(())
    }

    /// Marks session `id` of `tenant` live (running here).
    pub(super) fn register(&self, id: &str, tenant: &str) -> Arc<Live> {
        let live = Arc::new(Live::new(id.to_string(), tenant.to_string(), Cancel::new()));
        let weak = Arc::downgrade(&live);
        live.cancel.on_cancel(move || {
            if let Some(l) = weak.upgrade() {
                l.close_waits();
            }
            0
        });
        self.live_map().insert(id.to_string(), Arc::clone(&live));
        self.metrics
            .sessions
            .with_label_values(&[tenant, "running"])
            .inc();
        live
    }

    /// Forgets the live session `id`.
    pub(super) fn unregister(&self, id: &str) {
        if let Some(l) = self.live_map().remove(id) {
            self.metrics
                .sessions
                .with_label_values(&[&l.tenant, l.status().as_str()])
                .dec();
        }
    }

    /// Runs (or resumes) a session on this thread, then records its end.
    fn run(
        self: &Arc<Self>,
        tenant: &TenantRuntime,
        live: Arc<Live>,
        file: &SourceFile,
        ir: &Ir,
        profile: crate::control::profile::Profile,
        reopened: Option<ReopenedLog>,
    ) {
        let id = live.id.clone();
        let narrate = |inner| Narrated {
            inner,
            live: Arc::clone(&live),
            store: Arc::clone(&self.store),
            metrics: Arc::clone(&self.metrics),
            calls: HashMap::new(),
        };
        let called = session::called_tools(ir);
        let client = if called.iter().any(|t| tenant.venue(t) == Venue::Client) {
            match std::io::pipe() {
                Ok((reader, writer)) => {
                    live.attach_client(writer);
                    ClientPort::Channel(ClientChannel::new(std::io::sink(), reader))
                }
                Err(_) => ClientPort::None,
            }
        } else {
            ClientPort::None
        };
        let mut engine = Session::new(file)
            .profile(ProfileSource::Given(profile))
            .client(client)
            .approver(Box::new(ApiApprover {
                live: Arc::clone(&live),
                store: Arc::clone(&self.store),
                metrics: Arc::clone(&self.metrics),
            }))
            .cancel(live.cancel.clone())
            .runtime(self.handle.clone());
        if let Some(host) = &tenant.host {
            engine = engine.executors(Executors::Shared {
                host: host.clone(),
                registry_bytes: tenant.config.registry_bytes.clone(),
            });
        }
        let result = match reopened {
            Some(r) => engine.resume(
                ir,
                ReopenedLog {
                    sink: Box::new(narrate(r.sink)),
                    events: r.events,
                    dropped_bytes: r.dropped_bytes,
                },
            ),
            None => match if live.started_here() {
                // Its id was minted a moment ago: no log to look for.
                self.store.create_minted(&id)
            } else {
                self.store.create(&id)
            } {
                Ok(sink) => engine
                    .id(id.clone())
                    .log(LogTarget::Sink(Box::new(narrate(sink))))
                    .run(ir),
                Err(e) => Err(StartFailure::new(
                    Stage::Log,
                    StartErrorKind::Log,
                    format!("cannot open the session's log: {e}"),
                )),
            },
        };
        if !self.store.holds(&id) {
            drop(result);
            return self.let_go(&id, "the database refused this worker's write, or its lease was taken over by another worker");
        }
        let (status, output) = match &result {
            Ok(r) if r.abandoned => {
                // Shutdown: the record stays unfinished, resumed next start
                // (with leases: by another worker, at once).
                self.store.let_go(&id, true);
                self.unregister(&id);
                self.followers.ended(&id, None);
                return;
            }
            Ok(r) => match &r.divergence {
                Some(d) => (
                    SessionStatus::Failed,
                    json!({"ok": false, "stage": "resume", "error": {"kind": "diverged", "message": d}}),
                ),
                None => {
                    let out = serde_json::to_value(r.output(file, ir)).unwrap_or(Json::Null);
                    let status = match r.failure(ir) {
                        None => SessionStatus::Ended,
                        Some(e) if e.kind == RunErrorKind::Cancelled => SessionStatus::Cancelled,
                        Some(_) => SessionStatus::Failed,
                    };
                    (status, out)
                }
            },
            Err(f) => (
                SessionStatus::Failed,
                serde_json::to_value(f.output()).unwrap_or(Json::Null),
            ),
        };
        let calls = live.calls();
        drop(result);
        self.finish_then(&id, status, output, calls);
    }

    /// [`Hub::finish`] without waiting for the commit: the rest runs on the
    /// store's answering thread once the final status committed, and the
    /// session's thread goes back to the pool at once (it would only have
    /// slept until then).
    fn finish_then(self: &Arc<Self>, id: &str, status: SessionStatus, output: Json, calls: u64) {
        let hub = Arc::clone(self);
        let session = id.to_string();
        let output = Arc::new(output);
        let kept = Arc::clone(&output);
        let done = move |recorded: Result<i64, StoreError>| {
            hub.finished(&session, status, &kept, calls, recorded);
        };
        self.store
            .set_status_then(id, status, Some(&output), calls, Box::new(done));
    }

    /// Records the end of session `id` and forgets it.
    pub(super) fn finish(&self, id: &str, status: SessionStatus, output: &Json, calls: u64) {
        let recorded = self.store.set_status(id, status, Some(output), calls);
        self.finished(id, status, output, calls, recorded);
    }

    /// What follows the final status's commit (`recorded`: its
    /// `updated_ms`, or why it was not recorded).
    fn finished(
        &self,
        id: &str,
        status: SessionStatus,
        output: &Json,
        calls: u64,
        recorded: Result<i64, StoreError>,
    ) {
        if let Err(StoreError::Conflict(why)) = &recorded {
            if !self.store.holds(id) {
                // Its last events and its end were refused: another
                // worker's lease (a fenced write).
                return self.let_go(id, why);
            }
        }
        self.store.let_go(id, false);
        let live = self.live_map().get(id).cloned();
        if let Some(l) = &live {
            self.metrics
                .finished
                .with_label_values(&[&l.tenant, status.as_str()])
                .inc();
        }
        self.unregister(id);
        // Kept for its streams only once the store holds it as final.
        let (end, record) = match recorded {
            Ok(at_ms) => (
                Some(Arc::from(output.to_string().as_str())),
                live.and_then(|l| l.final_record(status, output, calls, at_ms)),
            ),
            Err(_) => (None, None),
        };
        self.followers.ended_as(id, end, record);
    }

    /// Session `id`'s final record if it ended here lately and this
    /// server could tell it without a read ([`Followers::final_record`]).
    pub fn final_record(&self, id: &str) -> Option<Arc<super::store::SessionRecord>> {
        self.followers.final_record(id)
    }

    /// Session `id`'s final output (JSON text) if it ended here lately
    /// ([`Followers::end_of`]): its final status is committed.
    pub fn end_of(&self, id: &str) -> Option<Arc<str>> {
        self.followers.end_of(id)
    }

    /// A stream of session `id` stops following it ([`Followers::release`]).
    pub fn release(&self, id: &str, rx: watch::Receiver<u64>) {
        if self.followers.release(id, rx) {
            self.store.follow(id, false);
        }
    }

    /// Cancels `tenant`'s live session `id`. `false`: it is not running here.
    pub fn cancel(&self, tenant: &str, id: &str) -> bool {
        match self.live(tenant, id) {
            Some(l) => {
                l.cancel.cancel("cancelled through the API");
                true
            }
            None => false,
        }
    }

    /// Resumes every unfinished session of the store, each on a thread of
    /// its own. Returns how many it started.
    pub fn resume_unfinished(self: &Arc<Self>) -> Result<usize, StoreError> {
        let records = self.store.unfinished()?;
        let n = records.len();
        for rec in records {
            let hub = Arc::clone(self);
            let started = self.spawn(move || hub.resume_one(rec));
            if let Err(e) = started {
                return Err(StoreError::Io(e));
            }
        }
        Ok(n)
    }

    pub(super) fn resume_one(self: Arc<Self>, rec: super::store::SessionRecord) {
        let fail = |msg: String| {
            let out = json!({"ok": false, "stage": "resume", "error": {"kind": "resume", "message": msg}});
            self.finish(&rec.id, SessionStatus::Failed, &out, rec.calls);
        };
        if rec.is_task() {
            return not_resumed(&self, &rec);
        }
        let Some(tenant) = self.tenants.get(&rec.tenant) else {
            return fail(format!("tenant {} is no longer configured", rec.tenant));
        };
        match self.store.reopen(&rec.id) {
            Ok(r) => {
                let Some(recorded) = Recorded::from_events(&r.events) else {
                    return fail("the log does not start with session_started".into());
                };
                let file = recorded.program_file(check::PROGRAM_NAME);
                let profile = match recorded.profile() {
                    Ok(p) => p,
                    Err(e) => return fail(format!("the recorded profile is invalid: {e}")),
                };
                let ir = match session::check_and_lower(&file) {
                    Ok(ir) => ir,
                    Err(_) => return fail("the recorded program no longer checks".into()),
                };
                let live = self.register(&rec.id, &rec.tenant);
                let ended = r.events.iter().filter(|e| {
                    matches!(
                        e.body,
                        EventBody::Completed { .. }
                            | EventBody::Failed { .. }
                            | EventBody::TimedOut { .. }
                    )
                });
                live.resumed_with(ended.count() as u64);
                self.run(tenant, live, &file, &ir, profile, Some(r));
            }
            Err(StoreError::Reopen(ReopenError::Empty)) | Err(StoreError::NotFound(_)) => {
                // Recorded, but nothing ran: start it as it was asked.
                let program = rec.request.get("program").and_then(Json::as_str);
                let Some(program) = program else {
                    return fail("the recorded request has no program".into());
                };
                let Some(profile) = tenant.config.profile(&rec.profile) else {
                    return fail(format!("profile {} is no longer configured", rec.profile));
                };
                let file = SourceFile::new(check::PROGRAM_NAME, program.to_string());
                let ir = match check::lower(&tenant.config, &profile, &file) {
                    Ok(ir) => ir,
                    Err(out) => return self.finish(&rec.id, SessionStatus::Failed, &out, 0),
                };
                let live = self.register(&rec.id, &rec.tenant);
                self.run(tenant, live, &file, &ir, profile, None);
            }
            Err(StoreError::Conflict(why)) => {
                // Still written by a thread here that lost it earlier.
                self.let_go(&rec.id, &format!("its log cannot be taken up yet ({why})"));
            }
            Err(StoreError::Reopen(ReopenError::Ended)) => {
                // The log ended; the record did not say so yet.
                let (status, out) = self.ended_from_log(&rec.id);
                self.finish(&rec.id, status, &out, rec.calls);
            }
            Err(e) => fail(format!("the log cannot be continued: {e}")),
        }
    }

    /// The final status and output of a session whose log holds
    /// `session_ended`, from that event.
    fn ended_from_log(&self, id: &str) -> (SessionStatus, Json) {
        let loaded = self.store.load(id);
        let last = loaded.ok().and_then(|l| l.events.into_iter().last());
        match last.map(|e| e.body) {
            Some(EventBody::SessionEnded {
                status,
                value,
                r#type,
                error: _,
                calls,
                steps,
            }) if status == "ok" => (
                SessionStatus::Ended,
                json!({"ok": true, "value": value, "type": r#type, "calls": calls, "steps": steps}),
            ),
            Some(EventBody::SessionEnded {
                error,
                calls,
                steps,
                ..
            }) => {
                let cancelled = error
                    .as_ref()
                    .and_then(|e| e.get("kind"))
                    .and_then(Json::as_str)
                    == Some("cancelled");
                let status = if cancelled {
                    SessionStatus::Cancelled
                } else {
                    SessionStatus::Failed
                };
                (
                    status,
                    json!({"ok": false, "stage": "run", "error": error, "calls": calls, "steps": steps}),
                )
            }
            _ => (
                SessionStatus::Failed,
                json!({"ok": false, "error": "the log's end could not be read"}),
            ),
        }
    }

    /// Stops accepting sessions, waits up to `grace` for the running ones
    /// to end, then abandons the rest (their logs stay resumable) and waits
    /// briefly for their threads to let go of the store.
    pub fn drain(&self, grace: Duration) {
        self.accepting.store(false, Ordering::SeqCst);
        self.stopping.send_replace(true);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && !self.live_map().is_empty() {
            std::thread::sleep(Duration::from_millis(20));
        }
        let rest: Vec<Arc<Live>> = self.live_map().values().cloned().collect();
        for l in &rest {
            l.cancel.abandon("the server is shutting down");
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && !self.live_map().is_empty() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A task session found unfinished at start (the server stopped while it
/// ran): marked `failed`, not run again. The engine does not resume agent
/// sessions, and running the task afresh could repeat the calls its
/// programs made; its log keeps what happened.
fn not_resumed(hub: &Hub, rec: &super::store::SessionRecord) {
    let out = json!({
        "ok": false,
        "stage": "resume",
        "error": {
            "kind": "not_resumable",
            "message": "the server stopped while this task session ran; task sessions are not resumed \
                        (its programs may have made calls, which must not be made twice): \
                        its log holds what happened; start a new session to try the task again",
        },
    });
    hub.finish(&rec.id, SessionStatus::Failed, &out, rec.calls);
}
