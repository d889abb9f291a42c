//! Reading `tools.toml` into a [`Registry`].
//!
//! Parsing is two steps: serde (with `deny_unknown_fields`) reads the file
//! into raw tables that keep the spans of the values we validate further
//! ([`Located`]: a table written as a header under an implied table, or
//! with dotted keys, has no span from toml; its key is found in the text);
//! then each raw table becomes a [`Tool`] or a [`ConfigError`] pointing at
//! `file:line:column`. Loading stops at the first error (the file is small
//! and the fix is usually one line).
//!
//! A command table is checked as far as `exec` would go, so that a mistake
//! stops lt before anything runs rather than failing a call after earlier
//! tools have acted: the program exists and is executable (a bare name is
//! looked up on `PATH`: the tool's own if `env` sets one, else lt's), the
//! working directory is a directory, environment names are non-empty
//! without `=` or NUL, and no string holds a NUL byte. Relative paths are
//! joined to the configuration folder with their `.` components dropped.

use super::checks::Checks;
use super::command::{dir_problem, CommandTool};
use super::fixed::{FixedTool, Response};
use super::http::HttpTool;
use super::located::Located;
use super::mcp::McpTool;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The timeout of a `command` or `http` tool without `timeout_ms`: 30 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(30_000);

/// A `tools.toml` that could not be used: unreadable, not TOML, or a table
/// that breaks a rule. Displayed as `path:line:column: message` followed by
/// `help: …` on a second line when there is a hint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The file as the caller named it (e.g. `tools.toml`).
    pub path: String,
    /// 1-based line of the offending text, when known.
    pub line: Option<usize>,
    /// 1-based column (in characters) of the offending text, when known.
    pub column: Option<usize>,
    /// What is wrong, naming the tool where there is one.
    pub message: String,
    /// How to fix it, when there is a useful hint.
    pub help: Option<String>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        write!(f, ": {}", self.message)?;
        if let Some(help) = &self.help {
            write!(f, "\nhelp: {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

/// The loaded `tools.toml`: one executor per tool name. Immutable once
/// loaded, except for the position of each `fixed` sequence (an atomic
/// counter), so a registry may be shared between threads.
#[derive(Debug)]
pub struct Registry {
    origin: String,
    tools: BTreeMap<String, Tool>,
    /// The effects each tool really performs, where tools.toml says.
    effects: BTreeMap<String, Vec<String>>,
    /// The tools declared `idempotent = true`.
    idempotent: std::collections::BTreeSet<String>,
    /// The run-time checks of each tool that has a `checks` table.
    checks: BTreeMap<String, std::sync::Arc<Checks>>,
    /// Each tool's tags (`tags = ["verify"]`), for `lt agent`'s trace
    /// requirements.
    tags: BTreeMap<String, Vec<String>>,
}

/// One tool's executor.
#[derive(Debug)]
pub(crate) enum Tool {
    Command(CommandTool),
    Http(HttpTool),
    Fixed(FixedTool),
    /// `mcp = { command = […], tool = "…" }`: a tool of an MCP server.
    Mcp(McpTool),
    /// `venue = "client"`: lt does not run it; the control plane hands the
    /// call to the client. The duration is how long to wait for the report
    /// (`None`: only the run's own deadline).
    Client(Option<Duration>),
}

/// Where a tool runs (seed 001's venues).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Venue {
    /// lt runs it (a `command`, `http` or `fixed` executor).
    Server,
    /// The client that started `lt run` runs it: the call is written to
    /// stdout and its outcome read from stdin (`docs/executors.md`).
    Client,
}

impl Venue {
    /// `server` or `client`, as in the log's `scheduled` event.
    pub fn as_str(self) -> &'static str {
        match self {
            Venue::Server => "server",
            Venue::Client => "client",
        }
    }
}

impl Registry {
    /// Reads and validates the file at `path`. Relative paths inside it
    /// resolve from the folder that contains it. Errors: the file cannot be
    /// read (the message names the path and the OS error), it is not TOML, or
    /// a table breaks a rule of `docs/executors.md`.
    pub fn load(path: &Path) -> Result<Registry, ConfigError> {
        let origin = path.display().to_string();
        let text = read_config_text(path, "the tool configuration")?;
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        Registry::from_str(&text, folder, &origin)
    }

