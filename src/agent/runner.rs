//! Running accepted programs live: each run is a session of the control
//! plane (policy, executors, events) inside the agent's log, from its
//! `session_started` to its `session_ended`.
//!
//! The executors (tools.toml) are loaded once for the whole agent session,
//! so an MCP server started by the first run serves the later ones; they
//! are shut down by [`LiveRunner::shutdown`]. Calls of run `k` get the
//! idempotency key `<session>.run<k>:<call id>`: call identities repeat
//! from run to run, keys must not. The constraint pipeline is carried from
//! run to run: the profile's call budgets are the agent session's.

use super::feedback::{CallNotes, RunEnd};
use super::session::{RunReport, Runner};
use crate::control::approver::Approver;
use crate::control::profile::Profile;
use crate::control::session::{Executors, LogTarget, ProfileSource, Session};
use crate::control::Pipeline;
use crate::exec::ExecutorHost;
use crate::ir::Ir;
use crate::log::{EventBody, EventSink};
use crate::runtime::cancel::Cancel;
use crate::runtime::limits::Limits;
use crate::source::SourceFile;
use std::io;

/// Makes the approver of each run (its profile's `approvals = "prompt"`
/// or `"api"` requests).
pub type Approvers = Box<dyn FnMut() -> Box<dyn Approver>>;

/// Runs programs with the executors of a tools.toml.
pub struct LiveRunner {
    host: ExecutorHost,
    cancel: Cancel,
    registry_bytes: Vec<u8>,
    limits: Limits,
    session: String,
    /// The pipeline carried from run to run: the profile's budgets
    /// (`max_calls`, per tool) and minted approvals are the agent
    /// session's, not one run's.
    pipeline: Option<Pipeline>,
    /// Makes each run's approver (`None`: the session engine's default).
    approvers: Option<Approvers>,
}

impl LiveRunner {
    /// A runner over `host` (its registry's venues and idempotent tools),
    /// for the agent session `session` (its id); `registry_bytes` are the
    /// tools.toml bytes (hashed into each `session_started`).
    pub fn new(
        host: ExecutorHost,
        registry_bytes: Vec<u8>,
        limits: Limits,
        session: String,
    ) -> Self {
        LiveRunner {
            host,
            cancel: Cancel::new(),
            registry_bytes,
            limits,
            session,
            pipeline: None,
            approvers: None,
        }
    }

    /// Each run's approval requests go to an approver `make` makes (a
    /// server: its API).
    pub fn with_approvers(mut self, make: Approvers) -> Self {
        self.approvers = Some(make);
        self
    }

    /// Stops the runs when `cancel` trips (each run is a session with this
    /// token: its tools killed, the interpreter stopped).
    pub fn with_cancel(mut self, cancel: Cancel) -> Self {
        self.cancel = cancel;
        self
    }

    /// Ends the executors' long-lived processes (MCP servers).
    pub fn shutdown(&self) {
        self.host.shutdown();
    }
}

/// An [`EventSink`] that takes note of the calls it records.
pub(crate) struct Observed<'a> {
    pub(crate) inner: &'a mut dyn EventSink,
    pub(crate) notes: CallNotes,
}

impl EventSink for Observed<'_> {
    fn append(&mut self, body: EventBody) -> io::Result<()> {
        self.notes.observe(&body);
        self.inner.append(body)
    }

    /// Always: the notes need every event, even when the log is discarded.
    fn records(&self) -> bool {
        true
    }

    fn idempotent_tools(&mut self, tools: &std::collections::BTreeSet<String>) {
        self.inner.idempotent_tools(tools)
    }
}

impl Runner for LiveRunner {
    fn run(
        &mut self,
        turn: u32,
        file: &SourceFile,
        ir: &Ir,
        profile: &Profile,
        sink: &mut dyn EventSink,
    ) -> Result<RunReport, String> {
        let mut observed = Observed {
            inner: sink,
            notes: CallNotes::default(),
        };
        let mut session = Session::new(file)
            .executors(Executors::Shared {
                host: self.host.clone(),
                registry_bytes: self.registry_bytes.clone(),
            })
            .profile(ProfileSource::Given(profile.clone()))
            .limits(self.limits.clone())
            .log(LogTarget::Sink(Box::new(&mut observed)))
            .id(format!("{}.run{turn}", self.session))
            .cancel(self.cancel.clone());
        if let Some(p) = self.pipeline.take() {
            session = session.pipeline(p);
        }
        if let Some(make) = &mut self.approvers {
            session = session.approver(make());
        }
        let report = session.run(ir).map_err(|f| f.message)?;
        if let Some(e) = report.log_error {
            return Err(e);
        }
        self.pipeline = report.pipeline;
        Ok(self::report(report.result, observed.notes))
    }
}

/// The report of a run's result.
pub(crate) fn report(
    result: Result<crate::runtime::value::Value, crate::runtime::limits::RunError>,
    calls: CallNotes,
) -> RunReport {
    match result {
        Ok(v) => RunReport {
            end: RunEnd::Value(super::feedback::show_value(&v)),
            value: Some(v.to_json()),
            calls,
        },
        Err(e) => RunReport {
            end: RunEnd::Stopped {
                kind: e.kind.as_str().to_string(),
                message: e.message,
            },
            value: None,
            calls,
        },
    }
}
