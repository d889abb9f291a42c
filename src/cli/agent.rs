//! `lt agent "TASK" --tools DECLS.lt --executors tools.toml`: the LLM loop
//! ([`crate::agent`]) as a command.
//!
//! Exit codes: 0 the model answered (the answer on stdout); 1 it did not
//! converge (no acceptable program within `--max-attempts`, no agreement,
//! no answer within `--max-turns`); 2 usage or configuration (bad
//! arguments, declarations with errors, an invalid tools.toml, profile or
//! rule table, a tool without an executor, no API key); 3 the model could
//! not be reached after the retries, or the log could not be written.

use super::run::{fail_usage, RunOptions};
use super::{diagnostics::print_diagnostic_list, EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE};
use crate::agent::config::{AgentTable, Rules};
use crate::agent::model::Proposer;
use crate::agent::provider::settings::{ModelSettings, SetupError};
use crate::agent::session::{Outcome, Status};
use crate::agent::stdio::StdioProposer;
use crate::agent::task::{
    check_trace, executors_cover, load_profile, run_task, tags, Classify, ExecutorGap, TaskRun,
    ToolList, ToolListError,
};
use crate::control::report::{Stage, StartErrorKind, StartFailure};
use crate::exec::{ExecutorHost, Registry};
use crate::log::{new_session_id, Discard, EventSink, LogWriter, MemoryLog};
use crate::runtime::limits::Limits;
use crate::source::SourceFile;
use std::path::Path;
use std::time::Duration;

/// Exit status: the model did not converge.
pub const EXIT_GAVE_UP: u8 = 1;

/// The options of `lt agent`.
#[derive(Clone, Debug, Default)]
pub struct AgentOptions {
    /// The task.
    pub task: String,
    /// The declarations file.
    pub tools: String,
    /// The executors file.
    pub executors: Option<String>,
    /// A profile file (`[profile]`, `[agent]`).
    pub profile: Option<String>,
    /// A rule table (classifier → profile).
    pub rules: Option<String>,
    /// `openai`, `anthropic` or `stdio`.
    pub provider: String,
    /// The model's name.
    pub model: Option<String>,
    /// The API's base URL.
    pub base_url: Option<String>,
    /// The variable holding the API key.
    pub api_key_env: Option<String>,
    /// Per-request timeout, ms.
    pub request_timeout_ms: u64,
    /// Retries of a failed request.
    pub max_retries: u32,
    /// Flags over the `[agent]` table.
    pub table: AgentTable,
    /// Each run's limits.
    pub limits: Limits,
    /// The log file.
    pub log: Option<String>,
    /// Replace a `--log` file that already holds something.
    pub force: bool,
    /// Print the outcome as JSON.
    pub json: bool,
    /// A line per step on stderr.
    pub verbose: bool,
    /// Colour diagnostics.
    pub color: bool,
    /// `--otlp-endpoint`: the agent session exported as a trace.
    pub otlp: Option<crate::otlp::Settings>,
}

fn run_options(opts: &AgentOptions) -> RunOptions {
    RunOptions {
        file: opts.tools.clone(),
        executors: opts.executors.clone(),
        tools: None,
        json: opts.json,
        verbose: opts.verbose,
        color: opts.color,
        limits: opts.limits.clone(),
        profile: opts.profile.clone(),
        log: opts.log.clone(),
        force: opts.force,
        otlp: None,
    }
}

fn usage(opts: &AgentOptions, stage: Stage, message: String, help: Option<String>) -> u8 {
    fail_usage(
        &run_options(opts),
        &StartFailure {
            help,
            ..StartFailure::new(stage, StartErrorKind::Usage, message)
        },
    )
}

