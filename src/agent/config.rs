//! The agent's settings and the classifier's rule table.
//!
//! **`[agent]`**, in the `--profile` file (beside its `[profile]` table) or
//! in tools.toml; command-line flags override it:
//!
//! ```toml
//! [agent]
//! max_attempts = 3        # proposals per turn before the agent gives up (each rejected one is fed back)
//! max_turns = 5           # programs run before the agent must have answered
//! samples = 1             # programs asked for per attempt (consensus, seed 001)
//! agree = 1               # how many samples must be the same program
//! on_disagreement = "retry"   # or "stop": what a failed consensus does
//! max_tokens = 4096       # per reply
//!
//! [agent.trace]           # trace requirements: before the agent may answer,
//! verify = 1              # at least this many successful calls of tools tagged `verify`
//! ```
//!
//! Tools get tags in tools.toml (`[tools.check_balance] tags = ["verify"]`).
//!
//! **The rule table** (`--rules rules.toml`, seed 001's classification
//! policy registry): at session start one model call labels the task, and
//! the label's rule picks the profile (a file with `[profile]` and
//! `[agent]`, relative to the rules file) and adds trace requirements on
//! top of the profile's.
//!
//! ```toml
//! [classifier]
//! default = "other"       # the label when the reply names none of the rules
//!
//! [[rule]]
//! label = "refund"
//! description = "the customer wants money back"   # shown to the classifier
//! profile = "profiles/refund.toml"
//! trace = { verify = 1 }
//!
//! [[rule]]
//! label = "other"
//! profile = "profiles/read_only.toml"
//! ```

use crate::control::profile::error;
use crate::exec::ConfigError;
use serde::Deserialize;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a failed consensus does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnDisagreement {
    /// Ask again (another attempt of the same turn).
    #[default]
    Retry,
    /// Stop the session (status `gave_up`).
    Stop,
}

impl OnDisagreement {
    /// `retry` or `stop`.
    pub fn as_str(self) -> &'static str {
        match self {
            OnDisagreement::Retry => "retry",
            OnDisagreement::Stop => "stop",
        }
    }
}

/// The loop's settings (the `[agent]` table, then the flags).
#[derive(Clone, Debug, PartialEq)]
pub struct AgentSettings {
    /// Proposals per turn (the first and the corrections), at least 1.
    pub max_attempts: u32,
    /// Turns (programs run) before the agent must have answered, at least 1.
    pub max_turns: u32,
    /// Programs asked for per attempt, at least 1.
    pub samples: u32,
    /// How many of them must be the same program (1..=samples).
    pub agree: u32,
    /// What a failed consensus does.
    pub on_disagreement: OnDisagreement,
    /// The most tokens per reply.
    pub max_tokens: u32,
    /// Trace requirements: tag → minimum successful calls of tools with
    /// that tag before the agent may answer.
    pub trace: BTreeMap<String, u64>,
}

impl Default for AgentSettings {
    fn default() -> Self {
        AgentSettings {
            max_attempts: 3,
            max_turns: 5,
            samples: 1,
            agree: 1,
            on_disagreement: OnDisagreement::Retry,
            max_tokens: 4096,
            trace: BTreeMap::new(),
        }
    }
}

/// The `[agent]` table as written (every key optional).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, expecting = "an [agent] table")]
pub struct AgentTable {
    /// See [`AgentSettings::max_attempts`].
    pub max_attempts: Option<u32>,
    /// See [`AgentSettings::max_turns`].
    pub max_turns: Option<u32>,
    /// See [`AgentSettings::samples`].
    pub samples: Option<u32>,
    /// See [`AgentSettings::agree`].
    pub agree: Option<u32>,
    /// `retry` or `stop`.
    pub on_disagreement: Option<String>,
    /// See [`AgentSettings::max_tokens`].
    pub max_tokens: Option<u32>,
    /// See [`AgentSettings::trace`].
    #[serde(default)]
    pub trace: BTreeMap<String, u64>,
}

#[derive(Deserialize)]
struct AgentFile {
    agent: Option<AgentTable>,
}

