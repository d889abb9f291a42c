//! `[tenants.NAME.model]`: the model provider of a tenant's task sessions
//! (`POST /v1/sessions {"task": …}`), with the settings `lt agent` takes
//! as flags, and its `[agent]` table.
//!
//! ```toml
//! [tenants.acme.model]
//! provider = "openai"              # or "anthropic"
//! model = "gpt-4o-mini"
//! base_url = "https://api.openai.com/v1"   # optional: the provider's own
//! api_key_env = "ACME_OPENAI_KEY"  # the variable holding the key (default
//!                                  # OPENAI_API_KEY / ANTHROPIC_API_KEY);
//!                                  # the key itself never goes in this file
//! request_timeout_ms = 120000      # optional
//! max_retries = 4                  # optional
//! [tenants.acme.model.agent]       # optional: lt agent's [agent] keys, over
//! max_attempts = 3                 # the tenant's tools.toml [agent] table
//! max_turns = 5
//! ```
//!
//! Checked at load, each problem with serve.toml's line and a hint: the
//! provider and its key (read from the named variable now, as each task
//! session reads it again), the settings, and the tool list: the tenant's
//! declarations, every tool with a server executor, as `lt agent` requires.

use crate::agent::config::{AgentSettings, AgentTable};
use crate::agent::provider::settings::{
    is_env_name, ModelSettings, SetupError, DEFAULT_MAX_RETRIES, DEFAULT_REQUEST_TIMEOUT_MS,
};
use crate::agent::task::{executors_cover, tags, ExecutorGap, ToolList, ToolListError};
use crate::exec::{ConfigError, Registry};
use crate::source::SourceFile;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use toml::Spanned;

/// A tenant's model, as loaded.
#[derive(Clone, Debug)]
pub struct TenantModel {
    /// How to reach it (the key is read from `api_key_env` per session).
    pub settings: ModelSettings,
    /// The loop's settings: tools.toml's `[agent]`, then the table's.
    pub agent: AgentSettings,
    /// The listed tools' tags (for trace requirements).
    pub tags: BTreeMap<String, Vec<String>>,
}

/// `[tenants.NAME.model]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawModel {
    provider: Spanned<String>,
    model: Spanned<String>,
    base_url: Option<Spanned<String>>,
    api_key_env: Option<Spanned<String>>,
    /// Refused with a hint: the key never goes in the file.
    api_key: Option<Spanned<toml::Value>>,
    request_timeout_ms: Option<Spanned<u64>>,
    max_retries: Option<u32>,
    agent: Option<Spanned<AgentTable>>,
}

/// What [`load`] needs of the tenant.
pub struct TenantParts<'a> {
    /// The tenant's name.
    pub name: &'a str,
    /// Its declarations' path and text.
    pub declarations: (&'a Path, &'a str),
    /// Its executors, their path and their bytes.
    pub executors: Option<(&'a Registry, &'a Path, &'a [u8])>,
}

