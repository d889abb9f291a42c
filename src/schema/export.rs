//! lt declarations → JSON Schema tool definitions (`lt tools export`).
//!
//! Input: a checked [`Declarations`] (a declarations file or a program).
//! Output: the definitions of its tools in one [`Dialect`], and the
//! [`Problem`]s met on the way (a tool that cannot be exported is an error
//! and is left out; the others are still exported).
//!
//! | lt (as written) | JSON Schema (draft 2020-12) |
//! |---|---|
//! | `Int` `Float` `String` `Bool` | `{"type": "integer"}` `number` `string` `boolean` |
//! | `Unit` | `{"type": "null"}`; as a tool's whole input, the empty object |
//! | `List T` | `{"type": "array", "items": T}` |
//! | `{a: T, b?: U}` | `{"type": "object", "properties": {a, b}, "required": ["a"], "additionalProperties": false}` |
//! | `Option T`, a field `b?: T` | `{"anyOf": [T, {"type": "null"}]}`, the field not required |
//! | `"a" \| "b"` | `{"type": "string", "enum": ["a", "b"]}` (written order) |
//! | `Json` | `{}`, any value |
//! | `!T` | `T` |
//! | an input field `f: !Approval` | left out (see below) |
//! | `Result<T, E>` (an output) | `{"anyOf": [{Ok: T}, {Err: E}]}` as objects with one required key |
//! | a `type` alias `Name` | `{"$ref": "#/$defs/Name"}`, `Name`'s schema in the root's `$defs` |
//!
//! - A tool's input must be an object: a record (or an alias of one, inlined
//!   at the root, where OpenAI and MCP allow nothing but an object), or
//!   `Unit`, the empty object. Any other input (`tool lookup: String -> …`)
//!   is an error naming the tool, with the hint to declare a record.
//! - **OpenAI** (`[{"type": "function", "function": {name, description,
//!   parameters, strict}}]`) is written for strict mode: every property is
//!   in `required` (an optional field is nullable instead), every object has
//!   `"additionalProperties": false`, no keyword strict mode rejects, and no
//!   keyword beside a `$ref` (a described `$ref` becomes a one-branch
//!   `anyOf`). `Json` cannot be expressed there, nor a schema beyond strict
//!   mode's limits (10 levels of objects, 5000 properties, 1000 enum
//!   values): such a tool is written as the Anthropic schema with
//!   `"strict": false`, with a warning naming the tool and the field.
//! - **Anthropic**: `[{name, description, input_schema}]`.
//! - **MCP**: a `tools/list` result `{"tools": [{name, description,
//!   inputSchema, outputSchema?, annotations, _meta}]}`. `outputSchema` when
//!   the output is a record (MCP output schemas are objects); its objects do
//!   not forbid extra properties, because lt drops a result's extra fields.
//!   A `String` or `Unit` output has none (text content); any other output
//!   has none either, with a note. Effects become hints: effects within
//!   `{Read}` → `readOnlyHint: true`; a `Delete` label → `destructiveHint:
//!   true`; `Network` → `openWorldHint: true`. The exact effect set is kept
//!   in `_meta["lt/effects"]`, so an import restores labels like `Payment`.
//! - Descriptions: a tool's doc comment (the `//` lines directly above it)
//!   is its `description`; a field's doc comment, the property's; an alias's,
//!   its `$defs` entry's. None is invented.
//! - `!Approval` fields: an approval token is minted by lt's control plane
//!   for one call (`approve tool NAME arg`, with the input minus its approval
//!   fields); a model cannot make one, and a required `approval` string
//!   would invite it to invent one. So the model-facing schema leaves the
//!   field out; the description says lt adds it, and MCP's
//!   `_meta["lt/approval"]` lists the fields so that an import can restore
//!   them.

mod ordered;
mod schema;

pub use ordered::OrderedJson;
pub use schema::APPROVAL_DESCRIPTION;

use crate::schema::Dialect;
use crate::source::Span;
use crate::syntax::ast::{Name, TypeExprKind};
use crate::types::{Declarations, DeclaredTool, EffectSet, Type};
use schema::{Gen, Mode};

/// How serious a [`Problem`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The tool is left out of the definitions.
    Error,
    /// The tool is exported in a weaker form (OpenAI without strict mode).
    Warning,
    /// Something the dialect cannot say (an MCP output schema).
    Note,
}

