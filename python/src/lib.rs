//! `lt._lt`: the extension module of the Python package (issue 28). It is
//! a front end over the library, like the command line: `check` is `lt
//! check`'s checker, `run` builds the library's
//! [`Session`](lt::control::session::Session) (the one engine), `replay`
//! is [`replay_log`](lt::control::session::replay::replay_log), `prompt`
//! is [`system_prompt`](lt::agent::prompt::system_prompt).
//!
//! Every function returns plain data (dicts from JSON) or
//! `{"failure": {"class": …}}`, which `lt/__init__.py` turns into typed
//! results and `lt.Error` subclasses. A panic in lt is caught and becomes
//! `lt.InternalError`, never a crash of the Python process.

mod answer;
mod check;
mod convert;
mod errors;
mod fast;
mod fork;
mod gate;
mod profile;
mod run;
mod schemas;
mod slot;
mod spin;
mod tools;
mod work;
mod worker;

use errors::{internal, panic_text, Failure};
use profile::ProfileArg;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::{json, Value as Json};

/// Runs `f`, a panic becoming `lt.InternalError`.
fn guarded(f: impl FnOnce() -> Result<Json, Failure>) -> Json {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(failure)) => failure.into_json(),
        Err(payload) => {
            internal(format!("lt panicked: {}", panic_text(payload.as_ref()))).into_json()
        }
    }
}

/// Runs `f` on a thread with the session's big stack (deep programs),
/// the GIL released.
fn on_big_stack(
    py: Python<'_>,
    f: impl FnOnce() -> Result<Json, Failure> + Send + 'static,
) -> Json {
    gate::detach(py, || {
        match lt::control::session::spawn("lt-python-check", move || guarded(f)) {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|_| internal("the checker's thread panicked").into_json()),
            Err(e) => internal(format!("the checker's thread could not start: {e}")).into_json(),
        }
    })
}

fn profile_arg(
    path: Option<String>,
    table: Option<&Bound<'_, PyAny>>,
) -> Result<ProfileArg, Failure> {
    Ok(match (path, table) {
        (Some(p), _) => ProfileArg::Path(p),
        (None, Some(t)) => ProfileArg::Table(convert::from_py(t, "profile").map_err(|why| {
            Failure::new(
                "ConfigError",
                why,
                json!({"stage": "profile", "file": "<profile dict>"}),
            )
        })?),
        (None, None) => ProfileArg::None,
    })
}

/// `v` as a Python object, `v` then dropped without recursing (a deep
/// value on a thread with a small stack).
fn to_py(py: Python<'_>, v: Json) -> PyResult<Py<PyAny>> {
    let converted = convert::to_py(py, &v);
    lt::runtime::boundary::drop_deep(v);
    Ok(converted?.unbind())
}

/// `check(source, declarations, profile_path, profile_table)`: the check
/// report (`lt check --json`'s fields, each diagnostic `rendered`).
#[pyfunction]
#[pyo3(name = "check", signature = (source, declarations=None, profile_path=None, profile_table=None))]
fn py_check(
    py: Python<'_>,
    source: String,
    declarations: Option<(String, String)>,
    profile_path: Option<String>,
    profile_table: Option<Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let profile = match profile_arg(profile_path, profile_table.as_ref()) {
        Ok(p) => p,
        Err(f) => return to_py(py, f.into_json()),
    };
    let v = on_big_stack(py, move || check::check(&source, &declarations, &profile));
    to_py(py, v)
}

/// `run(source, declarations, tools, settle, batch, async_tools,
/// executors, profile_path, profile_table, limits, log, force, handle)`: a
/// session's report. `settle(result, job)` gives the value of a tool's
/// result that is not plain data (awaits an awaitable); `batch` performs
/// the calls of a batch to the tools named in `async_tools` together.
#[pyfunction]
#[pyo3(name = "run", signature = (source, declarations=None, tools=None, settle=None, batch=None, async_tools=None, executors=None,
                    profile_path=None, profile_table=None, limits=None, log=None, force=false, handle=None))]
#[allow(clippy::too_many_arguments)]
fn py_run(
    py: Python<'_>,
    source: String,
    declarations: Option<(String, String)>,
    tools: Option<Bound<'_, PyDict>>,
    settle: Option<Py<PyAny>>,
    batch: Option<Py<PyAny>>,
    async_tools: Option<Vec<String>>,
    executors: Option<String>,
    profile_path: Option<String>,
    profile_table: Option<Bound<'_, PyAny>>,
    limits: Option<Bound<'_, PyAny>>,
    log: Option<String>,
    force: bool,
    handle: Option<Bound<'_, run::RunHandle>>,
) -> PyResult<Py<PyAny>> {
    let cancel = handle.map_or_else(lt::runtime::cancel::Cancel::new, |h| h.get().token());
    let prepared = (|| -> Result<run::RunArgs, Failure> {
        let profile = profile_arg(profile_path, profile_table.as_ref())?;
        let limits = match &limits {
            Some(l) => run::limits(
                &convert::from_py(l, "limits")
                    .map_err(|why| Failure::new("ConfigError", why, json!({"stage": "input"})))?,
            )?,
            None => lt::runtime::limits::Limits::default(),
        };
        let tools = match &tools {
            Some(d) => {
                let mut list = Vec::new();
                for (k, v) in d.iter() {
                    let name: String = k.extract().map_err(|_| {
                        Failure::new(
                            "ConfigError",
                            "tools= keys must be tool names (str)",
                            json!({"stage": "executors"}),
                        )
                    })?;
                    list.push((name, v.unbind()));
                }
                Some(list)
            }
            None => None,
        };
        Ok(run::RunArgs {
            source,
            declarations,
            tools,
            settle,
            batch: batch.map(|b| (b, async_tools.unwrap_or_default())),
            executors,
            profile,
            limits,
            log,
            force,
            cancel,
        })
    })();
    let v = match prepared {
        Ok(args) => run::run(py, args)?,
        Err(f) => f.into_json(),
    };
    to_py(py, v)
}

