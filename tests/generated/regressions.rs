//! What the generated programs found, as plain tests: the bugs fixed (a
//! regression test each) and the printer's workarounds for lexer quirks.
//! docs/testing.md lists them.

use lt::ir::lower::lower;
use lt::runtime::eval::run;
use lt::runtime::host::{CallRequest, FailureKind, Host, Outcome, PathStep, ToolFailure};
use lt::runtime::limits::Limits;
use lt::syntax::print::print_program;
use serde_json::{json, Value as Json};

fn codes(src: &str) -> Vec<String> {
    lt::types::check_source(src)
        .diagnostics
        .iter()
        .map(|d| d.code.as_str().to_string())
        .collect()
}

fn accepted(src: &str) {
    let c = codes(src);
    assert!(c.is_empty(), "rejected with {c:?}:\n{src}");
}

/// Printing a parsed program is a fixed point and reparses cleanly.
fn round_trip(src: &str) -> String {
    let (tree, diags) = lt::syntax::parse(src);
    assert!(diags.is_empty(), "{src}: {diags:?}");
    let printed = print_program(&tree);
    let (again, diags) = lt::syntax::parse(&printed);
    assert!(diags.is_empty(), "printed as\n{printed}\n{diags:?}");
    assert_eq!(print_program(&again), printed, "not a fixed point");
    printed
}

/// Fixed (src/syntax/repair.rs): in a match arm, a lambda whose parameter
/// is annotated with an enum or an `Option` type was taken for two arms
/// missing their `,` (`"b" => …` looked like a second arm), E0101.
#[test]
fn an_enum_or_option_parameter_in_a_match_arm_is_not_a_missing_comma() {
    accepted("match 1 { _ => fn p: \"a\" | \"b\" => 1 }");
    accepted("match 1 { _ => fn p: Option Int => 1 }");
    accepted("match 1 { _ => fn p: Option \"a\" | \"b\" => 1 }");
    accepted("match 1 { x => fn p: List Option \"a\" => x }");
}

/// The printer's tricky forms: each of these prints to text that parses
/// back to the same tree.
#[test]
fn the_printer_round_trips_the_tricky_forms() {
    for src in [
        // A scope's body starting with `Ok` (the `{` once opened match arms).
        "let r = scope { Ok(1) } in match r { Ok(v) => v, Err(e) => 0 }",
        "let r = scope { (Ok(1)) } in match r { Ok(v) => v, Err(e) => 0 }",
        // `Ok(Some` and `Err(None` once made `Some`/`None` names.
        "match Ok(Some(1)) { Ok(x) => 1, Err(e) => 2 }",
        "match ok_or \"e\" (head [1]) { Ok(x) => Err(None), Err(e) => Ok(Some(e)) }",
        "match Ok((Some(1))) { Ok(x) => 1, Err(e) => 2 }",
        // A `let` body that is itself a chain, in parentheses.
        "let a = 1 in (let b = 2 in a + b)",
        // Negations, applications of prefix forms, field access.
        "let f = fn x: Int => x in - -1 - -(f 2) + (f (-3))",
        "(fn r: {a: Int} => r.a) {a = 1}",
        "match (if true then Some(1) else None) { Some(x) => x, None => 0 }",
        "{(if true then {a = 1} else {a = 2}) with a = 3}",
        "{(Ok(1)) with a = 3}",
        "let xs = ([]: List Int) in length xs + length ([]: (Int -> Int))",
        "@intent(\"a \\\"quoted\\\" why\", hypothesis = \"h\", notes = \"n\\tt\") \"x\\ny\\u{1}\"",
        "1.5e-7 + 2.0 + 1e300 + 0.1",
    ] {
        round_trip(src);
    }
    // The natural forms, with no extra parentheses.
    let printed = round_trip("scope { (Ok(1)) }");
    assert!(printed.contains("scope { Ok(1) }"), "{printed}");
    let printed = round_trip("match Ok((Some(1))) { Ok(x) => 1, Err(e) => 2 }");
    assert!(printed.contains("Ok(Some(1))"), "{printed}");
    let printed = round_trip("Err((None))");
    assert!(printed.contains("Err(None)"), "{printed}");
}

