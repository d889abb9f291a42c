//! The session around `lt run`: its id, its profile, where its events go,
//! and the first and last events.

use super::run::{config_failure, Failure, RunOptions};
use crate::control::profile::Profile;
use crate::log::{new_session_id, Discard, EventBody, EventSink, LogWriter};
use crate::source::SourceFile;
use std::path::Path;

/// A session ready to run.
pub(super) struct Session {
    /// The session id (32 hex digits).
    pub id: String,
    /// The effective profile.
    pub profile: Profile,
    /// Where events go.
    pub sink: Box<dyn EventSink>,
    /// The `session_started` event, to record first.
    pub started: EventBody,
}

/// Reads the profile (from `--profile`, else the executors file's
/// `[profile]` table, else the permissive default) and opens the log.
// The error is a cold path taken once per run: its size does not matter.
#[allow(clippy::result_large_err)]
pub(super) fn start(opts: &RunOptions, file: &SourceFile) -> Result<Session, Failure> {
    let registry_text = match &opts.executors {
        Some(path) => crate::exec::read_config_bytes(Path::new(path))
            .map_err(|e| Failure::new("executors", "usage", format!("cannot read {path}: {e}")))?,
        None => Vec::new(),
    };
    let profile = match (&opts.profile, &opts.executors) {
        (Some(path), _) => Profile::load(Path::new(path)).map_err(|e| config_failure(&e))?,
        (None, Some(path)) => {
            let text = String::from_utf8_lossy(&registry_text);
            Profile::from_toml(&text, path)
                .map_err(|e| config_failure(&e))?
                .unwrap_or_default()
        }
        (None, None) => Profile::default(),
    };
    let profile = if profile.name.is_empty() {
        Profile {
            name: "default".to_string(),
            ..profile
        }
    } else {
        profile
    };
    if let Some(log) = &opts.log {
        let same = |other: &str| crate::control::session::same_file(log, other);
        let inputs = [
            Some(&opts.file),
            opts.executors.as_ref(),
            opts.profile.as_ref(),
        ];
        if let Some(input) = inputs.into_iter().flatten().find(|i| same(i)) {
            return Err(Failure {
                help: Some("write the log to a file of its own, e.g. `--log session.jsonl`".into()),
                ..Failure::new(
                    "log",
                    "usage",
                    format!("--log {log} would overwrite {input}, an input of this run"),
                )
            });
        }
    }
    let id = new_session_id();
    let sink: Box<dyn EventSink> = match &opts.log {
        Some(path) => Box::new(LogWriter::create(path, id.clone()).map_err(|e| {
            Failure::new(
                "log",
                "usage",
                format!("cannot create the event log {path}: {e}"),
            )
        })?),
        None => Box::new(Discard),
    };
    let started = crate::control::session::started(file, &profile, &registry_text, &opts.limits);
    Ok(Session {
        id,
        profile,
        sink,
        started,
    })
}

/// The `session_ended` event for a run's result.
pub(super) use crate::control::session::ended;
