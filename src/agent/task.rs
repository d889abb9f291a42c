//! An agent session from a task, start to end: what `lt agent` and `lt
//! serve`'s task sessions (`POST /v1/sessions {"task": …}`) share. One
//! engine, two front ends: each reads its own inputs (flags and files, or
//! serve.toml and a request), then both run the session through
//! [`run_task`].
//!
//! ```text
//! ToolList::load(declarations) ─▶ executors_cover(registry) ─▶ tags ─▶ check_trace
//! run_task(TaskRun {id, task, tools, tags, profile, settings, classify?, host,
//!                   registry_bytes, limits, cancel, approvers}, proposer, sink, progress)
//!   ─▶ agent_started ─▶ [classify: model_requested … task_classified]
//!   ─▶ run_agent with a LiveRunner over the host (each run a session of the
//!      control plane, session_started … session_ended, in the same log)
//!   ─▶ agent_ended ─▶ Outcome (Outcome::to_json: `lt agent --json`'s object)
//! ```
//!
//! The executor host is the caller's: [`run_task`] does not shut it down
//! (a server shares one host between its sessions).

use super::config::{AgentSettings, AgentTable, Rules};
use super::model::{Message, ModelRequest, Proposer};
use super::prompt::{load_declarations, system_prompt, DeclarationErrors};
use super::runner::{Approvers, LiveRunner};
use super::session::{run_agent, AgentSpec, Outcome};
use crate::control::profile::Profile;
use crate::control::report::{Stage, StartErrorKind, StartFailure};
use crate::exec::{ExecutorHost, Registry, Venue};
use crate::log::{sha256_hex, EventBody, EventSink};
use crate::runtime::cancel::Cancel;
use crate::runtime::limits::Limits;
use crate::types::{check_declarations, Declarations, ToolSig};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;

/// The session's tool list: a declarations file, checked.
pub struct ToolList {
    /// The declarations' text, as given.
    pub text: String,
    /// The text the system prompt shows (a program's expression left out).
    pub shown: String,
    /// The checked declarations.
    pub decls: Declarations,
}

/// Why a declarations file cannot be a tool list.
pub enum ToolListError {
    /// It does not check (the model would copy its errors).
    Errors(DeclarationErrors),
    /// It declares no tool.
    NoTools,
}

impl ToolList {
    /// Checks `text` as a tool list. Errors: [`ToolListError`].
    pub fn load(text: &str) -> Result<ToolList, ToolListError> {
        let shown = load_declarations(text).map_err(ToolListError::Errors)?;
        let decls = check_declarations(text);
        if decls.tools.is_empty() {
            return Err(ToolListError::NoTools);
        }
        Ok(ToolList {
            text: text.to_string(),
            shown: shown.text,
            decls,
        })
    }

    /// The tools' names, in declaration order.
    pub fn names(&self) -> Vec<&str> {
        self.decls.tools.iter().map(|t| &*t.sig.name).collect()
    }

    /// The tools' signatures, in declaration order.
    pub fn sigs(&self) -> Vec<ToolSig> {
        self.decls.tools.iter().map(|t| t.sig.clone()).collect()
    }
}

/// A listed tool the executors cannot run for an agent session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecutorGap {
    /// These tools have no executor.
    Missing(Vec<String>),
    /// This tool runs in the client venue, which agent sessions do not have.
    Client(String),
}

/// Every listed tool has an executor, on the server. Errors: the first gap.
pub fn executors_cover(tools: &ToolList, registry: &Registry) -> Result<(), ExecutorGap> {
    let names = tools.names();
    let missing = registry.missing(names.iter().copied());
    if !missing.is_empty() {
        return Err(ExecutorGap::Missing(
            missing.iter().map(|s| s.to_string()).collect(),
        ));
    }
    match names.iter().find(|t| registry.venue(t) == Venue::Client) {
        Some(t) => Err(ExecutorGap::Client(t.to_string())),
        None => Ok(()),
    }
}

/// Each listed tool's tags (tools.toml `tags`), the untagged left out.
pub fn tags(tools: &ToolList, registry: &Registry) -> BTreeMap<String, Vec<String>> {
    tools
        .names()
        .iter()
        .map(|t| (t.to_string(), registry.tags(t).to_vec()))
        .filter(|(_, v)| !v.is_empty())
        .collect()
}

/// Every trace requirement must be one some tool can meet: a tag no tool
/// has would make every answer wait for a call that cannot happen.
pub fn check_trace(
    s: &AgentSettings,
    tags: &BTreeMap<String, Vec<String>>,
    profile: &Profile,
    decls: &Declarations,
) -> Result<(), String> {
    for tag in s.trace.keys() {
        let tagged: Vec<&String> = tags
            .iter()
            .filter(|(_, t)| t.contains(tag))
            .map(|(name, _)| name)
            .collect();
        if tagged.is_empty() {
            return Err(format!(
                "trace requirement `{tag}`: no tool of the session has this tag, so it could never be met"
            ));
        }
        let callable = tagged.iter().any(|name| {
            decls.tool(name).is_some_and(|t| {
                crate::control::static_check::objections(&t.sig, profile).is_empty()
            })
        });
        if !callable {
            let names: Vec<&str> = tagged.iter().map(|n| n.as_str()).collect();
            return Err(format!(
                "trace requirement `{tag}`: profile {} denies every tool with this tag ({}), so it could never be met",
                profile.name,
                names.join(", ")
            ));
        }
    }
    Ok(())
}

