//! `lt mcp --http ADDR`: the same server over MCP's streamable HTTP
//! transport (rmcp's `StreamableHttpService` under axum, at `/mcp`).
//!
//! - `Origin`: a request that carries one must name an allowed origin
//!   ([`HttpOptions::allowed_origins`]; none by default, so every browser
//!   page is refused); requests without one (SDK clients) pass.
//! - `Host`: only loopback names are accepted (rmcp's default), which keeps
//!   DNS rebinding away from a server on the local machine.
//! - Bearer token: with [`HttpOptions::token`], every request must carry
//!   `Authorization: Bearer TOKEN` (compared in constant time), else 401.
//!
//! - JSON-RPC errors (`json_rpc_errors`): rmcp answers a POST whose
//!   body is not a JSON-RPC message with 415, and a session's DELETE with
//!   202. A body that is not JSON gets 400 and a `-32700` Parse error
//!   (JSON that is no JSON-RPC message: 400, `-32600` Invalid Request), and
//!   a DELETE that closed its session 200 (spec 2025-11-25, "Session
//!   Management"; the MCP Python SDK warns on anything else but 405).
//!
//! Each MCP session gets a clone of the [`CodeMode`] handler: one catalog,
//! one executor host for all of them.

use super::server::CodeMode;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;

/// The path the server answers on.
pub const PATH: &str = "/mcp";

/// How the HTTP server guards its door.
#[derive(Clone, Debug, Default)]
pub struct HttpOptions {
    /// Origins a browser request may come from (`https://app.example.com`,
    /// `http://localhost:*`); empty: every request with an `Origin` is refused.
    pub allowed_origins: Vec<String>,
    /// The bearer token every request must carry, when set.
    pub token: Option<String>,
}

/// Whether `req` carries `Authorization: Bearer <token>`.
fn authorized(req: &Request, token: &str) -> bool {
    use subtle::ConstantTimeEq;
    req.headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|given| bool::from(given.trim().as_bytes().ct_eq(token.as_bytes())))
}

impl CodeMode {
    /// Serves MCP over streamable HTTP on `listener` at [`PATH`] until
    /// `shutdown` completes. Errors: the server failed.
    pub async fn serve_http(
        mut self,
        listener: tokio::net::TcpListener,
        options: HttpOptions,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), String> {
        // `shutdown` cancels the programs still running (their requests
        // then answer, which the graceful shutdown waits for), as the end
        // of stdin does on stdio.
        let (closed_tx, closed_rx) = tokio::sync::watch::channel(false);
        self.closed = closed_rx;
        let running = std::sync::Arc::clone(&self.running);
        let shutdown = async move {
            shutdown.await;
            let _ = closed_tx.send(true);
        };
        let config = StreamableHttpServerConfig::default()
            .with_allowed_origins(options.allowed_origins.clone())
            .enforce_origin_validation();
        let handler = self.clone();
        let service = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let mut app = axum::Router::new()
            .nest_service(PATH, service)
            .layer(axum::middleware::from_fn(json_rpc_errors));
        if let Some(token) = options.token {
            let token: Arc<str> = token.into();
            app = app.layer(axum::middleware::from_fn(
                move |req: Request, next: Next| {
                    let token = Arc::clone(&token);
                    async move {
                        if authorized(&req, &token) {
                            next.run(req).await
                        } else {
                            unauthorized()
                        }
                    }
                },
            ));
        }
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(|e| format!("the HTTP server failed: {e}"));
        super::server::runs_ended(&running).await;
        served
    }
}

fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(axum::http::header::WWW_AUTHENTICATE, "Bearer")],
        "this MCP server needs `Authorization: Bearer <token>`",
    )
        .into_response()
}

/// The largest request body read (rmcp's own default limit).
const MAX_BODY: usize = 4 * 1024 * 1024;

/// Fixes two answers of rmcp's (see the module's note): a POST body that
/// is not a JSON-RPC message gets 400 with a JSON-RPC error instead of
/// 415; a DELETE that closed its session gets 200 instead of 202.
async fn json_rpc_errors(req: Request, next: Next) -> Response {
    let method = req.method().clone();
    if method != axum::http::Method::POST {
        let mut response = next.run(req).await;
        if method == axum::http::Method::DELETE && response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        return response;
    }
    let (parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(e) => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body could not be read (at most {MAX_BODY} bytes): {e}"),
            )
                .into_response()
        }
    };
    let json_body = parts
        .headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        });
    let parsed = serde_json::from_slice::<serde_json::Value>(&bytes).map(|_| ());
    let response = next
        .run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await;
    if response.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE || !json_body {
        return response;
    }
    let (code, message) = match parsed {
        Err(e) => (-32700, format!("Parse error: the request body is not JSON: {e}")),
        Ok(()) => (
            -32600,
            "Invalid Request: the body is JSON but not a JSON-RPC 2.0 message (a request, notification or response with `jsonrpc: \"2.0\"`)".to_string(),
        ),
    };
    (
        StatusCode::BAD_REQUEST,
        axum::Json(serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": code, "message": message},
        })),
    )
        .into_response()
}
