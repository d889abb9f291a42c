//! `lt serve`: the control plane as a service (seed 001: "You run the
//! control plane … Clients are your users' apps"). Sessions arrive over
//! HTTP and run through the same session engine as `lt run`
//! (`control::session`); their logs live in a [`store::ServerStore`].
//!
//! ```text
//! config.rs  serve.toml: tenants (key hashes, declarations, tools.toml, profiles)
//! model.rs   [tenants.NAME.model]: the model provider of task sessions
//! auth.rs    Bearer keys ─▶ tenant (SHA-256, constant-time)
//! api.rs     routes, errors (input.rs: path ids, JSON bodies) ─▶ hub.rs (sessions: start, resume, cancel, drain)
//!                                       └▶ task.rs (sessions from a task: lt agent's loop)
//!                                       └▶ live.rs (status, client outcomes, approvals)
//! sse.rs     GET …/events: the log as Server-Sent Events, from the store
//!            (event_id.rs: Last-Event-ID, read and checked against the log)
//! check.rs   a program against a tenant (tool list, profile)
//! replay.rs  POST …/replay     metrics.rs  GET /metrics
//! otlp.rs    --otlp-endpoint: each ended session as an OpenTelemetry trace
//!            (the exporter is `crate::otlp`, shared with lt run and lt agent)
//! console/   the web console at / (server-rendered pages, login cookie, CSRF)
//! store/     ServerStore: sqlite/ (the default), postgres/ (--store postgres://…)
//! workers.rs many workers on one database: claims, lost leases, forwarded deliveries
//! client.rs  the other side: the thick client (`lt run --server`)
//! ```

pub mod answer;
pub mod api;
pub mod auth;
pub mod body;
pub mod check;
pub mod client;
pub mod config;
pub mod console;
pub mod error;
pub mod event_id;
pub mod follow;
pub mod hub;
pub mod input;
pub mod listen;
pub mod listing;
pub mod live;
pub mod metrics;
pub mod model;
pub mod otlp;
pub mod replay;
pub mod sse;
pub mod start;
pub mod state;
pub mod store;
pub mod task;
pub mod threads;
pub mod wait;
pub mod workers;

/// The stack of the server's own threads (its tokio runtime's, the store's
/// answering thread): address space enough to show, copy and drop a
/// session's value as deep as lt takes a tool's output (10,000 levels),
/// which serde_json and `Drop` walk recursively.
pub const DEEP_STACK_BYTES: usize = 64 * 1024 * 1024;

use config::ServeConfig;
use hub::{Hub, TenantRuntime};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The OpenAPI 3.1 document of the API, served at `/v1/openapi.json`.
pub const OPENAPI: &str = include_str!("openapi.json");

/// `lt serve`'s options (flags override `serve.toml`'s `[server]`).
#[derive(Clone, Debug, Default)]
pub struct ServeOptions {
    /// `--config`: `serve.toml` (default: `./serve.toml` when it exists).
    pub config: Option<PathBuf>,
    /// `--listen`.
    pub listen: Option<String>,
    /// `--store`.
    pub store: Option<String>,
    /// `--otlp-endpoint` (and `--otlp-payloads`): where to post each
    /// session's trace (OTLP/HTTP), and whether with arguments and results.
    pub otlp: Option<crate::otlp::Settings>,
}

/// Why the server could not start or stopped badly.
#[derive(Debug)]
pub struct ServeError {
    /// What happened, with the file or address at fault.
    pub message: String,
    /// How to fix it.
    pub help: Option<String>,
    /// `true`: bad configuration or flags (exit 2); `false`: the store or
    /// the network failed (exit 3).
    pub usage: bool,
}

impl ServeError {
    fn usage(message: impl Into<String>, help: Option<&str>) -> ServeError {
        ServeError {
            message: message.into(),
            help: help.map(str::to_string),
            usage: true,
        }
    }
}

/// Whether `url` names a PostgreSQL store.
pub fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// Where a store URL was given, as its errors name it: `--store`, or the
/// config file's `server.store` (`serve.toml: server.store`).
pub fn store_given(flag: bool, config: Option<&Path>) -> String {
    match config {
        Some(p) if !flag => format!("{}: server.store", p.display()),
        _ => "--store".to_string(),
    }
}

/// A PostgreSQL store's error, its message naming where the URL was given
/// when the URL itself is at fault (`usage`).
fn postgres_error(given: &str, e: store::postgres::OpenError) -> ServeError {
    ServeError {
        message: if e.usage {
            format!("{given}: {}", e.message)
        } else {
            e.message
        },
        help: e.hint,
        usage: e.usage,
    }
}

