//! One run of a case: its `setup` command, then the program as a session
//! through [`Session`] (the engine `lt run` uses, its log kept in a
//! [`MemoryStore`]) or the task through the agent loop (`super::agent`),
//! then the invariants, replay, and the criteria.
//!
//! A run executes on a thread of its own ([`crate::control::session::spawn`]),
//! so everything that holds `Rc` values (the IR, the report) stays on it;
//! what comes back is a [`RunRecord`] (plain data).

use super::agent::{self, TaskReady};
use super::criteria::{self, Kind};
use super::record::{self, RunRecord};
use super::suite::{Case, Subject, Suite};
use crate::control::approver::FixedApprover;
use crate::control::session::{
    check_and_lower, replay::replay, Executors, LogTarget, ProfileSource, Rejected, Session,
};
use crate::ir::Ir;
use crate::log::{EventStore, MemoryStore};
use crate::runtime::limits::Limits;
use crate::runtime::value::Value;
use crate::source::SourceFile;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A case made ready to run on one thread: its program checked and
/// lowered (or its agent task's declarations, executors and settings
/// checked), its lt criteria and reward compiled (once per thread: the IR
/// holds `Rc`s).
pub struct Ready {
    /// What runs.
    pub subject: Prepared,
    /// Each criterion: its text and IR.
    pub criteria: Vec<(String, Ir)>,
    /// The reward: its text and IR.
    pub reward: Option<(String, Ir)>,
}

/// A case's subject, ready (one per case and thread: size does not matter).
#[allow(clippy::large_enum_variant)]
pub enum Prepared {
    /// A fixed program: its file and IR.
    Program {
        /// The program's file.
        file: SourceFile,
        /// Its IR.
        ir: Ir,
    },
    /// An agent task.
    Task(TaskReady),
}

/// Reads, checks and lowers a case's program (or checks its agent task,
/// [`agent::ready`]) and compiles its lt criteria. Errors: a file is
/// unreadable or rejected, or a criterion does not type-check (the
/// diagnostics, rendered).
pub fn ready(suite: &Suite, case: &Case, color: bool) -> Result<Ready, String> {
    let subject = match &case.subject {
        Subject::Program(path) => program(case, path, color)?,
        Subject::Task(task) => Prepared::Task(agent::ready(case, task)?),
    };
    let mut compiled = Vec::new();
    let mut reward = None;
    for (which, expr, kind) in criteria::expressions(&case.expect) {
        let origin = criteria::Origin {
            path: &suite.path,
            text: &suite.text,
            case: &case.name,
            which: &which,
        };
        let ir = criteria::compile(&origin, expr, kind, color)
            .map_err(|(msg, _)| format!("case {:?}: {which}: {msg}", case.name))?;
        let item = (expr.get_ref().clone(), ir);
        match kind {
            Kind::Criterion => compiled.push(item),
            Kind::Reward => reward = Some(item),
        }
    }
    Ok(Ready {
        subject,
        criteria: compiled,
        reward,
    })
}

/// Reads, checks and lowers a case's program.
fn program(case: &Case, path: &Path, color: bool) -> Result<Prepared, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("case {:?}: cannot read {}: {e}", case.name, path.display()))?;
    let file = SourceFile::new(path.display().to_string(), text);
    let ir = match check_and_lower(&file) {
        Ok(ir) => ir,
        Err(Rejected::Diagnostics(a)) => {
            return Err(format!(
                "case {:?}: the program is rejected by the checker:\n{}",
                case.name,
                crate::diag::render::render(&file, &a.diagnostics, color)
            ))
        }
        Err(Rejected::Lowering(e)) => return Err(format!("case {:?}: {}", case.name, e.message)),
    };
    executors_cover(case, &ir)?;
    Ok(Prepared::Program { file, ir })
}

