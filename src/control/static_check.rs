//! The static policy check (`lt check --profile`): the calls a profile would
//! deny, found before anything runs.
//!
//! At run time every call passes the constraint pipeline ([`super::pipeline`]);
//! its first three rules depend only on the tool and the profile, never on
//! the argument or on what ran before, so they can be decided from the
//! program text:
//!
//! | rule | code | objects when |
//! |---|---|---|
//! | `allowlist` | E0701 | the profile lists allowed tools and this is not one |
//! | `denylist` | E0702 | the profile denies this tool |
//! | `effects` | E0703 | the tool's declared effects include one the profile does not grant (`Pure` grants nothing) |
//! | `session_budget`, `tool_budget` | E0702 | a `max_calls` of 0 (for the session, or for this tool): no call can pass |
//! | `approval` | E0702 | the tool is `require_approval` but its input has no `!Approval` field (extension) |
//!
//! Every syntactic call site `exec tool NAME arg` is a call the program may
//! make: a tool is named only there (tools are not values), so every call
//! site resolves to its declaration statically. Each call site that a rule
//! objects to gets one diagnostic, whose code is that of the first
//! objecting rule in pipeline order (the rule `lt run` would report in
//! `Err("denied: <rule>: <reason>")`, with the same reason); further
//! objecting rules are notes. A declared tool that is never called is not
//! an error, and neither is a call of an undeclared tool (E0204 already).
//! The check is conservative: a call in a branch that never runs, or in a
//! function that is never applied, is still a call the program may make.
//!
//! Budgets above zero, the `arguments` rule and the dry run are left to the
//! run: they depend on values and on the calls made before.
//!
//! Example: under `[profile] name = "read-only"`, `effects = ["Read"]`, the
//! program `tool refund: Int -{Write}-> Unit; match exec tool refund 5 {…}`
//! gets E0703 at `exec tool refund`: "effects: tool refund performs
//! {Write}, which profile read-only does not grant (it grants {Read})".

use super::profile::Profile;
use crate::diag::{Code, Diagnostic};
use crate::source::Span;
use crate::syntax::ast::{Decl, Expr, ExprKind, Program, ToolDecl, TypeExprKind};
use crate::types::{Analysis, ToolSig, MAX_DIAGNOSTICS};
use rustc_hash::FxHashMap;

/// A pipeline rule that would deny every call of a tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Objection {
    /// The rule's name in the pipeline: `allowlist`, `denylist`, `effects`,
    /// or `session_budget` / `tool_budget` for a budget of zero.
    pub rule: &'static str,
    /// Why, in the pipeline's words.
    pub reason: String,
}

/// The rules that object to calling `tool` under `profile`, in pipeline
/// order (empty when every call of the tool passes them). The reasons are
/// those of the run-time pipeline, word for word.
pub fn objections(tool: &ToolSig, profile: &Profile) -> Vec<Objection> {
    let name: &str = &tool.name;
    let p = &profile.name;
    let mut out = Vec::new();
    if let Some(allow) = &profile.allow {
        if !allow.contains(name) {
            out.push(Objection {
                rule: "allowlist",
                reason: format!("tool {name} is not among the tools profile {p} allows"),
            });
        }
    }
    if profile.deny.contains(name) {
        out.push(Objection {
            rule: "denylist",
            reason: format!("profile {p} denies tool {name}"),
        });
    }
    if let Some(granted) = &profile.effects {
        let missing = tool.effects.minus(granted);
        if !missing.is_empty() {
            out.push(Objection {
                rule: "effects",
                reason: format!(
                    "tool {name} performs {missing}, which profile {p} does not grant (it grants {granted})"
                ),
            });
        }
    }
    // A budget of zero denies every call, whatever came before.
    if profile.max_calls == Some(0) {
        out.push(Objection {
            rule: "session_budget",
            reason: format!("profile {p} allows 0 tool calls per session, all used"),
        });
    }
    // `require_approval` on a tool whose input cannot carry an approval.
    let carries = matches!(&tool.input, crate::types::Type::Record(fs)
        if fs.iter().any(|(_, t)| t.is_approval()));
    if profile.tools.get(name).is_some_and(|t| t.require_approval) && !carries {
        out.push(Objection {
            rule: "approval",
            reason: format!(
                "profile {p} requires an approval for each call of {name}, and its input has no `!Approval` field to carry one"
            ),
        });
    }
    if profile.tools.get(name).and_then(|t| t.max_calls) == Some(0) {
        out.push(Objection {
            rule: "tool_budget",
            reason: format!("profile {p} allows 0 calls of {name} per session, all used"),
        });
    }
    out
}