/// Opens the store a URL names: `postgres://…` (with `options`),
/// `sqlite:PATH` (or a bare path). `given` says where the URL came from
/// ([`store_given`]), for its errors.
pub fn open_store(
    url: &str,
    options: &store::StoreOptions,
    given: &str,
) -> Result<Arc<dyn store::ServerStore>, ServeError> {
    if is_postgres(url) {
        return store::postgres::PostgresStore::open_with(url, options)
            .map(|s| Arc::new(s) as Arc<dyn store::ServerStore>)
            .map_err(|e| postgres_error(given, e));
    }
    let path = sqlite_path(url, given)?;
    store::sqlite::SqliteStore::open(Path::new(path))
        .map(|s| Arc::new(s) as Arc<dyn store::ServerStore>)
        .map_err(|e| ServeError {
            message: format!("cannot open the store {path}: {e}"),
            help: None,
            usage: false,
        })
}

/// The file a store URL that is not PostgreSQL names: `sqlite:PATH` or
/// a bare path. Errors (usage, naming the URL by `given`): an empty path,
/// another scheme (`mysql://`, `file:`: SQLite would read `file:` as a URI
/// of its own while the lock is taken on a file of that name, so two
/// servers could write one store), `sqlite://…` (whose slashes say a
/// host, not a path).
fn sqlite_path<'u>(url: &'u str, given: &str) -> Result<&'u str, ServeError> {
    let forms = format!(
        "{given} takes sqlite:PATH (e.g. sqlite:lt-data/lt.db, sqlite:/var/lib/lt/lt.db), a path, or postgres://USER@HOST/DATABASE"
    );
    let path = match url.strip_prefix("sqlite:") {
        Some(rest) if rest.starts_with("//") => {
            return Err(ServeError::usage(
                format!("{given} {url:?}: sqlite:// is not a form lt reads (it would name a host)"),
                Some(&forms),
            ))
        }
        Some(rest) => rest,
        None => url,
    };
    if path.is_empty() {
        return Err(ServeError::usage(
            format!("{given} sqlite: needs a path"),
            Some("e.g. sqlite:lt-data/lt.db"),
        ));
    }
    let scheme = path.split_once(':').map(|(head, _)| head).filter(|head| {
        head.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && head
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if let Some(scheme) = scheme {
        return Err(ServeError::usage(
            format!("{given} {url:?}: `{scheme}:` is not a store lt knows"),
            Some(if scheme == "file" {
                "write the path without file: (sqlite:PATH or a path); a path that really begins with a name and a colon can be given as ./NAME:…"
            } else {
                &forms
            }),
        ));
    }
    Ok(path)
}

/// `lt serve --migrate-only`: creates or migrates the store's schema and
/// returns what to print. Errors: as [`open_store`].
pub fn migrate_only(opts: &ServeOptions) -> Result<String, ServeError> {
    let (url, given) = match &opts.store {
        Some(s) => (s.clone(), store_given(true, None)),
        None => {
            let config_path = opts.config.clone().or_else(|| {
                let p = PathBuf::from("serve.toml");
                p.exists().then_some(p)
            });
            match &config_path {
                Some(p) => (
                    ServeConfig::load(p)
                        .map_err(|e| ServeError::usage(e.to_string(), None))?
                        .store,
                    store_given(false, Some(p)),
                ),
                None => (config::DEFAULT_STORE.to_string(), store_given(true, None)),
            }
        }
    };
    if is_postgres(&url) {
        let (name, m) =
            store::postgres::migrate_only(&url).map_err(|e| postgres_error(&given, e))?;
        return Ok(if m.from == m.to {
            format!(
                "the store {name} is at schema version {} (nothing to do)",
                m.to
            )
        } else {
            format!(
                "the store {name}: schema migrated from version {} to {}",
                m.from, m.to
            )
        });
    }
    // SQLite: opening the file creates or checks its schema.
    let store = open_store(&url, &store::StoreOptions::default(), &given)?;
    drop(store);
    Ok(format!(
        "the store {url} is at schema version {}",
        store::sqlite::SCHEMA_VERSION
    ))
}

/// Runs the server until SIGTERM or SIGINT; `ready` is told the address
/// it listens on. Errors: [`ServeError`].
pub fn run(opts: &ServeOptions, ready: impl FnOnce(&str, usize, usize)) -> Result<(), ServeError> {
    let config_path = opts.config.clone().or_else(|| {
        let p = PathBuf::from("serve.toml");
        p.exists().then_some(p)
    });
    let mut config = match &config_path {
        Some(p) => ServeConfig::load(p).map_err(|e| ServeError {
            message: e.to_string(),
            help: None,
            usage: true,
        })?,
        None => ServeConfig::empty(),
    };
    if let Some(l) = &opts.listen {
        config.listen = l.clone();
    }
    if let Some(s) = &opts.store {
        config.store = s.clone();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_name("lt-serve")
        .thread_stack_size(DEEP_STACK_BYTES)
        .enable_all()
        .build()
        .map_err(|e| ServeError {
            message: format!("cannot start the tokio runtime: {e}"),
            help: None,
            usage: false,
        })?;
    let handle = runtime.handle().clone();
    crate::exec::ignore_file_size_signal(&handle);
    let given = store_given(opts.store.is_some(), config_path.as_deref());
    let store = open_store(&config.store, &config.store_options, &given)?;
    let metrics = Arc::new(metrics::Metrics::new().map_err(|e| ServeError {
        message: format!("cannot set up the metrics: {e}"),
        help: None,
        usage: false,
    })?);
    {
        let m = Arc::clone(&metrics);
        store.observe_commits(Box::new(move |took, n| {
            m.commit_seconds.observe(took.as_secs_f64());
            m.commit_events.observe(n as f64);
        }));
    }
    let mut tenants = BTreeMap::new();
    let mut key_sets = Vec::new();
    for (name, mut t) in std::mem::take(&mut config.tenants) {
        let host = t
            .registry
            .take()
            .map(|r| crate::exec::ExecutorHost::new(r, handle.clone()));
        key_sets.push((name.clone(), t.key_hashes.clone()));
        metrics.add_tenant(&name);
        tenants.insert(name, TenantRuntime { config: t, host });
    }
    let keys = auth::Keys::new(key_sets.iter().map(|(n, k)| (n.as_str(), &k[..])));
    let n_tenants = tenants.len();
    let hub = Arc::new(Hub::new(
        store,
        tenants,
        metrics,
        handle.clone(),
        config.max_sessions,
    ));
    runtime.spawn(Arc::clone(&hub).dispatch_commits());
    let traces = match &opts.otlp {
        None => None,
        Some(settings) => {
            let provider = crate::otlp::Exporter::new("lt serve", settings).map_err(|m| {
                ServeError::usage(m, Some("--otlp-endpoint takes the URL spans are posted to, e.g. http://127.0.0.1:4318/v1/traces"))
            })?;
            runtime.spawn(otlp::follow(Arc::clone(&hub.store), provider.clone()));
            Some(provider)
        }
    };
    let resumed = hub.start_resuming().map_err(|e| ServeError {
        message: format!("cannot read the unfinished sessions: {e}"),
        help: None,
        usage: false,
    })?;
    let state = Arc::new(state::AppState {
        hub: Arc::clone(&hub),
        keys,
    });
    let app = api::router(state, config.max_body_bytes, config.header_timeout);
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(&config.listen))
        .map_err(|e| ServeError {
            message: format!("cannot listen on {}: {e}", config.listen),
            help: Some("--listen ADDR:PORT picks another address (port 0: any free port)".into()),
            usage: e.kind() != std::io::ErrorKind::AddrInUse,
        })?;
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| config.listen.clone());
    ready(&addr, n_tenants, resumed);
    let grace = config.grace;
    let drained = Arc::clone(&hub);
    let limits = listen::Limits {
        max_connections: config.max_connections,
        header_timeout: config.header_timeout,
    };
    runtime.block_on(async move {
        let shutdown = async move {
            wait_for_signal().await;
            // Stop the streams and new sessions at once, then let the
            // running calls finish (up to `grace`) off the runtime.
            let _ = tokio::task::spawn_blocking(move || drained.drain(grace)).await;
        };
        listen::serve(listener, app, limits, shutdown).await;
    });
    hub.drain(std::time::Duration::ZERO);
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    if let Some(p) = traces {
        // Sends what the batch still holds.
        if let Err(e) = p.shutdown() {
            eprintln!("lt serve: otlp: {e}");
        }
    }
    Ok(())
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    match (term, int) {
        (Ok(mut t), Ok(mut i)) => {
            tokio::select! {
                _ = t.recv() => {}
                _ = i.recv() => {}
            }
        }
        _ => std::future::pending::<()>().await,
    }
}
