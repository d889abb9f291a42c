//! The session engine: one place that runs a program as a control-plane
//! session. Every front end (`lt run`, `lt resume`, `lt replay`, `lt
//! compat`, `lt agent`, and later the server, the MCP server, the
//! evaluator and the Python package) builds a [`Session`] and renders its
//! typed [`SessionReport`]; none re-derives the order below.
//!
//! ```text
//! Session::new(&file)  .executors(…) .profile(…) .limits(…) .log(…) .client(…)
//!                      .approver(…) .cancel(…) .runtime(handle) .observer(…) .tap(…)
//!   run(&ir):    executors loaded and matched ─▶ profile ─▶ runtime ─▶ log opened
//!                ─▶ client channel ─▶ session_started ─▶ interpreter under the
//!                ControlPlane ─▶ session_ended ─▶ executors shut down ─▶ report
//!   resume(&ir, reopened): the same, the log's calls answered from it first
//!                (ReplayHost), then session_resumed and live (ResumeHost)
//!   replay::replay(events, &ir, profile, limits): no executors, no log
//! ```
//!
//! **Threads.** Values are `Rc`, so a session runs on one thread: the
//! caller's. [`spawn`] gives a session a thread of its own with the big
//! stack the interpreter and checker expect (256 MiB, reserved, not
//! committed); a server runs each session that way, many on one tokio
//! runtime ([`Session::runtime`]).
//!
//! **Cancellation.** [`Session::cancel`] hands the session a token:
//! cancelling it kills the session's running tools and stops the
//! interpreter at its next check (`cancelled`, recorded in
//! `session_ended`); [`Cancel::abandon`](crate::runtime::cancel::Cancel)
//! stops it without recording anything more, leaving the log resumable.

mod events;
mod guard;
mod observe;
mod prepare;
pub mod replay;

pub use events::{ended, limits_json, recorded_limits, same_file, started};
pub use observe::{CallObserver, FinishedCall};
pub use prepare::{called_tools, understated_effects};

use super::approver::{Approver, TerminalApprover};
use super::client::{ClientChannel, StdoutHandoff};
use super::pipeline::Pipeline;
use super::profile::Profile;
use super::replay::ReplayHost;
use super::report::{
    RunErrorReport, RunFailed, RunOutput, RunValue, Stage, StartErrorKind, StartFailure,
};
use super::resume::ResumeHost;
use super::{ControlPlane, Venue};
use crate::exec::ExecutorHost;
use crate::ir::Ir;
use crate::log::{new_session_id, EventBody, EventSink, EventStore, EventTap, ReopenedLog, Tapped};
use crate::runtime::cancel::Cancel;
use crate::runtime::eval::{self, RunStats};
use crate::runtime::host::Host;
use crate::runtime::limits::{Limits, RunError};
use crate::runtime::value::Value;
use crate::source::SourceFile;
use guard::Guarded;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The stack of a session's thread ([`spawn`]): 256 MiB of address space.
pub const SESSION_STACK_BYTES: usize = 256 * 1024 * 1024;

/// Where a session's tools run.
pub enum Executors<'a> {
    /// No executors: a program that calls a tool is refused before it runs
    /// (`missing_executor`), unless its tools are all client-venue ones.
    None,
    /// A tools.toml file: loaded, checked against the program (every called
    /// tool has an executor; effects are not understated), its bytes hashed
    /// into `session_started`, its executors shut down when the session ends.
    File(String),
    /// An executor host the caller keeps across sessions (`lt agent`): not
    /// checked against the program, not shut down.
    Shared {
        /// The host.
        host: ExecutorHost,
        /// The tools.toml bytes it was loaded from.
        registry_bytes: Vec<u8>,
    },
    /// Any host (`lambda_tool`'s host without executors), every tool in the
    /// venue `venues` gives it (server when not named).
    Custom {
        /// The host.
        host: Box<dyn Host + 'a>,
        /// Each tool's venue.
        venues: BTreeMap<String, Venue>,
    },
}

/// Where a session's profile comes from.
#[derive(Clone, Debug)]
pub enum ProfileSource {
    /// Allow everything.
    Default,
    /// A file with a `[profile]` table.
    File(String),
    /// The `[profile]` table of [`Executors::File`], else the default.
    FromExecutors,
    /// This profile (a recorded one, an agent's).
    Given(Profile),
}

