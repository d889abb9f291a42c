//! `allOf`, and keywords beside a `$ref`: the schemas merged into one when
//! the merge is sound, else the reason it is not (the caller makes that
//! part `Json`, saying why).
//!
//! The parts are the schema's own keywords, the target of its `$ref`, and
//! each `allOf` entry (their `$ref`s and `allOf`s followed in turn). A
//! value must satisfy every part, so they merge keyword by keyword:
//!
//! | keyword | merged |
//! | --- | --- |
//! | `type` (with `nullable`) | the types common to all (`integer` within `number`) |
//! | `properties` | their union; a property in two parts must be the same schema |
//! | `required` | the union of the lists |
//! | `enum` | the values common to all |
//! | `minimum`, `minLength`, … / `maximum`, `maxLength`, … | the tighter bound |
//! | `uniqueItems` | true if one says so |
//! | `additionalProperties` | only when the part that restricts it declares every property of the others |
//! | annotations (`description`, `title`, `default`, …) | the first one (the schema's own first) |
//! | any other keyword (`format`, `pattern`, `items`, `anyOf`, …) | in one part only, or the same in each |
//!
//! A union (`anyOf`/`oneOf`) does not merge with other constraints: lt
//! would map the union alone and drop the rest.

use super::refs::percent_decode;
use super::MAX_DEPTH;
use crate::schema::import::detect::kind;
use crate::schema::import::text::short_json;
use serde_json::{Map, Value as Json};

/// Keywords that describe a schema without constraining its values.
const ANNOTATIONS: [&str; 13] = [
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "$schema",
    "$id",
    "$anchor",
    "$defs",
    "definitions",
];

/// Keywords a merged schema leaves out: followed, or only for `$ref`s.
const DROPPED: [&str; 7] = [
    "$ref",
    "allOf",
    "$defs",
    "definitions",
    "$schema",
    "$id",
    "$anchor",
];

/// Lower bounds: the larger one holds.
const LOWER: [&str; 6] = [
    "minimum",
    "exclusiveMinimum",
    "minLength",
    "minItems",
    "minProperties",
    "minContains",
];

/// Upper bounds: the smaller one holds.
const UPPER: [&str; 6] = [
    "maximum",
    "exclusiveMaximum",
    "maxLength",
    "maxItems",
    "maxProperties",
    "maxContains",
];

/// The most parts one merge takes (each `$ref` or `allOf` entry is one).
const MAX_PARTS: usize = 64;

/// True for a keyword that only describes (`description`, `x-order`, …).
pub(super) fn is_annotation(key: &str) -> bool {
    ANNOTATIONS.contains(&key) || key.starts_with("x-")
}

/// Whether `map` has nothing but annotations beside `key`.
pub(super) fn only_annotations_beside(map: &Map<String, Json>, key: &str) -> bool {
    map.keys().all(|k| k == key || is_annotation(k))
}

/// A merged schema, and the JSON pointers of the `$ref`s followed to make
/// it (a `$ref` back to one of them inside it is recursive).
pub(super) struct Merged {
    pub schema: Map<String, Json>,
    pub pointers: Vec<String>,
}

/// Merges `map` (its own keywords, its `$ref`, its `allOf`) into one
/// schema; `root` resolves `$ref`s, `busy` are the pointers being
/// converted (a `$ref` to one is recursive), `depth` how deep `map` is.
pub(super) fn merge(
    map: &Map<String, Json>,
    root: &Json,
    busy: &[&str],
    depth: usize,
) -> Result<Merged, String> {
    let mut walk = Walk {
        root,
        busy,
        stack: Vec::new(),
        parts: Vec::new(),
        pointers: Vec::new(),
    };
    walk.collect_map(map, depth)?;
    let mut out = Map::new();
    for part in &walk.parts {
        let part = normalise(part);
        for (key, value) in part {
            combine(&mut out, key, value)?;
        }
    }
    check_closed(&walk.parts, &out)?;
    if out.contains_key("anyOf") || out.contains_key("oneOf") {
        if let Some(other) = out
            .keys()
            .find(|k| !is_annotation(k) && !["anyOf", "oneOf"].contains(&k.as_str()))
        {
            return Err(format!("an anyOf/oneOf union beside `{other}`"));
        }
    }
    Ok(Merged {
        schema: out,
        pointers: walk.pointers,
    })
}

struct Walk<'a, 'b> {
    root: &'a Json,
    busy: &'b [&'b str],
    stack: Vec<String>,
    parts: Vec<&'a Map<String, Json>>,
    pointers: Vec<String>,
}

