//! `lt tools import`. (Being written.)

use crate::schema::Dialect;

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
}

/// Runs `lt tools import`; returns the exit status.
pub fn run(options: &ImportOptions) -> u8 {
    let _ = options;
    super::super::EXIT_USAGE
}
