//! `lt eval`: acceptance criteria, regression and convergence over a suite
//! of cases (seed 001's testing and tuning), as a CI gate.
//!
//! ```text
//! SUITE.toml ──suite::load──▶ Suite { cases: program | task (+ tools, model, [agent]),
//!                                      executors, profile, setup, expect }
//!   ──prepare: every program checked (every task's declarations, executors,
//!     settings), every lt criterion/reward checked──▶ (else: nothing runs)
//!   ──N runs per case, up to `jobs` at once, each on a session thread:
//!        setup (sh -c, holding the world lock) ─▶ Session::run (the engine of lt run,
//!        log in a MemoryStore) | agent::task::run_task (lt agent's loop, agent.rs)
//!        ─▶ RunRecord (value, calls, denials, rounds) ─▶ invariants
//!        (log verifies, allow before execution, tools within the profile, replay
//!        reproduces) ─▶ ready-made criteria ─▶ lt criteria and reward
//!   ──summary──▶ per case: success rate + Wilson interval, outcomes, calls, reward
//!   ──▶ table | JSON | JUnit | HTML (html.rs); --min-success and --baseline gates
//! DIR/*.jsonl ──replay::replay_file (lt replay's judgement)──▶ ok | diverges
//! ```
//!
//! Sessions run only through [`crate::control::session::Session`]; this
//! module does no printing (the CLI, `cli/eval.rs`, renders what it returns).

pub mod agent;
pub mod criteria;
pub mod html;
pub mod record;
pub mod replay;
pub mod run;
pub mod suite;
pub mod summary;
mod toml_string;

pub use record::RunRecord;
pub use suite::{load, Case, Suite, SuiteError};
pub use summary::{wilson, CaseSummary, SuiteSummary};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Why a suite did not run at all.
#[derive(Clone, Debug)]
pub enum Refused {
    /// A program is rejected by the checker (rendered diagnostics).
    Program(String),
    /// lt criteria or rewards do not type-check.
    Criteria(Vec<criteria::Rejected>),
    /// The runtime or a thread could not be started.
    Internal(String),
}

/// Checks everything that can be checked before a run: every case's
/// program and every lt criterion and reward. Errors: [`Refused`].
pub fn prepare(suite: &Suite, color: bool) -> Result<(), Refused> {
    let rejected = criteria::check_all(suite, color);
    if !rejected.is_empty() {
        return Err(Refused::Criteria(rejected));
    }
    for case in &suite.cases {
        run::ready(suite, case, color).map_err(Refused::Program)?;
    }
    Ok(())
}

/// Runs every case of `suite` `runs` times, at most `jobs` runs at once,
/// calling `progress(done, total)` after each run. Call [`prepare`]
/// first. Errors: the runtime or a thread could not be started.
pub fn run_suite(
    suite: &Suite,
    runs: usize,
    jobs: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<SuiteSummary, Refused> {
    let began = Instant::now();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("lt-eval-io")
        .enable_all()
        .build()
        .map_err(|e| Refused::Internal(format!("cannot start the tokio runtime: {e}")))?;
    let work: Vec<(usize, usize)> = (0..suite.cases.len())
        .flat_map(|c| (1..=runs).map(move |n| (c, n)))
        .collect();
    let total = work.len();
    let work = Arc::new(work);
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let world = Arc::new(Mutex::new(()));
    let results: Arc<Mutex<Vec<(usize, RunRecord)>>> = Arc::new(Mutex::new(Vec::new()));
    let pool = || -> Result<(), Refused> {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let mut handles = Vec::new();
        for j in 0..jobs.clamp(1, total.max(1)) {
            let (work, next, world, results, tx) = (
                work.clone(),
                next.clone(),
                world.clone(),
                results.clone(),
                tx.clone(),
            );
            let suite = suite.clone();
            let handle = rt.handle().clone();
            let h = crate::control::session::spawn(&format!("lt-eval-{j}"), move || {
                let mut files = std::collections::BTreeMap::new();
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&(c, n)) = work.get(i) else { break };
                    let case = &suite.cases[c];
                    let file = files
                        .entry(c)
                        .or_insert_with(|| run::ready(&suite, case, false));
                    let rec = match file {
                        Ok(ready) => {
                            run::run_once(case, ready, n, &suite.dir, handle.clone(), &world)
                        }
                        Err(e) => RunRecord {
                            run: n,
                            failed: vec![e.clone()],
                            ..RunRecord::default()
                        },
                    };
                    results
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push((c, rec));
                    let _ = tx.send(());
                }
            })
            .map_err(|e| Refused::Internal(format!("cannot start a run thread: {e}")))?;
            handles.push(h);
        }
        drop(tx);
        while rx.recv().is_ok() {
            let d = done.fetch_add(1, Ordering::SeqCst) + 1;
            progress(d, total);
        }
        for h in handles {
            if h.join().is_err() {
                return Err(Refused::Internal("a run thread panicked".into()));
            }
        }
        Ok(())
    };
    pool()?;
    rt.shutdown_background();
    let mut by_case: Vec<Vec<RunRecord>> = vec![Vec::new(); suite.cases.len()];
    let taken = std::mem::take(
        &mut *results
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    for (c, r) in taken {
        by_case[c].push(r);
    }
    let cases = suite
        .cases
        .iter()
        .zip(by_case)
        .map(|(case, recs)| CaseSummary::new(&case.name, recs))
        .collect();
    Ok(SuiteSummary::new(
        &suite.path,
        cases,
        began.elapsed().as_secs_f64() * 1000.0,
    ))
}