/// Every tool the program calls has an executor in the case's executors
/// file: checked before any run, as for an agent case (a run would only
/// fail to start, every time).
fn executors_cover(case: &Case, ir: &Ir) -> Result<(), String> {
    let called = crate::control::session::called_tools(ir);
    if called.is_empty() {
        return Ok(());
    }
    let Some(path) = &case.executors else {
        return Err(format!(
            "case {:?}: the program calls {} and the case names no executors\n  help: set `executors = \"tools.toml\"` in the case or in [defaults]",
            case.name,
            called.join(", ")
        ));
    };
    let registry =
        crate::exec::Registry::load(path).map_err(|e| format!("case {:?}: {e}", case.name))?;
    let missing = registry.missing(called.iter().copied());
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "case {:?}: no executor for {} in {}, which the program calls\n  help: add a [tools.{}] table to {}",
        case.name,
        missing.join(", "),
        path.display(),
        missing[0],
        path.display()
    ))
}

/// Runs `setup` with `sh -c` in `dir`, in a process group of its own, for
/// at most `limit` (the case's `timeout_ms`). Errors: it could not start,
/// exited non-zero (with its stderr), or ran past `limit` (its whole
/// group is killed).
fn setup(command: &str, dir: &Path, limit: Duration) -> Result<(), String> {
    // Its stderr goes to a file, not a pipe: a process it leaves running
    // in the background (a server it starts) may keep that open.
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let err_path =
        std::env::temp_dir().join(format!("lt-eval-setup-{}-{n}.stderr", std::process::id()));
    let err_file = std::fs::File::create(&err_path).map_err(|e| {
        format!(
            "setup `{command}`: cannot create {}: {e}",
            err_path.display()
        )
    })?;
    let result = setup_in(command, dir, limit, err_file);
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&err_path);
    let status = result?;
    if !status.success() {
        let stderr = stderr.trim();
        return Err(if stderr.is_empty() {
            format!("setup `{command}` failed ({status}) and wrote nothing on stderr")
        } else {
            format!("setup `{command}` failed ({status}): {stderr}")
        });
    }
    Ok(())
}

/// [`setup`]'s process: its exit status, or why it has none.
fn setup_in(
    command: &str,
    dir: &Path,
    limit: Duration,
    stderr: std::fs::File,
) -> Result<std::process::ExitStatus, String> {
    use std::os::unix::process::CommandExt as _;
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("setup `{command}` could not start: {e}"))?;
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) | Err(_) => {
                let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
                let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
                let _ = child.wait();
                return Err(format!(
                    "setup `{command}` did not finish within the case's timeout_ms ({} ms); it was killed",
                    limit.as_millis()
                ));
            }
        }
    };
    Ok(status)
}

/// Runs `case` once (run number `n`, from 1), made [`ready`] on this
/// thread, on the runtime `handle`. A case with a
/// `setup` holds `world` from its setup to its session's end, so that runs
/// sharing a world do not see each other's side effects.
pub fn run_once(
    case: &Case,
    ready: &Ready,
    n: usize,
    dir: &Path,
    handle: tokio::runtime::Handle,
    world: &Mutex<()>,
) -> RunRecord {
    let began = Instant::now();
    let mut rec = RunRecord {
        run: n,
        ..RunRecord::default()
    };
    // Time waiting for the world and running setup is neither the run's
    // nor lt eval's overhead.
    let before = began.elapsed();
    let store = MemoryStore::new();
    let limits = Limits {
        timeout: Some(Duration::from_millis(case.timeout_ms)),
        ..Limits::default()
    };
    let guard = case.setup.as_ref().map(|_| {
        world
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    });
    if let Some(cmd) = &case.setup {
        if let Err(e) = setup(cmd, dir, Duration::from_millis(case.timeout_ms)) {
            rec.failed.push(e);
            return rec;
        }
    }
    let id = match (&ready.subject, &case.subject) {
        (Prepared::Program { file, ir }, _) => {
            program_session(case, file, ir, &limits, &store, handle, &mut rec)
        }
        (Prepared::Task(t), Subject::Task(task)) => {
            agent::session(case, task, t, &store, handle, &mut rec)
        }
        (Prepared::Task(_), Subject::Program(_)) => None,
    };
    drop(guard);
    let after = Instant::now();
    let Some(id) = id else { return rec };
    let text = store.to_jsonl(&id);
    let events = match store.load(&id) {
        Ok(l) => l.events,
        Err(e) => {
            rec.invariants.push(format!("log verifies: {e}"));
            Vec::new()
        }
    };
    rec.read_calls(&events);
    rec.invariants = record::invariants(&text, &events);
    match &ready.subject {
        Prepared::Program { ir, .. } => check_replay(&mut rec, &events, ir, &limits),
        Prepared::Task(_) => agent::check_replay(&mut rec, events),
    }
    if rec.errored.is_none() {
        // An errored run (the model unreachable) is not judged.
        rec.failed.extend(criteria::ready_made(&case.expect, &rec));
        lt_criteria(&mut rec, ready);
    }
    rec.overhead_ms = (before + after.elapsed()).as_secs_f64() * 1000.0;
    rec
}

