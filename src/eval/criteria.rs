//! Acceptance criteria: the ready-made ones of `[case.expect]`, and
//! criteria and rewards written in lt over the session.
//!
//! A criterion in lt is an expression over `session`, a typed record:
//!
//! ```text
//! type Call = {name: String, argument: Json, ok: Bool, output: Json};
//! type Denial = {name: String, rule: String, reason: String};
//! {ok: Bool, value: Json, calls: List Call, denials: List Denial, rounds: Int}
//! ```
//!
//! (A call's tool is its `name`: `tool` is a keyword of the language.)
//!
//! It is checked as the body of a program that receives the session from
//! a tool ([`wrap`]), so the checker's usual diagnostics apply; a criterion
//! must be a `Bool`, a reward a `Float`. [`check_all`] checks every case's
//! expressions before any run starts. At run time the program runs with a
//! host that answers its one call with the session's JSON, validated
//! against the record type like any tool's result.

use super::record::RunRecord;
use super::suite::{Expect, Suite};
use crate::diag::render::render;
use crate::ir::Ir;
use crate::runtime::host::{CallRequest, Host, Outcome};
use crate::runtime::limits::Limits;
use crate::runtime::value::Value;
use crate::source::SourceFile;
use serde_json::Value as Json;

/// The declarations a criterion is checked under: the aliases `Call` and
/// `Denial`, and the type of `session`, in lt's syntax.
pub const SESSION_TYPE: &str = "type Call = {name: String, argument: Json, ok: Bool, output: Json};\ntype Denial = {name: String, rule: String, reason: String};\ntool eval_session: String -{Read}-> {ok: Bool, value: Json, calls: List Call, denials: List Denial, rounds: Int};";

/// What an lt expression computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A criterion: `Bool`.
    Criterion,
    /// A reward: `Float`.
    Reward,
}

impl Kind {
    fn ty(self) -> &'static str {
        match self {
            Kind::Criterion => "Bool",
            Kind::Reward => "Float",
        }
    }
}

/// The program an expression is checked and run as: `session` bound to
/// the result of one call of `eval_session`. The expression is line 6 on
/// its own, so diagnostics point into it.
pub fn wrap(expr: &str, kind: Kind) -> String {
    let fallback = match kind {
        Kind::Criterion => "false",
        Kind::Reward => "0.0",
    };
    format!(
        "{SESSION_TYPE}\nmatch exec tool eval_session \"session\" {{\n  Ok(session) => (\n{expr}\n  ),\n  Err(e) => {fallback}\n}}\n"
    )
}

/// A criterion that did not type-check: which, and the rendered
/// diagnostics.
#[derive(Clone, Debug)]
pub struct Rejected {
    /// The case.
    pub case: String,
    /// `criteria[i]` or `reward`.
    pub which: String,
    /// The diagnostics as `lt check` prints them.
    pub rendered: String,
    /// The diagnostics as JSON (`lt check --json`'s objects).
    pub diagnostics: Json,
}

/// Checks and lowers `expr` as a `kind`. Errors: the rendered diagnostics
/// (and their JSON), or the wrong type.
pub fn compile(name: &str, expr: &str, kind: Kind, color: bool) -> Result<Ir, (String, Json)> {
    let file = SourceFile::new(name, wrap(expr, kind));
    let analysis = crate::types::check_source(&file.text);
    if analysis.is_ok() && analysis.ty.to_string() != kind.ty() {
        let msg = format!(
            "{name}: the expression is a {}, but a {} must be a {}\n  help: a criterion is a Bool over `session`, e.g. `length session.calls <= 3`; a reward is a Float",
            analysis.ty,
            match kind {
                Kind::Criterion => "criterion",
                Kind::Reward => "reward",
            },
            kind.ty()
        );
        return Err((msg.clone(), Json::String(msg)));
    }
    let json = serde_json::to_value(
        analysis
            .diagnostics
            .iter()
            .map(|d| crate::diag::json::to_json(&file, d))
            .collect::<Vec<_>>(),
    )
    .unwrap_or(Json::Null);
    let rendered = render(&file, &analysis.diagnostics, color);
    crate::control::session::lower_checked(analysis).map_err(|_| (rendered, json))
}

