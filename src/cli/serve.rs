//! `lt serve [--config SERVE_TOML] [--listen ADDR] [--store URL]`: the
//! server (`crate::serve`); `--migrate-only` to create or migrate the
//! store's schema and exit; `--hash-key KEY` for the key hashes its
//! configuration stores.
//!
//! Exit codes: 0 stopped by SIGTERM or SIGINT after draining; 3 the store
//! or the network failed; 2 bad configuration or flags.

use super::{EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE};
use crate::serve::{self, ServeOptions};
use std::io::Read;

/// Runs `lt serve` and returns the exit code.
pub fn run(
    config: Option<String>,
    listen: Option<String>,
    store: Option<String>,
    migrate_only: bool,
    hash_key: Option<String>,
    otlp: Option<crate::otlp::Settings>,
) -> u8 {
    if let Some(key) = hash_key {
        let key = if key == "-" {
            let mut text = String::new();
            if let Err(e) = std::io::stdin().read_to_string(&mut text) {
                err!("error: cannot read the key from stdin: {e}");
                return EXIT_USAGE;
            }
            text.trim_end_matches(['\n', '\r']).to_string()
        } else {
            key
        };
        if key.is_empty() {
            err!("error: the key is empty");
            return EXIT_USAGE;
        }
        out!("{}", serve::auth::hash_line(&key));
        return EXIT_OK;
    }
    let opts = ServeOptions {
        config: config.map(Into::into),
        listen,
        store,
        otlp,
    };
    if migrate_only {
        return match serve::migrate_only(&opts) {
            Ok(done) => {
                err!("lt serve: {done}");
                EXIT_OK
            }
            Err(e) => report(&e),
        };
    }
    let result = serve::run(&opts, |addr, tenants, resumed| {
        if tenants == 0 {
            err!("lt serve: warning: no tenant is configured, so no request can authenticate (see --config and examples/serve/)");
        }
        err!("lt serve: listening on http://{addr} ({tenants} tenants, {resumed} unfinished sessions resumed)");
    });
    match result {
        Ok(()) => {
            err!("lt serve: stopped");
            EXIT_OK
        }
        Err(e) => report(&e),
    }
}

/// Prints `e` with its hint; its exit code.
fn report(e: &serve::ServeError) -> u8 {
    err!("error: {}", e.message);
    if let Some(h) = &e.help {
        err!("  = help: {h}");
    }
    if e.usage {
        EXIT_USAGE
    } else {
        EXIT_RUN_FAILED
    }
}
