//! The loop itself: propose, check, feed back, run, until the model
//! answers (seed 001's loop runner, with lt programs as the proposals).
//!
//! A **turn** ends with a program run; an **attempt** is one request to the
//! model within a turn. Each attempt asks for `samples` replies; each reply
//! is read ([`super::extract`]), checked (the checker, the profile's static
//! check, the session's tool list), and recorded (`program_checked`). With
//! one sample, a rejected program's diagnostics go back to the model
//! ([`super::feedback`]) and it is asked again, up to `max_attempts`; with
//! several, K equal programs are accepted ([`super::consensus`]), and no
//! agreement asks again or stops, as the settings say. The accepted program
//! runs through the [`Runner`] (live: the control plane and the executors,
//! its events in the same log), and its result goes back to the model,
//! which answers in plain text (the final answer, printed) or proposes the
//! next program, up to `max_turns` runs. An answer is refused while the
//! trace requirements are unmet (`feedback::trace_unmet`).
//!
//! Everything the model sees is a function of the recorded replies and run
//! outcomes, so replay (`super::replay`) re-runs this same function.

use super::config::{AgentSettings, OnDisagreement};
use super::consensus::{self, Vote};
use super::extract::{extract, Extracted};
use super::feedback::{self, CallNotes, Problem, RunEnd};
use super::model::{Message, ModelRequest, Proposer};
use crate::control::profile::Profile;
use crate::control::static_check;
use crate::ir::{lower::lower, print::print_anonymous, Ir};
use crate::log::{sha256_hex, EventBody, EventSink};
use crate::source::SourceFile;
use crate::types::{check_source, Declarations};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;

/// What a session is about (everything `agent_started` records but the
/// model, the limits and the registry).
#[derive(Clone, Debug)]
pub struct AgentSpec {
    /// The task, as the user gave it.
    pub task: String,
    /// The tool declarations' text (`--tools`).
    pub declarations: String,
    /// The system prompt.
    pub system: String,
    /// The loop's settings.
    pub settings: AgentSettings,
    /// The profile the runs use (also checked statically, E07xx).
    pub profile: Profile,
    /// Each tool's tags (tools.toml `tags`), for trace requirements.
    pub tags: BTreeMap<String, Vec<String>>,
}

/// How one run ended, for the model and the caller.
#[derive(Clone, Debug, PartialEq)]
pub struct RunReport {
    /// The value (lt syntax) or why the run stopped.
    pub end: RunEnd,
    /// The value as JSON, when the run ended with one.
    pub value: Option<Json>,
    /// What each call did.
    pub calls: CallNotes,
}

/// Runs accepted programs. Live: [`super::runner::LiveRunner`] (the
/// control plane and the executors; the run's events, `session_started` to
/// `session_ended`, go to `sink`). Replay: answered from the log.
pub trait Runner {
    /// Runs `ir` (checked from `file`) as run number `turn` under
    /// `profile`. Errors: the run could not be recorded or replayed (the
    /// session ends with status `error`).
    fn run(
        &mut self,
        turn: u32,
        file: &SourceFile,
        ir: &Ir,
        profile: &Profile,
        sink: &mut dyn EventSink,
    ) -> Result<RunReport, String>;
}

/// How a session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The model gave its final answer (trace requirements met).
    Answered,
    /// The model did not converge: no acceptable program within
    /// `max_attempts`, no agreement (`on_disagreement = "stop"`), or no
    /// answer within `max_turns`.
    GaveUp,
    /// The model could not be reached (after retries) or the log could not
    /// be written.
    Error,
}

impl Status {
    /// `answered`, `gave_up` or `error`, as `agent_ended` records it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Answered => "answered",
            Status::GaveUp => "gave_up",
            Status::Error => "error",
        }
    }
}

/// The session's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// How it ended.
    pub status: Status,
    /// The model's final answer.
    pub answer: Option<String>,
    /// Why it ended, in one sentence.
    pub reason: String,
    /// Programs run.
    pub turns: u32,
    /// Model requests made by the loop.
    pub requests: u32,
    /// Attempts (model requests) each turn needed, the unfinished one last.
    pub attempts: Vec<u32>,
    /// The size in bytes of each feedback message sent (diagnostics, no
    /// program, unmet trace requirements; not run results, and not the
    /// last rejection's when the session gives up: it is never sent).
    pub feedback_bytes: Vec<usize>,
    /// The last run's report.
    pub last_run: Option<RunReport>,
}

