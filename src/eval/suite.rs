//! Reading a suite file (`lt eval SUITE.toml`): `[defaults]` and
//! `[[case]]` tables, each case a fixed program, the executors and profile
//! it runs under, an optional `setup` command, and its acceptance criteria
//! (`[case.expect]`). Paths are relative to the suite file's folder.
//!
//! ```toml
//! [defaults]
//! executors = "tools.toml"
//! setup = "rm -f world.db"
//!
//! [[case]]
//! name = "refund"
//! program = "../support_desk/program.lt"
//! [case.expect]
//! value_matches = "^refund tx_[0-9]+ processed"
//! calls = ["lookup_account", "issue_refund", "send_reply"]
//! criteria = ["length session.calls == 3"]
//! ```
//!
//! Every error names the file and, where TOML gives one, the line and
//! column, with a hint; nothing here panics on bad input.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A suite: its cases, in file order.
#[derive(Clone, Debug)]
pub struct Suite {
    /// The suite file as given.
    pub path: String,
    /// Its folder (paths in it are relative to this).
    pub dir: PathBuf,
    /// The cases.
    pub cases: Vec<Case>,
}

/// One case: what to run and what must hold afterwards.
#[derive(Clone, Debug)]
pub struct Case {
    /// Unique within the suite.
    pub name: String,
    /// The program file.
    pub program: PathBuf,
    /// The tools.toml file (`None`: no executors).
    pub executors: Option<PathBuf>,
    /// A file with a `[profile]` table (`None`: the executors' profile).
    pub profile: Option<PathBuf>,
    /// A shell command (`sh -c`) run in the suite's folder before each run.
    pub setup: Option<String>,
    /// The run's wall-clock limit.
    pub timeout_ms: u64,
    /// The acceptance criteria.
    pub expect: Expect,
}

/// A case's acceptance criteria (`[case.expect]`). Each field left out
/// is not checked; `ok` defaults to `true`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The run ends with a value (`true`) or an error (`false`).
    pub ok: Option<bool>,
    /// The value, as JSON, equals this.
    pub value: Option<toml::Value>,
    /// The value (a string's text, else its JSON) matches this regular
    /// expression.
    pub value_matches: Option<String>,
    /// The called tools, in order, are exactly these.
    pub calls: Option<Vec<String>>,
    /// These tools are called in this order, others possibly between.
    pub calls_subsequence: Option<Vec<String>>,
    /// Each of these tools is called at least once.
    pub calls_contain: Option<Vec<String>>,
    /// Tool → most times it may be called.
    pub max_calls_of: Option<BTreeMap<String, u64>>,
    /// Tool → exactly how many times it is called.
    pub calls_of: Option<BTreeMap<String, u64>>,
    /// No call is denied by the profile.
    pub no_denials: Option<bool>,
    /// No call ends `outcome unknown`.
    pub no_unknown_outcomes: Option<bool>,
    /// At most this many model rounds (0 for a fixed program).
    pub max_rounds: Option<u64>,
    /// lt expressions over `session` that must be `true`.
    #[serde(default)]
    pub criteria: Vec<String>,
    /// An lt expression over `session`, a Float: the run's reward.
    pub reward: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuite {
    #[serde(default)]
    defaults: RawDefaults,
    #[serde(default)]
    case: Vec<RawCase>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDefaults {
    executors: Option<String>,
    profile: Option<String>,
    setup: Option<String>,
    timeout_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    name: toml::Spanned<String>,
    program: Option<String>,
    task: Option<toml::Spanned<String>>,
    executors: Option<String>,
    profile: Option<String>,
    setup: Option<String>,
    timeout_ms: Option<u64>,
    #[serde(default)]
    expect: Expect,
}

/// Why a suite could not be read, in words: `FILE:LINE:COL: message`
/// followed by `help: …` when there is a fix to suggest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuiteError {
    /// The message, with the location.
    pub message: String,
    /// A fix.
    pub help: Option<String>,
}

impl std::fmt::Display for SuiteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.help {
            write!(f, "\n  help: {h}")?;
        }
        Ok(())
    }
}