impl<'a> Walk<'a, '_> {
    fn collect(&mut self, schema: &'a Json, depth: usize) -> Result<(), String> {
        match schema {
            Json::Bool(true) => Ok(()),
            Json::Bool(false) => Err("one of the schemas is `false` (no value)".into()),
            Json::Object(map) => self.collect_map(map, depth),
            other => Err(format!("one of the schemas is {}", kind(other))),
        }
    }

    fn collect_map(&mut self, map: &'a Map<String, Json>, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("nested more than {MAX_DEPTH} levels deep"));
        }
        self.parts.push(map);
        if self.parts.len() > MAX_PARTS {
            return Err(format!("more than {MAX_PARTS} schemas to merge"));
        }
        if let Some(r) = map.get("$ref") {
            let (pointer, target) = self.resolve(r)?;
            if self.busy.contains(&pointer.as_str()) || self.stack.contains(&pointer) {
                return Err(format!(
                    "recursive: {} refers back to itself",
                    short_json(r, 60)
                ));
            }
            if !self.pointers.contains(&pointer) {
                self.pointers.push(pointer.clone());
            }
            self.stack.push(pointer);
            self.collect(target, depth + 1)?;
            self.stack.pop();
        }
        match map.get("allOf") {
            None => Ok(()),
            Some(Json::Array(all)) => all.iter().try_for_each(|e| self.collect(e, depth + 1)),
            Some(other) => Err(format!("`allOf` is {}, not a list", kind(other))),
        }
    }

    /// The pointer and target of a local `$ref`.
    fn resolve(&self, r: &Json) -> Result<(String, &'a Json), String> {
        let Some(text) = r.as_str() else {
            return Err("a `$ref` is not a string".into());
        };
        let Some(fragment) = text.strip_prefix('#') else {
            return Err(format!(
                "a $ref to another document ({})",
                short_json(r, 60)
            ));
        };
        let pointer = percent_decode(fragment);
        match self.root.pointer(&pointer) {
            Some(target) => Ok((pointer, target)),
            None => Err(format!("unresolved $ref {}", short_json(r, 60))),
        }
    }
}

