//! The boundary contract (issue 3, item 4): a tool's JSON result is checked
//! against the declared output type, one test per type form.

use lt::runtime::boundary::{check_size, fits, from_json, program_result, tool_result, value_fits};
use lt::runtime::value::Value;
use lt::runtime::wire::{typed, Wire};
use lt::types::{EffectSet, Type};
use serde_json::json;

fn record(fields: &[(&str, Type)]) -> Type {
    Type::Record(
        fields
            .iter()
            .map(|(n, t)| ((*n).into(), t.clone()))
            .collect(),
    )
}

fn account() -> Type {
    record(&[
        ("id", Type::String),
        ("subscription_tier", Type::String),
        ("email", Type::String),
        ("last_charge_cents", Type::Int),
    ])
}

#[test]
fn a_record_keeps_declared_fields_in_declaration_order_and_drops_extras() {
    let v = from_json(
        &json!({"email": "a@b.c", "id": "acct_1", "last_charge_cents": 4999,
                "subscription_tier": "pro", "internal_flag": true}),
        &account(),
    )
    .expect("fits");
    let Value::Record(fields) = &v else {
        panic!("a record: {v:?}")
    };
    let names: Vec<&str> = fields.iter().map(|(n, _)| &**n).collect();
    assert_eq!(
        names,
        ["id", "subscription_tier", "email", "last_charge_cents"]
    );
    assert_eq!(
        v.to_string(),
        r#"{id = "acct_1", subscription_tier = "pro", email = "a@b.c", last_charge_cents = 4999}"#
    );
}

#[test]
fn a_wrong_field_type_is_named_with_its_path() {
    let err = tool_result(
        "lookup_account",
        &json!({"id": "acct_1", "subscription_tier": "pro", "email": "a@b.c", "last_charge_cents": "4999"}),
        &account(),
    )
    .expect_err("a String where an Int is declared");
    assert_eq!(
        err,
        "tool lookup_account returned an invalid result: field last_charge_cents: expected Int, found String"
    );
}

#[test]
fn a_missing_field_is_an_error() {
    let err = from_json(&json!({"id": "acct_1"}), &account()).expect_err("fields are missing");
    assert_eq!(
        err.to_string(),
        "field subscription_tier: missing (expected String)"
    );
}

#[test]
fn nested_paths_name_fields_and_elements() {
    let ty = record(&[(
        "orders",
        Type::list(record(&[("id", Type::Int), ("amount", Type::Int)])),
    )]);
    let err = from_json(&json!({"orders": [{"id": 1, "amount": 5}, {"id": 2, "amount": 7}, {"id": 3, "amount": "x"}]}), &ty)
        .expect_err("the third amount is a String");
    assert_eq!(
        err.to_string(),
        "field orders[2].amount: expected Int, found String"
    );

    let err =
        from_json(&json!([1, 2, null]), &Type::list(Type::Int)).expect_err("null in a list of Int");
    assert_eq!(err.to_string(), "element [2]: expected Int, found null");
}

#[test]
fn base_types() {
    assert_eq!(from_json(&json!(true), &Type::Bool), Ok(Value::Bool(true)));
    assert_eq!(
        from_json(&json!("hi"), &Type::String),
        Ok(Value::Str("hi".into()))
    );
    assert_eq!(from_json(&json!(-7), &Type::Int), Ok(Value::Int(-7)));
    assert_eq!(
        from_json(&json!(3.0), &Type::Int),
        Ok(Value::Int(3)),
        "an integral float is an Int"
    );
    assert_eq!(from_json(&json!(null), &Type::Unit), Ok(Value::Unit));
    assert_eq!(from_json(&json!({}), &Type::Unit), Ok(Value::Unit));

    let err = from_json(&json!(2.5), &Type::Int).expect_err("2.5 is not an Int");
    assert_eq!(err.to_string(), "expected Int, found Float 2.5");
    let err = from_json(&json!(18446744073709551615u64), &Type::Int).expect_err("out of range");
    assert!(
        err.to_string().contains("larger than 9223372036854775807"),
        "{err}"
    );
    // A number outside the Int range, or a float too large to be exact, is
    // refused, never rounded or clamped.
    for text in [
        "-9223372036854775809",
        "-9223372036854776832",
        "9007199254740994.0",
        "1e300",
    ] {
        let j: serde_json::Value = serde_json::from_str(text).expect("valid JSON");
        let err = from_json(&j, &Type::Int).expect_err(text);
        assert!(err.to_string().contains("Int range"), "{text}: {err}");
    }
    assert_eq!(
        from_json(&json!(9007199254740992.0), &Type::Int),
        Ok(Value::Int(9007199254740992)),
        "2^53 as a float is exact"
    );
    assert_eq!(
        from_json(&json!(i64::MIN), &Type::Int),
        Ok(Value::Int(i64::MIN))
    );
    let err = from_json(&json!("true"), &Type::Bool).expect_err("a string is not a Bool");
    assert_eq!(err.to_string(), "expected Bool, found String");
    let err = from_json(&json!({"a": 1}), &Type::Unit).expect_err("a non-empty object is not Unit");
    assert_eq!(err.to_string(), "expected Unit, found an object");
}