impl AgentTable {
    /// The `[agent]` table of a TOML text (default when it has none; other
    /// tables are ignored). Errors carry line and column.
    pub fn from_toml(text: &str, origin: &str) -> Result<AgentTable, ConfigError> {
        let file: AgentFile = toml::from_str(text).map_err(|e| {
            error(
                text,
                origin,
                e.span().map(|s| s.start),
                crate::diag::toml::message(&e).trim().to_string(),
                Some("the [agent] keys are max_attempts, max_turns, samples, agree, on_disagreement, max_tokens and [agent.trace] (see docs/agent.md)".into()),
            )
        })?;
        let table = file.agent.unwrap_or_default();
        if let Err((key, message)) = table.check_values() {
            let at = key_offset(text, &key);
            return Err(error(
                text,
                origin,
                at,
                format!("[agent] {message}"),
                Some("counts are at least 1; samples at most 32; on_disagreement is \"retry\" or \"stop\" (see docs/agent.md)".into()),
            ));
        }
        Ok(table)
    }

    /// The first value that is wrong on its own (whatever the other
    /// tables say): the key and why.
    pub fn check_values(&self) -> Result<(), (String, String)> {
        for (key, v) in [
            ("max_attempts", self.max_attempts),
            ("max_turns", self.max_turns),
            ("samples", self.samples),
            ("agree", self.agree),
            ("max_tokens", self.max_tokens),
        ] {
            if v == Some(0) {
                return Err((key.into(), format!("{key} = 0: must be at least 1")));
            }
        }
        if let Some(n) = self.samples.filter(|n| *n > 32) {
            return Err(("samples".into(), format!("samples = {n}: at most 32")));
        }
        if let Some(o) = self
            .on_disagreement
            .as_deref()
            .filter(|o| !matches!(*o, "retry" | "stop"))
        {
            return Err((
                "on_disagreement".into(),
                format!("on_disagreement = {o:?}: expected \"retry\" or \"stop\""),
            ));
        }
        if let Some((tag, _)) = self.trace.iter().find(|(_, n)| **n == 0) {
            return Err((
                tag.clone(),
                format!(
                    "trace requirement {tag} = 0 requires nothing; give at least 1, or remove it"
                ),
            ));
        }
        Ok(())
    }

    /// Later values win: `over`'s keys replace this table's, trace
    /// requirements are merged key by key.
    pub fn overlay(mut self, over: &AgentTable) -> AgentTable {
        macro_rules! take {
            ($($f:ident),*) => {$( if over.$f.is_some() { self.$f = over.$f.clone(); } )*};
        }
        take!(
            max_attempts,
            max_turns,
            samples,
            agree,
            on_disagreement,
            max_tokens
        );
        for (k, v) in &over.trace {
            self.trace.insert(k.clone(), *v);
        }
        self
    }

    /// The settings, defaults filled in. Errors: a zero count, `agree`
    /// above `samples`, an unknown `on_disagreement`.
    pub fn settings(&self) -> Result<AgentSettings, String> {
        let d = AgentSettings::default();
        let s = AgentSettings {
            max_attempts: self.max_attempts.unwrap_or(d.max_attempts),
            max_turns: self.max_turns.unwrap_or(d.max_turns),
            samples: self.samples.unwrap_or(d.samples),
            agree: self.agree.unwrap_or(match self.samples {
                // `--samples 3` alone asks for a majority.
                Some(n) if n > 1 => n / 2 + 1,
                _ => d.agree,
            }),
            on_disagreement: match self.on_disagreement.as_deref() {
                None | Some("retry") => OnDisagreement::Retry,
                Some("stop") => OnDisagreement::Stop,
                Some(other) => {
                    return Err(format!(
                        "on_disagreement = {other:?}: expected \"retry\" or \"stop\""
                    ))
                }
            },
            max_tokens: self.max_tokens.unwrap_or(d.max_tokens),
            trace: self.trace.clone(),
        };
        for (name, v) in [
            ("max_attempts", s.max_attempts),
            ("max_turns", s.max_turns),
            ("samples", s.samples),
            ("agree", s.agree),
            ("max_tokens", s.max_tokens),
        ] {
            if v == 0 {
                return Err(format!("{name} must be at least 1"));
            }
        }
        if let Some((tag, _)) = s.trace.iter().find(|(_, n)| **n == 0) {
            return Err(format!(
                "trace requirement {tag} = 0 requires nothing; give at least 1, or remove it"
            ));
        }
        if s.samples > 32 {
            return Err(format!("samples = {}: at most 32", s.samples));
        }
        if s.agree > s.samples {
            return Err(format!(
                "agree = {} is more than samples = {}: no consensus could ever be reached",
                s.agree, s.samples
            ));
        }
        Ok(s)
    }
}

