//! Written lt types → JSON Schema (draft 2020-12), one schema root at a time.
//!
//! The generator walks the types *as written*, so that a `type` alias stays
//! a name: its use is `{"$ref": "#/$defs/Name"}` and its definition goes
//! into the root's `$defs` (with the aliases it uses in turn). The mapping
//! table is in the [module note](super).

use super::ordered::OrderedJson as J;
use crate::syntax::ast::{Ident, Name, TypeExpr, TypeExprKind};
use crate::types::decls::lower_type;
use crate::types::{Declarations, Type};

/// Which form of object schema to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// Input schemas: an optional field is left out of `required`.
    Input,
    /// OpenAI strict mode: every property is required (an optional field is
    /// nullable instead), and a `$ref` has no sibling keyword.
    Strict,
    /// Output schemas (MCP): like `Input`, but objects do not forbid extra
    /// properties, since lt drops the extra fields of a result.
    Output,
}

/// Why a root type cannot be an object schema.
pub(super) struct NotObject {
    /// The checked type, as lt prints it.
    pub ty: String,
}

/// One schema root under construction: the aliases it refers to and the
/// places where `Json` occurs.
pub(super) struct Gen<'a> {
    decls: &'a Declarations,
    mode: Mode,
    /// Aliases referred to so far (by `$ref`), in first-use order.
    refs: Vec<Name>,
    /// Where `Json` occurs (`field.sub[]`), for the strict-mode warning.
    pub json_at: Vec<String>,
    /// The `!Approval` fields left out of the root record.
    pub approvals: Vec<Name>,
}

impl<'a> Gen<'a> {
    /// A generator for one root.
    pub fn new(decls: &'a Declarations, mode: Mode) -> Gen<'a> {
        Gen {
            decls,
            mode,
            refs: Vec::new(),
            json_at: Vec::new(),
            approvals: Vec::new(),
        }
    }

    /// The checked form of a written type (aliases expanded).
    fn checked(&self, t: &TypeExpr) -> Type {
        lower_type(t, &self.decls.env, &mut Vec::new())
    }

    /// `t` without outer `!` and aliases: the type a root really is.
    fn resolve_root<'t>(&self, mut t: &'t TypeExpr) -> &'t TypeExpr
    where
        'a: 't,
    {
        for _ in 0..=self.decls.aliases.len() {
            match &t.kind {
                TypeExprKind::Linear(inner) => t = inner,
                TypeExprKind::Named(id) => match self.decls.alias(&id.name) {
                    Some(a) => t = &a.written,
                    None => break,
                },
                _ => break,
            }
        }
        t
    }

    /// The schema of a root that must be an object (a tool's input, an MCP
    /// output): a record, or Unit as the empty object. `$defs` is added.
    pub fn object_root(&mut self, t: &TypeExpr) -> Result<J, NotObject> {
        let r = self.resolve_root(t);
        let schema = match &r.kind {
            TypeExprKind::Record(fields, _) => self.record(fields, "", true),
            TypeExprKind::Unit => self.record(&[], "", true),
            TypeExprKind::Named(id) if &*id.name == "Unit" => self.record(&[], "", true),
            _ => {
                return Err(NotObject {
                    ty: self.checked(t).to_string(),
                })
            }
        };
        Ok(self.finish(schema))
    }

    /// Adds `$defs` for every alias referred to (transitively), in
    /// declaration order.
    fn finish(&mut self, mut root: J) -> J {
        let mut done = 0;
        let mut bodies: Vec<(Name, J)> = Vec::new();
        while done < self.refs.len() {
            let name = self.refs[done].clone();
            done += 1;
            let Some(alias) = self.decls.alias(&name) else {
                continue;
            };
            let mut body = self.ty(&alias.written, &name);
            if let Some(doc) = &alias.doc {
                body = self.describe(body, doc);
            }
            bodies.push((name, body));
        }
        if bodies.is_empty() {
            return root;
        }
        let order = |n: &Name| self.decls.aliases.iter().position(|a| &a.name == n);
        bodies.sort_by_key(|(n, _)| order(n));
        root.set(
            "$defs",
            J::Obj(
                bodies
                    .into_iter()
                    .map(|(n, b)| (n.to_string(), b))
                    .collect(),
            ),
        );
        root
    }

    /// `schema` with a `description`, first (a bare `$ref` in strict mode becomes
    /// a one-branch `anyOf`, as OpenAI allows no keyword beside `$ref`).
    fn describe(&self, schema: J, doc: &str) -> J {
        let mut schema = if self.mode == Mode::Strict && schema.get("$ref").is_some() {
            J::obj([("anyOf", J::Arr(vec![schema]))])
        } else {
            schema
        };
        if let J::Obj(entries) = &mut schema {
            entries.retain(|(k, _)| k != "description");
            entries.insert(0, ("description".to_string(), J::str(doc)));
        }
        schema
    }

