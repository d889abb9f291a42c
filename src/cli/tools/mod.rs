//! `lt tools import` and `lt tools export`.

pub mod export;
pub mod import;

use crate::schema::Dialect;
use clap::Subcommand;

/// `lt tools` actions.
#[derive(Subcommand, Debug)]
pub enum ToolsAction {
    /// Print lt declarations and a tools.toml skeleton for tool definitions
    /// (OpenAI, Anthropic, or an MCP `tools/list` result), or for the tools
    /// of a live MCP server (`--mcp -- COMMAND…`).
    Import {
        /// The definitions file (JSON), or `-` for standard input.
        /// Not given with `--mcp`.
        file: Option<String>,
        /// The definitions' dialect (default: recognised from the file).
        #[arg(long, value_enum)]
        format: Option<Dialect>,
        /// List the tools of a live MCP server started with COMMAND (after `--`).
        #[arg(long)]
        mcp: bool,
        /// The MCP server's command line (after `--`).
        #[arg(last = true)]
        command: Vec<String>,
        /// Write `tools.lt` and `tools.toml` into this folder instead of printing them.
        #[arg(long, value_name = "DIR")]
        out: Option<String>,
        /// With `--out`: replace `tools.lt` and `tools.toml` if they exist.
        #[arg(long, requires = "out")]
        force: bool,
        /// With `--mcp`: how long the server may take to start and list its
        /// tools, in milliseconds.
        #[arg(long, value_name = "MS", default_value_t = 60_000, requires = "mcp",
              value_parser = clap::value_parser!(u64).range(1..))]
        timeout_ms: u64,
    },
    /// Print JSON Schema tool definitions for the tools a file declares.
    Export {
        /// The dialect to print.
        #[arg(long, value_enum)]
        format: Dialect,
        /// A file of tool declarations (a program, or declarations alone), or `-`.
        file: String,
    },
}

/// Runs one `lt tools` action; returns the exit status.
pub fn run(action: ToolsAction) -> u8 {
    match action {
        ToolsAction::Import {
            file,
            format,
            mcp,
            command,
            out,
            force,
            timeout_ms,
        } => import::run(&import::ImportOptions {
            file,
            format,
            mcp,
            command,
            out,
            force,
            timeout: std::time::Duration::from_millis(timeout_ms),
        }),
        ToolsAction::Export { format, file } => export::run(format, &file),
    }
}
