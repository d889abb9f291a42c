//! The boundary contract: JSON from a tool → a value of the declared type.
//!
//! Rules (issue 3), by type:
//!
//! | type | accepted JSON |
//! |---|---|
//! | `Unit` | `null` or `{}` |
//! | `Bool`, `String` | a boolean, a string |
//! | `Int` | an integer in the 64-bit range (also `3.0`, an integral float) |
//! | `{a: T, …}` | an object with every declared field (extra fields are dropped) |
//! | `List T` | an array |
//! | `Result<T, E>` | `{"Ok": t}` or `{"Err": e}` |
//! | `!T` | as `T` |
//! | `Float` (extension) | a number (an integer too), as a finite 64-bit float |
//! | `Option T` (extension) | `null` → `None`, anything else as `T` in `Some`; a record field of an `Option` type may be absent (`None`) |
//! | `"a" \| "b"` (extension) | one of the strings listed |
//! | `Json` (extension) | any JSON nested at most [`MAX_JSON_DEPTH`] levels |
//!
//! Anything else is a [`BoundaryError`] naming the path to the offending part:
//! `field orders[2].amount: expected Int, found String`. The interpreter turns
//! it into the call's `Err("tool NAME returned an invalid result: …")`, so a
//! program never sees data that does not match its tool declarations.

use super::value::Value;
use crate::syntax::ast::Name;
use crate::types::Type;
use serde_json::Value as Json;
use std::fmt;
use std::rc::Rc;

/// Why a JSON value does not fit a type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundaryError {
    /// Where: `.field`, `[index]`, `.Ok` segments from the root (empty: the whole value).
    pub path: String,
    /// What was wrong, e.g. `expected Int, found String`.
    pub problem: String,
}

impl fmt::Display for BoundaryError {
    /// `field a.b[2]: expected Int, found String`, or just the problem at the root.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.path.strip_prefix('.') {
            Some(p) => write!(f, "field {p}: {}", self.problem),
            None if self.path.is_empty() => f.write_str(&self.problem),
            None => write!(f, "element {}: {}", self.path, self.problem),
        }
    }
}

/// A short description of a JSON value's kind, in lt's terms.
fn kind(json: &Json) -> String {
    match json {
        Json::Null => "null".to_string(),
        Json::Bool(_) => "Bool".to_string(),
        Json::Number(n) if n.is_i64() || n.is_u64() => "Int".to_string(),
        Json::Number(n) => format!("Float {n}"),
        Json::String(_) => "String".to_string(),
        Json::Array(_) => "a list".to_string(),
        Json::Object(m) if m.is_empty() => "an empty object".to_string(),
        Json::Object(_) => "an object".to_string(),
    }
}

/// Converts `json` to a value of type `ty`, or says where it does not fit.
pub fn from_json(json: &Json, ty: &Type) -> Result<Value, BoundaryError> {
    convert(json, ty)
}

/// Whether `json` fits `ty`: exactly when [`from_json`] would succeed, with
/// nothing built (no value, no path). The control plane's argument check
/// asks this of every call and converts only an argument that does not
/// fit, for the error's words.
pub fn fits(json: &Json, ty: &Type) -> bool {
    if leaf(json, ty) {
        return fits_here(json, ty);
    }
    stacker::maybe_grow(32 * 1024, 1024 * 1024, || fits_here(json, ty))
}

/// Whether `json` as `ty` is checked or converted without going a level
/// deeper: a scalar against a type that wraps none. Such a level needs no
/// look at the stack (`stacker`), which a call's every field paid.
fn leaf(json: &Json, ty: &Type) -> bool {
    !matches!(json, Json::Array(_) | Json::Object(_))
        && !matches!(ty, Type::Option(_) | Type::Linear(_))
}

/// Whether `value` (a call's argument, the interpreter's) fits `ty`:
/// exactly [`fits`] of `value.to_json()`, answered from the value itself
/// where it plainly fits (every part of the declared type, no field left
/// out or added), else from its JSON.
pub fn value_fits(value: &Value, ty: &Type) -> bool {
    if plainly_fits(value, ty, 0) {
        return true;
    }
    let json = value.to_json();
    let f = fits(&json, ty);
    drop_deep(json);
    f
}

