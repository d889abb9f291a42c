//! `lt mcp --tools tools.lt --executors tools.toml [--profile P] [--log-dir DIR]`:
//! lt as an MCP server over stdio ([`crate::mcp_server`]). Standard output
//! is the protocol's; everything for people goes to stderr.
//!
//! Exit codes: 0 when the client closed the session, 2 when the server
//! cannot start (a file missing or with errors, a tool without an
//! executor: nothing is served) or the session failed.

use super::{EXIT_OK, EXIT_USAGE};
use crate::mcp_server::{Catalog, CatalogOptions, CodeMode};

/// Runs `lt mcp` and returns the exit code.
pub fn run(opts: &CatalogOptions) -> u8 {
    if let Some(dir) = &opts.log_dir {
        if let Err(e) = std::fs::create_dir_all(dir) {
            err!("error: --log-dir {}: {e}", dir.display());
            return EXIT_USAGE;
        }
    }
    let runtime = match super::signals::io_runtime() {
        Ok(rt) => rt,
        Err(m) => {
            err!("error: {m}");
            return EXIT_USAGE;
        }
    };
    let catalog = match Catalog::load(opts, runtime.handle().clone()) {
        Ok(c) => c,
        Err(e) => {
            err!("error: {}", e.message);
            if let Some(h) = e.help {
                err!("  help: {h}");
            }
            return EXIT_USAGE;
        }
    };
    let host = catalog.host.clone();
    let served = runtime.block_on(CodeMode::new(catalog).serve_stdio());
    host.shutdown();
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    match served {
        Ok(()) => EXIT_OK,
        Err(m) => {
            err!("error: {m}");
            EXIT_USAGE
        }
    }
}