    /// Parses `text` as the contents of a `tools.toml` living in `folder`
    /// (relative paths inside resolve from it; a relative `folder` is made
    /// absolute against the current directory now). `origin` names the file
    /// in error messages.
    pub fn from_str(text: &str, folder: &Path, origin: &str) -> Result<Registry, ConfigError> {
        let err = |span: Option<Range<usize>>, message: String, help: Option<String>| {
            let (line, column) = match span {
                Some(s) => {
                    let (l, c) = line_column(text, s.start);
                    (Some(l), Some(c))
                }
                None => (None, None),
            };
            ConfigError {
                path: origin.to_string(),
                line,
                column,
                message,
                help,
            }
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            // toml's syntax messages may span lines; keep the error on one.
            let message = crate::diag::toml::message(&e).trim().replace('\n', "; ");
            let message = match e.span().and_then(|s| tool_at(text, s.start)) {
                Some(name) => format!("tool {name}: {message}"),
                None => message,
            };
            err(e.span(), message, None)
        })?;
        let folder = absolute(folder);
        let mut tools = BTreeMap::new();
        let mut effects = BTreeMap::new();
        let mut idempotent = std::collections::BTreeSet::new();
        let mut checks = BTreeMap::new();
        let mut tags = BTreeMap::new();
        for (name, mut table) in raw.tools {
            // Tables written as `[tools.NAME.mcp]` headers or dotted keys
            // have no span from toml: found in the text instead.
            table.locate(|| tool_position(text, &name));
            let span = table.span();
            let from = span.as_ref().map_or(0, |s| s.start);
            locate_keys(table.get_mut(), text, from);
            if table.get_ref().idempotent == Some(true) {
                idempotent.insert(name.clone());
            }
            if let Some(t) = table.get_mut().tags.take() {
                tags.insert(name.clone(), t);
            }
            if let Some(labels) = table.get_mut().effects.take() {
                let at = labels.span();
                let labels = labels.into_inner();
                if let Some(bad) = labels
                    .iter()
                    .find(|l| !crate::types::ty::is_effect_label(l))
                {
                    return Err(err(
                        at.or(span),
                        format!("tool {name}: `{bad}` is not an effect label"),
                        Some("effect labels are capitalised names: Read, Write, Network, or your own (Payment)".into()),
                    ));
                }
                effects.insert(
                    name.clone(),
                    labels.into_iter().filter(|l| l != "Pure").collect(),
                );
            }
            if let Some(raw_checks) = table.get_mut().checks.take() {
                let client =
                    table.get_ref().venue.as_ref().map(|v| v.get_ref().as_str()) == Some("client");
                let at = key_position(text, from, "checks").or(span.clone());
                let compiled = build_checks(&name, raw_checks, at, client)
                    .map_err(|e| err(e.span, e.message, e.help))?;
                checks.insert(name.clone(), std::sync::Arc::new(compiled));
            }
            let tool = build_tool(&name, table.into_inner(), &folder)
                .map_err(|e| err(e.span.or(span.clone()), e.message, e.help))?;
            tools.insert(name, tool);
        }
        Ok(Registry {
            origin: origin.to_string(),
            tools,
            effects,
            idempotent,
            checks,
            tags,
        })
    }

    /// The tags tools.toml gives `tool` (`tags = ["verify"]`; empty when none).
    pub fn tags(&self, tool: &str) -> &[String] {
        self.tags.get(tool).map_or(&[], Vec::as_slice)
    }

    /// Where `tool` runs; [`Venue::Server`] for a tool without an executor.
    pub fn venue(&self, tool: &str) -> Venue {
        match self.tools.get(tool) {
            Some(Tool::Client(_)) => Venue::Client,
            _ => Venue::Server,
        }
    }

    /// How long to wait for the client's report of a client-venue `tool`
    /// (its `timeout_ms`; `None` when not set or not a client tool).
    pub fn client_timeout(&self, tool: &str) -> Option<Duration> {
        match self.tools.get(tool) {
            Some(Tool::Client(t)) => *t,
            _ => None,
        }
    }

    /// tools.toml declares `tool` idempotent (`idempotent = true`): running
    /// it twice with the same argument and idempotency key has the effect
    /// of running it once, so `lt resume` may run again a call whose outcome
    /// was lost in a crash.
    pub fn idempotent(&self, tool: &str) -> bool {
        self.idempotent.contains(tool)
    }

    /// Where each tool runs and which tools are idempotent, for
    /// [`crate::control::ControlPlane::with_tool_traits`].
    pub fn tool_traits(&self) -> (BTreeMap<String, Venue>, std::collections::BTreeSet<String>) {
        let venues = self
            .tools
            .keys()
            .map(|name| (name.clone(), self.venue(name)))
            .collect();
        (venues, self.idempotent.clone())
    }

    /// The effects tools.toml says `tool` performs (`effects = ["Write"]`),
    /// if it says. The program's declaration of the tool must include them:
    /// policy (effect grants, dry run) is decided on the program's
    /// declaration, which tools.toml keeps honest.
    pub fn declared_effects(&self, tool: &str) -> Option<&[String]> {
        self.effects.get(tool).map(Vec::as_slice)
    }

    /// The names among `names` that have no executor, in the order given,
    /// each once. The CLI reports these before a run starts.
    pub fn missing<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
        let mut out: Vec<&'a str> = Vec::new();
        for n in names {
            if !self.tools.contains_key(n) && !out.contains(&n) {
                out.push(n);
            }
        }
        out
    }

    /// A one-line description of a tool's executor for `--verbose`, e.g.
    /// `command python3 tools/x.py (timeout 5000 ms)`,
    /// `http POST http://127.0.0.1:8080/refund (timeout 2000 ms)`,
    /// `fixed ok {"sent":true}`. `None` if the tool has no executor.
    pub fn describe(&self, tool: &str) -> Option<String> {
        self.tools.get(tool).map(|t| match t {
            Tool::Command(c) => c.describe(),
            Tool::Http(h) => h.describe(),
            Tool::Fixed(f) => f.describe(),
            Tool::Mcp(m) => m.describe(),
            Tool::Client(None) => "client venue (stdout/stdin)".to_string(),
            Tool::Client(Some(t)) => {
                format!("client venue (stdout/stdin, timeout {} ms)", t.as_millis())
            }
        })
    }

    /// The names of all configured tools, in sorted order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// The file the registry was read from, as named when loading.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    pub(crate) fn get(&self, tool: &str) -> Option<&Tool> {
        self.tools.get(tool)
    }

    /// The run-time checks of `tool` (its `checks` table), if any.
    pub(crate) fn checks(&self, tool: &str) -> Option<&Checks> {
        self.checks.get(tool).map(std::sync::Arc::as_ref)
    }
}

