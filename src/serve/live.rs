//! A running session as the API sees it: its status, the client calls it
//! waits for, its approval requests, and the two ports the session engine
//! is given to reach the API: [`Narrated`] (the log sink, watching each
//! event go by) and [`ApiApprover`] (approvals answered by `POST
//! …/approvals/{approval_id}`).
//!
//! ```text
//! session thread ── append(event) ──▶ Narrated ── status, metrics ──▶ Live
//!                                          └────▶ store sink (committed)
//! POST outcomes  ── Live::report ──▶ the client pipe ──▶ ClientChannel (logs it)
//! POST approvals ── Live::answer ──▶ slot ──▶ ApiApprover::decide returns
//! ```
//!
//! Invariant: a client call is marked waiting before its
//! `client_dispatched` event is appended, and an approval slot exists
//! before `approval_requested` is, so a client that acts on the event the
//! moment it commits is never told the call or request is unknown.

use super::error::shown;
use super::metrics::Metrics;
use super::store::{ServerStore, SessionRecord, SessionStatus};
use crate::control::approver::{ApprovalAnswer, ApprovalQuestion, Approver};
use crate::log::{Decision, EventBody, EventSink};
use crate::runtime::cancel::Cancel;
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Refused outcomes of one session recorded in its log (`client_rejected`);
/// past it a client repeating itself only reaches the server's stderr.
const REJECTIONS_LOGGED: u32 = 64;

/// A session running in this server.
pub struct Live {
    /// Its id.
    pub id: String,
    /// Its tenant.
    pub tenant: String,
    /// Stops it (`POST …/cancel`), or abandons it (shutdown).
    pub cancel: Cancel,
    state: Mutex<State>,
    changed: Condvar,
    /// Events its sink took (with [`Live::started_fresh`]: every event of
    /// its log); counted without the state's lock, once per event.
    events: AtomicU64,
}

#[derive(Default)]
struct State {
    status: Option<SessionStatus>,
    /// Writes `tool_result` lines to the session's client channel.
    client: Option<std::io::PipeWriter>,
    /// Client calls dispatched and not yet ended.
    waiting_calls: HashSet<String>,
    /// Call ids an outcome was posted for.
    answered: HashSet<String>,
    /// Refused outcomes handed to the client channel to be logged.
    rejections_logged: u32,
    /// Approval requests: `None` while unanswered.
    approvals: HashMap<String, Option<ApprovalAnswer>>,
    calls: u64,
    /// Started here from its first event: its profile and `created_ms`
    /// (`None`: resumed, or a task session).
    fresh: Option<(String, i64)>,
}

/// Why a posted outcome or answer was not taken.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No such call or request is waiting (unknown, or already over).
    Unknown(String),
    /// It was already answered.
    Repeated(String),
    /// The session cannot take it any more (it ended, or lost its client).
    Gone(String),
}

