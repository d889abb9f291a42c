//! Runtime values and their JSON encoding.

use crate::syntax::ast::Name;
use serde_json::{Map, Number, Value as Json};
use std::fmt;
use std::rc::Rc;

/// A value of a well-typed program (functions excepted: closures belong to
/// the interpreter).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `()`.
    Unit,
    /// `true` / `false`.
    Bool(bool),
    /// A 64-bit integer.
    Int(i64),
    /// A string.
    Str(Rc<str>),
    /// A record; fields in the order of the record's type.
    Record(Rc<[(Name, Value)]>),
    /// A list.
    List(Rc<[Value]>),
    /// `Ok(v)`.
    Ok(Rc<Value>),
    /// `Err(e)`.
    Err(Rc<Value>),
}

impl Value {
    /// The JSON form: records → objects, lists → arrays, unit → `null`,
    /// `Ok(v)` → `{"Ok": v}`, `Err(e)` → `{"Err": e}` (as λ-Tool encodes them).
    pub fn to_json(&self) -> Json {
        stacker::maybe_grow(32 * 1024, 1024 * 1024, || match self {
            Value::Unit => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Int(n) => Json::Number(Number::from(*n)),
            Value::Str(s) => Json::String(s.to_string()),
            Value::Record(fields) => {
                let mut map = Map::new();
                for (n, v) in fields.iter() {
                    map.insert(n.to_string(), v.to_json());
                }
                Json::Object(map)
            }
            Value::List(items) => Json::Array(items.iter().map(Value::to_json).collect()),
            Value::Ok(v) => single("Ok", v.to_json()),
            Value::Err(e) => single("Err", e.to_json()),
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
        })
    }
}