/// Whether `value` surely fits `ty` (`false`: perhaps not; ask the JSON).
fn plainly_fits(value: &Value, ty: &Type, depth: usize) -> bool {
    if depth > 64 {
        return false;
    }
    match (ty, value) {
        (Type::Unit, Value::Unit)
        | (Type::Bool, Value::Bool(_))
        | (Type::Int, Value::Int(_))
        | (Type::String | Type::Approval, Value::Str(_))
        // `None` (and `()`) are `null`, which every option takes.
        | (Type::Option(_), Value::None | Value::Unit) => true,
        (Type::Float, Value::Float(x)) => x.is_finite(),
        (Type::Enum(lits), Value::Str(s)) => lits.iter().any(|l| **l == **s),
        (Type::Option(inner), Value::Some(v)) => plainly_fits(v, inner, depth + 1),
        (Type::Linear(inner), _) => plainly_fits(value, inner, depth + 1),
        (Type::Record(fields) | Type::OpenRecord(fields), Value::Record(values)) => {
            fields.len() == values.len()
                && fields
                    .iter()
                    .zip(values.iter())
                    .all(|((n, t), (m, v))| {
                        (Rc::ptr_eq(n, m) || n == m) && plainly_fits(v, t, depth + 1)
                    })
        }
        (Type::List(elem), Value::List(items)) => {
            items.iter().all(|v| plainly_fits(v, elem, depth + 1))
        }
        _ => false,
    }
}

/// [`fits`] of one level (the stack already checked where it must be).
fn fits_here(json: &Json, ty: &Type) -> bool {
    match (ty, json) {
        (Type::Unit, Json::Null) => true,
        (Type::Unit, Json::Object(m)) => m.is_empty(),
        (Type::Bool, Json::Bool(_)) | (Type::String | Type::Approval, Json::String(_)) => true,
        (Type::Int, Json::Number(n)) => {
            n.as_i64().is_some()
                || matches!(n.as_f64(), Some(f) if f.fract() == 0.0 && f.abs() <= EXACT_INT)
        }
        (Type::Float, Json::Number(n)) => n.as_f64().is_some_and(f64::is_finite),
        (Type::Option(_), Json::Null) => true,
        (Type::Option(inner) | Type::Linear(inner), _) => fits(json, inner),
        (Type::Enum(lits), Json::String(s)) => lits.iter().any(|l| &**l == s.as_str()),
        (Type::Json, _) => json_depth_within(json, MAX_JSON_DEPTH),
        (Type::Record(fields) | Type::OpenRecord(fields), Json::Object(map)) => {
            fields.iter().all(|(name, fty)| match map.get(&**name) {
                Some(j) => fits(j, fty),
                None => matches!(fty, Type::Option(_)),
            })
        }
        (Type::List(elem), Json::Array(items)) => items.iter().all(|j| fits(j, elem)),
        (Type::Result(ok, err), Json::Object(map)) if map.len() == 1 => {
            match (map.get("Ok"), map.get("Err")) {
                (Some(v), _) => fits(v, ok),
                (_, Some(e)) => fits(e, err),
                _ => false,
            }
        }
        _ => false,
    }
}

/// [`from_json`] for a tool's result, with the message the program sees in
/// `Err`: `tool lookup_account returned an invalid result: field …`.
pub fn tool_result(tool: &str, json: &Json, ty: &Type) -> Result<Value, String> {
    from_json(json, ty).map_err(|e| format!("tool {tool} returned an invalid result: {e}"))
}

/// What a program receives for a tool's JSON result: the size bounds
/// ([`check_size`]: list length, value count), then the declared output
/// type ([`tool_result`]). `Err` is the message of the program's `Err`.
/// The interpreter, the control plane's log and replay all use this one
/// function, so the `result` a log records is exactly what the program saw.
pub fn program_result(
    tool: &str,
    json: &Json,
    output: &Type,
    max_list_len: usize,
    max_values: usize,
) -> Result<Value, String> {
    check_size(json, max_list_len, max_values)
        .map_err(|msg| format!("tool {tool} returned an invalid result: {msg}"))?;
    tool_result(tool, json, output)
}

