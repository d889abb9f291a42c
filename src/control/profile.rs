//! Profiles: the policy a session runs under.
//!
//! A profile is a `[profile]` table, in its own file (`--profile FILE`) or
//! in `tools.toml`:
//!
//! ```toml
//! [profile]
//! name = "support"                      # shown in the log
//! allow = ["lookup_account", "issue_refund", "send_reply"]   # only these (default: every tool)
//! deny = ["delete_account"]             # never these (checked after allow)
//! effects = ["Read", "Write"]           # granted effects (default: every effect)
//! max_calls = 20                        # per session
//! max_concurrency = 4                   # calls of one gather/fan_out running at once (default 8)
//! approvals = "prompt"                  # who approves: "deny" (default), "allow", "prompt" (the terminal), "api" (lt serve)
//! dry_run = false                       # effectful tools are logged, not executed
//!
//! [profile.tools.issue_refund]
//! max_calls = 1                         # per tool, per session
//! timeout_ms = 2000                     # caps the executor's own timeout
//! dry_run_result = { tx_id = "dry-run" } # what a dry-run call returns
//! require_approval = true               # each call needs an `approve tool …` token (extension)
//! ```
//!
//! Without a profile a session runs under the permissive default: every
//! tool and effect allowed, no budgets beyond the run's limits.

use crate::exec::ConfigError;
use crate::types::EffectSet;
use serde::Deserialize;
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;
use toml::Spanned;

/// The policy of one tool within a profile.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolPolicy {
    /// Most calls of this tool in a session.
    pub max_calls: Option<u64>,
    /// Caps the executor's own timeout.
    pub timeout: Option<Duration>,
    /// What a dry-run call of this tool returns (default: the empty value
    /// of its output type: 0, "", false, [], a record of those).
    pub dry_run_result: Option<Json>,
    /// Every call needs an approval token (extension): an `!Approval` field
    /// in its argument that the control plane minted for that call.
    pub require_approval: bool,
}

/// Who answers an `approve tool …` (extension; the profile's `approvals`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ApprovalMode {
    /// Refuse every request (the default: a run nobody watches approves nothing).
    #[default]
    Deny,
    /// Approve every request (tests, trusted batch runs).
    Allow,
    /// Ask on the terminal (`lt run` with a terminal on stdin and stderr);
    /// refuse when there is none.
    Prompt,
    /// Wait for an answer posted to `lt serve`'s API (`POST
    /// /v1/sessions/{id}/approvals/{approval_id}`); refused at once where
    /// no API answers ([`Approver::answers_api`](super::approver::Approver::answers_api)).
    Api,
}

impl ApprovalMode {
    /// `deny`, `allow`, `prompt` or `api`.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Deny => "deny",
            ApprovalMode::Allow => "allow",
            ApprovalMode::Prompt => "prompt",
            ApprovalMode::Api => "api",
        }
    }

    fn parse(s: &str) -> Option<ApprovalMode> {
        match s {
            "deny" => Some(ApprovalMode::Deny),
            "allow" => Some(ApprovalMode::Allow),
            "prompt" => Some(ApprovalMode::Prompt),
            "api" => Some(ApprovalMode::Api),
            _ => None,
        }
    }
}

/// A session's policy. [`Profile::default`] allows everything.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profile {
    /// A name for logs and messages (`default` when not given).
    pub name: String,
    /// When set, only these tools may be called.
    pub allow: Option<BTreeSet<String>>,
    /// These tools may never be called.
    pub deny: BTreeSet<String>,
    /// When set, the effects calls may perform.
    pub effects: Option<EffectSet>,
    /// Most tool calls in a session.
    pub max_calls: Option<u64>,
    /// Most calls of one `gather` or `fan_out` running at once (`None`:
    /// [`DEFAULT_MAX_CONCURRENCY`]; at least 1).
    pub max_concurrency: Option<u64>,
    /// Who answers approval requests.
    pub approvals: ApprovalMode,
    /// Effectful tools (any effect) are decided and logged but not executed.
    pub dry_run: bool,
    /// Per-tool settings.
    pub tools: BTreeMap<String, ToolPolicy>,
}

