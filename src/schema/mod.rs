//! Tool schemas in and out: JSON Schema tool definitions (OpenAI function
//! calling, Anthropic tool use, MCP `tools/list`) ⇄ lt tool declarations.
//!
//! - [`import`]: definitions → lt declarations (`type` aliases for nested
//!   objects) and a matching `tools.toml` skeleton.
//! - [`export`]: lt declarations → definitions in one of the three dialects.

pub mod export;
pub mod import;

/// The three tool-definition dialects lt reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Dialect {
    /// OpenAI function calling: `{"type": "function", "function": {name, description, parameters, strict}}`.
    Openai,
    /// Anthropic tool use: `{name, description, input_schema}`.
    Anthropic,
    /// MCP: a `tools/list` result `{tools: [{name, description, inputSchema, outputSchema?, annotations?}]}`.
    Mcp,
}