/// A problem with one tool's definition.
#[derive(Clone, Debug)]
pub struct Problem {
    /// Error, warning or note.
    pub severity: Severity,
    /// The tool.
    pub tool: Name,
    /// Its declaration.
    pub span: Span,
    /// What is wrong, naming the tool.
    pub message: String,
    /// How to fix it.
    pub help: Option<String>,
}

/// The definitions of the exported tools, and the problems.
#[derive(Clone, Debug)]
pub struct Export {
    /// A JSON array (OpenAI, Anthropic) or `{"tools": […]}` (MCP).
    pub definitions: OrderedJson,
    /// The tools exported, in declaration order.
    pub exported: Vec<Name>,
    /// The problems, in declaration order.
    pub problems: Vec<Problem>,
}

impl Export {
    /// True when a tool could not be exported.
    pub fn has_errors(&self) -> bool {
        self.problems.iter().any(|p| p.severity == Severity::Error)
    }
}

/// The definitions of every tool of `decls` (which should have no
/// diagnostics) in `dialect`.
pub fn export(decls: &Declarations, dialect: Dialect) -> Export {
    let mut out = Export {
        definitions: OrderedJson::Null,
        exported: Vec::new(),
        problems: Vec::new(),
    };
    let mut defs = Vec::new();
    for t in &decls.tools {
        if let Some(def) = definition(decls, t, dialect, &mut out.problems) {
            defs.push(def);
            out.exported.push(t.sig.name.clone());
        }
    }
    out.definitions = match dialect {
        Dialect::Openai | Dialect::Anthropic => OrderedJson::Arr(defs),
        Dialect::Mcp => OrderedJson::obj([("tools", OrderedJson::Arr(defs))]),
    };
    out
}

/// One tool's definition, or `None` (an error is in `problems`).
fn definition(
    decls: &Declarations,
    t: &DeclaredTool,
    dialect: Dialect,
    problems: &mut Vec<Problem>,
) -> Option<OrderedJson> {
    let TypeExprKind::Fun(input, _, output) = &t.written.ty.kind else {
        return None; // not a function type: E0201
    };
    let name: &str = &t.sig.name;
    let problem = |severity, message: String, help: Option<String>| Problem {
        severity,
        tool: t.sig.name.clone(),
        span: t.sig.span,
        message,
        help,
    };
    let mode = if dialect == Dialect::Openai {
        Mode::Strict
    } else {
        Mode::Input
    };
    let mut gen = Gen::new(decls, mode);
    let mut params = match gen.object_root(input) {
        Ok(s) => s,
        Err(e) => {
            problems.push(problem(
                Severity::Error,
                format!("tool `{name}` takes `{}`, but a tool definition's input must be an object", e.ty),
                Some(format!(
                    "declare its input as a record, e.g. `tool {name}: {{value: {}}} -{}-> …;`, and pass `{{value = …}}` in programs",
                    e.ty, t.sig.effects
                )),
            ));
            return None;
        }
    };
    if dialect != Dialect::Mcp && name.len() > 64 {
        problems.push(problem(
            Severity::Error,
            format!(
                "tool `{name}` has a name of {} characters; OpenAI and Anthropic accept at most 64",
                name.len()
            ),
            Some("give the tool a shorter name".to_string()),
        ));
        return None;
    }
    let mut strict = true;
    if dialect == Dialect::Openai {
        let why = match gen.json_at.first() {
            Some(path) => Some(format!(
                "`{path}` is `Json`, which OpenAI's strict mode cannot express"
            )),
            None => strict_limits(&t.sig.input),
        };
        if let Some(why) = why {
            strict = false;
            gen = Gen::new(decls, Mode::Input);
            params = gen.object_root(input).unwrap_or(params);
            problems.push(problem(
                Severity::Warning,
                format!("tool `{name}`: {why}; exported with \"strict\": false"),
                Some(
                    "declare the data's shape (a record, a list, an enum) to keep strict mode"
                        .to_string(),
                ),
            ));
        }
    }
    let description = describe(t, &gen.approvals);
    let desc_entry = |entries: &mut Vec<(String, OrderedJson)>| {
        if let Some(d) = &description {
            entries.push(("description".into(), OrderedJson::str(d.as_str())));
        }
    };
    let mut entries = vec![("name".to_string(), OrderedJson::str(name))];
    desc_entry(&mut entries);
    Some(match dialect {
        Dialect::Openai => {
            entries.push(("parameters".into(), params));
            entries.push(("strict".into(), OrderedJson::Bool(strict)));
            OrderedJson::obj([
                ("type", OrderedJson::str("function")),
                ("function", OrderedJson::Obj(entries)),
            ])
        }
        Dialect::Anthropic => {
            entries.push(("input_schema".into(), params));
            OrderedJson::Obj(entries)
        }
        Dialect::Mcp => {
            entries.push(("inputSchema".into(), params));
            let mut out_gen = Gen::new(decls, Mode::Output);
            match out_gen.object_root(output) {
                Ok(s) if !matches!(t.sig.output.peel_linear(), Type::Unit) => {
                    entries.push(("outputSchema".into(), s));
                }
                _ if matches!(t.sig.output.peel_linear(), Type::String | Type::Unit) => {}
                _ => problems.push(problem(
                    Severity::Note,
                    format!(
                        "tool `{name}` returns `{}`: an MCP output schema must be an object, so it has none (the result is text content)",
                        t.sig.output
                    ),
                    None,
                )),
            }
            entries.push(("annotations".into(), annotations(&t.sig.effects)));
            let mut meta = vec![(
                "lt/effects".to_string(),
                OrderedJson::strs(t.sig.effects.labels()),
            )];
            if !gen.approvals.is_empty() {
                meta.push((
                    "lt/approval".to_string(),
                    OrderedJson::strs(gen.approvals.iter().map(|n| &**n)),
                ));
            }
            entries.push(("_meta".into(), OrderedJson::Obj(meta)));
            OrderedJson::Obj(entries)
        }
    })
}