#[test]
fn results_and_linear_values() {
    let ty = Type::result(Type::Int, Type::String);
    assert_eq!(
        from_json(&json!({"Ok": 5}), &ty),
        Ok(Value::Ok(Value::Int(5).into()))
    );
    assert_eq!(
        from_json(&json!({"Err": "no"}), &ty),
        Ok(Value::Err(Value::Str("no".into()).into()))
    );
    let err = from_json(&json!({"Ok": "five"}), &ty).expect_err("wrong Ok payload");
    assert_eq!(err.to_string(), "field Ok: expected Int, found String");
    assert!(
        from_json(&json!({"Ok": 1, "Err": "x"}), &ty).is_err(),
        "both tags is not a Result"
    );
    assert!(
        from_json(&json!(5), &ty).is_err(),
        "a bare value is not a Result"
    );

    let token = Type::Linear(Box::new(Type::String));
    assert_eq!(
        from_json(&json!("tok_1"), &token),
        Ok(Value::Str("tok_1".into()))
    );
}

#[test]
fn functions_never_cross_the_boundary() {
    let f = Type::fun(Type::Int, EffectSet::pure(), Type::Int);
    let err = from_json(&json!(1), &f).expect_err("no functions from tools");
    assert!(
        err.to_string().contains("cannot be received from a tool"),
        "{err}"
    );
}

#[test]
fn values_encode_as_lambda_tool_json() {
    let v = Value::Record(
        vec![
            ("ok".into(), Value::Ok(Value::Unit.into())),
            (
                "err".into(),
                Value::Err(Value::Str("declined".into()).into()),
            ),
            (
                "items".into(),
                Value::List(vec![Value::Int(1), Value::Bool(false)].into()),
            ),
        ]
        .into(),
    );
    assert_eq!(
        v.to_json(),
        json!({"ok": {"Ok": null}, "err": {"Err": "declined"}, "items": [1, false]})
    );
}

#[test]
fn round_trip_through_json_keeps_the_value() {
    let ty = record(&[
        ("tags", Type::list(Type::String)),
        ("r", Type::result(Type::Unit, Type::String)),
    ]);
    let json = json!({"tags": ["a", "b"], "r": {"Err": "x"}});
    let v = from_json(&json, &ty).expect("fits");
    assert_eq!(from_json(&v.to_json(), &ty), Ok(v));
}

/// Every type form, scalars alone and inside each wrapper.
fn every_type_form() -> Vec<Type> {
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
        types.push(Type::result(Type::Unit, t.clone()));
        types.push(record(&[("a", t.clone()), ("b", Type::option(t.clone()))]));
        // Declared out of key order (a JSON object's is sorted).
        types.push(record(&[("b", t.clone()), ("a", Type::Int)]));
        types.push(Type::OpenRecord(vec![("a".into(), t.clone())]));
    }
    types.push(Type::list(record(&[("a", Type::list(Type::Int))])));
    types.push(Type::option(Type::option(Type::Int)));
    types
}

/// JSON of every kind, alone and nested.
fn every_kind_of_json() -> Vec<serde_json::Value> {
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
        values.push(json!({"Err": v}));
        values.push(json!({"Ok": v, "Err": v}));
        values.push(json!([{"a": [v]}]));
    }
    values
}

