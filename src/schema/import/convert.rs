//! JSON Schema → lt types, one schema root (a tool's input or output) at a
//! time, collecting the `type` aliases and the run-time checks on the way.
//!
//! Every schema node is mapped once by [`Converter::convert`], which returns
//! the lt type, the notes for the comment beside it, and the pruned check
//! schema of the node (see `checks.rs`). Nested objects become aliases
//! (named from their `title`, else from their path); a `$ref` into `$defs`
//! or `definitions` becomes an alias named after the definition, converted
//! once per root and shared; a `$ref` that leads back to a definition being
//! converted is recursive and becomes `Json`. Aliases are registered after
//! the aliases they use, so declaring them in registration order is valid.
//!
//! Recursion is bounded by [`MAX_DEPTH`] (every descent counts, `$ref`s
//! included); past it a part is `Json`. A nested alias's expanded size is
//! bounded by [`MAX_ALIAS_SIZE`], the checks of one root by
//! [`MAX_CHECK_VALUES`].

use super::checks::{self, allow_null};
use super::names::{self, Names};
use super::text::{brief, comment_lines, short_json};
use super::ty::{self, Alias, Field, Ty};
use serde_json::{Map, Value as Json};
use std::collections::{BTreeMap, HashMap, HashSet};

/// `true` and `false` as schemas.
static ANYTHING: Json = Json::Bool(true);
static NOTHING: Json = Json::Bool(false);

/// How deep schemas are followed (properties, items, branches, `$ref`s).
pub const MAX_DEPTH: usize = 32;
/// The largest alias (parts, aliases expanded) written; larger is `Json`.
pub const MAX_ALIAS_SIZE: usize = 10_000;
/// The most JSON values the checks of one schema root hold.
pub const MAX_CHECK_VALUES: usize = 10_000;

/// How long a field's description may be in its comment.
const FIELD_DOC_CHARS: usize = 160;

/// One schema mapped: its lt type, notes for the comment beside it, and its
/// pruned checks (`None`: nothing to check).
#[derive(Clone, Debug)]
pub(super) struct Mapped {
    pub ty: Ty,
    pub notes: Vec<String>,
    pub checks: Option<Map<String, Json>>,
}

impl Mapped {
    fn json(why: impl Into<String>) -> Mapped {
        Mapped {
            ty: Ty::Json,
            notes: vec![why.into()],
            checks: None,
        }
    }

    fn plain(ty: Ty) -> Mapped {
        Mapped {
            ty,
            notes: Vec::new(),
            checks: None,
        }
    }

    /// `Option` of this, its checks letting `null` through.
    fn nullable(mut self) -> Mapped {
        self.ty = self.ty.optional();
        if let Some(c) = &mut self.checks {
            allow_null(c);
        }
        self
    }
}

/// Where a schema sits: decides what an object becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// A tool's input: an inline record; no properties is `{}`.
    Input,
    /// A tool's output: an inline record.
    Output,
    /// The body of a `$defs` alias: an inline record.
    AliasBody,
    /// Anywhere else: an object becomes an alias.
    Nested,
}

struct Ctx<'a> {
    root: &'a Json,
    root_id: usize,
    /// The name a nested object's alias gets when it has no title.
    hint: String,
    depth: usize,
    /// The caller shows this schema's description (a field's comment).
    described: bool,
}

impl<'a> Ctx<'a> {
    fn child(&self, part: &str, described: bool) -> Ctx<'a> {
        Ctx {
            root: self.root,
            root_id: self.root_id,
            hint: format!("{}{}", self.hint, names::type_name(part)),
            depth: self.depth + 1,
            described,
        }
    }

    fn deeper(&self) -> Ctx<'a> {
        Ctx {
            root: self.root,
            root_id: self.root_id,
            hint: self.hint.clone(),
            depth: self.depth + 1,
            described: false,
        }
    }
}

