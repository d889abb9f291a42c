//! The wire and the interpreter's values: a call's argument written
//! straight from its value (as [`Value::to_json`] encodes it), and a
//! tool's result read straight into the value the program receives,
//! exactly as [`boundary::program_result`] would give it from the JSON.
//!
//! The direct read takes the plain cases (the declared scalars, records,
//! lists and options, within the size bounds); anything else (a field
//! missing or of the wrong type, a bound passed, an integral float for an
//! `Int`, a `Json`- or `Result`-typed part) goes through the JSON and
//! `boundary`, so the words of every refusal and every edge case are
//! `boundary`'s own.

use super::{Item, Reader, Wire};
use crate::ir::value::Value;
use crate::runtime::boundary;
use crate::syntax::ast::Name;
use crate::types::Type;
use std::rc::Rc;

/// The deepest result read directly; deeper ones go through the JSON
/// (whose conversion grows the stack as it must).
const MAX_READ_DEPTH: usize = 64;

/// The most entries of an object read directly as a record.
const MAX_ENTRIES: usize = 16;

impl Wire {
    /// `value` on the wire: the bytes of [`Wire::from_json`] of
    /// `value.to_json()`, object keys in the same (sorted) order, written
    /// without building the JSON.
    pub fn from_value(value: &Value) -> Wire {
        let mut w = Wire::new();
        w.value(value);
        w
    }

    /// Writes `value` as [`Wire::from_value`] does.
    pub fn value(&mut self, value: &Value) {
        match value {
            Value::Unit | Value::None => self.null(),
            Value::Bool(b) => self.bool(*b),
            Value::Int(n) => self.i64(*n),
            Value::Float(x) => {
                if self.f64(*x).is_err() {
                    self.null();
                }
            }
            Value::Str(s) => self.str(s),
            Value::Fn(_) => self.str("<function>"),
            _ => stacker::maybe_grow(32 * 1024, 1024 * 1024, || self.container(value)),
        }
    }

    fn container(&mut self, value: &Value) {
        match value {
            Value::Some(v) => self.value(v),
            Value::Json(j) => self.json(j),
            Value::Record(fields) => self.record(fields),
            Value::List(items) => {
                let open = self.open_array();
                for v in items.iter() {
                    self.value(v);
                }
                let _ = self.close(open, items.len());
            }
            Value::Ok(v) => self.single("Ok", v),
            Value::Err(e) => self.single("Err", e),
            scalar => self.value(scalar),
        }
    }

    fn single(&mut self, key: &str, v: &Value) {
        let open = self.open_object();
        self.key(key);
        self.value(v);
        let _ = self.close(open, 1);
    }

    /// A record as `to_json`'s object: its fields in key order (a JSON
    /// object's), the ones holding `None` left out.
    fn record(&mut self, fields: &[(Name, Value)]) {
        let n = fields.len();
        if n > MAX_ENTRIES {
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by(|&a, &b| fields[a].0.cmp(&fields[b].0));
            return self.entries(order.iter().map(|&i| &fields[i]));
        }
        // An insertion sort of the (few) field indices, without allocating.
        let mut order = [0u8; MAX_ENTRIES];
        for i in 0..n {
            let mut j = i;
            while j > 0 && fields[usize::from(order[j - 1])].0 > fields[i].0 {
                order[j] = order[j - 1];
                j -= 1;
            }
            // `i` < MAX_ENTRIES, which fits in a byte.
            order[j] = u8::try_from(i).unwrap_or(u8::MAX);
        }
        self.entries(order[..n].iter().map(|&i| &fields[usize::from(i)]));
    }

    fn entries<'v>(&mut self, fields: impl Iterator<Item = &'v (Name, Value)>) {
        let open = self.open_object();
        let mut n = 0;
        for (k, v) in fields {
            if matches!(v, Value::None) {
                continue;
            }
            self.key(k);
            self.value(v);
            n += 1;
        }
        let _ = self.close(open, n);
    }
}

