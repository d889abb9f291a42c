//! `lt tools import`: read tool definitions (a file, standard input, or a
//! live MCP server's `tools/list`), print or write the lt declarations and
//! the `tools.toml` skeleton (`crate::schema::import` makes both).
//!
//! Exit codes: 0 done; 2 a usage error, an unreadable file, input that is
//! not JSON or not tool definitions, a server that could not list its
//! tools, or a file that could not be written.

use crate::cli::{read_text, EXIT_OK, EXIT_USAGE};
use crate::schema::import::{import_text, import_value, ImportError, ImportOptions as Options};
use crate::schema::Dialect;
use std::path::Path;
use std::time::Duration;

/// How long a live MCP server has to start and list its tools (a server
/// started through a package runner may first download itself).
/// The options of `lt tools import`.
#[derive(Debug)]
pub struct ImportOptions {
    /// The definitions file, `-` for stdin; `None` with `--mcp`.
    pub file: Option<String>,
    /// The dialect, when given.
    pub format: Option<Dialect>,
    /// List a live MCP server's tools instead of reading a file.
    pub mcp: bool,
    /// The MCP server's command line.
    pub command: Vec<String>,
    /// Write the files here instead of printing them.
    pub out: Option<String>,
    /// Replace existing files in `out`.
    pub force: bool,
    /// With `--mcp`: how long the server may take to start and list its tools.
    pub timeout: Duration,
}

/// Runs `lt tools import`; returns the exit status.
pub fn run(options: &ImportOptions) -> u8 {
    if options.out.as_deref() == Some("") {
        return usage("--out needs a folder name (`--out .` for the current folder)");
    }
    let mut what = "the server's tools/list".to_string();
    let imported = if options.mcp {
        if let Some(file) = &options.file {
            return usage(&format!(
                "`{file}` and --mcp: give a definitions file, or --mcp -- COMMAND…, not both\n  help: to run `{file}` as the MCP server, put it after `--`: lt tools import --mcp -- {file}"
            ));
        }
        if options.command.is_empty() {
            return usage(
                "--mcp needs the server's command line after `--`: lt tools import --mcp -- uvx mcp-server-time",
            );
        }
        if options.format.is_some_and(|f| f != Dialect::Mcp) {
            return usage("--mcp lists an MCP server's tools: --format must be mcp, or left out");
        }
        let listed = match crate::exec::list_tools(&options.command, options.timeout) {
            Ok(v) => v,
            Err(e) => {
                err!("error: {e}");
                err!(
                    "help: --mcp runs `{}` and speaks MCP with it over its stdin and stdout (JSON-RPC, one message a line): name the server's own command, e.g. `lt tools import --mcp -- uvx mcp-server-time`; to see what the program does, run it by hand",
                    command_line(&options.command)
                );
                return EXIT_USAGE;
            }
        };
        // tools.toml resolves a relative program path against its own
        // folder: make it absolute, as it was resolved here.
        let cwd = std::env::current_dir().ok();
        let mut command = options.command.clone();
        if let (Some(cwd), Some(program)) = (&cwd, command.first_mut()) {
            if program.contains('/') && !Path::new(program.as_str()).is_absolute() {
                *program = cwd.join(program.as_str()).display().to_string();
            }
        }
        let result = import_value(
            &listed,
            &Options {
                dialect: Some(Dialect::Mcp),
                origin: format!("the MCP server `{}`", command_line(&options.command)),
                server_cwd: cwd
                    .filter(|cwd| names_local_files(cwd, &command[1..]))
                    .map(|c| c.display().to_string()),
                server: Some(command),
            },
        );
        crate::runtime::boundary::drop_deep(listed);
        result.map_err(|e| report(&what, &e))
    } else {
        if !options.command.is_empty() {
            return usage("a command after `--` is an MCP server's: add --mcp (lt tools import --mcp -- COMMAND…)");
        }
        let Some(file) = &options.file else {
            return usage(
                "name the definitions file (`-` for standard input), or list a server's tools with --mcp -- COMMAND…",
            );
        };
        let (name, text) = match read_text(file, "JSON must be UTF-8") {
            Ok(read) => read,
            Err(e) => {
                err!("error: {e}");
                return EXIT_USAGE;
            }
        };
        let origin = match name.as_str() {
            "<stdin>" => "standard input".to_string(),
            _ => Path::new(&name)
                .file_name()
                .map_or(name.clone(), |n| n.to_string_lossy().into_owned()),
        };
        let result = import_text(
            &text,
            &Options {
                dialect: options.format,
                origin,
                server: None,
                server_cwd: None,
            },
        )
        .map_err(|e| report(&name, &e));
        what = name;
        result
    };
    let imported = match imported {
        Ok(i) => i,
        Err(code) => return code,
    };
    for w in &imported.warnings {
        err!("warning: {what}: {w}");
    }
    match &options.out {
        None => {
            out!(
                "// ===== tools.lt =====\n{}\n# ===== tools.toml =====\n{}",
                imported.declarations,
                imported.tools_toml.trim_end()
            );
            EXIT_OK
        }
        Some(dir) => {
            let dir = Path::new(dir);
            if let Err(e) = std::fs::create_dir_all(dir) {
                // `--out afile`, or `--out afile/sub`: say which is a file.
                match dir.ancestors().find(|a| a.is_file()) {
                    Some(file) => err!(
                        "error: `{}` is a file, not a folder\nhelp: --out names the folder to write tools.lt and tools.toml in",
                        file.display()
                    ),
                    None => err!("error: cannot create the folder `{}`: {e}", dir.display()),
                }
                return EXIT_USAGE;
            }
            let files = [
                (dir.join("tools.lt"), &imported.declarations),
                (dir.join("tools.toml"), &imported.tools_toml),
            ];
            if !options.force {
                if let Some((path, _)) = files.iter().find(|(p, _)| p.exists()) {
                    err!(
                        "error: `{}` exists; lt tools import does not replace it\nhelp: add --force to replace it, or choose another --out folder",
                        path.display()
                    );
                    return EXIT_USAGE;
                }
            }
            for (path, text) in &files {
                if let Err(e) = std::fs::write(path, text) {
                    err!("error: cannot write `{}`: {e}", path.display());
                    return EXIT_USAGE;
                }
            }
            let renamed = imported
                .tools
                .iter()
                .filter(|t| t.name != t.original)
                .count();
            err!(
                "wrote {} and {}: {} tool{}{}",
                files[0].0.display(),
                files[1].0.display(),
                imported.tools.len(),
                if imported.tools.len() == 1 { "" } else { "s" },
                if renamed > 0 {
                    format!(" ({renamed} renamed: see the comments)")
                } else {
                    String::new()
                }
            );
            EXIT_OK
        }
    }
}