/// Checks every lt criterion and reward of `suite`: the ones that do not
/// type-check, in case order (empty: all do).
pub fn check_all(suite: &Suite, color: bool) -> Vec<Rejected> {
    let mut out = Vec::new();
    for case in &suite.cases {
        let exprs = case
            .expect
            .criteria
            .iter()
            .enumerate()
            .map(|(i, e)| (format!("criteria[{i}]"), e, Kind::Criterion))
            .chain(
                case.expect
                    .reward
                    .iter()
                    .map(|e| ("reward".to_string(), e, Kind::Reward)),
            );
        for (which, expr, kind) in exprs {
            let name = format!("{} [case {:?}, {which}]", suite.path, case.name);
            if let Err((rendered, diagnostics)) = compile(&name, expr, kind, color) {
                out.push(Rejected {
                    case: case.name.clone(),
                    which,
                    rendered,
                    diagnostics,
                });
            }
        }
    }
    out
}

/// Answers `eval_session` with the session's JSON.
struct SessionHost<'a>(&'a Json);

impl Host for SessionHost<'_> {
    fn call(&mut self, _request: CallRequest<'_>) -> Outcome {
        Ok(self.0.clone())
    }
}

/// Runs a compiled expression over `session` (JSON of [`SESSION_TYPE`]).
/// Errors: the run stopped, or the session did not fit the type.
pub fn evaluate(ir: &Ir, session: &Json) -> Result<Value, String> {
    let mut host = SessionHost(session);
    let limits = Limits {
        timeout: Some(std::time::Duration::from_secs(10)),
        ..Limits::default()
    };
    crate::runtime::eval::run(ir, &mut host, &limits)
        .0
        .map_err(|e| e.message)
}

/// The ready-made criteria of `expect` that `run` fails, each in words.
pub fn ready_made(expect: &Expect, run: &RunRecord) -> Vec<String> {
    let mut failed = Vec::new();
    let tools: Vec<&str> = run.calls.iter().map(|c| c.tool.as_str()).collect();
    let want_ok = expect.ok.unwrap_or(true);
    if run.ok != want_ok {
        failed.push(match &run.error {
            Some(e) if want_ok => format!("ok: the run ended with an error: {e}"),
            _ => format!("ok: expected the run to fail, it ended with {}", run.value),
        });
    }
    if let Some(v) = &expect.value {
        let want = serde_json::to_value(v).unwrap_or(Json::Null);
        if run.value != want {
            failed.push(format!("value: expected {want}, got {}", run.value));
        }
    }
    if let Some(re) = &expect.value_matches {
        let text = match &run.value {
            Json::String(s) => s.clone(),
            v => v.to_string(),
        };
        match regex::Regex::new(re) {
            Ok(r) if r.is_match(&text) => {}
            Ok(_) => failed.push(format!("value_matches: {text:?} does not match /{re}/")),
            Err(e) => failed.push(format!("value_matches: {e}")),
        }
    }
    if let Some(want) = &expect.calls {
        if tools != *want {
            failed.push(format!("calls: expected {want:?}, got {tools:?}"));
        }
    }
    if let Some(want) = &expect.calls_subsequence {
        let mut it = tools.iter();
        if !want.iter().all(|w| it.any(|t| t == w)) {
            failed.push(format!(
                "calls_subsequence: {want:?} is not a subsequence of {tools:?}"
            ));
        }
    }
    if let Some(want) = &expect.calls_contain {
        for w in want.iter().filter(|w| !tools.contains(&w.as_str())) {
            failed.push(format!(
                "calls_contain: {w} was not called (calls: {tools:?})"
            ));
        }
    }
    let count = |tool: &str| tools.iter().filter(|t| **t == tool).count() as u64;
    for (tool, k) in expect.max_calls_of.iter().flatten() {
        if count(tool) > *k {
            failed.push(format!(
                "max_calls_of: {tool} called {} times, at most {k} allowed",
                count(tool)
            ));
        }
    }
    for (tool, k) in expect.calls_of.iter().flatten() {
        if count(tool) != *k {
            failed.push(format!(
                "calls_of: {tool} called {} times, expected exactly {k}",
                count(tool)
            ));
        }
    }
    if expect.no_denials == Some(true) && !run.denials.is_empty() {
        let d = &run.denials[0];
        failed.push(format!(
            "no_denials: {} calls denied, the first {} by {}: {}",
            run.denials.len(),
            d.tool,
            d.rule,
            d.reason
        ));
    }
    if expect.no_unknown_outcomes == Some(true) && run.unknown_outcomes > 0 {
        failed.push(format!(
            "no_unknown_outcomes: {} calls ended `outcome unknown`",
            run.unknown_outcomes
        ));
    }
    if let Some(k) = expect.max_rounds {
        if run.rounds > k {
            failed.push(format!(
                "max_rounds: {} model rounds, at most {k} allowed",
                run.rounds
            ));
        }
    }
    failed
}
