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
//! | 7 | `approval` | (extension) an `!Approval` field of the argument is not a token this pipeline minted for exactly this tool and argument, or was used already; or the profile requires approval and the tool's input has no such field |
//!
//! Approval tokens are minted by [`Pipeline::mint`] (when an `approve tool
//! …` is granted) and spent by the call they approve: an allowed call
//! marks its tokens used. A token is derived from the session and the
//! approval request's identity, so replay mints the same ones.
//!
//! A call that passes every rule is allowed by `dry_run` (when the profile
//! is a dry run and the tool has effects: logged, not executed) or by
//! `policy` (executed). Only allowed calls count against budgets.

use super::profile::Profile;
use crate::runtime::boundary;
use crate::runtime::value::Value;
use crate::types::ToolSig;
use rustc_hash::FxHashMap;
use serde_json::Value as Json;
use std::borrow::Cow;

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

/// A call's argument as the pipeline is given it: the JSON a log records,
/// or the interpreter's value ([`Pipeline::decide_value`]).
#[derive(Clone, Copy)]
enum Argument<'j> {
    Json(&'j Json),
    Value(&'j Value),
}

impl<'j> Argument<'j> {
    /// The argument as JSON (built from a value).
    fn json(self) -> Cow<'j, Json> {
        match self {
            Argument::Json(j) => Cow::Borrowed(j),
            Argument::Value(v) => Cow::Owned(v.to_json()),
        }
    }
}

/// The pipeline's state for one session: the profile and the budgets used.
#[derive(Debug)]
pub struct Pipeline {
    profile: Profile,
    calls: u64,
    per_tool: FxHashMap<String, u64>,
    /// Minted approval tokens: token → (tool, argument approved, used).
    approvals: FxHashMap<String, (String, Json, bool)>,
}

/// The argument without its `!Approval` fields (what an approval approves),
/// and the tokens those fields hold (`None` for a field that is not a string).
/// The argument itself, not a copy, when its tool takes no approval.
fn split_approvals<'j>(tool: &ToolSig, argument: &'j Json) -> (Cow<'j, Json>, Vec<Option<String>>) {
    let crate::types::Type::Record(fields) = &tool.input else {
        return (Cow::Borrowed(argument), Vec::new());
    };
    let names: Vec<&str> = fields
        .iter()
        .filter(|(_, t)| t.is_approval())
        .map(|(n, _)| &**n)
        .collect();
    let Json::Object(map) = argument else {
        return (Cow::Borrowed(argument), Vec::new());
    };
    if names.is_empty() {
        return (Cow::Borrowed(argument), Vec::new());
    }
    let mut rest = map.clone();
    let tokens = names
        .iter()
        .map(|n| rest.remove(*n).and_then(|v| v.as_str().map(str::to_string)))
        .collect();
    (Cow::Owned(Json::Object(rest)), tokens)
}

impl Pipeline {
    /// A pipeline for a new session under `profile`.
    pub fn new(profile: Profile) -> Pipeline {
        Pipeline {
            profile,
            calls: 0,
            per_tool: FxHashMap::default(),
            approvals: FxHashMap::default(),
        }
    }

    /// Registers a token granted earlier in the session (replay reads it
    /// from the log) for one call of `tool` with `argument`.
    pub fn grant(&mut self, token: &str, tool: &str, argument: &Json) {
        self.approvals.insert(
            token.to_string(),
            (tool.to_string(), argument.clone(), false),
        );
    }

    /// Mints the token of a granted approval request (`request_id`, in
    /// session `session`) for one call of `tool` with `argument` (the input
    /// without its `!Approval` fields).
    pub fn mint(&mut self, session: &str, request_id: &str, tool: &str, argument: &Json) -> String {
        let digest = crate::log::sha256_hex(format!("{session}:{request_id}:{tool}").as_bytes());
        let token = format!("apv-{}", &digest[..24]);
        self.approvals
            .insert(token.clone(), (tool.to_string(), argument.clone(), false));
        token
    }

    /// Whether the `approval` rule reads a call of `tool`'s argument: its
    /// input has an `!Approval` field, or the profile requires approval.
    fn approvals_concern(&self, tool: &ToolSig) -> bool {
        let fields = match &tool.input {
            crate::types::Type::Record(fields) => fields.iter().any(|(_, t)| t.is_approval()),
            _ => false,
        };
        fields
            || self
                .profile
                .tools
                .get(&*tool.name)
                .is_some_and(|t| t.require_approval)
    }

