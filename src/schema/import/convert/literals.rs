//! `enum` and `const`: string literals are an lt enum; other scalars keep
//! their base type, the values checked at run time; integers beyond 64
//! bits are `Json` (no lt `Int` holds them).

use super::keywords::types;
use super::{Converter, Mapped, CHECKED};
use crate::schema::import::text::short_json;
use crate::schema::import::ty::Ty;
use serde_json::{Map, Value as Json};

impl Converter {
    /// `enum` / `const`: string literals are an enum type; other values
    /// keep their base type and are checked at run time.
    pub(super) fn literals(&mut self, map: &Map<String, Json>) -> Mapped {
        let (values, keyword): (Vec<&Json>, &str) = match (map.get("enum"), map.get("const")) {
            (Some(Json::Array(vs)), _) => (vs.iter().collect(), "enum"),
            (_, Some(c)) => (vec![c], "const"),
            _ => return Mapped::json("`enum` is not a list"),
        };
        let has_null = values.iter().any(|v| v.is_null());
        let rest: Vec<&Json> = values.iter().copied().filter(|v| !v.is_null()).collect();
        let mapped = if rest.is_empty() {
            if has_null {
                return Mapped::plain(Ty::Unit);
            }
            return Mapped::json("`enum` lists no value");
        } else if rest.iter().all(|v| v.is_string()) {
            let mut lits: Vec<String> = rest
                .iter()
                .filter_map(|v| v.as_str())
                .map(str::to_string)
                .collect();
            lits.sort();
            lits.dedup();
            self.with_local(Mapped::plain(Ty::Enum(lits)), map)
        } else {
            let (types, _) = types(map);
            let beyond: Vec<&Json> = rest.iter().copied().filter(|v| beyond_int(v)).collect();
            if !beyond.is_empty() && types != ["number"] {
                // lt's Int is 64 bits: no value of it is one of these, and
                // a Float would not be what the schema says.
                let shown: Vec<String> = beyond.iter().take(4).map(|v| short_json(v, 40)).collect();
                return Mapped::json(format!(
                    "integers beyond lt's 64-bit Int ({}; {keyword} not checked)",
                    shown.join(", ")
                ));
            }
            let base = if rest.iter().all(|v| v.is_i64()) {
                Ty::Int
            } else if rest.iter().all(|v| v.is_number()) {
                Ty::Float
            } else if rest.iter().all(|v| v.is_boolean()) {
                Ty::Bool
            } else {
                Ty::Json
            };
            let scalars = rest.iter().all(|v| !(v.is_array() || v.is_object()));
            let shown: Vec<String> = rest.iter().take(8).map(|v| short_json(v, 40)).collect();
            let more = if rest.len() > 8 { ", …" } else { "" };
            let mut mapped = self.with_local(Mapped::plain(base), map);
            if scalars && rest.len() <= 1000 {
                let mut checks = mapped.checks.take().unwrap_or_default();
                let value = match keyword {
                    "const" => rest[0].clone(),
                    _ => Json::Array(rest.iter().map(|v| (*v).clone()).collect()),
                };
                checks.insert(keyword.to_string(), value);
                mapped.checks = Some(checks);
                let said = match keyword {
                    "const" => format!("{CHECKED}always {}", shown.join(", ")),
                    _ => format!("{CHECKED}one of {}{more}", shown.join(", ")),
                };
                mapped.notes.insert(0, said);
            } else {
                mapped.notes.insert(
                    0,
                    format!("one of {}{more} (not checked)", shown.join(", ")),
                );
            }
            mapped
        };
        if has_null {
            mapped.nullable()
        } else {
            mapped
        }
    }
}

/// An integer that lt's `Int` (64 bits, signed) cannot hold:
/// `18446744073709551615`, `99999999999999999999` (read as `1e20`).
fn beyond_int(v: &Json) -> bool {
    // 2^63: `i64::MAX` rounds up to it as a float.
    let limit = i64::MAX as f64;
    !v.is_i64()
        && (v.is_u64()
            || v.as_f64()
                .is_some_and(|x| x.fract() == 0.0 && (x >= limit || x < -limit)))
}