/// The state of one import: aliases so far, names given out, definitions
/// converted.
#[derive(Debug, Default)]
pub(super) struct Converter {
    /// The aliases, in an order in which each uses only earlier ones.
    pub aliases: Vec<Alias>,
    /// Tool and alias names given out.
    pub names: Names,
    /// Where each alias is in `aliases`.
    alias_index: HashMap<String, usize>,
    /// The first alias of each content (type, doc, notes).
    by_content: HashMap<String, String>,
    /// Whether the root being converted is an input (else an output).
    input: bool,
    sizes: BTreeMap<String, usize>,
    /// `$defs` entries converted, by (root, JSON pointer).
    memo: HashMap<(usize, String), Mapped>,
    /// The `$ref` targets being converted (a `$ref` to one is recursive).
    in_progress: Vec<(usize, String)>,
    roots: usize,
    /// JSON values the current root's checks may still take.
    budget: usize,
    /// Whether checks of the current root were left out for size.
    pub checks_cut: bool,
}

impl Converter {
    /// Maps a tool's input or output schema. `hint` names its nested
    /// objects (`CreateIssue` → `CreateIssueLabelsItem`).
    pub fn convert_root(&mut self, schema: &Json, hint: &str, place: Place) -> Mapped {
        self.roots += 1;
        self.input = place == Place::Input;
        self.budget = MAX_CHECK_VALUES;
        self.checks_cut = false;
        let ctx = Ctx {
            root: schema,
            root_id: self.roots,
            hint: hint.to_string(),
            depth: 0,
            described: true,
        };
        self.in_progress.push((self.roots, String::new()));
        let mut mapped = self.convert(schema, &ctx, place);
        self.in_progress.pop();
        if let Some(c) = &mapped.checks {
            if checks::size(c) > MAX_CHECK_VALUES || !checks::compiles(&Json::Object(c.clone())) {
                mapped.checks = None;
                self.checks_cut = true;
            }
        }
        mapped
    }

    fn convert(&mut self, schema: &Json, ctx: &Ctx<'_>, place: Place) -> Mapped {
        if ctx.depth > MAX_DEPTH {
            return Mapped::json(format!(
                "nested more than {MAX_DEPTH} levels deep: not mapped"
            ));
        }
        let map = match schema {
            Json::Object(map) => map,
            Json::Bool(true) => return Mapped::json("any JSON value"),
            Json::Bool(false) => return Mapped::json("the schema accepts no value"),
            other => {
                return Mapped::json(format!(
                    "not a JSON Schema ({})",
                    super::detect::kind(other)
                ))
            }
        };
        if let Some(r) = map.get("$ref") {
            return self.reference(r, ctx, place);
        }
        let unsupported = unsupported(map);
        if !unsupported.is_empty() {
            return Mapped::json(format!("not expressible in lt: {}", unsupported.join(", ")));
        }
        if let Some(Json::Array(all)) = map.get("allOf") {
            if let [only] = all.as_slice() {
                return self.convert(only, &ctx.deeper(), place);
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(branches) = map.get(key) {
                return self.union(key, branches, ctx, place);
            }
        }
        let (types, null_type) = types(map);
        let nullable = null_type || map.get("nullable") == Some(&Json::Bool(true));
        let mapped = if map.contains_key("enum") || map.contains_key("const") {
            self.literals(map)
        } else {
            let inferred = if types.is_empty() && !null_type {
                infer_type(map)
            } else {
                None
            };
            match (types.as_slice(), inferred) {
                ([], Some(t)) | (&[t], _) => self.typed(t, map, ctx, place),
                ([], None) if null_type => Mapped::plain(Ty::Unit),
                ([], None) => Mapped::json("any JSON value (the schema gives no type)"),
                (many, _) => {
                    if many.iter().all(|t| *t == "integer" || *t == "number") {
                        self.typed("number", map, ctx, place)
                    } else {
                        self.with_local(
                            Mapped::json(format!("a value of several types: {}", many.join(", "))),
                            map,
                        )
                    }
                }
            }
        };
        if nullable {
            mapped.nullable()
        } else {
            mapped
        }
    }

    /// A schema of one JSON type.
    fn typed(&mut self, t: &str, map: &Map<String, Json>, ctx: &Ctx<'_>, place: Place) -> Mapped {
        let mapped = match t {
            "string" => Mapped::plain(Ty::Str),
            "integer" => Mapped::plain(Ty::Int),
            "number" => Mapped::plain(Ty::Float),
            "boolean" => Mapped::plain(Ty::Bool),
            "null" => Mapped::plain(Ty::Unit),
            "array" => self.array(map, ctx),
            "object" => return self.object(map, ctx, place),
            other => return Mapped::json(format!("unknown type {}", short_json(&Json::from(other), 40))),
        };
        self.with_local(mapped, map)
    }

    /// Adds the node's own checks (`format`, bounds, …) and their notes.
    fn with_local(&mut self, mut mapped: Mapped, map: &Map<String, Json>) -> Mapped {
        let local = checks::local(map);
        if !local.checked.is_empty() {
            mapped
                .notes
                .insert(0, format!("{CHECKED}{}", local.checked.join(", ")));
            let checks = mapped.checks.get_or_insert_with(Map::new);
            for (k, v) in local.keywords {
                checks.insert(k, v);
            }
        }
        mapped.notes.extend(local.unchecked);
        mapped
    }

    /// `enum` / `const`: string literals are an enum type; other values
    /// keep their base type and are checked at run time.
    fn literals(&mut self, map: &Map<String, Json>) -> Mapped {
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
            let mut lits: Vec<String> = rest.iter().filter_map(|v| v.as_str()).map(str::to_string).collect();
            lits.sort();
            lits.dedup();
            self.with_local(Mapped::plain(Ty::Enum(lits)), map)
        } else {
            let base = if rest.iter().all(|v| v.is_i64() || v.is_u64()) {
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
                mapped
                    .notes
                    .insert(0, format!("one of {}{more} (not checked)", shown.join(", ")));
            }
            mapped
        };
        if has_null {
            mapped.nullable()
        } else {
            mapped
        }
    }