/// Runs `lt agent`; returns the exit code.
pub fn run(opts: &AgentOptions) -> u8 {
    let ro = run_options(opts);
    if opts.task.trim().is_empty() {
        return usage(opts, Stage::Task, "the task is empty".into(), Some("say what the model should do: `lt agent \"Refund the last charge of cust_1\" --tools …`".into()));
    }
    if opts.request_timeout_ms == 0 {
        return usage(
            opts,
            Stage::Model,
            "--request-timeout-ms 0: a model request needs some time".into(),
            Some(
                "give a timeout in milliseconds, e.g. --request-timeout-ms 120000 (the default)"
                    .into(),
            ),
        );
    }
    if opts.provider == "stdio" && opts.tools == "-" {
        return usage(opts, Stage::Tools, "--tools - reads the declarations from stdin, which --provider stdio uses for the model's replies".into(), Some("pass the declarations as a file".into()));
    }
    // The declarations: the session's tool list.
    let (name, text) = match super::read_source(&opts.tools) {
        Ok(x) => x,
        Err(msg) => return usage(opts, Stage::Tools, msg, None),
    };
    let file = SourceFile::new(name, text);
    let tools = match ToolList::load(&file.text) {
        Ok(t) => t,
        Err(ToolListError::Errors(e)) => {
            print_diagnostic_list(&file, &e.diagnostics, e.truncated, opts.color);
            return usage(
                opts,
                Stage::Tools,
                format!("{} has errors; the model would copy them", file.name),
                Some("fix the declarations (`lt prompt --tools FILE` shows them)".into()),
            );
        }
        Err(ToolListError::NoTools) => {
            return usage(
                opts,
                Stage::Tools,
                format!("{} declares no tools", file.name),
                Some(
                    "declare each tool: `tool lookup: {id: String} -{Read}-> {email: String};`"
                        .into(),
                ),
            );
        }
    };
    // The executors: every listed tool needs one, on the server.
    let registry_bytes = match &opts.executors {
        Some(path) => match crate::exec::read_config_bytes(Path::new(path)) {
            Ok(b) => b,
            Err(e) => {
                return usage(
                    opts,
                    Stage::Executors,
                    format!("cannot read {path}: {e}"),
                    Some("check the path of --executors".into()),
                )
            }
        },
        None => Vec::new(),
    };
    let registry = match &opts.executors {
        Some(path) => match Registry::load(Path::new(path)) {
            Ok(r) => r,
            Err(e) => return fail_usage(&ro, &StartFailure::config(&e)),
        },
        None => match Registry::from_str("", Path::new("."), "<no executors>") {
            Ok(r) => r,
            Err(e) => return fail_usage(&ro, &StartFailure::config(&e)),
        },
    };
    let names = tools.names();
    match executors_cover(&tools, &registry) {
        Ok(()) => {}
        Err(ExecutorGap::Missing(missing)) => {
            let message = match &opts.executors {
                Some(path) => format!(
                    "{path} has no executor for {}, which {} lists",
                    missing.join(", "),
                    file.name
                ),
                None => format!(
                    "no --executors given, and {} lists tools that need one: {}",
                    file.name,
                    missing.join(", ")
                ),
            };
            return usage(opts, Stage::Executors,
                message,
                Some(format!(
                    "add a `[tools.{}]` table to tools.toml (docs/executors.md), or remove the tool from {}",
                    missing[0], file.name
                )),
            );
        }
        Err(ExecutorGap::Client(t)) => {
            return usage(
                opts,
                Stage::Executors,
                format!(
                    "tool {t} runs on the client (venue = \"client\"), which lt agent does not support"
                ),
                Some("give it a server executor (command, http, mcp) for agent sessions".into()),
            );
        }
    }
    // A listed tool whose declaration omits an effect tools.toml gives it:
    // the same check as `lt run`'s, on the tool list.
    if let Some(f) = crate::control::session::understated_effects(
        &file,
        &tools.sigs(),
        &names,
        &registry,
        opts.executors.as_deref(),
    ) {
        return fail_usage(&ro, &f);
    }
    let tags = tags(&tools, &registry);
    // The profile and the settings.
    let registry_text = String::from_utf8_lossy(&registry_bytes).into_owned();
    let (profile, base_table) = match load_profile(
        &registry_text,
        opts.executors.as_deref(),
        opts.profile.as_deref(),
    ) {
        Ok(x) => x,
        Err(f) => return fail_usage(&ro, &f),
    };
    let settings = match base_table
        .clone()
        .overlay(&opts.table)
        .settings()
        .and_then(|s| check_trace(&s, &tags, &profile, &tools.decls).map(|_| s))
    {
        Ok(s) => s,
        Err(e) => {
            let hint = settings_hint(opts, &e);
            return usage(opts, Stage::Settings, e, Some(hint));
        }
    };
    let rules = match &opts.rules {
        Some(path) => match Rules::load(Path::new(path)) {
            Ok(r) => Some(r),
            Err(e) => return fail_usage(&ro, &StartFailure::config(&e)),
        },
        None => None,
    };
    // The model.
    let mut proposer: Box<dyn Proposer> = match make_proposer(opts) {
        Ok(p) => p,
        Err(f) => return fail_usage(&ro, &f),
    };
    // The log.
    let id = new_session_id();
    if let Some(log) = &opts.log {
        let same = |other: &str| crate::control::session::same_file(log, other);
        let rule_profiles: Vec<String> = rules
            .iter()
            .flat_map(|r| r.rules.iter())
            .filter_map(|r| r.profile.as_ref().map(|p| p.display().to_string()))
            .collect();
        let found = [
            Some(&opts.tools),
            opts.executors.as_ref(),
            opts.profile.as_ref(),
            opts.rules.as_ref(),
        ]
        .into_iter()
        .flatten()
        .chain(rule_profiles.iter())
        .find(|i| same(i))
        .cloned();
        if let Some(input) = found {
            return usage(
                opts,
                Stage::Log,
                format!("--log {log} would overwrite {input}, an input of this session"),
                Some("write the log to a file of its own, e.g. `--log agent.jsonl`".into()),
            );
        }
    }
    if let Some(log) = &opts.log {
        if let Err((message, help)) = crate::frontend::refuse_replacing_log(log, opts.force) {
            return usage(opts, Stage::Log, message, Some(help));
        }
    }
    let exporter = match opts.otlp.as_ref().map(|o| crate::otlp::Exporter::new("lt agent", o)) {
        None => None,
        Some(Ok(x)) => Some(x),
        Some(Err(message)) => {
            return usage(
                opts,
                Stage::Log,
                message,
                Some("--otlp-endpoint takes the URL spans are posted to, e.g. http://127.0.0.1:4318/v1/traces".into()),
            )
        }
    };
    let mut sink: Box<dyn EventSink> = match &opts.log {
        Some(path) => match LogWriter::create(path, id.clone()) {
            Ok(w) => Box::new(w),
            Err(e) => {
                return usage(
                    opts,
                    Stage::Log,
                    format!("cannot create the event log {path}: {e}"),
                    None,
                )
            }
        },
        None => Box::new(Discard),
    };
    // Without --log, a traced session logs to memory: the trace is built
    // from the log's lines.
    let mut memory = match (&opts.log, &exporter) {
        (None, Some(_)) => match MemoryLog::new(id.clone()) {
            Ok(m) => Some(m),
            Err(e) => return usage(opts, Stage::Log, format!("cannot start the log: {e}"), None),
        },
        _ => None,
    };
    let trace_id = id.clone();
    // The executors' runtime, then the session. A signal abandons the
    // agent session (its running tools killed) and ends lt.
    let runtime = match super::signals::io_runtime() {
        Ok(rt) => rt,
        Err(message) => return usage(opts, Stage::Runtime, message, None),
    };
    let cancel = crate::runtime::cancel::Cancel::new();
    super::signals::abandon_on_signals(runtime.handle(), cancel.clone());
    let host = ExecutorHost::new(registry, runtime.handle().clone());
    let verbose = opts.verbose;
    let mut progress = |line: &str| {
        if verbose {
            err!("[lt] {line}");
        }
    };
    let run = TaskRun {
        id,
        task: opts.task.clone(),
        tools: &tools,
        tags,
        profile,
        settings,
        classify: rules.as_ref().map(|rules| Classify {
            rules,
            base: base_table.clone(),
            over: opts.table.clone(),
            origin: opts
                .rules
                .clone()
                .unwrap_or_else(|| "the rule table".into()),
        }),
        host: host.clone(),
        registry_bytes,
        limits: opts.limits.clone(),
        cancel: cancel.clone(),
        approvers: None,
    };
    let log: &mut dyn EventSink = match memory.as_mut() {
        Some(m) => m,
        None => sink.as_mut(),
    };
    let outcome = run_task(run, proposer.as_mut(), log, &mut progress);
    host.shutdown();
    drop(sink);
    let traced = memory.map(|m| m.to_jsonl().lines().map(str::to_string).collect::<Vec<_>>());
    if let Some(x) = &exporter {
        let lines = match (&opts.log, traced) {
            (Some(path), _) => std::fs::read_to_string(path)
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect(),
            (None, lines) => lines.unwrap_or_default(),
        };
        x.export(&trace_id, &lines);
        if let Err(e) = x.shutdown() {
            err!("lt: otlp: {e}");
        }
    }
    // The agent session records nothing more: a signal handler waiting for
    // it may end lt now.
    cancel.settle();
    runtime.shutdown_timeout(Duration::from_secs(2));
    if let Some(status) = cancel.exit_status() {
        // A signal stopped the agent: lt exits 128 + its number, as the
        // signal handler does (whichever thread gets there first).
        return status;
    }
    let outcome = match outcome {
        Ok(o) => o,
        Err(f) => return fail_usage(&ro, &f),
    };
    print_outcome(opts, &outcome)
}

