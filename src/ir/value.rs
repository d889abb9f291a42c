//! Runtime values and their JSON encoding.
//!
//! Here in `ir`, below the runtime, because the IR holds constants
//! ([`super::NodeKind::Const`]); the interpreter re-exports this module as
//! `runtime::value`.

use crate::syntax::ast::Name;
use serde_json::{Map, Number, Value as Json};
use std::fmt;
use std::rc::Rc;

/// A value of a well-typed program (functions excepted: closures belong to
/// the interpreter).
// `repr(u64)`: the tag takes a whole word and every payload starts at byte
// 8, so moving a value is three aligned word moves. With the default layout
// a `Bool` payload sits at byte 1 and moves become unaligned partial copies
// that stall store forwarding (measured: `cargo bench --bench run`).
#[derive(Clone, Debug, PartialEq)]
#[repr(u64)]
pub enum Value {
    /// `()`.
    Unit,
    /// `true` / `false`.
    Bool(bool),
    /// A 64-bit integer.
    Int(i64),
    /// A string.
    Str(Rc<str>),
    /// A finite 64-bit float (extension).
    Float(f64),
    /// `Some(v)` (extension).
    Some(Rc<Value>),
    /// `None` (extension).
    None,
    /// Undeclared JSON data (extension), read through the `json_*` natives.
    Json(Rc<Json>),
    /// A record; fields in the order of the record's type.
    Record(Rc<[(Name, Value)]>),
    /// A list.
    List(Rc<Vec<Value>>),
    /// `Ok(v)`.
    Ok(Rc<Value>),
    /// `Err(e)`.
    Err(Rc<Value>),
    /// A function value (a lambda with its captured variables).
    Fn(Rc<Closure>),
}

/// A function value: an IR lambda, the variables it captured when it was
/// created, and the arguments of a partial application so far.
#[derive(Debug)]
pub struct Closure {
    /// The [`crate::ir::NodeKind::Lambda`] node.
    pub lambda: u32,
    /// Captured values, in the lambda's capture order.
    pub captures: Rc<[Value]>,
    /// Arguments already supplied (fewer than the lambda's arity).
    pub args: Vec<Value>,
}

impl Drop for Closure {
    /// Drops captured values iteratively. A program can build an arbitrarily
    /// long chain of closures, each capturing the one before (a `fold` whose
    /// accumulator is a function), and the default drop would recurse once
    /// per link.
    fn drop(&mut self) {
        let mut work: Vec<Value> = Vec::new();
        take_shared(&mut self.captures, &mut work);
        work.append(&mut self.args);
        while let Some(mut v) = work.pop() {
            v.take_children(&mut work);
            // `v` now owns no deeper structure: dropping it is shallow.
        }
    }
}

/// Moves the values out of `items` into `work` when this is the last
/// reference to them.
fn take_shared(items: &mut Rc<[Value]>, work: &mut Vec<Value>) {
    if let Some(items) = Rc::get_mut(items) {
        work.extend(items.iter_mut().map(|x| std::mem::replace(x, Value::Unit)));
    }
}

impl Value {
    /// Moves out the children this value solely owns (for iterative drops).
    fn take_children(&mut self, work: &mut Vec<Value>) {
        match self {
            Value::Fn(rc) => {
                if let Some(clo) = Rc::get_mut(rc) {
                    take_shared(&mut clo.captures, work);
                    work.append(&mut clo.args);
                }
            }
            Value::List(items) => {
                if let Some(items) = Rc::get_mut(items) {
                    work.append(items);
                }
            }
            Value::Record(fields) => {
                if let Some(fields) = Rc::get_mut(fields) {
                    work.extend(
                        fields
                            .iter_mut()
                            .map(|(_, x)| std::mem::replace(x, Value::Unit)),
                    );
                }
            }
            Value::Ok(x) | Value::Err(x) | Value::Some(x) => {
                if let Some(x) = Rc::get_mut(x) {
                    work.push(std::mem::replace(x, Value::Unit));
                }
            }
            _ => {}
        }
    }
}

