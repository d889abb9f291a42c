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

/// The program text before the expression: the declarations, then
/// `session` bound to the result of one call of `eval_session`.
fn prefix() -> String {
    format!("{SESSION_TYPE}\nmatch exec tool eval_session \"session\" {{\n  Ok(session) => Some(\n")
}

/// The program text after the expression.
const SUFFIX: &str = "\n  ),\n  Err(e) => None\n}\n";

/// The program an expression is checked and run as: `session` bound to
/// the result of one call of `eval_session`, the expression's value in
/// `Some` (so the wrapper does not constrain its type: a criterion of
/// the wrong type is reported as such, not as a mismatch of the
/// wrapper's arms). The expression is line 6 on its own.
pub fn wrap(expr: &str) -> String {
    format!("{}{expr}{SUFFIX}", prefix())
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

/// Where an expression comes from: the suite file, its text, and which
/// expression of which case, so that its diagnostics point into the
/// suite file.
pub struct Origin<'a> {
    /// The suite file as given.
    pub path: &'a str,
    /// Its text.
    pub text: &'a str,
    /// The case.
    pub case: &'a str,
    /// `criteria[i]` or `reward`.
    pub which: &'a str,
}

/// Maps byte offsets of the wrapped program back into the suite's text.
struct Mapper {
    /// Where the expression starts in the wrapped program.
    start: usize,
    /// The expression's length in bytes.
    len: usize,
    /// Where the string literal starts in the suite's text.
    literal: usize,
    /// The literal's offsets (see [`super::toml_string::offsets`]).
    offsets: Option<Vec<usize>>,
    /// The literal's end in the suite's text.
    literal_end: usize,
}

impl Mapper {
    fn new(origin: &Origin<'_>, expr: &toml::Spanned<String>) -> Mapper {
        let span = expr.span();
        let raw = origin.text.get(span.clone()).unwrap_or("");
        Mapper {
            start: prefix().len(),
            len: expr.get_ref().len(),
            literal: span.start,
            offsets: super::toml_string::offsets(raw, expr.get_ref()),
            literal_end: span.end,
        }
    }

    /// The offset in the expression of the wrapped program's `at`,
    /// clamped to the expression (a span in the wrapper points at it all).
    fn in_expr(&self, at: u32) -> usize {
        (at as usize).clamp(self.start, self.start + self.len) - self.start
    }

    /// The suite text's offset of the expression's byte `i`.
    fn to_file(&self, i: usize) -> usize {
        match &self.offsets {
            Some(m) => self.literal + m[i.min(m.len() - 1)],
            None => self.literal,
        }
    }

    fn span(&self, s: crate::source::Span) -> crate::source::Span {
        let (a, b) = (self.in_expr(s.start), self.in_expr(s.end));
        let (a, b) = if a == 0 && b == self.len && self.offsets.is_none() {
            (self.literal, self.literal_end)
        } else {
            (self.to_file(a), self.to_file(b).max(self.to_file(a)))
        };
        crate::source::Span::new(a, b)
    }
}

/// 1-based line and column of byte `at` in `text`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Checks and lowers `expr` as a `kind`. Errors: the rendered diagnostics
/// (and their JSON), pointing into the suite file at `origin`, or the
/// wrong type, in words.
pub fn compile(
    origin: &Origin<'_>,
    expr: &toml::Spanned<String>,
    kind: Kind,
    color: bool,
) -> Result<Ir, (String, Json)> {
    let text = expr.get_ref();
    let analysis = crate::types::check_source(&wrap(text));
    let map = Mapper::new(origin, expr);
    let what = match kind {
        Kind::Criterion => "criterion",
        Kind::Reward => "reward",
    };
    if analysis.is_ok() {
        let found = match &analysis.ty {
            crate::types::Type::Option(t) => t.to_string(),
            t => t.to_string(),
        };
        if found != kind.ty() {
            let (line, col) = line_col(origin.text, map.to_file(0));
            let msg = format!(
                "{}:{line}:{col}: case {:?}, {}: a {what} must be {}, found {found}\n  help: {}",
                origin.path,
                origin.case,
                origin.which,
                kind.ty(),
                match kind {
                    Kind::Criterion => "a criterion is a Bool over `session`, e.g. `length session.calls <= 3` or `session.ok`",
                    Kind::Reward => "a reward is a Float over `session`, e.g. `if session.ok then 1.0 else 0.0` (write `1.0`, not `1`)",
                }
            );
            return Err((msg.clone(), Json::String(msg)));
        }
    }
    let file = SourceFile::new(origin.path, origin.text.to_string());
    let diagnostics: Vec<_> = analysis
        .diagnostics
        .iter()
        .map(|d| {
            let mut d = d.clone();
            let at = map.in_expr(d.span.start);
            let in_expr = text.get(..at).unwrap_or("");
            let line = in_expr.matches('\n').count() + 1;
            let col = in_expr.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            d.notes.push(format!(
                "in case {:?}, {} (an lt {what} over `session`), at line {line}, column {col} of the expression",
                origin.case, origin.which
            ));
            d.span = map.span(d.span);
            for l in &mut d.labels {
                l.span = map.span(l.span);
            }
            d
        })
        .collect();
    let json = serde_json::to_value(
        diagnostics
            .iter()
            .map(|d| crate::diag::json::to_json(&file, d))
            .collect::<Vec<_>>(),
    )
    .unwrap_or(Json::Null);
    let rendered = render(&file, &diagnostics, color);
    crate::control::session::lower_checked(analysis).map_err(|_| (rendered, json))
}

/// The lt expressions of a case: `(which, expression, kind)`.
pub fn expressions(expect: &Expect) -> Vec<(String, &toml::Spanned<String>, Kind)> {
    expect
        .criteria
        .iter()
        .enumerate()
        .map(|(i, e)| (format!("criteria[{i}]"), e, Kind::Criterion))
        .chain(
            expect
                .reward
                .iter()
                .map(|e| ("reward".to_string(), e, Kind::Reward)),
        )
        .collect()
}

/// Checks every lt criterion and reward of `suite`: the ones that do not
/// type-check, in case order (empty: all do).
pub fn check_all(suite: &Suite, color: bool) -> Vec<Rejected> {
    let mut out = Vec::new();
    for case in &suite.cases {
        for (which, expr, kind) in expressions(&case.expect) {
            let origin = Origin {
                path: &suite.path,
                text: &suite.text,
                case: &case.name,
                which: &which,
            };
            if let Err((rendered, diagnostics)) = compile(&origin, expr, kind, color) {
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
    match crate::runtime::eval::run(ir, &mut host, &limits).0 {
        Ok(Value::Some(v)) => Ok((*v).clone()),
        Ok(Value::None) => Err("the session did not fit the session type".into()),
        Ok(v) => Ok(v),
        Err(e) => Err(e.message),
    }
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
