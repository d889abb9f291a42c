//! What one run of a case did, read from its log ([`RunRecord`]), and the
//! invariants every run's log must satisfy, checked without being asked
//! ([`invariants`]): the log verifies; every executed call is preceded by
//! an allow decision; no tool outside the profile is executed. (That replay
//! reproduces the run is checked by `run.rs`, which has the program.)

use crate::control::profile::Profile;
use crate::log::{Decision, Event, EventBody};
use serde::Serialize;
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, BTreeSet};

/// A call as a criterion sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CallRecord {
    /// The tool (`name` in JSON and in lt criteria).
    #[serde(rename = "name")]
    pub tool: String,
    /// Its argument.
    pub argument: Json,
    /// The program received `Ok`.
    pub ok: bool,
    /// The `Ok` value, or the `Err` message as a JSON string.
    pub output: Json,
}

/// A call the profile denied.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Denial {
    /// The tool (`name` in JSON and in lt criteria).
    #[serde(rename = "name")]
    pub tool: String,
    /// The rule that denied it.
    pub rule: String,
    /// Why.
    pub reason: String,
}

/// One run of a case: its ending, its calls, and the verdicts on it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunRecord {
    /// Which run of the case (from 1).
    pub run: usize,
    /// It ended with a value.
    pub ok: bool,
    /// The value's JSON, or `{kind, message}` when it failed.
    pub value: Json,
    /// The error's message, when it failed.
    pub error: Option<String>,
    /// Why the run could not be judged: an error of the infrastructure
    /// (the model server down or unreachable), not of the agent. Such a
    /// run is neither passed nor failed: it is left out of the rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errored: Option<String>,
    /// Every call, in the order proposed.
    pub calls: Vec<CallRecord>,
    /// Denied calls.
    pub denials: Vec<Denial>,
    /// Calls that ended `outcome unknown`.
    pub unknown_outcomes: u64,
    /// Model rounds (0: a fixed program).
    pub rounds: u64,
    /// The model's final answer (an agent case that answered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Invariants the log violates (empty: none).
    pub invariants: Vec<String>,
    /// Criteria failed (ready-made and lt), each in words.
    pub failed: Vec<String>,
    /// The reward, when the case has one.
    pub reward: Option<f64>,
    /// The session's wall-clock time in milliseconds (setup excluded).
    pub ms: f64,
    /// The time spent by `lt eval` itself beyond the session (checking,
    /// invariants, criteria), in milliseconds.
    pub overhead_ms: f64,
}

impl RunRecord {
    /// The run passed: no invariant violated, no criterion failed.
    pub fn passed(&self) -> bool {
        self.errored.is_none() && self.invariants.is_empty() && self.failed.is_empty()
    }

    /// `session` as lt criteria see it ([`super::criteria::SESSION_TYPE`]).
    pub fn session_json(&self) -> Json {
        json!({
            "ok": self.ok,
            "value": self.value,
            "calls": self.calls,
            "denials": self.denials,
            "rounds": self.rounds,
        })
    }

    /// The outcome's key: the call sequence and the value.
    pub fn outcome_key(&self) -> String {
        let tools: Vec<&str> = self.calls.iter().map(|c| c.tool.as_str()).collect();
        format!("[{}] → {}", tools.join(", "), self.value)
    }