/// The tool's doc comment, and a sentence on the approval fields lt fills.
fn describe(t: &DeclaredTool, approvals: &[Name]) -> Option<String> {
    let mut parts: Vec<String> = t.doc.iter().cloned().collect();
    if !approvals.is_empty() {
        let fields: Vec<String> = approvals.iter().map(|n| format!("`{n}`")).collect();
        parts.push(format!(
            "Each call needs an approval: lt adds the token ({} {}), granted through `approve tool {}`; it is not a parameter here.",
            if fields.len() == 1 { "field" } else { "fields" },
            fields.join(", "),
            t.sig.name
        ));
    }
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// MCP's behaviour hints from an effect set.
fn annotations(effects: &EffectSet) -> OrderedJson {
    let has = |l: &str| effects.labels().any(|x| x == l);
    let read_only = effects.labels().all(|l| l == "Read");
    OrderedJson::obj([
        ("readOnlyHint", OrderedJson::Bool(read_only)),
        ("destructiveHint", OrderedJson::Bool(has("Delete"))),
        ("openWorldHint", OrderedJson::Bool(has("Network"))),
    ])
}

/// Why a checked input exceeds OpenAI strict mode's documented limits
/// (objects nested 10 deep, 5000 properties, 1000 enum values), if it does.
fn strict_limits(t: &Type) -> Option<String> {
    let (mut props, mut enums, mut deepest) = (0usize, 0usize, 0usize);
    let mut work = vec![(t, 0usize)];
    while let Some((t, depth)) = work.pop() {
        match t {
            Type::Record(fs) | Type::OpenRecord(fs) => {
                deepest = deepest.max(depth + 1);
                props += fs.len();
                work.extend(fs.iter().map(|(_, f)| (f, depth + 1)));
            }
            Type::List(e) | Type::Linear(e) | Type::Option(e) => work.push((e, depth)),
            Type::Result(a, b) => work.extend([(&**a, depth + 1), (&**b, depth + 1)]),
            Type::Enum(lits) => enums += lits.len(),
            _ => {}
        }
    }
    if deepest > 10 {
        Some(format!(
            "its input nests objects {deepest} levels deep, beyond OpenAI strict mode's 10"
        ))
    } else if props > 5000 {
        Some(format!(
            "its input has {props} properties, beyond OpenAI strict mode's 5000"
        ))
    } else if enums > 1000 {
        Some(format!(
            "its input has {enums} enum values, beyond OpenAI strict mode's 1000"
        ))
    } else {
        None
    }
}