/// `replay(log)`: the verdict of replaying a session's log.
#[pyfunction]
fn replay(py: Python<'_>, log: String) -> PyResult<Py<PyAny>> {
    let v = on_big_stack(py, move || {
        use lt::control::session::replay::{replay_log, ReplaySetupError};
        use lt::log::{EventStore, JsonlFile, Loaded};
        let Loaded { events, report } = JsonlFile::new(&log).load("").map_err(|e| {
            Failure::new(
                "LogError",
                format!("cannot read {log}: {e}"),
                json!({"file": log}),
            )
        })?;
        if let Some(p) = &report.problem {
            return Err(Failure::new(
                "LogError",
                format!("{log}: the log does not verify: {p}"),
                json!({"file": log, "help": format!("`lt log verify {log}` shows the first line at fault")}),
            ));
        }
        match replay_log(&events, &log, None, None) {
            Ok(verdict) => Ok(verdict.to_json()),
            Err(ReplaySetupError::Log(msg)) => {
                Err(Failure::new("LogError", msg, json!({"file": log})))
            }
            Err(ReplaySetupError::Internal(msg)) => Err(internal(msg)),
            Err(ReplaySetupError::Rejected(file, analysis)) => Err(Failure::new(
                "CheckError",
                "the recorded program is rejected by this lt's checker",
                json!({"report": check::analysis_json(&file, &analysis)}),
            )),
        }
    });
    to_py(py, v)
}

/// `prompt(declarations)`: the system prompt of the agent loop (the guide
/// for models and the declarations), or a CheckError failure.
#[pyfunction]
fn prompt(py: Python<'_>, declarations: String) -> PyResult<Py<PyAny>> {
    let v = guarded(|| {
        use lt::agent::prompt::{load_declarations, system_prompt};
        let file = lt::source::SourceFile::new("<tools>", declarations.clone());
        match load_declarations(&file.text) {
            Ok(d) => Ok(json!({"prompt": system_prompt(&d.text), "tools": d.tools})),
            Err(e) => Err(Failure::new(
                "CheckError",
                "the declarations have errors",
                json!({"report": check::declarations_report(&file, &e.diagnostics, e.truncated)}),
            )),
        }
    });
    to_py(py, v)
}

/// `import_tools(text, format)`: definitions (JSON text) imported as
/// declarations and a tools.toml skeleton.
#[pyfunction]
fn import_tools(py: Python<'_>, text: String, format: String) -> PyResult<Py<PyAny>> {
    let v = on_big_stack(py, move || schemas::import_definitions(&text, &format));
    to_py(py, v)
}

/// `import_server(command, timeout_ms)`: the tools of a live MCP server,
/// imported.
#[pyfunction]
fn import_server(py: Python<'_>, command: Vec<String>, timeout_ms: u64) -> PyResult<Py<PyAny>> {
    let v = on_big_stack(py, move || schemas::import_server(command, timeout_ms));
    to_py(py, v)
}

/// `export_tools(declarations, format)`: the definitions of the declared
/// tools.
#[pyfunction]
fn export_tools(
    py: Python<'_>,
    declarations: (String, String),
    format: String,
) -> PyResult<Py<PyAny>> {
    let v = on_big_stack(py, move || {
        schemas::export_definitions(&declarations.0, &declarations.1, &format)
    });
    to_py(py, v)
}

/// `main(argv)`: the `lt` command line (`lt.cli`'s entry point, the `lt`
/// command the wheel installs), run on a thread with the CLI's big stack,
/// the GIL released; its exit status.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> u8 {
    gate::detach(py, || {
        match lt::control::session::spawn("lt-cli", move || lt::cli::exit_status(argv)) {
            Ok(handle) => handle.join().unwrap_or_else(|_| {
                eprintln!(
                    "error: internal error in lt (this is a bug; please report it with the input)"
                );
                101
            }),
            Err(e) => {
                eprintln!("error: cannot start lt: {e}");
                2
            }
        }
    })
}

/// `_retire_after(seconds)`: how long an idle pool thread sleeps before it
/// may end (60 s unless set; for the tests). Errors: `ValueError` for a
/// negative or non-finite number.
#[pyfunction]
#[pyo3(name = "_retire_after")]
fn retire_after(seconds: f64) -> PyResult<()> {
    let after = std::time::Duration::try_from_secs_f64(seconds).map_err(|e| {
        pyo3::exceptions::PyValueError::new_err(format!("_retire_after({seconds}): {e}"))
    })?;
    worker::set_retire_after(after);
    Ok(())
}

/// The extension module.
#[pymodule]
fn _lt(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(py_check, m)?)?;
    m.add_function(wrap_pyfunction!(py_run, m)?)?;
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_function(wrap_pyfunction!(prompt, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(import_tools, m)?)?;
    m.add_function(wrap_pyfunction!(import_server, m)?)?;
    m.add_function(wrap_pyfunction!(export_tools, m)?)?;
    m.add_function(wrap_pyfunction!(gate::python_exiting, m)?)?;
    m.add_function(wrap_pyfunction!(fork::before_fork, m)?)?;
    m.add_function(wrap_pyfunction!(fork::after_fork_in_parent, m)?)?;
    m.add_function(wrap_pyfunction!(fork::after_fork_in_child, m)?)?;
    m.add_class::<run::RunHandle>()?;
    m.add_class::<worker::Job>()?;
    m.add_function(wrap_pyfunction!(fast::giver, m)?)?;
    m.add_function(wrap_pyfunction!(retire_after, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