/// `fits` (the control plane's argument check, which builds nothing)
/// accepts exactly what `from_json` converts: every type form against
/// every kind of JSON, nested.
#[test]
fn fits_agrees_with_from_json() {
    let mut checked = 0;
    for t in &every_type_form() {
        for v in &every_kind_of_json() {
            let converts = from_json(v, t).is_ok();
            assert_eq!(
                fits(v, t),
                converts,
                "{v} as {t}: from_json ok = {converts}"
            );
            checked += usize::from(converts);
        }
    }
    assert!(
        checked > 100,
        "only {checked} pairs fit: the cases test too little"
    );
}

/// A result on the wire (the Python package's, runtime/wire) reads as
/// `boundary` reads its JSON, refusals and bounds included, and the direct
/// read (no JSON) is the common path, not a branch never taken.
#[test]
fn a_result_on_the_wire_reads_as_its_json_within_every_bound() {
    let (mut plain, mut checked) = (0, 0);
    for t in every_type_form() {
        for v in every_kind_of_json() {
            let w = Wire::from_json(&v);
            assert_eq!(w.to_json().as_ref(), Ok(&v), "{v}");
            for (max_list, max_values) in [(1000, 1000), (1, 1000), (1000, 2), (0, 0)] {
                let want = program_result("t", &v, &t, max_list, max_values);
                let got = typed::program_result("t", &w, &t, max_list, max_values);
                assert_eq!(got, want, "{v} as {t}, bounds {max_list}/{max_values}");
                if let Some(direct) = typed::plain_result(&w, &t, max_list, max_values) {
                    assert_eq!(Ok(direct), want, "{v} as {t}, read directly");
                    plain += 1;
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 10_000, "{checked}");
    assert!(plain > 500, "{plain} of {checked} read directly");
}

/// A program's value is written on the wire as its JSON is, and fits a
/// type exactly when its JSON does (`value_fits`, the value door's check).
#[test]
fn a_value_is_written_and_fits_as_its_json() {
    let mut checked = 0;
    let types = every_type_form();
    for t in &types {
        for v in every_kind_of_json() {
            let Ok(value) = from_json(&v, t) else {
                continue;
            };
            let json = value.to_json();
            assert_eq!(Wire::from_value(&value), Wire::from_json(&json), "{value}");
            for u in &types {
                assert_eq!(value_fits(&value, u), fits(&json, u), "{value} as {u}");
            }
            checked += 1;
        }
    }
    assert!(checked > 500, "{checked}");
}

/// The size check's walk, as it was before flat values skipped its work
/// list: the answer (and the error's words) of `check_size` for any value.
fn check_size_by_walk(
    json: &serde_json::Value,
    max: usize,
    max_nodes: usize,
) -> Result<(), String> {
    let mut work = vec![json];
    let mut nodes = 0usize;
    while let Some(j) = work.pop() {
        nodes += 1;
        if nodes > max_nodes {
            return Err(format!("more than {max_nodes} values in all"));
        }
        match j {
            serde_json::Value::Array(items) => {
                if items.len() > max {
                    return Err(format!(
                        "a list of {} items, more than the limit of {max}",
                        items.len()
                    ));
                }
                work.extend(items.iter());
            }
            serde_json::Value::Object(map) => work.extend(map.values()),
            _ => {}
        }
    }
    Ok(())
}

#[test]
fn check_size_agrees_with_the_walk_for_flat_and_nested_values() {
    let values = vec![
        json!(null),
        json!(1),
        json!("s"),
        json!([]),
        json!({}),
        json!([1, 2, 3]),
        json!({"a": 1, "b": "x", "c": null}),
        json!([1, [2, 3], 4]),
        json!({"a": [1, 2], "b": {"c": 3}}),
        json!([[1, 2, 3, 4]]),
    ];
    for v in &values {
        for max in 0..5 {
            for max_nodes in 0..7 {
                assert_eq!(
                    check_size(v, max, max_nodes),
                    check_size_by_walk(v, max, max_nodes),
                    "{v} with lists of at most {max} and {max_nodes} values"
                );
            }
        }
    }
}