/// Where a session's events go.
pub enum LogTarget<'a> {
    /// Nowhere (no event is even built).
    None,
    /// A JSON Lines file (`--log FILE`): refused when it is one of the
    /// session's inputs ([`Session::inputs`]).
    File(String),
    /// A store: the session's log is `store.create(id)`.
    Store(&'a dyn EventStore),
    /// A sink the caller owns (an agent's log holding many runs).
    Sink(Box<dyn EventSink + 'a>),
}

/// The client venue's channel.
pub enum ClientPort {
    /// None: a client-venue call fails as `Unavailable`.
    None,
    /// The process's stdout (calls) and stdin (reports), opened only when
    /// the program calls a client-venue tool of tools.toml; refused when
    /// the program itself came from stdin.
    Stdio {
        /// The program was read from stdin.
        program_on_stdin: bool,
        /// Shared with the front end, which writes its final output
        /// through it ([`StdoutHandoff::write_final`]).
        stdout: StdoutHandoff,
    },
    /// The process's stdout and stdin, always, speaking `wire`
    /// (`lambda_tool --interactive`).
    StdioAlways {
        /// The line format.
        wire: super::client::Wire,
        /// Shared with the front end.
        stdout: StdoutHandoff,
    },
    /// This channel.
    Channel(ClientChannel),
}

/// A session being set up. Build it, then [`Session::run`] (or
/// [`Session::resume`]) it once.
pub struct Session<'a> {
    file: &'a SourceFile,
    executors: Executors<'a>,
    profile: ProfileSource,
    limits: Limits,
    log: LogTarget<'a>,
    inputs: Vec<String>,
    client: ClientPort,
    approver: Box<dyn Approver + 'a>,
    cancel: Cancel,
    runtime: Option<tokio::runtime::Handle>,
    observer: Option<&'a mut dyn CallObserver>,
    tap: Option<&'a mut dyn EventTap>,
    id: Option<String>,
    pipeline: Option<Pipeline>,
}

/// What a session did: its value or why it stopped, what it used, and
/// what became of its log.
pub struct SessionReport {
    /// The session's id (the log's, and the idempotency keys' prefix).
    pub id: String,
    /// The program's value, or why the run stopped.
    pub result: Result<Value, RunError>,
    /// Calls and steps.
    pub stats: RunStats,
    /// Wall-clock time of the run (the interpreter, not the set-up).
    pub elapsed: Duration,
    /// The first failure to write the log: the record is incomplete and
    /// the run counts as failed.
    pub log_error: Option<String>,
    /// Resume: calls answered from the log before going live.
    pub replayed: u64,
    /// Resume: where the program and the log disagreed (nothing ran live,
    /// nothing was appended).
    pub divergence: Option<String>,
    /// The pipeline after the run (budgets charged), for a next run that
    /// continues the same budgets (`lt agent`).
    pub pipeline: Option<Pipeline>,
    /// The session was abandoned ([`Cancel::abandon`]): nothing was recorded
    /// after that point, and the log can be resumed.
    pub abandoned: bool,
}

impl SessionReport {
    /// The typed output of `lt run --json` for this report (`file` and `ir`
    /// are the program's). A log failure is reported as an internal error.
    pub fn output(&self, file: &SourceFile, ir: &Ir) -> RunOutput {
        match (self.failure(ir), &self.result) {
            (Some(e), _) => run_failed(file, &e, self.stats),
            (None, Ok(v)) => RunOutput::Value(RunValue {
                calls: self.stats.calls,
                effects: ir.effects.labels().map(str::to_string).collect(),
                ok: true,
                steps: self.stats.steps,
                ty: ir.ty.to_string(),
                value: v.to_json(),
            }),
            // `failure` is the run's error whenever there is one.
            (None, Err(e)) => run_failed(file, e, self.stats),
        }
    }

    /// Why the run failed, if it did: the log's failure first (an internal
    /// error at the program's root), else the run's error.
    pub fn failure(&self, ir: &Ir) -> Option<RunError> {
        if let Some(msg) = &self.log_error {
            return Some(
                RunError::new(
                    crate::runtime::limits::RunErrorKind::Internal,
                    ir.node(ir.root).span,
                    msg.clone(),
                )
                .with_help("the session's record is incomplete; check the disk and the --log path"),
            );
        }
        self.result.as_ref().err().cloned()
    }
}

