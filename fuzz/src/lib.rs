//! Shared pieces of the fuzz targets: span sanity checks, a host that answers
//! every tool call from the fuzz input, and the check → lower → run driver.
//!
//! Nothing here performs I/O: no executors, no control plane, no clock
//! (`Limits::timeout` is `None`, so a run is bounded only by fuel and the
//! other limits, and libFuzzer's `-timeout` reports anything that escapes them).

use lt::runtime::eval::run;
use lt::runtime::host::{
    AnnotationEvent, ApprovalRequest, CallRequest, FailureKind, Host, Outcome, ToolFailure,
};
use lt::runtime::limits::{Limits, RunErrorKind};
use lt::source::Span;
use lt::types::Type;
use serde_json::{Map, Number, Value as Json};
use std::collections::HashMap;

/// Panics unless `span` lies within `text` on char boundaries.
pub fn assert_span_ok(text: &str, span: Span, what: &str) {
    let (s, e) = (span.start as usize, span.end as usize);
    assert!(s <= e, "{what}: span {s}..{e} is reversed");
    assert!(
        e <= text.len(),
        "{what}: span {s}..{e} past end {}",
        text.len()
    );
    assert!(
        text.is_char_boundary(s) && text.is_char_boundary(e),
        "{what}: span {s}..{e} not on char boundaries"
    );
}

/// The small limits every fuzzed run gets ([`Limits::fuzz`]).
pub fn fuzz_limits() -> Limits {
    Limits::fuzz()
}

/// A byte source: the fuzz input's answer bytes first, then a PRNG.
pub struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
    rng: u64,
}

impl<'a> Bytes<'a> {
    /// Reads `data`, then continues with a PRNG seeded by `seed`.
    pub fn new(data: &'a [u8], seed: u64) -> Bytes<'a> {
        Bytes {
            data,
            pos: 0,
            rng: seed | 1,
        }
    }

    /// The next byte.
    pub fn byte(&mut self) -> u8 {
        if let Some(&b) = self.data.get(self.pos) {
            self.pos += 1;
            return b;
        }
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
    }

    fn u64(&mut self) -> u64 {
        let mut x = 0u64;
        for _ in 0..8 {
            x = (x << 8) | u64::from(self.byte());
        }
        x
    }
}

fn fnv(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// Answers every call: mostly a JSON value of the tool's declared output
/// type (so `Ok` paths run), sometimes a `ToolFailure`, sometimes JSON of the
/// wrong shape (exercises the boundary's validation). Approvals are granted
/// or refused by the same byte stream; annotations are ignored.
pub struct FuzzHost<'a> {
    bytes: Bytes<'a>,
    outputs: HashMap<String, Type>,
    /// Calls answered so far.
    pub calls: usize,
}

impl<'a> FuzzHost<'a> {
    /// A host for tools with these output types.
    pub fn new(answers: &'a [u8], seed: u64, outputs: HashMap<String, Type>) -> FuzzHost<'a> {
        FuzzHost {
            bytes: Bytes::new(answers, seed),
            outputs,
            calls: 0,
        }
    }

    fn failure(&mut self, tool: &str) -> ToolFailure {
        let kind = match self.bytes.byte() % 7 {
            0 => FailureKind::Failed,
            1 => FailureKind::Crashed,
            2 => FailureKind::TimedOut,
            3 => FailureKind::BadOutput,
            4 => FailureKind::Unavailable,
            5 => FailureKind::Denied,
            _ => FailureKind::Unknown,
        };
        ToolFailure {
            kind,
            message: format!("tool {tool} {}: fuzz", kind.as_str()),
        }
    }

    /// Any JSON (not shaped by a type).
    fn any_json(&mut self, depth: u32) -> Json {
        let pick = self.bytes.byte() % if depth == 0 { 5 } else { 7 };
        match pick {
            0 => Json::Null,
            1 => Json::Bool(self.bytes.byte() & 1 == 1),
            2 => Json::Number(Number::from(self.bytes.u64() as i64)),
            3 => {
                Number::from_f64(f64::from_bits(self.bytes.u64())).map_or(Json::Null, Json::Number)
            }
            4 => Json::String(self.string()),
            5 => {
                let n = self.bytes.byte() % 4;
                Json::Array((0..n).map(|_| self.any_json(depth - 1)).collect())
            }
            _ => {
                let n = self.bytes.byte() % 4;
                let mut m = Map::new();
                for _ in 0..n {
                    let k = self.string();
                    let v = self.any_json(depth - 1);
                    m.insert(k, v);
                }
                Json::Object(m)
            }
        }
    }

    fn string(&mut self) -> String {
        const ALPHABET: &[&str] = &[
            "",
            "a",
            "b",
            "Ok",
            "Err",
            "id",
            "x",
            " ",
            "é",
            "\u{1F600}",
            "\n",
            "\"",
            "0",
            "-1",
            "null",
            "{",
            "ok",
            "err",
            "open",
            "closed",
        ];
        let n = self.bytes.byte() % 4;
        let mut s = String::new();
        for _ in 0..n {
            s.push_str(ALPHABET[self.bytes.byte() as usize % ALPHABET.len()]);
        }
        s
    }

    fn int(&mut self) -> i64 {
        match self.bytes.byte() % 8 {
            0 => i64::MAX,
            1 => i64::MIN,
            2 => -1,
            3 => 0,
            4 => self.bytes.u64() as i64,
            _ => i64::from(self.bytes.byte()),
        }
    }

    /// JSON conforming to `ty` (mostly), at most `depth` levels deep.
    pub fn json_of(&mut self, ty: &Type, depth: u32) -> Json {
        // Once in a while, anything at all (often ill-typed).
        if self.bytes.byte() == 0xff {
            return self.any_json(2);
        }
        if depth == 0 {
            return Json::Null;
        }
        match ty {
            Type::Unit => Json::Null,
            Type::Bool => Json::Bool(self.bytes.byte() & 1 == 1),
            Type::Int => Json::Number(Number::from(self.int())),
            Type::Float => {
                let x = match self.bytes.byte() % 4 {
                    0 => f64::from_bits(self.bytes.u64()),
                    1 => 1e308,
                    2 => -0.0,
                    _ => f64::from(self.bytes.byte()) / 4.0,
                };
                Number::from_f64(x).map_or(Json::Null, Json::Number)
            }
            Type::String | Type::Approval => Json::String(self.string()),
            Type::Json => self.any_json(3),
            Type::Enum(lits) => {
                if lits.is_empty() {
                    Json::String(self.string())
                } else {
                    Json::String(lits[self.bytes.byte() as usize % lits.len()].to_string())
                }
            }
            Type::Option(inner) => {
                if self.bytes.byte() & 1 == 0 {
                    Json::Null
                } else {
                    self.json_of(inner, depth - 1)
                }
            }
            Type::Record(fields) | Type::OpenRecord(fields) => {
                let mut m = Map::new();
                for (name, fty) in fields {
                    if matches!(fty, Type::Option(_)) && self.bytes.byte() % 4 == 0 {
                        continue; // an omitted optional field
                    }
                    m.insert(name.to_string(), self.json_of(fty, depth - 1));
                }
                Json::Object(m)
            }
            Type::List(elem) => {
                let n = match self.bytes.byte() % 16 {
                    0..=3 => 0,
                    15 => 12,
                    k => k % 4,
                };
                Json::Array((0..n).map(|_| self.json_of(elem, depth - 1)).collect())
            }
            Type::Result(ok, err) => {
                let mut m = Map::new();
                if self.bytes.byte() & 1 == 0 {
                    m.insert("Ok".into(), self.json_of(ok, depth - 1));
                } else {
                    m.insert("Err".into(), self.json_of(err, depth - 1));
                }
                Json::Object(m)
            }
            Type::Linear(inner) => self.json_of(inner, depth),
            Type::Fun(..) | Type::Meta(_) | Type::Error => Json::Null,
        }
    }
}

impl Host for FuzzHost<'_> {
    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        self.calls += 1;
        std::hint::black_box(&request.arg);
        let tool = request.tool;
        match self.bytes.byte() % 8 {
            0 => Err(self.failure(tool)),
            1 => Ok(self.any_json(3)),
            _ => match self.outputs.get(tool).cloned() {
                Some(ty) => Ok(self.json_of(&ty, 8)),
                None => Err(ToolFailure {
                    kind: FailureKind::Unavailable,
                    message: format!("no such tool {tool}"),
                }),
            },
        }
    }

