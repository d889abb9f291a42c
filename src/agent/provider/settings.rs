//! A model provider as a front end configures it: the settings `lt agent`
//! takes as flags (`--provider`, `--model`, `--base-url`, `--api-key-env`,
//! `--request-timeout-ms`, `--max-retries`) and `lt serve` reads from a
//! tenant's `[tenants.NAME.model]` table, turned into an [`HttpProposer`].
//!
//! ```text
//! ModelSettings ──proposer()──▶ ProviderConfig (the key read from the named
//!     variable, never from a file) ──▶ HttpProposer::new ──▶ Ok | SetupError
//! ```
//!
//! Errors are [`SetupError`]s, without hints: each front end names its
//! own flags or keys in them.

use super::{HttpProposer, ProviderConfig, ProviderKind};
use crate::runtime::cancel::Cancel;
use std::time::Duration;

/// The default timeout of one model request: 120 s.
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 120_000;
/// The default retries of a failed model request: 4.
pub const DEFAULT_MAX_RETRIES: u32 = 4;

/// How to reach a model over HTTP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelSettings {
    /// `openai` or `anthropic` (case-insensitive).
    pub provider: String,
    /// The model's name (`None`: not given).
    pub model: Option<String>,
    /// The API's base URL (`None`: the provider's official one).
    pub base_url: Option<String>,
    /// The environment variable holding the API key (`None`: the
    /// provider's usual one, `OPENAI_API_KEY` or `ANTHROPIC_API_KEY`).
    pub api_key_env: Option<String>,
    /// The most one HTTP request may take, in ms (0 is taken as 1).
    pub request_timeout_ms: u64,
    /// Retries of a failed model request.
    pub max_retries: u32,
}

/// Why no proposer could be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetupError {
    /// The provider is not `openai` or `anthropic`: its name.
    UnknownProvider(String),
    /// No model name was given.
    NoModel,
    /// The provider refused the configuration (a bad base URL, no key).
    Provider {
        /// What is wrong, naming `key_var` where it speaks of the key.
        message: String,
        /// The variable the key was read from.
        key_var: String,
        /// Whether the problem is the key (else the URL or the model).
        about_key: bool,
    },
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetupError::UnknownProvider(p) => write!(f, "unknown provider `{p}`"),
            SetupError::NoModel => write!(f, "no model name is given"),
            SetupError::Provider { message, .. } => write!(f, "{message}"),
        }
    }
}

impl ModelSettings {
    /// The provider's kind. Errors: [`SetupError::UnknownProvider`].
    pub fn kind(&self) -> Result<ProviderKind, SetupError> {
        ProviderKind::parse(&self.provider)
            .ok_or_else(|| SetupError::UnknownProvider(self.provider.clone()))
    }

    /// The variable the key is read from.
    pub fn key_var(&self, kind: ProviderKind) -> String {
        self.api_key_env
            .clone()
            .unwrap_or_else(|| kind.key_env().to_string())
    }

    /// The proposer these settings describe, its key read from the named
    /// environment variable (a blank one counts as unset). With `cancel`,
    /// a request in flight or waiting to be retried ends as soon as the
    /// token is cancelled ([`HttpProposer::with_cancel`]).
    pub fn proposer(&self, cancel: Option<Cancel>) -> Result<HttpProposer, SetupError> {
        let kind = self.kind()?;
        let model = self.model.clone().ok_or(SetupError::NoModel)?;
        let mut config = ProviderConfig::new(kind, model);
        if let Some(url) = &self.base_url {
            config.base_url = url.clone();
        }
        let var = self.key_var(kind);
        config.api_key = std::env::var(&var).ok().filter(|k| !k.trim().is_empty());
        config.timeout = Duration::from_millis(self.request_timeout_ms.max(1));
        config.max_retries = self.max_retries;
        let proposer = HttpProposer::new(config).map_err(|e| SetupError::Provider {
            message: e.message.replace(kind.key_env(), &var),
            about_key: e.message.contains("key"),
            key_var: var.clone(),
        })?;
        Ok(match cancel {
            Some(c) => proposer.with_cancel(c),
            None => proposer,
        })
    }
}

/// Whether `name` can be an environment variable's name (letters, digits
/// and `_`, not starting with a digit): what `api_key_env` must hold,
/// rather than a key.
pub fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(provider: &str, model: Option<&str>, base_url: Option<&str>) -> ModelSettings {
        ModelSettings {
            provider: provider.into(),
            model: model.map(str::to_string),
            base_url: base_url.map(str::to_string),
            api_key_env: Some("LT_TEST_NO_SUCH_VARIABLE_9F2C".into()),
            request_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MS,
            max_retries: DEFAULT_MAX_RETRIES,
        }
    }

    #[test]
    fn errors_name_the_problem_and_the_variable() {
        assert_eq!(
            settings("mistral", Some("m"), None).proposer(None).err(),
            Some(SetupError::UnknownProvider("mistral".into()))
        );
        assert_eq!(
            settings("openai", None, None).proposer(None).err(),
            Some(SetupError::NoModel)
        );
        match settings("openai", Some("m"), None).proposer(None) {
            Err(SetupError::Provider {
                message,
                key_var,
                about_key,
            }) => {
                assert!(about_key);
                assert_eq!(key_var, "LT_TEST_NO_SUCH_VARIABLE_9F2C");
                assert!(
                    message.contains("LT_TEST_NO_SUCH_VARIABLE_9F2C"),
                    "{message}"
                );
                assert!(!message.contains("OPENAI_API_KEY"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        // A server on this machine needs no key.
        let local = settings("anthropic", Some("m"), Some("http://127.0.0.1:9/"));
        assert!(local.proposer(None).is_ok());
    }

    #[test]
    fn env_names() {
        for (name, ok) in [
            ("OPENAI_API_KEY", true),
            ("_K1", true),
            ("1K", false),
            ("sk-proj-abc", false),
            ("", false),
            ("A B", false),
        ] {
            assert_eq!(is_env_name(name), ok, "{name}");
        }
    }
}
