//! The events that open and close a session, and the rules around its log
//! file: `session_started` with the program, profile, registry hash and
//! limits; `session_ended` with the value or the error and why; the limits
//! a log records, read back ([`recorded_limits`]).

use crate::control::profile::Profile;
use crate::ir::Ir;
use crate::log::{sha256_hex, EventBody};
use crate::runtime::eval::RunStats;
use crate::runtime::limits::{Limits, RunError};
use crate::runtime::value::Value;
use crate::source::SourceFile;
use serde_json::{json, Value as Json};

/// The `session_started` event: the program's text and hash, the effective
/// profile, the SHA-256 of the tools.toml bytes (of no bytes when there is
/// none) and the limits ([`limits_json`]).
pub fn started(
    file: &SourceFile,
    profile: &Profile,
    registry: &[u8],
    limits: &Limits,
) -> EventBody {
    EventBody::SessionStarted {
        lt_version: env!("CARGO_PKG_VERSION").to_string(),
        program: file.text.clone(),
        program_hash: sha256_hex(file.text.as_bytes()),
        profile: profile.to_json(),
        registry_hash: sha256_hex(registry),
        limits: limits_json(limits),
    }
}

/// The limits as the log records them: `{max_calls, max_steps, timeout_ms
/// (null: none), max_list_len, max_string_bytes, max_value_nodes,
/// max_string_total_bytes}`, all integers.
pub fn limits_json(l: &Limits) -> Json {
    json!({
        "max_calls": l.max_calls,
        "max_steps": l.max_steps,
        "timeout_ms": l.timeout.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        "max_list_len": l.max_list_len,
        "max_string_bytes": l.max_string_bytes,
        "max_value_nodes": l.max_value_nodes,
        "max_string_total_bytes": l.max_string_total_bytes,
    })
}

/// The `session_ended` event for a run's result: `ok` with the value and
/// type, or `error` with `{kind, message, line, column}` (the position in
/// `file`).
pub fn ended(
    file: &SourceFile,
    ir: &Ir,
    result: &Result<Value, RunError>,
    stats: RunStats,
) -> EventBody {
    let (status, value, error) = match result {
        Ok(v) => ("ok", Some(v.to_json()), None),
        Err(e) => {
            let lc = file.line_col(e.span.start);
            let error = json!({
                "kind": e.kind.as_str(),
                "message": e.message,
                "line": lc.line,
                "column": lc.column,
            });
            ("error", None, Some(error))
        }
    };
    EventBody::SessionEnded {
        status: status.to_string(),
        value,
        r#type: Some(ir.ty.to_string()),
        error,
        calls: stats.calls,
        steps: stats.steps,
    }
}

/// Whether `a` and `b` name the same existing file, by any name: a
/// symlink, `..`, or a hard link (same device and inode). Used to refuse a
/// `--log` that would overwrite an input of the run.
pub fn same_file(a: &str, b: &str) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// The limits a `session_started` event records (`limits`), with the
/// defaults for any it lacks; `timeout_ms` null, absent or 0 is no timeout.
/// Errors: not an object, an unknown key, a value that is not a
/// non-negative integer (naming the key).
pub fn recorded_limits(limits: &serde_json::Value) -> Result<Limits, String> {
    const KEYS: [&str; 7] = [
        "max_calls",
        "max_steps",
        "timeout_ms",
        "max_list_len",
        "max_string_bytes",
        "max_value_nodes",
        "max_string_total_bytes",
    ];
    let Some(map) = limits.as_object() else {
        return Err("limits: not an object".to_string());
    };
    if let Some(k) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format!("limits.{k}: not a limit"));
    }
    let recorded = |key: &str| -> Result<Option<u64>, String> {
        match map.get(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or(format!("limits.{key}: not a non-negative integer")),
        }
    };
    let defaults = Limits::default();
    let size = |key: &str, default: usize| -> Result<usize, String> {
        Ok(match recorded(key)? {
            Some(n) => usize::try_from(n).map_err(|_| format!("limits.{key}: too large"))?,
            None => default,
        })
    };
    Ok(Limits {
        max_calls: recorded("max_calls")?.unwrap_or(defaults.max_calls),
        max_steps: recorded("max_steps")?.unwrap_or(defaults.max_steps),
        timeout: recorded("timeout_ms")?
            .filter(|ms| *ms > 0)
            .map(std::time::Duration::from_millis),
        max_list_len: size("max_list_len", defaults.max_list_len)?,
        max_string_bytes: size("max_string_bytes", defaults.max_string_bytes)?,
        max_value_nodes: size("max_value_nodes", defaults.max_value_nodes)?,
        max_string_total_bytes: size("max_string_total_bytes", defaults.max_string_total_bytes)?,
    })
}
