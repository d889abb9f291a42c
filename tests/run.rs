//! The interpreter, in process: `check_source` → `lower` → `eval::run`
//! against a scripted [`Host`] that answers canned JSON per tool and records
//! every request it saw (tool, argument JSON, call identity).
//!
//! Covers every language construct with its value, the tool boundary (JSON
//! encoding of arguments, validation of results, failures as `Err`), call
//! identities, the limits of a run, and programs deep or long enough to
//! overflow a naive recursive interpreter.

use lt::ir::lower::lower;
use lt::ir::{ForEachMode, Ir, NodeId, NodeKind};
use lt::runtime::eval::{run, RunStats};
use lt::runtime::host::{CallRequest, FailureKind, Host, Outcome, ToolFailure};
use lt::runtime::limits::{Limits, RunError, RunErrorKind};
use lt::runtime::value::Value;
use lt::types::check_source;
use serde_json::{json, Value as Json};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

// ---------------------------------------------------------------------------
// The scripted host and helpers
// ---------------------------------------------------------------------------

/// One request the host saw.
#[derive(Clone, Debug, PartialEq)]
struct Seen {
    tool: String,
    arg: Json,
    id: String,
    time_left: Option<Duration>,
}

type Script = Box<dyn FnMut(&Json) -> Outcome>;

/// Answers each tool with its script; records every request. A tool without
/// a script fails as `unavailable` (never panics: a host must not).
#[derive(Default)]
struct ScriptedHost {
    scripts: HashMap<String, Script>,
    seen: Vec<Seen>,
    /// Sleeps this long in every call (for the timeout tests).
    sleep: Option<Duration>,
}

impl ScriptedHost {
    fn new() -> ScriptedHost {
        ScriptedHost::default()
    }

    /// `tool` always answers `json`.
    fn answer(mut self, tool: &str, json: Json) -> ScriptedHost {
        self.scripts
            .insert(tool.to_string(), Box::new(move |_| Ok(json.clone())));
        self
    }

    /// `tool` answers with whatever `f` computes from the argument.
    fn with(mut self, tool: &str, f: impl FnMut(&Json) -> Outcome + 'static) -> ScriptedHost {
        self.scripts.insert(tool.to_string(), Box::new(f));
        self
    }

    /// `tool` always fails with `kind` and `message`.
    fn fail(self, tool: &str, kind: FailureKind, message: &str) -> ScriptedHost {
        let message = message.to_string();
        self.with(tool, move |_| {
            Err(ToolFailure {
                stderr: None,
                kind,
                message: message.clone(),
            })
        })
    }

    fn sleeping(mut self, d: Duration) -> ScriptedHost {
        self.sleep = Some(d);
        self
    }

    fn tools_called(&self) -> Vec<&str> {
        self.seen.iter().map(|s| s.tool.as_str()).collect()
    }

    fn args(&self) -> Vec<Json> {
        self.seen.iter().map(|s| s.arg.clone()).collect()
    }

    fn ids(&self) -> Vec<String> {
        self.seen.iter().map(|s| s.id.clone()).collect()
    }
}

impl Host for ScriptedHost {
    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        self.seen.push(Seen {
            tool: request.tool.to_string(),
            arg: request.arg.clone(),
            id: request.id.to_string(),
            time_left: request.time_left,
        });
        if let Some(d) = self.sleep {
            std::thread::sleep(d);
        }
        match self.scripts.get_mut(request.tool) {
            Some(f) => f(&request.arg),
            None => Err(ToolFailure {
                stderr: None,
                kind: FailureKind::Unavailable,
                message: format!("no script for tool {}", request.tool),
            }),
        }
    }
}

/// Checks and lowers `src`; panics with the diagnostics when rejected.
fn lower_src(src: &str) -> Ir {
    let checked = match check_source(src).into_checked() {
        Ok(c) => c,
        Err(diags) => panic!(
            "program rejected by the checker:\n{src}\n{:#?}",
            diags.iter().map(|d| d.message.clone()).collect::<Vec<_>>()
        ),
    };
    lower(&checked).unwrap_or_else(|e| panic!("lowering failed: {e:?}"))
}

/// Runs `src` on `host` within `limits`.
fn run_on(
    src: &str,
    host: &mut ScriptedHost,
    limits: &Limits,
) -> (Result<Value, RunError>, RunStats) {
    let ir = lower_src(src);
    run(&ir, host, limits)
}

/// The value of a program that calls no tool (default limits).
fn value(src: &str) -> Value {
    let mut host = ScriptedHost::new();
    match run_on(src, &mut host, &Limits::default()).0 {
        Ok(v) => v,
        Err(e) => panic!("run failed: {e:?}\nprogram:\n{src}"),
    }
}

/// The value's JSON encoding.
fn json_of(src: &str) -> Json {
    value(src).to_json()
}

/// The value printed in lt syntax.
fn shown(src: &str) -> String {
    value(src).to_string()
}

/// The value of `src` run on `host` (default limits); panics on a run error.
fn value_on(src: &str, host: &mut ScriptedHost) -> Json {
    match run_on(src, host, &Limits::default()).0 {
        Ok(v) => v.to_json(),
        Err(e) => panic!("run failed: {e:?}\nprogram:\n{src}"),
    }
}

/// The error that stops `src` under `limits` (no tools).
fn run_error(src: &str, limits: &Limits) -> RunError {
    let mut host = ScriptedHost::new();
    match run_on(src, &mut host, limits).0 {
        Ok(v) => panic!("expected a run error, got {v}\nprogram:\n{src}"),
        Err(e) => e,
    }
}

/// The source text a span covers.
fn text_at(src: &str, e: &RunError) -> String {
    src[e.span.start as usize..e.span.end as usize].to_string()
}

fn str_value(s: &str) -> Value {
    Value::Str(Rc::from(s))
}

/// The ids of the nodes of a kind, in pre-order (id order).
fn nodes_where(ir: &Ir, pred: impl Fn(&NodeKind) -> bool) -> Vec<NodeId> {
    ir.nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| pred(&n.kind))
        .map(|(i, _)| i as NodeId)
        .collect()
}

fn exec_nodes(ir: &Ir) -> Vec<NodeId> {
    nodes_where(ir, |k| matches!(k, NodeKind::Exec { .. }))
}

// ---------------------------------------------------------------------------
// Literals and operators
// ---------------------------------------------------------------------------

