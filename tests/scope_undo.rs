//! E0220 through functions (`src/types/undo.rs`): a call that a `scope`
//! cannot roll back (a tool with an effect beyond `Read` and no undo) is
//! rejected wherever it is written when it *runs* inside a scope: made by a
//! function defined outside, given as an argument, stored in a record, a
//! list or an Option, returned by another function, joined from two
//! branches, or called by `traverse`, `fan_out` or `bounded_loop`. Each
//! rejection is asserted with its location (the function applied in the
//! scope, or the call when it is written inside the scope) and the call it
//! points at. The programs the rule must accept include those the earlier
//! name-based approximation rejected (a parameter, a record holding both
//! kinds of function, a lambda returned out of the scope), and one is run:
//! the call made through a parameter is undone when the scope fails.

use lt::diag::Diagnostic;
use lt::ir::lower::lower;
use lt::runtime::eval::run;
use lt::runtime::host::{CallRequest, FailureKind, Host, Outcome, ToolFailure};
use lt::runtime::limits::Limits;
use lt::types::check_source;
use serde_json::json;

const DECLS: &str = "tool notify: {to: String} -{Write}-> Unit;\n\
    tool book: {trip: String} -{Write}-> {id: String} undo cancel(output);\n\
    tool cancel: {id: String} -{Write}-> Unit;\n\
    tool lookup: String -{Read}-> {email: String};\n";

/// `let r = scope { match CALL { Ok(u) => Ok(1), Err(e) => Err(e) } } in …`.
fn in_scope(call: &str) -> String {
    format!(
        "let r = scope {{ match {call} {{ Ok(u) => Ok(1), Err(e) => Err(e) }} }} in\n\
         match r {{ Ok(v) => v, Err(e) => 0 }}"
    )
}

fn diagnostics(body: &str) -> (String, Vec<Diagnostic>) {
    let src = format!("{DECLS}{body}");
    let diags = check_source(&src).diagnostics;
    (src, diags)
}

fn accepted(body: &str) {
    let (src, d) = diagnostics(body);
    let shown: Vec<String> = d
        .iter()
        .map(|d| format!("{}: {}", d.code.as_str(), d.message))
        .collect();
    assert!(d.is_empty(), "rejected:\n{src}\n{shown:#?}");
}

fn text(src: &str, span: lt::source::Span) -> &str {
    &src[span.start as usize..span.end as usize]
}

/// Asserts that `body` is rejected with exactly one diagnostic, E0220, whose
/// primary location reads `at` and whose secondary labels point at the
/// `notify` call and the scope; returns its message.
fn rejected_at(body: &str, at: &str) -> String {
    let (src, d) = diagnostics(body);
    let codes: Vec<&str> = d.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(codes, ["E0220"], "{src}\n{d:#?}");
    let d = &d[0];
    assert_eq!(text(&src, d.span), at, "primary location:\n{src}\n{d:#?}");
    let labels: Vec<&str> = d.labels.iter().map(|l| text(&src, l.span)).collect();
    assert!(
        labels.contains(&"notify") || text(&src, d.span) == "notify",
        "the call of notify is shown: {labels:?}"
    );
    assert!(
        labels.iter().any(|l| l.starts_with("scope {")),
        "the scope is shown: {labels:?}"
    );
    assert!(d.message.contains("`notify`"), "{}", d.message);
    let help = d.help.as_deref().unwrap_or("");
    assert!(
        help.contains("undo cancel_notify(output)"),
        "a concrete fix: {help}"
    );
    d.message.clone()
}

const TELL: &str = "fn t: String => exec tool notify {to = t}";
const RESERVE: &str = "fn t: String => exec tool book {trip = t}";
/// `book` with the type of `TELL`.
const RESERVE_UNIT: &str =
    "fn t: String => match exec tool book {trip = t} { Ok(b) => Ok(()), Err(e) => Err(e) }";

#[test]
fn a_function_given_as_an_argument_is_checked_at_the_call_that_gives_it() {
    let run = "let run = fn g: String -{Write}-> Result<Unit, String> =>\n";
    let m = rejected_at(
        &format!("{run}{} in\nrun ({TELL})", in_scope("g \"x\"")),
        "g",
    );
    assert!(m.starts_with("`g` may call `notify`"), "{m}");
    // A function of the same type whose call has an undo is fine (the
    // approximation rejected every effectful parameter).
    accepted(&format!(
        "let run = fn g: String -{{Write}}-> Result<{{id: String}}, String> =>\n{} in\nrun ({RESERVE})",
        in_scope("g \"x\"")
    ));
    // A variable given as the argument.
    rejected_at(
        &format!(
            "{run}{} in\nlet tell = {TELL} in\nrun tell",
            in_scope("g \"x\"")
        ),
        "g",
    );
    // A function taking a function, given where a function taking one is
    // expected: what the caller gives flows into its parameter
    // (parameters are contravariant).
    let given_on = |f: &str| {
        format!(
            "let run = fn g: String -{{Write}}-> Result<Unit, String> =>\n\
             scope {{ match g \"x\" {{ Ok(u) => Ok(1), Err(e) => Err(e) }} }} in\n\
             let call_with = fn h: (String -{{Write}}-> Result<Unit, String>) -{{Write}}-> Result<Int, String> => h ({f}) in\n\
             match call_with run {{ Ok(v) => v, Err(e) => 0 }}"
        )
    };
    rejected_at(&given_on(TELL), "g");
    accepted(&given_on(RESERVE_UNIT));
    // A parameter applied outside any scope may be anything.
    accepted(&format!(
        "let run = fn g: String -{{Write}}-> Result<Unit, String> => match g \"x\" {{ Ok(u) => 1, Err(e) => 0 }} in\nrun ({TELL})"
    ));
}