/// Checks a tenant's `[tenants.NAME.model]` table (`raw`, read from
/// `text`, the file `shown`). Errors: the first problem, at its line.
pub fn load(
    shown: &str,
    text: &str,
    tenant: &TenantParts<'_>,
    raw: RawModel,
) -> Result<TenantModel, ConfigError> {
    let name = tenant.name;
    // An error at `span`, about `key` of the table ("": the whole table).
    let at = |span: std::ops::Range<usize>, key: &str, message: String, help: &str| {
        let before = text.get(..span.start).unwrap_or("");
        let start = before.rfind('\n').map_or(0, |i| i + 1);
        ConfigError {
            path: shown.to_string(),
            line: Some(before.matches('\n').count() + 1),
            column: Some(before[start..].chars().count() + 1),
            message: match key {
                "" => format!("tenants.{name}.model: {message}"),
                k => format!("tenants.{name}.model.{k}: {message}"),
            },
            help: Some(help.to_string()),
        }
    };
    if let Some(k) = &raw.api_key {
        return Err(at(
            k.span(),
            "api_key", "an API key is never written in serve.toml".into(),
            "put the key in an environment variable of lt serve, and name that variable: api_key_env = \"ACME_OPENAI_KEY\"",
        ));
    }
    if let Some(v) = raw
        .api_key_env
        .as_ref()
        .filter(|v| !is_env_name(v.get_ref()))
    {
        return Err(at(
            v.span(),
            "api_key_env", "not the name of an environment variable (letters, digits and _)".into(),
            "api_key_env names the variable that holds the key (e.g. \"ACME_OPENAI_KEY\"); the key itself never goes in this file",
        ));
    }
    if let Some(t) = raw
        .request_timeout_ms
        .as_ref()
        .filter(|t| *t.get_ref() == 0)
    {
        return Err(at(
            t.span(),
            "request_timeout_ms",
            "0: a model request needs some time".into(),
            "give a timeout in milliseconds, e.g. 120000 (the default)",
        ));
    }
    let settings = ModelSettings {
        provider: raw.provider.get_ref().clone(),
        model: Some(raw.model.get_ref().clone()),
        base_url: raw.base_url.as_ref().map(|u| u.get_ref().clone()),
        api_key_env: raw.api_key_env.as_ref().map(|v| v.get_ref().clone()),
        request_timeout_ms: raw
            .request_timeout_ms
            .as_ref()
            .map_or(DEFAULT_REQUEST_TIMEOUT_MS, |t| *t.get_ref()),
        max_retries: raw.max_retries.unwrap_or(DEFAULT_MAX_RETRIES),
    };
    match settings.proposer(None) {
        Ok(_) => {}
        Err(SetupError::UnknownProvider(p)) => {
            return Err(at(
                raw.provider.span(),
                "provider",
                format!("unknown provider `{p}`"),
                "provider = \"openai\" (any OpenAI-compatible endpoint) or \"anthropic\"",
            ))
        }
        Err(SetupError::NoModel) => {
            return Err(at(
                raw.model.span(),
                "model",
                "no model name".into(),
                "e.g. model = \"gpt-4o-mini\"",
            ))
        }
        Err(SetupError::Provider {
            message,
            key_var,
            about_key,
        }) => {
            let (span, help) = if about_key {
                (
                    raw.api_key_env.as_ref().map_or(raw.provider.span(), |v| v.span()),
                    format!("set {key_var} in lt serve's environment (or name another variable with api_key_env)"),
                )
            } else {
                (
                    raw.base_url.as_ref().map_or(raw.model.span(), |u| u.span()),
                    "check base_url: e.g. https://api.openai.com/v1, http://localhost:11434/v1 or https://api.anthropic.com".into(),
                )
            };
            let what = if about_key { "api_key_env" } else { "base_url" };
            return Err(at(span, what, message, &help));
        }
    }
    // The tool list: the tenant's declarations, each run on the server.
    let header = raw.provider.span();
    let Some((registry, executors_path, registry_bytes)) = tenant.executors else {
        return Err(at(
            header,
            "", "a tenant with a model needs `executors`".into(),
            "the model's programs call the tenant's tools on the server: give the tenant a tools.toml (executors = \"tools.toml\")",
        ));
    };
    let (decl_path, decl_text) = tenant.declarations;
    let tools = match ToolList::load(decl_text) {
        Ok(t) => t,
        Err(ToolListError::Errors(_)) | Err(ToolListError::NoTools) => {
            return Err(at(
                header,
                "",
                format!(
                    "{} declares no tools for the model to call",
                    decl_path.display()
                ),
                "declare each tool: `tool lookup: {id: String} -{Read}-> {email: String};`",
            ))
        }
    };
    match executors_cover(&tools, registry) {
        Ok(()) => {}
        Err(ExecutorGap::Missing(missing)) => {
            return Err(at(
                header,
                "",
                format!(
                    "{} has no executor for {}, which the model may call (it sees every declared tool)",
                    executors_path.display(),
                    missing.join(", ")
                ),
                "add the tool to the tenant's tools.toml, or remove it from the declarations",
            ))
        }
        Err(ExecutorGap::Client(t)) => {
            return Err(at(
                header,
                "", format!("tool {t} runs in the client venue, which task sessions do not have"),
                "task sessions run the model's programs on the server: give it a server executor, or send programs instead of tasks",
            ))
        }
    }
    let file = SourceFile::new(decl_path.display().to_string(), decl_text.to_string());
    let shown_executors = executors_path.display().to_string();
    if let Some(f) = crate::control::session::understated_effects(
        &file,
        &tools.sigs(),
        &tools.names(),
        registry,
        Some(&shown_executors),
    ) {
        return Err(ConfigError {
            path: shown_executors,
            line: None,
            column: None,
            message: format!("{} (tenant {name}'s model)", f.message),
            help: f.help,
        });
    }
    let tags = tags(&tools, registry);
    // The settings: tools.toml's [agent], then the table's.
    let registry_text = String::from_utf8_lossy(registry_bytes);
    let mut table = AgentTable::from_toml(&registry_text, &shown_executors)?;
    let agent_help = "the [agent] keys are max_attempts, max_turns, samples, agree, on_disagreement, max_tokens and [agent.trace] (docs/agent.md)";
    if let Some(a) = &raw.agent {
        if let Err((key, message)) = a.get_ref().check_values() {
            return Err(at(
                a.span(),
                "agent",
                format!("{message} ({key})"),
                agent_help,
            ));
        }
        table = table.overlay(a.get_ref());
    }
    let span = raw.agent.as_ref().map_or(header, |a| a.span());
    let agent = table
        .settings()
        .map_err(|e| at(span.clone(), "agent", e, agent_help))?;
    if let Some(tag) = agent
        .trace
        .keys()
        .find(|t| !tags.values().any(|v| v.contains(t)))
    {
        return Err(at(
            span,
            "agent", format!("trace requirement `{tag}`: no tool of the tenant has this tag, so it could never be met"),
            "tools get tags in tools.toml: `tags = [\"verify\"]`",
        ));
    }
    Ok(TenantModel {
        settings,
        agent,
        tags,
    })
}
