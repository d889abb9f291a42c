//! The session around `lt run`: its id, its profile, where its events go,
//! and the first and last events.

use super::run::{config_failure, Failure, RunOptions};
use crate::control::profile::Profile;
use crate::ir::Ir;
use crate::log::{new_session_id, sha256_hex, Discard, EventBody, EventSink, LogWriter};
use crate::runtime::eval::RunStats;
use crate::runtime::limits::{Limits, RunError};
use crate::runtime::value::Value;
use crate::source::SourceFile;
use serde_json::json;
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
        // The same file by any name: a symlink, `..`, or a hard link (same
        // device and inode).
        let same = |other: &str| {
            use std::os::unix::fs::MetadataExt as _;
            match (std::fs::metadata(log), std::fs::metadata(other)) {
                (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
                _ => false,
            }
        };
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
    let started = EventBody::SessionStarted {
        lt_version: env!("CARGO_PKG_VERSION").to_string(),
        program: file.text.clone(),
        program_hash: sha256_hex(file.text.as_bytes()),
        profile: profile.to_json(),
        registry_hash: sha256_hex(&registry_text),
        limits: limits_json(&opts.limits),
    };
    Ok(Session {
        id,
        profile,
        sink,
        started,
    })
}

fn limits_json(l: &Limits) -> serde_json::Value {
    json!({
        "max_calls": l.max_calls,
        "max_steps": l.max_steps,
        "timeout_ms": l.timeout.map(|t| t.as_millis() as u64),
        "max_list_len": l.max_list_len,
        "max_string_bytes": l.max_string_bytes,
        "max_value_nodes": l.max_value_nodes,
        "max_string_total_bytes": l.max_string_total_bytes,
    })
}

/// The `session_ended` event for a run's result.
pub(super) fn ended(
    file: &SourceFile,
    ir: &Ir,
    result: &Result<Value, RunError>,
    stats: RunStats,
) -> EventBody {
    match result {
        Ok(v) => EventBody::SessionEnded {
            status: "ok".to_string(),
            value: Some(v.to_json()),
            r#type: Some(ir.ty.to_string()),
            error: None,
            calls: stats.calls,
            steps: stats.steps,
        },
        Err(e) => {
            let lc = file.line_col(e.span.start);
            EventBody::SessionEnded {
                status: "error".to_string(),
                value: None,
                r#type: Some(ir.ty.to_string()),
                error: Some(json!({
                    "kind": e.kind.as_str(),
                    "message": e.message,
                    "line": lc.line,
                    "column": lc.column,
                })),
                calls: stats.calls,
                steps: stats.steps,
            }
        }
    }
}
