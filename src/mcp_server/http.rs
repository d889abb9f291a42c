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
        self,
        listener: tokio::net::TcpListener,
        options: HttpOptions,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), String> {
        let config = StreamableHttpServerConfig::default()
            .with_allowed_origins(options.allowed_origins.clone())
            .enforce_origin_validation();
        let handler = self.clone();
        let service = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let mut app = axum::Router::new().nest_service(PATH, service);
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
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(|e| format!("the HTTP server failed: {e}"))
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