// ------------------------------------------------------------- checker bugs

/// Tools that answer from a fixed table; undo calls are recorded apart.
struct Fixed(Vec<(&'static str, Outcome)>, Vec<(String, Json, bool)>);

impl Host for Fixed {
    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        let undo = request
            .id
            .path
            .iter()
            .any(|s| matches!(s, PathStep::Undo { .. }));
        self.1
            .push((request.tool.to_string(), request.arg.clone(), undo));
        let i = self
            .0
            .iter()
            .position(|(t, _)| *t == request.tool)
            .expect("an answer for every tool");
        self.0.remove(i).1
    }
}

fn failed() -> Outcome {
    Err(ToolFailure {
        stderr: None,
        kind: FailureKind::Failed,
        message: "boom".into(),
    })
}

/// Fixed (src/types/calls.rs, `exec`): the undo effects a scope added were
/// those of the calls *written* inside it. A call made by a function
/// defined outside and applied inside is undone at run time (the runtime's
/// scopes are dynamic) by a tool whose effects the program did not declare:
/// `lt check` said `{Read}` and the run called `cancel`, which performs
/// `{Refund}`. Now a call of a tool with an undo performs the undo's effects.
#[test]
fn an_undo_run_by_a_scope_is_within_the_static_effects() {
    let src = "effect Refund;\n\
        tool book: {trip: String} -{Read}-> {id: String} undo cancel(output);\n\
        tool cancel: {id: String} -{Refund}-> Unit;\n\
        let f = fn t: String => exec tool book {trip = t} in\n\
        let r = scope { match f \"x\" { Ok(b) => Err(\"fail after \" ++ b.id), Err(e) => Err(e) } } in\n\
        match r { Ok(v) => v, Err(e) => e }";
    let checked = lt::types::check_source(src)
        .into_checked()
        .expect("accepted");
    let ir = lower(&checked).expect("lowered");
    let mut host = Fixed(
        vec![
            ("book", Ok(json!({"id": "b1"}))),
            ("cancel", Ok(json!(null))),
        ],
        Vec::new(),
    );
    let (value, _) = run(&ir, &mut host, &Limits::default());
    assert!(value.is_ok());
    for (tool, _, _) in &host.1 {
        let sig = ir
            .tools
            .iter()
            .find(|t| *t.name == **tool)
            .expect("declared");
        assert!(
            sig.effects.is_subset(&ir.effects),
            "{tool} performs {}, the program's effects are {}",
            sig.effects,
            ir.effects
        );
    }
}

const MINT_SPEND: &str = "tool mint: Int -{Read}-> {token: !String};\n\
    tool spend: {token: String} -{Write}-> Int;\n";

/// Fixed (src/types/combinators.rs, E0506): a `traverse` stops at the first
/// `Err` and drops the `Ok` values collected so far and the elements it did
/// not reach, so a list of linear values built by `traverse` (or spent by
/// one) lost tokens that were never consumed: the first token was handed
/// out, the second call failed, and the token was never spent. A
/// `traverse`, `fan_out` or `gather` may no longer collect a linear value;
/// a token is spent inside the callback instead, and then is consumed once
/// however the calls end.
#[test]
fn a_token_handed_out_inside_a_traverse_is_consumed() {
    let bug = format!(
        "{MINT_SPEND}match traverse (fn x => exec tool mint x) [1, 2] {{\n\
          Ok(ms) => match traverse (fn m => exec tool spend {{token = m.token}}) ms {{ Ok(ns) => 1, Err(e) => 0 }},\n\
          Err(e) => 0\n\
        }}"
    );
    assert_eq!(codes(&bug), ["E0506", "E0506"], "{bug}");
    // The results, the elements walked, through records, Options and
    // Results, solved late or early; `fan_out` and `gather` alike.
    for body in [
        "match traverse (fn x => match exec tool mint x { Ok(m) => Ok(Some(m)), Err(e) => Err(e) }) [1] { Ok(ms) => ms, Err(e) => [] }",
        "let f = fn x: Int => exec tool mint x in match traverse f [1] { Ok(ms) => ms, Err(e) => [] }",
        "let g = fn xs: List {token: !String} => traverse (fn m => exec tool spend {token = m.token}) xs in 1",
        "match head (fan_out (fn x => exec tool mint x) [1]) { Some(r) => r, None => Err(\"none\") }",
        "let g = gather { a = exec tool mint 1, b = exec tool spend {token = \"t\"} } in match g.a { Ok(m) => m, Err(e) => {token = e} }",
    ] {
        let src = format!("{MINT_SPEND}{body}");
        assert!(codes(&src).contains(&"E0506".to_string()), "{src}: {:?}", codes(&src));
    }
    // A `fan_out` may spend a list of tokens: it calls its tool for each.
    accepted(&format!(
        "{MINT_SPEND}let g = fn xs: List {{token: !String}} => fan_out (fn m => exec tool spend {{token = m.token}}) xs in 1"
    ));
    let fixed = format!(
        "{MINT_SPEND}match traverse (fn x => match exec tool mint x {{\n\
            Ok(m) => exec tool spend {{token = m.token}},\n\
            Err(e) => Err(e)\n\
          }}) [1, 2] {{ Ok(ns) => 1, Err(e) => 0 }}"
    );
    let checked = lt::types::check_source(&fixed)
        .into_checked()
        .expect("accepted");
    let ir = lower(&checked).expect("lowered");
    let mut host = Fixed(
        vec![
            ("mint", Ok(json!({"token": "lin:1"}))),
            ("spend", Ok(json!(1))),
            ("mint", failed()),
        ],
        Vec::new(),
    );
    let (value, _) = run(&ir, &mut host, &Limits::default());
    assert!(value.is_ok());
    let spent = host
        .1
        .iter()
        .filter(|(_, arg, _)| arg.to_string().contains("lin:1"))
        .count();
    assert_eq!(
        spent, 1,
        "the token was consumed {spent} times: {:?}",
        host.1
    );
}

/// Fixed (src/types/infer.rs, `check`): a record literal was checked
/// against a closed record type but synthesized against an open one, so an
/// enum literal in it was a String (E0201), while the same argument to a
/// function taking the closed record was accepted.
#[test]
fn a_record_literal_is_checked_against_an_open_record() {
    accepted("let f = fn r: {s: \"a\" | \"b\"} => 1 in f {s = \"a\"}");
    accepted("let f = fn r: {s: \"a\" | \"b\", ..} => 1 in f {s = \"a\"}");
}

/// Fixed (src/types/unify.rs): an `Err` binder whose type nothing has
/// fixed yet (the Err type of `if c then Ok(1) else Ok(2)`) took the type
/// of its first use; given to a tool's `!String` field, it became linear,
/// and its second use was E0501/E0505, though the value is a plain String.
/// The other side of `Ok(…)`/`Err(…)` is now solved with the plain `T`.
#[test]
fn an_err_binder_given_to_a_linear_field_stays_plain() {
    accepted(
        "tool spend: {token: !String} -{}-> Unit;\n\
         match (if true then Ok(1) else Ok(2)) {\n\
           Ok(v) => v,\n\
           Err(e) => match exec tool spend {token = e} { Ok(u) => string_length e, Err(x) => 2 }\n\
         }",
    );
}

/// Fixed bug (src/syntax/token.rs, `mark_contextual_keywords`): `Ok(Some`
/// and `Err(None` were taken for the patterns `Ok(Some)`/`Err(None)`, which
/// bind the names `Some`/`None` (λ-Tool programs may), so every `Some` and
/// `None` of the program became a name: E0203 unbound variable `Some`.
#[test]
fn ok_of_some_is_an_expression() {
    accepted("match Ok(Some(1)) { Ok(x) => 1, Err(e) => 2 }");
    accepted("match Err(None) { Ok(x) => 1, Err(e) => 2 }");
}

/// A loop's body `{` does not open match arms either (loops are parsed,
/// then rejected with E0301 alone).
#[test]
fn a_loop_body_may_start_with_ok() {
    for src in [
        "while false { Ok(1) }",
        "for x in [1] { Some(x) }",
        "while {a = true}.a { None }",
    ] {
        let (_, diags) = lt::syntax::parse(src);
        let c: Vec<_> = diags.iter().map(|d| d.code.as_str()).collect();
        assert_eq!(c, ["E0301"], "{src}");
    }
}

/// Fixed bug (src/syntax/token.rs, `mark_match_braces`): the `{` of
/// `scope {` was taken for the start of match arms when the body starts with
/// `Ok`, `Err`, `Some` or `None`: E0101 "unexpected `{`, expected `{`".
#[test]
fn a_scope_body_may_start_with_ok() {
    accepted("let r = scope { Ok(1) } in match r { Ok(v) => v, Err(e) => 0 }");
}

/// Fixed (src/types/undo.rs): E0220 saw only the calls written inside a
/// `scope`. A `Write` call of a tool without an undo, made by a function
/// defined outside and applied inside (scopes are dynamic), was accepted
/// and could not be rolled back. Now every function type records whether
/// its calls may not be undone, and a function applied in a scope is
/// E0220 when they may; a parameter is judged by the functions given for
/// it (`tests/scope_undo.rs` has the other ways a function travels).
#[test]
fn a_function_applied_in_a_scope_makes_only_calls_that_can_be_undone() {
    let decls = "tool send: {to: String} -{Write}-> Unit;\n\
        tool book: {trip: String} -{Write}-> {id: String} undo cancel(output);\n\
        tool cancel: {id: String} -{Write}-> Unit;\n";
    let in_scope = |f: &str| {
        format!(
            "let r = scope {{ match {f} \"x\" {{ Ok(u) => Ok(1), Err(e) => Err(e) }} }} in\n\
             match r {{ Ok(v) => v, Err(e) => 0 }}"
        )
    };
    let direct = format!(
        "{decls}let f = fn t: String => exec tool send {{to = t}} in\n{}",
        in_scope("f")
    );
    assert_eq!(codes(&direct), ["E0220"], "{direct}");
    let through = format!(
        "{decls}let f = fn t: String => exec tool send {{to = t}} in\n\
         let h = fn t: String => f t in\n{}",
        in_scope("h")
    );
    assert_eq!(codes(&through), ["E0220"], "{through}");
    let param = format!(
        "{decls}let g = fn f: String -{{Write}}-> Result<Unit, String> =>\n{} in\n\
         g (fn t: String => exec tool send {{to = t}})",
        in_scope("f")
    );
    assert_eq!(codes(&param), ["E0220"], "{param}");
    accepted(&format!(
        "{decls}let g = fn f: String -{{Write}}-> Result<{{id: String}}, String> =>\n{} in\n\
         g (fn t: String => exec tool book {{trip = t}})",
        in_scope("f")
    ));
    // An undo makes it fine, and so does a value computed by an
    // irrevocable call before the scope (its call was made already).
    accepted(&format!(
        "{decls}let f = fn t: String => exec tool book {{trip = t}} in\n\
         let h = fn t: String => f t in\n{}",
        in_scope("h")
    ));
    accepted(&format!(
        "{decls}let n = match exec tool send {{to = \"a\"}} {{ Ok(u) => \"b\", Err(e) => \"c\" }} in\n\
         let f = fn t: String => exec tool book {{trip = t ++ n}} in\n{}",
        in_scope("f")
    ));
}
