//! `lt eval SUITE.toml`: runs a suite ([`crate::eval`]) and renders its
//! figures: a table (with a progress line on a terminal), `--json`,
//! `--junit FILE`, `--html FILE`; the gates `--min-success R` and `--baseline FILE`.
//!
//! `lt eval --replay DIR` replays every session log of a folder instead
//! ([`crate::eval::replay`]).
//!
//! Exit codes: `0` every gate passed (every log replays); `1` a gate failed
//! (a case below the rate, a regression against the baseline, a log that
//! diverges) or nothing ran because a program or an lt criterion does not
//! type-check (diagnostics printed); `2` usage: an unreadable or invalid
//! suite, baseline, JUnit path or replay folder.

use super::{EXIT_DIAGNOSTICS, EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE};
use crate::eval::{self, Refused};
use std::io::IsTerminal;

/// The options of `lt eval`.
#[derive(Clone, Debug)]
pub struct EvalOptions {
    /// The suite file (`None` with `replay`).
    pub suite: Option<String>,
    /// A folder of session logs to replay instead of running a suite.
    pub replay: Option<String>,
    /// Runs per case.
    pub runs: usize,
    /// Most runs at once.
    pub jobs: usize,
    /// JSON on stdout instead of the table.
    pub json: bool,
    /// Where to write JUnit XML.
    pub junit: Option<String>,
    /// Where to write the HTML report.
    pub html: Option<String>,
    /// The lowest success rate a case may have (default 1).
    pub min_success: Option<f64>,
    /// An earlier `lt eval --json` output to compare with.
    pub baseline: Option<String>,
    /// A second suite (another configuration) to run and compare.
    pub compare: Option<String>,
    /// Colour diagnostics.
    pub color: bool,
}

fn usage(message: impl std::fmt::Display) -> u8 {
    err!("error: {message}");
    EXIT_USAGE
}

/// `lt eval --replay DIR`: a line per log (or one JSON object), exit 1
/// when any diverges.
fn replay_dir(dir: &str, json: bool) -> u8 {
    let logs = match eval::replay::logs_in(std::path::Path::new(dir)) {
        Ok(l) => l,
        Err(e) => return usage(e),
    };
    let done = crate::control::session::spawn("lt-eval-replay", move || {
        logs.iter()
            .map(|p| eval::replay::replay_file(p))
            .collect::<Vec<_>>()
    })
    .map_err(|e| e.to_string())
    .and_then(|h| {
        h.join()
            .map_err(|_| "the replay thread panicked".to_string())
    });
    let results = match done {
        Ok(r) => r,
        Err(e) => return usage(format!("cannot replay: {e}")),
    };
    let diverged = results.iter().filter(|r| !r.ok).count();
    if json {
        out!(
            "{}",
            serde_json::json!({"ok": diverged == 0, "logs": results.len(), "diverged": diverged, "results": results})
        );
    } else {
        for r in &results {
            match &r.message {
                None => out!("ok        {}", r.log),
                Some(m) => out!("DIVERGES  {}: {m}", r.log),
            }
        }
        out!(
            "{} log{} replayed, {diverged} diverge{}",
            results.len(),
            if results.len() == 1 { "" } else { "s" },
            if diverged == 1 { "s" } else { "" }
        );
    }
    for r in results.iter().filter(|r| !r.ok) {
        err!(
            "gate failed: {} diverges ({}): {}",
            r.log,
            r.kind.as_deref().unwrap_or("log"),
            r.message.as_deref().unwrap_or("")
        );
    }
    if diverged == 0 {
        EXIT_OK
    } else {
        EXIT_DIAGNOSTICS
    }
}