#[derive(Deserialize)]
struct ProfileFile {
    profile: Option<RawProfile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [profile] table")]
struct RawProfile {
    name: Option<String>,
    allow: Option<Vec<String>>,
    #[serde(default)]
    deny: Vec<String>,
    effects: Option<Vec<Spanned<String>>>,
    max_calls: Option<u64>,
    max_concurrency: Option<Spanned<u64>>,
    approvals: Option<Spanned<String>>,
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    tools: BTreeMap<String, RawToolPolicy>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a [profile.tools.NAME] table")]
struct RawToolPolicy {
    max_calls: Option<u64>,
    timeout_ms: Option<Spanned<u64>>,
    dry_run_result: Option<toml::Value>,
    #[serde(default)]
    require_approval: bool,
}

impl Profile {
    /// The `[profile]` table of a TOML text (`None` when it has none).
    /// `origin` names the file in errors, which carry line and column.
    ///
    /// Errors: not TOML, unknown keys, `timeout_ms = 0`, an effect label
    /// that is not a name.
    pub fn from_toml(text: &str, origin: &str) -> Result<Option<Profile>, ConfigError> {
        let file: ProfileFile = toml::from_str(text).map_err(|e| {
            error(
                text,
                origin,
                e.span().map(|s| s.start),
                crate::diag::toml::message(&e),
                None,
            )
        })?;
        let Some(raw) = file.profile else {
            return Ok(None);
        };
        let mut effects = None;
        if let Some(labels) = raw.effects {
            let mut set = EffectSet::pure();
            for l in labels {
                let name = l.get_ref();
                if !is_effect_label(name) {
                    return Err(error(
                        text,
                        origin,
                        Some(l.span().start),
                        format!("profile: `{name}` is not an effect label"),
                        Some("effect labels are capitalised names: Read, Write, Network, or your own (Payment)".into()),
                    ));
                }
                if name != "Pure" {
                    set.insert(Rc::from(name.as_str()));
                }
            }
            effects = Some(set);
        }
        let mut tools = BTreeMap::new();
        for (name, t) in raw.tools {
            let timeout = match t.timeout_ms {
                Some(ms) if *ms.get_ref() == 0 => {
                    return Err(error(
                        text,
                        origin,
                        Some(ms.span().start),
                        format!("profile: tool {name}: timeout_ms must be a positive number of milliseconds"),
                        None,
                    ))
                }
                Some(ms) => Some(Duration::from_millis(*ms.get_ref())),
                None => None,
            };
            let dry_run_result = match t.dry_run_result {
                Some(v) => Some(crate::exec::toml_to_json(&v).ok_or_else(|| {
                    error(
                        text,
                        origin,
                        None,
                        format!("profile: tool {name}: dry_run_result contains nan or inf, which JSON cannot represent"),
                        None,
                    )
                })?),
                None => None,
            };
            tools.insert(
                name,
                ToolPolicy {
                    max_calls: t.max_calls,
                    timeout,
                    dry_run_result,
                    require_approval: t.require_approval,
                },
            );
        }
        if let Some(name) = &raw.name {
            if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
                return Err(error(
                    text,
                    origin,
                    None,
                    "profile: name must be 1 to 100 characters, none of them a control character"
                        .to_string(),
                    Some("e.g. `name = \"support\"`; leave it out for `default`".into()),
                ));
            }
        }
        let max_concurrency = match raw.max_concurrency {
            Some(c) if *c.get_ref() == 0 => {
                return Err(error(
                    text,
                    origin,
                    Some(c.span().start),
                    "profile: max_concurrency must be at least 1".to_string(),
                    Some("`max_concurrency = 1` runs the calls of a gather one at a time".into()),
                ))
            }
            Some(c) if *c.get_ref() > MAX_CONCURRENCY => {
                return Err(error(
                    text,
                    origin,
                    Some(c.span().start),
                    format!("profile: max_concurrency must be at most {MAX_CONCURRENCY}"),
                    Some("each running call may be a process of its own; a few dozen is plenty for most tools".into()),
                ))
            }
            Some(c) => Some(c.into_inner()),
            None => None,
        };
        let approvals = match raw.approvals {
            None => ApprovalMode::Deny,
            Some(a) => ApprovalMode::parse(a.get_ref()).ok_or_else(|| {
                error(
                    text,
                    origin,
                    Some(a.span().start),
                    format!("profile: approvals = {:?} is not one of \"deny\", \"allow\", \"prompt\", \"api\"", a.get_ref()),
                    Some("`prompt` asks on the terminal, `api` waits for an answer posted to lt serve's API, `allow` approves every request, `deny` (the default) refuses".into()),
                )
            })?,
        };
        Ok(Some(Profile {
            name: raw.name.unwrap_or_else(|| "default".to_string()),
            approvals,
            allow: raw.allow.map(|v| v.into_iter().collect()),
            deny: raw.deny.into_iter().collect(),
            effects,
            max_calls: raw.max_calls,
            max_concurrency,
            dry_run: raw.dry_run,
            tools,
        }))
    }

