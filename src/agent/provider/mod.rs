//! The HTTP model providers: [`HttpProposer`], a [`Proposer`] speaking the
//! OpenAI chat-completions API (`openai.rs`; also ollama, vLLM, llama.cpp,
//! LiteLLM, OpenRouter …) or the Anthropic Messages API (`anthropic.rs`).
//!
//! Design:
//!
//! - **Synchronous outside, async inside.** The agent loop is synchronous;
//!   the proposer owns a tokio current-thread runtime and `block_on`s each
//!   HTTP request on it. Called from a thread that is already inside a
//!   tokio runtime (where `block_on` would panic), it runs the request on
//!   a short-lived thread of its own instead. One `reqwest` client per
//!   proposer; redirects are not followed (a 3xx is an error that names
//!   the target), so a key never travels to another host.
//! - **Keys.** [`HttpProposer::new`] refuses a configuration without an API
//!   key ([`ProposeErrorKind::Config`]) unless the base URL is on this
//!   machine (`localhost`, `*.localhost`, `127.0.0.0/8`, `::1`), where
//!   servers such as ollama or vLLM need none; for a keyless server
//!   elsewhere, pass any placeholder key. The key is trimmed, sent as a
//!   sensitive header, and never printed: not by `Debug`, not by
//!   [`Proposer::describe`], not in errors (URLs are shown without user
//!   info and query).
//! - **Samples.** OpenAI: one request with `n`; a server that returns fewer
//!   choices (many compatible servers ignore `n`) is asked again for the
//!   rest. Anthropic has no `n`: one request per sample. Usage is summed.
//! - **Retries** (`retry.rs`): transport errors, timeouts, 408, 429, 5xx
//!   and malformed 2xx replies are retried with exponential backoff and
//!   jitter, honouring `Retry-After` up to `backoff_max × 4`; a server
//!   asking to wait longer ends the call at once (see `retry.rs`); other
//!   statuses are final. [`ProviderConfig::max_retries`] is the budget of
//!   one [`Proposer::complete`] call, shared by its requests, so a call
//!   makes at most `max_retries + requests` attempts. Each retry is
//!   reported through the `retried` callback before the wait.
//! - **Untrusted bodies.** A body is read up to [`MAX_REPLY_BYTES`] and no
//!   further; a 2xx reply over it is malformed. JSON is parsed with
//!   serde_json's default nesting limit, error texts are clipped to about
//!   300 characters, and no body can make the proposer panic.
//! - **Timeout.** [`ProviderConfig::timeout`] bounds each HTTP request,
//!   from connecting to the end of the body.
//! - **Cancel.** With [`HttpProposer::with_cancel`], a cancelled token ends
//!   the request in flight, or the wait before a retry, at once: the call
//!   fails ([`ProposeErrorKind::Other`], "the session was cancelled …")
//!   and is not retried. Without it, a request runs to its end.
//!
//! Files: this one (configuration, the retry loop, samples), `settings.rs`
//! (the front ends' settings: flags, serve.toml), `http.rs`
//! (one attempt and its error texts), `retry.rs` (what is retried, the
//! waits), `openai.rs` and `anthropic.rs` (the wire formats, with their
//! sources).

mod anthropic;
mod http;
mod openai;
mod retry;
pub mod settings;

use crate::agent::model::{
    ModelReply, ModelRequest, ProposeError, ProposeErrorKind, Proposer, RetryNotice,
};
use crate::runtime::cancel::Cancel;
use http::{api_error_message, chain, clip};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use reqwest::{Client, Url};
use serde_json::{json, Value as Json};
use std::time::Duration;

/// The most bytes of a reply body that are read (8 MiB); the rest is never
/// downloaded.
pub const MAX_REPLY_BYTES: usize = 8 * 1024 * 1024;

/// Which wire format a provider speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// The OpenAI chat-completions API (`POST {base_url}/chat/completions`,
    /// `Authorization: Bearer KEY`), as spoken by OpenAI and most
    /// OpenAI-compatible servers.
    OpenAi,
    /// The Anthropic Messages API (`POST {base_url}/v1/messages`,
    /// `x-api-key: KEY`, `anthropic-version: 2023-06-01`).
    Anthropic,
}

impl ProviderKind {
    /// The name in logs and on the command line: `openai`, `anthropic`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
        }
    }

    /// The kind named `name` (`openai`, `anthropic`; case-insensitive).
    pub fn parse(name: &str) -> Option<ProviderKind> {
        match name.to_ascii_lowercase().as_str() {
            "openai" => Some(ProviderKind::OpenAi),
            "anthropic" => Some(ProviderKind::Anthropic),
            _ => None,
        }
    }

    /// The official API's base URL: `https://api.openai.com/v1` (the
    /// OpenAI SDK's; the endpoint is `{base_url}/chat/completions`) or
    /// `https://api.anthropic.com` (the endpoint is `{base_url}/v1/messages`).
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
        }
    }

    /// The environment variable the official SDKs read the key from:
    /// `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` (named in error hints; the
    /// proposer itself reads no environment).
    pub fn key_env(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    /// The path appended to the base URL.
    fn endpoint_path(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "/chat/completions",
            ProviderKind::Anthropic => "/v1/messages",
        }
    }
}

