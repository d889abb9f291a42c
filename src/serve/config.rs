//! `serve.toml`: the server's settings and its tenants (`docs/api.md`, "serve.toml").
//!
//! ```toml
//! [server]                         # every key optional; flags override them
//! listen = "127.0.0.1:8080"
//! store = "sqlite:lt-data/lt.db"   # relative paths: from serve.toml's folder
//! shutdown_grace_ms = 10000        # SIGTERM: how long running calls may finish
//! max_body_bytes = 1048576         # a request body's limit
//! max_sessions = 2048              # sessions running at once (each has a thread)
//! max_connections = 4096           # HTTP connections open at once (default: 4096, or
//!                                  # half the file-descriptor limit when lower)
//! header_timeout_ms = 10000        # a request's headers must arrive within this
//!                                  # (then its body within as long again: 408)
//! lease_ms = 10000                 # PostgreSQL: a claimed session's lease (100 ms to an hour)
//! lease_renew_ms = 2000            # … renewed (and sessions claimed) this often
//! pool_size = 4                    # … read connections (+1 writer, +1 lease thread)
//!
//! [tenants.acme]
//! keys = ["sha256:9f86d0…"]        # SHA-256 of each API key (`lt serve --hash-key`)
//! declarations = "tools.lt"        # the tenant's tool declarations
//! executors = "tools.toml"         # and their executors
//! [tenants.acme.profiles.support]  # a profile: the keys of a [profile] table
//! allow = ["lookup_account", "issue_refund", "send_reply"]
//! [tenants.acme.profiles.audit]
//! file = "audit.toml"              # … or a file with a [profile] table
//! [tenants.acme.model]             # optional: task sessions (model.rs)
//! provider = "openai"
//! model = "gpt-4o-mini"
//! api_key_env = "ACME_OPENAI_KEY"  # the variable holding the key
//! ```
//!
//! Everything is loaded and checked at start: a tenant whose declarations
//! do not check, whose tools.toml does not load, or whose keys are not
//! hashes stops the server with the file, the position and a hint.

use crate::control::profile::Profile;
use crate::exec::{ConfigError, Registry};
use crate::types::declarations::check_declarations;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The address `lt serve` listens on without `--listen`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// The store without `--store`: an SQLite file under `./lt-data/`.
pub const DEFAULT_STORE: &str = "sqlite:lt-data/lt.db";
/// A request body's limit without `max_body_bytes`: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;
/// How many sessions may run at once without `max_sessions`.
pub const DEFAULT_MAX_SESSIONS: usize = 2048;
/// How long running calls may finish after SIGTERM, by default: 10 s.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// The loaded configuration.
pub struct ServeConfig {
    /// The address to listen on.
    pub listen: String,
    /// The store's URL (`sqlite:PATH`).
    pub store: String,
    /// How long running calls may finish after SIGTERM or SIGINT.
    pub grace: Duration,
    /// A request body's limit, in bytes.
    pub max_body_bytes: usize,
    /// How many sessions may run at once (each has a thread); past it a
    /// new one is refused with 503 and `Retry-After`.
    pub max_sessions: usize,
    /// How many HTTP connections may be open at once; past it the next
    /// one waits to be accepted.
    pub max_connections: usize,
    /// How long a client has to send a request's headers (a connection
    /// that does not is closed), and then its body (`body.rs`: 408).
    pub header_timeout: Duration,
    /// Leases and connections of a shared (PostgreSQL) store.
    pub store_options: super::store::StoreOptions,
    /// The tenants, by name.
    pub tenants: BTreeMap<String, Tenant>,
}

/// One tenant: who may act for it and what its sessions may use.
pub struct Tenant {
    /// Its name (the key of `[tenants.NAME]`).
    pub name: String,
    /// SHA-256 digests of its API keys.
    pub key_hashes: Vec<[u8; 32]>,
    /// Its declarations' text, checked at load (every session's program
    /// must agree with it). Kept as text: the parsed form is not `Send`.
    pub declarations_text: String,
    /// Its executors (`None`: its sessions may call only client-venue
    /// tools, and no server-venue ones).
    pub registry: Option<Registry>,
    /// The tools.toml path and bytes (hashed into `session_started`).
    pub executors_path: Option<PathBuf>,
    /// The tools.toml bytes.
    pub registry_bytes: Vec<u8>,
    /// Its profiles, by name, as JSON ([`Profile::to_json`]; the parsed
    /// form is not `Send`): [`Tenant::profile`] gives one.
    pub profiles: BTreeMap<String, serde_json::Value>,
    /// Its model, for sessions from a task (`None`: it has none).
    pub model: Option<super::model::TenantModel>,
}