/// Runs a fixed program as a session into `store`, filling `rec`'s ending
/// and session time. Returns the session's id (`None`: it did not start,
/// the reason in `rec.failed`).
fn program_session(
    case: &Case,
    file: &SourceFile,
    ir: &Ir,
    limits: &Limits,
    store: &MemoryStore,
    handle: tokio::runtime::Handle,
    rec: &mut RunRecord,
) -> Option<String> {
    let session = Session::new(file)
        .executors(match &case.executors {
            Some(p) => Executors::File(p.display().to_string()),
            None => Executors::None,
        })
        .profile(match &case.profile {
            Some(p) => ProfileSource::File(p.display().to_string()),
            None => ProfileSource::FromExecutors,
        })
        .limits(limits.clone())
        .log(LogTarget::Store(store))
        .approver(Box::new(FixedApprover::new(
            false,
            "lt eval",
            "lt eval answers no approval",
        )))
        .runtime(handle);
    let session_began = Instant::now();
    let report = session.run(ir);
    rec.ms = session_began.elapsed().as_secs_f64() * 1000.0;
    let report = match report {
        Ok(r) => r,
        Err(f) => {
            rec.failed.push(format!("the session did not start: {f}"));
            return None;
        }
    };
    match report.failure(ir) {
        None => {
            rec.ok = true;
            rec.value = report
                .result
                .as_ref()
                .map(|v| v.to_json())
                .unwrap_or_default();
        }
        Some(e) => {
            rec.value = serde_json::json!({"kind": e.kind.as_str(), "message": e.message});
            rec.error = Some(e.message.clone());
        }
    }
    Some(report.id.clone())
}

/// Replays the run from its log (`lt replay`'s code) under the recorded
/// profile: a difference is a violated invariant.
fn check_replay(
    rec: &mut RunRecord,
    events: &[crate::log::Event],
    ir: &crate::ir::Ir,
    limits: &Limits,
) {
    let Some(recorded) = crate::control::session::replay::Recorded::from_events(events) else {
        return;
    };
    let profile = match recorded.profile() {
        Ok(p) => p,
        Err(e) => {
            rec.invariants
                .push(format!("replay reproduces: the recorded profile: {e}"));
            return;
        }
    };
    if let crate::control::session::replay::Verdict::Differs { message, .. } =
        replay(events, ir, profile, limits.clone())
    {
        rec.invariants.push(format!("replay reproduces: {message}"));
    }
}

/// Evaluates the case's lt criteria and reward over the run.
fn lt_criteria(rec: &mut RunRecord, ready: &Ready) {
    if ready.criteria.is_empty() && ready.reward.is_none() {
        return;
    }
    let session = rec.session_json();
    for (i, (expr, ir)) in ready.criteria.iter().enumerate() {
        match criteria::evaluate(ir, &session) {
            Ok(Value::Bool(true)) => {}
            Ok(_) => rec.failed.push(format!("criteria[{i}]: `{expr}` is false")),
            Err(e) => rec
                .failed
                .push(format!("criteria[{i}]: `{expr}` stopped: {e}")),
        }
    }
    if let Some((expr, ir)) = &ready.reward {
        match criteria::evaluate(ir, &session) {
            Ok(Value::Float(f)) => rec.reward = Some(f),
            Ok(_) => {}
            Err(e) => rec.failed.push(format!("reward: `{expr}` stopped: {e}")),
        }
    }
}