/// `{calls, error, ok: false, stage: "run", steps}` for `e`.
pub fn run_failed(file: &SourceFile, e: &RunError, stats: RunStats) -> RunOutput {
    RunOutput::Failed(RunFailed {
        calls: stats.calls,
        error: RunErrorReport::new(file, e),
        ok: false,
        stage: Stage::Run,
        steps: stats.steps,
    })
}

/// Why a program was not lowered: the checker's analysis (every
/// diagnostic), or a lowering failure (a bug in lt: an internal error).
pub enum Rejected {
    /// The checker rejected it (boxed: an analysis is large).
    Diagnostics(Box<crate::types::Analysis>),
    /// Lowering failed.
    Lowering(RunError),
}

/// Checks the program in `file` and lowers it to the IR a session runs.
/// Errors: [`Rejected`]. Needs a big stack on deep programs (see [`spawn`]).
pub fn check_and_lower(file: &SourceFile) -> Result<Ir, Rejected> {
    lower_checked(crate::types::check_source(&file.text))
}

/// Lowers a program the caller checked itself (with more rules: a tool
/// list, a profile's static check). Errors: [`Rejected::Diagnostics`] when
/// `analysis` holds an error, [`Rejected::Lowering`] when lowering fails.
pub fn lower_checked(analysis: crate::types::Analysis) -> Result<Ir, Rejected> {
    if !analysis.is_ok() {
        return Err(Rejected::Diagnostics(Box::new(analysis)));
    }
    let Ok(checked) = analysis.into_checked() else {
        // Unreachable: an analysis without errors always converts.
        return Err(Rejected::Lowering(RunError::internal(
            crate::source::Span::new(0, 0),
            "the checked program could not be taken",
        )));
    };
    crate::ir::lower::lower(&checked).map_err(|e| {
        Rejected::Lowering(RunError::internal(
            e.span,
            format!("lowering failed: {}", e.message),
        ))
    })
}

/// Runs `f` on a thread of its own with [`SESSION_STACK_BYTES`] of stack,
/// the thread a session (and the checker before it) needs; `name` names
/// the thread. The value `f` returns comes back through the handle: it must
/// be `Send`, which a [`SessionReport`] is not (its value holds `Rc`s), so
/// convert it inside `f` (e.g. [`SessionReport::output`], or the value's
/// JSON). Errors: the thread could not be started.
pub fn spawn<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<T>> {
    std::thread::Builder::new()
        .name(name.to_string())
        .stack_size(SESSION_STACK_BYTES)
        .spawn(f)
}