/// A part as merging reads it: draft-4 boolean bounds as 2020-12
/// (`"minimum": 0, "exclusiveMinimum": true` → `"exclusiveMinimum": 0`),
/// `nullable` as a `null` type, followed keywords left out.
fn normalise(part: &Map<String, Json>) -> Map<String, Json> {
    let mut out: Map<String, Json> = part
        .iter()
        .filter(|(k, _)| !DROPPED.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (bound, exclusive) in [
        ("minimum", "exclusiveMinimum"),
        ("maximum", "exclusiveMaximum"),
    ] {
        if let Some(Json::Bool(on)) = out.get(exclusive).cloned() {
            out.remove(exclusive);
            if on {
                if let Some(b) = out.remove(bound) {
                    out.insert(exclusive.into(), b);
                }
            }
        }
    }
    if let Some(nullable) = out.remove("nullable") {
        let typed = match out.get("type") {
            Some(Json::String(t)) => Some(vec![Json::from(t.as_str())]),
            Some(Json::Array(ts)) => Some(ts.clone()),
            _ => None,
        };
        if let (Json::Bool(true), Some(mut ts)) = (nullable, typed) {
            ts.push(Json::from("null"));
            out.insert("type".into(), Json::Array(ts));
        }
    }
    out
}

/// Adds one keyword of a part to the merged schema.
fn combine(out: &mut Map<String, Json>, key: String, value: Json) -> Result<(), String> {
    let Some(have) = out.get(&key) else {
        out.insert(key, value);
        return Ok(());
    };
    if have == &value || is_annotation(&key) {
        return Ok(());
    }
    let merged = match (key.as_str(), have, &value) {
        ("type", a, b) => common_types(a, b)?,
        ("properties", Json::Object(a), Json::Object(b)) => {
            let mut union = a.clone();
            for (name, schema) in b {
                match union.get(name) {
                    Some(s) if s != schema => {
                        return Err(format!(
                            "the property {} has a different schema in two of them",
                            short_json(&Json::from(name.as_str()), 40)
                        ))
                    }
                    _ => {
                        union.insert(name.clone(), schema.clone());
                    }
                }
            }
            Json::Object(union)
        }
        ("required", Json::Array(a), Json::Array(b)) => {
            let mut union = a.clone();
            union.extend(b.iter().filter(|n| !a.contains(n)).cloned());
            Json::Array(union)
        }
        ("enum", Json::Array(a), Json::Array(b)) => {
            let common: Vec<Json> = a.iter().filter(|v| b.contains(v)).cloned().collect();
            if common.is_empty() {
                return Err("their `enum`s have no value in common".into());
            }
            Json::Array(common)
        }
        ("uniqueItems", Json::Bool(a), Json::Bool(b)) => Json::Bool(*a || *b),
        ("additionalProperties", Json::Bool(true), other)
        | ("additionalProperties", other, Json::Bool(true)) => other.clone(),
        (k, Json::Number(a), Json::Number(b)) if LOWER.contains(&k) || UPPER.contains(&k) => {
            let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
            let lower = LOWER.contains(&k);
            if (x >= y) == lower {
                Json::Number(a.clone())
            } else {
                Json::Number(b.clone())
            }
        }
        (k, a, b) => {
            return Err(format!(
                "`{k}` is {} in one and {} in another",
                short_json(a, 40),
                short_json(b, 40)
            ))
        }
    };
    out.insert(key, merged);
    Ok(())
}

/// The types two `type` keywords have in common.
fn common_types(a: &Json, b: &Json) -> Result<Json, String> {
    let list = |t: &Json| -> Vec<String> {
        match t {
            Json::String(s) => vec![s.clone()],
            Json::Array(ts) => ts
                .iter()
                .filter_map(Json::as_str)
                .map(String::from)
                .collect(),
            _ => Vec::new(),
        }
    };
    let (xs, ys) = (list(a), list(b));
    let mut common: Vec<String> = Vec::new();
    for x in &xs {
        let shared = if ys.contains(x) {
            Some(x.as_str())
        } else if (x == "integer" && ys.iter().any(|y| y == "number"))
            || (x == "number" && ys.iter().any(|y| y == "integer"))
        {
            Some("integer")
        } else {
            None
        };
        if let Some(t) = shared.filter(|t| !common.iter().any(|c| c == t)) {
            common.push(t.to_string());
        }
    }
    match common.as_slice() {
        [] => Err(format!(
            "their types ({} and {}) have no value in common",
            short_json(a, 40),
            short_json(b, 40)
        )),
        [one] => Ok(Json::from(one.as_str())),
        _ => Ok(Json::Array(common.into_iter().map(Json::from).collect())),
    }
}

/// A part that restricts other properties (`additionalProperties` false or
/// a schema) must declare every property the merged schema has: else what
/// another part adds is, for it, an other property.
fn check_closed(parts: &[&Map<String, Json>], out: &Map<String, Json>) -> Result<(), String> {
    let mut names: Vec<&str> = Vec::new();
    if let Some(Json::Object(props)) = out.get("properties") {
        names.extend(props.keys().map(String::as_str));
    }
    if let Some(Json::Array(required)) = out.get("required") {
        names.extend(required.iter().filter_map(Json::as_str));
    }
    for part in parts {
        match part.get("additionalProperties") {
            None | Some(Json::Bool(true)) => continue,
            Some(_) => {}
        }
        let declared = |n: &str| {
            part.get("properties")
                .and_then(Json::as_object)
                .is_some_and(|p| p.contains_key(n))
        };
        if let Some(n) = names.iter().find(|n| !declared(n)) {
            return Err(format!(
                "one of them restricts additionalProperties, and another adds the property {}",
                short_json(&Json::from(*n), 40)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn merged(schema: Json) -> Result<Json, String> {
        let Json::Object(map) = &schema else {
            return Err("not an object".into());
        };
        merge(map, &schema, &[], 0).map(|m| Json::Object(m.schema))
    }

    #[test]
    fn objects_merge_and_conflicts_are_refused() {
        assert_eq!(
            merged(
                json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"],
                          "allOf": [{"$ref": "#/$defs/B"}],
                          "$defs": {"B": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}})
            ),
            Ok(
                json!({"type": "object", "properties": {"x": {"type": "string"}, "id": {"type": "string"}}, "required": ["x", "id"]})
            )
        );
        assert!(merged(json!({"properties": {"x": {"type": "string"}},
                              "allOf": [{"properties": {"x": {"type": "integer"}}}]}))
        .is_err_and(|e| e.contains("\"x\"")));
        assert!(merged(
            json!({"properties": {"x": {}}, "additionalProperties": false,
                              "allOf": [{"properties": {"y": {}}}]})
        )
        .is_err());
        assert!(merged(json!({"type": "string", "allOf": [{"type": "integer"}]})).is_err());
        assert!(merged(json!({"allOf": [{"$ref": "#"}]})).is_err());
    }

    #[test]
    fn bounds_tighten_and_types_intersect() {
        assert_eq!(
            merged(
                json!({"type": ["number", "null"], "minimum": 0, "exclusiveMinimum": true, "maxLength": 9,
                          "allOf": [{"type": "integer", "minimum": 3, "maxLength": 4, "description": "d"}]})
            ),
            Ok(
                json!({"type": "integer", "exclusiveMinimum": 0, "minimum": 3, "maxLength": 4, "description": "d"})
            )
        );
    }
}