    fn array(&mut self, map: &Map<String, Json>, ctx: &Ctx<'_>) -> Mapped {
        if map.contains_key("prefixItems") || map.get("items").is_some_and(Json::is_array) {
            return Mapped {
                ty: Ty::List(Box::new(Ty::Json)),
                notes: vec!["a tuple: lt lists have one element type".into()],
                checks: None,
            };
        }
        let Some(items) = map.get("items") else {
            return Mapped::plain(Ty::List(Box::new(Ty::Json)));
        };
        let item = self.convert(items, &ctx.child("Item", false), Place::Nested);
        Mapped {
            ty: Ty::List(Box::new(item.ty)),
            notes: item
                .notes
                .into_iter()
                .map(|n| match n.strip_prefix(CHECKED) {
                    Some(what) => format!("{CHECKED}items {what}"),
                    None => format!("items: {n}"),
                })
                .collect(),
            checks: item.checks.map(|c| {
                let mut m = Map::new();
                m.insert("items".into(), Json::Object(c));
                m
            }),
        }
    }

    /// `anyOf` / `oneOf`: `null` branches make an Option; string literals
    /// an enum; one other branch is that branch; more are `Json`.
    fn union(&mut self, key: &str, branches: &Json, ctx: &Ctx<'_>, place: Place) -> Mapped {
        let Json::Array(branches) = branches else {
            return Mapped::json(format!("`{key}` is not a list"));
        };
        let rest: Vec<&Json> = branches.iter().filter(|b| !is_null_schema(b)).collect();
        let has_null = rest.len() < branches.len();
        let mapped = match rest.as_slice() {
            [] if has_null => return Mapped::plain(Ty::Unit),
            [] => return Mapped::json(format!("`{key}` lists no schema")),
            [only] => self.convert(only, &ctx.deeper(), place),
            many => match string_literals(many) {
                Some(lits) => Mapped::plain(Ty::Enum(lits)),
                None => {
                    let shown: Vec<String> = many.iter().take(4).map(|b| describe(b, 2)).collect();
                    let more = if many.len() > 4 { " | …" } else { "" };
                    Mapped::json(format!(
                        "one of {} schemas ({key}: {}{more}): lt has no untagged unions",
                        many.len(),
                        shown.join(" | ")
                    ))
                }
            },
        };
        if has_null {
            mapped.nullable()
        } else {
            mapped
        }
    }

