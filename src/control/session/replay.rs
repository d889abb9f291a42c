//! Replaying a session: its program re-run against its log, no tool
//! called, and the verdict (`lt replay`). Also what a log records about its
//! session ([`Recorded`]), read once for replay and resume alike.

use crate::control::profile::Profile;
use crate::control::replay::ReplayHost;
use crate::ir::Ir;
use crate::log::{Event, EventBody};
use crate::runtime::eval;
use crate::runtime::limits::Limits;
use serde_json::{json, Value as Json};

/// What a log's `session_started` says about its session.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The program's text.
    pub program: String,
    /// The profile as recorded (JSON; [`Profile::from_json`]).
    pub profile: Json,
    /// The limits as recorded ([`super::recorded_limits`]).
    pub limits: Json,
    /// The SHA-256 of the tools.toml bytes the session started with.
    pub registry_hash: String,
}

impl Recorded {
    /// The recorded program as a file named `name`.
    pub fn program_file(&self, name: impl Into<String>) -> crate::source::SourceFile {
        crate::source::SourceFile::new(name, self.program.clone())
    }

    /// The recorded profile. Errors: it is not a valid profile (in words).
    pub fn profile(&self) -> Result<Profile, String> {
        Profile::from_json(&self.profile).map_err(|e| e.to_string())
    }

    /// The recorded limits ([`super::recorded_limits`]). Errors: in words.
    pub fn limits(&self) -> Result<Limits, String> {
        super::recorded_limits(&self.limits)
    }

    /// The first event's record. `None`: it is not `session_started`.
    pub fn from_events(events: &[Event]) -> Option<Recorded> {
        match events.first().map(|e| &e.body) {
            Some(EventBody::SessionStarted {
                program,
                profile,
                limits,
                registry_hash,
                ..
            }) => Some(Recorded {
                program: program.clone(),
                profile: profile.clone(),
                limits: limits.clone(),
                registry_hash: registry_hash.clone(),
            }),
            _ => None,
        }
    }
}

/// How a replay differs from its log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Difference {
    /// The log ends before the session did (a crash).
    Incomplete,
    /// The program issued another call than the log holds.
    NonDeterminism,
    /// The same calls, another ending.
    DifferentValue,
}

impl Difference {
    /// `incomplete`, `non_determinism`, `different_value`.
    pub fn as_str(self) -> &'static str {
        match self {
            Difference::Incomplete => "incomplete",
            Difference::NonDeterminism => "non_determinism",
            Difference::DifferentValue => "different_value",
        }
    }
}

/// The verdict of a replay.
#[derive(Clone, Debug)]
pub enum Verdict {
    /// The same calls, decisions, outcomes and ending.
    Matches {
        /// Calls answered from the log.
        calls: u64,
        /// Steps the replay used.
        steps: u64,
        /// `ok` or `error`.
        status: String,
        /// The value (`ok`) or `{kind, message}` (`error`).
        value: Option<Json>,
        /// The value as `lt run` shows it, or `error: <message>`.
        shown: String,
    },
    /// The session was stopped from outside the program (the wall clock, or
    /// a cancel), and the replay made every call it had made (replay has no
    /// clock and no cancel).
    MatchesUntilStopped {
        /// Calls answered from the log.
        calls: u64,
        /// `true`: cancelled; `false`: timed out.
        cancelled: bool,
    },
    /// The replay and the log differ.
    Differs {
        /// How.
        difference: Difference,
        /// Both sides, in words.
        message: String,
    },
}

impl Verdict {
    /// `lt replay --json`'s object: `{ok: true, calls, steps, status,
    /// value}` when it matches; `{ok: true, calls, status: "error",
    /// cancelled | timed_out: true}` when it matches up to a stop from
    /// outside; `{ok: false, kind, message}` when it differs (`kind` is
    /// [`Difference::as_str`]).
    pub fn to_json(&self) -> Json {
        match self {
            Verdict::Matches {
                calls,
                steps,
                status,
                value,
                ..
            } => {
                json!({"ok": true, "calls": calls, "steps": steps, "status": status, "value": value})
            }
            Verdict::MatchesUntilStopped { calls, cancelled } => {
                let key = if *cancelled { "cancelled" } else { "timed_out" };
                json!({"ok": true, "calls": calls, "status": "error", key: true})
            }
            Verdict::Differs {
                difference,
                message,
            } => json!({"ok": false, "kind": difference.as_str(), "message": message}),
        }
    }
}

