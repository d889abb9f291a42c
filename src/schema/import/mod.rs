//! JSON Schema tool definitions → lt declarations and a `tools.toml`
//! skeleton (`lt tools import`).
//!
//! ```text
//! JSON text ──detect──▶ ToolDef (dialect, name, description, schemas, annotations)
//!           ──convert──▶ lt types + `type` aliases + pruned check schemas
//!           ──effects──▶ effect row, idempotence
//!           ──render / toml_out──▶ tools.lt text, tools.toml text
//! ```
//!
//! The dialect (OpenAI, Anthropic, MCP) is recognised per tool
//! (`detect.rs`), or forced. The mapping, for a tool's input and output
//! schemas alike (`docs/tool-schemas.md` is the user's copy):
//!
//! | JSON Schema | lt |
//! | --- | --- |
//! | `string` / `integer` / `number` / `boolean` / `null` | `String` / `Int` / `Float` / `Bool` / `Unit` |
//! | `array` with `items: T` | `List T` (no `items`: `List Json`; a tuple: `List Json`, noted) |
//! | `object` with `properties` | a record; at the top of an input or output inline, nested a `type` alias named from `title` or the path (`CreateIssueLabelsItem`) |
//! | property in `required` / not in `required` | `f: T` / `f?: T` (a `default` is noted; it never makes a required property optional) |
//! | `anyOf`/`oneOf` `[T, null]`, `type: [T, "null"]`, `nullable: true` | `Option T` (`f?: T` when not required) |
//! | string `enum` / `const`, or `anyOf` of string consts | `"a" \| "b"` |
//! | `enum` / `const` of other scalars | the base type, the values checked at run time (an integer beyond 64 bits: `Json`) |
//! | `$ref` to `$defs`/`definitions` | a `type` alias named after the definition; a recursive one: `Json` |
//! | `allOf`; a `$ref` with constraints beside it | the schemas merged into one when that is sound (`convert/merge.rs`); annotations only beside a `$ref` or one `allOf` entry: that schema |
//! | `additionalProperties: false` | the record (lt's tool records are exact; other values are noted) |
//! | object without properties, `additionalProperties: T` | `Json` (a map), noted |
//! | object without properties otherwise | `{}` as a tool's input, else `Json` |
//! | an `allOf` that does not merge, `not`, `if`, `patternProperties`, unions, property names lt cannot write, recursion, nesting past [`MAX_DEPTH`] | `Json`, with a comment saying why |
//! | `format`, `minimum`… `multipleOf`, `minLength`, `maxLength`, `pattern`, `minItems`, `maxItems` | unchanged type; `[tools.NAME.checks]` in tools.toml, a `// checked at run time` comment |
//!
//! Effects: MCP annotations (`readOnlyHint` → `Read`; otherwise `Write`,
//! plus `Delete` when destructive; `openWorldHint` → `Network`; spec
//! defaults when absent or not booleans), or `_meta["lt/effects"]` exactly; OpenAI and
//! Anthropic definitions get `Write`, with a comment to narrow it. A tool
//! without an output schema returns `Json`: MCP's content blocks (a
//! string when all are text, else the list of blocks; [`MCP_CONTENT_NOTE`]),
//! any JSON for OpenAI and Anthropic. An MCP tool whose
//! `execution.taskSupport` is `"required"` is left out, with a warning.
//!
//! The library does no I/O: the caller reads the file or asks the server
//! (`crate::exec::list_tools`), writes the two texts, and prints
//! [`Imported::warnings`] (definitions that repeat a name, MCP hints that
//! are not booleans: worked around, and noted in the declarations too).

mod checks;
mod convert;
mod detect;
mod effects;
mod names;
mod render;
mod text;
mod toml_out;
mod ty;

use crate::schema::Dialect;
use convert::{Converter, Mapped, Place};
use serde_json::Value as Json;
use std::collections::HashMap;
use std::fmt;
use ty::Ty;

pub use convert::{MAX_ALIAS_SIZE, MAX_CHECK_VALUES, MAX_DEPTH};

