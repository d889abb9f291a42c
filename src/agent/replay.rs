//! Replaying an agent session from its log, calling neither the model nor
//! any tool: the recorded replies are inputs like tool outcomes.
//!
//! The loop ([`super::session::run_agent`]) runs again with three stand-ins
//! sharing one cursor into the recorded events:
//!
//! - `ReplaySink` compares every event the loop records with the next
//!   recorded one (the same request, the same diagnostics, the same
//!   acceptance…); the first difference is the divergence.
//!   `model_retried` events are skipped: retries belong to the transport.
//! - the proposer answers each request with the recorded `model_replied`
//!   (or `model_failed`).
//! - the runner replays each run with the control plane's
//!   [`ReplayHost`] over the recorded `session_started` … `session_ended`,
//!   checking that the same program runs, makes the same calls, and ends
//!   with the same value.
//!
//! Classification is not repeated: the recorded `task_classified` gives
//! the profile and settings the loop ran under.

use super::config::AgentSettings;
use super::feedback::CallNotes;
use super::model::{
    ModelReply, ModelRequest, ProposeError, ProposeErrorKind, Proposer, RetryNotice,
};
use super::session::{run_agent, AgentSpec, Outcome, RunReport, Runner};
use crate::control::profile::Profile;
use crate::control::replay::ReplayHost;
use crate::ir::Ir;
use crate::log::{Event, EventBody, EventSink};
use crate::runtime::eval;
use crate::source::SourceFile;
use crate::types::check_declarations;
use serde_json::Value as Json;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::rc::Rc;

/// The recorded events and how far the replay has read them.
struct Cursor {
    events: Vec<Event>,
    at: usize,
    divergence: Option<String>,
}

impl Cursor {
    /// Moves past `model_retried` events.
    fn skip_retries(&mut self) {
        while matches!(
            self.events.get(self.at).map(|e| &e.body),
            Some(EventBody::ModelRetried { .. })
        ) {
            self.at += 1;
        }
    }

    fn diverge(&mut self, message: String) -> String {
        if self.divergence.is_none() {
            self.divergence = Some(message.clone());
        }
        message
    }
}

type Shared = Rc<RefCell<Cursor>>;

/// Compares recorded events with the replay's.
struct ReplaySink(Shared);

impl EventSink for ReplaySink {
    fn append(&mut self, body: EventBody) -> io::Result<()> {
        let mut c = self.0.borrow_mut();
        c.skip_retries();
        let message = match c.events.get(c.at) {
            Some(e) if e.body == body => {
                c.at += 1;
                return Ok(());
            }
            Some(e) => format!(
                "event #{} differs: the log has `{}`, the replay gives `{}`{}",
                e.seq,
                e.kind(),
                body.kind(),
                detail(&e.body, &body)
            ),
            None => format!(
                "the log ends, but the replay goes on with `{}`",
                body.kind()
            ),
        };
        let message = c.diverge(message);
        Err(io::Error::other(message))
    }
}