    /// Fills the calls, denials and unknown outcomes from `events`.
    pub fn read_calls(&mut self, events: &[Event]) {
        let mut index: BTreeMap<&str, usize> = BTreeMap::new();
        for e in events {
            match &e.body {
                EventBody::Proposed {
                    call_id,
                    tool,
                    argument,
                } => {
                    index.insert(call_id, self.calls.len());
                    self.calls.push(CallRecord {
                        tool: tool.clone(),
                        argument: argument.clone(),
                        ok: false,
                        output: Json::Null,
                    });
                }
                EventBody::Decided {
                    call_id,
                    decision: Decision::Deny,
                    rule,
                    reason,
                } => {
                    if let Some(c) = index.get(call_id.as_str()).map(|i| &mut self.calls[*i]) {
                        c.output = json!(format!("denied: {rule}: {reason}"));
                        self.denials.push(Denial {
                            tool: c.tool.clone(),
                            rule: rule.clone(),
                            reason: reason.clone(),
                        });
                    }
                }
                EventBody::Completed {
                    call_id, result, ..
                }
                | EventBody::Failed {
                    call_id, result, ..
                }
                | EventBody::TimedOut {
                    call_id, result, ..
                } => {
                    if let EventBody::Failed { failure, .. } = &e.body {
                        if failure == "unknown" {
                            self.unknown_outcomes += 1;
                        }
                    }
                    if let Some(c) = index.get(call_id.as_str()).map(|i| &mut self.calls[*i]) {
                        match (result.get("Ok"), result.get("Err")) {
                            (Some(v), _) => {
                                c.ok = true;
                                c.output = v.clone();
                            }
                            (None, Some(m)) => c.output = m.clone(),
                            (None, None) => c.output = result.clone(),
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

/// The invariants `text` (a session's whole log) violates: it verifies;
/// each `scheduled` call (and each answered without running, a dry run)
/// follows an allow decision for it; no executed call's tool is outside
/// the recorded profile (its `allow` list, its `deny` list).
pub fn invariants(text: &str, events: &[Event]) -> Vec<String> {
    let mut out = Vec::new();
    let report = crate::log::verify(text);
    if let Some(p) = &report.problem {
        out.push(format!("log verifies: {p}"));
    }
    // An agent's log holds a session per run, each from its own
    // `session_started` (its profile), its call ids starting afresh.
    let mut profile: Option<Profile> = None;
    match events.first().map(|e| &e.body) {
        Some(EventBody::SessionStarted { .. } | EventBody::AgentStarted { .. }) => {}
        _ => out.push(
            "log verifies: the log does not start with session_started (or agent_started)".into(),
        ),
    }
    let mut allowed: BTreeSet<&str> = BTreeSet::new();
    let mut denied: BTreeSet<&str> = BTreeSet::new();
    let mut scheduled: BTreeSet<&str> = BTreeSet::new();
    for e in events {
        match &e.body {
            EventBody::SessionStarted { profile: p, .. } => {
                profile = Profile::from_json(p).ok();
                if profile.is_none() {
                    out.push(format!(
                        "log verifies: the profile of session_started (#{}) is invalid",
                        e.seq
                    ));
                }
                allowed.clear();
                denied.clear();
                scheduled.clear();
            }
            EventBody::Decided {
                call_id, decision, ..
            } => {
                match decision {
                    Decision::Allow => allowed.insert(call_id),
                    Decision::Deny => denied.insert(call_id),
                };
            }
            EventBody::Scheduled { call_id, tool, .. } => {
                scheduled.insert(call_id);
                if !allowed.contains(call_id.as_str()) {
                    out.push(format!(
                        "allow before execution: call {call_id} of {tool} was scheduled (#{}) without an allow decision before it",
                        e.seq
                    ));
                }
                if let Some(p) = &profile {
                    let outside = p.deny.contains(tool)
                        || p.allow.as_ref().is_some_and(|a| !a.contains(tool));
                    if outside {
                        out.push(format!(
                            "tools within the profile: {tool} ran (#{}) but profile {} does not allow it",
                            e.seq, p.name
                        ));
                    }
                }
            }
            // Answered without running (a dry run): still decided first.
            EventBody::Completed { call_id, .. }
                if !scheduled.contains(call_id.as_str()) && !allowed.contains(call_id.as_str()) =>
            {
                out.push(format!(
                    "allow before execution: call {call_id} completed (#{}) without an allow decision",
                    e.seq
                ));
            }
            _ => {}
        }
    }
    out
}