/// Where the settings come from, for their errors' hint.
fn settings_hint(opts: &AgentOptions, error: &str) -> String {
    let mut from = Vec::new();
    if let Some(e) = &opts.executors {
        from.push(format!("the [agent] table of {e}"));
    }
    if let Some(p) = &opts.profile {
        from.push(format!("the [agent] table of {p}"));
    }
    from.push("the flags (--samples, --agree, --max-attempts, …)".to_string());
    let mut hint = format!(
        "the settings come from {}, later ones winning",
        from.join(", then ")
    );
    if error.contains("trace requirement") {
        hint.push_str("; tools get tags in tools.toml: `tags = [\"verify\"]`");
    }
    hint.push_str(" (see docs/agent.md)");
    hint
}

#[allow(clippy::result_large_err)]
fn make_proposer(opts: &AgentOptions) -> Result<Box<dyn Proposer>, StartFailure> {
    let timeout = Duration::from_millis(opts.request_timeout_ms.max(1));
    if opts.provider == "stdio" {
        return Ok(Box::new(StdioProposer::new(timeout)));
    }
    let settings = ModelSettings {
        provider: opts.provider.clone(),
        model: opts.model.clone(),
        base_url: opts.base_url.clone(),
        api_key_env: opts.api_key_env.clone(),
        request_timeout_ms: opts.request_timeout_ms,
        max_retries: opts.max_retries,
    };
    match settings.proposer(None) {
        Ok(p) => Ok(Box::new(p)),
        Err(SetupError::UnknownProvider(name)) => Err(StartFailure {
            help: Some(
                "use --provider openai (any OpenAI-compatible endpoint), anthropic, or stdio"
                    .into(),
            ),
            ..StartFailure::new(
                Stage::Model,
                StartErrorKind::Usage,
                format!("unknown provider `{name}`"),
            )
        }),
        Err(SetupError::NoModel) => Err(StartFailure {
            help: Some(
                "e.g. --model gpt-4o-mini, or --model claude-sonnet-4-5 with --provider anthropic"
                    .into(),
            ),
            ..StartFailure::new(
                Stage::Model,
                StartErrorKind::Usage,
                "--model is required".to_string(),
            )
        }),
        Err(SetupError::Provider {
            message,
            key_var,
            about_key,
        }) => {
            let help = if about_key {
                format!("set {key_var} (or name another variable with --api-key-env)")
            } else {
                "check --base-url: e.g. https://api.openai.com/v1, http://localhost:11434/v1 or https://api.anthropic.com".to_string()
            };
            Err(StartFailure {
                help: Some(help),
                ..StartFailure::new(Stage::Model, StartErrorKind::Usage, message)
            })
        }
    }
}

fn print_outcome(opts: &AgentOptions, o: &Outcome) -> u8 {
    let code = match o.status {
        Status::Answered => EXIT_OK,
        Status::GaveUp => EXIT_GAVE_UP,
        Status::Error => EXIT_RUN_FAILED,
    };
    if opts.json {
        out!("{}", o.to_json());
        return code;
    }
    match (&o.status, &o.answer) {
        (Status::Answered, Some(a)) => out!("{a}"),
        _ => {
            err!(
                "error: the agent stopped ({}): {}",
                o.status.as_str(),
                o.reason
            );
            if let Some(r) = &o.last_run {
                if let Some(v) = &r.value {
                    err!("  the last run's value: {v}");
                }
            }
        }
    }
    if opts.verbose {
        err!(
            "[lt] {} run{}, {} model request{}, attempts per turn {:?}",
            o.turns,
            if o.turns == 1 { "" } else { "s" },
            o.requests,
            if o.requests == 1 { "" } else { "s" },
            o.attempts
        );
    }
    let _ = EXIT_USAGE;
    code
}