    fn approve(&mut self, request: ApprovalRequest<'_>) -> Result<String, String> {
        if self.bytes.byte() & 1 == 0 {
            Ok(format!("token-{}-{}", request.tool, request.id))
        } else {
            Err(format!("approval for {} refused (fuzz)", request.tool))
        }
    }

    fn annotation(&mut self, event: AnnotationEvent<'_>) {
        std::hint::black_box(event);
    }
}

/// Checks, lowers and runs `text` under [`fuzz_limits`], the host answering
/// from `answers` (then a PRNG seeded by the text). Panics on an internal
/// error (a lowering error for a checked program, a `RunErrorKind::Internal`).
pub fn run_program(text: &str, answers: &[u8]) {
    let Ok(checked) = lt::types::check_source(text).into_checked() else {
        return;
    };
    let ir = match lt::ir::lower::lower(&checked) {
        Ok(ir) => ir,
        Err(e) => panic!("checked program failed to lower: {e:?}"),
    };
    let outputs: HashMap<String, Type> = ir
        .tools
        .iter()
        .map(|t| (t.name.to_string(), t.output.clone()))
        .collect();
    let mut host = FuzzHost::new(answers, fnv(text.as_bytes()), outputs);
    let (result, stats) = run(&ir, &mut host, &fuzz_limits());
    std::hint::black_box(&stats);
    match result {
        Ok(v) => {
            std::hint::black_box(v.to_json());
            std::hint::black_box(v.to_string());
        }
        Err(e) => {
            // (The span is not checked against `text`: it may point into
            // the standard library's prelude.)
            assert!(
                e.kind != RunErrorKind::Internal,
                "internal run error: {e:?}"
            );
        }
    }
}