    /// Reads the `[profile]` table of a file (an error when it has none).
    pub fn load(path: &Path) -> Result<Profile, ConfigError> {
        let origin = path.display().to_string();
        let text = crate::exec::read_config_text(path, "the profile")?;
        Profile::from_toml(&text, &origin)?.ok_or_else(|| ConfigError {
            path: origin,
            line: None,
            column: None,
            message: "no [profile] table in this file".to_string(),
            help: Some("a profile file holds a `[profile]` table with keys such as `allow = [\"lookup_account\"]` (see docs/profiles.md)".into()),
        })
    }

    /// The profile recorded in a `session_started` event (the inverse of
    /// [`Profile::to_json`]). Strict, as the log is an input like any
    /// other: an unknown key, a value of the wrong type, an effect label
    /// that is not one, is an error naming the field (`profile.tools.x.max_calls:
    /// not a non-negative integer`). Absent or `null` keys take their defaults.
    pub fn from_json(v: &Json) -> Result<Profile, String> {
        const KEYS: [&str; 9] = [
            "approvals",
            "name",
            "allow",
            "deny",
            "effects",
            "max_calls",
            "max_concurrency",
            "dry_run",
            "tools",
        ];
        const TOOL_KEYS: [&str; 4] = [
            "max_calls",
            "timeout_ms",
            "dry_run_result",
            "require_approval",
        ];
        let Json::Object(map) = v else {
            return Err("profile: not an object".to_string());
        };
        if let Some(k) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(format!("profile.{k}: not a profile key"));
        }
        let get = |key: &str| map.get(key).filter(|v| !v.is_null());
        let strings = |key: &str| -> Result<Option<BTreeSet<String>>, String> {
            match get(key) {
                None => Ok(None),
                Some(Json::Array(items)) => items
                    .iter()
                    .map(|i| {
                        i.as_str()
                            .map(str::to_string)
                            .ok_or(format!("profile.{key}: not a string"))
                    })
                    .collect::<Result<BTreeSet<_>, _>>()
                    .map(Some),
                Some(_) => Err(format!("profile.{key}: not a list")),
            }
        };
        let count = |v: Option<&Json>, field: &str| -> Result<Option<u64>, String> {
            match v.filter(|v| !v.is_null()) {
                None => Ok(None),
                Some(n) => n
                    .as_u64()
                    .map(Some)
                    .ok_or(format!("{field}: not a non-negative integer")),
            }
        };
        let effects = match strings("effects")? {
            None => None,
            Some(labels) => {
                let mut set = EffectSet::pure();
                for l in labels {
                    if !is_effect_label(&l) {
                        return Err(format!("profile.effects: `{l}` is not an effect label"));
                    }
                    if l != "Pure" {
                        set.insert(Rc::from(l.as_str()));
                    }
                }
                Some(set)
            }
        };
        let mut tools = BTreeMap::new();
        match get("tools") {
            None => {}
            Some(Json::Object(entries)) => {
                for (name, t) in entries {
                    let Json::Object(fields) = t else {
                        return Err(format!("profile.tools.{name}: not an object"));
                    };
                    if let Some(k) = fields.keys().find(|k| !TOOL_KEYS.contains(&k.as_str())) {
                        return Err(format!("profile.tools.{name}.{k}: not a tool policy key"));
                    }
                    let timeout = count(
                        fields.get("timeout_ms"),
                        &format!("profile.tools.{name}.timeout_ms"),
                    )?;
                    if timeout == Some(0) {
                        return Err(format!("profile.tools.{name}.timeout_ms: must be positive"));
                    }
                    tools.insert(
                        name.clone(),
                        ToolPolicy {
                            max_calls: count(
                                fields.get("max_calls"),
                                &format!("profile.tools.{name}.max_calls"),
                            )?,
                            timeout: timeout.map(Duration::from_millis),
                            dry_run_result: fields
                                .get("dry_run_result")
                                .filter(|r| !r.is_null())
                                .cloned(),
                            require_approval: match fields.get("require_approval") {
                                None | Some(Json::Null) => false,
                                Some(Json::Bool(b)) => *b,
                                Some(_) => {
                                    return Err(format!(
                                        "profile.tools.{name}.require_approval: not a boolean"
                                    ))
                                }
                            },
                        },
                    );
                }
            }
            Some(_) => return Err("profile.tools: not an object".to_string()),
        }
        let name = match get("name") {
            None => "default".to_string(),
            Some(Json::String(n)) => n.clone(),
            Some(_) => return Err("profile.name: not a string".to_string()),
        };
        let dry_run = match get("dry_run") {
            None => false,
            Some(Json::Bool(b)) => *b,
            Some(_) => return Err("profile.dry_run: not a boolean".to_string()),
        };
        Ok(Profile {
            name,
            allow: strings("allow")?,
            deny: strings("deny")?.unwrap_or_default(),
            effects,
            max_calls: count(get("max_calls"), "profile.max_calls")?,
            approvals: match get("approvals") {
                None => ApprovalMode::Deny,
                Some(Json::String(s)) => ApprovalMode::parse(s).ok_or(format!(
                    "profile.approvals: `{s}` is not deny, allow, prompt or api"
                ))?,
                Some(_) => return Err("profile.approvals: not a string".to_string()),
            },
            max_concurrency: match count(get("max_concurrency"), "profile.max_concurrency")? {
                Some(0) => return Err("profile.max_concurrency: must be at least 1".to_string()),
                Some(c) if c > MAX_CONCURRENCY => {
                    return Err(format!(
                        "profile.max_concurrency: must be at most {MAX_CONCURRENCY}"
                    ))
                }
                c => c,
            },
            dry_run,
            tools,
        })
    }