/// Drops `value` without recursing once per level of nesting (the default
/// drop of a `serde_json::Value` does, and a tool result nested a million
/// levels deep would overflow the stack).
pub fn drop_deep(value: Json) {
    if flat(&value) {
        // One level of recursion at most, and no work list to allocate.
        return drop(value);
    }
    let mut work = vec![value];
    while let Some(v) = work.pop() {
        match v {
            Json::Array(items) => work.extend(items),
            Json::Object(fields) => work.extend(fields.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// Whether `json` holds no array or object inside (it may be one): a
/// tool's usual result, walked without a work list.
fn flat(json: &Json) -> bool {
    let scalar = |j: &Json| !matches!(j, Json::Array(_) | Json::Object(_));
    match json {
        Json::Array(items) => items.iter().all(scalar),
        Json::Object(map) => map.values().all(scalar),
        _ => true,
    }
}

/// Checks that no array inside `json` is longer than `max` items and that
/// it has at most `max_nodes` values in all (a tool's result is bounded
/// before it is converted: converted values take several times the memory
/// of their JSON text).
pub fn check_size(json: &Json, max: usize, max_nodes: usize) -> Result<(), String> {
    if flat(json) {
        // The walk below, without its work list: the value itself, its
        // length, then its items one by one.
        let items = match json {
            Json::Array(items) => items.len(),
            Json::Object(map) => map.len(),
            _ => 0,
        };
        if max_nodes == 0 {
            return Err(format!("more than {max_nodes} values in all"));
        }
        if matches!(json, Json::Array(_)) && items > max {
            return Err(format!(
                "a list of {items} items, more than the limit of {max}"
            ));
        }
        if 1 + items > max_nodes {
            return Err(format!("more than {max_nodes} values in all"));
        }
        return Ok(());
    }
    let mut work: Vec<&Json> = vec![json];
    let mut nodes = 0usize;
    while let Some(j) = work.pop() {
        nodes += 1;
        if nodes > max_nodes {
            return Err(format!("more than {max_nodes} values in all"));
        }
        match j {
            Json::Array(items) => {
                if items.len() > max {
                    return Err(format!(
                        "a list of {} items, more than the limit of {max}",
                        items.len()
                    ));
                }
                work.extend(items.iter());
            }
            Json::Object(map) => work.extend(map.values()),
            _ => {}
        }
    }
    Ok(())
}

/// How deeply a value of type `Json` may nest (deeper data from a tool is
/// that call's `Err`; the program's own `parse_json` stops at 128 levels).
pub const MAX_JSON_DEPTH: usize = 10_000;

/// The JSON a string holds (nested at most 128 levels), for `parse_json`.
pub fn parse_json_text(s: &str) -> Option<Json> {
    serde_json::from_str(s).ok()
}

/// The largest integral float read as an `Int` (2^53): beyond, a float
/// stands for many integers.
const EXACT_INT: f64 = 9_007_199_254_740_992.0;

fn json_depth_within(json: &Json, max: usize) -> bool {
    let mut work: Vec<(&Json, usize)> = vec![(json, 1)];
    while let Some((j, d)) = work.pop() {
        if d > max {
            return false;
        }
        match j {
            Json::Array(items) => work.extend(items.iter().map(|x| (x, d + 1))),
            Json::Object(map) => work.extend(map.values().map(|x| (x, d + 1))),
            _ => {}
        }
    }
    true
}

fn mismatch(ty: &Type, json: &Json) -> BoundaryError {
    BoundaryError {
        path: String::new(),
        problem: format!("expected {ty}, found {}", kind(json)),
    }
}

impl BoundaryError {
    /// The error of a part, seen from the value holding it at `step`
    /// (`.field`, `[index]`, `.Ok`).
    fn within(mut self, step: impl fmt::Display) -> BoundaryError {
        self.path = format!("{step}{}", self.path);
        self
    }
}

/// `json` as a value of `ty`. An error's path is relative to `json`; each
/// level puts its step in front as the error passes it, so a value that
/// fits formats no path at all.
fn convert(json: &Json, ty: &Type) -> Result<Value, BoundaryError> {
    if leaf(json, ty) {
        return convert_here(json, ty);
    }
    stacker::maybe_grow(32 * 1024, 1024 * 1024, || convert_here(json, ty))
}

/// [`convert`] of one level (the stack already checked where it must be).
fn convert_here(json: &Json, ty: &Type) -> Result<Value, BoundaryError> {
    match (ty, json) {
        (Type::Unit, Json::Null) => Ok(Value::Unit),
        (Type::Unit, Json::Object(m)) if m.is_empty() => Ok(Value::Unit),
        (Type::Bool, Json::Bool(b)) => Ok(Value::Bool(*b)),
        (Type::String, Json::String(s)) => Ok(Value::Str(Rc::from(s.as_str()))),
        (Type::Int, Json::Number(n)) => {
            if let Some(i) = n.as_i64() {
                return Ok(Value::Int(i));
            }
            // Integral floats such as `3.0` (common from JSON encoders), as
            // long as they are exact: up to 2^53 in size. Beyond, a float
            // stands for many integers (and an integer literal outside the
            // Int range was read as one), so it is refused, never rounded.
            match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() <= EXACT_INT => {
                    #[allow(clippy::cast_possible_truncation)]
                    Ok(Value::Int(f as i64))
                }
                _ if n.is_u64() => Err(BoundaryError {
                    path: String::new(),
                    problem: format!("expected Int, found {n}, which is larger than {}", i64::MAX),
                }),
                Some(f) if f.fract() == 0.0 => Err(BoundaryError {
                    path: String::new(),
                    problem: format!(
                        "expected Int, found a number outside the Int range ({} to {}), or a float too large to be exact (beyond 2^53): about {f:e}",
                        i64::MIN,
                        i64::MAX
                    ),
                }),
                _ => Err(mismatch(ty, json)),
            }
        }
        (Type::Float, Json::Number(n)) => match n.as_f64() {
            Some(x) if x.is_finite() => Ok(Value::Float(x)),
            _ => Err(mismatch(ty, json)),
        },
        (Type::Option(_), Json::Null) => Ok(Value::None),
        (Type::Option(inner), _) => Ok(Value::Some(Rc::new(convert(json, inner)?))),
        (Type::Enum(lits), Json::String(s)) => {
            if lits.iter().any(|l| &**l == s.as_str()) {
                Ok(Value::Str(Rc::from(s.as_str())))
            } else {
                let allowed: Vec<String> = lits.iter().map(|l| format!("{:?}", &**l)).collect();
                let shown: String = s.chars().take(60).collect();
                Err(BoundaryError {
                    path: String::new(),
                    problem: format!("expected one of {}, found {shown:?}", allowed.join(", ")),
                })
            }
        }
        // An approval token (a string the control plane minted); only in a
        // tool's input, where the control plane checks it.
        (Type::Approval, Json::String(s)) => Ok(Value::Str(Rc::from(s.as_str()))),
        (Type::Json, _) => {
            if json_depth_within(json, MAX_JSON_DEPTH) {
                Ok(Value::Json(Rc::new(json.clone())))
            } else {
                Err(BoundaryError {
                    path: String::new(),
                    problem: format!("JSON nested more than {MAX_JSON_DEPTH} levels deep"),
                })
            }
        }
        (Type::Record(fields) | Type::OpenRecord(fields), Json::Object(map)) => {
            // Collected straight into the record's `Rc<[_]>`, one
            // allocation (a slice's `map` has an exact length; through a
            // `Vec` it was two and a copy, on every tool result). The first
            // field that does not convert is kept, and the fields after it
            // are not converted (a placeholder each, dropped with the rest).
            let mut failed: Option<BoundaryError> = None;
            let out: Rc<[(Name, Value)]> = fields
                .iter()
                .map(|(name, fty)| {
                    if failed.is_some() {
                        return (name.clone(), Value::Unit);
                    }
                    let v = match map.get(&**name) {
                        Some(j) => convert(j, fty),
                        None if matches!(fty, Type::Option(_)) => Ok(Value::None),
                        None => Err(BoundaryError {
                            path: String::new(),
                            problem: format!("missing (expected {fty})"),
                        }),
                    };
                    match v {
                        Ok(v) => (name.clone(), v),
                        Err(e) => {
                            failed = Some(e.within(format_args!(".{name}")));
                            (name.clone(), Value::Unit)
                        }
                    }
                })
                .collect();
            match failed {
                Some(e) => Err(e),
                None => Ok(Value::Record(out)),
            }
        }
        (Type::List(elem), Json::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, j) in items.iter().enumerate() {
                out.push(convert(j, elem).map_err(|e| e.within(format_args!("[{i}]")))?);
            }
            Ok(Value::List(out.into()))
        }
        (Type::Result(ok, err), Json::Object(map)) if map.len() == 1 => {
            let (key, inner, inner_ty) = match (map.get("Ok"), map.get("Err")) {
                (Some(v), _) => ("Ok", v, &**ok),
                (_, Some(e)) => ("Err", e, &**err),
                _ => return Err(mismatch(ty, json)),
            };
            let v =
                Rc::new(convert(inner, inner_ty).map_err(|e| e.within(format_args!(".{key}")))?);
            Ok(if key == "Ok" {
                Value::Ok(v)
            } else {
                Value::Err(v)
            })
        }
        (Type::Linear(inner), _) => convert(json, inner),
        (Type::Fun(..) | Type::Meta(_) | Type::Error, _) => Err(BoundaryError {
            path: String::new(),
            problem: format!("{ty} cannot be received from a tool"),
        }),
        _ => Err(mismatch(ty, json)),
    }
}
