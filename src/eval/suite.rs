//! Reading a suite file (`lt eval SUITE.toml`): `[defaults]` and
//! `[[case]]` tables, each case a fixed program or a task for the agent
//! loop (its declarations, `[case.model]` and `[case.agent]`), the
//! executors and profile it runs under, an optional `setup` command, and
//! its acceptance criteria (`[case.expect]`). Paths are relative to the
//! suite file's folder.
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

use crate::agent::config::AgentTable;
use crate::agent::provider::settings::{
    is_env_name, ModelSettings, DEFAULT_MAX_RETRIES, DEFAULT_REQUEST_TIMEOUT_MS,
};
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
    /// Its text, so that diagnostics of lt criteria point into it.
    pub text: String,
    /// The cases.
    pub cases: Vec<Case>,
}

/// One case: what to run and what must hold afterwards.
#[derive(Clone, Debug)]
pub struct Case {
    /// Unique within the suite.
    pub name: String,
    /// What runs: a fixed program or a task for the agent loop.
    pub subject: Subject,
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

/// What a case runs (one per case: size does not matter).
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Subject {
    /// A fixed program: the file.
    Program(PathBuf),
    /// A task for the agent loop (`lt agent`'s).
    Task(Task),
}

/// An agent case: the task, the declarations its model sees, the model
/// and the loop's settings.
#[derive(Clone, Debug)]
pub struct Task {
    /// The task, in words.
    pub task: String,
    /// The declarations file (`lt agent --tools`).
    pub tools: PathBuf,
    /// How to reach the model (`lt agent`'s `--provider`, `--model`, …).
    pub model: ModelSettings,
    /// `[agent]` keys over the executors' and the profile's tables.
    pub agent: AgentTable,
}

/// `[defaults.model]` / `[case.model]` as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModel {
    #[serde(default = "openai")]
    provider: String,
    model: Option<String>,
    base_url: Option<String>,
    api_key_env: Option<String>,
    /// Refused with a hint: the key never goes in the file.
    api_key: Option<toml::Value>,
    request_timeout_ms: Option<u64>,
    max_retries: Option<u32>,
}

fn openai() -> String {
    "openai".into()
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
    /// lt expressions over `session` that must be `true`, with where
    /// their string literals sit in the suite's text.
    #[serde(default)]
    pub criteria: Vec<toml::Spanned<String>>,
    /// An lt expression over `session`, a Float: the run's reward.
    pub reward: Option<toml::Spanned<String>>,
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
    tools: Option<String>,
    model: Option<toml::Spanned<RawModel>>,
    agent: Option<AgentTable>,
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
    tools: Option<String>,
    model: Option<toml::Spanned<RawModel>>,
    agent: Option<AgentTable>,
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
/// key, a case with neither or both of a program and a task, a task
/// without declarations or model, invalid model or `[agent]` settings, two
/// cases of one name, no case, a missing file.
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
            crate::diag::toml::message(&e).trim_end()
        ),
        help: Some(
            "a suite has an optional [defaults] table (executors, profile, setup, timeout_ms, tools, [defaults.model], [defaults.agent]) and [[case]] tables (name, program or task, tools, executors, profile, setup, timeout_ms, [case.model], [case.agent], [case.expect]); see docs/eval.md"
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
        let subject = match (c.program, c.task) {
            (Some(_), Some(task)) => {
                return Err(SuiteError {
                    message: format!(
                        "{}: case {name:?} has both a program and a task",
                        at(path, text, Some(task.span().start))
                    ),
                    help: Some("a case runs a fixed `program` or a `task` for the agent loop: keep one".into()),
                })
            }
            (Some(program), None) => Subject::Program(dir.join(program)),
            (None, Some(task)) => {
                let tloc = at(path, text, Some(task.span().start));
                Subject::Task(agent_task(
                    &tloc,
                    &name,
                    &dir,
                    task.into_inner(),
                    c.tools.or_else(|| raw.defaults.tools.clone()),
                    c.model.or_else(|| raw.defaults.model.clone()),
                    raw.defaults
                        .agent
                        .clone()
                        .unwrap_or_default()
                        .overlay(&c.agent.unwrap_or_default()),
                    text,
                    path,
                )?)
            }
            (None, None) => {
                return Err(SuiteError {
                    message: format!("{loc}: case {name:?} has no program and no task"),
                    help: Some("add `program = \"path/to/program.lt\"` (relative to the suite), or a `task = \"…\"` for the agent loop with `tools` and [case.model]".into()),
                })
            }
        };
        let executors = c.executors.or_else(|| raw.defaults.executors.clone());
        let profile = c.profile.or_else(|| raw.defaults.profile.clone());
        let case = Case {
            subject,
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
        let (program, tools) = match &case.subject {
            Subject::Program(p) => (Some(p), None),
            Subject::Task(t) => (None, Some(&t.tools)),
        };
        for (what, file) in [
            ("program", program),
            ("tools", tools),
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
        text: text.to_string(),
        cases,
    })
}

