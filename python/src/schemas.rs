//! `lt.tools`: tool schemas in and out, through the library's importer and
//! exporter ([`lt::schema`], what `lt tools import` and `lt tools export`
//! run). Definitions (OpenAI, Anthropic, an MCP `tools/list` result, or the
//! tools of a live MCP server) become declarations and a `tools.toml`
//! skeleton; declarations become definitions. Failures are data
//! (`ConfigError` for definitions that cannot be imported or a server that
//! cannot be listed, `CheckError` for declarations with errors).

use crate::check::declarations_report;
use crate::errors::Failure;
use lt::schema::export::{export, Severity};
use lt::schema::import::{import_text, import_value, ImportError, ImportOptions};
use lt::schema::Dialect;
use lt::source::SourceFile;
use lt::types::check_declarations;
use serde_json::{json, Value as Json};
use std::time::Duration;

/// The dialect named `name` (`openai`, `anthropic`, `mcp`).
fn dialect(name: &str) -> Result<Dialect, Failure> {
    match name {
        "openai" => Ok(Dialect::Openai),
        "anthropic" => Ok(Dialect::Anthropic),
        "mcp" => Ok(Dialect::Mcp),
        other => Err(Failure::new(
            "ConfigError",
            format!("no tool-definition format {other:?}"),
            json!({"stage": "input", "help": "the formats are openai, anthropic and mcp"}),
        )),
    }
}

fn import_failure(what: &str, e: &ImportError) -> Failure {
    Failure::new(
        "ConfigError",
        format!("{what}: {}", in_python(&e.message)),
        json!({"stage": "import", "help": e.help.as_deref().map(in_python), "line": e.line, "column": e.column}),
    )
}

/// An importer's message in this package's words: the command line's
/// flags as [`crate::errors::pythonize`] names them (`--format X` is
/// `lt.tools.from_X`), and its file the JSON given.
fn in_python(text: &str) -> String {
    crate::errors::pythonize(text).replace("the file ", "the JSON given ")
}

/// `{declarations, tools_toml, tools: [{name, original}], warnings}`.
fn imported_json(i: &lt::schema::import::Imported) -> Json {
    json!({
        "declarations": i.declarations,
        "tools_toml": i.tools_toml,
        "tools": i.tools.iter().map(|t| json!({"name": t.name, "original": t.original})).collect::<Vec<_>>(),
        "warnings": i.warnings,
    })
}

/// Imports the definitions in `text` (JSON) of `format`.
pub fn import_definitions(text: &str, format: &str) -> Result<Json, Failure> {
    let options = ImportOptions {
        dialect: Some(dialect(format)?),
        origin: format!("{format} definitions given to lt.tools"),
        server: None,
        server_cwd: None,
    };
    let imported =
        import_text(text, &options).map_err(|e| import_failure("the definitions", &e))?;
    Ok(imported_json(&imported))
}

/// Lists the tools of the MCP server started with `command` and imports
/// them (each tool gets an `mcp` executor running that command).
pub fn import_server(command: Vec<String>, timeout_ms: u64) -> Result<Json, Failure> {
    if command.is_empty() {
        return Err(Failure::new(
            "ConfigError",
            "command= is empty: name the MCP server's program and its arguments",
            json!({"stage": "input", "help": "e.g. command=[\"uvx\", \"mcp-server-time\"]"}),
        ));
    }
    let line = command.join(" ");
    let listed = lt::exec::list_tools(&command, Duration::from_millis(timeout_ms.max(1)))
        .map_err(|why| {
            Failure::new(
                "ConfigError",
                why,
                json!({"stage": "import", "help": "command= must start an MCP server that speaks over its stdin and stdout (JSON-RPC, one message a line)"}),
            )
        })?;
    let options = ImportOptions {
        dialect: Some(Dialect::Mcp),
        origin: format!("the MCP server `{line}`"),
        server: Some(command),
        server_cwd: None,
    };
    let imported =
        import_value(&listed, &options).map_err(|e| import_failure("the server's tools/list", &e));
    lt::runtime::boundary::drop_deep(listed);
    Ok(imported_json(&imported?))
}

/// The definitions (`format`) of the tools `declarations` declares:
/// `{definitions, warnings}`. Errors: the declarations have errors
/// (`CheckError`), declare no tool, or a tool cannot be exported.
pub fn export_definitions(name: &str, declarations: &str, format: &str) -> Result<Json, Failure> {
    let format = dialect(format)?;
    let file = SourceFile::new(name, declarations);
    let decls = check_declarations(&file.text);
    if !decls.is_ok() {
        return Err(Failure::new(
            "CheckError",
            "the declarations have errors",
            json!({"report": declarations_report(&file, &decls.diagnostics, decls.truncated)}),
        ));
    }
    if decls.tools.is_empty() {
        return Err(Failure::new(
            "ConfigError",
            format!("{name} declares no tools, so there is nothing to export"),
            json!({"stage": "export", "help": "declare each tool with its input record, effects and output: `tool lookup: {id: String} -{Read}-> {email: String};`"}),
        ));
    }
    let out = export(&decls, format);
    let at = |p: &lt::schema::export::Problem| {
        let lc = file.line_col(p.span.start);
        (lc.line, lc.column)
    };
    if let Some(p) = out.problems.iter().find(|p| p.severity == Severity::Error) {
        let (line, column) = at(p);
        return Err(Failure::new(
            "ConfigError",
            p.message.clone(),
            json!({"stage": "export", "help": p.help, "file": name, "line": line, "column": column}),
        ));
    }
    let warnings: Vec<String> = out
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Warning)
        .map(|p| {
            let (line, column) = at(p);
            format!("{name}:{line}:{column}: {}", p.message)
        })
        .collect();
    let definitions: Json = serde_json::to_value(&out.definitions).unwrap_or(Json::Null);
    Ok(json!({"definitions": definitions, "warnings": warnings}))
}