/// The largest configuration file (tools.toml, a profile) lt reads: 16 MiB.
pub const MAX_CONFIG_BYTES: u64 = 16 * 1024 * 1024;

/// Reads a configuration file of at most [`MAX_CONFIG_BYTES`] (a tools.toml
/// is a few KiB; the cap keeps `/dev/zero`, or a wrong path to a big file,
/// from taking the memory). Errors: the OS error, or "larger than 16 MiB".
pub fn read_config_bytes(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(std::io::Error::other(
            "the file is larger than 16 MiB; is this the right file?",
        ));
    }
    Ok(bytes)
}

/// Reads a configuration file as text ([`read_config_bytes`], then UTF-8);
/// `what` names it in the errors ("the profile"), which carry the path.
pub fn read_config_text(path: &Path, what: &str) -> Result<String, ConfigError> {
    let fail = |message: String| ConfigError {
        path: path.display().to_string(),
        line: None,
        column: None,
        message,
        help: None,
    };
    let bytes = read_config_bytes(path).map_err(|e| fail(format!("cannot read {what}: {e}")))?;
    String::from_utf8(bytes).map_err(|e| {
        fail(format!(
            "{what} is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// The tool whose table holds byte `offset`, if the text is valid TOML
/// (used to name the tool in serde's messages, which do not). A table
/// without a span (only deeper tables are written: `[tools.NAME.mcp]`)
/// counts from where its name is written.
fn tool_at(text: &str, offset: usize) -> Option<String> {
    #[derive(Deserialize)]
    struct Loose {
        tools: Option<BTreeMap<String, Located<toml::Value>>>,
    }
    let loose: Loose = toml::from_str(text).ok()?;
    let tools = loose.tools?;
    if let Some((name, _)) = tools
        .iter()
        .find(|(_, t)| t.span().is_some_and(|s| s.contains(&offset)))
    {
        return Some(name.clone());
    }
    tools
        .iter()
        .filter(|(_, t)| t.span().is_none())
        .filter_map(|(name, _)| Some((tool_position(text, name)?.start, name)))
        .filter(|(start, _)| *start <= offset)
        .max()
        .map(|(_, name)| name.clone())
}

/// Where `key` is first written as a key (bare or quoted, before `=`, `.`
/// or `]`) at or after byte `from`: a tool's `checks`, or a table toml gives
/// no span (`mcp.command = …`, `[tools.NAME.mcp]`).
fn key_position(text: &str, from: usize, key: &str) -> Option<Range<usize>> {
    let rest = text.get(from..)?;
    rest.match_indices(key).find_map(|(i, _)| {
        let before = rest[..i].chars().next_back();
        let quoted = before == Some('"') || before == Some('\'');
        let opens = matches!(before, None | Some('.' | '[' | '{' | ',')) || quoted;
        let opens = opens || before.is_some_and(char::is_whitespace);
        let mut after = rest[i + key.len()..].chars();
        let mut next = after.next();
        if quoted && next == before {
            next = after.next();
        } else if quoted {
            return None;
        }
        let closes = match next {
            Some('=' | '.' | ']') => true,
            Some(c) if c.is_whitespace() => after
                .find(|c| !c.is_whitespace())
                .is_some_and(|c| matches!(c, '=' | '.' | ']')),
            _ => false,
        };
        (opens && closes).then(|| from + i..from + i + key.len())
    })
}

/// Where tool `name`'s table is written when toml gives it no span (only
/// deeper tables are: `[tools.NAME.mcp]`): its name after `tools.`.
fn tool_position(text: &str, name: &str) -> Option<Range<usize>> {
    let mut from = 0;
    while let Some(at) = key_position(text, from, name) {
        let before = text[..at.start].trim_end_matches(['"', '\'']).trim_end();
        let before = before.strip_suffix('.').map(str::trim_end);
        if before.is_some_and(|b| b.ends_with("tools")) {
            return Some(at);
        }
        from = at.end;
    }
    None
}

/// Finds in the text the keys of `raw` whose tables toml gives no span.
fn locate_keys(raw: &mut RawTool, text: &str, from: usize) {
    fn locate<T>(value: &mut Option<Located<T>>, text: &str, from: usize, key: &str) -> usize {
        match value {
            Some(v) => {
                v.locate(|| key_position(text, from, key));
                v.span().map_or(from, |s| s.start)
            }
            None => from,
        }
    }
    locate(&mut raw.env, text, from, "env");
    let at = locate(&mut raw.mcp, text, from, "mcp");
    if let Some(mcp) = &mut raw.mcp {
        locate(&mut mcp.get_mut().env, text, at, "env");
    }
    let at = locate(&mut raw.http, text, from, "http");
    if let Some(http) = &mut raw.http {
        locate(&mut http.get_mut().headers, text, at, "headers");
    }
    let at = locate(&mut raw.fixed, text, from, "fixed");
    if let Some(fixed) = &mut raw.fixed {
        locate(&mut fixed.get_mut().ok, text, at, "ok");
    }
}

/// 1-based line and character column of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

fn absolute(folder: &Path) -> PathBuf {
    let folder = if folder.as_os_str().is_empty() {
        Path::new(".")
    } else {
        folder
    };
    normalize(&std::path::absolute(folder).unwrap_or_else(|_| folder.to_path_buf()))
}

// ---- raw tables (serde) ----

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table with a `tools` table (and optionally a `profile` table)"
)]
struct RawFile {
    #[serde(default)]
    tools: BTreeMap<String, Located<RawTool>>,
    /// The session's policy (read by [`crate::control::profile`], not here).
    #[serde(default, rename = "profile")]
    _profile: Option<toml::Value>,
    /// `lt agent`'s settings (read by [`crate::agent::config`], not here).
    #[serde(default, rename = "agent")]
    _agent: Option<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a tool table")]
struct RawTool {
    effects: Option<Located<Vec<String>>>,
    command: Option<Located<Vec<Located<String>>>>,
    cwd: Option<Located<String>>,
    env: Option<Located<BTreeMap<Located<String>, Located<String>>>>,
    timeout_ms: Option<Located<toml::Value>>,
    http: Option<Located<RawHttp>>,
    fixed: Option<Located<RawFixed>>,
    mcp: Option<Located<RawMcp>>,
    venue: Option<Located<String>>,
    idempotent: Option<bool>,
    /// Run-time checks (`checks.rs`); a plain value, see [`build_checks`].
    checks: Option<toml::Value>,
    /// Tags for `lt agent`'s trace requirements (`tags = ["verify"]`).
    tags: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an mcp table such as `{ command = [\"mcp-server-time\"], tool = \"get_current_time\" }`"
)]
struct RawMcp {
    command: Option<Located<Vec<Located<String>>>>,
    tool: Option<Located<String>>,
    cwd: Option<Located<String>>,
    env: Option<Located<BTreeMap<Located<String>, Located<String>>>>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an http table such as `{ url = \"http://…\" }`"
)]
struct RawHttp {
    url: Located<String>,
    headers: Option<Located<BTreeMap<String, String>>>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a fixed table: `{ ok = … }`, `{ error = \"…\" }` or `{ sequence = […] }`"
)]
struct RawFixed {
    ok: Option<Located<toml::Value>>,
    error: Option<String>,
    sequence: Option<Located<Vec<Located<RawResponse>>>>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a response: `{ ok = … }` or `{ error = \"…\" }`"
)]
struct RawResponse {
    ok: Option<Located<toml::Value>>,
    error: Option<String>,
}