#[test]
fn literals() {
    assert_eq!(value("42"), Value::Int(42));
    assert_eq!(value("0"), Value::Int(0));
    assert_eq!(value("-5"), Value::Int(-5));
    assert_eq!(value("9223372036854775807"), Value::Int(i64::MAX));
    assert_eq!(value("-9223372036854775807 - 1"), Value::Int(i64::MIN));
    assert_eq!(value("true"), Value::Bool(true));
    assert_eq!(value("false"), Value::Bool(false));
    assert_eq!(value("()"), Value::Unit);
    assert_eq!(value(r#""hello""#), str_value("hello"));
    assert_eq!(value(r#""""#), str_value(""));
    assert_eq!(
        value(r#""a\tb\n\"q\" \\ \u{1F600}""#),
        str_value("a\tb\n\"q\" \\ \u{1F600}")
    );
    assert_eq!(json_of("()"), Json::Null);
    assert_eq!(shown(r#""x\ny""#), r#""x\ny""#);
}

#[test]
fn integer_arithmetic() {
    assert_eq!(value("1 + 2 * 3 - 4"), Value::Int(3));
    assert_eq!(value("(1 + 2) * 3"), Value::Int(9));
    assert_eq!(value("10 - 2 - 3"), Value::Int(5), "left-associative");
    assert_eq!(value("100 / 10 / 5"), Value::Int(2), "left-associative");
    assert_eq!(value("7 / 2"), Value::Int(3));
    assert_eq!(value("7 % 3"), Value::Int(1));
    assert_eq!(
        value("2 * 3 % 4"),
        Value::Int(2),
        "same precedence, left first"
    );
    // Division truncates toward zero; the remainder has the dividend's sign.
    assert_eq!(value("-7 / 2"), Value::Int(-3));
    assert_eq!(value("7 / -2"), Value::Int(-3));
    assert_eq!(value("-7 % 2"), Value::Int(-1));
    assert_eq!(value("7 % -2"), Value::Int(1));
    assert_eq!(value("3 - -4"), Value::Int(7));
    assert_eq!(value("- 3 - - 4 * 2"), Value::Int(5));
    assert_eq!(value("2 * -3"), Value::Int(-6));
    assert_eq!(value("let x = 5 in -x"), Value::Int(-5));
    assert_eq!(value("let x = -5 in -x + 1"), Value::Int(6));
    assert_eq!(value("9223372036854775807 - 1 + 1"), Value::Int(i64::MAX));
    assert_eq!(
        value("(-9223372036854775807 - 1) / 2"),
        Value::Int(i64::MIN / 2)
    );
}

#[test]
fn string_concatenation() {
    assert_eq!(value(r#""ab" ++ "cd" ++ "" ++ "e""#), str_value("abcde"));
    assert_eq!(value(r#""" ++ """#), str_value(""));
    assert_eq!(
        value(r#"let s = "é" in s ++ s ++ "\u{1F600}""#),
        str_value("éé\u{1F600}")
    );
}

#[test]
fn comparisons_on_ints() {
    for (src, expect) in [
        ("1 < 2", true),
        ("2 < 1", false),
        ("2 < 2", false),
        ("2 <= 2", true),
        ("3 <= 2", false),
        ("3 > 4", false),
        ("4 > 3", true),
        ("3 >= 4", false),
        ("4 >= 4", true),
        ("1 == 1", true),
        ("1 == 2", false),
        ("1 != 1", false),
        ("1 != 2", true),
        ("-1 < 0", true),
        ("-9223372036854775807 - 1 < 9223372036854775807", true),
        ("1 + 1 == 2", true),
    ] {
        assert_eq!(value(src), Value::Bool(expect), "{src}");
    }
}

#[test]
fn comparisons_on_strings() {
    for (src, expect) in [
        (r#""apple" < "banana""#, true),
        (r#""banana" < "apple""#, false),
        (r#""b" > "abc""#, true),
        (r#""" < "a""#, true),
        (r#""ab" < "abc""#, true),
        (r#""Z" < "a""#, true), // byte order: uppercase first
        (r#""abc" <= "abc""#, true),
        (r#""abc" >= "abd""#, false),
        (r#""x" == "x""#, true),
        (r#""x" != "x""#, false),
        (r#""x" == "y""#, false),
    ] {
        assert_eq!(value(src), Value::Bool(expect), "{src}");
    }
}

#[test]
fn equality_on_data() {
    for (src, expect) in [
        ("{a = 1, b = 2} == {b = 2, a = 1}", true),
        ("{a = 1, b = 2} != {b = 2, a = 1}", false),
        ("{a = 1, b = 2} == {b = 1, a = 2}", false),
        ("{a = 1, b = 2} != {a = 1, b = 3}", true),
        (
            r#"{x = [1, 2], y = {z = "s", w = true}} == {y = {w = true, z = "s"}, x = [1, 2]}"#,
            true,
        ),
        (
            r#"{x = [1, 2], y = {z = "s", w = true}} == {y = {w = false, z = "s"}, x = [1, 2]}"#,
            false,
        ),
        ("[1, 2] == [1, 2]", true),
        ("[1, 2] == [2, 1]", false),
        ("[1, 2] == [1, 2, 3]", false),
        ("([]: Int) == []", true),
        ("([]: Int) == [1]", false),
        ("[[1], []] == [[1], []]", true),
        ("() == ()", true),
        ("true == false", false),
        ("true != false", true),
        ("let r = {a = [1]} in r == r", true),
    ] {
        assert_eq!(value(src), Value::Bool(expect), "{src}");
    }
}

// ---------------------------------------------------------------------------
// Data, let, if
// ---------------------------------------------------------------------------

#[test]
fn lists_and_nested_records() {
    assert_eq!(json_of("[1, 2, 3]"), json!([1, 2, 3]));
    assert_eq!(json_of("([]: String)"), json!([]));
    assert_eq!(json_of("[[1], [2, 3], []]"), json!([[1], [2, 3], []]));
    assert_eq!(
        json_of(r#"{name = "Ada", tags = ["x", "y"], inner = {ok = true, n = -1, u = ()}}"#),
        json!({"name": "Ada", "tags": ["x", "y"], "inner": {"ok": true, "n": -1, "u": null}})
    );
    assert_eq!(
        json_of("{a = 1, b = {c = [true, false]}}.b.c"),
        json!([true, false])
    );
    assert_eq!(
        json_of("let r = {p = {q = {s = 7}}} in r.p.q.s + 1"),
        json!(8)
    );
    assert_eq!(json_of("[{k = 1}, {k = 2}]"), json!([{"k": 1}, {"k": 2}]));
    assert_eq!(
        shown(r#"{a = [1, 2], b = "s"}"#),
        r#"{a = [1, 2], b = "s"}"#
    );
    assert_eq!(json_of("{}"), json!({}));
}

#[test]
fn if_runs_the_taken_branch() {
    assert_eq!(value(r#"if 1 < 2 then "yes" else "no""#), str_value("yes"));
    assert_eq!(value(r#"if 1 > 2 then "yes" else "no""#), str_value("no"));
    assert_eq!(
        value("let n = 15 in if n % 15 == 0 then 3 else if n % 5 == 0 then 2 else 1"),
        Value::Int(3)
    );
    // The branch not taken is not evaluated: dividing by zero there is fine.
    assert_eq!(value("if true then 1 else 1 / 0"), Value::Int(1));
    assert_eq!(value("if false then 1 / 0 else 2"), Value::Int(2));
}

#[test]
fn let_chains_and_shadowing() {
    assert_eq!(
        value("let a = 1 in let b = a + 1 in let c = b * 10 in c + a"),
        Value::Int(21)
    );
    assert_eq!(
        value("let a = 1 in let b = a + 1 in let c = b * 10 in c"),
        Value::Int(20),
        "a pipe"
    );
    assert_eq!(
        value("let x = 1 in let x = x + 10 in let x = x * 2 in x"),
        Value::Int(22)
    );
    assert_eq!(
        value("let x = 1 in let y = (let x = 50 in x + 1) in x + y"),
        Value::Int(52),
        "the inner x goes out of scope"
    );
    assert_eq!(
        value("let x = 1 in let f = fn x: Int => x * 100 in f 2 + x"),
        Value::Int(201),
        "a parameter shadows"
    );
    assert_eq!(
        value("let e = 5 in match Err(1) { Ok(v) => v, Err(e) => e } + e"),
        Value::Int(6),
        "a pattern binder shadows only in its arm"
    );
    assert_eq!(value("let _ = 5 in 6"), Value::Int(6));
    assert_eq!(value("let x: Int = 3 in x"), Value::Int(3));
    assert_eq!(
        value("let s = \"a\" in let t = s ++ s in let s = t ++ s in s"),
        str_value("aaa")
    );
}

// ---------------------------------------------------------------------------
// Functions
// ---------------------------------------------------------------------------

#[test]
fn lambdas_and_application() {
    assert_eq!(value("(fn x: Int => x * 2) 21"), Value::Int(42));
    assert_eq!(value("(fn (x: Int) => x - 1) 1"), Value::Int(0));
    assert_eq!(value("let f = fn u: Unit => 7 in f ()"), Value::Int(7));
    assert_eq!(
        value("let f = fn r: {a: Int, b: Int} => r.a * r.b in f {b = 6, a = 7}"),
        Value::Int(42)
    );
}

#[test]
fn currying_and_partial_application() {
    assert_eq!(
        value("let add = fn a: Int => fn b: Int => a + b in let inc = add 1 in inc 41"),
        Value::Int(42)
    );
    assert_eq!(
        value("let add = fn a: Int => fn b: Int => a + b in add 40 2"),
        Value::Int(42)
    );
    assert_eq!(
        value(
            "let add3 = fn a: Int => fn b: Int => fn c: Int => a * 100 + b * 10 + c in \
             let p = add3 1 in let q = p 2 in q 3 + add3 4 5 6"
        ),
        Value::Int(123 + 456)
    );
    // The same partial application used twice keeps its argument.
    assert_eq!(
        value(
            "let sub = fn a: Int => fn b: Int => a - b in let from10 = sub 10 in \
             from10 1 * 100 + from10 3"
        ),
        Value::Int(907)
    );
    // Over-application: a one-parameter function returning a function.
    assert_eq!(
        value("let k = fn a: Int => let z = a in fn b: Int => z - b in k 10 3"),
        Value::Int(7)
    );
    // Partial applications passed on and completed elsewhere.
    assert_eq!(
        value(
            "let add = fn a: Int => fn b: Int => a + b in \
             let apply = fn f: Int -> Int => fn x: Int => f x in apply (add 5) 10"
        ),
        Value::Int(15)
    );
}

#[test]
fn closures_capture_from_several_levels() {
    assert_eq!(
        value(
            "let a = 1 in \
             let f = fn x: Int => let b = 10 in fn y: Int => let c = 100 in \
                     fn z: Int => a + b + c + x + y + z in \
             f 1000 10000 100000"
        ),
        Value::Int(111_111)
    );
    // A closure copies the variable as it was when created.
    assert_eq!(
        value("let a = 1 in let f = fn x: Int => x + a in let a = 100 in f 0 + a"),
        Value::Int(101)
    );
    // Closures created per element capture that element.
    assert_eq!(
        json_of(
            "let adders = map (fn n: Int => fn x: Int => x + n) [1, 2, 3] in \
             map (fn g: Int -> Int => g 10) adders"
        ),
        json!([11, 12, 13])
    );
    // A closure that captures a closure that captures a variable.
    assert_eq!(
        value(
            "let k = 3 in let mul = fn x: Int => x * k in \
             let twice = fn y: Int => mul (mul y) in \
             let outer = fn z: Int => twice z + k in outer 2"
        ),
        Value::Int(21)
    );
}

#[test]
fn higher_order_functions() {
    assert_eq!(
        value(
            "let twice = fn f: Int -> Int => fn x: Int => f (f x) in twice (fn y: Int => y * 3) 2"
        ),
        Value::Int(18)
    );
    assert_eq!(
        value(
            "let compose = fn f: Int -> Int => fn g: Int -> Int => fn x: Int => f (g x) in \
             compose (fn a: Int => a + 1) (fn b: Int => b * 2) 5"
        ),
        Value::Int(11)
    );
    assert_eq!(
        value(
            "let twice = fn f: Int -> Int => fn x: Int => f (f x) in \
             let quad = twice (twice (fn y: Int => y + 1)) in quad 0"
        ),
        Value::Int(4)
    );
    // A function returned from an `if`.
    assert_eq!(
        value("let pick = fn b: Bool => if b then fn x: Int => x + 1 else fn x: Int => x - 1 in pick false 10 + pick true 10"),
        Value::Int(20)
    );
}

// ---------------------------------------------------------------------------
// Builtins
// ---------------------------------------------------------------------------

#[test]
fn map_filter_fold() {
    assert_eq!(
        json_of("map (fn x: Int => x * x) [1, 2, 3]"),
        json!([1, 4, 9])
    );
    assert_eq!(json_of("map (fn x: Int => x * x) []"), json!([]));
    assert_eq!(
        json_of(r#"map (fn s: String => s ++ "!") ["a", "b"]"#),
        json!(["a!", "b!"])
    );
    assert_eq!(
        json_of("filter (fn x: Int => x % 2 == 0) [1, 2, 3, 4, 6]"),
        json!([2, 4, 6])
    );
    assert_eq!(json_of("filter (fn x: Int => false) [1, 2]"), json!([]));
    assert_eq!(
        value("fold (fn acc: Int => fn x: Int => acc * 10 + x) 0 [1, 2, 3]"),
        Value::Int(123),
        "left to right"
    );
    assert_eq!(
        value("fold (fn acc: Int => fn x: Int => acc + x) 5 []"),
        Value::Int(5)
    );
    assert_eq!(
        value(r#"fold (fn acc: String => fn x: String => acc ++ x) "" ["a", "b", "c"]"#),
        str_value("abc")
    );
    assert_eq!(
        json_of(
            "map (fn row: List Int => fold (fn a: Int => fn b: Int => a + b) 0 row) [[1, 2], [3], []]"
        ),
        json!([3, 3, 0])
    );
    assert_eq!(
        json_of("map (fn r: {a: Int} => r.a) (filter (fn r: {a: Int} => r.a > 1) [{a = 1}, {a = 2}, {a = 3}])"),
        json!([2, 3])
    );
    // A named function as the callback; a callback of another arity.
    assert_eq!(
        json_of("let sq = fn x: Int => x * x in map sq [4, 5]"),
        json!([16, 25])
    );
    assert_eq!(
        value(
            "let step = fn acc: Int => let a2 = acc * 2 in fn x: Int => a2 + x in fold step 0 [1, 0, 1]"
        ),
        Value::Int(5)
    );
}

/// `fold` whose function is one operator over its parameters runs as a loop
/// (src/runtime/compile.rs `reduce_operator`), and `map`/`filter` over a
/// temporary list work in place: both must be observably the general path.
/// The general path is forced by passing the function as a variable, or the
/// list through a `let` (shared, so not in place).
#[test]
fn fast_paths_are_observably_the_general_ones() {
    let pairs = [
        (
            "fold (fn a: Int => fn x: Int => a - x) 100 (range 0 50)",
            "let f = fn a: Int => fn x: Int => a - x in fold f 100 (range 0 50)",
        ),
        (
            "fold (fn a: Int => fn x: Int => x * 2) 1 [3, 4]",
            "let f = fn a: Int => fn x: Int => x * 2 in fold f 1 [3, 4]",
        ),
        (
            r#"fold (fn a: String => fn x: String => a ++ x ++ "-") "" ["p", "q"]"#,
            r#"let f = fn a: String => fn x: String => a ++ x ++ "-" in fold f "" ["p", "q"]"#,
        ),
        (
            "fold (fn a: Bool => fn x: Int => a == (x > 2)) true [1, 5, 3]",
            "let f = fn a: Bool => fn x: Int => a == (x > 2) in fold f true [1, 5, 3]",
        ),
        (
            "filter (fn y: Int => y % 3 == 0) (map (fn x: Int => x * 7) (range 0 20))",
            "let xs = range 0 20 in let ys = map (fn x: Int => x * 7) xs in filter (fn y: Int => y % 3 == 0) ys",
        ),
        (
            "match traverse (fn x: Int => if x > 3 then Err(x) else Ok(x)) (range 0 9) { Ok(v) => v, Err(e) => [e] }",
            "let xs = range 0 9 in match traverse (fn x: Int => if x > 3 then Err(x) else Ok(x)) xs { Ok(v) => v, Err(e) => [e] }",
        ),
        (
            "match traverse (fn x: Int => Ok({v = x})) (range 0 4) { Ok(v) => v, Err(e) => [] }",
            "let xs = range 0 4 in match traverse (fn x: Int => Ok({v = x})) xs { Ok(v) => v, Err(e) => [] }",
        ),
    ];
    for (fast, general) in pairs {
        assert_eq!(value(fast), value(general), "{fast}");
    }
    // The same error at the same node: overflow inside the operator.
    let limits = Limits::default();
    let fast = "fold (fn a: Int => fn x: Int => a * x) 2 [4611686018427387904, 3]";
    let general = "let f = fn a: Int => fn x: Int => a * x in fold f 2 [4611686018427387904, 3]";
    let (e1, e2) = (run_error(fast, &limits), run_error(general, &limits));
    assert_eq!(e1.kind, RunErrorKind::Arithmetic);
    assert_eq!((e1.kind, e1.message.clone()), (e2.kind, e2.message.clone()));
    assert_eq!(text_at(fast, &e1), "a * x");
    assert_eq!(text_at(general, &e2), "a * x");
    // Fuel: each element is charged the body's steps, so a step limit stops
    // both at the same element.
    let steps = |src: &str| {
        let mut host = ScriptedHost::new();
        run_on(src, &mut host, &limits).1.steps
    };
    let per_element = |src: &str| {
        let list = |n: usize| format!("[{}]", vec!["1"; n].join(", "));
        steps(&src.replace("XS", &list(40))) - steps(&src.replace("XS", &list(20)))
    };
    assert_eq!(
        per_element("fold (fn a: Int => fn x: Int => a + x) 0 XS"),
        per_element("let f = fn a: Int => fn x: Int => a + x in fold f 0 XS"),
    );
}

#[test]
fn partial_application_of_builtins() {
    assert_eq!(
        json_of("let m = map (fn x: Int => x + 1) in m [1, 2]"),
        json!([2, 3])
    );
    assert_eq!(
        json_of(r#"let keep = filter (fn s: String => s != "") in keep ["a", "", "b"]"#),
        json!(["a", "b"])
    );
    assert_eq!(
        value("let sum = fold (fn a: Int => fn b: Int => a + b) 0 in sum [1, 2, 3] + sum [10]"),
        Value::Int(16)
    );
    assert_eq!(
        value("let f = fold (fn a: Int => fn b: Int => a - b) in f 100 [1, 2]"),
        Value::Int(97)
    );
    assert_eq!(
        value("let f = fold (fn a: Int => fn b: Int => a - b) in let g = f 10 in g [1] + g [2]"),
        Value::Int(17)
    );
    // A partially applied builtin passed to another function.
    assert_eq!(
        json_of(
            "let apply = fn f: List Int -> List Int => fn xs: List Int => f (f xs) in \
             apply (map (fn x: Int => x * 3)) [1, 2]"
        ),
        json!([9, 18])
    );
    // `map f` given more arguments than the builtin takes.
    assert_eq!(
        json_of("map (fn f: Int -> Int => f 1) [fn x: Int => x + 1, fn x: Int => x * 10]"),
        json!([2, 10])
    );
}

#[test]
fn shadowed_builtins_are_ordinary_names() {
    assert_eq!(
        value("let map = fn x: Int => x + 1 in map 41"),
        Value::Int(42)
    );
    assert_eq!(
        value("let fold = fn a: Int => fn b: Int => a * b in fold 6 7"),
        Value::Int(42)
    );
    assert_eq!(value("(fn filter: Int => filter + 1) 1"), Value::Int(2));
}

#[test]
fn fold_with_a_function_accumulator() {
    // acc_n = x ↦ acc_{n-1}(x) * 10 + n, starting from the identity.
    assert_eq!(
        value(
            "let h = fold (fn f: Int -> Int => fn n: Int => fn x: Int => f x * 10 + n) \
                          (fn x: Int => x) [1, 2, 3] in h 0"
        ),
        Value::Int(123)
    );
    assert_eq!(
        value(
            "let h = fold (fn f: Int -> Int => fn n: Int => fn x: Int => f x * 10 + n) \
                          (fn x: Int => x) [1, 2, 3] in h 4"
        ),
        Value::Int(4123)
    );
    // Composition of a list of functions.
    assert_eq!(
        value(
            "let fs = [fn x: Int => x + 1, fn x: Int => x * 2, fn x: Int => x - 3] in \
             let all = fold (fn acc: Int -> Int => fn f: Int -> Int => fn x: Int => f (acc x)) \
                            (fn x: Int => x) fs in all 10"
        ),
        Value::Int(19)
    );
}

#[test]
fn traverse_without_tools() {
    let src = |xs: &str| {
        format!(
            r#"match traverse (fn x: Int => if x > 0 then Ok(x * 2) else Err("neg " ++ "x")) {xs} {{
                 Ok(ys) => ys, Err(e) => [] }}"#
        )
    };
    assert_eq!(json_of(&src("[1, 2, 3]")), json!([2, 4, 6]));
    assert_eq!(json_of(&src("[1, -2, 3]")), json!([]));
    assert_eq!(json_of(&src("[]")), json!([]));
    assert_eq!(
        value(
            r#"match traverse (fn x: Int => if x > 0 then Ok(x) else Err(x)) [3, -4, -5] {
                 Ok(ys) => 0, Err(e) => e }"#
        ),
        Value::Int(-4),
        "the first Err"
    );
    // Partial application of traverse.
    assert_eq!(
        json_of(
            r#"let t = traverse (fn x: Int => if x > 0 then Ok(x) else Err("no")) in
               match t [5, 6] { Ok(ys) => ys, Err(e) => [] }"#
        ),
        json!([5, 6])
    );
}

// ---------------------------------------------------------------------------
// match and short-circuit
// ---------------------------------------------------------------------------

#[test]
fn match_patterns() {
    assert_eq!(
        value("match Ok(5) { Ok(x) => x + 1, Err(e) => 0 }"),
        Value::Int(6)
    );
    assert_eq!(
        value(r#"match Err("bad") { Ok(x) => x, Err(e) => e ++ "!" }"#),
        str_value("bad!")
    );
    assert_eq!(
        value(r#"match Err("x") { Err(e) => 1, Ok(v) => 2 }"#),
        Value::Int(1),
        "Err arm first"
    );
    assert_eq!(
        value("match Ok(1) { Ok(_) => 10, Err(_) => 20 }"),
        Value::Int(10)
    );
    assert_eq!(value(r#"match 5 { _ => "any" }"#), str_value("any"));
    assert_eq!(value("match 5 { n => n * 2 }"), Value::Int(10));
    assert_eq!(
        value("match {a = 1, b = 2} { r => r.a + r.b, }"),
        Value::Int(3),
        "variable pattern, trailing comma"
    );
    assert_eq!(
        value(
            "match Ok(Ok(3)) { Ok(inner) => match inner { Ok(v) => v, Err(e) => 0 }, Err(e) => 0 }"
        ),
        Value::Int(3)
    );
    assert_eq!(
        value(
            "let f = fn r: Result<Int, String> => match r { Ok(v) => v, Err(e) => -1 } in f (Ok 7) + f (Err \"no\")"
        ),
        Value::Int(6)
    );
}

#[test]
fn and_or_short_circuit() {
    // The right side would overflow: it must not run.
    assert_eq!(
        value("false && 9223372036854775807 + 1 == 1"),
        Value::Bool(false)
    );
    assert_eq!(
        value("true || 9223372036854775807 + 1 == 1"),
        Value::Bool(true)
    );
    // When the left side does not decide, the right side runs.
    let e = run_error("true && 9223372036854775807 + 1 == 1", &Limits::default());
    assert_eq!(e.kind, RunErrorKind::Arithmetic);
    let e = run_error("false || 9223372036854775807 + 1 == 1", &Limits::default());
    assert_eq!(e.kind, RunErrorKind::Arithmetic);
    for (src, expect) in [
        ("true && true", true),
        ("true && false", false),
        ("false || false", false),
        ("false || true", true),
        ("1 < 2 && 2 < 3 || false", true),
        ("false && false || true", true),
    ] {
        assert_eq!(value(src), Value::Bool(expect), "{src}");
    }
}

#[test]
fn short_circuit_skips_a_tool_call() {
    let src = |lhs: &str| {
        format!(
            "tool t: Int -{{Read}}-> Bool;\n\
             {lhs} && (match exec tool t 1 {{ Ok(b) => b, Err(e) => false }})"
        )
    };
    let mut host = ScriptedHost::new().answer("t", json!(true));
    assert_eq!(value_on(&src("false"), &mut host), json!(false));
    assert!(host.seen.is_empty(), "no call: {:?}", host.seen);
    let mut host = ScriptedHost::new().answer("t", json!(true));
    assert_eq!(value_on(&src("true"), &mut host), json!(true));
    assert_eq!(host.tools_called(), ["t"]);
}

#[test]
fn only_the_taken_if_branch_calls_its_tool() {
    let src = |cond: &str| {
        format!(
            r#"tool yes: String -{{Read}}-> String;
               tool no: String -{{Write}}-> String;
               if {cond}
               then match exec tool yes "a" {{ Ok(s) => s, Err(e) => e }}
               else match exec tool no "b" {{ Ok(s) => s, Err(e) => e }}"#
        )
    };
    let host = || {
        ScriptedHost::new()
            .answer("yes", json!("from yes"))
            .answer("no", json!("from no"))
    };
    let mut h = host();
    assert_eq!(value_on(&src("1 < 2"), &mut h), json!("from yes"));
    assert_eq!(h.tools_called(), ["yes"]);
    assert_eq!(h.args(), [json!("a")]);
    let mut h = host();
    assert_eq!(value_on(&src("1 > 2"), &mut h), json!("from no"));
    assert_eq!(h.tools_called(), ["no"]);
    assert_eq!(h.args(), [json!("b")]);
}

#[test]
fn only_the_taken_match_arm_runs() {
    let src = r#"tool t: Int -{Read}-> Int;
                 tool after_ok: Int -{Write}-> Int;
                 tool after_err: String -{Write}-> Int;
                 match exec tool t 1 {
                   Ok(v) => match exec tool after_ok v { Ok(x) => x, Err(e) => -1 },
                   Err(e) => match exec tool after_err e { Ok(x) => x, Err(e2) => -2 }
                 }"#;
    let mut h = ScriptedHost::new()
        .answer("t", json!(5))
        .with("after_ok", |a| Ok(json!(a.as_i64().unwrap_or(0) * 10)))
        .answer("after_err", json!(0));
    assert_eq!(value_on(src, &mut h), json!(50));
    assert_eq!(h.tools_called(), ["t", "after_ok"]);
    assert_eq!(h.args(), [json!(1), json!(5)]);
    let mut h = ScriptedHost::new()
        .fail("t", FailureKind::Failed, "tool t failed: nope")
        .answer("after_ok", json!(0))
        .answer("after_err", json!(77));
    assert_eq!(value_on(src, &mut h), json!(77));
    assert_eq!(h.tools_called(), ["t", "after_err"]);
    assert_eq!(h.args()[1], json!("tool t failed: nope"));
    // The `Ok` arm calls a tool: this is the try_and_check combinator.
    let ir = lower_src(src);
    assert_eq!(ir.node(ir.root).kind.name(), "try_and_check");
}

// ---------------------------------------------------------------------------
// The tool boundary
// ---------------------------------------------------------------------------

#[test]
fn argument_json_encoding() {
    let src = r#"tool t: {name: String, n: Int, neg: Int, yes: Bool, nothing: Unit,
                          tags: List String, nested: {inner: List {k: Int}}, empty: List Int}
                   -{Write}-> Unit;
                 match exec tool t {name = "Ada \"L\"", n = 36, neg = -1, yes = true, nothing = (),
                                    tags = ["a", "b"], nested = {inner = [{k = 1}, {k = 2}]},
                                    empty = []} {
                   Ok(u) => u, Err(e) => ()
                 }"#;
    let mut h = ScriptedHost::new().answer("t", Json::Null);
    assert_eq!(value_on(src, &mut h), Json::Null);
    assert_eq!(
        h.args(),
        [json!({
            "name": "Ada \"L\"", "n": 36, "neg": -1, "yes": true, "nothing": null,
            "tags": ["a", "b"], "nested": {"inner": [{"k": 1}, {"k": 2}]}, "empty": []
        })]
    );
    // Scalars and lists as the whole argument.
    for (ty, arg, expect) in [
        ("Unit", "()", Json::Null),
        ("Int", "(-7)", json!(-7)),
        ("String", r#""s""#, json!("s")),
        ("Bool", "false", json!(false)),
        ("List (List Int)", "[[1], []]", json!([[1], []])),
        ("{}", "{}", json!({})),
    ] {
        let src = format!(
            "tool t: {ty} -{{Read}}-> Int;\nmatch exec tool t {arg} {{ Ok(x) => x, Err(e) => 0 }}"
        );
        let mut h = ScriptedHost::new().answer("t", json!(1));
        assert_eq!(value_on(&src, &mut h), json!(1), "{src}");
        assert_eq!(h.args(), [expect], "{src}");
    }
}

#[test]
fn result_values_encode_as_ok_err_objects() {
    let ok = Value::Ok(Rc::new(Value::Int(1)));
    let err = Value::Err(Rc::new(str_value("no")));
    assert_eq!(ok.to_json(), json!({"Ok": 1}));
    assert_eq!(err.to_json(), json!({"Err": "no"}));
    assert_eq!(
        Value::List(Rc::from(vec![ok, err])).to_json(),
        json!([{"Ok": 1}, {"Err": "no"}])
    );
}

#[test]
fn tool_results_of_result_type_decode() {
    let src = r#"tool t: Unit -{Read}-> Result<Int, String>;
                 match exec tool t () {
                   Ok(r) => match r { Ok(n) => "inner ok " ++ (if n == 5 then "5" else "?"),
                                      Err(m) => "inner err " ++ m },
                   Err(e) => "call failed: " ++ e
                 }"#;
    let mut h = ScriptedHost::new().answer("t", json!({"Ok": 5}));
    assert_eq!(value_on(src, &mut h), json!("inner ok 5"));
    let mut h = ScriptedHost::new().answer("t", json!({"Err": "sold out"}));
    assert_eq!(value_on(src, &mut h), json!("inner err sold out"));
    let mut h = ScriptedHost::new().answer("t", json!({"Maybe": 1}));
    assert_eq!(
        value_on(src, &mut h),
        json!("call failed: tool t returned an invalid result: expected Result<Int, String>, found an object")
    );
    let mut h = ScriptedHost::new().answer("t", json!({"Ok": "5"}));
    assert_eq!(
        value_on(src, &mut h),
        json!(
            "call failed: tool t returned an invalid result: field Ok: expected Int, found String"
        )
    );
}

const LOOKUP: &str = r#"tool lookup_account: String -{Read}-> {id: String, last_charge_cents: Int};
match exec tool lookup_account "cust_1" {
  Ok(a) => a.id ++ ":" ++ (if a.last_charge_cents > 1000 then "big" else "small"),
  Err(e) => "ERR " ++ e
}"#;

#[test]
fn boundary_drops_extra_fields() {
    let src = r#"tool t: Unit -{Read}-> {a: Int, inner: {b: String}};
                 match exec tool t () { Ok(r) => r, Err(e) => {a = 0, inner = {b = e}} }"#;
    let mut h = ScriptedHost::new().answer(
        "t",
        json!({"a": 1, "extra": [1, 2], "inner": {"b": "x", "c": true}}),
    );
    assert_eq!(value_on(src, &mut h), json!({"a": 1, "inner": {"b": "x"}}));
    let mut h = ScriptedHost::new().answer(
        "lookup_account",
        json!({"id": "cust_1", "last_charge_cents": 1500, "email": "a@b.c"}),
    );
    assert_eq!(value_on(LOOKUP, &mut h), json!("cust_1:big"));
    assert_eq!(h.args(), [json!("cust_1")]);
}

#[test]
fn boundary_missing_field_is_an_err() {
    let src = r#"tool t: Unit -{Read}-> {x: Int};
                 match exec tool t () { Ok(r) => "ok", Err(e) => e }"#;
    let mut h = ScriptedHost::new().answer("t", json!({}));
    assert_eq!(
        value_on(src, &mut h),
        json!("tool t returned an invalid result: field x: missing (expected Int)")
    );
    let mut h = ScriptedHost::new().answer("lookup_account", json!({"id": "c"}));
    assert_eq!(
        value_on(LOOKUP, &mut h),
        json!("ERR tool lookup_account returned an invalid result: field last_charge_cents: missing (expected Int)")
    );
}

#[test]
fn boundary_wrong_type_is_an_err() {
    let mut h = ScriptedHost::new().answer(
        "lookup_account",
        json!({"id": "c", "last_charge_cents": "1500"}),
    );
    assert_eq!(
        value_on(LOOKUP, &mut h),
        json!("ERR tool lookup_account returned an invalid result: field last_charge_cents: expected Int, found String")
    );
    let cases: [(&str, Json, &str); 8] = [
        ("Int", json!(3.0), "OK"),
        (
            "Int",
            json!(3.5),
            "tool t returned an invalid result: expected Int, found Float 3.5",
        ),
        (
            "Int",
            json!(null),
            "tool t returned an invalid result: expected Int, found null",
        ),
        ("Unit", json!({}), "OK"),
        (
            "Unit",
            json!(0),
            "tool t returned an invalid result: expected Unit, found Int",
        ),
        (
            "List Int",
            json!([1, "x"]),
            "tool t returned an invalid result: element [1]: expected Int, found String",
        ),
        (
            "{orders: List {amount: Int}}",
            json!({"orders": [{"amount": 1}, {"amount": 2}, {"amount": true}]}),
            "tool t returned an invalid result: field orders[2].amount: expected Int, found Bool",
        ),
        (
            "String",
            json!(["s"]),
            "tool t returned an invalid result: expected String, found a list",
        ),
    ];
    for (ty, answer, expect) in cases {
        let src = format!(
            "tool t: Unit -{{Read}}-> {ty};\nmatch exec tool t () {{ Ok(r) => \"OK\", Err(e) => e }}"
        );
        let mut h = ScriptedHost::new().answer("t", answer.clone());
        assert_eq!(value_on(&src, &mut h), json!(expect), "{ty} from {answer}");
    }
}

#[test]
fn tool_failure_becomes_err_with_its_message() {
    for kind in [
        FailureKind::Failed,
        FailureKind::Crashed,
        FailureKind::TimedOut,
        FailureKind::BadOutput,
        FailureKind::Unavailable,
    ] {
        let msg = format!("tool lookup_account went wrong ({})", kind.as_str());
        let mut h = ScriptedHost::new().fail("lookup_account", kind, &msg);
        assert_eq!(value_on(LOOKUP, &mut h), json!(format!("ERR {msg}")));
        assert_eq!(h.seen.len(), 1);
    }
}

#[test]
fn traverse_calls_in_order_and_stops_at_the_first_err() {
    let src = r#"tool t: Int -{Read}-> String;
                 match traverse (fn x: Int => exec tool t x) [1, 2, 3, 4] {
                   Ok(xs) => fold (fn a: String => fn s: String => a ++ s) "" xs,
                   Err(e) => "stopped: " ++ e
                 }"#;
    let answer = |a: &Json| {
        let n = a.as_i64().unwrap_or(0);
        if n == 3 {
            Err(ToolFailure {
                stderr: None,
                kind: FailureKind::Failed,
                message: "three is bad".into(),
            })
        } else {
            Ok(json!(format!("<{n}>")))
        }
    };
    let mut h = ScriptedHost::new().with("t", answer);
    assert_eq!(value_on(src, &mut h), json!("stopped: three is bad"));
    assert_eq!(
        h.args(),
        [json!(1), json!(2), json!(3)],
        "4 is never called"
    );
    // All Ok: every element, in order.
    let src_ok = src.replace("[1, 2, 3, 4]", "[4, 2, 1]");
    let mut h = ScriptedHost::new().with("t", answer);
    assert_eq!(value_on(&src_ok, &mut h), json!("<4><2><1>"));
    assert_eq!(h.args(), [json!(4), json!(2), json!(1)]);
    // An invalid result stops it too.
    let mut h = ScriptedHost::new().with("t", |a: &Json| {
        if a == &json!(2) {
            Ok(json!(2))
        } else {
            Ok(json!("fine"))
        }
    });
    assert_eq!(
        value_on(src, &mut h),
        json!("stopped: tool t returned an invalid result: expected String, found Int")
    );
    assert_eq!(h.args(), [json!(1), json!(2)]);
}

#[test]
fn map_of_tool_results_inside_traverse() {
    // Each element's call is made, results are post-processed purely.
    let src = r#"tool price: String -{Read}-> {cents: Int};
                 match traverse (fn sku: String => exec tool price sku) ["a", "bb", "ccc"] {
                   Ok(ps) => fold (fn acc: Int => fn p: {cents: Int} => acc + p.cents) 0
                                  (filter (fn p: {cents: Int} => p.cents > 1) ps),
                   Err(e) => -1
                 }"#;
    let mut h = ScriptedHost::new().with("price", |a: &Json| {
        Ok(json!({"cents": a.as_str().map_or(0, str::len)}))
    });
    assert_eq!(value_on(src, &mut h), json!(5));
    assert_eq!(h.args(), [json!("a"), json!("bb"), json!("ccc")]);
}

#[test]
fn gather_issues_its_calls_left_to_right() {
    let src = r#"tool t: Int -{Read}-> Int;
                 tool u: Int -{Read}-> Int;
                 let g = gather {a = exec tool t 1, b = exec tool u 2, c = exec tool t 3} in
                 match g.a { Ok(x) => match g.b { Ok(y) => match g.c { Ok(z) => x * 100 + y * 10 + z,
                                                                      Err(e) => -3 },
                                                 Err(e) => -2 },
                             Err(e) => -1 }"#;
    let ir = lower_src(src);
    assert!(
        ir.nodes.iter().any(|n| n.kind.name() == "gather"),
        "lowered to a gather"
    );
    let mut h = ScriptedHost::new()
        .with("t", |a: &Json| Ok(json!(a.as_i64().unwrap_or(0) + 1)))
        .with("u", |a: &Json| Ok(json!(a.as_i64().unwrap_or(0) + 1)));
    assert_eq!(value_on(src, &mut h), json!(234));
    assert_eq!(h.tools_called(), ["t", "u", "t"]);
    assert_eq!(h.args(), [json!(1), json!(2), json!(3)]);
    // A failing call does not stop the others: each field is its own Result.
    let mut h2 = ScriptedHost::new()
        .fail("t", FailureKind::Failed, "t is down")
        .with("u", |a: &Json| Ok(json!(a.as_i64().unwrap_or(0) + 1)));
    assert_eq!(value_on(src, &mut h2), json!(-1));
    assert_eq!(h2.tools_called(), ["t", "u", "t"]);
    // A plain record of calls is a `record`: λ-Tool's sequential evaluation.
    let plain = src.replace("gather {", "{");
    let ir = lower_src(&plain);
    assert!(
        !ir.nodes.iter().any(|n| n.kind.name() == "gather"),
        "a record"
    );
    let mut h3 = ScriptedHost::new()
        .with("t", |a: &Json| Ok(json!(a.as_i64().unwrap_or(0) + 1)))
        .with("u", |a: &Json| Ok(json!(a.as_i64().unwrap_or(0) + 1)));
    assert_eq!(value_on(&plain, &mut h3), json!(234));
    assert_eq!(h3.tools_called(), ["t", "u", "t"]);
    // Distinct exec nodes → distinct identities, in pre-order.
    let ex = exec_nodes(&ir);
    assert_eq!(
        h.ids(),
        ex.iter().map(|n| format!("n{n}")).collect::<Vec<_>>()
    );
}

#[test]
fn time_left_is_passed_to_the_host() {
    let src = "tool t: Unit -{Read}-> Int;\nmatch exec tool t () { Ok(x) => x, Err(e) => 0 }";
    let mut h = ScriptedHost::new().answer("t", json!(1));
    let limits = Limits {
        timeout: Some(Duration::from_secs(60)),
        ..Limits::default()
    };
    assert_eq!(run_on(src, &mut h, &limits).0, Ok(Value::Int(1)));
    let left = h.seen[0].time_left.expect("a deadline");
    assert!(
        left <= Duration::from_secs(60) && left > Duration::from_secs(50),
        "{left:?}"
    );
    let mut h = ScriptedHost::new().answer("t", json!(1));
    let limits = Limits {
        timeout: None,
        ..Limits::default()
    };
    assert_eq!(run_on(src, &mut h, &limits).0, Ok(Value::Int(1)));
    assert_eq!(h.seen[0].time_left, None);
}

// ---------------------------------------------------------------------------
// Call identities
// ---------------------------------------------------------------------------

fn ids_of(src: &str, host: impl Fn() -> ScriptedHost) -> Vec<String> {
    let mut h = host();
    let (r, _) = run_on(src, &mut h, &Limits::default());
    r.unwrap_or_else(|e| panic!("run failed: {e:?}"));
    h.ids()
}

fn for_each_nodes(ir: &Ir) -> Vec<NodeId> {
    nodes_where(ir, |k| {
        matches!(
            k,
            NodeKind::ForEach {
                mode: ForEachMode::Traverse,
                ..
            }
        )
    })
}

#[test]
fn call_ids_are_stable_across_runs() {
    let src = r#"tool t: Int -{Read}-> Int;
                 let f = fn x: Int => exec tool t x in
                 match traverse f [1, 2, 3] {
                   Ok(xs) => match f 10 { Ok(y) => y + fold (fn a: Int => fn b: Int => a + b) 0 xs,
                                          Err(e) => 0 },
                   Err(e) => 0
                 }"#;
    let host = || ScriptedHost::new().with("t", |a: &Json| Ok(a.clone()));
    let first = ids_of(src, host);
    let second = ids_of(src, host);
    assert_eq!(first.len(), 4);
    assert_eq!(first, second);
    let unique: std::collections::BTreeSet<&String> = first.iter().collect();
    assert_eq!(unique.len(), 4, "{first:?}");
}

#[test]
fn call_ids_distinguish_iterations() {
    let src = r#"tool t: Int -{Read}-> Int;
                 match traverse (fn x: Int => exec tool t x) [1, 2, 3] {
                   Ok(xs) => xs, Err(e) => []
                 }"#;
    let ir = lower_src(src);
    let [e] = exec_nodes(&ir)[..] else {
        panic!("one exec node")
    };
    let [fe] = for_each_nodes(&ir)[..] else {
        panic!("one traverse")
    };
    let ids = ids_of(src, || {
        ScriptedHost::new().with("t", |a: &Json| Ok(a.clone()))
    });
    assert_eq!(
        ids,
        [
            format!("n{e}[n{fe}:0]"),
            format!("n{e}[n{fe}:1]"),
            format!("n{e}[n{fe}:2]")
        ]
    );
}

#[test]
fn call_ids_distinguish_nested_iterations() {
    let src = r#"tool t: Int -{Read}-> Int;
                 match traverse (fn xs: List Int => traverse (fn x: Int => exec tool t x) xs)
                                [[1, 2], [3]] {
                   Ok(xss) => xss, Err(e) => []
                 }"#;
    let ir = lower_src(src);
    let [e] = exec_nodes(&ir)[..] else {
        panic!("one exec node")
    };
    let [outer, inner] = for_each_nodes(&ir)[..] else {
        panic!("two traverses")
    };
    let mut h = ScriptedHost::new().with("t", |a: &Json| Ok(a.clone()));
    assert_eq!(value_on(src, &mut h), json!([[1, 2], [3]]));
    assert_eq!(
        h.ids(),
        [
            format!("n{e}[n{outer}:0,n{inner}:0]"),
            format!("n{e}[n{outer}:0,n{inner}:1]"),
            format!("n{e}[n{outer}:1,n{inner}:0]"),
        ]
    );
}

#[test]
fn call_ids_distinguish_application_sites() {
    let src = r#"tool t: Int -{Read}-> Int;
                 let f = fn x: Int => exec tool t x in
                 let r1 = f 1 in
                 let r2 = f 2 in
                 match r1 {
                   Ok(a) => match r2 { Ok(b) => a + b, Err(e) => 0 },
                   Err(e) => match r2 { Ok(b) => b, Err(e2) => 0 }
                 }"#;
    let ir = lower_src(src);
    let [e] = exec_nodes(&ir)[..] else {
        panic!("one exec node")
    };
    let applies = nodes_where(&ir, |k| matches!(k, NodeKind::Apply(..)));
    assert_eq!(applies.len(), 2);
    let mut h = ScriptedHost::new().with("t", |a: &Json| Ok(a.clone()));
    assert_eq!(value_on(src, &mut h), json!(3));
    assert_eq!(
        h.ids(),
        [
            format!("n{e}[n{}]", applies[0]),
            format!("n{e}[n{}]", applies[1])
        ]
    );
}

#[test]
fn call_ids_of_fold_iterations_and_applications_combine() {
    // A call in a function applied inside a traverse callback: the item step
    // then the application step.
    let src = r#"tool t: Int -{Read}-> Int;
                 let call = fn x: Int => exec tool t x in
                 match traverse (fn x: Int => call (x * 10)) [1, 2] {
                   Ok(xs) => xs, Err(e) => []
                 }"#;
    let ir = lower_src(src);
    let [e] = exec_nodes(&ir)[..] else {
        panic!("one exec node")
    };
    let [fe] = for_each_nodes(&ir)[..] else {
        panic!("one traverse")
    };
    let applies = nodes_where(&ir, |k| matches!(k, NodeKind::Apply(..)));
    let [ap] = applies[..] else {
        panic!("one application: {applies:?}")
    };
    let mut h = ScriptedHost::new().with("t", |a: &Json| Ok(a.clone()));
    assert_eq!(value_on(src, &mut h), json!([10, 20]));
    assert_eq!(
        h.ids(),
        [
            format!("n{e}[n{fe}:0,n{ap}]"),
            format!("n{e}[n{fe}:1,n{ap}]")
        ]
    );
}

// ---------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------

#[test]
fn step_limit() {
    let src = "map (fn x: Int => x + 1) [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]";
    let mut h = ScriptedHost::new();
    let (ok, stats) = run_on(src, &mut h, &Limits::default());
    assert_eq!(
        ok.map(|v| v.to_json()),
        Ok(json!([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]))
    );
    assert!(stats.steps > 20, "{stats:?}");
    let limits = Limits {
        max_steps: stats.steps - 1,
        ..Limits::default()
    };
    let mut h = ScriptedHost::new();
    let (r, stats2) = run_on(src, &mut h, &limits);
    let e = r.expect_err("one step short");
    assert_eq!(e.kind, RunErrorKind::StepLimit);
    assert_eq!(
        e.message,
        format!("step limit of {} exceeded", stats.steps - 1)
    );
    assert_eq!(
        e.help.as_deref(),
        Some("the program does more work than allowed; raise the limit with --max-steps N")
    );
    assert!(stats2.steps > stats.steps - 1, "{stats2:?}");
    // Every smaller limit stops the run too; the fuel used is past it.
    for max in 0..stats.steps {
        let limits = Limits {
            max_steps: max,
            ..Limits::default()
        };
        let (r, used) = run_on(src, &mut ScriptedHost::new(), &limits);
        assert_eq!(
            r.map_err(|e| e.kind),
            Err(RunErrorKind::StepLimit),
            "max_steps {max}"
        );
        assert!(used.steps > max, "max_steps {max}: {used:?}");
    }
    // Exactly enough fuel is enough.
    let limits = Limits {
        max_steps: stats.steps,
        ..Limits::default()
    };
    assert!(run_on(src, &mut ScriptedHost::new(), &limits).0.is_ok());
}

#[test]
fn step_limit_while_comparing_values() {
    // `==` on big shared values charges per node compared.
    // Two equal values that share nothing (sharing short-cuts the comparison):
    // 1 + 8 + 64 + 512 + 4096 nodes each.
    let src = "let a = [1, 1, 1, 1, 1, 1, 1, 1] in let b = [a, a, a, a, a, a, a, a] in \
               let c = [b, b, b, b, b, b, b, b] in let d = [c, c, c, c, c, c, c, c] in \
               let a2 = [1, 1, 1, 1, 1, 1, 1, 1] in let b2 = [a2, a2, a2, a2, a2, a2, a2, a2] in \
               let c2 = [b2, b2, b2, b2, b2, b2, b2, b2] in \
               let d2 = [c2, c2, c2, c2, c2, c2, c2, c2] in d == d2";
    assert_eq!(value(src), Value::Bool(true));
    let e = run_error(
        src,
        &Limits {
            max_steps: 1000,
            ..Limits::default()
        },
    );
    assert_eq!(e.kind, RunErrorKind::StepLimit);
    assert_eq!(
        e.message,
        "step limit of 1000 exceeded while comparing values"
    );
    assert_eq!(text_at(src, &e), "d == d2");
}

#[test]
fn call_limit_stops_before_the_call() {
    let src = r#"tool t: Int -{Read}-> Int;
                 match traverse (fn x: Int => exec tool t x) [1, 2, 3, 4, 5] {
                   Ok(xs) => 0, Err(e) => 1
                 }"#;
    let mut h = ScriptedHost::new().with("t", |a: &Json| Ok(a.clone()));
    let limits = Limits {
        max_calls: 2,
        ..Limits::default()
    };
    let (r, stats) = run_on(src, &mut h, &limits);
    let e = r.expect_err("call limit");
    assert_eq!(e.kind, RunErrorKind::CallLimit);
    assert_eq!(e.message, "tool call limit of 2 reached before calling t");
    assert_eq!(
        e.help.as_deref(),
        Some("raise the limit with --max-calls N")
    );
    assert_eq!(text_at(src, &e), "exec tool t x");
    assert_eq!(stats.calls, 2);
    assert_eq!(
        h.args(),
        [json!(1), json!(2)],
        "the third call was not made"
    );
    // Exactly five calls allowed: fine.
    let mut h = ScriptedHost::new().with("t", |a: &Json| Ok(a.clone()));
    let limits = Limits {
        max_calls: 5,
        ..Limits::default()
    };
    let (r, stats) = run_on(src, &mut h, &limits);
    assert_eq!(r, Ok(Value::Int(0)));
    assert_eq!(stats.calls, 5);
    // Zero calls allowed.
    let mut h = ScriptedHost::new().with("t", |a: &Json| Ok(a.clone()));
    let limits = Limits {
        max_calls: 0,
        ..Limits::default()
    };
    let (r, _) = run_on(src, &mut h, &limits);
    assert_eq!(r.map_err(|e| e.kind), Err(RunErrorKind::CallLimit));
    assert!(h.seen.is_empty());
}

#[test]
fn timeout_during_a_slow_tool_call() {
    let src = r#"tool t: Int -{Read}-> Int;
                 match traverse (fn x: Int => exec tool t x) [1, 2, 3] {
                   Ok(xs) => 0, Err(e) => 1
                 }"#;
    let mut h = ScriptedHost::new()
        .with("t", |a: &Json| Ok(a.clone()))
        .sleeping(Duration::from_millis(150));
    let limits = Limits {
        timeout: Some(Duration::from_millis(50)),
        ..Limits::default()
    };
    let (r, stats) = run_on(src, &mut h, &limits);
    let e = r.expect_err("timeout");
    assert_eq!(e.kind, RunErrorKind::Timeout);
    assert_eq!(e.message, "the run exceeded its time limit of 50 ms");
    assert_eq!(stats.calls, 1, "stopped after the slow call");
    assert_eq!(h.seen.len(), 1);
    let left = h.seen[0].time_left.expect("deadline");
    assert!(left <= Duration::from_millis(50), "{left:?}");
}

#[test]
fn timeout_during_pure_work() {
    // Folds nested 8 deep over a list of 10: 10^8 iterations, far more than
    // 30 ms of work (and more than the default fuel, were it not stopped).
    let mut body = String::from("0");
    for k in (0..8).rev() {
        body = format!("fold (fn a{k}: Int => fn x{k}: Int => a{k} + x{k} + {body}) 0 xs");
    }
    let src = format!("let xs = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] in {body}");
    let limits = Limits {
        timeout: Some(Duration::from_millis(30)),
        max_steps: u64::MAX,
        ..Limits::default()
    };
    let checked = check_source(&src).into_checked().expect("checked");
    let ir = lower(&checked).expect("lowered");
    let started = std::time::Instant::now();
    let (r, stats) = run(&ir, &mut ScriptedHost::new(), &limits);
    let elapsed = started.elapsed();
    let e = r.expect_err("stopped by the clock");
    assert_eq!(e.kind, RunErrorKind::Timeout);
    assert_eq!(e.message, "the run exceeded its time limit of 30 ms");
    assert!(stats.steps > 0);
    assert!(
        elapsed < Duration::from_secs(2),
        "stopped promptly: {elapsed:?}"
    );
}

#[test]
fn division_by_zero() {
    // Total arithmetic (docs/language/reference.md#arithmetic): dividing by
    // zero is 0 for Int and 0.0 for Float, never a run error.
    assert_eq!(
        value("let x = 5 in let y = x - 5 in 10 + x / y"),
        Value::Int(10)
    );
    assert_eq!(value("let n = 7 in n % (n - n)"), Value::Int(0));
    assert_eq!(value("1.5 / 0.0"), Value::Float(0.0));
    assert_eq!(value("1.5 % 0.0"), Value::Float(0.0));
    assert_eq!(
        value("map (fn d: Int => 100 / d) [5, 0, 1]"),
        Value::List(vec![Value::Int(20), Value::Int(0), Value::Int(100)].into())
    );
    // i64::MIN / -1 does not fit: the number-range limit, at the operator.
    let src = "let m = 0 - 9223372036854775807 - 1 in m / (0 - 1)";
    let e = run_error(src, &Limits::default());
    assert_eq!(e.kind, RunErrorKind::Arithmetic);
    assert_eq!(text_at(src, &e), "m / (0 - 1)");
    // A Float result that is not finite is the same limit.
    let e = run_error("1.0e308 * 10.0", &Limits::default());
    assert_eq!(e.kind, RunErrorKind::Arithmetic);
}

#[test]
fn integer_overflow() {
    for (src, op_text, message) in [
        (
            "let m = 9223372036854775807 in m + 1",
            "m + 1",
            "integer overflow: 9223372036854775807 + 1",
        ),
        (
            "let m = -9223372036854775807 in m - 2",
            "m - 2",
            "integer overflow: -9223372036854775807 - 2",
        ),
        (
            "let m = 4294967296 in m * m",
            "m * m",
            "integer overflow: 4294967296 * 4294967296",
        ),
        (
            "let m = -9223372036854775807 - 1 in m / -1",
            "m / -1",
            "integer overflow: -9223372036854775808 / -1",
        ),
        (
            "let m = -9223372036854775807 - 1 in -m",
            "-m",
            "integer overflow: -(-9223372036854775808)",
        ),
        (
            "fold (fn a: Int => fn x: Int => a * x) 1 [1000000, 1000000, 1000000, 1000000]",
            "a * x",
            "integer overflow: 1000000000000000000 * 1000000",
        ),
    ] {
        let e = run_error(src, &Limits::default());
        assert_eq!(e.kind, RunErrorKind::Arithmetic, "{src}");
        assert_eq!(e.message, message, "{src}");
        assert_eq!(text_at(src, &e), op_text, "{src}");
    }
}

#[test]
fn string_size_limit() {
    // Doubling a string with `++` until it passes the limit.
    let mut src = String::from("let s0 = \"abcdefgh\" in\n");
    for i in 1..=10 {
        src.push_str(&format!("let s{i} = s{} ++ s{} in\n", i - 1, i - 1));
    }
    src.push_str("s10");
    assert_eq!(value(&src), str_value(&"abcdefgh".repeat(1024)));
    let limits = Limits {
        max_string_bytes: 4096,
        ..Limits::default()
    };
    let e = run_error(&src, &limits);
    assert_eq!(e.kind, RunErrorKind::SizeLimit);
    assert_eq!(
        e.message,
        "`++` would build a string of 8192 bytes, more than the limit of 4096"
    );
    assert_eq!(text_at(&src, &e), "s9 ++ s9");
    // Default limit (16 MiB): 8 bytes doubled 22 times is 32 MiB.
    let mut src = String::from("let s0 = \"abcdefgh\" in\n");
    for i in 1..=22 {
        src.push_str(&format!("let s{i} = s{} ++ s{} in\n", i - 1, i - 1));
    }
    src.push_str("s22");
    let e = run_error(&src, &Limits::default());
    assert_eq!(e.kind, RunErrorKind::SizeLimit);
    assert_eq!(
        e.message,
        "`++` would build a string of 33554432 bytes, more than the limit of 16777216"
    );
}

/// `let a0 = [1,1,1,1] in let a1 = [a0,a0,a0,a0] in … a{depth}`.
fn quadrupled(depth: usize) -> String {
    let mut src = String::from("let a0 = [1, 1, 1, 1] in\n");
    for i in 1..=depth {
        let p = i - 1;
        src.push_str(&format!("let a{i} = [a{p}, a{p}, a{p}, a{p}] in\n"));
    }
    src
}

#[test]
fn value_size_limit_on_the_program_value() {
    // 4^16 ≈ 4.3 billion leaves, built in a few dozen steps.
    let src = quadrupled(15) + "a15";
    let started = std::time::Instant::now();
    let e = run_error(&src, &Limits::default());
    assert_eq!(e.kind, RunErrorKind::SizeLimit);
    assert_eq!(
        e.message,
        "the program's value has more than 10000000 parts"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // A small one is fine and has exactly its parts.
    let src = quadrupled(1) + "a1";
    assert_eq!(
        json_of(&src),
        json!([[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]])
    );
    let limits = Limits {
        max_value_nodes: 20,
        ..Limits::default()
    };
    // 1 + 4 + 16 = 21 nodes.
    let e = run_error(&src, &limits);
    assert_eq!(e.kind, RunErrorKind::SizeLimit);
    assert_eq!(e.message, "the program's value has more than 20 parts");
    let limits = Limits {
        max_value_nodes: 21,
        ..Limits::default()
    };
    let mut h = ScriptedHost::new();
    assert!(run_on(&src, &mut h, &limits).0.is_ok());
}

#[test]
fn value_size_limit_on_a_tool_argument() {
    let src = "tool t: List (List (List (List (List (List (List (List (List (List (List (List \
               (List (List (List (List Int))))))))))))))) -{Write}-> Int;\n"
        .to_string()
        + &quadrupled(15)
        + "match exec tool t a15 { Ok(n) => n, Err(e) => 0 }";
    let mut h = ScriptedHost::new().answer("t", json!(1));
    let (r, stats) = run_on(&src, &mut h, &Limits::default());
    let e = r.expect_err("size limit");
    assert_eq!(e.kind, RunErrorKind::SizeLimit);
    assert_eq!(e.message, "the argument of t has more than 10000000 parts");
    assert_eq!(text_at(&src, &e), "exec tool t a15");
    assert!(h.seen.is_empty(), "the call was not made");
    assert_eq!(stats.calls, 0);
}

#[test]
fn list_length_limit_on_a_tool_result_is_an_err_value() {
    let src = r#"tool t: Unit -{Read}-> {items: List Int};
                 match exec tool t () { Ok(r) => "ok", Err(e) => e }"#;
    let limits = Limits {
        max_list_len: 3,
        ..Limits::default()
    };
    let mut h = ScriptedHost::new().answer("t", json!({"items": [1, 2, 3, 4, 5]}));
    let (r, _) = run_on(src, &mut h, &limits);
    assert_eq!(
        r.map(|v| v.to_json()),
        Ok(json!(
            "tool t returned an invalid result: a list of 5 items, more than the limit of 3"
        ))
    );
    let mut h = ScriptedHost::new().answer("t", json!({"items": [1, 2, 3]}));
    let (r, _) = run_on(src, &mut h, &limits);
    assert_eq!(r.map(|v| v.to_json()), Ok(json!("ok")));
    // Lists in fields the type does not declare are bounded too.
    let mut h = ScriptedHost::new().answer("t", json!({"items": [], "junk": [0, 0, 0, 0]}));
    let (r, _) = run_on(src, &mut h, &limits);
    assert_eq!(
        r.map(|v| v.to_json()),
        Ok(json!(
            "tool t returned an invalid result: a list of 4 items, more than the limit of 3"
        ))
    );
}

#[test]
fn value_count_limit_on_a_tool_result_is_an_err_value() {
    let src = r#"tool t: Unit -{Read}-> List (List Int);
                 match exec tool t () { Ok(r) => "ok", Err(e) => e }"#;
    let limits = Limits {
        max_value_nodes: 20,
        ..Limits::default()
    };
    // 1 outer list + 5 inner lists + 15 Ints = 21 values.
    let mut h = ScriptedHost::new().answer(
        "t",
        json!([[1, 1, 1], [1, 1, 1], [1, 1, 1], [1, 1, 1], [1, 1, 1]]),
    );
    let (r, _) = run_on(src, &mut h, &limits);
    assert_eq!(
        r.map(|v| v.to_json()),
        Ok(json!(
            "tool t returned an invalid result: more than 20 values in all"
        ))
    );
}

#[test]
fn strings_built_by_concatenation_are_bounded_in_total() {
    // Each string stays under the per-string limit, but together they pass
    // the run's budget: a size_limit stop, not unbounded memory.
    let mut src = String::from("let s0 = \"abcdefgh\" in\n");
    for i in 1..=7 {
        src.push_str(&format!("let s{i} = s{} ++ s{} in\n", i - 1, i - 1));
    }
    // s7 is 1 KiB; 100 copies built by `map` are 100 KiB.
    src.push_str("let big = map (fn i: Int => s7 ++ s7) [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49] in\n");
    src.push_str("fold (fn n: Int => fn x: String => n + 1) 0 big");
    assert_eq!(value(&src), Value::Int(50));
    let limits = Limits {
        max_string_total_bytes: 50_000,
        ..Limits::default()
    };
    let e = run_error(&src, &limits);
    assert_eq!(e.kind, RunErrorKind::SizeLimit);
    assert_eq!(
        e.message,
        "the strings built by `++` add up to more than 50000 bytes"
    );
    assert_eq!(text_at(&src, &e), "s7 ++ s7");
}

#[test]
fn concatenation_is_charged_by_length() {
    // Building a long string in a fold is charged for the bytes it copies,
    // so the step limit stops quadratic string building.
    let xs = vec!["\"abcdefgh\""; 2_000].join(", ");
    let src = format!(
        "let s = fold (fn acc: String => fn x: String => acc ++ x) \"\" [{xs}] in s == \"\""
    );
    let mut host = ScriptedHost::new();
    let (r, stats) = run_on(&src, &mut host, &Limits::default());
    assert_eq!(r, Ok(Value::Bool(false)));
    // The strings copied add up to about 8 * 2000^2 / 2 = 16 MB: 250,000 steps.
    assert!(stats.steps > 200_000, "{}", stats.steps);
    let limits = Limits {
        max_steps: 100_000,
        ..Limits::default()
    };
    assert_eq!(run_error(&src, &limits).kind, RunErrorKind::StepLimit);
}

// ---------------------------------------------------------------------------
// Deep and long programs
// ---------------------------------------------------------------------------

/// Runs `f` on a thread with `stack` bytes of stack and returns its result;
/// panics if it panicked (a stack overflow aborts the whole test binary).
fn on_thread<T: Send + 'static>(stack: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("the thread panicked")
}

const MIB: usize = 1024 * 1024;

/// A program's value as its JSON text, computed on the current thread.
fn run_to_json_text(src: String) -> String {
    let checked = check_source(&src)
        .into_checked()
        .unwrap_or_else(|d| panic!("rejected: {:?}", d.first().map(|d| d.message.clone())));
    let ir = lower(&checked).expect("lowered");
    let mut h = ScriptedHost::new();
    let (r, _) = run(&ir, &mut h, &Limits::default());
    r.expect("ran").to_json().to_string()
}

fn long_let_chain(n: usize) -> String {
    let mut src = String::from("let x0 = 0 in\n");
    for i in 1..n {
        src.push_str(&format!("let x{i} = x{} + 1 in\n", i - 1));
    }
    src.push_str(&format!("x{}", n - 1));
    src
}

fn function_chain(n: usize) -> String {
    let mut src = String::from("let f0 = fn x: Int => x + 1 in\n");
    for i in 1..n {
        src.push_str(&format!("let f{i} = fn x: Int => f{} x in\n", i - 1));
    }
    src.push_str(&format!("f{} 41", n - 1));
    src
}

/// `1 + (1 + (1 + … (1) …))`, `depth` additions deep.
fn nested_additions(depth: usize) -> String {
    let mut src = String::new();
    for _ in 0..depth {
        src.push_str("1 + (");
    }
    src.push('1');
    for _ in 0..depth {
        src.push(')');
    }
    src
}

/// `if true then (if true then … 7 … else 0) else 0`, nested `depth` times
/// (two nesting levels each: the `if` and the parentheses).
fn nested_ifs(depth: usize) -> String {
    let mut src = String::new();
    for _ in 0..depth {
        src.push_str("if true then (");
    }
    src.push('7');
    for _ in 0..depth {
        src.push_str(") else 0");
    }
    src
}

/// `let v = (let v = (… 3 …) in v + 1) in v + 1`, `depth` times (two
/// nesting levels each).
fn nested_let_values(depth: usize) -> String {
    let mut src = String::new();
    for _ in 0..depth {
        src.push_str("let v = (");
    }
    src.push('3');
    for _ in 0..depth {
        src.push_str(") in v + 1");
    }
    src
}

/// `[[[…[5]…]]]`, `depth` lists deep.
fn nested_lists(depth: usize) -> String {
    "[".repeat(depth) + "5" + &"]".repeat(depth)
}

fn nested_list_json(depth: usize) -> String {
    "[".repeat(depth) + "5" + &"]".repeat(depth)
}

#[test]
fn long_let_chain_on_an_8mib_thread() {
    let out = on_thread(8 * MIB, || run_to_json_text(long_let_chain(20_000)));
    assert_eq!(out, "19999");
}

#[test]
fn function_chain_on_an_8mib_thread() {
    let out = on_thread(8 * MIB, || run_to_json_text(function_chain(5_000)));
    assert_eq!(out, "42");
}

#[test]
fn deep_nesting_on_an_8mib_thread() {
    let out = on_thread(8 * MIB, || {
        [
            run_to_json_text(nested_additions(900)),
            run_to_json_text(nested_ifs(450)),
            run_to_json_text(nested_let_values(450)),
            run_to_json_text(nested_lists(900)),
        ]
    });
    assert_eq!(out[0], "901");
    assert_eq!(out[1], "7");
    assert_eq!(out[2], "453");
    assert_eq!(out[3], nested_list_json(900));
}

#[test]
fn long_let_chain_on_a_2mib_thread() {
    let out = on_thread(2 * MIB, || run_to_json_text(long_let_chain(20_000)));
    assert_eq!(out, "19999");
}

#[test]
fn function_chain_on_a_2mib_thread() {
    let out = on_thread(2 * MIB, || run_to_json_text(function_chain(5_000)));
    assert_eq!(out, "42");
}

#[test]
fn deep_nesting_on_a_2mib_thread() {
    let out = on_thread(2 * MIB, || {
        [
            run_to_json_text(nested_additions(900)),
            run_to_json_text(nested_ifs(450)),
            run_to_json_text(nested_let_values(450)),
            run_to_json_text(nested_lists(900)),
        ]
    });
    assert_eq!(out[0], "901");
    assert_eq!(out[1], "7");
    assert_eq!(out[2], "453");
    assert_eq!(out[3], nested_list_json(900));
}

#[test]
fn deep_data_through_a_tool_on_an_8mib_thread() {
    // A deeply nested argument is encoded, and a deeply nested result decoded.
    let out = on_thread(8 * MIB, || {
        let depth = 100;
        let ty = "List (".repeat(depth) + "Int" + &")".repeat(depth);
        let src = format!(
            "tool t: {ty} -{{Read}}-> {ty};\nmatch exec tool t {} {{ Ok(v) => v, Err(e) => {} }}",
            nested_lists(depth),
            "[".repeat(depth) + "]" + &"]".repeat(depth - 1)
        );
        let checked = check_source(&src).into_checked().expect("checked");
        let ir = lower(&checked).expect("lowered");
        let mut h = ScriptedHost::new().with("t", |a: &Json| Ok(a.clone()));
        let (r, _) = run(&ir, &mut h, &Limits::default());
        (
            r.expect("ran").to_json().to_string(),
            h.args()[0].to_string(),
        )
    });
    assert_eq!(out.0, nested_list_json(100));
    assert_eq!(out.1, nested_list_json(100));
}

/// `fold` building a closure per element, each holding the previous one
/// (a chain `n` long), then applying the last: `n` nested calls.
fn closure_chain(n: usize) -> String {
    let xs = vec!["1"; n].join(", ");
    format!(
        "let h = fold (fn f: Int -> Int => fn n: Int => fn x: Int => f x + n) \
                      (fn x: Int => x) [{xs}] in h 0"
    )
}

#[test]
fn closure_chain_on_an_8mib_thread() {
    let out = on_thread(8 * MIB, || run_to_json_text(closure_chain(10_000)));
    assert_eq!(out, "10000");
}

#[test]
fn long_closure_chain_on_an_8mib_thread() {
    let out = on_thread(8 * MIB, || run_to_json_text(closure_chain(100_000)));
    assert_eq!(out, "100000");
}

/// Programs nested close to the parser's limit of 1000 levels, one per kind
/// of node, with their values as JSON text.
fn deep_programs() -> Vec<(&'static str, String, String)> {
    let n = 990;
    let params: String = (0..n).map(|i| format!("fn x{i}: Int => ")).collect();
    let deep_record = "{a = ".repeat(998) + "1" + &"}".repeat(998);
    vec![
        ("additions", nested_additions(999), "1000".to_string()),
        (
            "applications",
            "(fn x: Int => ".repeat(499) + "x + 1" + &") 1".repeat(499),
            "2".to_string(),
        ),
        (
            "records",
            "{a = ".repeat(999) + "1" + &"}".repeat(999),
            "{\"a\":".repeat(999) + "1" + &"}".repeat(999),
        ),
        (
            "record equality",
            format!("let r = {deep_record} in r == r"),
            "true".to_string(),
        ),
        ("negations", "-".repeat(999) + "1", "-1".to_string()),
        (
            "a 990-parameter lambda",
            format!("let f = {params} x0 + x{} in f{}", n - 1, " 2".repeat(n)),
            "4".to_string(),
        ),
        (
            "conjunctions",
            "true && (".repeat(999) + "true" + &")".repeat(999),
            "true".to_string(),
        ),
        ("lists", nested_lists(999), nested_list_json(999)),
        ("ifs", nested_ifs(499), "7".to_string()),
        ("let values", nested_let_values(499), "502".to_string()),
    ]
}

#[test]
fn deep_programs_of_every_kind_on_a_2mib_thread() {
    for (name, src, expect) in deep_programs() {
        let out = on_thread(2 * MIB, move || run_to_json_text(src));
        assert_eq!(out, expect, "{name}");
    }
}

#[test]
fn deep_programs_of_every_kind_on_an_8mib_thread() {
    for (name, src, expect) in deep_programs() {
        let out = on_thread(8 * MIB, move || run_to_json_text(src));
        assert_eq!(out, expect, "{name}");
    }
}

fn deep_field_chain(depth: usize) -> String {
    "let r = ".to_string()
        + &"{a = ".repeat(depth)
        + "1"
        + &"}".repeat(depth)
        + " in r"
        + &".a".repeat(depth)
}

#[test]
fn deep_field_chain_on_an_8mib_thread() {
    let out = on_thread(8 * MIB, || run_to_json_text(deep_field_chain(100)));
    assert_eq!(out, "1");
}

#[test]
fn remainder_of_the_smallest_int_by_minus_one_is_zero() {
    // The machine instruction overflows; the value (0) fits, so it is no error.
    assert_eq!(
        run_to_json_text("let m = -9223372036854775807 - 1 in m % -1".to_string()),
        "0"
    );
    assert_eq!(
        run_to_json_text("let m = -9223372036854775807 - 1 in let n = -1 in m % n".to_string()),
        "0"
    );
}

/// The checker still drops (and, in places, walks) deep types recursively:
/// a 998-deep record type needs more than 8 MiB in a debug build. The `lt`
/// binary runs on a 256 MiB thread; library users checking such programs
/// need a large stack too.
#[test]
fn very_deep_field_chain_on_a_64mib_thread() {
    let out = on_thread(64 * MIB, || run_to_json_text(deep_field_chain(998)));
    assert_eq!(out, "1");
}

// ---------------------------------------------------------------------------
// More builtin shapes
// ---------------------------------------------------------------------------

#[test]
fn builtins_applied_to_more_arguments_than_they_take() {
    // `fold` returning a function, applied at once to one more argument.
    assert_eq!(
        value(
            "fold (fn f: Int -> Int => fn n: Int => fn x: Int => f x * 10 + n) \
                  (fn x: Int => x) [1, 2, 3] 4"
        ),
        Value::Int(4123)
    );
}

#[test]
fn partial_builtins_keep_the_values_they_were_given() {
    // The callback is the one in scope when `map g` was written.
    assert_eq!(
        json_of(
            "let g = fn x: Int => x + 1 in let m = map g in \
             let g = fn x: Int => x * 100 in m [1, 2]"
        ),
        json!([2, 3])
    );
    // A partial builtin built inside a function captures its locals.
    assert_eq!(
        json_of(
            "let k = 10 in let mk = fn d: Int => map (fn x: Int => x + d + k) in \
             let add1 = mk 1 in let add2 = mk 2 in {a = add1 [1, 2], b = add2 [0]}"
        ),
        json!({"a": [12, 13], "b": [12]})
    );
    // A partial builtin as the callback of another builtin.
    assert_eq!(
        json_of("map (filter (fn x: Int => x > 1)) [[1, 2], [3, 0], []]"),
        json!([[2], [3], []])
    );
    assert_eq!(
        json_of("map (map (fn x: Int => x * 2)) [[1], [2, 3]]"),
        json!([[2], [4, 6]])
    );
}

#[test]
fn partial_traverse_with_a_tool() {
    let src = r#"tool t: Int -{Read}-> Int;
                 let each = traverse (fn x: Int => exec tool t x) in
                 let sum = fold (fn s: Int => fn x: Int => s + x) 0 in
                 match each [1, 2] {
                   Ok(a) => match each [3] { Ok(b) => sum a * 100 + sum b, Err(e) => 0 },
                   Err(e) => match each [4] { Ok(b) => 0, Err(e2) => 0 }
                 }"#;
    let host = || ScriptedHost::new().with("t", |a: &Json| Ok(json!(a.as_i64().unwrap_or(0) * 2)));
    let mut h = host();
    assert_eq!(value_on(src, &mut h), json!(606));
    assert_eq!(h.args(), [json!(1), json!(2), json!(3)]);
    let ids = h.ids();
    let unique: std::collections::BTreeSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), 3, "{ids:?}");
    let mut again = host();
    value_on(src, &mut again);
    assert_eq!(again.ids(), ids, "stable across runs");
}

#[test]
fn linear_values_flow_through_tools() {
    let src = r#"tool get_token: Unit -{Read}-> !String;
                 tool spend: {token: !String, amount: Int} -{Write}-> {ok: Bool};
                 match exec tool get_token () {
                   Ok(tok) => match exec tool spend {token = tok, amount = 5} {
                     Ok(r) => r.ok, Err(e) => false },
                   Err(e) => false
                 }"#;
    let mut h = ScriptedHost::new()
        .answer("get_token", json!("tok_1"))
        .answer("spend", json!({"ok": true}));
    assert_eq!(value_on(src, &mut h), json!(true));
    assert_eq!(
        h.args(),
        [Json::Null, json!({"token": "tok_1", "amount": 5})]
    );
}

#[test]
fn list_length_limit_applies_to_tool_results_only() {
    // Programs cannot grow lists (documented): a literal is as long as written.
    let limits = Limits {
        max_list_len: 3,
        ..Limits::default()
    };
    let mut h = ScriptedHost::new();
    let (r, _) = run_on("map (fn x: Int => x) [1, 2, 3, 4, 5]", &mut h, &limits);
    assert_eq!(r.map(|v| v.to_json()), Ok(json!([1, 2, 3, 4, 5])));
}

#[test]
fn tool_records_compare_equal_to_literals_in_any_field_order() {
    let src = r#"tool t: Unit -{Read}-> {a: Int, b: {c: String, d: List Int}};
                 match exec tool t () {
                   Ok(r) => r == {b = {d = [1, 2], c = "x"}, a = 1},
                   Err(e) => false
                 }"#;
    let mut h =
        ScriptedHost::new().answer("t", json!({"b": {"d": [1, 2], "c": "x", "z": 0}, "a": 1}));
    assert_eq!(value_on(src, &mut h), json!(true));
    let mut h = ScriptedHost::new().answer("t", json!({"b": {"d": [1], "c": "x"}, "a": 1}));
    assert_eq!(value_on(src, &mut h), json!(false));
}

#[test]
fn string_limit_counts_bytes() {
    let limits = Limits {
        max_string_bytes: 5,
        ..Limits::default()
    };
    // "é" is two bytes: 3 characters, 6 bytes.
    let e = run_error(r#"let s = "é" in s ++ s ++ s"#, &limits);
    assert_eq!(e.kind, RunErrorKind::SizeLimit);
    assert_eq!(
        e.message,
        "`++` would build a string of 6 bytes, more than the limit of 5"
    );
    let mut h = ScriptedHost::new();
    assert_eq!(
        run_on(r#"let s = "é" in s ++ "abc""#, &mut h, &limits).0,
        Ok(str_value("éabc"))
    );
}

#[test]
fn function_values_print_as_placeholders() {
    assert_eq!(shown("fn x: Int => x"), "<function>");
    assert_eq!(json_of("fn x: Int => x"), json!("<function>"));
    assert_eq!(
        shown("{f = fn x: Int => x, n = 1}"),
        "{f = <function>, n = 1}"
    );
    assert_eq!(
        json_of("map (fn x: Int => fn y: Int => x + y) [1, 2]"),
        json!(["<function>", "<function>"])
    );
}

#[test]
fn closures_created_in_loops_keep_their_own_values() {
    assert_eq!(
        json_of(
            "let fs = map (fn n: Int => let k = n * 2 in fn x: Int => x + k) [1, 2, 3] in \
             map (fn f: Int -> Int => f 0) fs"
        ),
        json!([2, 4, 6])
    );
    // Inner callbacks capture the outer callback's parameter and a capture of it.
    assert_eq!(
        json_of("let k = 5 in map (fn x: Int => map (fn y: Int => x + y + k) [1, 2]) [10, 20]"),
        json!([[16, 17], [26, 27]])
    );
    // A match binder captured inside a fold callback.
    assert_eq!(
        json_of(
            r#"let fs = fold (fn acc: List (Int -> Int) => fn r: Result<Int, String> =>
                 match r { Ok(v) => map (fn g: Int -> Int => fn x: Int => g x + v) acc,
                           Err(e) => acc })
               [fn x: Int => x, fn x: Int => x * 10] [Ok(1), Err("skip"), Ok(100)] in
               map (fn f: Int -> Int => f 2) fs"#
        ),
        json!([103, 121])
    );
    // The accumulator of one fold is a closure over the previous iteration's
    // variables; the frame reused between iterations does not leak into it.
    assert_eq!(
        value(
            "let g = fold (fn f: Int -> Int => fn n: Int => let m = n * n in fn x: Int => f x + m) \
                          (fn x: Int => x) [1, 2, 3] in g 0"
        ),
        Value::Int(14)
    );
}