impl Outcome {
    /// `lt agent --json`'s object: `{ok, status, answer, reason, turns,
    /// requests, attempts, feedback_bytes, value}` (`value`: the last
    /// run's, or `null`).
    pub fn to_json(&self) -> Json {
        json!({
            "ok": self.status == Status::Answered,
            "status": self.status.as_str(),
            "answer": self.answer,
            "reason": self.reason,
            "turns": self.turns,
            "requests": self.requests,
            "attempts": self.attempts,
            "feedback_bytes": self.feedback_bytes,
            "value": self.last_run.as_ref().and_then(|r| r.value.clone()).unwrap_or(Json::Null),
        })
    }

    /// A session that ended as `status` for `reason` before any request.
    pub fn ended(status: Status, reason: String) -> Outcome {
        Outcome {
            status,
            answer: None,
            reason,
            turns: 0,
            requests: 0,
            attempts: Vec::new(),
            feedback_bytes: Vec::new(),
            last_run: None,
        }
    }
}

/// One checked sample.
struct Sample {
    /// The first problem, briefly (`E0202 at line 5: …`), when rejected.
    first_problem: Option<String>,
    vote: Option<Vote>,
    /// The message for the model when the sample is rejected.
    feedback: Option<String>,
    answer: Option<String>,
    program: Option<(SourceFile, Ir)>,
}

/// Writes events, keeping the first failure.
struct Recorder<'s> {
    sink: &'s mut dyn EventSink,
    error: Option<String>,
}

impl Recorder<'_> {
    fn record(&mut self, body: EventBody) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.sink.append(body) {
            self.error = Some(format!("the event log could not be written: {e}"));
        }
    }
}