impl PartialEq for Closure {
    /// Functions are equal only to themselves (the checker never lets a
    /// program compare them).
    fn eq(&self, other: &Closure) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Value {
    /// How many value nodes `self` has, stopping once the count passes `cap`
    /// (values share structure, so a small program can build a value whose
    /// printed form is astronomically large: `let b = [a, a, a, a] in …`).
    /// `None` when larger than `cap`.
    pub fn size_up_to(&self, cap: usize) -> Option<usize> {
        if let Some(size) = self.flat_size_up_to(cap) {
            return size;
        }
        self.walk_size_up_to(cap)
    }

    /// [`Value::size_up_to`] of a value with no container below its top (a
    /// record or list of scalars: a tool's usual argument, sized on every
    /// call), without the work list the walk allocates: the walk's steps in
    /// its order (the top, then its items last first, as they are popped).
    /// `None`: the value is not flat.
    fn flat_size_up_to(&self, cap: usize) -> Option<Option<usize>> {
        fn leaf(v: &Value) -> bool {
            !matches!(
                v,
                Value::Record(_)
                    | Value::List(_)
                    | Value::Ok(_)
                    | Value::Err(_)
                    | Value::Some(_)
                    | Value::Json(_)
            )
        }
        let mut count = 0usize;
        // One node popped: counted, checked, then a string's length added.
        let mut step = |v: &Value| {
            count += 1;
            if count > cap {
                return false;
            }
            if let Value::Str(s) = v {
                count += s.len() / 64;
            }
            true
        };
        let fits = match self {
            Value::Record(fields) if fields.iter().all(|(_, x)| leaf(x)) => {
                step(self) && fields.iter().rev().all(|(_, x)| step(x))
            }
            Value::List(items) if items.iter().all(leaf) => {
                step(self) && items.iter().rev().all(&mut step)
            }
            v if leaf(v) => step(v),
            _ => return None,
        };
        Some(fits.then_some(count))
    }

    /// [`Value::size_up_to`] by walking the value with a work list.
    fn walk_size_up_to(&self, cap: usize) -> Option<usize> {
        let mut count = 0usize;
        let mut work: Vec<&Value> = vec![self];
        while let Some(v) = work.pop() {
            count += 1;
            if count > cap {
                return None;
            }
            match v {
                Value::Record(fields) => work.extend(fields.iter().map(|(_, x)| x)),
                Value::List(items) => work.extend(items.iter()),
                Value::Ok(x) | Value::Err(x) | Value::Some(x) => work.push(x),
                Value::Str(s) => count += s.len() / 64,
                Value::Json(j) => count += json_nodes(j, cap.saturating_sub(count)),
                _ => {}
            }
        }
        Some(count)
    }
}

impl Value {
    /// The JSON form: records → objects, lists → arrays, unit → `null`,
    /// `Ok(v)` → `{"Ok": v}`, `Err(e)` → `{"Err": e}` (as λ-Tool encodes them);
    /// extensions: a Float → a number, `Some(v)` → `v`, `None` → `null`
    /// (and a record field holding `None` is left out, as JSON Schema's
    /// optional properties are), `Json` → itself.
    pub fn to_json(&self) -> Json {
        // A scalar needs no look at the stack; a container may nest deep.
        // Strings are copied as they are (`to_string` on an `Rc<str>` goes
        // through `Display` and grows its `String` as it writes).
        match self {
            Value::Unit | Value::None => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Int(n) => Json::Number(Number::from(*n)),
            Value::Float(x) => Number::from_f64(*x).map_or(Json::Null, Json::Number),
            Value::Str(s) => Json::String(String::from(&**s)),
            Value::Fn(_) => Json::String("<function>".to_string()),
            _ => stacker::maybe_grow(32 * 1024, 1024 * 1024, || self.container_to_json()),
        }
    }