/// The byte offset of the line that sets `key` after the first `[agent`
/// header (a best effort for error positions; `None` when not found).
fn key_offset(text: &str, key: &str) -> Option<usize> {
    let from = text.find("[agent")?;
    let mut offset = from;
    for line in text[from..].split_inclusive('\n') {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix(key) {
            if rest.trim_start().starts_with('=') {
                return Some(offset + (line.len() - t.len()));
            }
        }
        offset += line.len();
    }
    None
}

impl AgentSettings {
    /// The log's form (`agent_started.settings`).
    pub fn to_json(&self) -> Json {
        json!({
            "max_attempts": self.max_attempts,
            "max_turns": self.max_turns,
            "samples": self.samples,
            "agree": self.agree,
            "on_disagreement": self.on_disagreement.as_str(),
            "max_tokens": self.max_tokens,
            "trace": self.trace,
        })
    }

    /// The inverse of [`AgentSettings::to_json`] (replay).
    pub fn from_json(v: &Json) -> Result<AgentSettings, String> {
        let table: AgentTable =
            serde_json::from_value(v.clone()).map_err(|e| format!("settings: {e}"))?;
        table.settings()
    }
}

/// One rule of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// The label the classifier gives.
    pub label: String,
    /// What the label means, for the classifier's prompt.
    pub description: Option<String>,
    /// The profile file (resolved against the rules file's folder).
    pub profile: Option<PathBuf>,
    /// Trace requirements added on top of the profile's.
    pub trace: BTreeMap<String, u64>,
}