/// What a program receives for a tool's result on the wire: exactly
/// [`boundary::program_result`] of its JSON (`Ok`: the value; `Err`: the
/// message of the program's `Err`), read directly where the result is
/// plain (module note).
pub fn program_result(
    tool: &str,
    wire: &Wire,
    output: &Type,
    max_list_len: usize,
    max_values: usize,
) -> Result<Value, String> {
    if let Some(v) = plain_result(wire, output, max_list_len, max_values) {
        return Ok(v);
    }
    match wire.to_json() {
        Ok(json) => {
            let v = boundary::program_result(tool, &json, output, max_list_len, max_values);
            boundary::drop_deep(json);
            v
        }
        Err(e) => Err(format!("tool {tool} returned an invalid result: {e}")),
    }
}

/// The value [`program_result`] gives for a plain result, read directly;
/// `None` for any other (module note).
pub fn plain_result(
    wire: &Wire,
    output: &Type,
    max_list_len: usize,
    max_values: usize,
) -> Option<Value> {
    if wire.nodes() > max_values || wire.longest_array() > max_list_len {
        return None;
    }
    let mut r = wire.reader();
    let v = read(&mut r, output, 0)?;
    r.at_end().then_some(v)
}

/// The next value as `ty`, when it is plain (`None`: read it through the
/// JSON instead).
fn read(r: &mut Reader<'_>, ty: &Type, depth: usize) -> Option<Value> {
    if depth > MAX_READ_DEPTH {
        return None;
    }
    match ty {
        Type::Option(inner) => {
            if r.next_is_null() {
                r.item().ok()?;
                return Some(Value::None);
            }
            return Some(Value::Some(Rc::new(read(r, inner, depth + 1)?)));
        }
        Type::Linear(inner) => return read(r, inner, depth + 1),
        _ => {}
    }
    Some(match (ty, r.item().ok()?) {
        (Type::Unit, Item::Null) => Value::Unit,
        (Type::Bool, Item::Bool(b)) => Value::Bool(b),
        (Type::Int, Item::I64(i)) => Value::Int(i),
        (Type::Float, Item::F64(x)) if x.is_finite() => Value::Float(x),
        // As `serde_json`'s `as_f64` reads an integer.
        #[allow(clippy::cast_precision_loss)]
        (Type::Float, Item::I64(i)) => Value::Float(i as f64),
        #[allow(clippy::cast_precision_loss)]
        (Type::Float, Item::U64(u)) => Value::Float(u as f64),
        (Type::String | Type::Approval, Item::Str(s)) => Value::Str(Rc::from(s)),
        (Type::Enum(lits), Item::Str(s)) if lits.iter().any(|l| &**l == s) => {
            Value::Str(Rc::from(s))
        }
        (Type::Record(fields) | Type::OpenRecord(fields), Item::Object(n)) => {
            record(r, fields, n, depth)?
        }
        (Type::List(elem), Item::Array(n)) => {
            let mut out = Vec::with_capacity(n.min(r.remaining()));
            for _ in 0..n {
                out.push(read(r, elem, depth + 1)?);
            }
            Value::List(Rc::new(out))
        }
        _ => return None,
    })
}

/// An object of `n` entries as a record of `fields`, in one pass: each
/// entry read into the field of its name (a repeated key's last entry
/// stays, as JSON reads it), extra entries passed over, a missing
/// `Option` field `None`. A record of more than [`MAX_ENTRIES`] fields
/// goes through the JSON.
fn record(r: &mut Reader<'_>, fields: &[(Name, Type)], n: usize, depth: usize) -> Option<Value> {
    if n > MAX_ENTRIES || fields.len() > MAX_ENTRIES {
        return None;
    }
    let mut values: [Option<Value>; MAX_ENTRIES] = [const { None }; MAX_ENTRIES];
    for j in 0..n {
        let key = r.key_bytes().ok()?;
        // The `j`th field first: a result usually lists them in order.
        let at = match fields.get(j) {
            Some((name, _)) if name.as_bytes() == key => Some(j),
            _ => fields.iter().position(|(name, _)| name.as_bytes() == key),
        };
        match at {
            Some(i) => values[i] = Some(read(r, &fields[i].1, depth + 1)?),
            None => r.skip().ok()?,
        }
    }
    let complete = fields
        .iter()
        .zip(&values)
        .all(|((_, fty), v)| v.is_some() || matches!(fty, Type::Option(_)));
    if !complete {
        return None;
    }
    let out: Rc<[(Name, Value)]> = fields
        .iter()
        .zip(values.iter_mut())
        .map(|((name, _), v)| (name.clone(), v.take().unwrap_or(Value::None)))
        .collect();
    Some(Value::Record(out))
}