/// Whether an argument (or the value of a `--flag=value`) is a relative
/// path to something in `cwd`: then the server must run there.
fn names_local_files(cwd: &Path, args: &[String]) -> bool {
    args.iter().any(|arg| {
        let value = match arg.split_once('=') {
            Some((flag, v)) if flag.starts_with('-') => v,
            _ => arg.as_str(),
        };
        !value.is_empty()
            && !value.starts_with('-')
            && Path::new(value).is_relative()
            && cwd.join(value).exists()
    })
}

/// Prints `error: message` with the usage hint; exit 2.
fn usage(message: &str) -> u8 {
    err!("error: {message}\nusage: lt tools import FILE [--format openai|anthropic|mcp] [--out DIR]\n       lt tools import --mcp [--out DIR] -- COMMAND…");
    EXIT_USAGE
}

/// Prints an import error about `what` (a file name); exit 2.
fn report(what: &str, e: &ImportError) -> u8 {
    let at = match (e.line, e.column) {
        (Some(l), Some(c)) => format!("{what}:{l}:{c}: "),
        _ => format!("{what}: "),
    };
    err!("error: {at}{}", e.message);
    if let Some(help) = &e.help {
        err!("help: {help}");
    }
    EXIT_USAGE
}

/// A command line as a shell would take it back (words with spaces or
/// quotes quoted).
fn command_line(command: &[String]) -> String {
    command
        .iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                w.clone()
            } else {
                format!("{w:?}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