/// Runs the loop of `spec` with `proposer` and `runner`, recording every
/// step in `sink` (after the caller's `agent_started`, and
/// `task_classified` if any), and ends it with `agent_ended`. `progress`
/// gets a line per step (for `--verbose`).
pub fn run_agent(
    spec: &AgentSpec,
    decls: &Declarations,
    proposer: &mut dyn Proposer,
    runner: &mut dyn Runner,
    sink: &mut dyn EventSink,
    progress: &mut dyn FnMut(&str),
) -> Outcome {
    let mut rec = Recorder { sink, error: None };
    let mut out = Outcome::ended(Status::Error, String::new());
    let (status, reason) = drive(spec, decls, proposer, runner, &mut rec, progress, &mut out);
    out.status = status;
    out.reason = reason;
    if let Some(e) = rec.error.take() {
        out.status = Status::Error;
        out.reason = e;
    }
    rec.record(EventBody::AgentEnded {
        status: out.status.as_str().to_string(),
        answer: out.answer.clone().map_or(Json::Null, Json::String),
        reason: out.reason.clone(),
        turns: u64::from(out.turns),
        requests: u64::from(out.requests),
    });
    if let Some(e) = rec.error.take() {
        out.status = Status::Error;
        out.reason = e;
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn drive(
    spec: &AgentSpec,
    decls: &Declarations,
    proposer: &mut dyn Proposer,
    runner: &mut dyn Runner,
    rec: &mut Recorder<'_>,
    progress: &mut dyn FnMut(&str),
    out: &mut Outcome,
) -> (Status, String) {
    let s = &spec.settings;
    let rules = session_rules(spec, decls);
    let mut messages = vec![Message::user(feedback::task(&spec.task, &rules))];
    // How many messages earlier requests logged (each logs only what is new).
    let mut logged = 0usize;
    // The first problem of the last rejected sample, for the reason the
    // session gives when it gives up.
    let mut last_problem: Option<String> = None;
    let mut successes: BTreeMap<String, u64> = BTreeMap::new();
    // The size of the feedback message at the end of `messages`, counted
    // in `out.feedback_bytes` once a request carries it to the model (the
    // last one, when the session gives up, is never sent).
    let mut unsent: Option<usize> = None;
    loop {
        let turn = out.turns + 1;
        out.attempts.push(0);
        let mut attempt = 0u32;
        let (file, ir) = loop {
            if attempt == s.max_attempts {
                let what = if out.turns == 0 {
                    "no program was accepted"
                } else {
                    "the model neither answered nor sent an acceptable program"
                };
                let why = match &last_problem {
                    Some(p) => format!("; the last was rejected: {p}"),
                    None => String::new(),
                };
                return (
                    Status::GaveUp,
                    format!(
                        "{what} in {} attempt{}{why}",
                        s.max_attempts,
                        plural(s.max_attempts)
                    ),
                );
            }
            attempt += 1;
            if let Some(a) = out.attempts.last_mut() {
                *a = attempt;
            }
            let id = format!("t{turn}.a{attempt}");
            rec.record(EventBody::ModelRequested {
                request_id: id.clone(),
                messages: json!(&messages[logged.min(messages.len())..]),
                sent: messages.len() as u64,
                samples: u64::from(s.samples),
            });
            logged = messages.len();
            if let Some(e) = &rec.error {
                return (Status::Error, e.clone());
            }
            progress(&format!("{id}: asking the model"));
            let request = ModelRequest {
                system: spec.system.clone(),
                messages: messages.clone(),
                samples: s.samples,
                max_tokens: s.max_tokens,
            };
            out.requests += 1;
            out.feedback_bytes.extend(unsent.take());
            let reply = {
                let mut retried = |n: super::model::RetryNotice| {
                    progress(&format!(
                        "{id}: attempt {} failed ({}: {}); retrying in {} ms",
                        n.attempt,
                        n.kind.as_str(),
                        n.message,
                        n.delay_ms
                    ));
                    rec.record(EventBody::ModelRetried {
                        request_id: id.clone(),
                        attempt: u64::from(n.attempt),
                        error: n.kind.as_str().to_string(),
                        message: n.message,
                        delay_ms: n.delay_ms,
                    });
                };
                proposer.complete(&request, &mut retried)
            };
            let reply = match reply {
                Ok(r) => r,
                Err(e) => {
                    rec.record(EventBody::ModelFailed {
                        request_id: id.clone(),
                        error: e.kind.as_str().to_string(),
                        message: e.message.clone(),
                        attempts: u64::from(e.attempts),
                    });
                    return (Status::Error, format!("the model request failed: {e}"));
                }
            };
            rec.record(EventBody::ModelReplied {
                request_id: id.clone(),
                texts: Json::Array(reply.texts.iter().cloned().map(Json::String).collect()),
                usage: reply.usage.clone(),
            });
            if reply.texts.is_empty() {
                return (Status::Error, format!("{id}: the model returned no reply"));
            }
            let samples: Vec<Sample> = reply
                .texts
                .iter()
                .enumerate()
                .map(|(i, text)| evaluate(spec, decls, &id, i, text, out.turns > 0, rec))
                .collect();
            let votes: Vec<Option<Vote>> = samples.iter().map(|x| x.vote.clone()).collect();
            let agree = (s.agree as usize).min(samples.len());
            match consensus::decide(&votes, agree) {
                Ok((i, n)) => {
                    let mut chosen = samples.into_iter().nth(i).map(|x| (x.answer, x.program));
                    match chosen.take() {
                        Some((Some(answer), _)) => {
                            let unmet = unmet_trace(s, &spec.tags, &successes);
                            if unmet.is_empty() {
                                progress(&format!("{id}: final answer"));
                                out.answer = Some(answer);
                                return (Status::Answered, "the model answered".to_string());
                            }
                            if out.turns == s.max_turns {
                                // No run is left to make the calls.
                                let what: Vec<String> = unmet
                                    .iter()
                                    .map(|(tag, min, done, _)| format!("{tag}: {done} of {min}"))
                                    .collect();
                                out.answer = Some(answer);
                                return (
                                    Status::GaveUp,
                                    format!(
                                        "the model answered after the last run ({} allowed), but the trace requirements are unmet ({})",
                                        s.max_turns,
                                        what.join(", ")
                                    ),
                                );
                            }
                            let msg = feedback::trace_unmet(&unmet);
                            progress(&format!("{id}: answer refused: trace requirements unmet"));
                            unsent = Some(msg.len());
                            last_problem = Some("the trace requirements were not met".into());
                            messages.push(kept(&reply.texts[i]));
                            messages.push(Message::user(msg));
                        }
                        Some((None, Some((file, ir)))) => {
                            if out.turns == s.max_turns {
                                return (
                                    Status::GaveUp,
                                    format!(
                                        "the model sent another program after {} run{}; max_turns is {}",
                                        out.turns,
                                        plural(out.turns),
                                        s.max_turns
                                    ),
                                );
                            }
                            rec.record(EventBody::ProgramAccepted {
                                request_id: id.clone(),
                                sample: i as u64,
                                votes: n as u64,
                                program_hash: sha256_hex(file.text.as_bytes()),
                            });
                            progress(&format!("{id}: program accepted ({n} of {})", votes.len()));
                            messages.push(kept(&reply.texts[i]));
                            break (file, ir);
                        }
                        _ => return (Status::Error, "internal: a vote without its sample".into()),
                    }
                }
                Err(largest) => {
                    let any_valid = votes.iter().any(Option::is_some);
                    if any_valid {
                        progress(&format!(
                            "{id}: no agreement ({largest} of {} alike, {} needed)",
                            votes.len(),
                            agree
                        ));
                        if s.on_disagreement == OnDisagreement::Stop {
                            return (
                                Status::GaveUp,
                                format!(
                                    "the samples did not agree: at most {largest} of {} were the same, {agree} needed",
                                    votes.len()
                                ),
                            );
                        }
                        // Ask again with the same conversation: the samples
                        // are independent draws.
                        continue;
                    }
                    let msg = samples
                        .first()
                        .and_then(|x| x.feedback.clone())
                        .unwrap_or_default();
                    last_problem = samples.first().and_then(|x| x.first_problem.clone());
                    progress(&format!("{id}: rejected; feeding back {} bytes", msg.len()));
                    unsent = Some(msg.len());
                    messages.push(kept(&reply.texts[0]));
                    messages.push(Message::user(msg));
                }
            }
        };
        out.turns = turn;
        progress(&format!("run {turn}: running the accepted program"));
        let report = match runner.run(turn, &file, &ir, &spec.profile, &mut *rec.sink) {
            Ok(r) => r,
            Err(e) => return (Status::Error, e),
        };
        for (tool, n) in report.calls.successes() {
            *successes.entry(tool).or_insert(0) += n;
        }
        let msg = feedback::ran(&report.end, &report.calls, turn == s.max_turns);
        progress(&format!(
            "run {turn}: {}",
            match &report.end {
                RunEnd::Value(_) => {
                    let n = report.calls.calls.len();
                    format!("ok, {n} call{}", if n == 1 { "" } else { "s" })
                }
                RunEnd::Stopped { kind, .. } => format!("stopped ({kind})"),
            }
        ));
        messages.push(Message::user(msg));
        out.last_run = Some(report);
    }
}

/// The most bytes of a model reply kept in the conversation: a reply
/// beyond it (a runaway or hostile model) is sent back with its middle cut,
/// so that it cannot fill every later request.
const MAX_REPLY_IN_CONVERSATION: usize = 64 * 1024;

/// The model's reply as the conversation keeps it ([`MAX_REPLY_IN_CONVERSATION`]).
fn kept(text: &str) -> Message {
    if text.len() <= MAX_REPLY_IN_CONVERSATION {
        return Message::assistant(text);
    }
    let mut head = MAX_REPLY_IN_CONVERSATION / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - MAX_REPLY_IN_CONVERSATION / 4;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    Message::assistant(format!(
        "{}\n[… {} bytes of this reply cut …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    ))
}

fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// What the model must know of the session before its first program:
/// the tools the profile denies (with the pipeline's reason), the budgets,
/// the trace requirements, and how many programs may run.
fn session_rules(spec: &AgentSpec, decls: &Declarations) -> Vec<String> {
    let mut out = Vec::new();
    for t in &decls.tools {
        if let Some(o) = static_check::objections(&t.sig, &spec.profile).first() {
            out.push(format!(
                "Do not call `{}`: this session denies it ({}: {}).",
                t.sig.name, o.rule, o.reason
            ));
        }
    }
    if let Some(n) = spec.profile.max_calls {
        out.push(format!("A program may make at most {n} tool calls."));
    }
    for (tag, min) in &spec.settings.trace {
        let tools: Vec<&str> = spec
            .tags
            .iter()
            .filter(|(_, t)| t.contains(tag))
            .map(|(name, _)| name.as_str())
            .collect();
        out.push(format!(
            "Before you answer, at least {min} successful call{} of {} must have run.",
            if *min == 1 { "" } else { "s" },
            if tools.is_empty() {
                format!("a tool tagged `{tag}`")
            } else {
                tools
                    .iter()
                    .map(|t| format!("`{t}`"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            }
        ));
    }
    out.push(format!(
        "At most {} program{} may run in this session.",
        spec.settings.max_turns,
        plural(spec.settings.max_turns)
    ));
    out
}

/// The trace requirements not met yet: (tag, required, done, tools).
fn unmet_trace(
    s: &AgentSettings,
    tags: &BTreeMap<String, Vec<String>>,
    successes: &BTreeMap<String, u64>,
) -> Vec<(String, u64, u64, Vec<String>)> {
    let mut out = Vec::new();
    for (tag, min) in &s.trace {
        let tools: Vec<String> = tags
            .iter()
            .filter(|(_, t)| t.contains(tag))
            .map(|(name, _)| name.clone())
            .collect();
        let done: u64 = tools
            .iter()
            .map(|t| successes.get(t).copied().unwrap_or(0))
            .sum();
        if done < *min {
            out.push((tag.clone(), *min, done, tools));
        }
    }
    out
}

/// Reads and checks sample `i` of a reply, recording `program_checked`.
fn evaluate(
    spec: &AgentSpec,
    decls: &Declarations,
    id: &str,
    i: usize,
    text: &str,
    ran: bool,
    rec: &mut Recorder<'_>,
) -> Sample {
    let mut checked = |status: &str, program: Json, problems: &[Problem]| {
        rec.record(EventBody::ProgramChecked {
            request_id: id.to_string(),
            sample: i as u64,
            status: status.to_string(),
            program,
            diagnostics: Json::Array(problems.iter().map(Problem::to_json).collect()),
        });
    };
    match extract(text, ran) {
        Extracted::Answer(answer) => {
            checked("answer", Json::Null, &[]);
            Sample {
                first_problem: None,
                vote: Some(Vote::Answer),
                feedback: None,
                answer: Some(answer),
                program: None,
            }
        }
        Extracted::Missing(why) => {
            let problem = Problem {
                code: "no_program".into(),
                line: 0,
                column: 0,
                message: why.clone(),
                help: None,
            };
            checked("no_program", Json::Null, &[problem]);
            Sample {
                first_problem: Some("the reply had no program".into()),
                vote: None,
                feedback: Some(why),
                answer: None,
                program: None,
            }
        }
        Extracted::Program {
            text,
            fenced,
            unclosed,
        } => {
            let file = SourceFile::new(format!("{id}.{i}.lt"), text);
            let mut analysis = check_source(&file.text);
            static_check::check_analysis(&mut analysis, &spec.profile);
            let mut diags = std::mem::take(&mut analysis.diagnostics);
            diags.extend(super::tool_list::check_tool_list(
                &analysis,
                decls,
                &spec.declarations,
            ));
            // A listed tool the program forgot to declare: give its declaration.
            for d in diags
                .iter_mut()
                .filter(|d| d.code == crate::diag::Code::E0204)
            {
                let name = d.message.split('`').nth(1).unwrap_or("");
                if let Some(decl) =
                    super::tool_list::listed_declaration(decls, &spec.declarations, name)
                {
                    d.help = Some(format!(
                        "declare it before the expression, as listed: `{decl}`"
                    ));
                }
            }
            diags.sort_by_key(|d| d.span.start);
            let mut problems: Vec<Problem> = Vec::new();
            if unclosed {
                problems.push(Problem {
                    code: "cut_off".into(),
                    line: 0,
                    column: 0,
                    message: "Your reply was cut off: its ```lt block is never closed. Send the whole program again (shorter, if it was long).".into(),
                    help: None,
                });
            }
            if ran && fenced && !diags.is_empty() {
                problems.push(Problem {
                    code: "answer".into(),
                    line: 0,
                    column: 0,
                    message: "A code block after a run is read as the next program. If this reply was your final answer, send it as plain text without a code block.".into(),
                    help: None,
                });
            }
            if !fenced && !diags.is_empty() {
                problems.push(Problem {
                    code: "no_block".into(),
                    line: 0,
                    column: 0,
                    message: "Your reply had no ```lt block, so all of it was read as the program. Put the program, and only the program, in one ```lt block.".into(),
                    help: None,
                });
            }
            // A cut-off program's syntax errors are the cut: the model is
            // asked to send it whole again, not to patch the stump.
            let more = if unclosed {
                0
            } else {
                problems.extend(diags.iter().map(|d| Problem::from_diagnostic(&file, d)));
                analysis.truncated
            };
            let ir = if problems.is_empty() && more == 0 {
                analysis.diagnostics = diags;
                analysis.into_checked().ok().and_then(|c| lower(&c).ok())
            } else {
                None
            };
            match ir {
                Some(ir) => {
                    checked("ok", Json::String(file.text.clone()), &[]);
                    Sample {
                        first_problem: None,
                        vote: Some(Vote::Program(print_anonymous(&ir))),
                        feedback: None,
                        answer: None,
                        program: Some((file, ir)),
                    }
                }
                None => {
                    if problems.is_empty() {
                        problems.push(Problem {
                            code: "internal".into(),
                            line: 0,
                            column: 0,
                            message: "lt could not lower this program (a bug in lt); try writing it another way".into(),
                            help: None,
                        });
                    }
                    checked("rejected", Json::String(file.text.clone()), &problems);
                    let first = problems.first().map(|p| {
                        let at = if p.line > 0 {
                            format!(" at line {}", p.line)
                        } else {
                            String::new()
                        };
                        format!("{}{at}: {}", p.code, feedback::clip(&p.message, 160))
                    });
                    Sample {
                        first_problem: first,
                        vote: None,
                        feedback: Some(feedback::rejected(&file, &problems, more)),
                        answer: None,
                        program: None,
                    }
                }
            }
        }
    }
}
