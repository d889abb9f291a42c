//! Objects → records: fields in `required` order, then the optional ones;
//! nested records become aliases.

use super::keywords::{describe, description};
use super::{merge_checked, Converter, Ctx, Mapped, Place};
use crate::schema::import::names;
use crate::schema::import::text::{brief, comment_lines, short_json};
use crate::schema::import::ty::{Field, Ty};
use serde_json::{Map, Value as Json};
use std::collections::HashSet;

/// `true` and `false` as schemas.
static ANYTHING: Json = Json::Bool(true);
static NOTHING: Json = Json::Bool(false);

/// How long a field's description may be in its comment.
const FIELD_DOC_CHARS: usize = 160;

impl Converter {
    pub(super) fn object(
        &mut self,
        map: &Map<String, Json>,
        ctx: &Ctx<'_>,
        place: Place,
    ) -> Mapped {
        let empty = Map::new();
        let props = match map.get("properties") {
            None => &empty,
            Some(Json::Object(p)) => p,
            Some(_) => return Mapped::json("`properties` is not an object"),
        };
        let extra = map.get("additionalProperties");
        let mut required: Vec<&str> = Vec::new();
        if let Some(Json::Array(names)) = map.get("required") {
            for n in names.iter().filter_map(Json::as_str) {
                if !required.contains(&n) {
                    required.push(n);
                }
            }
        }
        // Draft 3 says it on the property: `"x": {"required": true}`.
        for (n, schema) in props {
            if schema.get("required") == Some(&Json::Bool(true)) && !required.contains(&n.as_str())
            {
                required.push(n);
            }
        }
        if props.is_empty() && required.is_empty() {
            return match extra {
                Some(values @ Json::Object(_)) => {
                    Mapped::json(format!("a map from names to {}", describe(values, 2)))
                }
                Some(Json::Bool(false)) => Mapped::plain(Ty::Record(Vec::new())),
                _ if place == Place::Input => Mapped::plain(Ty::Record(Vec::new())),
                _ => Mapped::json("an object with no declared properties"),
            };
        }
        // The schema of a required property that `properties` does not declare.
        let undeclared_schema: &Json = match extra {
            Some(s @ Json::Object(_)) => s,
            Some(Json::Bool(false)) => &NOTHING,
            _ => &ANYTHING,
        };
        let required_set: HashSet<&str> = required.iter().copied().collect();
        let mut order: Vec<(&str, bool)> = required.iter().map(|n| (*n, true)).collect();
        order.extend(
            props
                .keys()
                .filter(|k| !required_set.contains(k.as_str()))
                .map(|k| (k.as_str(), false)),
        );
        let bad: Vec<String> = order
            .iter()
            .filter(|(n, _)| !names::is_field_name(n))
            .take(5)
            .map(|(n, _)| {
                format!(
                    "{} ({})",
                    short_json(&Json::from(*n), 40),
                    names::field_name_problem(n)
                )
            })
            .collect();
        if !bad.is_empty() {
            return Mapped::json(format!(
                "property names lt cannot write as fields: {}",
                bad.join(", ")
            ));
        }
        let mut fields = Vec::new();
        let mut prop_checks = Map::new();
        for (name, is_required) in order {
            let schema = props.get(name).unwrap_or(undeclared_schema);
            if schema == &Json::Bool(false) && !is_required {
                continue;
            }
            let sub = self.convert(schema, &ctx.child(name, true), Place::Nested);
            let mut notes = merge_checked(sub.notes);
            if !props.contains_key(name) {
                notes.insert(0, "required but not declared by the schema".into());
            }
            let (ty, optional) = match (sub.ty, is_required) {
                (Ty::Option(inner), false) => (*inner, true),
                (t, false) => (t, true),
                (t @ Ty::Option(_), true) => {
                    if self.input {
                        notes.push("required: lt sends a None by leaving the field out".into());
                    }
                    (t, false)
                }
                (t, true) => (t, false),
            };
            if let Some(default) = schema.get("default").filter(|d| !d.is_null()) {
                notes.push(format!("default {}", short_json(default, 60)));
            }
            if schema.get("deprecated") == Some(&Json::Bool(true)) {
                notes.push("deprecated".into());
            }
            if let Some(c) = sub.checks {
                prop_checks.insert(name.to_string(), Json::Object(c));
            }
            fields.push(Field {
                name: name.to_string(),
                ty,
                optional,
                doc: description(schema).and_then(|d| brief(d, FIELD_DOC_CHARS)),
                notes,
            });
        }
        let mut notes = Vec::new();
        match extra {
            Some(Json::Bool(true)) => {
                notes.push("the schema allows other properties too (not declared here)".to_string())
            }
            Some(values @ Json::Object(_)) => notes.push(format!(
                "the schema allows other properties too: {} (not declared here)",
                describe(values, 2)
            )),
            _ => {}
        }
        let checks = (!prop_checks.is_empty()).then(|| {
            let mut m = Map::new();
            m.insert("properties".into(), Json::Object(prop_checks));
            m
        });
        let record = Ty::Record(fields);
        if place != Place::Nested {
            return Mapped {
                ty: record,
                notes,
                checks,
            };
        }
        let (name, from_path) = match map.get("title").and_then(Json::as_str) {
            Some(t) if !t.trim().is_empty() => (names::type_name(t), false),
            _ => (ctx.hint.clone(), true),
        };
        let doc = match (ctx.described, map.get("description").and_then(Json::as_str)) {
            (false, Some(d)) => comment_lines(d, 20, 500),
            _ => Vec::new(),
        };
        Mapped {
            ty: self.alias(&name, from_path, record, doc, notes),
            notes: Vec::new(),
            checks,
        }
    }
}
