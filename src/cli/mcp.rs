//! `lt mcp --tools tools.lt --executors tools.toml [--profile P] [--log-dir DIR]
//! [--http ADDR [--allow-origin O]… [--token-env VAR]]`: lt as an MCP server
//! ([`crate::mcp_server`]), over stdio (standard output is the protocol's;
//! everything for people goes to stderr) or streamable HTTP.
//!
//! Exit codes: 0 when the client closed the stdio session (or a signal
//! stopped the HTTP server), 2 when the server cannot start (a file
//! missing or with errors, a tool without an executor, an address that
//! cannot be bound, a token variable unset: nothing is served) or failed.

use super::{EXIT_OK, EXIT_USAGE};
use crate::mcp_server::{Catalog, CatalogOptions, CodeMode, HttpOptions};

/// The options of `lt mcp`.
#[derive(Clone, Debug)]
pub struct McpOptions {
    /// The catalog.
    pub catalog: CatalogOptions,
    /// `--http ADDR`: streamable HTTP instead of stdio.
    pub http: Option<String>,
    /// `--allow-origin`: browser origins allowed over HTTP.
    pub allow_origin: Vec<String>,
    /// `--token-env VAR`: the bearer token's variable.
    pub token_env: Option<String>,
}

fn usage(message: impl std::fmt::Display, help: Option<&str>) -> u8 {
    err!("error: {message}");
    if let Some(h) = help {
        err!("  help: {h}");
    }
    EXIT_USAGE
}

/// Runs `lt mcp` and returns the exit code.
pub fn run(opts: &McpOptions) -> u8 {
    if opts.http.is_none() && (opts.token_env.is_some() || !opts.allow_origin.is_empty()) {
        return usage(
            "--token-env and --allow-origin apply to --http only",
            Some("add `--http 127.0.0.1:8765`, or leave them out for stdio"),
        );
    }
    let token = match &opts.token_env {
        Some(var) => match std::env::var(var) {
            Ok(t) if !t.trim().is_empty() => Some(t.trim().to_string()),
            _ => return usage(
                format!("--token-env {var}: the variable is unset or empty"),
                Some("export the token first, e.g. `export LT_MCP_TOKEN=$(openssl rand -hex 32)`"),
            ),
        },
        None => None,
    };
    if let Some(dir) = &opts.catalog.log_dir {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return usage(format!("--log-dir {}: {e}", dir.display()), None);
        }
    }
    let runtime = match super::signals::io_runtime() {
        Ok(rt) => rt,
        Err(m) => return usage(m, None),
    };
    let catalog = match Catalog::load(&opts.catalog, runtime.handle().clone()) {
        Ok(c) => c,
        Err(e) => return usage(e.message, e.help.as_deref()),
    };
    let host = catalog.host.clone();
    let server = CodeMode::new(catalog);
    let served = match &opts.http {
        None => runtime.block_on(server.serve_stdio(stop_signal())),
        Some(addr) => runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| format!("--http {addr}: cannot listen: {e}"))?;
            let bound = listener
                .local_addr()
                .map_err(|e| format!("--http {addr}: {e}"))?;
            err!(
                "lt mcp: serving MCP at http://{bound}{}",
                crate::mcp_server::http::PATH
            );
            let options = HttpOptions {
                allowed_origins: opts.allow_origin.clone(),
                token,
            };
            server.serve_http(listener, options, stop_signal()).await
        }),
    };
    host.shutdown();
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    match served {
        Ok(()) => EXIT_OK,
        Err(m) => usage(m, None),
    }
}

/// Completes on SIGINT or SIGTERM.
async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