/// What to import and how.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// The dialect to read; `None`: recognised per tool.
    pub dialect: Option<Dialect>,
    /// Where the definitions come from, for the files' header comments
    /// (`time_tools.json`).
    pub origin: String,
    /// The command line of the live MCP server the definitions come from:
    /// its tools get `mcp = { command = […], tool = "…" }` executors.
    pub server: Option<Vec<String>>,
    /// The folder to run the server in, written as the mcp table's `cwd`
    /// (by default tools.toml runs it in its own folder): the caller gives
    /// it when the command's arguments name files relative to where the
    /// server was listed.
    pub server_cwd: Option<String>,
}

/// The result of an import.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The lt declarations (`tools.lt`): `effect` labels, `type` aliases, tools.
    pub declarations: String,
    /// The `tools.toml` skeleton.
    pub tools_toml: String,
    /// The tools, in the order of the definitions.
    pub tools: Vec<ImportedTool>,
    /// What the definitions get wrong that the import worked around (a
    /// repeated tool name, an MCP hint that is not a boolean), for stderr;
    /// the comments in the declarations say it too.
    pub warnings: Vec<String>,
}

/// One imported tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportedTool {
    /// Its lt name.
    pub name: String,
    /// The name the definition gives (the server's name for it).
    pub original: String,
    /// The dialect of its definition.
    pub dialect: Dialect,
}

/// Why definitions could not be imported: not JSON, or not tool
/// definitions. Displayed as `message` (with `line:column: ` before it when
/// known) and a `help: …` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    /// What is wrong, naming the tool (`tools[2]`) where there is one.
    pub message: String,
    /// How to fix it.
    pub help: Option<String>,
    /// 1-based line in the JSON text, for a syntax error.
    pub line: Option<usize>,
    /// 1-based column in the JSON text, for a syntax error.
    pub column: Option<usize>,
}

impl ImportError {
    fn new(message: impl Into<String>) -> ImportError {
        ImportError {
            message: message.into(),
            help: None,
            line: None,
            column: None,
        }
    }

