//! `lt mcp`: lt as an MCP server, typed "code mode" for any MCP client.
//! Instead of one tool call per model turn, the model sends one lt program
//! that makes many calls; lt checks it against the server's declarations
//! and policy before anything runs, then runs it as a session of the
//! engine (`control::session::Session`), one log per program.
//!
//! ```text
//! CatalogOptions ──Catalog::load──▶ Catalog (tools.lt, tools.toml, profile, executors, log dir)
//!   ──CodeMode::new──▶ the tools: run_program (described by guide::description),
//!                       check_program, search_tools, describe_tools
//!   ──serve_stdio (rmcp)──▶ tools/call ─▶ session thread ─▶ program::run_program ─▶ Reply
//! ```
//!
//! - `catalog.rs`: what the server loads once and shares.
//! - `program.rs`: a program's check and run, and the reply's rendering.
//! - `guide.rs`: the generated description, the ranked search.
//! - `approval.rs`: `approve tool …` asked of the person at the client
//!   (MCP elicitation), when the profile leaves approvals to a person.
//! - `mrtr.rs`: the same on the stateless 2026-07-28 revision, as the
//!   MRTR input-required round trip (the run paused under a request state).
//! - `server.rs`: the rmcp handler; `http.rs`, the same over streamable HTTP.
//! - `stdio.rs`: stdin/stdout for rmcp: a Parse error for a line that is
//!   not JSON, and the running programs cancelled as soon as stdin ends.

pub mod approval;
pub mod catalog;
pub mod guide;
pub mod http;
pub mod mrtr;
pub mod program;
pub mod server;
pub mod stdio;

pub use catalog::{Catalog, CatalogOptions, LoadError};
pub use http::HttpOptions;
pub use server::CodeMode;