impl Tenant {
    /// The profile named `name`. `None`: the tenant has none by that name.
    pub fn profile(&self, name: &str) -> Option<Profile> {
        let json = self.profiles.get(name)?;
        let mut p = Profile::from_json(json).ok()?;
        p.name = name.to_string();
        Some(p)
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    server: RawServer,
    #[serde(default)]
    tenants: BTreeMap<String, RawTenant>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawServer {
    listen: Option<String>,
    store: Option<String>,
    shutdown_grace_ms: Option<u64>,
    max_body_bytes: Option<usize>,
    max_sessions: Option<usize>,
    max_connections: Option<usize>,
    header_timeout_ms: Option<u64>,
    lease_ms: Option<u64>,
    lease_renew_ms: Option<u64>,
    pool_size: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTenant {
    keys: Vec<String>,
    declarations: String,
    executors: Option<String>,
    #[serde(default)]
    profiles: BTreeMap<String, toml::Table>,
    model: Option<super::model::RawModel>,
}

fn fail(path: &str, message: String, help: Option<&str>) -> ConfigError {
    ConfigError {
        path: path.to_string(),
        line: None,
        column: None,
        message,
        help: help.map(str::to_string),
    }
}

impl ServeConfig {
    /// The configuration without a file: the defaults, no tenant.
    pub fn empty() -> ServeConfig {
        ServeConfig {
            listen: DEFAULT_LISTEN.to_string(),
            store: DEFAULT_STORE.to_string(),
            grace: DEFAULT_GRACE,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_connections: super::listen::default_max_connections(),
            header_timeout: super::listen::HEADER_TIMEOUT,
            store_options: super::store::StoreOptions::default(),
            tenants: BTreeMap::new(),
        }
    }

    /// Loads `path` and everything it names. Errors: the file, position
    /// and hint of the first problem.
    pub fn load(path: &Path) -> Result<ServeConfig, ConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| fail(&shown, format!("cannot read the file: {e}"), None))?;
        let raw: RawFile = toml::from_str(&text).map_err(|e| {
            let mut err = fail(&shown, crate::diag::toml::message(&e), None);
            if let Some(span) = e.span() {
                let before = text.get(..span.start).unwrap_or("");
                err.line = Some(before.matches('\n').count() + 1);
                let start = before.rfind('\n').map_or(0, |i| i + 1);
                err.column = Some(before[start..].chars().count() + 1);
            }
            err
        })?;
        let folder = path.parent().unwrap_or(Path::new("."));
        let mut tenants = BTreeMap::new();
        let mut owners: BTreeMap<[u8; 32], String> = BTreeMap::new();
        for (name, t) in raw.tenants {
            let tenant = load_tenant(&shown, &text, folder, &name, t)?;
            for digest in &tenant.key_hashes {
                if let Some(first) = owners.insert(*digest, name.clone()) {
                    let mut err = fail(
                        &shown,
                        format!("tenants.{name}.keys: a key of tenant {first} is also a key of tenant {name}"),
                        Some("a key names one tenant: give each tenant keys of its own (lt serve --hash-key)"),
                    );
                    err.line = line_of_key(&text, "keys")
                        .and(
                            text.lines()
                                .position(|l| l.trim() == format!("[tenants.{name}]")),
                        )
                        .map(|i| i + 1);
                    return Err(err);
                }
            }
            tenants.insert(name, tenant);
        }
        let store = match &raw.server.store {
            Some(s) => relative_store(s, folder),
            None => DEFAULT_STORE.to_string(),
        };
        let store_options = store_options(&shown, &text, &raw.server)?;
        for (key, value) in [
            ("max_body_bytes", raw.server.max_body_bytes),
            ("max_sessions", raw.server.max_sessions),
            ("max_connections", raw.server.max_connections),
            (
                "header_timeout_ms",
                raw.server
                    .header_timeout_ms
                    .map(|ms| usize::try_from(ms).unwrap_or(usize::MAX)),
            ),
        ] {
            if value == Some(0) {
                let mut err = fail(
                    &shown,
                    format!("server.{key} = 0 would refuse every request"),
                    Some("leave the key out for the default, or give a number above 0"),
                );
                err.line = line_of_key(&text, key);
                return Err(err);
            }
        }
        Ok(ServeConfig {
            listen: raw.server.listen.unwrap_or_else(|| DEFAULT_LISTEN.into()),
            store,
            grace: raw
                .server
                .shutdown_grace_ms
                .map_or(DEFAULT_GRACE, Duration::from_millis),
            max_body_bytes: raw.server.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES),
            max_sessions: raw.server.max_sessions.unwrap_or(DEFAULT_MAX_SESSIONS),
            max_connections: raw
                .server
                .max_connections
                .unwrap_or_else(super::listen::default_max_connections),
            header_timeout: raw
                .server
                .header_timeout_ms
                .map_or(super::listen::HEADER_TIMEOUT, Duration::from_millis),
            store_options,
            tenants,
        })
    }
}

