//! The wire's own cases: the usual results read directly, a repeated key,
//! malformed bytes, a deep result. (Every type form against every kind of
//! value, beside `boundary`: `tests/boundary.rs`.)

use super::typed::{plain_result, program_result};
use super::Wire;
use crate::ir::value::Value;
use crate::runtime::boundary;
use crate::types::Type;
use serde_json::json;
use std::rc::Rc;

#[test]
fn the_usual_results_are_read_directly() {
    let lookup = Type::Record(vec![
        ("id".into(), Type::Int),
        ("name".into(), Type::String),
        ("balance".into(), Type::Int),
    ]);
    let optional = Type::Record(vec![("a".into(), Type::option(Type::Int))]);
    let cases = [
        (
            json!({"id": 1, "name": "cust", "balance": 3}),
            lookup.clone(),
        ),
        (
            json!([{"id": 1, "name": "x", "balance": 3}]),
            Type::list(lookup.clone()),
        ),
        (json!({"a": null}), optional.clone()),
        (json!({}), optional),
        (json!(2.5), Type::Float),
        (json!(2), Type::Float),
        (json!("b"), Type::enumeration(vec!["a".into(), "b".into()])),
    ];
    for (v, t) in cases {
        let w = Wire::from_json(&v);
        let direct = plain_result(&w, &t, 100, 100);
        assert!(direct.is_some(), "{v} as {t}");
        assert_eq!(
            direct.map(Ok),
            Some(boundary::program_result("t", &v, &t, 100, 100))
        );
    }
}

#[test]
fn a_repeated_key_reads_as_json_reads_it_the_last_one() {
    let mut w = Wire::new();
    let open = w.open_object();
    w.key("a");
    w.i64(1);
    w.key("a");
    w.i64(2);
    w.close(open, 2).expect("small");
    let t = Type::Record(vec![("a".into(), Type::Int)]);
    assert_eq!(w.to_json(), Ok(json!({"a": 2})));
    let want = boundary::program_result("t", &json!({"a": 2}), &t, 10, 10);
    assert_eq!(program_result("t", &w, &t, 10, 10), want);
    assert!(plain_result(&w, &t, 10, 10).is_some());
}

#[test]
fn bytes_that_are_not_one_value_are_an_invalid_result_not_a_panic() {
    // A count that promises more items than were written.
    let mut w = Wire::new();
    let open = w.open_array();
    w.i64(1);
    w.close(open, 2).expect("small");
    assert!(w.to_json().is_err());
    let got = program_result("t", &w, &Type::list(Type::Int), 10, 10);
    assert_eq!(
        got,
        Err("tool t returned an invalid result: malformed wire data: cut short".into())
    );
    // Two values where one is read.
    let mut w = Wire::new();
    w.i64(1);
    w.i64(2);
    assert!(w.to_json().is_err());
    assert!(plain_result(&w, &Type::Int, 10, 10).is_none());
}

#[test]
fn a_result_deeper_than_the_direct_read_goes_through_the_json() {
    let mut v = json!(1);
    let mut t = Type::Int;
    for _ in 0..200 {
        v = json!([v]);
        t = Type::list(t);
    }
    let w = Wire::from_json(&v);
    assert!(plain_result(&w, &t, 10, 100_000).is_none());
    let want = boundary::program_result("t", &v, &t, 10, 100_000);
    assert!(want.is_ok());
    assert_eq!(program_result("t", &w, &t, 10, 100_000), want);
}

#[test]
fn values_no_json_converts_to_are_written_as_their_json() {
    // Options inside options, results, a record declared out of key order
    // with a `None` field (left out, as `to_json` leaves it), `-0.0`.
    let some = Value::Some(Rc::new(Value::Some(Rc::new(Value::Int(1)))));
    let ok = Value::Ok(Rc::new(Value::Str("x".into())));
    let record = Value::Record(Rc::from(vec![
        ("z".into(), Value::None),
        ("b".into(), Value::Float(1.0)),
        ("a".into(), Value::Unit),
    ]));
    for value in [some, ok, record, Value::None, Value::Float(-0.0)] {
        assert_eq!(
            Wire::from_value(&value),
            Wire::from_json(&value.to_json()),
            "{value}"
        );
    }
}
