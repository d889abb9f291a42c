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
        stacker::maybe_grow(32 * 1024, 1024 * 1024, || match self {
            Value::Unit | Value::None => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Int(n) => Json::Number(Number::from(*n)),
            Value::Float(x) => Number::from_f64(*x).map_or(Json::Null, Json::Number),
            Value::Str(s) => Json::String(s.to_string()),
            Value::Some(v) => v.to_json(),
            Value::Json(j) => (**j).clone(),
            Value::Record(fields) => {
                let mut map = Map::new();
                for (n, v) in fields.iter() {
                    if matches!(v, Value::None) {
                        continue;
                    }
                    map.insert(n.to_string(), v.to_json());
                }
                Json::Object(map)
            }
            Value::List(items) => Json::Array(items.iter().map(Value::to_json).collect()),
            Value::Ok(v) => single("Ok", v.to_json()),
            Value::Err(e) => single("Err", e.to_json()),
            Value::Fn(_) => Json::String("<function>".to_string()),
        })
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
