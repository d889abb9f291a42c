//! The tools of a generated program, scripted: a [`Host`] whose every
//! answer is drawn from a seed (so two runs with the same seed get the same
//! outcomes), and which records what the program did with it.
//!
//! Outcomes, per call: a valid result of the declared output type (with
//! extra fields, absent optional fields, `null`s, integral Floats), a result
//! of the wrong shape, or a failure of each kind; per approval request:
//! granted (a fresh token) or refused. Every `!String` of a valid result is
//! a fresh token `lin:N`, and every granted approval a fresh `apv:N`: the
//! linearity property counts where each one ends up.

use crate::gen::Rng;
use lt::runtime::host::{
    ApprovalRequest, CallRequest, FailureKind, Host, Outcome, PathStep, ToolFailure,
};
use lt::runtime::value::Value;
use lt::types::{ToolSig, Type};
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeMap;

/// One call the host received.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub id: String,
    pub tool: String,
    pub arg: Json,
    /// The undo of a call, run by a `scope`.
    pub undo: bool,
    /// Made inside the body of a function applied somewhere (an undo: the
    /// undone call was).
    pub applied: bool,
}

/// The scripted tools.
pub struct Scripted<'a> {
    tools: &'a [ToolSig],
    seed: u64,
    answered: u64,
    tokens: u64,
    /// Every call, in order.
    pub calls: Vec<Call>,
    /// The tokens handed out (in valid results and granted approvals).
    pub minted: Vec<String>,
    /// How many of them a call inside an iteration (of a `traverse`, a
    /// `fan_out`, …) handed out.
    pub minted_in_iteration: u64,
    /// How many answers of each kind were given.
    pub outcomes: BTreeMap<&'static str, u64>,
}

impl<'a> Scripted<'a> {
    /// Tools answering from `seed`.
    pub fn new(tools: &'a [ToolSig], seed: u64) -> Scripted<'a> {
        Scripted {
            tools,
            seed,
            answered: 0,
            tokens: 0,
            calls: Vec::new(),
            minted: Vec::new(),
            minted_in_iteration: 0,
            outcomes: BTreeMap::new(),
        }
    }

    fn rng(&mut self) -> Rng {
        self.answered += 1;
        Rng::new(self.seed ^ self.answered.wrapping_mul(0x2545_F491_4F6C_DD1D))
    }

    fn note(&mut self, what: &'static str) {
        *self.outcomes.entry(what).or_insert(0) += 1;
    }

    /// A valid JSON value of `t`; `!String`s are fresh tokens.
    fn json_of(&mut self, t: &Type, rng: &mut Rng) -> Json {
        match t {
            Type::Unit => {
                if rng.chance(50) {
                    Json::Null
                } else {
                    json!({})
                }
            }
            Type::Bool => json!(rng.chance(50)),
            Type::Int => match rng.below(10) {
                0 => json!(1_000_000_007i64),
                1 => json!(-3),
                2 => json!(4.0),
                _ => json!(rng.below(20)),
            },
            Type::Float => match rng.below(4) {
                0 => json!(2),
                1 => json!(-0.5),
                _ => json!(rng.below(100) as f64 / 8.0),
            },
            Type::String => json!(*rng.pick(&["", "ok", "Ada", "é ü", "x\"y", "line\nbreak"])),
            Type::Enum(lits) => json!(&**rng.pick(lits)),
            Type::Json => match rng.below(4) {
                0 => json!({"a": [1, null, "x"]}),
                1 => json!(7),
                2 => Json::Null,
                _ => json!("text"),
            },
            Type::Option(inner) => {
                if rng.chance(35) {
                    Json::Null
                } else {
                    self.json_of(inner, rng)
                }
            }
            Type::Record(fields) | Type::OpenRecord(fields) => {
                let mut m = Map::new();
                for (n, ft) in fields {
                    if matches!(ft, Type::Option(_)) && rng.chance(25) {
                        continue;
                    }
                    m.insert(n.to_string(), self.json_of(ft, rng));
                }
                if rng.chance(15) {
                    m.insert("extra_field".into(), json!([1, 2]));
                }
                Json::Object(m)
            }
            Type::List(inner) => {
                let n = rng.below(4);
                Json::Array((0..n).map(|_| self.json_of(inner, rng)).collect())
            }
            Type::Linear(inner) if matches!(**inner, Type::String) => {
                self.tokens += 1;
                let token = format!("lin:{}", self.tokens);
                self.minted.push(token.clone());
                json!(token)
            }
            Type::Linear(inner) => self.json_of(inner, rng),
            Type::Result(ok, _) => json!({ "Ok": self.json_of(ok, rng) }),
            Type::Approval | Type::Fun(..) | Type::Meta(_) | Type::Error => Json::Null,
        }
    }
}

impl Host for Scripted<'_> {
    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        let on_path = |is: fn(&PathStep) -> bool| request.id.path.iter().any(is);
        let undo = on_path(|s| matches!(s, PathStep::Undo { .. }));
        let applied = on_path(|s| matches!(s, PathStep::Apply { .. }));
        let in_iteration = on_path(|s| matches!(s, PathStep::Item { .. }));
        self.calls.push(Call {
            id: request.id.to_string(),
            tool: request.tool.to_string(),
            arg: request.arg.clone(),
            undo,
            applied,
        });
        let Some(sig) = self.tools.iter().find(|t| *t.name == *request.tool) else {
            return Err(ToolFailure {
                stderr: None,
                kind: FailureKind::Unavailable,
                message: format!("tool {} is not declared", request.tool),
            });
        };
        let mut rng = self.rng();
        let fail = |kind, what: &str| {
            Err(ToolFailure {
                stderr: None,
                kind,
                message: format!("tool {} {what}", sig.name),
            })
        };
        match rng.below(100) {
            0..=64 => {
                self.note("ok");
                let tokens = self.minted.len();
                let v = self.json_of(&sig.output, &mut rng);
                // Tokens count as handed out only if the result is valid
                // as a whole (it is, unless a limit refuses it).
                if lt::runtime::boundary::program_result(
                    &sig.name,
                    &v,
                    &sig.output,
                    10_000,
                    100_000,
                )
                .is_err()
                {
                    self.minted.truncate(tokens);
                }
                if in_iteration {
                    self.minted_in_iteration += (self.minted.len() - tokens) as u64;
                }
                Ok(v)
            }
            65..=71 => {
                self.note("wrong_shape");
                Ok(json!({"unexpected": [1, 2, 3]}))
            }
            72..=81 => {
                self.note("failed");
                fail(FailureKind::Failed, "failed (exit status 1): boom")
            }
            82..=86 => {
                self.note("timed_out");
                fail(FailureKind::TimedOut, "timed out after 10 ms")
            }
            87..=90 => {
                self.note("crashed");
                fail(FailureKind::Crashed, "crashed (signal 11)")
            }
            91..=95 => {
                self.note("bad_output");
                fail(FailureKind::BadOutput, "printed something that is not JSON")
            }
            _ => {
                self.note("unavailable");
                fail(FailureKind::Unavailable, "could not be started")
            }
        }
    }

    fn approve(&mut self, request: ApprovalRequest<'_>) -> Result<String, String> {
        let mut rng = self.rng();
        if rng.chance(70) {
            self.note("approval_granted");
            self.tokens += 1;
            let token = format!("apv:{}", self.tokens);
            self.minted.push(token.clone());
            Ok(token)
        } else {
            self.note("approval_refused");
            Err(format!(
                "approval for {} refused by the script",
                request.tool
            ))
        }
    }
}