/// A rule broken inside one tool table; `span: None` means the whole table.
struct ToolError {
    span: Option<Range<usize>>,
    message: String,
    help: Option<String>,
}

fn tool_error(name: &str, span: Option<Range<usize>>, what: &str, help: Option<&str>) -> ToolError {
    ToolError {
        span,
        message: format!("tool {name}: {what}"),
        help: help.map(str::to_string),
    }
}

fn build_tool(name: &str, raw: RawTool, folder: &Path) -> Result<Tool, ToolError> {
    let client = match &raw.venue {
        None => false,
        Some(v) => match v.get_ref().as_str() {
            "server" => false,
            "client" => true,
            other => {
                return Err(tool_error(
                    name,
                    v.span(),
                    &format!("`{other}` is not a venue"),
                    Some("`venue = \"client\"` hands the call to the client; leave it out (or `\"server\"`) for lt to run the tool"),
                ))
            }
        },
    };
    if client {
        return build_client(name, raw);
    }
    let given: Vec<&str> = [
        raw.command.as_ref().map(|_| "command"),
        raw.http.as_ref().map(|_| "http"),
        raw.fixed.as_ref().map(|_| "fixed"),
        raw.mcp.as_ref().map(|_| "mcp"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if given.len() != 1 {
        let found = if given.is_empty() {
            "none is given".to_string()
        } else {
            format!("found {}", given.join(" and "))
        };
        return Err(tool_error(
            name,
            None,
            &format!("give exactly one of command, http, fixed or mcp ({found})"),
            Some("`command = [\"python3\", \"tools/x.py\"]` runs a program per call; `http = { url = \"…\" }` posts to a URL; `fixed = { ok = … }` answers with a canned result; `mcp = { command = [\"mcp-server-time\"], tool = \"get_current_time\" }` calls a tool of an MCP server"),
        ));
    }
    let timeout = match &raw.timeout_ms {
        None => DEFAULT_TIMEOUT,
        Some(t) => match t.get_ref() {
            toml::Value::Integer(ms) if *ms > 0 => Duration::from_millis(ms.unsigned_abs()),
            _ => {
                return Err(tool_error(
                    name,
                    t.span(),
                    "timeout_ms must be a positive number of milliseconds",
                    Some("e.g. `timeout_ms = 5000`; leave it out for the default of 30000"),
                ))
            }
        },
    };
    if let Some(command) = raw.command {
        return build_command(name, command, raw.cwd, raw.env, timeout, folder).map(Tool::Command);
    }
    // `cwd` and `env` belong to a command table, or inside an mcp table.
    let stray = [
        ("cwd", raw.cwd.as_ref().map(Located::span)),
        ("env", raw.env.as_ref().map(Located::span)),
    ]
    .into_iter()
    .find_map(|(key, span)| span.map(|s| (key, s)));
    if let Some(mcp) = raw.mcp {
        if let Some((key, span)) = stray {
            return Err(tool_error(
                name,
                span,
                &format!("`{key}` of an MCP server goes inside the mcp table"),
                Some(&format!(
                    "e.g. `mcp = {{ command = [\"python3\", \"server.py\"], tool = \"…\", {key} = … }}`"
                )),
            ));
        }
        return build_mcp(name, mcp, timeout, folder).map(Tool::Mcp);
    }
    if let Some((key, span)) = stray {
        return Err(tool_error(
            name,
            span,
            &format!("`{key}` applies only to command tools"),
            Some(&format!("remove `{key}`")),
        ));
    }
    if let Some(http) = raw.http {
        return build_http(name, http.into_inner(), timeout).map(Tool::Http);
    }
    if let Some(t) = raw.timeout_ms {
        return Err(tool_error(
            name,
            t.span(),
            "`timeout_ms` has no effect on a fixed tool",
            Some("remove `timeout_ms`"),
        ));
    }
    match raw.fixed {
        Some(fixed) => build_fixed(name, fixed).map(Tool::Fixed),
        None => Err(tool_error(
            name,
            None,
            "give exactly one of command, http or fixed",
            None,
        )),
    }
}

/// Compiles a `checks` table (see `checks.rs`): at most the keys `input`
/// and `output`, each a TOML table (a JSON Schema object) or a boolean.
/// `at` is where the table is written, for the errors. (The table is read
/// as a plain `toml::Value`, spans inside it would not help: `Checks`
/// reports JSON pointers.)
fn build_checks(
    name: &str,
    value: toml::Value,
    at: Option<Range<usize>>,
    client: bool,
) -> Result<Checks, ToolError> {
    let fail = |what: String, help: &str| ToolError {
        span: at.clone(),
        message: format!("tool {name}: {what}"),
        help: Some(help.to_string()),
    };
    if client {
        return Err(fail(
            "`checks` applies to tools lt runs; a client-venue tool's report is checked against its declared type only".into(),
            "remove `checks`, or remove `venue = \"client\"` for lt to run the tool",
        ));
    }
    let example =
        "e.g. `checks = { input = { properties = { start = { format = \"date-time\" } } } }`";
    let toml::Value::Table(table) = value else {
        return Err(fail(
            "`checks` must be a table with `input` and/or `output`".into(),
            example,
        ));
    };
    let mut schemas: [Option<Json>; 2] = [None, None];
    for (key, value) in &table {
        let slot = match key.as_str() {
            "input" => &mut schemas[0],
            "output" => &mut schemas[1],
            other => {
                return Err(fail(
                    format!("unknown key `{other}` in `checks`, expected `input` or `output`"),
                    example,
                ))
            }
        };
        *slot = match value {
            v @ (toml::Value::Table(_) | toml::Value::Boolean(_)) => convert(v),
            _ => None,
        };
        if slot.is_none() {
            return Err(fail(
                format!("checks.{key} must be a JSON Schema written as a TOML table"),
                example,
            ));
        }
    }
    let [input, output] = schemas;
    Checks::compile(input.as_ref(), output.as_ref()).map_err(|e| {
        fail(
            format!("checks.{e}"),
            "the checks are JSON Schema (draft 2020-12): `format`, `minimum`, `maxLength`, `pattern`, …",
        )
    })
}

/// A `venue = "client"` table: no executor of lt's own; only `timeout_ms`,
/// `effects` and `idempotent` beside it.
fn build_client(name: &str, raw: RawTool) -> Result<Tool, ToolError> {
    for (key, span) in [
        ("command", raw.command.as_ref().map(Located::span)),
        ("http", raw.http.as_ref().map(Located::span)),
        ("fixed", raw.fixed.as_ref().map(Located::span)),
        ("mcp", raw.mcp.as_ref().map(Located::span)),
        ("cwd", raw.cwd.as_ref().map(Located::span)),
        ("env", raw.env.as_ref().map(Located::span)),
    ] {
        if let Some(span) = span {
            return Err(tool_error(
                name,
                span,
                &format!("a client-venue tool is run by the client; `{key}` does not apply"),
                Some(&format!(
                    "remove `{key}`, or remove `venue = \"client\"` for lt to run the tool"
                )),
            ));
        }
    }
    match &raw.timeout_ms {
        None => Ok(Tool::Client(None)),
        Some(t) => match t.get_ref() {
            toml::Value::Integer(ms) if *ms > 0 => {
                Ok(Tool::Client(Some(Duration::from_millis(ms.unsigned_abs()))))
            }
            _ => Err(tool_error(
                name,
                t.span(),
                "timeout_ms must be a positive number of milliseconds",
                Some("how long to wait for the client's report, e.g. `timeout_ms = 60000`; leave it out to wait until the run's own deadline"),
            )),
        },
    }
}

/// Checks a command table the way `exec` would use it, so that a mistake
/// stops lt at load time rather than failing a call in the middle of a run.
fn build_command(
    name: &str,
    command: Located<Vec<Located<String>>>,
    cwd: Option<Located<String>>,
    env: Option<Located<BTreeMap<Located<String>, Located<String>>>>,
    timeout: Duration,
    folder: &Path,
) -> Result<CommandTool, ToolError> {
    let err = |span: Option<Range<usize>>, what: String, help: Option<String>| ToolError {
        span,
        message: format!("tool {name}: {what}"),
        help,
    };
    let command_span = command.span();
    let argv = command.into_inner();
    let Some(first) = argv.first() else {
        return Err(err(
            command_span,
            "`command` is empty".to_string(),
            Some("give the program and its arguments, e.g. `command = [\"python3\", \"tools/x.py\"]`".to_string()),
        ));
    };
    if first.get_ref().is_empty() {
        return Err(err(
            first.span(),
            "the program name (first element of `command`) is empty".to_string(),
            None,
        ));
    }
    for (i, arg) in argv.iter().enumerate() {
        if arg.get_ref().contains('\0') {
            let which = if i == 0 {
                "the program name (first element of `command`)".to_string()
            } else {
                format!("argument {i} of `command`")
            };
            return Err(err(
                arg.span(),
                format!("{which} contains a NUL byte"),
                Some(NUL_HELP.to_string()),
            ));
        }
    }
    let mut vars = BTreeMap::new();
    for (key, value) in env.map(Located::into_inner).unwrap_or_default() {
        let problem = if key.get_ref().is_empty() {
            Some("is empty")
        } else if key.get_ref().contains('=') {
            Some("contains `=`")
        } else if key.get_ref().contains('\0') {
            Some("contains a NUL byte")
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(err(
                key.span(),
                format!("the environment variable name {:?} {problem}", key.get_ref()),
                Some("a variable name is a non-empty string without `=` or NUL bytes, e.g. `env = { SUPPORT_DB = \"support.db\" }`".to_string()),
            ));
        }
        if value.get_ref().contains('\0') {
            return Err(err(
                value.span(),
                format!(
                    "the value of environment variable {} contains a NUL byte",
                    key.get_ref()
                ),
                Some(NUL_HELP.to_string()),
            ));
        }
        vars.insert(key.into_inner(), value.into_inner());
    }
    let (cwd, cwd_span) = match cwd {
        Some(c) => {
            let span = c.span();
            if c.get_ref().contains('\0') {
                return Err(err(
                    span,
                    "`cwd` contains a NUL byte".to_string(),
                    Some(NUL_HELP.to_string()),
                ));
            }
            (normalize(&folder.join(c.get_ref())), span)
        }
        None => (folder.to_path_buf(), command_span.clone()),
    };
    if let Some(problem) = dir_problem(&cwd) {
        return Err(err(
            cwd_span,
            format!("working directory {} {problem}", cwd.display()),
            Some(format!(
                "`cwd` is relative to the folder of tools.toml ({}); leave it out to run there",
                folder.display()
            )),
        ));
    }
    let written = first.get_ref().clone();
    let program = if written.contains('/') {
        let program = normalize(&folder.join(&written));
        if let Some(problem) = program_problem(&program) {
            let shown = if Path::new(&written).is_relative() {
                format!("`{written}` ({})", program.display())
            } else {
                format!("`{written}`")
            };
            let help = if problem == NOT_EXECUTABLE {
                format!(
                    "make it executable (`chmod +x {}`) or name its interpreter first, e.g. `command = [\"python3\", \"{written}\"]`",
                    program.display()
                )
            } else if Path::new(&written).is_relative() {
                format!(
                    "a relative program path is resolved against the folder of tools.toml ({}), not against `cwd`",
                    folder.display()
                )
            } else {
                "check the path; a bare name (`python3`) is looked up on PATH".to_string()
            };
            return Err(err(
                first.span(),
                format!("the program {shown} {problem}"),
                Some(help),
            ));
        }
        program
    } else {
        // Looked up on PATH when started; std uses the tool's own PATH if
        // `env` sets one.
        let path = vars
            .get("PATH")
            .map(std::ffi::OsString::from)
            .or_else(|| std::env::var_os("PATH"));
        if find_on_path(&written, path.as_deref()).is_none() {
            return Err(err(
                first.span(),
                format!("the program `{written}` was not found on PATH"),
                Some(format!(
                    "check the name, or give the program's path: a `command[0]` containing `/`, such as `./tools/x.sh`, is resolved against the folder of tools.toml ({})",
                    folder.display()
                )),
            ));
        }
        PathBuf::from(written)
    };
    let written: Vec<String> = argv.into_iter().map(Located::into_inner).collect();
    Ok(CommandTool::new(written, program, cwd, vars, timeout))
}

/// Checks an mcp table: its server as a command table is checked (program,
/// `cwd`, `env`), and `tool` names the tool on the server.
fn build_mcp(
    name: &str,
    raw: Located<RawMcp>,
    timeout: Duration,
    folder: &Path,
) -> Result<McpTool, ToolError> {
    let span = raw.span();
    let raw = raw.into_inner();
    let Some(command) = raw.command else {
        return Err(tool_error(
            name,
            span,
            "the mcp table has no `command`: the server's program and its arguments",
            Some("e.g. `mcp = { command = [\"python3\", \"server.py\"], tool = \"get_current_time\" }`"),
        ));
    };
    let tool = match raw.tool {
        None => {
            return Err(tool_error(
                name,
                span,
                "the mcp table has no `tool`: the name of the tool on the server",
                Some("e.g. `tool = \"get_current_time\"`; `lt tools import --mcp -- COMMAND…` lists a server's tools"),
            ))
        }
        Some(t) if t.get_ref().trim().is_empty() => {
            return Err(tool_error(
                name,
                t.span(),
                "`tool` is empty: give the name of the tool on the server",
                None,
            ))
        }
        Some(t) if t.get_ref().contains('\0') => {
            return Err(tool_error(
                name,
                t.span(),
                "`tool` contains a NUL byte",
                Some("a tool's name on an MCP server holds no NUL byte; remove it"),
            ))
        }
        Some(t) => t.into_inner(),
    };
    let server = build_command(name, command, raw.cwd, raw.env, timeout, folder)?;
    let (written, program, args, cwd, env) = server.into_parts();
    Ok(McpTool::new(
        &written, program, args, cwd, env, tool, timeout,
    ))
}

const NUL_HELP: &str = "a NUL byte cannot be passed to a program; remove it";

const NOT_EXECUTABLE: &str = "is not executable";

/// Why `path` cannot be started as a program, if it cannot.
fn program_problem(path: &Path) -> Option<&'static str> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Some("is a directory"),
        Ok(m) if !is_executable(&m) => Some(NOT_EXECUTABLE),
        Ok(_) => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some("does not exist"),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            Some("cannot be reached (permission denied)")
        }
        Err(_) => Some("cannot be read"),
    }
}