/// The profile (the file `profile`, else the executors' `[profile]`, else
/// the default) and the `[agent]` table (the executors', then the profile
/// file's), as `lt agent` and `lt eval` read them; `registry_text` is the
/// tools.toml text of the file `executors`. Errors: an unreadable or
/// invalid file, with its line.
#[allow(clippy::result_large_err)]
pub fn load_profile(
    registry_text: &str,
    executors: Option<&str>,
    profile: Option<&str>,
) -> Result<(Profile, AgentTable), StartFailure> {
    let origin = executors.unwrap_or_default();
    let mut table =
        AgentTable::from_toml(registry_text, origin).map_err(|e| StartFailure::config(&e))?;
    let profile = match profile {
        Some(path) => {
            // A file with only an `[agent]` table keeps the default policy.
            let text = crate::exec::read_config_text(std::path::Path::new(path), "the profile")
                .map_err(|e| StartFailure::config(&e))?;
            let p = Profile::from_toml(&text, path)
                .map_err(|e| StartFailure::config(&e))?
                .unwrap_or_default();
            table = table.overlay(
                &AgentTable::from_toml(&text, path).map_err(|e| StartFailure::config(&e))?,
            );
            p
        }
        None => Profile::from_toml(registry_text, origin)
            .map_err(|e| StartFailure::config(&e))?
            .unwrap_or_default(),
    };
    let profile = if profile.name.is_empty() {
        Profile {
            name: "default".into(),
            ..profile
        }
    } else {
        profile
    };
    Ok((profile, table))
}

/// The rule table's classification (`lt agent --rules`).
pub struct Classify<'a> {
    /// The rule table.
    pub rules: &'a Rules,
    /// The `[agent]` tables before the rule's (tools.toml's, the profile's).
    pub base: AgentTable,
    /// What goes over the rule's settings (the flags).
    pub over: AgentTable,
    /// The rule table's name, for hints.
    pub origin: String,
}

/// An agent session, ready to run.
pub struct TaskRun<'a> {
    /// The session's id (its runs are `ID.run1`, `ID.run2`, …).
    pub id: String,
    /// The task.
    pub task: String,
    /// The tool list.
    pub tools: &'a ToolList,
    /// The tools' tags ([`tags`]).
    pub tags: BTreeMap<String, Vec<String>>,
    /// The profile the runs use (before classification).
    pub profile: Profile,
    /// The loop's settings (before classification).
    pub settings: AgentSettings,
    /// Classify the task first, by this rule table.
    pub classify: Option<Classify<'a>>,
    /// The executors (not shut down by [`run_task`]).
    pub host: ExecutorHost,
    /// The tools.toml bytes (hashed into the log).
    pub registry_bytes: Vec<u8>,
    /// Each run's limits.
    pub limits: Limits,
    /// Stops the runs (and, given to the proposer, its requests).
    pub cancel: Cancel,
    /// The runs' approvers (`None`: the session engine's default, the
    /// terminal).
    pub approvers: Option<Approvers>,
}

/// Runs the agent session `run`: records `agent_started`, classifies the
/// task if asked, runs the loop ([`run_agent`]) with `proposer` and a
/// [`LiveRunner`] over the host, every step in `sink`; `progress` gets a
/// line per step (`--verbose`). Errors: `agent_started` could not be
/// written, or the classified task's settings are invalid (recorded as
/// `agent_ended`).
#[allow(clippy::result_large_err)]
pub fn run_task(
    run: TaskRun<'_>,
    proposer: &mut dyn Proposer,
    sink: &mut dyn EventSink,
    progress: &mut dyn FnMut(&str),
) -> Result<Outcome, StartFailure> {
    let system = system_prompt(&run.tools.shown);
    let started = EventBody::AgentStarted {
        lt_version: env!("CARGO_PKG_VERSION").to_string(),
        task: run.task.clone(),
        declarations: run.tools.text.clone(),
        system: system.clone(),
        model: proposer.describe(),
        settings: run.settings.to_json(),
        profile: run.profile.to_json(),
        registry_hash: sha256_hex(&run.registry_bytes),
        limits: crate::control::session::limits_json(&run.limits),
        tags: json!(run.tags),
    };
    if let Err(e) = sink.append(started) {
        return Err(StartFailure::new(
            Stage::Log,
            StartErrorKind::Usage,
            format!("the event log could not be written: {e}"),
        ));
    }
    let mut spec = AgentSpec {
        task: run.task,
        declarations: run.tools.text.clone(),
        system,
        settings: run.settings,
        profile: run.profile,
        tags: run.tags,
    };
    if let Some(c) = &run.classify {
        match classify(c, &spec, &run.tools.decls, proposer, sink, progress) {
            Ok((profile, settings)) => {
                spec.profile = profile;
                spec.settings = settings;
            }
            Err(f) => {
                // The log says why the session ended before its loop.
                let _ = sink.append(EventBody::AgentEnded {
                    status: "error".into(),
                    answer: Json::Null,
                    reason: format!("the classified task's settings are invalid: {}", f.message),
                    turns: 0,
                    requests: 0,
                });
                return Err(f);
            }
        }
    }
    let mut runner =
        LiveRunner::new(run.host, run.registry_bytes, run.limits, run.id).with_cancel(run.cancel);
    if let Some(a) = run.approvers {
        runner = runner.with_approvers(a);
    }
    Ok(run_agent(
        &spec,
        &run.tools.decls,
        proposer,
        &mut runner,
        sink,
        progress,
    ))
}