/// The line (1-based) of the first line of `text` that sets `key`.
fn line_of_key(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}

/// The longest lease `[server]` accepts, in milliseconds (an hour): a
/// worker that dies holding a session's lease keeps it from every other
/// worker that long.
const MAX_LEASE_MS: u64 = 3_600_000;

/// `[server]`'s lease and pool settings, checked: a lease of 100 ms to an
/// hour ([`MAX_LEASE_MS`]), renewed at least twice per lease, a pool of 1
/// to 64. Each refusal names the line of its key.
fn store_options(
    shown: &str,
    text: &str,
    raw: &RawServer,
) -> Result<super::store::StoreOptions, ConfigError> {
    let at = |mut err: ConfigError, key: &str| {
        err.line = line_of_key(text, key);
        err
    };
    if let Some(ms) = raw.lease_ms.filter(|ms| *ms > MAX_LEASE_MS) {
        return Err(at(
            fail(
                shown,
                format!("server.lease_ms = {ms} is longer than an hour ({MAX_LEASE_MS})"),
                Some("a session whose worker dies waits out its lease before another worker takes it: give at most 3600000 (the default is 10000)"),
            ),
            "lease_ms",
        ));
    }
    let defaults = super::store::StoreOptions::default();
    let lease = raw.lease_ms.map_or(defaults.lease, Duration::from_millis);
    let renew = match (raw.lease_renew_ms, raw.lease_ms) {
        (Some(ms), _) => Duration::from_millis(ms),
        // A lease set alone: renewed at a third of it (at most the default).
        (None, Some(_)) => (lease / 3).min(defaults.renew),
        (None, None) => defaults.renew,
    };
    if lease < Duration::from_millis(100) {
        return Err(at(
            fail(
                shown,
                format!("server.lease_ms = {} is too short", lease.as_millis()),
                Some("a lease of at least 100 ms (the default is 10000)"),
            ),
            "lease_ms",
        ));
    }
    // `renew > lease / 2`, not `renew * 2 > lease`: any u64 of milliseconds
    // is a Duration, and doubling the largest would overflow.
    if renew.is_zero() || renew > lease / 2 {
        return Err(at(
            fail(
                shown,
                format!(
                    "server.lease_renew_ms = {} must be above 0 and at most half of lease_ms ({})",
                    renew.as_millis(),
                    lease.as_millis()
                ),
                Some(
                    "a lease is renewed at least twice before it runs out (default: 2000 of 10000)",
                ),
            ),
            if raw.lease_renew_ms.is_some() {
                "lease_renew_ms"
            } else {
                "lease_ms"
            },
        ));
    }
    let pool_size = raw.pool_size.unwrap_or(defaults.pool_size);
    if !(1..=64).contains(&pool_size) {
        return Err(at(
            fail(
                shown,
                format!("server.pool_size = {pool_size} is not between 1 and 64"),
                Some("the read connections of a PostgreSQL store (default 4)"),
            ),
            "pool_size",
        ));
    }
    Ok(super::store::StoreOptions {
        lease,
        renew,
        pool_size,
    })
}

/// `sqlite:PATH` with a relative PATH taken from `folder`.
fn relative_store(url: &str, folder: &Path) -> String {
    match url.strip_prefix("sqlite:") {
        Some(p) if Path::new(p).is_relative() => {
            format!("sqlite:{}", folder.join(p).display())
        }
        _ => url.to_string(),
    }
}