    fn reference(&mut self, r: &Json, ctx: &Ctx<'_>, place: Place) -> Mapped {
        let Some(r) = r.as_str() else {
            return Mapped::json("`$ref` is not a string");
        };
        let Some(fragment) = r.strip_prefix('#') else {
            return Mapped::json(format!(
                "a $ref to another document ({}): lt follows local references only",
                short_json(&Json::from(r), 60)
            ));
        };
        let pointer = percent_decode(fragment);
        let Some(target) = ctx.root.pointer(&pointer) else {
            return Mapped::json(format!("unresolved $ref {}", short_json(&Json::from(r), 60)));
        };
        let key = (ctx.root_id, pointer);
        if self.in_progress.contains(&key) {
            return Mapped::json(format!(
                "recursive: {} refers back to itself, and lt types are not recursive",
                short_json(&Json::from(r), 60)
            ));
        }
        if let Some(done) = self.memo.get(&key) {
            let mut done = done.clone();
            done.checks = self.spend(done.checks);
            return done;
        }
        let def = def_name(&key.1).map(str::to_string);
        self.in_progress.push(key.clone());
        let mapped = match &def {
            Some(name) => {
                let inner = Ctx {
                    root: ctx.root,
                    root_id: ctx.root_id,
                    hint: names::type_name(name),
                    depth: ctx.depth + 1,
                    described: false,
                };
                let body = self.convert(target, &inner, Place::AliasBody);
                let doc = description(target)
                    .map(|d| comment_lines(d, 20, 500))
                    .unwrap_or_default();
                self.def_alias(name, body, doc)
            }
            None => self.convert(target, &ctx.deeper(), place),
        };
        self.in_progress.pop();
        if def.is_some() {
            self.memo.insert(key, mapped.clone());
        }
        mapped
    }

    /// Checks taken from a definition converted before: counted against
    /// the root's budget, dropped past it.
    fn spend(&mut self, checks: Option<Map<String, Json>>) -> Option<Map<String, Json>> {
        let c = checks?;
        let n = checks::size(&c);
        if n > self.budget {
            self.checks_cut = true;
            return None;
        }
        self.budget -= n;
        Some(c)
    }

    /// The alias for a `$defs` entry: its body's nullability stays at the
    /// use (`Option Name`), its checks go with each use.
    fn def_alias(&mut self, def: &str, body: Mapped, doc: Vec<String>) -> Mapped {
        let (inner, nullable) = match body.ty {
            Ty::Option(t) => (*t, true),
            t => (t, false),
        };
        let name = self.alias(&names::type_name(def), false, inner, doc, merge_checked(body.notes));
        let checks = self.spend(body.checks);
        let mapped = Mapped {
            ty: name,
            notes: Vec::new(),
            checks,
        };
        if nullable {
            mapped.nullable()
        } else {
            mapped
        }
    }

    /// Registers `type NAME = ty;` (or finds the same declaration made
    /// before: under that name, or under any name when `name` only comes
    /// from a path); returns the type to use: the alias, or `Json` when too
    /// large.
    fn alias(&mut self, name: &str, from_path: bool, ty: Ty, doc: Vec<String>, notes: Vec<String>) -> Ty {
        let size = ty::size(&ty, &self.sizes);
        let mut alias = Alias {
            name: String::new(),
            ty,
            doc,
            notes,
            size,
        };
        if size > MAX_ALIAS_SIZE {
            alias.ty = Ty::Json;
            alias.notes = vec![format!(
                "too large for lt once its aliases are expanded ({size} parts)"
            )];
            alias.size = 1;
        }
        let content = format!("{:?}", (&alias.ty, &alias.doc, &alias.notes));
        if from_path {
            if let Some(same) = self.by_content.get(&content) {
                return Ty::Named(same.clone());
            }
        }
        let mut candidate = name.to_string();
        let mut n = 2usize;
        while self.names.is_taken(&candidate) {
            let same = self
                .alias_index
                .get(&candidate)
                .and_then(|i| self.aliases.get(*i))
                .is_some_and(|a| a.ty == alias.ty && a.doc == alias.doc && a.notes == alias.notes);
            if same {
                return Ty::Named(candidate);
            }
            candidate = format!("{name}{n}");
            n += 1;
        }
        self.names.take(&candidate);
        alias.name = candidate.clone();
        self.sizes.insert(candidate.clone(), alias.size);
        self.alias_index.insert(candidate.clone(), self.aliases.len());
        self.by_content.entry(content).or_insert_with(|| candidate.clone());
        self.aliases.push(alias);
        Ty::Named(candidate)
    }