    /// The profile as JSON, for the `session_started` event.
    pub fn to_json(&self) -> Json {
        let tools: serde_json::Map<String, Json> = self
            .tools
            .iter()
            .map(|(n, t)| {
                (
                    n.clone(),
                    json!({
                        "max_calls": t.max_calls,
                        "timeout_ms": t.timeout.map(|d| d.as_millis() as u64),
                        "dry_run_result": t.dry_run_result,
                        "require_approval": t.require_approval,
                    }),
                )
            })
            .collect();
        json!({
            "name": self.name,
            "allow": self.allow,
            "deny": self.deny,
            "effects": self.effects.as_ref().map(|e| e.labels().collect::<Vec<_>>()),
            "max_calls": self.max_calls,
            "max_concurrency": self.max_concurrency,
            "approvals": self.approvals.as_str(),
            "dry_run": self.dry_run,
            "tools": tools,
        })
    }
}

/// Calls of one `gather` or `fan_out` running at once when the profile
/// does not say.
pub const DEFAULT_MAX_CONCURRENCY: u64 = 8;

/// The largest `max_concurrency` a profile may set.
pub const MAX_CONCURRENCY: u64 = 256;

impl Profile {
    /// The concurrency limit of a `gather` or `fan_out` under this profile.
    pub fn concurrency(&self) -> usize {
        usize::try_from(self.max_concurrency.unwrap_or(DEFAULT_MAX_CONCURRENCY))
            .unwrap_or(usize::MAX)
            .max(1)
    }
}

/// An effect label: an ASCII capital letter, then ASCII letters, digits
/// or `_` (`Read`, `Payment`, `Pure`); defined in `types::ty`, below the
/// executors' configuration, which reads labels too.
pub use crate::types::ty::is_effect_label;

pub(crate) fn error(
    text: &str,
    origin: &str,
    at: Option<usize>,
    message: String,
    help: Option<String>,
) -> ConfigError {
    let (line, column) = match at {
        Some(offset) => {
            let offset = offset.min(text.len());
            let before = text.get(..offset).unwrap_or(text);
            let line = before.matches('\n').count() + 1;
            let start = before.rfind('\n').map_or(0, |i| i + 1);
            (Some(line), Some(before[start..].chars().count() + 1))
        }
        None => (None, None),
    };
    ConfigError {
        path: origin.to_string(),
        line,
        column,
        message: message.trim_end().replace('\n', "; "),
        help,
    }
}