    fn with_help(mut self, help: impl Into<String>) -> ImportError {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let (Some(line), Some(column)) = (self.line, self.column) {
            write!(f, "{line}:{column}: ")?;
        }
        f.write_str(&self.message)?;
        if let Some(help) = &self.help {
            write!(f, "\nhelp: {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ImportError {}

/// The comment on the output of an MCP tool without an `outputSchema`:
/// what its `Json` holds and how to narrow it.
pub const MCP_CONTENT_NOTE: &str = "no outputSchema: its MCP content, a String when all blocks are text, \
else the list of blocks (image, audio, resource_link, resource); narrow it with json_string or json_list, \
or declare String if the tool returns only text";

/// Imports the definitions in `text` (JSON, nested to any depth).
pub fn import_text(text: &str, options: &ImportOptions) -> Result<Imported, ImportError> {
    // A byte order mark is not JSON, but editors on Windows write one.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let value = crate::runtime::deep_json::parse_str(text, false).map_err(|e| {
        if text.trim().is_empty() {
            return ImportError::new("the file is empty")
                .with_help("expected JSON tool definitions: an MCP tools/list result, or OpenAI or Anthropic tools");
        }
        let full = e.to_string();
        let message = match full.rfind(" at line ") {
            Some(at) => &full[..at],
            None => &full,
        };
        ImportError {
            message: format!("not JSON: {message}"),
            help: Some("expected JSON tool definitions: an MCP tools/list result, or OpenAI or Anthropic tools".into()),
            line: Some(e.line()),
            column: Some(e.column()),
        }
    })?;
    let result = import_value(&value, options);
    crate::runtime::boundary::drop_deep(value);
    result
}

/// Imports the definitions in `value` (see [`import_text`]).
pub fn import_value(value: &Json, options: &ImportOptions) -> Result<Imported, ImportError> {
    let (defs, task_only): (Vec<_>, Vec<_>) = detect::tool_defs(value, options.dialect)?
        .into_iter()
        .partition(|d| !d.task_required);
    let mut conv = Converter::default();
    let lt_names = tool_names(&defs, &mut conv);
    let mut decls = Vec::new();
    let mut tables = Vec::new();
    let mut labels: Vec<String> = Vec::new();
    let by_name = by_name(&defs);
    let mut warnings = repeated_names(&defs, &by_name, &lt_names);
    warnings.extend(task_only.iter().map(|d| {
        format!(
            "{} (`{}`): left out: its execution.taskSupport is \"required\", so it can only be called as an MCP task \
             (a task created, then polled with tasks/get), which lt's mcp executor does not do",
            d.at, d.name
        )
    }));
    for (def, name) in defs.iter().zip(&lt_names) {
        let effects = effects::effects(def);
        warnings.extend(
            effects
                .warnings
                .iter()
                .map(|w| format!("{} (`{}`): {w}", def.at, def.name)),
        );
        for l in &effects.labels {
            if !effects::is_builtin(l) && !labels.contains(l) {
                labels.push(l.clone());
            }
        }
        let hint = names::type_name(name);
        let mut notes = Vec::new();
        let repeats = by_name.get(def.name.as_str()).map_or(1, Vec::len);
        if repeats > 1 {
            notes.push(format!(
                "the definitions repeat the name {} ({repeats} tools, each calling the one tool of that name): keep the right definition",
                text::short_json(&Json::from(def.name.as_str()), 80)
            ));
        } else if name != &def.name {
            let why = if names::is_tool_name(&def.name) {
                "another tool has that name"
            } else if names::is_identifier(&def.name) {
                "a keyword"
            } else {
                "not an lt name"
            };
            notes.push(format!(
                "the definition names it {} ({why})",
                text::short_json(&Json::from(def.name.as_str()), 80)
            ));
        }
        notes.push(effects.note.clone());
        let input = match def.input {
            Some(schema) => conv.convert_root(schema, &hint, Place::Input),
            None => Mapped {
                ty: Ty::Record(Vec::new()),
                notes: Vec::new(),
                checks: None,
            },
        };
        let input_cut = conv.checks_cut;
        let output = match (def.dialect, def.output) {
            (_, Some(schema)) => conv.convert_root(schema, &format!("{hint}Output"), Place::Output),
            // Exported by `lt tools export` (it writes `lt/effects`): a
            // String output, which travels as text content.
            (Dialect::Mcp, None) if def.lt_effects.is_some() => Mapped {
                ty: Ty::Str,
                notes: vec![
                    "no outputSchema: text content (String, as lt tools export wrote it)".into(),
                ],
                checks: None,
            },
            (Dialect::Mcp, None) => Mapped {
                ty: Ty::Json,
                notes: vec![MCP_CONTENT_NOTE.into()],
                checks: None,
            },
            (d, None) => Mapped {
                ty: Ty::Json,
                notes: vec![format!(
                    "{} definitions have no output schema, so any JSON (Json)",
                    detect::dialect_name(d)
                )],
                checks: None,
            },
        };
        let output_cut = def.output.is_some() && conv.checks_cut;
        notes.extend(
            convert::merge_checked(input.notes)
                .into_iter()
                .map(|n| format!("input: {n}")),
        );
        notes.extend(
            convert::merge_checked(output.notes)
                .into_iter()
                .map(|n| format!("output: {n}")),
        );
        if input_cut || output_cut {
            notes.push(
                "some run-time checks were left out: too large, or not valid JSON Schema".into(),
            );
        }
        let doc = def
            .description
            .as_deref()
            .or(def.title.as_deref())
            .map(|d| text::comment_lines(d, 60, 1000))
            .unwrap_or_default();
        decls.push(render::ToolDecl {
            name: name.clone(),
            doc,
            notes,
            input: input.ty,
            output: output.ty,
            effects: effects.labels.clone(),
        });
        tables.push((effects, input.checks, output.checks));
    }
    labels.sort();
    let dialects = dialects(&defs);
    let declarations = render::declarations(
        &[
            format!(
                "Tool declarations imported by `lt tools import` from {} ({dialects}).",
                options.origin
            ),
            "How JSON Schema maps to lt types: docs/tool-schemas.md.".into(),
        ],
        &labels,
        &conv.aliases,
        &decls,
    );
    let executors: Vec<toml_out::Executor> = defs
        .iter()
        .map(|d| match (&options.server, d.dialect) {
            (Some(command), Dialect::Mcp) => {
                toml_out::Executor::Mcp(command.clone(), options.server_cwd.clone())
            }
            (None, Dialect::Mcp) => toml_out::Executor::McpUnknown,
            _ => toml_out::Executor::Missing,
        })
        .collect();
    let toml_tables: Vec<toml_out::Table<'_>> = defs
        .iter()
        .zip(&lt_names)
        .zip(&tables)
        .zip(&executors)
        .map(
            |(((def, name), (effects, input, output)), executor)| toml_out::Table {
                name,
                original: &def.name,
                executor,
                effects: &effects.labels,
                effects_known: effects.known,
                idempotent: effects.idempotent,
                input_checks: input.as_ref(),
                output_checks: output.as_ref(),
            },
        )
        .collect();
    let tools_toml = toml_out::tools_toml(
        &[
            format!(
                "Executors for the tools imported by `lt tools import` from {} ({dialects}).",
                options.origin
            ),
            "Keys: docs/executors.md; [tools.NAME.checks]: docs/tool-schemas.md.".into(),
        ],
        &toml_tables,
    )
    .map_err(|e| ImportError::new(format!("internal error: {e}")))?;
    Ok(Imported {
        declarations,
        tools_toml,
        tools: defs
            .iter()
            .zip(lt_names)
            .map(|(d, name)| ImportedTool {
                name,
                original: d.name.clone(),
                dialect: d.dialect,
            })
            .collect(),
        warnings,
    })
}

/// The definitions (their indices) of each name.
fn by_name<'a>(defs: &'a [detect::ToolDef<'_>]) -> HashMap<&'a str, Vec<usize>> {
    let mut out: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, d) in defs.iter().enumerate() {
        out.entry(d.name.as_str()).or_default().push(i);
    }
    out
}

/// A warning for each name that several definitions give, with the lt
/// names the tools got (`dup` and `dup_2`).
fn repeated_names(
    defs: &[detect::ToolDef<'_>],
    by_name: &HashMap<&str, Vec<usize>>,
    lt_names: &[String],
) -> Vec<String> {
    let mut out = Vec::new();
    for (i, def) in defs.iter().enumerate() {
        let Some(same) = by_name.get(def.name.as_str()) else {
            continue;
        };
        if same.len() < 2 || same.first() != Some(&i) {
            continue;
        }
        let at: Vec<&str> = same
            .iter()
            .filter_map(|j| defs.get(*j))
            .map(|d| d.at.as_str())
            .collect();
        let named: Vec<String> = same
            .iter()
            .filter_map(|j| lt_names.get(*j))
            .map(|n| format!("`{n}`"))
            .collect();
        out.push(format!(
            "{} definitions repeat the tool name {} ({}): imported as {}, each calling the one tool of that name; keep the right definition",
            same.len(),
            text::short_json(&Json::from(def.name.as_str()), 80),
            at.join(", "),
            named.join(", ")
        ));
    }
    out
}

/// The lt name of each tool: its own when lt can write it and it is free,
/// else a sanitised one made unique (`get-time` → `get_time`, `get_time_2`).
fn tool_names(defs: &[detect::ToolDef<'_>], conv: &mut Converter) -> Vec<String> {
    let mut out: Vec<Option<String>> = vec![None; defs.len()];
    for (slot, def) in out.iter_mut().zip(defs) {
        if names::is_tool_name(&def.name) && !conv.names.is_taken(&def.name) {
            conv.names.take(&def.name);
            *slot = Some(def.name.clone());
        }
    }
    out.into_iter()
        .zip(defs)
        .map(|(slot, def)| {
            slot.unwrap_or_else(|| conv.names.fresh(&names::tool_name(&def.name), "_"))
        })
        .collect()
}

/// "MCP", "OpenAI and Anthropic", … for the headers.
fn dialects(defs: &[detect::ToolDef<'_>]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for d in defs {
        let name = detect::dialect_name(d.dialect);
        if !seen.contains(&name) {
            seen.push(name);
        }
    }
    match seen.as_slice() {
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        [] => String::new(),
    }
}
