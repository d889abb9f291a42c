//! `lt.run`: one session through the library's
//! [`Session`](lt::control::session::Session), the engine every front end
//! uses (`lt run` included): check, lower, executors, profile, log, run,
//! report. Python functions are tools through an in-process executor
//! ([`crate::tools`]); a tools.toml path uses the usual executors.
//!
//! **Threads and the GIL.** The session runs on a thread of its own (the
//! big stack the checker and interpreter expect,
//! [`spawn`](lt::control::session::spawn)); the calling thread waits for
//! it with the GIL released, taking it back every 50 ms only to let Python
//! handle signals. Python tools run on Python threads ([`crate::worker`]),
//! each taking the GIL for its call alone, so sessions in several threads
//! run side by side, and a call stops at its deadline even when its
//! function does not return.
//!
//! **Stopping.** When Python reports a signal (`KeyboardInterrupt`), or
//! the [`RunHandle`] given is cancelled (`lt.run_async`'s task cancelled),
//! the session is cancelled: its running calls are abandoned, the
//! interpreter stops at its next check, `session_ended` records
//! `cancelled`. The wait goes on until the session has ended, then the
//! exception is raised; a second Ctrl-C stops waiting. When Python exits
//! with a session in flight (a daemon thread), `atexit` cancels it
//! ([`crate::gate`]).

use crate::check::{analyse, analysis_json, declarations_only, Declarations};
use crate::errors::{config_error, internal, panic_text, start_failure, Failure};
use crate::profile::ProfileArg;
use crate::work::RunState;
use lt::control::approver::FixedApprover;
use lt::control::report::RunErrorReport;
use lt::control::session::{
    called_tools, lower_checked, spawn, Executors, LogTarget, ProfileSource, Rejected, Session,
};
use lt::runtime::cancel::Cancel;
use lt::runtime::limits::Limits;
use lt::source::SourceFile;
use pyo3::prelude::*;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Everything one run needs, moved to the session's thread.
pub struct RunArgs {
    /// The program.
    pub source: String,
    /// Declarations joined before it.
    pub declarations: Declarations,
    /// Python functions as tools (name → callable), or `None`.
    pub tools: Option<Vec<(String, Py<PyAny>)>>,
    /// What settles a function's result that is not plain data (awaits
    /// an awaitable): [`RunState::settle`].
    pub settle: Option<Py<PyAny>>,
    /// The batch function of the `async` tools, and their names.
    pub batch: Option<(Py<PyAny>, Vec<String>)>,
    /// A tools.toml path.
    pub executors: Option<String>,
    /// The profile.
    pub profile: ProfileArg,
    /// The limits.
    pub limits: Limits,
    /// The event log's path.
    pub log: Option<String>,
    /// Replace a log file that holds an earlier session.
    pub force: bool,
    /// The session's cancellation (a [`RunHandle`]'s, or a new one).
    pub cancel: Cancel,
}

/// `RunHandle()`: what stops a run from another thread (`cancel(reason)`),
/// given to `run(handle=…)`.
#[pyclass(frozen, module = "lt._lt")]
pub struct RunHandle {
    cancel: Cancel,
}

#[pymethods]
impl RunHandle {
    #[new]
    fn new() -> RunHandle {
        RunHandle {
            cancel: Cancel::new(),
        }
    }

    /// Cancels the run (its log ends `cancelled`).
    fn cancel(&self, reason: String) {
        self.cancel.cancel(reason);
    }
}

impl RunHandle {
    /// The run's cancellation token.
    pub fn token(&self) -> Cancel {
        self.cancel.clone()
    }
}

/// How often the waiting thread lets Python look at its signals.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Runs `args` as a session and waits for it (GIL released); the report
/// as JSON, or `{"failure": …}`. `Err`: a Python exception to raise
/// (`KeyboardInterrupt`).
pub fn run(py: Python<'_>, mut args: RunArgs) -> PyResult<Json> {
    let cancel = args.cancel.clone();
    let state = RunState::new(cancel.clone(), args.settle.take());
    let shared = state.clone();
    let Some(registered) = crate::gate::register(&cancel) else {
        return Ok(Failure::new(
            "RunStopped",
            "Python is exiting: the run did not start",
            json!({"kind": "cancelled"}),
        )
        .into_json());
    };
    let (tx, rx) = mpsc::channel::<Json>();
    let spawned = spawn("lt-python-session", move || {
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| session(args, shared)));
        let json = match result {
            Ok(Ok(v)) => v,
            Ok(Err(f)) => f.into_json(),
            Err(payload) => {
                internal(format!("lt panicked: {}", panic_text(payload.as_ref()))).into_json()
            }
        };
        // The session has ended (its log too): `atexit` need not wait.
        drop(registered);
        crate::slot::release_spares();
        let _ = tx.send(json);
    });
    if let Err(e) = spawned {
        return Ok(internal(format!("the session's thread could not start: {e}")).into_json());
    }
    let rx = std::sync::Mutex::new(rx);
    let mut interrupted: Option<PyErr> = None;
    loop {
        match crate::gate::detach(py, || match rx.lock() {
            Ok(rx) => rx.recv_timeout(SIGNAL_POLL),
            Err(_) => Err(mpsc::RecvTimeoutError::Disconnected),
        }) {
            Ok(v) => {
                // Ctrl-C, else a tool's KeyboardInterrupt or SystemExit.
                return match interrupted.or_else(|| state.take_escaped()) {
                    Some(e) => Err(e),
                    None => Ok(v),
                };
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Ok(internal("the session's thread ended without a report").into_json())
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    if interrupted.is_some() {
                        // A second interrupt: stop waiting.
                        return Err(e);
                    }
                    let what = crate::answer::exception_name(py, &e);
                    cancel.cancel(format!("interrupted in Python ({what})"));
                    interrupted = Some(e);
                }
            }
        }
    }
}