/// How to reach a model. Build it with [`ProviderConfig::new`] and adjust
/// the fields.
#[derive(Clone)]
pub struct ProviderConfig {
    /// The wire format.
    pub kind: ProviderKind,
    /// The API's base URL (trailing slashes are ignored; a query string is
    /// kept). Default: [`ProviderKind::default_base_url`].
    pub base_url: String,
    /// The model's name, sent as `model`.
    pub model: String,
    /// The API key; may be `None` only for a server on this machine (see
    /// [`HttpProposer::new`]).
    pub api_key: Option<String>,
    /// The most one HTTP request may take, from connecting to the end of
    /// the body. Default 120 s.
    pub timeout: Duration,
    /// How many failed attempts one `complete` call may retry, in all.
    /// Default 4.
    pub max_retries: u32,
    /// The wait before the first retry (then doubled each retry, less up
    /// to 25 % of jitter). Default 500 ms.
    pub backoff_initial: Duration,
    /// The longest backoff. A server's `Retry-After` is honoured up to four
    /// times this; a longer one ends the call at once (kind `RateLimited`
    /// for a 429). Default 30 s.
    pub backoff_max: Duration,
    /// The sampling temperature, sent only when set.
    pub temperature: Option<f64>,
}

impl ProviderConfig {
    /// The defaults for `kind` and `model`: the official base URL, no key,
    /// a 120 s timeout, 4 retries, backoff from 500 ms doubling up to 30 s,
    /// the API's own temperature.
    pub fn new(kind: ProviderKind, model: impl Into<String>) -> ProviderConfig {
        ProviderConfig {
            kind,
            base_url: kind.default_base_url().to_string(),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(120),
            max_retries: 4,
            backoff_initial: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            temperature: None,
        }
    }
}

impl std::fmt::Debug for ProviderConfig {
    /// Every field but the key, which shows as `<redacted>`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("base_url", &redact(&self.base_url))
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("backoff_initial", &self.backoff_initial)
            .field("backoff_max", &self.backoff_max)
            .field("temperature", &self.temperature)
            .finish()
    }
}

/// A [`Proposer`] over HTTP (see the module's note).
pub struct HttpProposer {
    config: ProviderConfig,
    endpoint: Url,
    /// `endpoint` without user info and query, for messages.
    shown_endpoint: String,
    /// Content type, key, API version.
    headers: HeaderMap,
    client: Client,
    /// `Some` until dropped (taken by `Drop` to shut it down without
    /// blocking).
    runtime: Option<tokio::runtime::Runtime>,
    /// Ends requests and waits when cancelled.
    cancel: Option<Cancel>,
}

impl std::fmt::Debug for HttpProposer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProposer")
            .field("kind", &self.config.kind)
            .field("model", &self.config.model)
            .field("endpoint", &self.shown_endpoint)
            .finish_non_exhaustive()
    }
}

