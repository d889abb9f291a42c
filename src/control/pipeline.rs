//! The constraint pipeline: every proposed call passes an ordered list of
//! rules; the first rule that objects denies the call (fail closed).
//!
//! | order | rule | denies when |
//! |---|---|---|
//! | 1 | `allowlist` | the profile lists allowed tools and this is not one |
//! | 2 | `denylist` | the profile denies this tool |
//! | 3 | `effects` | the tool performs an effect the profile does not grant |
//! | 4 | `arguments` | the argument does not match the tool's declared input type |
//! | 5 | `session_budget` | the session already made `max_calls` allowed calls |
//! | 6 | `tool_budget` | this tool already made its `max_calls` allowed calls |
//!
//! A call that passes every rule is allowed by `dry_run` (when the profile
//! is a dry run and the tool has effects: logged, not executed) or by
//! `policy` (executed). Only allowed calls count against budgets.

use super::profile::Profile;
use crate::runtime::boundary;
use crate::types::ToolSig;
use rustc_hash::FxHashMap;
use serde_json::Value as Json;

/// What the pipeline decided for one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Allowed (executed, or answered by the dry run).
    pub allow: bool,
    /// The rule that decided (`allowlist`, …, `dry_run`, `policy`).
    pub rule: &'static str,
    /// Why, in one sentence.
    pub reason: String,
    /// Allowed but not executed: the dry run answers.
    pub dry_run: bool,
}

impl Decision {
    fn deny(rule: &'static str, reason: String) -> Decision {
        Decision {
            allow: false,
            rule,
            reason,
            dry_run: false,
        }
    }
}

/// The pipeline's state for one session: the profile and the budgets used.
#[derive(Debug)]
pub struct Pipeline {
    profile: Profile,
    calls: u64,
    per_tool: FxHashMap<String, u64>,
}

impl Pipeline {
    /// A pipeline for a new session under `profile`.
    pub fn new(profile: Profile) -> Pipeline {
        Pipeline {
            profile,
            calls: 0,
            per_tool: FxHashMap::default(),
        }
    }

    /// The profile.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Decides a call of `tool` with `argument`; an allowed call is counted.
    pub fn decide(&mut self, tool: &ToolSig, argument: &Json) -> Decision {
        let p = &self.profile;
        let name: &str = &tool.name;
        if let Some(allow) = &p.allow {
            if !allow.contains(name) {
                return Decision::deny(
                    "allowlist",
                    format!(
                        "tool {name} is not among the tools profile {} allows",
                        p.name
                    ),
                );
            }
        }
        if p.deny.contains(name) {
            return Decision::deny("denylist", format!("profile {} denies tool {name}", p.name));
        }
        if let Some(granted) = &p.effects {
            let missing = tool.effects.minus(granted);
            if !missing.is_empty() {
                return Decision::deny(
                    "effects",
                    format!(
                        "tool {name} performs {missing}, which profile {} does not grant (it grants {granted})",
                        p.name
                    ),
                );
            }
        }
        if let Err(e) = boundary::from_json(argument, &tool.input) {
            return Decision::deny(
                "arguments",
                format!(
                    "the argument of {name} does not match its declared input {}: {e}",
                    tool.input
                ),
            );
        }
        if let Some(max) = p.max_calls {
            if self.calls >= max {
                return Decision::deny(
                    "session_budget",
                    format!(
                        "profile {} allows {max} tool calls per session, all used",
                        p.name
                    ),
                );
            }
        }
        let used = self.per_tool.get(name).copied().unwrap_or(0);
        if let Some(max) = p.tools.get(name).and_then(|t| t.max_calls) {
            if used >= max {
                return Decision::deny(
                    "tool_budget",
                    format!(
                        "profile {} allows {max} calls of {name} per session, all used",
                        p.name
                    ),
                );
            }
        }
        self.calls += 1;
        self.per_tool.insert(name.to_string(), used + 1);
        if p.dry_run && !tool.effects.is_empty() {
            return Decision {
                allow: true,
                rule: "dry_run",
                reason: format!(
                    "dry run: {name} performs {} and is not executed",
                    tool.effects
                ),
                dry_run: true,
            };
        }
        Decision {
            allow: true,
            rule: "policy",
            reason: format!("tool {name} is allowed by profile {}", p.name),
            dry_run: false,
        }
    }
}