/// The rule table (`--rules FILE`).
#[derive(Clone, Debug, PartialEq)]
pub struct Rules {
    /// The rules, in file order.
    pub rules: Vec<Rule>,
    /// The label when the classifier's reply names no rule.
    pub default: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRules {
    classifier: Option<RawClassifier>,
    #[serde(default)]
    rule: Vec<RawRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClassifier {
    default: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    label: String,
    description: Option<String>,
    profile: Option<String>,
    #[serde(default)]
    trace: BTreeMap<String, u64>,
}

impl Rules {
    /// Reads a rule table. Errors: not TOML, unknown keys, no rule, a label
    /// twice or not a plain word, a default that is no rule's label, a
    /// profile file that does not exist.
    pub fn load(path: &Path) -> Result<Rules, ConfigError> {
        let origin = path.display().to_string();
        let text = crate::exec::read_config_text(path, "the rule table")?;
        let raw: RawRules = toml::from_str(&text).map_err(|e| {
            error(
                &text,
                &origin,
                e.span().map(|s| s.start),
                crate::diag::toml::message(&e).trim().to_string(),
                Some("a rule table has `[classifier] default = \"label\"` and `[[rule]]` tables with label, description, profile, trace (see docs/agent.md)".into()),
            )
        })?;
        let fail = |message: String, help: &str| {
            error(&text, &origin, None, message, Some(help.to_string()))
        };
        if raw.rule.is_empty() {
            return Err(fail(
                "the rule table has no [[rule]]".into(),
                "add `[[rule]]` tables, each with a `label` and a `profile`",
            ));
        }
        let folder = path.parent().unwrap_or(Path::new("."));
        let mut rules: Vec<Rule> = Vec::new();
        for r in raw.rule {
            let label = r.label.trim().to_string();
            if label.is_empty()
                || !label
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
            {
                return Err(fail(
                    format!("rule label {:?} is not a plain word", r.label),
                    "labels are words such as `refund` or `read_only` (letters, digits, _ and -)",
                ));
            }
            if rules.iter().any(|x| x.label.eq_ignore_ascii_case(&label)) {
                return Err(fail(
                    format!(
                        "two rules have the label `{label}` (labels are matched ignoring case)"
                    ),
                    "give each rule its own label",
                ));
            }
            let profile = match r.profile {
                Some(p) => {
                    let full = folder.join(&p);
                    if !full.is_file() {
                        let what = if full.is_dir() {
                            "is a folder, not a file"
                        } else {
                            "does not exist"
                        };
                        return Err(fail(
                            format!("rule `{label}`: profile file {} {what}", full.display()),
                            "profile paths are relative to the rules file",
                        ));
                    }
                    Some(full)
                }
                None => None,
            };
            rules.push(Rule {
                label,
                description: r.description,
                profile,
                trace: r.trace,
            });
        }
        let default = match raw.classifier.and_then(|c| c.default) {
            Some(d) => {
                if !rules.iter().any(|r| r.label == d) {
                    return Err(fail(
                        format!("[classifier] default = {d:?} is not the label of a rule"),
                        "name one of the rules' labels",
                    ));
                }
                d
            }
            None => rules[0].label.clone(),
        };
        Ok(Rules { rules, default })
    }

    /// The rule of `label`.
    pub fn rule(&self, label: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.label == label)
    }

    /// The classifier's system prompt: the labels and what they mean.
    pub fn classifier_prompt(&self) -> String {
        let mut out = String::from(
            "You route tasks. Read the user's task and answer with exactly one label from this list, and nothing else:\n",
        );
        for r in &self.rules {
            match &r.description {
                Some(d) => out.push_str(&format!("- {}: {}\n", r.label, d.trim())),
                None => out.push_str(&format!("- {}\n", r.label)),
            }
        }
        out.push_str(&format!("If none fits, answer {}.", self.default));
        out
    }

    /// The label a classifier reply names: the one rule label among its
    /// words (case-insensitive, punctuation ignored); a reply naming none,
    /// or several, gets the default.
    pub fn label_of(&self, reply: &str) -> (String, bool) {
        let mut named: Vec<&str> = Vec::new();
        for word in reply.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-')) {
            if let Some(r) = self
                .rules
                .iter()
                .find(|r| r.label.eq_ignore_ascii_case(word))
            {
                if !named.contains(&r.label.as_str()) {
                    named.push(&r.label);
                }
            }
        }
        match named.as_slice() {
            [one] => (one.to_string(), true),
            // None, or several ("not refund; lookup"): the default, which
            // should be the safest profile.
            _ => (self.default.clone(), false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_alone_ask_for_a_majority_and_bad_settings_are_refused() {
        let t = AgentTable {
            samples: Some(5),
            ..AgentTable::default()
        };
        assert_eq!(t.settings().map(|s| s.agree), Ok(3));
        let t = AgentTable {
            samples: Some(2),
            agree: Some(3),
            ..AgentTable::default()
        };
        assert!(t.settings().is_err());
        let t = AgentTable::from_toml("[agent]\nmax_turns = 0\n", "p.toml");
        assert!(t.is_err());
        let e = AgentTable::from_toml("[agent]\nmax_turn = 2\n", "p.toml");
        assert!(matches!(e, Err(ConfigError { line: Some(2), .. })));
        let e = AgentTable::from_toml("# x\n[agent]\nsamples = 2\nmax_turns = 0\n", "p.toml");
        assert!(
            matches!(
                e,
                Err(ConfigError {
                    line: Some(4),
                    column: Some(1),
                    ..
                })
            ),
            "{e:?}"
        );
        let e = AgentTable::from_toml("[agent.trace]\n  verify = 0\n", "p.toml");
        assert!(
            matches!(
                e,
                Err(ConfigError {
                    line: Some(2),
                    column: Some(3),
                    ..
                })
            ),
            "{e:?}"
        );
    }

    #[test]
    fn a_reply_naming_one_label_routes_and_several_or_none_get_the_default() {
        let rules = Rules {
            rules: ["lookup", "refund"]
                .iter()
                .map(|l| Rule {
                    label: l.to_string(),
                    description: None,
                    profile: None,
                    trace: BTreeMap::new(),
                })
                .collect(),
            default: "lookup".into(),
        };
        assert_eq!(rules.label_of("Label: REFUND."), ("refund".into(), true));
        assert_eq!(
            rules.label_of("It is not refund; it is lookup"),
            ("lookup".into(), false)
        );
        assert_eq!(rules.label_of("refunds"), ("lookup".into(), false));
    }

    #[test]
    fn settings_round_trip_through_the_log() {
        let mut s = AgentSettings::default();
        s.trace.insert("verify".into(), 2);
        assert_eq!(AgentSettings::from_json(&s.to_json()), Ok(s));
    }
}