/// Whether `v` is a value of type `t` (records by field names; a closed
/// record has exactly its fields, an open one at least them).
pub fn conforms(v: &Value, t: &Type) -> Result<(), String> {
    let bad = || Err(format!("{v:?} is not a value of type {t}"));
    match (t, v) {
        (Type::Linear(inner), _) => conforms(v, inner),
        (Type::Unit, Value::Unit)
        | (Type::Bool, Value::Bool(_))
        | (Type::Int, Value::Int(_))
        | (Type::String, Value::Str(_))
        | (Type::Approval, Value::Str(_))
        | (Type::Json, Value::Json(_))
        | (Type::Option(_), Value::None)
        | (Type::Fun(..), Value::Fn(_)) => Ok(()),
        (Type::Float, Value::Float(x)) if x.is_finite() => Ok(()),
        (Type::Enum(lits), Value::Str(s)) if lits.iter().any(|l| **l == **s) => Ok(()),
        (Type::Option(inner), Value::Some(x)) => conforms(x, inner),
        (Type::List(inner), Value::List(items)) => {
            items.iter().try_for_each(|x| conforms(x, inner))
        }
        (Type::Result(ok, _), Value::Ok(x)) => conforms(x, ok),
        (Type::Result(_, err), Value::Err(x)) => conforms(x, err),
        (Type::Record(fields), Value::Record(have)) if fields.len() != have.len() => bad(),
        (Type::Record(fields) | Type::OpenRecord(fields), Value::Record(have)) => {
            for (n, ft) in fields {
                match have.iter().find(|(m, _)| m == n) {
                    Some((_, x)) => conforms(x, ft)?,
                    None => return Err(format!("{v:?} has no field {n} (type {t})")),
                }
            }
            Ok(())
        }
        // Not known to the checker: nothing to compare with.
        (Type::Meta(_), _) => Ok(()),
        _ => bad(),
    }
}