fn load_tenant(
    shown: &str,
    text: &str,
    folder: &Path,
    name: &str,
    t: RawTenant,
) -> Result<Tenant, ConfigError> {
    let at = |what: &str| format!("tenants.{name}.{what}");
    let mut key_hashes = Vec::new();
    for k in &t.keys {
        let digest = k
            .strip_prefix("sha256:")
            .and_then(|h| hex::decode(h).ok())
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .ok_or_else(|| {
                fail(
                    shown,
                    format!("{}: {k:?} is not a key hash (sha256:<64 hex digits>)", at("keys")),
                    Some("keys are stored only as hashes: `lt serve --hash-key KEY` prints the line to write"),
                )
            })?;
        key_hashes.push(digest);
    }
    let decl_path = folder.join(&t.declarations);
    let declarations_text = std::fs::read_to_string(&decl_path).map_err(|e| {
        fail(
            shown,
            format!(
                "{}: cannot read {}: {e}",
                at("declarations"),
                decl_path.display()
            ),
            None,
        )
    })?;
    let declarations = check_declarations(&declarations_text);
    if let Some(d) = declarations.diagnostics.first() {
        let lc = crate::source::SourceFile::new(
            decl_path.display().to_string(),
            declarations_text.clone(),
        )
        .line_col(d.span.start);
        return Err(ConfigError {
            path: decl_path.display().to_string(),
            line: Some(lc.line),
            column: Some(lc.column),
            message: format!(
                "{} {} (the declarations of tenant {name})",
                d.code, d.message
            ),
            help: Some("`lt check` on the file shows every diagnostic".into()),
        });
    }
    let (registry, executors_path, registry_bytes) = match &t.executors {
        Some(p) => {
            let path = folder.join(p);
            let registry = Registry::load(&path)?;
            let bytes = crate::exec::read_config_bytes(&path).map_err(|e| {
                fail(
                    shown,
                    format!("{}: cannot read {}: {e}", at("executors"), path.display()),
                    None,
                )
            })?;
            (Some(registry), Some(path), bytes)
        }
        None => (None, None, Vec::new()),
    };
    let mut profiles = BTreeMap::new();
    for (pname, table) in t.profiles {
        let profile = load_profile(
            shown,
            folder,
            &at(&format!("profiles.{pname}")),
            &pname,
            table,
        )?;
        profiles.insert(pname, profile.to_json());
    }
    let model = match t.model {
        Some(raw) => {
            let parts = super::model::TenantParts {
                name,
                declarations: (&decl_path, &declarations_text),
                executors: match (&registry, &executors_path) {
                    (Some(r), Some(p)) => Some((r, p.as_path(), &registry_bytes[..])),
                    _ => None,
                },
            };
            Some(super::model::load(shown, text, &parts, raw)?)
        }
        None => None,
    };
    Ok(Tenant {
        model,
        name: name.to_string(),
        key_hashes,
        declarations_text,
        registry,
        executors_path,
        registry_bytes,
        profiles,
    })
}

/// A profile given inline (the keys of a `[profile]` table) or as `file`.
fn load_profile(
    shown: &str,
    folder: &Path,
    at: &str,
    name: &str,
    mut table: toml::Table,
) -> Result<Profile, ConfigError> {
    let mut profile = match table.remove("file") {
        Some(toml::Value::String(f)) => {
            if !table.is_empty() {
                return Err(fail(
                    shown,
                    format!("{at}: a profile given as `file` has no other keys"),
                    None,
                ));
            }
            Profile::load(&folder.join(f))?
        }
        Some(_) => return Err(fail(shown, format!("{at}.file: not a string"), None)),
        None => {
            let mut wrapper = toml::Table::new();
            wrapper.insert("profile".into(), toml::Value::Table(table));
            let text =
                toml::to_string(&wrapper).map_err(|e| fail(shown, format!("{at}: {e}"), None))?;
            Profile::from_toml(&text, at)
                .map_err(|e| fail(shown, format!("{at}: {}", e.message), e.help.as_deref()))?
                .unwrap_or_default()
        }
    };
    if profile.name.is_empty() || profile.name == "default" {
        profile.name = name.to_string();
    }
    Ok(profile)
}