impl Drop for HttpProposer {
    fn drop(&mut self) {
        // A plain drop blocks (and panics inside an async context).
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// The texts and usage of one successful request.
#[derive(Debug)]
struct Parsed {
    texts: Vec<String>,
    usage: Option<(u64, u64)>,
}

/// The attempts and retries of one `complete` call.
#[derive(Default)]
struct Call {
    attempts: u32,
    retries: u32,
}

impl HttpProposer {
    /// A proposer for `config`. Errors ([`ProposeErrorKind::Config`]): the
    /// base URL is not an `http(s)` URL; the model name is empty; there is
    /// no API key (`None` or blank) and the base URL is not on this machine;
    /// the key cannot go in an HTTP header (a line break inside it).
    /// [`ProposeErrorKind::Other`]: the runtime or the HTTP client could not
    /// be made. No request is sent.
    pub fn new(config: ProviderConfig) -> Result<HttpProposer, ProposeError> {
        let fail = |kind, message: String| ProposeError {
            kind,
            message,
            attempts: 0,
        };
        let config_error = |message: String| fail(ProposeErrorKind::Config, message);
        let kind = config.kind;
        let endpoint = endpoint_url(kind, &config.base_url).map_err(config_error)?;
        if config.model.trim().is_empty() {
            return Err(config_error("no model name is configured".to_string()));
        }
        let key = config
            .api_key
            .as_deref()
            .map(str::trim)
            .filter(|k| !k.is_empty());
        if key.is_none() && !is_local(&endpoint) {
            return Err(config_error(format!(
                "no API key for {}: set {} (only a server on this machine, such as \
                 http://localhost:11434/v1, may be used without a key)",
                redact(&config.base_url),
                kind.key_env()
            )));
        }
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(key) = key {
            let (name, value) = match kind {
                ProviderKind::OpenAi => ("authorization", format!("Bearer {key}")),
                ProviderKind::Anthropic => ("x-api-key", key.to_string()),
            };
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                config_error(format!(
                    "the API key contains characters that cannot be sent in an HTTP header \
                     (check {})",
                    kind.key_env()
                ))
            })?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static(name), value);
        }
        if kind == ProviderKind::Anthropic {
            headers.insert(
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static(anthropic::VERSION),
            );
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| {
                fail(
                    ProposeErrorKind::Other,
                    format!("cannot start the HTTP runtime: {e}"),
                )
            })?;
        let client = {
            let _entered = runtime.enter();
            Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(config.timeout)
                .pool_idle_timeout(Duration::from_secs(30))
                .user_agent(concat!("lt/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| {
                    fail(
                        ProposeErrorKind::Other,
                        format!("cannot make the HTTP client: {}", chain(&e)),
                    )
                })?
        };
        Ok(HttpProposer {
            shown_endpoint: redact(endpoint.as_str()),
            endpoint,
            config,
            headers,
            client,
            runtime: Some(runtime),
            cancel: None,
        })
    }

    /// The same proposer, whose requests and retry waits end as soon as
    /// `cancel` is cancelled (see the module's note).
    pub fn with_cancel(mut self, cancel: Cancel) -> HttpProposer {
        self.cancel = Some(cancel);
        self
    }

    /// The failure of a request the token cancelled: not retried.
    fn cancelled(&self) -> Option<http::Failure> {
        let c = self.cancel.as_ref().filter(|c| c.is_cancelled())?;
        let why = c.reason().unwrap_or_else(|| "cancelled".to_string());
        Some(http::Failure::new(
            ProposeErrorKind::Other,
            false,
            format!("the session was cancelled ({why})"),
        ))
    }

    /// Sleeps `delay`, or less when the token is cancelled meanwhile.
    fn wait(&self, delay: Duration) {
        let Some(c) = &self.cancel else {
            return std::thread::sleep(delay);
        };
        let until = std::time::Instant::now() + delay;
        while !c.is_cancelled() {
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return;
            }
            std::thread::sleep(left.min(Duration::from_millis(20)));
        }
    }

    /// The configuration it was made with.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// The URL requests go to (without user info and query).
    pub fn endpoint(&self) -> &str {
        &self.shown_endpoint
    }

    /// Sends `body` until it gives a reply `parse` accepts, a final error,
    /// or the call's retries run out.
    fn post(
        &self,
        body: &Json,
        call: &mut Call,
        retried: &mut dyn FnMut(RetryNotice),
        parse: fn(&Json) -> Result<Parsed, String>,
    ) -> Result<Parsed, ProposeError> {
        let bytes = serde_json::to_vec(body).map_err(|e| ProposeError {
            kind: ProposeErrorKind::Other,
            message: format!("cannot encode the request: {e}"),
            attempts: call.attempts,
        })?;
        loop {
            call.attempts += 1;
            let failure = match self.attempt(bytes.clone()) {
                Ok(reply) => match serde_json::from_slice::<Json>(&reply) {
                    Ok(json) => match parse(&json) {
                        Ok(parsed) => return Ok(parsed),
                        Err(why) => self.malformed(why),
                    },
                    Err(e) => self.malformed(format!(
                        "the reply is not JSON ({e}); it starts: {}",
                        clip(&String::from_utf8_lossy(&reply[..reply.len().min(4096)]))
                    )),
                },
                Err(failure) => failure,
            };
            if !failure.retry {
                return Err(ProposeError {
                    kind: failure.kind,
                    message: failure.message,
                    attempts: call.attempts,
                });
            }
            let cap = retry::retry_after_cap(self.config.backoff_max);
            if let Some(wait) = failure.wait.filter(|wait| *wait > cap) {
                // Waiting the cap would only retry too early, for minutes.
                return Err(ProposeError {
                    kind: failure.kind,
                    message: format!(
                        "{}; the server asks to wait {} s, more than lt waits (cap {} s): \
                         try later",
                        failure.message,
                        retry::seconds(wait),
                        retry::seconds(cap)
                    ),
                    attempts: call.attempts,
                });
            }
            if call.retries >= self.config.max_retries {
                return Err(ProposeError {
                    kind: failure.kind,
                    message: failure.message,
                    attempts: call.attempts,
                });
            }
            let delay = match failure.wait {
                Some(wait) => wait,
                None => retry::backoff(
                    self.config.backoff_initial,
                    self.config.backoff_max,
                    call.retries,
                ),
            };
            retried(RetryNotice {
                attempt: call.attempts,
                kind: failure.kind,
                message: failure.message,
                delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            });
            call.retries += 1;
            self.wait(delay);
        }
    }
}

