//! `$ref`s (local JSON pointers; `$defs`/`definitions` entries become
//! shared aliases, converted once per root) and the registration of aliases.

use super::keywords::description;
use super::{merge_checked, Converter, Ctx, Mapped, Place, MAX_ALIAS_SIZE};
use crate::schema::import::checks;
use crate::schema::import::names;
use crate::schema::import::text::{comment_lines, short_json};
use crate::schema::import::ty::{self, Alias, Ty};
use serde_json::{Map, Value as Json};

impl Converter {
    pub(super) fn reference(&mut self, r: &Json, ctx: &Ctx<'_>, place: Place) -> Mapped {
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
            return Mapped::json(format!(
                "unresolved $ref {}",
                short_json(&Json::from(r), 60)
            ));
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
        let name = self.alias(
            &names::type_name(def),
            false,
            inner,
            doc,
            merge_checked(body.notes),
        );
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
    pub(super) fn alias(
        &mut self,
        name: &str,
        from_path: bool,
        ty: Ty,
        doc: Vec<String>,
        notes: Vec<String>,
    ) -> Ty {
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
        self.alias_index
            .insert(candidate.clone(), self.aliases.len());
        self.by_content
            .entry(content)
            .or_insert_with(|| candidate.clone());
        self.aliases.push(alias);
        Ty::Named(candidate)
    }
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
pub(super) fn percent_decode(fragment: &str) -> String {
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = fragment
                .get(i + 1..i + 3)
                .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
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