fn at(path: &str, text: &str, offset: Option<usize>) -> String {
    match offset {
        Some(o) => {
            let before = text.get(..o).unwrap_or(text);
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("{path}:{line}:{col}")
        }
        None => path.to_string(),
    }
}

/// Reads the suite at `path`. Errors: unreadable, not TOML, an unknown
/// key, a case without a program or with a task (agent cases are not
/// supported yet), two cases of one name, no case, a missing file.
pub fn load(path: &str) -> Result<Suite, SuiteError> {
    let text = std::fs::read_to_string(path).map_err(|e| SuiteError {
        message: format!("{path}: cannot read the suite: {e}"),
        help: Some("give the path of a suite file, e.g. examples/eval/suite.toml".into()),
    })?;
    parse(path, &text)
}

/// Parses a suite's `text` (`path` names it in errors and anchors its
/// relative paths).
pub fn parse(path: &str, text: &str) -> Result<Suite, SuiteError> {
    let raw: RawSuite = toml::from_str(text).map_err(|e| SuiteError {
        message: format!(
            "{}: {}",
            at(path, text, e.span().map(|s| s.start)),
            e.message().trim_end()
        ),
        help: Some(
            "a suite has an optional [defaults] table (executors, profile, setup, timeout_ms) and [[case]] tables (name, program, executors, profile, setup, timeout_ms, [case.expect]); see docs/eval.md"
                .into(),
        ),
    })?;
    let dir = Path::new(path)
        .parent()
        .map(Path::to_path_buf)
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("."));
    if raw.case.is_empty() {
        return Err(SuiteError {
            message: format!("{path}: the suite has no case"),
            help: Some("add a [[case]] table with a name and a program".into()),
        });
    }
    let mut cases: Vec<Case> = Vec::new();
    for c in raw.case {
        let loc = at(path, text, Some(c.name.span().start));
        let name = c.name.into_inner();
        if cases.iter().any(|k| k.name == name) {
            return Err(SuiteError {
                message: format!("{loc}: a second case named {name:?}"),
                help: Some("give every case a name of its own".into()),
            });
        }
        if let Some(task) = &c.task {
            return Err(SuiteError {
                message: format!(
                    "{}: case {name:?}: agent tasks are not supported by lt eval yet",
                    at(path, text, Some(task.span().start))
                ),
                help: Some("give the case a fixed `program` instead".into()),
            });
        }
        let Some(program) = c.program else {
            return Err(SuiteError {
                message: format!("{loc}: case {name:?} has no program"),
                help: Some("add `program = \"path/to/program.lt\"` (relative to the suite)".into()),
            });
        };
        let executors = c.executors.or_else(|| raw.defaults.executors.clone());
        let profile = c.profile.or_else(|| raw.defaults.profile.clone());
        let case = Case {
            program: dir.join(program),
            executors: executors.map(|e| dir.join(e)),
            profile: profile.map(|p| dir.join(p)),
            setup: c.setup.or_else(|| raw.defaults.setup.clone()),
            timeout_ms: c
                .timeout_ms
                .or(raw.defaults.timeout_ms)
                .unwrap_or(60_000)
                .max(1),
            expect: c.expect,
            name,
        };
        for (what, file) in [
            ("program", Some(&case.program)),
            ("executors", case.executors.as_ref()),
            ("profile", case.profile.as_ref()),
        ] {
            if let Some(f) = file.filter(|f| !f.is_file()) {
                return Err(SuiteError {
                    message: format!(
                        "{loc}: case {:?}: the {what} file {} does not exist",
                        case.name,
                        f.display()
                    ),
                    help: Some(format!(
                        "paths are relative to the suite's folder, {}",
                        dir.display()
                    )),
                });
            }
        }
        if let Some(re) = &case.expect.value_matches {
            if let Err(e) = regex::Regex::new(re) {
                return Err(SuiteError {
                    message: format!("{loc}: case {:?}: value_matches: {e}", case.name),
                    help: Some("write a regular expression in Rust's regex syntax".into()),
                });
            }
        }
        cases.push(case);
    }
    Ok(Suite {
        path: path.to_string(),
        dir,
        cases,
    })
}