    fn object(&mut self, map: &Map<String, Json>, ctx: &Ctx<'_>, place: Place) -> Mapped {
        let empty = Map::new();
        let props = match map.get("properties") {
            None => &empty,
            Some(Json::Object(p)) => p,
            Some(_) => return Mapped::json("`properties` is not an object"),
        };
        let extra = map.get("additionalProperties");
        let required: Vec<&str> = match map.get("required") {
            Some(Json::Array(names)) => {
                let mut seen = Vec::new();
                for n in names.iter().filter_map(Json::as_str) {
                    if !seen.contains(&n) {
                        seen.push(n);
                    }
                }
                seen
            }
            _ => Vec::new(),
        };
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
            .map(|(n, _)| format!("{} ({})", short_json(&Json::from(*n), 40), names::field_name_problem(n)))
            .collect();
        if !bad.is_empty() {
            return Mapped::json(format!("property names lt cannot write as fields: {}", bad.join(", ")));
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
            Some(Json::Bool(true)) => notes.push("the schema allows other properties too (not declared here)".to_string()),
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
            return Mapped { ty: record, notes, checks };
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

/// How a note about run-time checks starts.
const CHECKED: &str = "checked at run time: ";

/// `notes` with the notes about run-time checks merged into one, first.
pub(super) fn merge_checked(notes: Vec<String>) -> Vec<String> {
    let (checked, mut rest): (Vec<String>, Vec<String>) =
        notes.into_iter().partition(|n| n.starts_with(CHECKED));
    if !checked.is_empty() {
        let parts: Vec<&str> = checked.iter().filter_map(|n| n.strip_prefix(CHECKED)).collect();
        rest.insert(0, format!("{CHECKED}{}", parts.join(", ")));
    }
    rest
}

/// The keywords present that lt cannot express.
fn unsupported(map: &Map<String, Json>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(Json::Array(all)) = map.get("allOf") {
        if all.len() != 1 {
            out.push(format!("allOf (all of {} schemas)", all.len()));
        }
    }
    for (key, what) in [
        ("not", "not (a negated schema)"),
        ("if", "if/then/else (a conditional schema)"),
        ("patternProperties", "patternProperties (property names by pattern)"),
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
fn types(map: &Map<String, Json>) -> (Vec<&str>, bool) {
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
fn infer_type(map: &Map<String, Json>) -> Option<&'static str> {
    if ["properties", "additionalProperties", "required"].iter().any(|k| map.contains_key(*k)) {
        Some("object")
    } else if map.contains_key("items") || map.contains_key("prefixItems") {
        Some("array")
    } else {
        None
    }
}

/// `{"type": "null"}`, `{"const": null}`, `{"enum": [null]}`.
fn is_null_schema(schema: &Json) -> bool {
    schema.get("type").and_then(Json::as_str) == Some("null")
        || schema.get("const") == Some(&Json::Null)
        || schema.get("enum").and_then(Json::as_array).is_some_and(|v| v.iter().all(Json::is_null) && !v.is_empty())
}

/// The strings of branches that are each a string `const` or `enum`.
fn string_literals(branches: &[&Json]) -> Option<Vec<String>> {
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

/// The definition name of a pointer `/$defs/NAME` or `/definitions/NAME`.
fn def_name(pointer: &str) -> Option<&str> {
    let rest = pointer
        .strip_prefix("/$defs/")
        .or_else(|| pointer.strip_prefix("/definitions/"))?;
    (!rest.contains('/') && !rest.is_empty()).then_some(rest)
}

/// A URI fragment's percent-escapes decoded (`%24defs` → `$defs`); the
/// JSON pointer's `~0`/`~1` are left to `pointer`.
fn percent_decode(fragment: &str) -> String {
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = fragment.get(i + 1..i + 3).filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| fragment.to_string())
}

fn description(schema: &Json) -> Option<&str> {
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
