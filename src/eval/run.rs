//! One run of a case: its `setup` command, then the program as a session
//! through [`Session`] (the engine `lt run` uses, its log kept in a
//! [`MemoryStore`]), then the invariants, replay, and the criteria.
//!
//! A run executes on a thread of its own ([`crate::control::session::spawn`]),
//! so everything that holds `Rc` values (the IR, the report) stays on it;
//! what comes back is a [`RunRecord`] (plain data).

use super::criteria::{self, Kind};
use super::record::{self, RunRecord};
use super::suite::Case;
use crate::control::approver::FixedApprover;
use crate::control::session::{
    check_and_lower, replay::replay, Executors, LogTarget, ProfileSource, Rejected, Session,
};
use crate::log::{EventStore, MemoryStore};
use crate::runtime::limits::Limits;
use crate::source::SourceFile;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Reads and checks a case's program. Errors: the file is unreadable or
/// rejected (the diagnostics, rendered).
pub fn program(case: &Case, color: bool) -> Result<SourceFile, String> {
    let text = std::fs::read_to_string(&case.program).map_err(|e| {
        format!(
            "case {:?}: cannot read {}: {e}",
            case.name,
            case.program.display()
        )
    })?;
    let file = SourceFile::new(case.program.display().to_string(), text);
    match check_and_lower(&file) {
        Ok(_) => Ok(file),
        Err(Rejected::Diagnostics(a)) => Err(format!(
            "case {:?}: the program is rejected by the checker:\n{}",
            case.name,
            crate::diag::render::render(&file, &a.diagnostics, color)
        )),
        Err(Rejected::Lowering(e)) => Err(format!("case {:?}: {}", case.name, e.message)),
    }
}

/// Runs `setup` with `sh -c` in `dir`. Errors: it could not start or
/// exited non-zero (with its stderr).
fn setup(command: &str, dir: &Path) -> Result<(), String> {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("setup `{command}` could not start: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "setup `{command}` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// Runs `case` once (run number `n`, from 1) with `file` (its program,
/// checked by [`program`]) on the runtime `handle`. A case with a
/// `setup` holds `world` from its setup to its session's end, so that runs
/// sharing a world do not see each other's side effects.
pub fn run_once(
    case: &Case,
    file: &SourceFile,
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
    let ir = match check_and_lower(file) {
        Ok(ir) => ir,
        Err(_) => {
            rec.failed
                .push("the program no longer checks (it changed on disk?)".into());
            return rec;
        }
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
        if let Err(e) = setup(cmd, dir) {
            rec.failed.push(e);
            return rec;
        }
    }
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
        .log(LogTarget::Store(&store))
        .approver(Box::new(FixedApprover::new(
            false,
            "lt eval",
            "lt eval answers no approval",
        )))
        .runtime(handle);
    let session_began = Instant::now();
    let report = session.run(&ir);
    rec.ms = session_began.elapsed().as_secs_f64() * 1000.0;
    drop(guard);
    let after = Instant::now();
    let report = match report {
        Ok(r) => r,
        Err(f) => {
            rec.failed.push(format!("the session did not start: {f}"));
            return rec;
        }
    };
    match report.failure(&ir) {
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
    let text = store.to_jsonl(&report.id);
    let events = match store.load(&report.id) {
        Ok(l) => l.events,
        Err(e) => {
            rec.invariants.push(format!("log verifies: {e}"));
            Vec::new()
        }
    };
    rec.read_calls(&events);
    rec.invariants = record::invariants(&text, &events);
    check_replay(&mut rec, &events, &ir, &limits);
    rec.failed.extend(criteria::ready_made(&case.expect, &rec));
    lt_criteria(&mut rec, case, file);
    rec.overhead_ms = (before + after.elapsed()).as_secs_f64() * 1000.0;
    rec
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
fn lt_criteria(rec: &mut RunRecord, case: &Case, file: &SourceFile) {
    if case.expect.criteria.is_empty() && case.expect.reward.is_none() {
        return;
    }
    let session = rec.session_json();
    for (i, expr) in case.expect.criteria.iter().enumerate() {
        let name = format!("{} criteria[{i}]", file.name);
        match criteria::compile(&name, expr, Kind::Criterion, false) {
            Ok(ir) => match criteria::evaluate(&ir, &session) {
                Ok(crate::runtime::value::Value::Bool(true)) => {}
                Ok(_) => rec.failed.push(format!("criteria[{i}]: `{expr}` is false")),
                Err(e) => rec
                    .failed
                    .push(format!("criteria[{i}]: `{expr}` stopped: {e}")),
            },
            Err((msg, _)) => rec.failed.push(format!("criteria[{i}]: {msg}")),
        }
    }
    if let Some(expr) = &case.expect.reward {
        let name = format!("{} reward", file.name);
        if let Ok(ir) = criteria::compile(&name, expr, Kind::Reward, false) {
            match criteria::evaluate(&ir, &session) {
                Ok(crate::runtime::value::Value::Float(f)) => rec.reward = Some(f),
                Ok(_) => {}
                Err(e) => rec.failed.push(format!("reward: `{expr}` stopped: {e}")),
            }
        }
    }
}