/// Runs `lt eval` and returns the exit code.
pub fn run(opts: &EvalOptions) -> u8 {
    let suite_path = match (&opts.suite, &opts.replay) {
        (None, Some(dir)) => return replay_dir(dir, opts.json),
        (Some(s), None) => s,
        (Some(_), Some(_)) => {
            return usage("give a suite or --replay DIR, not both\n  help: `lt eval SUITE.toml` runs a suite; `lt eval --replay DIR` replays the logs in DIR")
        }
        (None, None) => {
            return usage("no suite given\n  help: `lt eval SUITE.toml --runs 3`, or `lt eval --replay DIR` to replay recorded session logs")
        }
    };
    let min = opts.min_success.unwrap_or(1.0);
    if !(0.0..=1.0).contains(&min) {
        return usage(format!(
            "--min-success {min}: a rate is between 0 and 1\n  help: e.g. `--min-success 0.9` for 90%"
        ));
    }
    let suite = match eval::load(suite_path) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let other = match opts.compare.as_deref().map(eval::load) {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(e)) => return usage(e),
    };
    let baseline = match &opts.baseline {
        None => None,
        Some(path) => match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).map_err(|e| e.to_string()))
        {
            Ok(v) => Some(v),
            Err(e) => {
                return usage(format!(
                    "--baseline {path}: {e}\n  help: a baseline is the output of `lt eval --json`"
                ))
            }
        },
    };
    match eval::prepare(&suite, opts.color).and_then(|()| {
        other
            .as_ref()
            .map_or(Ok(()), |o| eval::prepare(o, opts.color))
    }) {
        Ok(()) => {}
        Err(Refused::Criteria(rejected)) => {
            for r in &rejected {
                err!(
                    "error: case {:?}: {} does not type-check; no run was started",
                    r.case,
                    r.which
                );
                err!("{}", r.rendered.trim_end());
            }
            if opts.json {
                let list: Vec<_> = rejected
                    .iter()
                    .map(|r| serde_json::json!({"case": r.case, "which": r.which, "diagnostics": r.diagnostics}))
                    .collect();
                out!(
                    "{}",
                    serde_json::json!({"ok": false, "stage": "check", "rejected": list})
                );
            }
            return EXIT_DIAGNOSTICS;
        }
        Err(Refused::Program(msg)) => {
            err!("error: {}", msg.trim_end());
            return EXIT_DIAGNOSTICS;
        }
        Err(Refused::Internal(msg)) => return usage(msg),
    }
    let tty = !opts.json && std::io::stderr().is_terminal();
    let progress = |done: usize, total: usize| {
        if tty {
            let width = 30;
            let filled = done * width / total.max(1);
            use std::io::Write as _;
            let _ = write!(
                std::io::stderr(),
                "\r[{}{}] {done}/{total} runs",
                "#".repeat(filled),
                "-".repeat(width - filled)
            );
            if done == total {
                let _ = writeln!(std::io::stderr());
            }
        }
    };
    let summary = match eval::run_suite(&suite, opts.runs, opts.jobs, &progress) {
        Ok(s) => s,
        Err(Refused::Internal(msg) | Refused::Program(msg)) => return usage(msg),
        Err(Refused::Criteria(_)) => return EXIT_DIAGNOSTICS,
    };
    let compared = match &other {
        None => None,
        Some(o) => match eval::run_suite(o, opts.runs, opts.jobs, &progress) {
            Ok(s) => Some(s),
            Err(Refused::Internal(msg) | Refused::Program(msg)) => return usage(msg),
            Err(Refused::Criteria(_)) => return EXIT_DIAGNOSTICS,
        },
    };
    let mut gates: Vec<String> = std::iter::once(&summary)
        .chain(compared.as_ref())
        .flat_map(|s| s.cases.iter().map(move |c| (s, c)))
        // A case whose every run errored has no rate to gate.
        .filter(|(_, c)| c.errored < c.runs && c.rate + 1e-9 < min)
        .map(|(s, c)| {
            format!(
                "{}: {}: success rate {:.1}% is below {:.1}%",
                s.suite,
                c.name,
                c.rate * 100.0,
                min * 100.0
            )
        })
        .collect();
    if let Some(b) = &baseline {
        match summary.regressions(b) {
            Ok(r) => gates.extend(r.into_iter().map(|r| format!("regression: {r}"))),
            Err(e) => return usage(format!("--baseline: {e}")),
        }
    }
    if let Some(path) = &opts.junit {
        if let Err(e) = std::fs::write(path, summary.junit()) {
            return usage(format!("--junit {path}: cannot write: {e}"));
        }
    }
    if let Some(path) = &opts.html {
        let suites: Vec<&eval::SuiteSummary> =
            std::iter::once(&summary).chain(compared.as_ref()).collect();
        if let Err(e) = std::fs::write(path, eval::html::report(&suites)) {
            return usage(format!("--html {path}: cannot write: {e}"));
        }
    }
    if opts.json {
        let mut j = summary.to_json();
        if let Some(b) = &compared {
            j["compare"] = b.to_json();
            j["difference"] = summary.difference(b);
        }
        j["ok"] = serde_json::Value::Bool(gates.is_empty());
        j["gates_failed"] = serde_json::json!(gates);
        out!("{j}");
    } else {
        out!("{}", summary.table().trim_end());
        if let Some(b) = &compared {
            out!(
                "\n{}\n{}",
                b.table().trim_end(),
                summary.difference_table(b).trim_end()
            );
        }
    }
    for g in &gates {
        err!("gate failed: {g}");
    }
    let errored = summary.errored + compared.as_ref().map_or(0, |b| b.errored);
    if errored > 0 {
        err!(
            "errored: {errored} runs could not be judged (the model server down or unreachable); they are left out of the rates\n  help: check the model's base_url and that its server is up, then run again"
        );
    }
    if !gates.is_empty() {
        EXIT_DIAGNOSTICS
    } else if errored > 0 {
        EXIT_RUN_FAILED
    } else {
        EXIT_OK
    }
}