fn is_executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.is_file() && m.permissions().mode() & 0o111 != 0
}

/// Where a bare program name would be found on `path` (a `PATH` value;
/// unset: the usual `/bin:/usr/bin` of `execvp`): the first directory
/// holding an executable file of that name.
fn find_on_path(program: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    let path = path.unwrap_or(std::ffi::OsStr::new("/bin:/usr/bin"));
    std::env::split_paths(path)
        .map(|dir| {
            // An empty entry means the current directory.
            let dir = if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir
            };
            dir.join(program)
        })
        .find(|candidate| std::fs::metadata(candidate).is_ok_and(|m| is_executable(&m)))
}

/// `path` with its `.` components dropped (lexically: `..` is kept, since
/// resolving it without the file system would be wrong across symlinks).
fn normalize(path: &Path) -> PathBuf {
    path.components().collect()
}

fn build_http(name: &str, raw: RawHttp, timeout: Duration) -> Result<HttpTool, ToolError> {
    let url_span = raw.url.span();
    let url = reqwest::Url::parse(raw.url.get_ref()).map_err(|e| {
        tool_error(
            name,
            url_span.clone(),
            &format!("`{}` is not a URL: {e}", raw.url.get_ref()),
            Some("give an absolute URL such as `http://127.0.0.1:8080/refund`"),
        )
    })?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(tool_error(
            name,
            url_span,
            &format!(
                "the URL scheme must be http or https, not `{}`",
                url.scheme()
            ),
            None,
        ));
    }
    let mut headers = HeaderMap::new();
    if let Some(h) = raw.headers {
        let span = h.span();
        for (k, v) in h.into_inner() {
            let key = HeaderName::from_bytes(k.as_bytes()).map_err(|_| {
                tool_error(
                    name,
                    span.clone(),
                    &format!("`{k}` is not a valid HTTP header name"),
                    None,
                )
            })?;
            let value = HeaderValue::from_str(&v).map_err(|_| {
                tool_error(
                    name,
                    span.clone(),
                    &format!("the value of header `{k}` is not a valid HTTP header value"),
                    Some("header values must be visible ASCII without line breaks"),
                )
            })?;
            headers.insert(key, value);
        }
    }
    Ok(HttpTool::new(url, headers, timeout))
}