/// A diagnostic for every `exec tool` call site in `program` that `profile`
/// would deny, in source order. `tools` is the program's tool table (from
/// [`Analysis::tools`] or `CheckedProgram::tools`).
pub fn check_calls(program: &Program, tools: &[ToolSig], profile: &Profile) -> Vec<Diagnostic> {
    let decls: FxHashMap<&str, &ToolDecl> = program
        .decls
        .iter()
        .rev()
        .filter_map(|d| match d {
            Decl::Tool(t) => Some((&*t.name.name, t)),
            Decl::Type(_) | Decl::Effect(..) | Decl::Error(_) => None,
        })
        .collect();
    // The first declaration of a name is the one the checker keeps (E0213).
    let mut verdicts: FxHashMap<&str, Option<(&ToolSig, Vec<Objection>)>> = FxHashMap::default();
    for t in tools {
        verdicts.entry(&t.name).or_insert_with(|| {
            let o = objections(t, profile);
            (!o.is_empty()).then_some((t, o))
        });
    }
    let mut out = Vec::new();
    // An explicit stack: the walk needs no recursion, whatever the depth.
    let mut stack: Vec<&Expr> = vec![&program.body];
    let mut children: Vec<&Expr> = Vec::new();
    while let Some(e) = stack.pop() {
        if let ExprKind::Exec(name, _) = &e.kind {
            if let Some(Some((tool, objs))) = verdicts.get(&*name.name) {
                let site = Span {
                    start: e.span.start,
                    end: name.span.end.max(e.span.start),
                };
                let decl = decls.get(&*name.name).copied();
                out.push(diagnostic(site, tool, decl, objs, profile));
            }
        }
        e.kind.for_each_child(|c| children.push(c));
        stack.extend(children.drain(..).rev());
    }
    out.sort_by_key(|d| (d.span.start, d.span.end));
    out
}

/// Adds the policy diagnostics of `profile` to `analysis`, keeping its
/// order (by position) and its cap of [`MAX_DIAGNOSTICS`] (the rest are
/// counted in `truncated`). The policy check runs whatever the other
/// diagnostics: a program with a type error gets its denied calls reported
/// in the same round.
pub fn check_analysis(analysis: &mut Analysis, profile: &Profile) {
    let found = check_calls(&analysis.program, &analysis.tools, profile);
    if found.is_empty() {
        return;
    }
    let diags = &mut analysis.diagnostics;
    diags.extend(found);
    diags.sort_by_key(|d| (d.span.start, d.span.end, d.code));
    let over = diags.len().saturating_sub(MAX_DIAGNOSTICS);
    diags.truncate(MAX_DIAGNOSTICS);
    analysis.truncated += over;
}

/// The code of a rule.
fn code(rule: &str) -> Code {
    match rule {
        "allowlist" => Code::E0701,
        "denylist" | "session_budget" | "tool_budget" | "approval" => Code::E0702,
        _ => Code::E0703,
    }
}

