//! A compiled OTLP/HTTP receiver for `bench/console_otlp.py` (issue 27):
//! what `lt run --otlp-endpoint` posts to in the benchmark, standing in for
//! a collector (a compiled server, answering each request in one write),
//! in a process of its own.
//!
//! ```text
//! otlp_receiver --listen 127.0.0.1:0
//!   stdout: "listening on http://ADDR" once bound
//!   POST /v1/traces   the body read whole and decoded as an
//!                     ExportTraceServiceRequest (prost); its spans counted;
//!                     answered 200 `{}` (400 if it does not decode)
//!   GET /count        {"requests": N, "spans": M, "execute_tool": K,
//!                      "bytes": B, "undecodable": U} so far
//! ```
//!
//! It decodes every request, as a collector does before it does anything
//! else with the spans, so the counts the benchmark checks are of spans that
//! arrived whole. It runs on one thread (a current-thread runtime): the
//! machine the benchmark runs on has two cores, and `lt` needs them.
//!
//! With `--read-only` it does not decode: it reads each body whole, counts
//! its `execute_tool` spans by their encoded name (`2a 0c "execute_tool"`,
//! span field 5) and answers. That stands in for a collector on another
//! host: what the receiver costs is then the kernel's work of receiving,
//! not a decoding that on this two-core machine takes the core `lt`'s
//! exporter thread needs (prost's decoding here is ~4.5 µs a span, more
//! than `lt` spends building, encoding and sending one).
//!
//! Without `--listen` (as under a plain `cargo bench`) it prints its usage
//! and exits 0.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::{Json, Router};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use serde_json::{json, Value};
use std::io::Write;
use std::sync::{Arc, Mutex};

const USAGE: &str = "usage: otlp_receiver --listen HOST:PORT [--read-only] \
(bench/console_otlp.py starts it and posts lt run's spans to it)";

/// An `execute_tool` span's name as encoded: field 5 (length-delimited,
/// tag 0x2a), 12 bytes.
const EXECUTE_TOOL: &[u8] = b"\x2a\x0cexecute_tool";

/// What was received so far.
#[derive(Default)]
struct Counts {
    requests: u64,
    spans: u64,
    execute_tool: u64,
    bytes: u64,
    undecodable: u64,
}

/// The counts, and whether requests are decoded.
#[derive(Clone, Default)]
struct Shared {
    counts: Arc<Mutex<Counts>>,
    read_only: bool,
}

/// One request: decoded, its spans counted (`--read-only`: its
/// `execute_tool` spans counted by their encoded name).
async fn traces(State(shared): State<Shared>, body: Bytes) -> (StatusCode, &'static str) {
    let counts = &shared.counts;
    if shared.read_only {
        let n = memchr::memmem::find_iter(body.as_ref(), EXECUTE_TOOL).count() as u64;
        let mut c = counts.lock().unwrap_or_else(|e| e.into_inner());
        c.requests += 1;
        c.bytes += body.len() as u64;
        c.execute_tool += n;
        return (StatusCode::OK, "{}");
    }
    let decoded = ExportTraceServiceRequest::decode(body.as_ref());
    let mut c = counts.lock().unwrap_or_else(|e| e.into_inner());
    c.requests += 1;
    c.bytes += body.len() as u64;
    let Ok(r) = decoded else {
        c.undecodable += 1;
        return (StatusCode::BAD_REQUEST, "{}");
    };
    for s in r
        .resource_spans
        .iter()
        .flat_map(|rs| &rs.scope_spans)
        .flat_map(|ss| &ss.spans)
    {
        c.spans += 1;
        if s.name == "execute_tool" {
            c.execute_tool += 1;
        }
    }
    (StatusCode::OK, "{}")
}

async fn count(State(shared): State<Shared>) -> Json<Value> {
    let c = shared.counts.lock().unwrap_or_else(|e| e.into_inner());
    Json(json!({
        "requests": c.requests,
        "spans": c.spans,
        "execute_tool": c.execute_tool,
        "bytes": c.bytes,
        "undecodable": c.undecodable,
    }))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(listen) = args
        .iter()
        .position(|a| a == "--listen")
        .and_then(|i| args.get(i + 1))
    else {
        println!("{USAGE}");
        return;
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("otlp_receiver: {e}");
            std::process::exit(1);
        }
    };
    let result: std::io::Result<()> = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen.as_str()).await?;
        let addr = listener.local_addr()?;
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let app = Router::new()
            .route("/v1/traces", post(traces))
            .route("/count", get(count))
            .with_state(Shared {
                counts: Arc::default(),
                read_only: args.iter().any(|a| a == "--read-only"),
            });
        println!("listening on http://{addr}");
        std::io::stdout().flush()?;
        axum::serve(listener, app).await
    });
    if let Err(e) = result {
        eprintln!("otlp_receiver: {e}");
        std::process::exit(1);
    }
}
