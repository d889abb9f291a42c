//! Reading a schema's keywords: its types, what lt cannot express, null
//! and literal branches, a short account of it for comments.

use crate::schema::import::names;
use crate::schema::import::text::short_json;
use serde_json::{Map, Value as Json};

/// The keywords present that lt cannot express.
pub(super) fn unsupported(map: &Map<String, Json>) -> Vec<String> {
    let mut out = Vec::new();
    for (key, what) in [
        ("not", "not (a negated schema)"),
        ("if", "if/then/else (a conditional schema)"),
        (
            "patternProperties",
            "patternProperties (property names by pattern)",
        ),
        ("dependentSchemas", "dependentSchemas"),
        ("dependencies", "dependencies"),
        ("$dynamicRef", "$dynamicRef"),
        ("$recursiveRef", "$recursiveRef"),
    ] {
        if map.contains_key(key) {
            out.push(what.to_string());
        }
    }
    out
}

/// The non-null types of `type`, and whether `null` is one.
pub(super) fn types(map: &Map<String, Json>) -> (Vec<&str>, bool) {
    let listed: Vec<&str> = match map.get("type") {
        Some(Json::String(t)) => vec![t.as_str()],
        Some(Json::Array(ts)) => ts.iter().filter_map(Json::as_str).collect(),
        _ => Vec::new(),
    };
    let null = listed.contains(&"null");
    let mut rest: Vec<&str> = listed.into_iter().filter(|t| *t != "null").collect();
    rest.dedup();
    (rest, null)
}

/// The type a schema without `type` describes, from its keywords.
pub(super) fn infer_type(map: &Map<String, Json>) -> Option<&'static str> {
    // `required` is a list of names; draft 3's `"required": true` (on a
    // property's own schema) says nothing about its type.
    if ["properties", "additionalProperties"]
        .iter()
        .any(|k| map.contains_key(*k))
        || map.get("required").is_some_and(Json::is_array)
    {
        Some("object")
    } else if map.contains_key("items") || map.contains_key("prefixItems") {
        Some("array")
    } else {
        None
    }
}

/// `{"type": "null"}`, `{"const": null}`, `{"enum": [null]}`.
pub(super) fn is_null_schema(schema: &Json) -> bool {
    schema.get("type").and_then(Json::as_str) == Some("null")
        || schema.get("const") == Some(&Json::Null)
        || schema
            .get("enum")
            .and_then(Json::as_array)
            .is_some_and(|v| v.iter().all(Json::is_null) && !v.is_empty())
}

/// The strings of branches that are each a string `const` or `enum`.
pub(super) fn string_literals(branches: &[&Json]) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for b in branches {
        match (b.get("const"), b.get("enum")) {
            (Some(Json::String(s)), _) => out.push(s.clone()),
            (_, Some(Json::Array(vs))) if vs.iter().all(Json::is_string) && !vs.is_empty() => {
                out.extend(vs.iter().filter_map(Json::as_str).map(str::to_string))
            }
            _ => return None,
        }
    }
    out.sort();
    out.dedup();
    Some(out)
}

pub(super) fn description(schema: &Json) -> Option<&str> {
    schema.get("description").and_then(Json::as_str)
}

/// A short account of a schema for a comment (`String`, `List Int`,
/// `an object`, a definition's name), looking `depth` levels in.
pub(super) fn describe(schema: &Json, depth: usize) -> String {
    let Json::Object(map) = schema else {
        return match schema {
            Json::Bool(false) => "nothing".into(),
            _ => "any JSON value".into(),
        };
    };
    if let Some(r) = map.get("$ref").and_then(Json::as_str) {
        let last = r.rsplit('/').next().unwrap_or(r);
        return names::type_name(last);
    }
    if let Some(Json::Array(vs)) = map.get("enum") {
        let shown: Vec<String> = vs.iter().take(4).map(|v| short_json(v, 30)).collect();
        let more = if vs.len() > 4 { " | …" } else { "" };
        return format!("{}{more}", shown.join(" | "));
    }
    if let Some(c) = map.get("const") {
        return short_json(c, 30);
    }
    let (types, null) = types(map);
    let base = match types.first().copied().or_else(|| infer_type(map)) {
        Some("string") => "String".to_string(),
        Some("integer") => "Int".into(),
        Some("number") => "Float".into(),
        Some("boolean") => "Bool".into(),
        Some("array") if depth > 0 => match map.get("items") {
            Some(items) => format!("List {}", describe(items, depth - 1)),
            None => "List Json".into(),
        },
        Some("array") => "a list".into(),
        Some("object") => "an object".into(),
        Some(other) => other.to_string(),
        None if null => "null".into(),
        None => "any JSON value".into(),
    };
    if null && !types.is_empty() {
        format!("{base} or null")
    } else {
        base
    }
}