#[test]
fn a_function_passed_on_through_a_higher_order_function_is_seen() {
    // `wrap g` returns a function applying `g`: the function returned,
    // applied in the scope, makes `g`'s calls.
    let wrap =
        "let wrap = fn g: String -{Write}-> Result<Unit, String> => fn t: String => g t in\n";
    rejected_at(
        &format!(
            "{wrap}let tell = {TELL} in\n{}",
            in_scope("wrap tell \"x\"")
        ),
        "wrap tell",
    );
    accepted(&format!(
        "let wrap = fn g: String -{{Write}}-> Result<{{id: String}}, String> => fn t: String => g t in\n\
         let reserve = {RESERVE} in\n{}",
        in_scope("wrap reserve \"x\"")
    ));
    // A function returned by a let-bound lambda.
    rejected_at(
        &format!(
            "let mk = fn u: Unit => {TELL} in\n{}",
            in_scope("mk () \"x\"")
        ),
        "mk ()",
    );
    accepted(&format!(
        "let mk = fn u: Unit => {RESERVE} in\n{}",
        in_scope("mk () \"x\"")
    ));
}

#[test]
fn functions_held_in_records_lists_and_options_keep_what_they_call() {
    // A record holding both kinds: only the function applied counts (the
    // approximation rejected any use of `ops` in the scope).
    let ops = format!("let ops = {{tell = {TELL}, reserve = {RESERVE}}} in\n");
    accepted(&format!("{ops}{}", in_scope("ops.reserve \"x\"")));
    rejected_at(&format!("{ops}{}", in_scope("ops.tell \"x\"")), "ops.tell");
    // A list's element type joins its functions: one irrevocable element
    // makes every element suspect. (Library functions take data, so a
    // list of functions is walked with `traverse`.)
    let list = |a: &str, b: &str| {
        format!(
            "let fs = [{a}, {b}] in\n\
             let r = scope {{ match traverse (fn f => f \"x\") fs {{ Ok(us) => Ok(length us), Err(e) => Err(e) }} }} in\n\
             match r {{ Ok(v) => v, Err(e) => 0 }}"
        )
    };
    rejected_at(&list(RESERVE_UNIT, TELL), "traverse (fn f => f \"x\") fs");
    accepted(&list(RESERVE_UNIT, RESERVE_UNIT));
    // An Option, matched inside the scope.
    let opt = |f: &str| {
        format!(
            "let o = Some({f}) in\n\
             let r = scope {{ match o {{ Some(f) => match f \"x\" {{ Ok(u) => Ok(1), Err(e) => Err(e) }}, None => Ok(0) }} }} in\n\
             match r {{ Ok(v) => v, Err(e) => 0 }}"
        )
    };
    rejected_at(&opt(TELL), "f");
    accepted(&opt(RESERVE));
    // Two branches joined.
    let joined = |b: &str| {
        format!(
            "let f = if 1 < 2 then {RESERVE_UNIT} else {b} in\n{}",
            in_scope("f \"x\"")
        )
    };
    rejected_at(&joined(TELL), "f");
    accepted(&joined(RESERVE_UNIT));
}

#[test]
fn an_annotated_function_is_judged_by_its_body_not_its_annotation() {
    let annotated = |body: &str, out: &str| {
        format!(
            "let f: String -{{Write}}-> Result<{out}, String> = {body} in\n{}",
            in_scope("f \"x\"")
        )
    };
    rejected_at(&annotated(TELL, "Unit"), "f");
    accepted(&annotated(RESERVE, "{id: String}"));
}