fn build_fixed(name: &str, raw: Located<RawFixed>) -> Result<FixedTool, ToolError> {
    let span = raw.span();
    let raw = raw.into_inner();
    let exactly_one = || {
        tool_error(
            name,
            span.clone(),
            "a fixed table takes exactly one of ok, error or sequence",
            Some(
                "e.g. `fixed = { ok = { sent = true } }` or `fixed = { error = \"mailbox full\" }`",
            ),
        )
    };
    match (raw.ok, raw.error, raw.sequence) {
        (Some(ok), None, None) => Ok(FixedTool::always(Response::Ok(to_json(name, &ok)?))),
        (None, Some(error), None) => Ok(FixedTool::always(Response::Error(error))),
        (None, None, Some(seq)) => {
            let seq_span = seq.span();
            let items = seq.into_inner();
            if items.is_empty() {
                return Err(tool_error(
                    name,
                    seq_span,
                    "a fixed sequence needs at least one response",
                    Some("e.g. `sequence = [ { ok = 1 }, { error = \"boom\" } ]`"),
                ));
            }
            let mut responses = Vec::with_capacity(items.len());
            for item in items {
                let item_span = item.span();
                responses.push(match item.into_inner() {
                    RawResponse {
                        ok: Some(ok),
                        error: None,
                    } => Response::Ok(to_json(name, &ok)?),
                    RawResponse {
                        ok: None,
                        error: Some(e),
                    } => Response::Error(e),
                    RawResponse { .. } => {
                        return Err(tool_error(
                            name,
                            item_span,
                            "each response of a sequence takes exactly one of ok or error",
                            Some("e.g. `{ ok = 1 }` or `{ error = \"boom\" }`"),
                        ))
                    }
                });
            }
            Ok(FixedTool::sequence(responses))
        }
        _ => Err(exactly_one()),
    }
}

