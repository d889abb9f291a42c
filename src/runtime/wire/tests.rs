//! The wire against JSON: every value reads back as the JSON it stands
//! for, a program's value is written as its JSON would be, and a result
//! read from the wire is what `boundary` gives for its JSON, refusals and
//! bounds included.

use super::typed::{plain_result, program_result};
use super::Wire;
use crate::ir::value::Value;
use crate::runtime::boundary;
use crate::types::{EffectSet, Type};
use serde_json::{json, Value as Json};
use std::rc::Rc;

fn record(fields: &[(&str, Type)]) -> Type {
    Type::Record(
        fields
            .iter()
            .map(|(n, t)| ((*n).into(), t.clone()))
            .collect(),
    )
}

/// Every type form, scalars alone and inside each wrapper.
fn types() -> Vec<Type> {
    let scalars = vec![
        Type::Unit,
        Type::Bool,
        Type::Int,
        Type::String,
        Type::Float,
        Type::Json,
        Type::Approval,
        Type::enumeration(vec!["a".into(), "b".into()]),
        Type::fun(Type::Int, EffectSet::pure(), Type::Int),
        Type::Error,
    ];
    let mut types = scalars.clone();
    for t in &scalars {
        types.push(Type::option(t.clone()));
        types.push(Type::list(t.clone()));
        types.push(Type::Linear(Box::new(t.clone())));
        types.push(Type::result(t.clone(), Type::String));
        types.push(record(&[("a", t.clone()), ("b", Type::option(t.clone()))]));
        // Declared out of key order: the wire writes a JSON object's order.
        types.push(record(&[("b", t.clone()), ("a", Type::Int)]));
        types.push(Type::OpenRecord(vec![("a".into(), t.clone())]));
    }
    types.push(Type::list(record(&[("a", Type::list(Type::Int))])));
    types.push(Type::option(Type::option(Type::Int)));
    types
}

/// JSON values of every kind, alone and nested.
fn values() -> Vec<Json> {
    let leaves = vec![
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!(-7),
        json!(i64::MIN),
        json!(3.0),
        json!(-0.0),
        json!(2.5),
        json!(9007199254740992.0),
        json!(9007199254740994.0),
        json!(1e300),
        json!(18446744073709551615u64),
        json!("a"),
        json!("c"),
        json!(""),
        json!("é𝄞"),
        json!([]),
        json!({}),
    ];
    let mut values = leaves.clone();
    for v in &leaves {
        values.push(json!([v, v]));
        values.push(json!([1, v]));
        values.push(json!({"a": v}));
        values.push(json!({"a": v, "b": v}));
        values.push(json!({"b": v, "a": 1, "extra": [v, {"x": v}]}));
        values.push(json!({"b": v}));
        values.push(json!({"Ok": v}));
        values.push(json!({"Ok": v, "Err": v}));
        values.push(json!([{"a": [v]}]));
    }
    values
}

#[test]
fn every_value_reads_back_as_its_json() {
    for v in values() {
        let w = Wire::from_json(&v);
        assert_eq!(w.to_json().as_ref(), Ok(&v), "{v}");
        // The scalar kinds as JSON has them: `1` and `1.0` differ.
        if let (Ok(Json::Number(a)), Json::Number(b)) = (w.to_json(), &v) {
            assert_eq!(
                (a.is_i64(), a.is_u64(), a.is_f64()),
                (b.is_i64(), b.is_u64(), b.is_f64())
            );
        }
    }
}

#[test]
fn a_result_reads_as_boundary_reads_its_json_within_every_bound() {
    let mut plain = 0;
    let mut checked = 0;
    for t in types() {
        for v in values() {
            let w = Wire::from_json(&v);
            for (max_list, max_values) in [(1000, 1000), (1, 1000), (1000, 2), (0, 0)] {
                let want = boundary::program_result("t", &v, &t, max_list, max_values);
                let got = program_result("t", &w, &t, max_list, max_values);
                assert_eq!(got, want, "{v} as {t}, bounds {max_list}/{max_values}");
                if let Some(direct) = plain_result(&w, &t, max_list, max_values) {
                    assert_eq!(Ok(direct), want, "{v} as {t}, read directly");
                    plain += 1;
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 10_000, "{checked}");
    // The direct read is the common path, not a branch never taken.
    assert!(plain > 500, "{plain} of {checked} read directly");
}

#[test]
fn the_usual_results_are_read_directly() {
    let lookup = record(&[
        ("id", Type::Int),
        ("name", Type::String),
        ("balance", Type::Int),
    ]);
    let cases = [
        (
            json!({"id": 1, "name": "cust", "balance": 3}),
            lookup.clone(),
        ),
        (
            json!([{"id": 1, "name": "x", "balance": 3}]),
            Type::list(lookup.clone()),
        ),
        (
            json!({"a": null}),
            record(&[("a", Type::option(Type::Int))]),
        ),
        (json!({}), record(&[("a", Type::option(Type::Int))])),
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
fn a_program_value_is_written_as_its_json_and_fits_as_its_json_does() {
    let mut checked = 0;
    for t in types() {
        for v in values() {
            let Ok(value) = boundary::from_json(&v, &t) else {
                continue;
            };
            let json = value.to_json();
            assert_eq!(Wire::from_value(&value), Wire::from_json(&json), "{value}");
            for u in types() {
                assert_eq!(
                    boundary::value_fits(&value, &u),
                    boundary::fits(&json, &u),
                    "{value} as {u}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 500, "{checked}");
    // Kinds no JSON converts to: options inside, results, a function.
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

#[test]
fn a_repeated_key_reads_as_json_reads_it_the_last_one() {
    let mut w = Wire::new();
    let open = w.open_object();
    w.key("a");
    w.i64(1);
    w.key("a");
    w.i64(2);
    w.close(open, 2).expect("small");
    let t = record(&[("a", Type::Int)]);
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
