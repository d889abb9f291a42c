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

const USAGE: &str = "usage: otlp_receiver --listen HOST:PORT \
(bench/console_otlp.py starts it and posts lt run's spans to it)";

/// What was received so far.
#[derive(Default)]
struct Counts {
    requests: u64,
    spans: u64,
    execute_tool: u64,
    bytes: u64,
    undecodable: u64,
}

type Shared = Arc<Mutex<Counts>>;

/// One request: decoded, its spans counted.
async fn traces(State(counts): State<Shared>, body: Bytes) -> (StatusCode, &'static str) {
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

async fn count(State(counts): State<Shared>) -> Json<Value> {
    let c = counts.lock().unwrap_or_else(|e| e.into_inner());
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
            .with_state(Shared::default());
        println!("listening on http://{addr}");
        std::io::stdout().flush()?;
        axum::serve(listener, app).await
    });
    if let Err(e) = result {
        eprintln!("otlp_receiver: {e}");
        std::process::exit(1);
    }
}