impl<'a> Session<'a> {
    /// A session of the program in `file` (its text is recorded in
    /// `session_started`): no executors, the default profile and limits,
    /// no log, no client, the terminal as approver.
    pub fn new(file: &'a SourceFile) -> Session<'a> {
        Session {
            file,
            executors: Executors::None,
            profile: ProfileSource::Default,
            limits: Limits::default(),
            log: LogTarget::None,
            inputs: Vec::new(),
            client: ClientPort::None,
            approver: Box::new(TerminalApprover),
            cancel: Cancel::new(),
            runtime: None,
            observer: None,
            tap: None,
            id: None,
            pipeline: None,
        }
    }

    /// Where the tools run.
    pub fn executors(mut self, executors: Executors<'a>) -> Self {
        self.executors = executors;
        self
    }

    /// Where the profile comes from.
    pub fn profile(mut self, profile: ProfileSource) -> Self {
        self.profile = profile;
        self
    }

    /// The run's limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Where the events go.
    pub fn log(mut self, log: LogTarget<'a>) -> Self {
        self.log = log;
        self
    }

    /// Files a [`LogTarget::File`] must not overwrite (the program, the
    /// executors, the profile).
    pub fn inputs(mut self, inputs: Vec<String>) -> Self {
        self.inputs = inputs;
        self
    }

    /// The client venue's channel.
    pub fn client(mut self, client: ClientPort) -> Self {
        self.client = client;
        self
    }

    /// Who answers approvals under `approvals = "prompt"`.
    pub fn approver(mut self, approver: Box<dyn Approver + 'a>) -> Self {
        self.approver = approver;
        self
    }

    /// The token that stops the session.
    pub fn cancel(mut self, cancel: Cancel) -> Self {
        self.cancel = cancel;
        self
    }

    /// The tokio runtime the executors run on (multi-thread). Without one
    /// the session starts its own: current-thread when the program calls
    /// no tool, else two workers, shut down when the session ends.
    pub fn runtime(mut self, handle: tokio::runtime::Handle) -> Self {
        self.runtime = Some(handle);
        self
    }

    /// Told of each call as it ends.
    pub fn observer(mut self, observer: &'a mut dyn CallObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Handed each event as the log records it, with its seq and (when the
    /// log is a file) its hash; the events are built even without a log
    /// ([`crate::log::tap`]). The OTLP exporter of `lt run` builds its
    /// spans so.
    pub fn tap(mut self, tap: &'a mut dyn EventTap) -> Self {
        self.tap = Some(tap);
        self
    }

    /// The session's id (default: a new random one, [`new_session_id`]):
    /// the prefix of its idempotency keys and approval tokens. With
    /// [`LogTarget::Store`] and [`LogTarget::File`] it must be 32 lowercase
    /// hex digits (the log's id); with a [`LogTarget::Sink`] it is any text
    /// (an agent's runs are `<agent id>.run<k>`). A resumed session keeps
    /// its log's id: another one is refused.
    pub fn id(mut self, id: String) -> Self {
        self.id = Some(id);
        self
    }

    /// Continue with this pipeline (its budgets charged by earlier runs).
    pub fn pipeline(mut self, pipeline: Pipeline) -> Self {
        self.pipeline = Some(pipeline);
        self
    }

    /// Runs `ir` (checked and lowered from the session's file by
    /// [`check_and_lower`]: the file's text is what the log records, so
    /// replay needs the two to match) as a new session, on this thread,
    /// blocking it until the session ends. Call it from a thread of its own
    /// ([`spawn`]) or a blocking context, not from async code. Errors: it
    /// could not start (nothing ran; the failure says where and why).
    pub fn run(self, ir: &Ir) -> Result<SessionReport, StartFailure> {
        self.start(ir, None)
    }

    /// Continues the session of `reopened` (its program is the session's
    /// file, lowered to `ir`): the calls the log holds are answered from
    /// it, then `session_resumed` is appended and the rest runs live.
    /// The profile should be the recorded one ([`ProfileSource::Given`]).
    pub fn resume(self, ir: &Ir, reopened: ReopenedLog) -> Result<SessionReport, StartFailure> {
        self.start(ir, Some(reopened))
    }

    fn start(
        mut self,
        ir: &Ir,
        reopened: Option<ReopenedLog>,
    ) -> Result<SessionReport, StartFailure> {
        let file = self.file;
        let called = prepare::called_tools(ir);
        let registry = prepare::registry(&self.executors, file, ir, &called)?;
        if let Executors::Shared { host, .. } = &self.executors {
            self.runtime.get_or_insert_with(|| host.handle().clone());
        }
        let calls_tools = !called.is_empty() && !matches!(self.executors, Executors::Custom { .. });
        let (own_runtime, handle) = match self.runtime.take() {
            Some(h)
                if calls_tools
                    && h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread =>
            {
                // Its tasks would run only inside a `block_on`: every call
                // would wait forever.
                return Err(StartFailure::new(
                    Stage::Runtime,
                    StartErrorKind::Usage,
                    "the session's runtime is a current-thread tokio runtime, which cannot drive its tools",
                )
                .with_help("give Session::runtime the handle of a multi-thread runtime"));
            }
            Some(h) => (None, h),
            None => {
                // Only an executor host needs worker threads.
                let rt = build_runtime(!calls_tools)?;
                let h = rt.handle().clone();
                crate::exec::ignore_file_size_signal(&h);
                (Some(rt), h)
            }
        };
        let log_path = match &self.log {
            LogTarget::File(p) => Some(p.clone()),
            _ => None,
        };
        let client = prepare::client(
            std::mem::replace(&mut self.client, ClientPort::None),
            file,
            &called,
            registry.as_ref(),
            log_path.as_deref(),
        )?;
        let executors = std::mem::replace(&mut self.executors, Executors::None);
        let prepared = prepare::executors(executors, registry, &handle, &self.cancel)?;
        let profile = prepare::profile(&self.profile, &prepared.profile_text)?;
        let (id, sink, events, dropped) = match reopened {
            Some(r) => {
                let id = r
                    .events
                    .first()
                    .map(|e| e.session.clone())
                    .unwrap_or_default();
                // The idempotency keys and minted tokens are the log's
                // session's: another id would re-run calls under new keys.
                if let Some(other) = self.id.take().filter(|other| *other != id) {
                    return Err(StartFailure::new(
                        Stage::Log,
                        StartErrorKind::Usage,
                        format!("a resumed session keeps its log's id {id}, not {other}"),
                    )
                    .with_help("leave out Session::id when resuming"));
                }
                (
                    id,
                    r.sink as Box<dyn EventSink + 'a>,
                    Some(r.events),
                    r.dropped_bytes,
                )
            }
            None => {
                let id = self.id.take().unwrap_or_else(new_session_id);
                let target = std::mem::replace(&mut self.log, LogTarget::None);
                let sink = prepare::open_log(target, &self.inputs, &id)?;
                (id, sink, None, 0)
            }
        };
        let sink = match self.tap.take() {
            Some(tap) => {
                let next = events
                    .as_ref()
                    .and_then(|e| e.last())
                    .map_or(0, |e| e.seq + 1);
                Box::new(Tapped::new(sink, tap, &id, next)) as Box<dyn EventSink + 'a>
            }
            None => sink,
        };
        // From here the session records its interruption and settles.
        self.cancel.will_settle();
        let sink = Guarded::new(sink, self.cancel.clone());
        let plane_id = self.id.take().unwrap_or_else(|| id.clone());
        let mut plane =
            ControlPlane::new(prepared.host, profile.clone(), &ir.tools, sink, plane_id)
                .with_limits(self.limits.clone())
                .with_tool_traits(prepared.venues, prepared.idempotent)
                .with_approver(std::mem::replace(
                    &mut self.approver,
                    Box::new(TerminalApprover),
                ));
        if events.is_some() {
            plane = plane.resumed();
        }
        if let Some(p) = self.pipeline.take() {
            plane = plane.with_pipeline(p);
        }
        if let Some(c) = client.open() {
            plane = plane.with_client(c);
        }
        let shutdown = prepared.owns.then_some(prepared.executor).flatten();
        let cancel = self.cancel.clone();
        let report = match events {
            None => self.run_fresh(ir, plane, &prepared.registry_bytes, &id),
            Some(events) => {
                self.run_resumed(ir, plane, events, dropped, &prepared.registry_bytes, &id)
            }
        };
        if let Some(host) = &shutdown {
            // Normally done inside the run, right after the interpreter
            // returns; again here for a run that failed to start.
            host.shutdown();
        }
        drop(shutdown);
        // Whatever happened, the session records nothing more.
        cancel.settle();
        if let Some(rt) = own_runtime {
            // Waiting for its tasks is not allowed where blocking is not
            // (a caller inside async code): there it is let go instead.
            if tokio::runtime::Handle::try_current().is_ok() {
                rt.shutdown_background();
            } else {
                rt.shutdown_timeout(Duration::from_secs(2));
            }
        }
        report
    }

    fn run_fresh<H: Host, S: EventSink>(
        self,
        ir: &Ir,
        mut plane: ControlPlane<'_, H, S>,
        registry_bytes: &[u8],
        id: &str,
    ) -> Result<SessionReport, StartFailure> {
        let started = started(
            self.file,
            plane_profile(&plane),
            registry_bytes,
            &self.limits,
        );
        if let Err(msg) = plane.record(started) {
            return Err(StartFailure::new(Stage::Log, StartErrorKind::Log, msg));
        }
        let began = Instant::now();
        let (result, stats) = interpret(ir, &mut plane, &self.limits, &self.cancel, self.observer);
        let elapsed = began.elapsed();
        let abandoned = self.cancel.is_abandoned();
        if !abandoned {
            let _ = plane.record(ended(self.file, ir, &result, stats));
        } else if self.cancel.is_interrupted() {
            let _ = plane.record_last(guard::interrupted(&self.cancel));
        }
        self.cancel.settle();
        let log_error = plane.log_error().map(str::to_string);
        Ok(SessionReport {
            id: id.to_string(),
            result,
            stats,
            elapsed,
            log_error: log_error.filter(|_| !abandoned),
            replayed: 0,
            divergence: None,
            pipeline: Some(plane.into_pipeline()),
            abandoned,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn run_resumed<H: Host, S: EventSink>(
        self,
        ir: &Ir,
        live: ControlPlane<'_, H, S>,
        events: Vec<crate::log::Event>,
        dropped_bytes: u64,
        registry_bytes: &[u8],
        id: &str,
    ) -> Result<SessionReport, StartFailure> {
        let profile = plane_profile(&live).clone();
        let replay = ReplayHost::new(&events, profile, &ir.tools)
            .with_limits(self.limits.clone())
            .resuming();
        let marker = EventBody::SessionResumed {
            lt_version: env!("CARGO_PKG_VERSION").to_string(),
            registry_hash: crate::log::sha256_hex(registry_bytes),
            dropped_bytes,
        };
        let mut host = ResumeHost::new(replay, live, marker).after_interruption(&events);
        if dropped_bytes > 0 {
            host = host.after_torn_line();
        }
        let began = Instant::now();
        let (result, stats) = interpret(ir, &mut host, &self.limits, &self.cancel, self.observer);
        let elapsed = began.elapsed();
        let cancelled = self.cancel.is_cancelled();
        let divergence = host
            .divergence()
            .map(|d| format!("non-determinism {d}"))
            .or_else(|| {
                // The program ended while the log still had calls for it
                // (not a difference when it was stopped from outside).
                if cancelled {
                    return None;
                }
                let rest = host.unreplayed()?;
                let e = rest.iter().find(|e| e.body.call_id().is_some())?;
                Some(format!(
                    "the program ended, but the log goes on with a {} event (#{}) for {}",
                    e.kind(),
                    e.seq,
                    e.body.call_id().unwrap_or_default()
                ))
            });
        let report = |result, log_error, replayed, divergence, pipeline| SessionReport {
            id: id.to_string(),
            result,
            stats,
            elapsed,
            log_error,
            replayed,
            divergence,
            pipeline,
            abandoned: self.cancel.is_abandoned(),
        };
        if divergence.is_some() {
            // Nothing ran live and nothing is appended; the client channel
            // (if any) is closed before the caller prints anything.
            let replayed = host.replayed();
            drop(host);
            return Ok(report(result, None, replayed, divergence, None));
        }
        if self.cancel.is_abandoned() {
            // Nothing more is recorded but why it ended, when it was
            // interrupted: the log stays resumable.
            let replayed = host.replayed();
            if self.cancel.is_interrupted() {
                if let Some(mut plane) = host.into_live() {
                    let _ = plane.record_last(guard::interrupted(&self.cancel));
                }
            } else {
                drop(host);
            }
            self.cancel.settle();
            return Ok(report(result, None, replayed, None, None));
        }
        if let Err(msg) = host.go_live() {
            return Err(StartFailure::new(Stage::Log, StartErrorKind::Log, msg));
        }
        let replayed = host.replayed();
        let Some(mut plane) = host.into_live() else {
            return Err(StartFailure::new(
                Stage::Log,
                StartErrorKind::Log,
                "the session could not go live",
            ));
        };
        if !self.cancel.is_abandoned() {
            let _ = plane.record(ended(self.file, ir, &result, stats));
        }
        let log_error = plane.log_error().map(str::to_string);
        Ok(report(
            result,
            log_error,
            replayed,
            None,
            Some(plane.into_pipeline()),
        ))
    }
}

fn plane_profile<'p, H: Host, S: EventSink>(plane: &'p ControlPlane<'_, H, S>) -> &'p Profile {
    plane.profile()
}

/// Runs the interpreter on `host`, through the observer when there is one.
fn interpret(
    ir: &Ir,
    host: &mut dyn Host,
    limits: &Limits,
    cancel: &Cancel,
    observer: Option<&mut dyn CallObserver>,
) -> (Result<Value, RunError>, RunStats) {
    match observer {
        Some(observer) => {
            let mut observed = observe::Observed {
                inner: host,
                observer,
                n: 0,
            };
            eval::run_cancellable(ir, &mut observed, limits, Some(cancel))
        }
        None => eval::run_cancellable(ir, host, limits, Some(cancel)),
    }
}

/// The session's own runtime: current-thread for a program that calls no
/// tool (starting worker threads was most of a trivial run), else two
/// workers.
fn build_runtime(no_tools: bool) -> Result<tokio::runtime::Runtime, StartFailure> {
    let built = if no_tools {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("lt-io")
            .enable_all()
            .build()
    };
    built.map_err(|e| {
        StartFailure::new(
            Stage::Runtime,
            StartErrorKind::Usage,
            format!("cannot start the tokio runtime: {e}"),
        )
    })
}