/// The session itself, on its own thread.
fn session(args: RunArgs, state: Arc<RunState>) -> Result<Json, Failure> {
    let cancel = args.cancel.clone();
    declarations_only(&args.declarations)?;
    let (file, analysis) = match analyse("<program>", &args.source, &args.declarations) {
        Ok(x) => x,
        Err(report) => return Err(rejected(report)),
    };
    let ir = match lower_checked(analysis) {
        Ok(ir) => ir,
        Err(Rejected::Diagnostics(a)) => return Err(rejected(analysis_json(&file, &a))),
        Err(Rejected::Lowering(e)) => return Err(internal(e.message)),
    };
    if let Some(log) = &args.log {
        lt::frontend::refuse_replacing_log(log, args.force).map_err(|(message, help)| {
            Failure::new(
                "ConfigError",
                message,
                json!({"file": log, "help": help.replace("--force", "force=True"), "stage": "log"}),
            )
        })?;
    }
    let executors = match (args.tools, &args.executors) {
        (Some(tools), _) => {
            let host = crate::tools::host(tools, args.batch, state);
            let missing = host.missing(called_tools(&ir));
            if let Some(tool) = missing.first() {
                return Err(Failure::new(
                    "ConfigError",
                    format!("the program calls tool {tool}, and tools= has no function for it"),
                    json!({"help": format!("add it: tools={{\"{tool}\": {tool}, …}}, a function taking the tool's argument and returning its result"), "stage": "executors", "file": null, "line": null, "column": null}),
                ));
            }
            Executors::Custom {
                host: Box::new(host),
                venues: BTreeMap::new(),
            }
        }
        (None, Some(path)) => Executors::File(path.clone()),
        (None, None) => Executors::None,
    };
    let profile = match &args.profile {
        ProfileArg::None if args.executors.is_some() => ProfileSource::FromExecutors,
        ProfileArg::None => ProfileSource::Default,
        ProfileArg::Path(p) => ProfileSource::File(p.clone()),
        table @ ProfileArg::Table(_) => match table.load().map_err(|e| config_error(&e))? {
            Some(p) => ProfileSource::Given(p),
            None => ProfileSource::Default,
        },
    };
    let mut inputs: Vec<String> = args.executors.iter().cloned().collect();
    if let ProfileArg::Path(p) = &args.profile {
        inputs.push(p.clone());
    }
    let report = Session::new(&file)
        .executors(executors)
        .profile(profile)
        .limits(args.limits)
        .log(match &args.log {
            Some(p) => LogTarget::File(p.clone()),
            None => LogTarget::None,
        })
        .inputs(inputs)
        .approver(Box::new(FixedApprover::new(
            false,
            "python",
            "lt.run has no one to ask for approvals",
        )))
        .cancel(cancel)
        .run(&ir)
        .map_err(|f| start_failure(&f))?;
    if let Some(e) = report.failure(&ir) {
        return Err(stopped(&file, &e, &report));
    }
    let mut out = serde_json::to_value(report.output(&file, &ir)).unwrap_or(Json::Null);
    if let Some(o) = out.as_object_mut() {
        o.insert("session".into(), json!(report.id));
        o.insert(
            "elapsed_ms".into(),
            json!(report.elapsed.as_secs_f64() * 1e3),
        );
    }
    Ok(out)
}

fn rejected(report: Json) -> Failure {
    let n = report
        .get("diagnostics")
        .and_then(Json::as_array)
        .map_or(0, Vec::len);
    Failure::new(
        "CheckError",
        format!(
            "the program has {} error{}; nothing ran",
            n,
            if n == 1 { "" } else { "s" }
        ),
        json!({ "report": report }),
    )
}

fn stopped(
    file: &SourceFile,
    e: &lt::runtime::limits::RunError,
    report: &lt::control::session::SessionReport,
) -> Failure {
    let r = RunErrorReport::new(file, e);
    Failure::new(
        "RunStopped",
        r.message.clone(),
        json!({"kind": r.kind, "line": r.line, "column": r.column, "help": r.help,
               "calls": report.stats.calls, "steps": report.stats.steps, "session": report.id}),
    )
}

/// The limits of a `limits=` dict (`max_calls`, `max_steps`,
/// `timeout_ms`, `max_list_len`); the rest keep their defaults. Errors:
/// an unknown key or a value that is not a non-negative int.
pub fn limits(given: &Json) -> Result<Limits, Failure> {
    let mut l = Limits::default();
    let Some(map) = given.as_object() else {
        return Ok(l);
    };
    for (k, v) in map {
        let n = v.as_u64().ok_or_else(|| {
            Failure::new(
                "ConfigError",
                format!("limits[{k:?}] is {v}, not a non-negative int"),
                json!({"stage": "input", "help": "e.g. limits={\"max_calls\": 10, \"timeout_ms\": 5000}"}),
            )
        })?;
        match k.as_str() {
            "max_calls" => l.max_calls = n,
            "max_steps" => l.max_steps = n,
            "timeout_ms" => l.timeout = (n > 0).then(|| Duration::from_millis(n)),
            "max_list_len" => l.max_list_len = n as usize,
            other => {
                return Err(Failure::new(
                    "ConfigError",
                    format!("limits has no key {other:?}"),
                    json!({"stage": "input", "help": "the keys are max_calls, max_steps, timeout_ms, max_list_len"}),
                ))
            }
        }
    }
    Ok(l)
}