    /// [`Value::to_json`] of a container (the stack already checked).
    fn container_to_json(&self) -> Json {
        match self {
            Value::Some(v) => v.to_json(),
            Value::Json(j) => (**j).clone(),
            Value::Record(fields) => {
                let mut map = Map::new();
                for (n, v) in fields.iter() {
                    if matches!(v, Value::None) {
                        continue;
                    }
                    map.insert(String::from(&**n), v.to_json());
                }
                Json::Object(map)
            }
            Value::List(items) => Json::Array(items.iter().map(Value::to_json).collect()),
            Value::Ok(v) => single("Ok", v.to_json()),
            Value::Err(e) => single("Err", e.to_json()),
            scalar => scalar.to_json(),
        }
    }
}

fn single(key: &str, v: Json) -> Json {
    let mut map = Map::new();
    map.insert(key.to_string(), v);
    Json::Object(map)
}

impl fmt::Display for Value {
    /// The human form, in lt syntax: `{name = "Ada", age = 36}`, `[1, 2]`,
    /// `Ok("x")`, `()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        stacker::maybe_grow(32 * 1024, 1024 * 1024, || match self {
            Value::Unit => f.write_str("()"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(n) => write!(f, "{n}"),
            Value::Float(x) => f.write_str(&format_float(*x)),
            Value::Some(v) => write!(f, "Some({v})"),
            Value::None => f.write_str("None"),
            Value::Json(j) => write!(f, "{j}"),
            Value::Str(s) => write!(f, "{:?}", &**s),
            Value::Record(fields) => {
                f.write_str("{")?;
                for (i, (n, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{n} = {v}")?;
                }
                f.write_str("}")
            }
            Value::List(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Value::Ok(v) => write!(f, "Ok({v})"),
            Value::Err(e) => write!(f, "Err({e})"),
            Value::Fn(_) => f.write_str("<function>"),
        })
    }
}

/// A Float as lt writes it: always with a fractional part or an exponent
/// (`2.0`, `0.5`, `1e300`), so it reads back as a Float.
pub fn format_float(x: f64) -> String {
    let s = format!("{x:?}");
    if s.contains(['.', 'e', 'E', 'N', 'i']) {
        s
    } else {
        format!("{s}.0")
    }
}

/// The number of nodes of a JSON value, counted no further than `cap`.
fn json_nodes(j: &Json, cap: usize) -> usize {
    let mut n = 0usize;
    let mut work = vec![j];
    while let Some(x) = work.pop() {
        n += 1;
        if n > cap {
            break;
        }
        match x {
            Json::Array(a) => work.extend(a.iter()),
            Json::Object(o) => work.extend(o.values()),
            Json::String(s) => n += s.len() / 64,
            _ => {}
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::Value;
    use serde_json::json;
    use std::rc::Rc;

    fn s(len: usize) -> Value {
        Value::Str(Rc::from("x".repeat(len).as_str()))
    }

    fn record(fields: Vec<Value>) -> Value {
        Value::Record(
            fields
                .into_iter()
                .enumerate()
                .map(|(i, v)| (Rc::from(format!("f{i}").as_str()), v))
                .collect(),
        )
    }

    /// Flat values (sized without the work list) and nested ones, with
    /// strings whose lengths cross the 64-byte steps, sized against every
    /// cap from 0: the same answer as the walk.
    #[test]
    fn size_up_to_agrees_with_the_walk_for_flat_and_nested_values() {
        let values = vec![
            Value::Unit,
            Value::Int(3),
            s(0),
            s(200),
            record(vec![]),
            record(vec![Value::Int(1), s(130), Value::Bool(true)]),
            record(vec![s(640), s(63), s(64), Value::None]),
            Value::List(Rc::new(vec![s(70), Value::Int(2), s(500)])),
            Value::List(Rc::new(vec![])),
            record(vec![Value::Int(1), record(vec![s(128)])]),
            Value::Ok(Rc::new(record(vec![s(90)]))),
            Value::List(Rc::new(vec![Value::Some(Rc::new(s(65))), s(1)])),
            record(vec![Value::Json(Rc::new(json!({"a": [1, 2, 3]}))), s(66)]),
        ];
        for v in &values {
            for cap in 0..40 {
                assert_eq!(
                    v.size_up_to(cap),
                    v.walk_size_up_to(cap),
                    "{v:?} with a cap of {cap}"
                );
            }
        }
        // The flat path is taken for the flat ones.
        assert!(values[5].flat_size_up_to(10).is_some());
        assert!(values[9].flat_size_up_to(10).is_none());
    }

    /// `to_json` of every kind of value, scalars at the top and inside.
    #[test]
    fn to_json_of_every_kind() {
        let v = record(vec![
            Value::Str(Rc::from("é\"x")),
            Value::Float(1.5),
            Value::None,
            Value::Some(Rc::new(Value::Int(4))),
            Value::List(Rc::new(vec![
                Value::Ok(Rc::new(Value::Unit)),
                Value::Err(Rc::new(s(2))),
            ])),
            Value::Json(Rc::new(json!({"k": [null]}))),
            Value::Bool(false),
        ]);
        assert_eq!(
            v.to_json(),
            json!({"f0": "é\"x", "f1": 1.5, "f3": 4,
                   "f4": [{"Ok": null}, {"Err": "xx"}], "f5": {"k": [null]}, "f6": false})
        );
        assert_eq!(Value::Str(Rc::from("a")).to_json(), json!("a"));
        assert_eq!(Value::Int(-7).to_json(), json!(-7));
    }
}