/// The diagnostic at one call site; `objs` is not empty.
fn diagnostic(
    site: Span,
    tool: &ToolSig,
    decl: Option<&ToolDecl>,
    objs: &[Objection],
    profile: &Profile,
) -> Diagnostic {
    let name: &str = &tool.name;
    let p = &profile.name;
    let Some((first, rest)) = objs.split_first() else {
        // Not reached: only tools with objections are diagnosed.
        return Diagnostic::error(Code::E0701, site, format!("profile {p} denies this call"));
    };
    let mut d = Diagnostic::error(
        code(first.rule),
        site,
        format!("{}: {}", first.rule, first.reason),
    )
    .with_label(format!("profile {p} would deny this call"));
    match first.rule {
        "allowlist" => {
            let allowed: Vec<&str> = profile.allow.iter().flatten().map(String::as_str).collect();
            d = d.with_note(if allowed.is_empty() {
                format!("profile {p} allows no tool (`allow = []`)")
            } else {
                format!("profile {p} allows: {}", allowed.join(", "))
            });
            d = d.with_help(format!(
                "remove this call, or check the program against a profile whose `allow` lists {name}"
            ));
        }
        "denylist" => {
            d = d.with_help(format!(
                "remove this call: profile {p} never allows {name} (its `deny` list names it)"
            ));
        }
        "session_budget" | "tool_budget" => {
            d = d.with_help(format!(
                "remove this call: profile {p} allows no call of {name} (a `max_calls` of 0)"
            ));
        }
        _ => {
            if let Some(granted) = &profile.effects {
                d = d.with_expected_found(
                    format!("effects within {granted}"),
                    tool.effects.to_string(),
                );
                d = d.with_help(if granted.is_empty() {
                    format!("remove this call: profile {p} grants no effect, so only pure tools may be called")
                } else {
                    format!("remove this call, or call a tool whose effects are within {granted}")
                });
            }
        }
    }
    for o in rest {
        d = d.with_note(format!("also denied by {}: {}", o.rule, o.reason));
    }
    d = d.with_note(format!(
        "`lt run` under this profile would not make the call: the program would receive Err(\"denied: {}: …\")",
        first.rule
    ));
    if let Some(decl) = decl {
        d = match (&decl.ty.kind, first.rule) {
            (TypeExprKind::Fun(_, row, _), "effects") => d.with_secondary(
                row.span,
                format!("{name} is declared with effects {}", tool.effects),
            ),
            _ => d.with_secondary(decl.name.span, format!("{name} is declared here")),
        };
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::pipeline::Pipeline;
    use crate::types::check_source;
    use std::collections::BTreeSet;

    const PROGRAM: &str = "tool lookup: String -{Read}-> {n: Int};\n\
        tool refund: Int -{Write}-> Unit;\n\
        match exec tool lookup \"a\" {\n\
          Ok(r) => match exec tool refund r.n { Ok(u) => 1, Err(e) => 2 },\n\
          Err(e) => match exec tool refund 0 { Ok(u) => 3, Err(e) => 4 }\n\
        }\n";

    fn profile(allow: Option<&[&str]>, deny: &[&str], effects: Option<&[&str]>) -> Profile {
        let set = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        Profile {
            name: "ops".into(),
            allow: allow.map(set),
            deny: set(deny),
            effects: effects.map(|labels| {
                let mut e = crate::types::EffectSet::pure();
                for l in labels {
                    e.insert(std::rc::Rc::from(*l));
                }
                e
            }),
            ..Profile::default()
        }
    }

    fn codes(p: &Profile) -> Vec<Code> {
        let a = check_source(PROGRAM);
        assert!(a.is_ok(), "{:?}", a.diagnostics);
        check_calls(&a.program, &a.tools, p)
            .iter()
            .map(|d| d.code)
            .collect()
    }

    #[test]
    fn every_call_site_is_reported() {
        assert_eq!(
            codes(&profile(Some(&["lookup"]), &[], None)),
            [Code::E0701, Code::E0701]
        );
        assert_eq!(
            codes(&profile(None, &["refund"], None)),
            [Code::E0702, Code::E0702]
        );
        assert_eq!(
            codes(&profile(None, &[], Some(&["Read"]))),
            [Code::E0703, Code::E0703]
        );
        assert_eq!(
            codes(&profile(Some(&[]), &[], None)),
            [Code::E0701, Code::E0701, Code::E0701]
        );
        assert!(codes(&Profile::default()).is_empty());
        // A denied tool that is never called is not an error.
        assert!(codes(&profile(None, &["delete"], Some(&["Read", "Write"]))).is_empty());
    }

    #[test]
    fn the_first_rule_decides_and_the_others_are_notes() {
        let a = check_source(PROGRAM);
        let p = profile(Some(&["lookup"]), &["refund"], Some(&[]));
        let d = check_calls(&a.program, &a.tools, &p);
        assert_eq!(d.len(), 3);
        assert_eq!(d[0].code, Code::E0703);
        assert_eq!(d[1].code, Code::E0701);
        assert!(d[1]
            .notes
            .iter()
            .any(|n| n.starts_with("also denied by denylist")));
        assert!(d[1]
            .notes
            .iter()
            .any(|n| n.starts_with("also denied by effects")));
    }

    /// The static reasons are the pipeline's, so `lt check` and `lt run`
    /// say the same thing.
    #[test]
    fn objections_agree_with_the_pipeline() {
        let a = check_source(PROGRAM);
        let profiles = [
            profile(Some(&["lookup"]), &[], None),
            profile(None, &["refund"], None),
            profile(None, &[], Some(&["Read"])),
            profile(None, &[], Some(&[])),
            profile(Some(&[]), &["lookup"], Some(&[])),
            profile(None, &[], None),
            Profile {
                max_calls: Some(0),
                ..profile(None, &[], None)
            },
            Profile {
                tools: [(
                    "refund".to_string(),
                    crate::control::profile::ToolPolicy {
                        max_calls: Some(0),
                        ..Default::default()
                    },
                )]
                .into_iter()
                .collect(),
                ..profile(None, &[], None)
            },
        ];
        for p in profiles {
            for tool in &a.tools {
                let fixed = objections(tool, &p);
                // A well-typed argument, so that the `arguments` rule passes.
                let arg = crate::control::empty_json(&tool.input);
                let decision = Pipeline::new(p.clone()).decide(tool, &arg);
                match fixed.first() {
                    Some(o) => {
                        assert!(!decision.allow);
                        assert_eq!(
                            (o.rule, o.reason.as_str()),
                            (decision.rule, decision.reason.as_str())
                        );
                    }
                    None => assert!(
                        !matches!(
                            decision.rule,
                            "allowlist" | "denylist" | "effects" | "session_budget" | "tool_budget"
                        ),
                        "{decision:?}"
                    ),
                }
            }
        }
    }

    #[test]
    fn unknown_tools_and_broken_programs_do_not_panic() {
        for text in [
            "exec tool nope 1",
            "tool t: Int -{Write}-> Unit;\ntool t: Int -> Unit;\nmatch exec tool t 1 { Ok(u) => 1, Err(e) => 2 }",
            "tool t: Int;\nexec tool t 1",
            "tool t: Int -{Write}-> Unit; match exec tool t {",
            "",
        ] {
            let mut a = check_source(text);
            check_analysis(&mut a, &profile(Some(&[]), &["t"], Some(&[])));
        }
    }
}