impl Proposer for HttpProposer {
    fn describe(&self) -> Json {
        json!({
            "provider": self.config.kind.as_str(),
            "model": self.config.model,
            "base_url": redact(self.config.base_url.trim()),
        })
    }

    fn complete(
        &mut self,
        request: &ModelRequest,
        retried: &mut dyn FnMut(RetryNotice),
    ) -> Result<ModelReply, ProposeError> {
        let wanted = request.samples as usize;
        let (model, temperature) = (self.config.model.as_str(), self.config.temperature);
        let mut call = Call::default();
        let mut texts = Vec::with_capacity(wanted);
        let mut usage: Option<(u64, u64)> = None;
        // Each round yields at least one text (the parsers reject a reply
        // without), so this ends.
        while texts.len() < wanted {
            let remaining = wanted - texts.len();
            let parsed = match self.config.kind {
                ProviderKind::OpenAi => {
                    let n = u32::try_from(remaining).unwrap_or(u32::MAX);
                    let body = openai::request_body(model, temperature, request, n);
                    self.post(&body, &mut call, retried, openai::parse_reply)?
                }
                ProviderKind::Anthropic => {
                    let body = anthropic::request_body(model, temperature, request);
                    self.post(&body, &mut call, retried, anthropic::parse_reply)?
                }
            };
            if let Some((i, o)) = parsed.usage {
                let (si, so) = usage.unwrap_or((0, 0));
                usage = Some((si.saturating_add(i), so.saturating_add(o)));
            }
            texts.extend(parsed.texts.into_iter().take(remaining));
        }
        Ok(ModelReply {
            texts,
            usage: usage.map_or(Json::Null, |(i, o)| json!({"input": i, "output": o})),
        })
    }
}

/// `{base_url}{kind's path}`, trailing slashes of the base ignored.
fn endpoint_url(kind: ProviderKind, base_url: &str) -> Result<Url, String> {
    let base = base_url.trim();
    let mut url = Url::parse(base).map_err(|e| {
        format!(
            "the base URL {:?} is not a URL ({e}); for example {}",
            redact(base),
            kind.default_base_url()
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "the base URL {:?} is not an http(s) URL; for example {}",
            redact(base),
            kind.default_base_url()
        ));
    }
    let path = format!(
        "{}{}",
        url.path().trim_end_matches('/'),
        kind.endpoint_path()
    );
    url.set_path(&path);
    url.set_fragment(None);
    Ok(url)
}

/// Whether the URL's host is this machine.
fn is_local(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => {
            let host = host.to_ascii_lowercase();
            host == "localhost" || host.ends_with(".localhost")
        }
    }
}

/// A URL without user info and query (where keys hide), for messages and
/// logs; a text that is not a URL is kept as it is.
fn redact(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() || !parsed.username().is_empty() => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.to_string()
        }
        Ok(mut parsed) if parsed.query().is_some() => {
            parsed.set_query(None);
            parsed.to_string()
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let url = |kind, base| endpoint_url(kind, base).map(|u| u.to_string());
        assert_eq!(
            url(ProviderKind::OpenAi, "https://api.openai.com/v1/"),
            Ok("https://api.openai.com/v1/chat/completions".to_string())
        );
        assert_eq!(
            url(ProviderKind::Anthropic, "https://api.anthropic.com"),
            Ok("https://api.anthropic.com/v1/messages".to_string())
        );
        assert_eq!(
            url(ProviderKind::OpenAi, "http://h/openai//?api-version=1"),
            Ok("http://h/openai/chat/completions?api-version=1".to_string())
        );
        assert!(url(ProviderKind::OpenAi, "api.openai.com").is_err());
        assert!(url(ProviderKind::OpenAi, "ftp://h/").is_err());
    }

    #[test]
    fn local_hosts() {
        for (base, local) in [
            ("http://localhost:11434/v1", true),
            ("http://127.0.0.2/", true),
            ("http://[::1]:8000/v1", true),
            ("http://x.localhost/", true),
            ("http://10.0.0.1/", false),
            ("https://api.openai.com/v1", false),
        ] {
            let url = Url::parse(base).expect("url");
            assert_eq!(is_local(&url), local, "{base}");
        }
    }

    #[test]
    fn redaction() {
        assert_eq!(redact("https://u:p@h/v1?key=k"), "https://h/v1");
        assert_eq!(redact("https://h/v1?key=k"), "https://h/v1");
        assert_eq!(redact("https://h/v1"), "https://h/v1");
    }
}