/// Replays `ir` against `events` (a verified log of one session) under
/// `profile` and `limits` (the wall clock is not replayed: `timeout` is
/// ignored).
pub fn replay(events: &[Event], ir: &Ir, profile: Profile, limits: Limits) -> Verdict {
    let limits = Limits {
        timeout: None,
        ..limits
    };
    let mut host = ReplayHost::new(events, profile, &ir.tools).with_limits(limits.clone());
    let (result, stats) = eval::run(ir, &mut host, &limits);
    let ended = events.iter().find_map(|e| match &e.body {
        EventBody::SessionEnded {
            status,
            value,
            error,
            ..
        } => Some((status.clone(), value.clone(), error.clone())),
        _ => None,
    });
    // A session the wall clock or a cancel stopped cannot be replayed past
    // that point (replay has neither): it matches when every recorded call
    // was made.
    let stop_kind = ended.as_ref().and_then(|(_, _, e)| {
        e.as_ref()
            .and_then(|e| e.get("kind"))
            .and_then(|k| k.as_str())
            .filter(|k| *k == "timeout" || *k == "cancelled")
            .map(str::to_string)
    });
    let all_made = host.remaining().iter().all(|e| {
        matches!(
            e.body,
            EventBody::SessionEnded { .. }
                | EventBody::SessionResumed { .. }
                | EventBody::SessionInterrupted { .. }
                | EventBody::AnnotationStarted { .. }
                | EventBody::AnnotationEnded { .. }
        )
    });
    if let Some(kind) = &stop_kind {
        if all_made || host.divergence().is_some_and(|d| d.log_ended) {
            return Verdict::MatchesUntilStopped {
                calls: host.calls(),
                cancelled: kind == "cancelled",
            };
        }
    }
    if let Some(d) = host.divergence() {
        if d.log_ended && ended.is_none() {
            return Verdict::Differs {
                difference: Difference::Incomplete,
                message: format!(
                    "the log ends before the session did (it was cut short, e.g. by a crash): {d}"
                ),
            };
        }
        return Verdict::Differs {
            difference: Difference::NonDeterminism,
            message: format!("non-determinism {d}"),
        };
    }
    // An error session is compared by its error's kind and message.
    let ended = ended.map(|(status, value, error)| {
        let value = if status == "ok" {
            value
        } else {
            error.map(|e| json!({"kind": e.get("kind"), "message": e.get("message")}))
        };
        (status, value)
    });
    let replayed = match &result {
        Ok(v) => ("ok".to_string(), Some(v.to_json())),
        Err(e) => (
            "error".to_string(),
            Some(json!({"kind": e.kind.as_str(), "message": e.message})),
        ),
    };
    match ended {
        None => Verdict::Differs {
            difference: Difference::Incomplete,
            message: format!(
                "replayed {} calls, but the log ends before the session did (it was cut short); the replayed run ended {}",
                host.calls(),
                replayed.0
            ),
        },
        Some((status, value)) if status == replayed.0 && value == replayed.1 => Verdict::Matches {
            calls: host.calls(),
            steps: stats.steps,
            status,
            value,
            shown: match &result {
                Ok(v) => v.to_string(),
                Err(e) => format!("error: {}", e.message),
            },
        },
        Some((status, value)) => Verdict::Differs {
            difference: Difference::DifferentValue,
            message: format!(
                "the replay issued the recorded calls but ended differently: the log has {status} {}, the replay gave {} {}",
                value.map(|v| v.to_string()).unwrap_or_default(),
                replayed.0,
                replayed.1.map(|v| v.to_string()).unwrap_or_default()
            ),
        },
    }
}

/// Why a log could not be replayed at all (before any verdict).
pub enum ReplaySetupError {
    /// The log: no `session_started`, an invalid recorded profile or limits
    /// (in words).
    Log(String),
    /// The program (recorded or given) is rejected by the checker: its file
    /// and analysis.
    Rejected(crate::source::SourceFile, Box<crate::types::Analysis>),
    /// Lowering failed (a bug in lt), in words.
    Internal(String),
}

/// Replays the session of `events` (a verified log; `log_name` names it):
/// its recorded program, profile and limits, or `program` / `profile` in
/// their place. The one replay path of `lt replay` and the Python package.
/// Errors: [`ReplaySetupError`].
pub fn replay_log(
    events: &[Event],
    log_name: &str,
    program: Option<crate::source::SourceFile>,
    profile: Option<Profile>,
) -> Result<Verdict, ReplaySetupError> {
    let Some(recorded) = Recorded::from_events(events) else {
        return Err(ReplaySetupError::Log(format!(
            "{log_name}: no session_started event"
        )));
    };
    let file = match program {
        Some(f) => f,
        None => recorded.program_file(format!("{log_name} (recorded program)")),
    };
    let profile = match profile {
        Some(p) => p,
        None => recorded
            .profile()
            .map_err(|e| ReplaySetupError::Log(format!("the recorded profile is invalid: {e}")))?,
    };
    let ir = match super::check_and_lower(&file) {
        Ok(ir) => ir,
        Err(super::Rejected::Diagnostics(analysis)) => {
            return Err(ReplaySetupError::Rejected(file, analysis))
        }
        Err(super::Rejected::Lowering(e)) => {
            return Err(ReplaySetupError::Internal(e.message.clone()))
        }
    };
    let limits = recorded
        .limits()
        .map_err(|e| ReplaySetupError::Log(format!("the recorded limits are invalid: {e}")))?;
    Ok(replay(events, &ir, profile, limits))
}
