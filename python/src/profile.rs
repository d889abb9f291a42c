//! The `profile=` argument: a path to a file with a `[profile]` table, or
//! a dict with the table's keys (turned into that TOML table, so it is
//! validated exactly as a file is). An error in a dict names the dict's
//! key (`profile["tools"]["t"]["timeout_ms"]: …`), not a line of the TOML
//! made from it, which the caller never saw.

use lt::control::profile::Profile;
use lt::exec::ConfigError;
use std::path::Path;

/// Where a profile comes from.
#[derive(Clone, Debug)]
pub enum ProfileArg {
    /// None given.
    None,
    /// A file.
    Path(String),
    /// The `[profile]` table's keys, as JSON (from a Python dict).
    Table(serde_json::Value),
}

impl ProfileArg {
    /// The profile, named `default` when it has no name; `None` when none
    /// was given. Errors: the file or the table is invalid.
    pub fn load(&self) -> Result<Option<Profile>, ConfigError> {
        let p = match self {
            ProfileArg::None => return Ok(None),
            ProfileArg::Path(path) => Profile::load(Path::new(path))?,
            ProfileArg::Table(table) => {
                let origin = "<profile dict>";
                if let Some(key) = none_at(table, String::new()) {
                    return Err(ConfigError {
                        path: origin.into(),
                        line: None,
                        column: None,
                        message: format!("profile{key} is None, which a profile has no use for"),
                        help: Some(
                            "leave the key out, or give a str, int, float, bool, list or dict"
                                .into(),
                        ),
                    });
                }
                if let Some(key) = past_toml_at(table, String::new()) {
                    return Err(ConfigError {
                        path: origin.into(),
                        line: None,
                        column: None,
                        message: format!(
                            "profile{key} is past the largest integer a profile holds (2**63 - 1)"
                        ),
                        help: Some("give a smaller number".into()),
                    });
                }
                let text = toml::to_string(&serde_json::json!({ "profile": table })).map_err(
                    |e| ConfigError {
                        path: origin.into(),
                        line: None,
                        column: None,
                        message: format!("the profile dict cannot be written as TOML: {e}"),
                        help: Some(
                            "give str keys and TOML values (str, int, float, bool, lists, dicts; no None)"
                                .into(),
                        ),
                    },
                )?;
                Profile::from_toml(&text, origin)
                    .map_err(|e| in_dict(&text, e))?
                    .unwrap_or_default()
            }
        };
        Ok(Some(if p.name.is_empty() {
            Profile {
                name: "default".into(),
                ..p
            }
        } else {
            p
        }))
    }
}

/// `e`, an error at a line of `text` (the TOML made from the dict), told
/// by the dict's key instead.
fn in_dict(text: &str, e: ConfigError) -> ConfigError {
    let Some(key) = e.line.and_then(|line| dict_key(text, line)) else {
        return ConfigError {
            line: None,
            column: None,
            ..e
        };
    };
    let message = if key.is_empty() {
        e.message
    } else {
        // The file's words begin `profile: `; the key already says it.
        let words = e.message.strip_prefix("profile: ").unwrap_or(&e.message);
        format!("profile{key}: {words}")
    };
    ConfigError {
        line: None,
        column: None,
        message,
        ..e
    }
}

/// The key (`["tools"]["t"]["timeout_ms"]`, below `profile`) written at
/// `line` (1-based) of `text`: the last table header up to it, then the
/// key the line assigns.
fn dict_key(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let upto = lines.get(..line)?;
    let mut keys: Vec<String> = Vec::new();
    for l in upto {
        let t = l.trim();
        if let Some(header) = t.strip_prefix('[') {
            let header = header.trim_start_matches('[');
            keys = parse_keys(header).0;
        }
    }
    let at = upto.last()?.trim();
    if !at.starts_with('[') && !at.is_empty() {
        let (assigned, rest) = parse_keys(at);
        if rest.trim_start().starts_with('=') {
            keys.extend(assigned);
        }
    }
    if keys.first().map(String::as_str) == Some("profile") {
        keys.remove(0);
    }
    Some(keys.iter().map(|k| format!("[{k:?}]")).collect())
}

/// The dotted key at the start of `s` (bare, `"quoted"` or `'literal'`
/// parts), and the text after it.
fn parse_keys(s: &str) -> (Vec<String>, &str) {
    let mut keys = Vec::new();
    let mut rest = s.trim_start();
    loop {
        let (key, after) = if let Some(q) = rest.strip_prefix('"') {
            let mut key = String::new();
            let mut chars = q.char_indices();
            let mut end = q.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            key.push(n);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => key.push(c),
                }
            }
            (key, &q[end..])
        } else if let Some(q) = rest.strip_prefix('\'') {
            let end = q.find('\'').unwrap_or(q.len());
            (q[..end].to_string(), q.get(end + 1..).unwrap_or(""))
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(rest.len());
            (rest[..end].to_string(), &rest[end..])
        };
        keys.push(key);
        let after = after.trim_start();
        match after.strip_prefix('.') {
            Some(more) => rest = more.trim_start(),
            None => return (keys, after),
        }
    }
}

/// The key of the first value in `v` (below `at`) that `bad` picks out.
fn first_at(
    v: &serde_json::Value,
    at: String,
    bad: &dyn Fn(&serde_json::Value) -> bool,
) -> Option<String> {
    if bad(v) {
        return Some(at);
    }
    match v {
        serde_json::Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| first_at(item, format!("{at}[{i}]"), bad)),
        serde_json::Value::Object(map) => map
            .iter()
            .find_map(|(k, item)| first_at(item, format!("{at}[{k:?}]"), bad)),
        _ => None,
    }
}

/// The key of the first `None` (JSON `null`) in `v`, below `at`: TOML has
/// no such value.
fn none_at(v: &serde_json::Value, at: String) -> Option<String> {
    first_at(v, at, &serde_json::Value::is_null)
}

/// The key of the first integer in `v` (below `at`) past TOML's largest,
/// 2**63 − 1 (TOML integers are 64-bit signed).
fn past_toml_at(v: &serde_json::Value, at: String) -> Option<String> {
    first_at(v, at, &|v| v.is_u64() && !v.is_i64())
}