    /// The object schema of a record's fields. At the root, `!Approval`
    /// fields are left out (they are filled by lt, not by a model).
    fn record(&mut self, fields: &[(Ident, TypeExpr)], path: &str, root: bool) -> J {
        let mut props: Vec<(String, J)> = Vec::new();
        let mut required: Vec<&str> = Vec::new();
        for (name, ft) in fields {
            let checked = self.checked(ft);
            if root && checked.is_approval() {
                self.approvals.push(name.name.clone());
                continue;
            }
            let sub = if path.is_empty() {
                name.name.to_string()
            } else {
                format!("{path}.{}", name.name)
            };
            let mut schema = self.ty(ft, &sub);
            if let Some(doc) = self.decls.field_doc(name.span) {
                schema = self.describe(schema, doc);
            }
            if self.mode == Mode::Strict || !matches!(checked, Type::Option(_)) {
                required.push(&name.name);
            }
            props.push((name.name.to_string(), schema));
        }
        let mut out = J::obj([
            ("type", J::str("object")),
            ("properties", J::Obj(props)),
            ("required", J::strs(required)),
        ]);
        if self.mode != Mode::Output {
            out.set("additionalProperties", J::Bool(false));
        }
        out
    }

    /// The schema of a written type; `path` names it for messages.
    fn ty(&mut self, t: &TypeExpr, path: &str) -> J {
        stacker::maybe_grow(32 * 1024, 1024 * 1024, || match &t.kind {
            TypeExprKind::Named(id) => self.named(&id.name, path),
            TypeExprKind::Unit => J::obj([("type", J::str("null"))]),
            TypeExprKind::Record(fields, _) => self.record(fields, path, false),
            TypeExprKind::Optional(e) | TypeExprKind::Option(e) => {
                let inner = self.ty(e, path);
                nullable(inner)
            }
            TypeExprKind::Enum(lits) => J::obj([
                ("type", J::str("string")),
                ("enum", J::strs(lits.iter().map(|(l, _)| l.as_str()))),
            ]),
            TypeExprKind::List(e) => {
                let items = self.ty(e, &format!("{path}[]"));
                J::obj([("type", J::str("array")), ("items", items)])
            }
            TypeExprKind::Result(a, b) => {
                let ok = self.ty(a, &format!("{path}.Ok"));
                let err = self.ty(b, &format!("{path}.Err"));
                J::obj([(
                    "anyOf",
                    J::Arr(vec![self.tagged("Ok", ok), self.tagged("Err", err)]),
                )])
            }
            TypeExprKind::Linear(e) => self.ty(e, path),
            // Not data: rejected by the declarations' checks (E0201).
            TypeExprKind::Fun(..) | TypeExprKind::Error => J::obj([]),
        })
    }

    /// `{"Ok": v}` / `{"Err": e}`, as a Result crosses the boundary.
    fn tagged(&self, tag: &str, schema: J) -> J {
        let mut out = J::obj([
            ("type", J::str("object")),
            ("properties", J::Obj(vec![(tag.to_string(), schema)])),
            ("required", J::strs([tag])),
        ]);
        if self.mode != Mode::Output {
            out.set("additionalProperties", J::Bool(false));
        }
        out
    }

    fn named(&mut self, name: &Name, path: &str) -> J {
        let simple = |ty: &str| J::obj([("type", J::str(ty))]);
        match &**name {
            "Unit" => simple("null"),
            "Bool" => simple("boolean"),
            "Int" => simple("integer"),
            "Float" => simple("number"),
            "String" => simple("string"),
            "Json" => {
                self.json_at.push(path.to_string());
                J::obj([])
            }
            "Approval" => J::obj([
                ("type", J::str("string")),
                ("description", J::str(APPROVAL_DESCRIPTION)),
            ]),
            _ if self.decls.alias(name).is_some() => {
                if !self.refs.contains(name) {
                    self.refs.push(name.clone());
                }
                J::obj([("$ref", J::str(format!("#/$defs/{name}")))])
            }
            // Unknown names are E0205.
            _ => J::obj([]),
        }
    }
}

/// How an `Approval` token is described where one appears in a schema.
pub const APPROVAL_DESCRIPTION: &str =
    "an lt approval token, minted by lt's control plane for one call (`approve tool`)";

/// `schema` or `null` (`Option T`). `Json` (`{}`) already admits `null`, and
/// a schema that already admits it is kept (lt's JSON cannot tell
/// `Some(None)` from `None`).
fn nullable(schema: J) -> J {
    let null = J::obj([("type", J::str("null"))]);
    let admits_null = match &schema {
        J::Obj(entries) if entries.is_empty() => true,
        other => match other.get("anyOf") {
            Some(J::Arr(branches)) => branches.contains(&null),
            _ => other.get("type") == Some(&J::str("null")),
        },
    };
    if admits_null {
        schema
    } else {
        J::obj([("anyOf", J::Arr(vec![schema, null]))])
    }
}