/// What differs between two events of the same kind, briefly.
fn detail(log: &EventBody, replay: &EventBody) -> String {
    match (log, replay) {
        (
            EventBody::ProgramChecked {
                status: a,
                diagnostics: da,
                ..
            },
            EventBody::ProgramChecked {
                status: b,
                diagnostics: db,
                ..
            },
        ) => {
            let codes = |d: &Json| -> String {
                let list: Vec<&str> = d
                    .as_array()
                    .map(|x| x.iter().filter_map(|p| p.get("code")?.as_str()).collect())
                    .unwrap_or_default();
                if list.is_empty() {
                    "no problem".to_string()
                } else {
                    list.join(", ")
                }
            };
            format!(
                " (the log has {a} with {}, the replay {b} with {}: the checker's verdict changed, e.g. another lt version)",
                codes(da),
                codes(db)
            )
        }
        (
            EventBody::ModelRequested {
                messages: a,
                sent: n,
                ..
            },
            EventBody::ModelRequested {
                messages: b,
                sent: m,
                ..
            },
        ) => {
            let (a, b) = (
                a.as_array().cloned().unwrap_or_default(),
                b.as_array().cloned().unwrap_or_default(),
            );
            match (0..a.len().max(b.len())).find(|i| a.get(*i) != b.get(*i)) {
                Some(i) => {
                    let text = |x: Option<&Json>| {
                        x.and_then(|m| m.get("content"))
                            .and_then(Json::as_str)
                            .map_or("(none)".to_string(), |t| super::feedback::clip(t, 80))
                    };
                    format!(
                        " (new message {i} of the request: the log has {:?}, the replay {:?})",
                        text(a.get(i)),
                        text(b.get(i))
                    )
                }
                None => format!(" (the log sent {n} messages, the replay {m})"),
            }
        }
        _ if log.kind() == replay.kind() => {
            let (a, b) = (log.to_json_fields(), replay.to_json_fields());
            let keys: Vec<&String> = a
                .iter()
                .filter(|(k, v)| b.get(*k) != Some(*v))
                .map(|(k, _)| k)
                .collect();
            format!(
                " (fields that differ: {})",
                keys.iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
        _ => String::new(),
    }
}

/// Answers requests with the recorded replies.
struct ReplayProposer {
    cursor: Shared,
    model: Json,
}

impl Proposer for ReplayProposer {
    fn describe(&self) -> Json {
        self.model.clone()
    }

    fn complete(
        &mut self,
        _request: &ModelRequest,
        _retried: &mut dyn FnMut(RetryNotice),
    ) -> Result<ModelReply, ProposeError> {
        let mut c = self.cursor.borrow_mut();
        c.skip_retries();
        let failed = |message: String| ProposeError {
            kind: ProposeErrorKind::Other,
            message,
            attempts: 0,
        };
        match c.events.get(c.at).map(|e| &e.body) {
            Some(EventBody::ModelReplied { texts, usage, .. }) => {
                let texts: Option<Vec<String>> = texts
                    .as_array()
                    .map(|t| t.iter().map(|x| x.as_str().map(str::to_string)).collect())
                    .unwrap_or(None);
                match texts {
                    Some(texts) => Ok(ModelReply {
                        texts,
                        usage: usage.clone(),
                    }),
                    None => Err(failed(c.diverge(
                        "a recorded model_replied whose texts are not strings".into(),
                    ))),
                }
            }
            Some(EventBody::ModelFailed {
                error,
                message,
                attempts,
                ..
            }) => Err(ProposeError {
                kind: kind_of(error),
                message: message.clone(),
                attempts: u32::try_from(*attempts).unwrap_or(u32::MAX),
            }),
            Some(_) => {
                let kind = c.events.get(c.at).map_or("", |e| e.kind());
                Err(failed(c.diverge(format!(
                    "the replay asks the model, but the log has `{kind}` here"
                ))))
            }
            None => Err(failed(c.diverge(
                "the log ends before the model's reply (the session was cut short)".into(),
            ))),
        }
    }
}

fn kind_of(text: &str) -> ProposeErrorKind {
    use ProposeErrorKind as K;
    [
        K::Transport,
        K::Timeout,
        K::RateLimited,
        K::Auth,
        K::Status,
        K::Malformed,
        K::Config,
    ]
    .into_iter()
    .find(|k| k.as_str() == text)
    .unwrap_or(K::Other)
}

/// Replays runs from their recorded events, carrying the pipeline from
/// run to run as the live runner does.
struct ReplayRunner(Shared, Option<crate::control::Pipeline>);

impl Runner for ReplayRunner {
    fn run(
        &mut self,
        _turn: u32,
        file: &SourceFile,
        ir: &Ir,
        _profile: &Profile,
        _sink: &mut dyn EventSink,
    ) -> Result<RunReport, String> {
        let mut c = self.0.borrow_mut();
        c.skip_retries();
        let start = c.at;
        let (profile, limits) = match c.events.get(start).map(|e| &e.body) {
            Some(EventBody::SessionStarted {
                program,
                profile,
                limits,
                ..
            }) => {
                if *program != file.text {
                    return Err(c.diverge(format!(
                        "event #{start}: the recorded run is of another program than the one accepted"
                    )));
                }
                let profile = Profile::from_json(profile)
                    .map_err(|e| format!("the recorded profile is invalid: {e}"))?;
                let limits = crate::control::session::recorded_limits(limits)
                    .map_err(|e| format!("the recorded limits are invalid: {e}"))?;
                (profile, limits)
            }
            other => {
                let kind = other.map_or("the end of the log", EventBody::kind);
                return Err(c.diverge(format!(
                    "the replay runs the accepted program, but the log has `{kind}` at event #{start}"
                )));
            }
        };
        let Some(end) = c.events[start..]
            .iter()
            .position(|e| matches!(e.body, EventBody::SessionEnded { .. }))
            .map(|i| start + i)
        else {
            return Err(c.diverge("the log ends inside a run (the session was cut short)".into()));
        };
        let limits = crate::runtime::limits::Limits {
            timeout: None,
            ..limits
        };
        let slice = &c.events[start..=end];
        let mut host = ReplayHost::new(slice, profile, &ir.tools).with_limits(limits.clone());
        if let Some(p) = self.1.take() {
            host = host.with_pipeline(p);
        }
        let (result, _stats) = eval::run(ir, &mut host, &limits);
        // A run the wall clock stopped cannot be replayed past that point
        // (replay has no clock): it matches when every recorded call was
        // made, as `lt replay` of a plain session has it.
        let recorded_error = match &c.events[end].body {
            EventBody::SessionEnded {
                error: Some(error), ..
            } => Some(error.clone()),
            _ => None,
        };
        let timed_out = recorded_error
            .as_ref()
            .and_then(|e| e.get("kind"))
            .and_then(Json::as_str)
            == Some("timeout");
        if timed_out {
            let all_made = host.remaining().iter().all(|e| {
                matches!(
                    e.body,
                    EventBody::SessionEnded { .. }
                        | EventBody::AnnotationStarted { .. }
                        | EventBody::AnnotationEnded { .. }
                )
            });
            if all_made || host.divergence().is_some_and(|d| d.log_ended) {
                self.1 = Some(host.into_pipeline());
                let mut notes = CallNotes::default();
                for e in slice {
                    notes.observe(&e.body);
                }
                let message = recorded_error
                    .as_ref()
                    .and_then(|e| e.get("message"))
                    .and_then(Json::as_str)
                    .unwrap_or_default()
                    .to_string();
                c.at = end + 1;
                return Ok(RunReport {
                    end: super::feedback::RunEnd::Stopped {
                        kind: "timeout".into(),
                        message,
                    },
                    value: None,
                    calls: notes,
                });
            }
        }
        if let Some(d) = host.divergence() {
            let message = format!("run at event #{start}: non-determinism {d}");
            drop(host);
            return Err(c.diverge(message));
        }
        self.1 = Some(host.into_pipeline());
        let mut notes = CallNotes::default();
        for e in slice {
            notes.observe(&e.body);
        }
        let same = match (&c.events[end].body, &result) {
            (EventBody::SessionEnded { status, value, .. }, Ok(v)) => {
                status == "ok" && value.as_ref() == Some(&v.to_json())
            }
            (EventBody::SessionEnded { status, error, .. }, Err(e)) => {
                status == "error"
                    && error
                        .as_ref()
                        .and_then(|x| x.get("kind"))
                        .and_then(Json::as_str)
                        == Some(e.kind.as_str())
            }
            _ => false,
        };
        if !same {
            return Err(c.diverge(format!(
                "run at event #{start}: the replay made the recorded calls but ended differently"
            )));
        }
        c.at = end + 1;
        Ok(super::runner::report(result, notes))
    }
}

/// The result of replaying an agent session.
#[derive(Clone, Debug)]
pub struct AgentReplay {
    /// The replayed outcome.
    pub outcome: Outcome,
    /// Where the replay differs from the log (`None`: it matches).
    pub divergence: Option<String>,
}

/// Replays the agent session in `events` (a verified log whose first event
/// is `agent_started`). Errors: the log's first events cannot be read as
/// an agent session (not `agent_started`, invalid settings or profile).
pub fn replay_agent(events: Vec<Event>) -> Result<AgentReplay, String> {
    let Some(EventBody::AgentStarted {
        lt_version,
        task,
        declarations,
        system,
        model,
        settings,
        profile,
        tags,
        ..
    }) = events.first().map(|e| e.body.clone())
    else {
        return Err("the log does not start with agent_started".into());
    };
    let mut settings = AgentSettings::from_json(&settings)?;
    let mut profile = Profile::from_json(&profile).map_err(|e| format!("profile: {e}"))?;
    let tags: BTreeMap<String, Vec<String>> =
        serde_json::from_value(tags).map_err(|e| format!("tags: {e}"))?;
    let mut at = 1;
    if let Some(i) = events
        .iter()
        .position(|e| matches!(e.body, EventBody::TaskClassified { .. }))
    {
        if let EventBody::TaskClassified {
            profile: p,
            settings: s,
            ..
        } = &events[i].body
        {
            profile = Profile::from_json(p).map_err(|e| format!("classified profile: {e}"))?;
            settings = AgentSettings::from_json(s)?;
        }
        at = i + 1;
    }
    // The session ended before its loop (a configuration error found after
    // the classifier's answer): nothing to replay but that end.
    let mut rest = events[at..]
        .iter()
        .filter(|e| !matches!(e.body, EventBody::ModelRetried { .. }));
    if let Some(EventBody::AgentEnded { status, reason, .. }) = rest.next().map(|e| &e.body) {
        return Ok(AgentReplay {
            outcome: Outcome::ended(
                if status == "error" {
                    super::session::Status::Error
                } else {
                    super::session::Status::GaveUp
                },
                reason.clone(),
            ),
            divergence: None,
        });
    }
    // The system prompt is the guide and the declarations: a log of this
    // version of lt must hold the one this version sends.
    if lt_version == env!("CARGO_PKG_VERSION") {
        let shown = super::prompt::load_declarations(&declarations)
            .map_err(|_| "the recorded declarations have errors".to_string())?;
        if super::prompt::system_prompt(&shown.text) != system {
            return Ok(AgentReplay {
                outcome: Outcome::ended(super::session::Status::Error, String::new()),
                divergence: Some(
                    "agent_started: the recorded system prompt is not the one lt sends for the recorded declarations".into(),
                ),
            });
        }
    }
    let decls = check_declarations(&declarations);
    let spec = AgentSpec {
        task,
        declarations,
        system,
        settings,
        profile,
        tags,
    };
    let cursor = Rc::new(RefCell::new(Cursor {
        events,
        at,
        divergence: None,
    }));
    let mut proposer = ReplayProposer {
        cursor: cursor.clone(),
        model,
    };
    let mut runner = ReplayRunner(cursor.clone(), None);
    let mut sink = ReplaySink(cursor.clone());
    let outcome = run_agent(
        &spec,
        &decls,
        &mut proposer,
        &mut runner,
        &mut sink,
        &mut |_| {},
    );
    let mut c = cursor.borrow_mut();
    c.skip_retries();
    if c.divergence.is_none() && c.at < c.events.len() {
        let e = &c.events[c.at];
        let message = format!(
            "the replay ended at event #{}, but the log goes on with `{}`",
            e.seq,
            e.kind()
        );
        c.divergence = Some(message);
    }
    Ok(AgentReplay {
        outcome,
        divergence: c.divergence.clone(),
    })
}

/// Replays the agent log `events` and judges it as `lt replay` does:
/// `Ok` with `lt replay --json`'s object (`{ok, agent, status, answer,
/// turns, requests}`) when the replay matches the log; else the kind
/// (`log`: not readable as an agent session; `non_determinism`; or
/// `incomplete`: the log ends before the session did) and the message.
pub fn judge(events: Vec<Event>) -> Result<(AgentReplay, Json), (&'static str, String)> {
    let ended = events
        .iter()
        .any(|e| matches!(e.body, EventBody::AgentEnded { .. }));
    let replayed = replay_agent(events).map_err(|e| ("log", e))?;
    if let Some(d) = &replayed.divergence {
        return Err(if ended {
            ("non_determinism", format!("non-determinism: {d}"))
        } else {
            (
                "incomplete",
                format!("the log ends before the agent session did (it was cut short): {d}"),
            )
        });
    }
    let o = &replayed.outcome;
    let json = serde_json::json!({
        "ok": true,
        "agent": true,
        "status": o.status.as_str(),
        "answer": o.answer,
        "turns": o.turns,
        "requests": o.requests,
    });
    Ok((replayed, json))
}