/// An agent case's task, declarations, model and settings, checked.
#[allow(clippy::too_many_arguments)]
fn agent_task(
    loc: &str,
    name: &str,
    dir: &Path,
    task: String,
    tools: Option<String>,
    model: Option<toml::Spanned<RawModel>>,
    agent: AgentTable,
    text: &str,
    path: &str,
) -> Result<Task, SuiteError> {
    let fail = |loc: &str, message: String, help: &str| SuiteError {
        message: format!("{loc}: case {name:?}: {message}"),
        help: Some(help.to_string()),
    };
    if task.trim().is_empty() {
        return Err(fail(
            loc,
            "the task is empty".into(),
            "say what the model should do: `task = \"Refund the last charge of cust_12345\"`",
        ));
    }
    let Some(tools) = tools else {
        return Err(fail(loc, "a task needs the declarations its model sees".into(), "add `tools = \"tools.lt\"` (a .lt file of tool declarations, as `lt agent --tools` takes) to the case or to [defaults]"));
    };
    let Some(model) = model else {
        return Err(fail(loc, "a task needs a model".into(), "add a [case.model] (or [defaults.model]) table: provider = \"openai\", model = \"gpt-4o-mini\", base_url = \"…/v1\""));
    };
    let mloc = at(path, text, Some(model.span().start));
    let raw = model.into_inner();
    if raw.api_key.is_some() {
        return Err(fail(
            &mloc,
            "model.api_key: an API key is never written in a suite".into(),
            "put the key in an environment variable and name it: api_key_env = \"OPENAI_API_KEY\"",
        ));
    }
    if let Some(v) = raw.api_key_env.as_ref().filter(|v| !is_env_name(v)) {
        return Err(fail(
            &mloc,
            format!("model.api_key_env {v:?} is not the name of an environment variable"),
            "api_key_env names the variable holding the key (letters, digits and _)",
        ));
    }
    if raw.model.is_none() {
        return Err(fail(
            &mloc,
            "the model table has no `model`".into(),
            "e.g. model = \"gpt-4o-mini\"",
        ));
    }
    if raw.request_timeout_ms == Some(0) {
        return Err(fail(
            &mloc,
            "model.request_timeout_ms 0: a model request needs some time".into(),
            "give a timeout in milliseconds, e.g. 120000 (the default)",
        ));
    }
    let model = ModelSettings {
        provider: raw.provider,
        model: raw.model,
        base_url: raw.base_url,
        api_key_env: raw.api_key_env,
        request_timeout_ms: raw.request_timeout_ms.unwrap_or(DEFAULT_REQUEST_TIMEOUT_MS),
        max_retries: raw.max_retries.unwrap_or(DEFAULT_MAX_RETRIES),
    };
    if let Err(e) = model.proposer(None) {
        return Err(fail(&mloc, format!("the model cannot be set up: {e}"), "provider is \"openai\" (any OpenAI-compatible endpoint) or \"anthropic\"; a key is read from api_key_env (default OPENAI_API_KEY / ANTHROPIC_API_KEY), not needed for a server on this machine"));
    }
    if let Err(e) = agent.settings() {
        return Err(fail(loc, format!("[agent] settings: {e}"), "the [agent] keys are max_attempts, max_turns, samples, agree, on_disagreement, max_tokens and trace (docs/agent.md)"));
    }
    Ok(Task {
        task,
        tools: dir.join(tools),
        model,
        agent,
    })
}