/// Labels the task with one model call and resolves the label's rule:
/// the profile file's `[profile]` and `[agent]` over the base table, the
/// rule's trace requirements, then the flags (a rule without a profile
/// keeps the session's profile). Records the request, the reply and
/// `task_classified`. A failed request uses the default label.
#[allow(clippy::result_large_err)]
fn classify(
    c: &Classify<'_>,
    spec: &AgentSpec,
    decls: &Declarations,
    proposer: &mut dyn Proposer,
    sink: &mut dyn EventSink,
    progress: &mut dyn FnMut(&str),
) -> Result<(Profile, AgentSettings), StartFailure> {
    let log_fail = |e: std::io::Error| {
        StartFailure::new(
            Stage::Log,
            StartErrorKind::Log,
            format!("the event log could not be written: {e}"),
        )
    };
    let messages = vec![Message::user(spec.task.clone())];
    sink.append(EventBody::ModelRequested {
        request_id: "classify".into(),
        messages: json!(messages),
        sent: 1,
        samples: 1,
    })
    .map_err(log_fail)?;
    let request = ModelRequest {
        system: c.rules.classifier_prompt(),
        messages,
        samples: 1,
        max_tokens: 64,
    };
    let mut log_error: Option<std::io::Error> = None;
    let reply = proposer.complete(&request, &mut |n| {
        if log_error.is_some() {
            return;
        }
        if let Err(e) = sink.append(EventBody::ModelRetried {
            request_id: "classify".into(),
            attempt: u64::from(n.attempt),
            error: n.kind.as_str().into(),
            message: n.message,
            delay_ms: n.delay_ms,
        }) {
            log_error = Some(e);
        }
    });
    if let Some(e) = log_error {
        return Err(log_fail(e));
    }
    let mut failed: Option<String> = None;
    let (label, matched) = match reply {
        Ok(r) => {
            let text = r.texts.first().cloned().unwrap_or_default();
            sink.append(EventBody::ModelReplied {
                request_id: "classify".into(),
                texts: json!(r.texts),
                usage: r.usage,
            })
            .map_err(log_fail)?;
            c.rules.label_of(&text)
        }
        Err(e) => {
            sink.append(EventBody::ModelFailed {
                request_id: "classify".into(),
                error: e.kind.as_str().into(),
                message: e.message.clone(),
                attempts: u64::from(e.attempts),
            })
            .map_err(log_fail)?;
            failed = Some(e.to_string());
            (c.rules.default.clone(), false)
        }
    };
    let rule = c.rules.rule(&label).cloned();
    let mut table = c.base.clone();
    // A rule without a profile keeps the session's.
    let mut profile = spec.profile.clone();
    if let Some(path) = rule.as_ref().and_then(|r| r.profile.clone()) {
        let text = crate::exec::read_config_text(&path, "the profile")
            .map_err(|e| StartFailure::config(&e))?;
        // A file with only an `[agent]` table keeps the session's policy.
        if let Some(p) = Profile::from_toml(&text, &path.display().to_string())
            .map_err(|e| StartFailure::config(&e))?
        {
            profile = p;
            if profile.name.is_empty() {
                profile.name = label.clone();
            }
        }
        table = table.overlay(
            &AgentTable::from_toml(&text, &path.display().to_string())
                .map_err(|e| StartFailure::config(&e))?,
        );
    }
    if let Some(r) = &rule {
        table = table.overlay(&AgentTable {
            trace: r.trace.clone(),
            ..AgentTable::default()
        });
    }
    let settings = table
        .overlay(&c.over)
        .settings()
        .and_then(|s| check_trace(&s, &spec.tags, &profile, decls).map(|_| s))
        .map_err(|e| StartFailure {
            help: Some(format!(
                "rule `{label}` of {}: fix its profile file or trace",
                c.origin
            )),
            ..StartFailure::new(Stage::Settings, StartErrorKind::Usage, e)
        })?;
    let how = match (&failed, matched) {
        (Some(e), _) => format!("the classifier request failed ({e}): using the default label"),
        (None, true) => "classified the task as".to_string(),
        (None, false) => {
            "the classifier's reply named no one rule: using the default label".to_string()
        }
    };
    progress(&format!("{how} `{label}`: profile {}", profile.name));
    sink.append(EventBody::TaskClassified {
        label,
        matched,
        profile: profile.to_json(),
        settings: settings.to_json(),
    })
    .map_err(log_fail)?;
    Ok((profile, settings))
}
