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
//!
//! A schema with `allOf`, or with constraints beside its `$ref`, is first
//! merged into one schema (`merge.rs`), or is `Json` when that is not
//! sound.
//!
//! `mod.rs` maps a node's type; `refs.rs` follows `$ref`s and registers
//! aliases; `merge.rs` merges `allOf`; `object.rs` maps objects to
//! records; `literals.rs` maps `enum` and `const`; `keywords.rs` reads a
//! schema's keywords.

mod keywords;
mod literals;
mod merge;
mod object;
mod refs;

use super::checks::{self, allow_null};
use super::names::{self, Names};
use super::text::short_json;
use super::ty::{Alias, Ty};
use keywords::{describe, infer_type, is_null_schema, string_literals, types, unsupported};
use merge::only_annotations_beside;
use serde_json::{Map, Value as Json};
use std::collections::{BTreeMap, HashMap};

/// How deep schemas are followed (properties, items, branches, `$ref`s).
pub const MAX_DEPTH: usize = 32;
/// The largest alias (parts, aliases expanded) written; larger is `Json`.
pub const MAX_ALIAS_SIZE: usize = 10_000;
/// The most JSON values the checks of one schema root hold.
pub const MAX_CHECK_VALUES: usize = 10_000;

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
            if only_annotations_beside(map, "$ref") {
                return self.reference(r, ctx, place);
            }
            return self.merged(map, ctx, place);
        }
        let unsupported = unsupported(map);
        if !unsupported.is_empty() {
            return Mapped::json(format!("not expressible in lt: {}", unsupported.join(", ")));
        }
        if let Some(all) = map.get("allOf") {
            match all.as_array().map(Vec::as_slice) {
                Some([only]) if only_annotations_beside(map, "allOf") => {
                    return self.convert(only, &ctx.deeper(), place)
                }
                _ => return self.merged(map, ctx, place),
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

    /// A schema with `allOf`, or with constraints beside its `$ref`: the
    /// parts merged into one schema (`merge.rs`), else `Json` saying why.
    fn merged(&mut self, map: &Map<String, Json>, ctx: &Ctx<'_>, place: Place) -> Mapped {
        let busy: Vec<&str> = self
            .in_progress
            .iter()
            .filter(|(id, _)| *id == ctx.root_id)
            .map(|(_, p)| p.as_str())
            .collect();
        let merged = merge::merge(map, ctx.root, &busy, ctx.depth);
        let schema = match merged {
            Ok(m) => m,
            Err(why) => {
                return Mapped::json(if map.contains_key("allOf") {
                    format!("allOf: schemas lt cannot merge into one ({why})")
                } else {
                    format!("a $ref with constraints beside it that lt cannot merge ({why})")
                })
            }
        };
        let mark = self.in_progress.len();
        for p in schema.pointers {
            let key = (ctx.root_id, p);
            if !self.in_progress.contains(&key) {
                self.in_progress.push(key);
            }
        }
        // The field's comment shows the schema's own description; one that
        // only a part gives goes on the alias.
        let inner = Ctx {
            described: ctx.described && map.contains_key("description"),
            ..ctx.deeper()
        };
        let mapped = self.convert(&Json::Object(schema.schema), &inner, place);
        self.in_progress.truncate(mark);
        mapped
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
            other => {
                return Mapped::json(format!(
                    "unknown type {}",
                    short_json(&Json::from(other), 40)
                ))
            }
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
}

/// How a note about run-time checks starts.
const CHECKED: &str = "checked at run time: ";

/// `notes` with the notes about run-time checks merged into one, first.
pub(super) fn merge_checked(notes: Vec<String>) -> Vec<String> {
    let (checked, mut rest): (Vec<String>, Vec<String>) =
        notes.into_iter().partition(|n| n.starts_with(CHECKED));
    if !checked.is_empty() {
        let parts: Vec<&str> = checked
            .iter()
            .filter_map(|n| n.strip_prefix(CHECKED))
            .collect();
        rest.insert(0, format!("{CHECKED}{}", parts.join(", ")));
    }
    rest
}