#[test]
fn the_builtins_that_call_a_function_call_it_in_the_scope() {
    // traverse with a callback defined outside the scope.
    let traverse = |f: &str| {
        format!(
            "let f = {f} in\n\
             let r = scope {{ match traverse f [\"a\", \"b\"] {{ Ok(us) => Ok(length us), Err(e) => Err(e) }} }} in\n\
             match r {{ Ok(v) => v, Err(e) => 0 }}"
        )
    };
    let m = rejected_at(&traverse(TELL), "traverse f [\"a\", \"b\"]");
    assert!(
        m.starts_with("the callback of `traverse` may call `notify`"),
        "{m}"
    );
    accepted(&traverse(RESERVE));
    // bounded_loop with a step defined outside.
    let step = |tool: &str, arg: &str| {
        format!(
            "let step = fn s: Int => match exec tool {tool} {arg} {{ Ok(u) => {{done = true, value = s}}, Err(e) => {{done = true, value = s + 1}} }} in\n\
             let r = scope {{ let l = bounded_loop 3 0 step in if l.value == 0 then Ok(1) else Err(\"failed\") }} in\n\
             match r {{ Ok(v) => v, Err(e) => 0 }}"
        )
    };
    rejected_at(&step("notify", "{to = \"a\"}"), "bounded_loop 3 0 step");
    accepted(&step("book", "{trip = \"a\"}"));
    // fan_out's callback is written in place: the call is shown where it is.
    let fan_out = |f: &str| {
        format!(
            "let r = scope {{ match traverse (fn x => x) (fan_out ({f}) [\"a\"]) {{ Ok(us) => Ok(length us), Err(e) => Err(e) }} }} in\n\
             match r {{ Ok(v) => v, Err(e) => 0 }}"
        )
    };
    let m = rejected_at(&fan_out(TELL), "notify");
    assert!(m.starts_with("`notify` has no undo"), "{m}");
    accepted(&fan_out(RESERVE));
}

#[test]
fn only_the_calls_that_run_inside_the_scope_count() {
    // A lambda written inside the scope and applied there.
    let m = rejected_at(&in_scope(&format!("({TELL}) \"x\"")), "notify");
    assert!(m.starts_with("`notify` has no undo"), "{m}");
    // The same lambda returned out of the scope and applied after it
    // makes its call outside any scope.
    accepted(&format!(
        "let r = scope {{ Ok({TELL}) }} in\n\
         match r {{ Ok(f) => match f \"x\" {{ Ok(u) => 1, Err(e) => 2 }}, Err(e) => 0 }}"
    ));
    // A function applied before the scope, its value used inside.
    accepted(&format!(
        "let tell = {TELL} in\n\
         let sent = match tell \"a\" {{ Ok(u) => \"yes\", Err(e) => \"no\" }} in\n{}",
        in_scope("exec tool book {trip = sent}")
    ));
    // Read-only calls need no undo, through functions too.
    accepted(&format!(
        "let look = fn t: String => exec tool lookup t in\n{}",
        in_scope("look \"x\"")
    ));
    // A scope inside a function: the function's own applications count
    // there, wherever the function is applied.
    rejected_at(
        &format!(
            "let tell = {TELL} in\n\
             let g = fn t: String => scope {{ match tell t {{ Ok(u) => Ok(1), Err(e) => Err(e) }} }} in\n\
             match g \"x\" {{ Ok(v) => v, Err(e) => 0 }}"
        ),
        "tell",
    );
}

/// A host answering `book` with a booking id, failing `lookup`, and
/// recording every call.
#[derive(Default)]
struct Bookings {
    calls: Vec<(String, serde_json::Value)>,
}

impl Host for Bookings {
    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        self.calls
            .push((request.tool.to_string(), request.arg.clone()));
        match request.tool {
            "book" => Ok(json!({"id": format!("b{}", self.calls.len())})),
            "cancel" => Ok(json!(null)),
            _ => Err(ToolFailure {
                stderr: None,
                kind: FailureKind::Failed,
                message: "no".to_string(),
            }),
        }
    }
}

#[test]
fn a_call_made_through_a_parameter_is_undone_when_the_scope_fails() {
    let src = format!(
        "{DECLS}let run = fn g: String -{{Write}}-> Result<{{id: String}}, String> =>\n\
         scope {{ match g \"paris\" {{\n\
           Ok(b) => match exec tool lookup b.id {{ Ok(a) => Ok(a.email), Err(e) => Err(e) }},\n\
           Err(e) => Err(e)\n\
         }} }} in\n\
         match run ({RESERVE}) {{ Ok(v) => v, Err(e) => \"rolled back: \" ++ e }}"
    );
    let checked = check_source(&src)
        .into_checked()
        .unwrap_or_else(|d| panic!("rejected: {d:#?}"));
    let ir = lower(&checked).expect("lowers");
    let mut host = Bookings::default();
    let (value, _) = run(&ir, &mut host, &Limits::default());
    let value = value.expect("a value");
    assert_eq!(value.to_json(), json!("rolled back: no"));
    let calls: Vec<String> = host.calls.iter().map(|(t, a)| format!("{t} {a}")).collect();
    assert_eq!(
        calls,
        [
            r#"book {"trip":"paris"}"#,
            r#"lookup "b1""#,
            r#"cancel {"id":"b1"}"#
        ]
    );
}