/// TOML → JSON: tables → objects, arrays → arrays, datetimes → their RFC
/// 3339 text. A float that JSON cannot hold (nan, inf) is an error.
fn to_json(name: &str, value: &Located<toml::Value>) -> Result<Json, ToolError> {
    convert(value.get_ref()).ok_or_else(|| {
        tool_error(
            name,
            value.span(),
            "the fixed result contains nan or inf, which JSON cannot represent",
            None,
        )
    })
}

/// TOML → JSON as for `fixed` results (and a profile's `dry_run_result`):
/// tables → objects, arrays → arrays, datetimes → their RFC 3339 text.
/// `None` when a float is nan or infinite, which JSON cannot hold.
pub(crate) fn convert(value: &toml::Value) -> Option<Json> {
    Some(match value {
        toml::Value::String(s) => Json::String(s.clone()),
        toml::Value::Integer(i) => Json::from(*i),
        toml::Value::Float(f) => Json::Number(serde_json::Number::from_f64(*f)?),
        toml::Value::Boolean(b) => Json::Bool(*b),
        toml::Value::Datetime(d) => Json::String(d.to_string()),
        toml::Value::Array(items) => Json::Array(items.iter().map(convert).collect::<Option<_>>()?),
        toml::Value::Table(t) => Json::Object(
            t.iter()
                .map(|(k, v)| Some((k.clone(), convert(v)?)))
                .collect::<Option<_>>()?,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::line_column;

    #[test]
    fn line_and_column_are_one_based_and_count_characters() {
        let text = "a\nλb\nc";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 2), (2, 1));
        assert_eq!(line_column(text, 4), (2, 2));
        assert_eq!(line_column(text, 3), (2, 1)); // inside λ: snaps back
        assert_eq!(line_column(text, 99), (3, 2));
    }
}