impl Live {
    /// A running session.
    pub fn new(id: String, tenant: String, cancel: Cancel) -> Live {
        Live {
            id,
            tenant,
            cancel,
            state: Mutex::new(State {
                status: Some(SessionStatus::Running),
                ..State::default()
            }),
            changed: Condvar::new(),
            events: AtomicU64::new(0),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Its status now.
    pub fn status(&self) -> SessionStatus {
        self.state().status.unwrap_or(SessionStatus::Running)
    }

    /// Tool calls ended so far.
    pub fn calls(&self) -> u64 {
        self.state().calls
    }

    /// The session starts here with an empty log, recorded with `profile`
    /// at `created_ms`: its final record can be told without a read
    /// ([`Live::final_record`]).
    pub fn started_fresh(&self, profile: &str, created_ms: i64) {
        self.state().fresh = Some((profile.to_string(), created_ms));
    }

    /// Whether the session was minted here ([`Live::started_fresh`]).
    pub fn started_here(&self) -> bool {
        self.state().fresh.is_some()
    }

    /// The session's record once its final `status`, `output` and `calls`
    /// committed at `updated_ms`, from what this server knows (the same
    /// fields the store reads back; `request` and `idempotency_key` are
    /// left out: `None` unless [`Live::started_fresh`]).
    pub fn final_record(
        &self,
        status: SessionStatus,
        output: &serde_json::Value,
        calls: u64,
        updated_ms: i64,
    ) -> Option<SessionRecord> {
        let st = self.state();
        let (profile, created_ms) = st.fresh.clone()?;
        Some(SessionRecord {
            id: self.id.clone(),
            tenant: self.tenant.clone(),
            profile,
            status,
            request: serde_json::Value::Null,
            idempotency_key: None,
            created_ms,
            updated_ms,
            output: Some(output.clone()),
            calls,
            events: self.events.load(Ordering::Relaxed),
        })
    }

    /// A resumed session's count of the calls its log already ended (the
    /// count goes on from there, not from 0).
    pub fn resumed_with(&self, calls: u64) {
        self.state().calls = calls;
    }

    /// Records `status` as the session's: its state, the metrics' gauge,
    /// the store's row (with the calls so far). Nothing when it is that
    /// already.
    pub fn record_status(&self, store: &dyn ServerStore, metrics: &Metrics, status: SessionStatus) {
        let calls = {
            let mut st = self.state();
            if st.status == Some(status) {
                return;
            }
            if let Some(old) = st.status {
                metrics
                    .sessions
                    .with_label_values(&[&self.tenant, old.as_str()])
                    .dec();
            }
            metrics
                .sessions
                .with_label_values(&[&self.tenant, status.as_str()])
                .inc();
            st.status = Some(status);
            st.calls
        };
        let _ = store.set_status(&self.id, status, None, calls);
    }

    /// Gives it the writing end of its client channel's input.
    pub fn attach_client(&self, pipe: std::io::PipeWriter) {
        self.state().client = Some(pipe);
    }

    /// Stops everything that waits on the API: the client channel's input
    /// ends (a waiting call fails as unavailable), and a waiting approval
    /// is refused. Called on cancel and on shutdown.
    pub fn close_waits(&self) {
        self.state().client = None;
        self.changed.notify_all();
    }

    /// A client-venue call's outcome (`line` is its `tool_result` JSON
    /// line): handed to the session's client channel, which validates and
    /// logs it. Errors: the call is not waiting, or was already answered
    /// (then the line still goes to the channel, which records it as
    /// `client_rejected`, as the stdio venue does, never applied).
    pub fn report(&self, call_id: &str, line: &str) -> Result<(), Refusal> {
        let mut st = self.state();
        let refusal = if st.answered.contains(call_id) {
            Some(Refusal::Repeated(format!(
                "call {:?} already has an outcome; an outcome is applied once",
                shown(call_id)
            )))
        } else if !st.waiting_calls.contains(call_id) {
            Some(Refusal::Unknown(format!(
                "no client call {:?} is waiting for an outcome in this session",
                shown(call_id)
            )))
        } else {
            None
        };
        if let Some(refusal) = refusal {
            // Logged as the stdio venue logs it: the client channel, which
            // knows no such waiting call either, records `client_rejected`
            // (the first REJECTIONS_LOGGED of a session; then stderr only).
            if st.rejections_logged < REJECTIONS_LOGGED {
                if let Some(pipe) = st.client.as_mut() {
                    let written = pipe
                        .write_all(line.as_bytes())
                        .and_then(|_| pipe.write_all(b"\n"))
                        .and_then(|_| pipe.flush());
                    match written {
                        Ok(()) => st.rejections_logged += 1,
                        Err(_) => st.client = None,
                    }
                }
            }
            return Err(refusal);
        }
        let Some(pipe) = st.client.as_mut() else {
            return Err(Refusal::Gone(
                "the session no longer takes client outcomes".into(),
            ));
        };
        let written = pipe
            .write_all(line.as_bytes())
            .and_then(|_| pipe.write_all(b"\n"))
            .and_then(|_| pipe.flush());
        if let Err(e) = written {
            st.client = None;
            return Err(Refusal::Gone(format!(
                "the session's client channel is closed ({e})"
            )));
        }
        st.answered.insert(call_id.to_string());
        Ok(())
    }

    /// Whether an outcome for client call `call_id` can be told now: the
    /// call waits, or was answered (a repeat is refused as such).
    pub fn knows_call(&self, call_id: &str) -> bool {
        let st = self.state();
        st.waiting_calls.contains(call_id) || st.answered.contains(call_id)
    }

    /// Whether approval request `approval_id` was asked in this session.
    pub fn knows_approval(&self, approval_id: &str) -> bool {
        self.state().approvals.contains_key(approval_id)
    }

    /// Answers approval request `approval_id`. Errors: no such request
    /// waits, or it was answered.
    pub fn answer(&self, approval_id: &str, answer: ApprovalAnswer) -> Result<(), Refusal> {
        let mut st = self.state();
        match st.approvals.get_mut(approval_id) {
            None => Err(Refusal::Unknown(format!(
                "no approval request {:?} is waiting in this session",
                shown(approval_id)
            ))),
            Some(Some(_)) => Err(Refusal::Repeated(format!(
                "approval request {:?} was already answered",
                shown(approval_id)
            ))),
            Some(slot) => {
                *slot = Some(answer);
                drop(st);
                self.changed.notify_all();
                Ok(())
            }
        }
    }

    /// As [`Live::answer`], for a request the session's log holds
    /// unanswered but the session has not asked again yet (it is resuming
    /// after a restart or a takeover): the answer is kept for it, and taken
    /// as soon as it asks.
    pub fn answer_ahead(&self, approval_id: &str, answer: ApprovalAnswer) -> Result<(), Refusal> {
        self.state()
            .approvals
            .entry(approval_id.to_string())
            .or_insert(None);
        self.answer(approval_id, answer)
    }

    /// The approval requests waiting for an answer.
    pub fn pending_approvals(&self) -> Vec<String> {
        let st = self.state();
        let mut v: Vec<String> = st
            .approvals
            .iter()
            .filter(|(_, a)| a.is_none())
            .map(|(k, _)| k.clone())
            .collect();
        v.sort();
        v
    }
}

/// The session's sink: appends to the store's sink, and keeps the
/// session's status and the server's metrics as the events go by.
pub struct Narrated {
    /// The store's sink.
    pub inner: Box<dyn EventSink + Send>,
    /// The session.
    pub live: Arc<Live>,
    /// Where waiting statuses are recorded.
    pub store: Arc<dyn ServerStore>,
    /// The server's metrics.
    pub metrics: Arc<Metrics>,
    /// Each call's tool and when it was scheduled.
    pub calls: HashMap<String, (String, Option<Instant>)>,
}

impl Narrated {
    fn set_status(&self, status: SessionStatus) {
        self.live.record_status(&*self.store, &self.metrics, status);
    }
}

impl EventSink for Narrated {
    fn append(&mut self, body: EventBody) -> std::io::Result<()> {
        // Marked before the event commits (see the module note).
        match &body {
            EventBody::ClientDispatched { call_id } => {
                self.live.state().waiting_calls.insert(call_id.clone());
            }
            EventBody::ApprovalRequested { approval_id, .. } => {
                self.live
                    .state()
                    .approvals
                    .entry(approval_id.clone())
                    .or_insert(None);
            }
            _ => {}
        }
        let mut after: Option<SessionStatus> = None;
        match &body {
            EventBody::Proposed { call_id, tool, .. } => {
                self.calls.insert(call_id.clone(), (tool.clone(), None));
            }
            EventBody::Scheduled { call_id, tool, .. } => {
                self.calls
                    .insert(call_id.clone(), (tool.clone(), Some(Instant::now())));
            }
            EventBody::Decided {
                decision: Decision::Deny,
                rule,
                ..
            } => self
                .metrics
                .denials
                .with_label_values(&[&self.live.tenant, rule])
                .inc(),
            EventBody::ClientDispatched { .. } => after = Some(SessionStatus::WaitingClient),
            EventBody::ApprovalRequested { .. } => after = Some(SessionStatus::WaitingApproval),
            EventBody::ApprovalDecided { .. } => after = Some(SessionStatus::Running),
            EventBody::Completed { call_id, .. }
            | EventBody::Failed { call_id, .. }
            | EventBody::TimedOut { call_id, .. } => {
                let outcome = match &body {
                    EventBody::Completed { .. } => "completed",
                    EventBody::Failed { .. } => "failed",
                    _ => "timed_out",
                };
                let (tool, at) = self.calls.remove(call_id).unwrap_or_default();
                self.metrics
                    .calls
                    .with_label_values(&[&self.live.tenant, &tool, outcome])
                    .inc();
                if let Some(at) = at {
                    self.metrics
                        .call_seconds
                        .with_label_values(&[&self.live.tenant, &tool])
                        .observe(at.elapsed().as_secs_f64());
                }
                let mut st = self.live.state();
                st.calls += 1;
                if st.waiting_calls.remove(call_id) && st.waiting_calls.is_empty() {
                    after = Some(SessionStatus::Running);
                }
            }
            _ => {}
        }
        self.inner.append(body)?;
        self.live.events.fetch_add(1, Ordering::Relaxed);
        if let Some(s) = after {
            self.set_status(s);
        }
        Ok(())
    }

    fn idempotent_tools(&mut self, tools: &std::collections::BTreeSet<String>) {
        self.inner.idempotent_tools(tools)
    }
}

/// Answers approvals with what `POST …/approvals/{approval_id}` posts
/// (`approvals = "api"`): the session waits, durably, since a restarted
/// server asks again for a request its log holds unanswered.
pub struct ApiApprover {
    /// The session.
    pub live: Arc<Live>,
    /// Where its waiting status is recorded when the request comes from
    /// the log (a resumed session logs no new `approval_requested`).
    pub store: Arc<dyn ServerStore>,
    /// The server's metrics (the status gauge).
    pub metrics: Arc<Metrics>,
}

impl Approver for ApiApprover {
    fn decide(&mut self, q: &ApprovalQuestion<'_>) -> ApprovalAnswer {
        let refuse = |reason: &str| ApprovalAnswer {
            granted: false,
            by: "api".to_string(),
            reason: reason.to_string(),
        };
        let deadline = q.time_left.map(|t| Instant::now() + t);
        let live = &self.live;
        let resumed = !live.state().approvals.contains_key(q.approval_id);
        if resumed {
            // A request resumed from the log: no event says it waits.
            live.record_status(&*self.store, &self.metrics, SessionStatus::WaitingApproval);
        }
        let mut st = live.state();
        // A request resumed from the log has no slot yet.
        st.approvals
            .entry(q.approval_id.to_string())
            .or_insert(None);
        loop {
            if let Some(Some(a)) = st.approvals.get(q.approval_id) {
                return a.clone();
            }
            if live.cancel.is_cancelled() {
                return refuse("the session was cancelled while waiting for this approval");
            }
            let wait = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) => left.min(Duration::from_millis(200)),
                    None => return refuse("no answer came before the run's time limit"),
                },
                None => Duration::from_millis(200),
            };
            st = live
                .changed
                .wait_timeout(st, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    fn answers_api(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer posted while a resuming session has not asked again yet
    /// is kept for it: the approver takes it at once (it used to be
    /// refused as unknown, though `pending_approvals` listed it).
    #[test]
    fn an_answer_ahead_is_taken_when_the_resumed_session_asks() {
        let dir = std::env::temp_dir().join(format!("lt-live-ahead-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = match crate::serve::store::sqlite::SqliteStore::open(&dir.join("lt.db")) {
            Ok(s) => s,
            Err(e) => panic!("store: {e}"),
        };
        let live = Arc::new(Live::new("s1".into(), "acme".into(), Cancel::new()));
        let answer = ApprovalAnswer {
            granted: true,
            by: "api".into(),
            reason: "granted through the API".into(),
        };
        let unknown = live.answer("a1", answer.clone());
        assert!(matches!(unknown, Err(Refusal::Unknown(_))));
        assert!(live.answer_ahead("a1", answer.clone()).is_ok());
        let mut approver = ApiApprover {
            live: live.clone(),
            store: Arc::new(store),
            metrics: Arc::new(Metrics::new().expect("metrics")),
        };
        let argument = serde_json::json!({});
        let q = ApprovalQuestion {
            session: "s1",
            approval_id: "a1",
            tool: "delete_file",
            argument: &argument,
            time_left: Some(Duration::from_millis(300)),
        };
        assert_eq!(approver.decide(&q), answer);
        let again = live.answer_ahead("a1", answer);
        assert!(matches!(again, Err(Refusal::Repeated(_))));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
