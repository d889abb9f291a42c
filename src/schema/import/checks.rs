//! Run-time checks: the keywords of a schema that lt's types do not
//! express but `src/exec/checks.rs` checks at the boundary (`[tools.NAME.checks]`
//! in `tools.toml`, draft 2020-12, format assertions on).
//!
//! Every keyword kept applies to one kind of value only (`format`,
//! `minLength`, `maxLength`, `pattern` to strings; the bounds and
//! `multipleOf` to numbers; `minItems`, `maxItems` to arrays), so a pruned
//! schema without `type` accepts `null` and whatever lt's type already
//! decides. `enum`/`const` are kept too where lt cannot say them (values
//! that are not strings); those do apply to `null`, see [`allow_null`].
//! No pruned schema holds a `null` (TOML cannot write one).

use super::text::cut;
use serde_json::{Map, Value as Json};

/// The formats `jsonschema` checks (as built here, without `idna`). Other
/// formats are annotations it ignores, so the importer says "not checked".
const KNOWN_FORMATS: [&str; 17] = [
    "date",
    "date-time",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "iri",
    "iri-reference",
    "json-pointer",
    "regex",
    "relative-json-pointer",
    "time",
    "uri",
    "uri-reference",
    "uri-template",
    "uuid",
];

/// The checks of one schema node, without its subschemas.
#[derive(Debug, Default)]
pub(super) struct Local {
    /// The keywords kept, as the pruned schema holds them.
    pub keywords: Map<String, Json>,
    /// What the comment says is checked: `format date-time`, `minimum 0`.
    pub checked: Vec<String>,
    /// What the schema asks that is not checked, and why.
    pub unchecked: Vec<String>,
}

/// The checkable keywords of `schema` (one node; `properties`, `items` and
/// the rest are the caller's).
pub(super) fn local(schema: &Map<String, Json>) -> Local {
    let mut out = Local::default();
    if let Some(format) = schema.get("format").and_then(Json::as_str) {
        if KNOWN_FORMATS.contains(&format) {
            out.keep("format", Json::from(format), format!("format {format}"));
        } else {
            out.unchecked.push(format!(
                "format {} (not checked: unknown to lt)",
                cut(format, 40)
            ));
        }
    }
    for key in ["minimum", "maximum"] {
        let exclusive = if key == "minimum" {
            "exclusiveMinimum"
        } else {
            "exclusiveMaximum"
        };
        let Some(bound) = schema.get(key).filter(|v| v.is_number()) else {
            continue;
        };
        // Draft 4: `"exclusiveMinimum": true` makes `minimum` exclusive.
        if schema.get(exclusive) == Some(&Json::Bool(true)) {
            out.keep(exclusive, bound.clone(), format!("{exclusive} {bound}"));
        } else {
            out.keep(key, bound.clone(), format!("{key} {bound}"));
        }
    }
    for key in ["exclusiveMinimum", "exclusiveMaximum"] {
        if let Some(bound) = schema.get(key).filter(|v| v.is_number()) {
            out.keep(key, bound.clone(), format!("{key} {bound}"));
        }
    }
    if let Some(m) = schema
        .get("multipleOf")
        .filter(|v| v.as_f64().is_some_and(|x| x > 0.0))
    {
        out.keep("multipleOf", m.clone(), format!("multipleOf {m}"));
    }
    for key in ["minLength", "maxLength", "minItems", "maxItems"] {
        if let Some(n) = schema.get(key).and_then(count) {
            out.keep(key, Json::from(n), format!("{key} {n}"));
        }
    }
    if let Some(pattern) = schema.get("pattern").and_then(Json::as_str) {
        let mut probe = Map::new();
        probe.insert("pattern".into(), Json::from(pattern));
        if compiles(&Json::Object(probe)) {
            out.keep(
                "pattern",
                Json::from(pattern),
                format!("pattern {}", cut(pattern, 60)),
            );
        } else {
            out.unchecked.push(format!(
                "pattern {} (not checked: not a regular expression lt can use)",
                cut(pattern, 60)
            ));
        }
    }
    out
}

impl Local {
    fn keep(&mut self, key: &str, value: Json, said: String) {
        self.keywords.insert(key.to_string(), value);
        self.checked.push(said);
    }
}

/// A non-negative integer (`3` or `3.0`).
fn count(value: &Json) -> Option<u64> {
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|x| *x >= 0.0 && x.fract() == 0.0 && *x < 9.0e15)
            .map(|x| x as u64)
    })
}

/// Whether `schema` compiles as the executors compile checks.
pub(super) fn compiles(schema: &Json) -> bool {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(schema)
        .is_ok()
}

/// Makes a pruned schema accept `null` where its value may be null: the
/// only kept keywords that reject `null` are `enum` and `const`, which
/// become `anyOf: [{enum: […]}, {type: "null"}]` (TOML has no `null` to
/// put in the list).
pub(super) fn allow_null(checks: &mut Map<String, Json>) {
    let mut literal = Map::new();
    for key in ["enum", "const"] {
        if let Some(v) = checks.remove(key) {
            literal.insert(key.into(), v);
        }
    }
    if literal.is_empty() {
        return;
    }
    let mut null = Map::new();
    null.insert("type".into(), Json::from("null"));
    checks.insert(
        "anyOf".into(),
        Json::Array(vec![Json::Object(literal), Json::Object(null)]),
    );
}

/// The number of JSON values in a pruned schema (no recursion).
pub(super) fn size(schema: &Map<String, Json>) -> usize {
    let mut n = 1usize;
    let mut work: Vec<&Json> = schema.values().collect();
    while let Some(v) = work.pop() {
        n += 1;
        match v {
            Json::Array(items) => work.extend(items),
            Json::Object(map) => work.extend(map.values()),
            _ => {}
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn local_of(schema: Json) -> Local {
        match schema {
            Json::Object(map) => local(&map),
            _ => Local::default(),
        }
    }

    #[test]
    fn keywords_kept() {
        let l = local_of(
            json!({"type": "string", "format": "date-time", "minLength": 1,
                               "maxLength": 3.0, "pattern": "^a+$", "description": "x"}),
        );
        assert_eq!(
            Json::Object(l.keywords),
            json!({"format": "date-time", "minLength": 1, "maxLength": 3, "pattern": "^a+$"})
        );
        assert_eq!(
            l.checked,
            [
                "format date-time",
                "minLength 1",
                "maxLength 3",
                "pattern ^a+$"
            ]
        );
    }

    #[test]
    fn draft4_exclusive_bounds() {
        let l = local_of(json!({"minimum": 0, "exclusiveMinimum": true, "maximum": 5}));
        assert_eq!(
            Json::Object(l.keywords),
            json!({"exclusiveMinimum": 0, "maximum": 5})
        );
    }

    #[test]
    fn unknown_format_and_bad_pattern_are_not_checked() {
        let l = local_of(json!({"format": "int64", "pattern": "(", "minLength": -1}));
        assert!(l.keywords.is_empty());
        assert_eq!(l.unchecked.len(), 2);
    }

    #[test]
    fn null_allowed() {
        let mut m = json!({"const": 1, "minimum": 0});
        if let Json::Object(map) = &mut m {
            allow_null(map);
        }
        assert_eq!(
            m,
            json!({"anyOf": [{"const": 1}, {"type": "null"}], "minimum": 0})
        );
    }
}