    /// Why the approval fields of this call do not hold, if they do not.
    fn approval_problem(&self, tool: &ToolSig, argument: &Json) -> Option<String> {
        let name: &str = &tool.name;
        let (approved, tokens) = split_approvals(tool, argument);
        let required = self
            .profile
            .tools
            .get(name)
            .is_some_and(|t| t.require_approval);
        if required && tokens.is_empty() {
            return Some(format!(
                "profile {} requires an approval for each call of {name}, and its input has no `!Approval` field to carry one",
                self.profile.name
            ));
        }
        for t in tokens {
            let Some(t) = t else {
                return Some(format!(
                    "the approval of this call of {name} is not a token"
                ));
            };
            match self.approvals.get(&t) {
                None => return Some(format!("the approval {t} was not granted by this session")),
                Some((_, _, true)) => return Some(format!("the approval {t} was already used")),
                Some((for_tool, _, _)) if for_tool != name => {
                    return Some(format!("the approval {t} is for {for_tool}, not {name}"))
                }
                Some((_, arg, _)) if arg != approved.as_ref() => {
                    return Some(format!(
                        "the approval {t} is for {name} with {arg}, not with {approved}"
                    ))
                }
                Some(_) => {}
            }
        }
        None
    }

    /// The profile.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Decides a call of `tool` with `argument`; an allowed call is counted.
    pub fn decide(&mut self, tool: &ToolSig, argument: &Json) -> Decision {
        self.decide_explaining(tool, argument, true)
    }

    /// [`Pipeline::decide`], where an allowed call's `reason` is written
    /// only when `explain_allowed` (the control plane without a log reads
    /// the reason of a denial alone, and a call then builds no sentence).
    pub fn decide_explaining(
        &mut self,
        tool: &ToolSig,
        argument: &Json,
        explain_allowed: bool,
    ) -> Decision {
        self.decide_argument(tool, Argument::Json(argument), explain_allowed)
    }

    /// [`Pipeline::decide_explaining`] of an argument that is the
    /// interpreter's value (the same decision as for its JSON, which is
    /// built only for a denial's words or an approval's check).
    pub fn decide_value(
        &mut self,
        tool: &ToolSig,
        argument: &Value,
        explain_allowed: bool,
    ) -> Decision {
        self.decide_argument(tool, Argument::Value(argument), explain_allowed)
    }

    fn decide_argument(
        &mut self,
        tool: &ToolSig,
        argument: Argument<'_>,
        explain_allowed: bool,
    ) -> Decision {
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
        // Checked without building the value; converted only for the words
        // of a denial.
        let fits = match argument {
            Argument::Json(j) => boundary::fits(j, &tool.input),
            Argument::Value(v) => boundary::value_fits(v, &tool.input),
        };
        if !fits {
            if let Err(e) = boundary::from_json(&argument.json(), &tool.input) {
                return Decision::deny(
                    "arguments",
                    format!(
                        "the argument of {name} does not match its declared input {}: {e}",
                        tool.input
                    ),
                );
            }
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
        // A value's JSON is built only for a tool that approvals concern.
        let approved = match argument {
            Argument::Json(_) => Some(argument.json()),
            Argument::Value(_) => self.approvals_concern(tool).then(|| argument.json()),
        };
        let mut spent: Vec<String> = Vec::new();
        if let Some(argument) = &approved {
            if let Some(why) = self.approval_problem(tool, argument) {
                return Decision::deny("approval", why);
            }
            spent = split_approvals(tool, argument)
                .1
                .into_iter()
                .flatten()
                .collect();
        }
        for t in &spent {
            if let Some(entry) = self.approvals.get_mut(t) {
                entry.2 = true;
            }
        }
        self.calls += 1;
        match self.per_tool.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                self.per_tool.insert(name.to_string(), 1);
            }
        }
        if p.dry_run && !tool.effects.is_empty() {
            return Decision {
                allow: true,
                rule: "dry_run",
                reason: if explain_allowed {
                    format!(
                        "dry run: {name} performs {} and is not executed",
                        tool.effects
                    )
                } else {
                    String::new()
                },
                dry_run: true,
            };
        }
        let reason = if !explain_allowed {
            String::new()
        } else if spent.is_empty() {
            format!("tool {name} is allowed by profile {}", p.name)
        } else {
            format!(
                "tool {name} is allowed by profile {}, with approval {}",
                p.name,
                spent.join(", ")
            )
        };
        Decision {
            allow: true,
            rule: "policy",
            reason,
            dry_run: false,
        }
    }
}
