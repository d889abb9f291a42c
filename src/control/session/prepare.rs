//! Before a session runs: its executors (tools.toml loaded and matched to
//! the program), its profile, its log, its client channel. Each step fails
//! with a typed [`StartFailure`] naming the file and position at fault.

use super::{ClientPort, Executors, LogTarget, ProfileSource};
use crate::control::client::{ClientChannel, StdoutHandoff};
use crate::control::profile::Profile;
use crate::control::report::{Stage, StartErrorKind, StartFailure};
use crate::exec::{ExecutorHost, Registry, Venue};
use crate::ir::{Ir, NodeKind};
use crate::log::{Discard, EventSink, EventStore, JsonlFile};
use crate::runtime::host::Host;
use crate::source::SourceFile;
use crate::types::ToolSig;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

/// The tools with at least one `exec` site, in declaration order.
pub fn called_tools(ir: &Ir) -> Vec<&str> {
    let mut used = vec![false; ir.tools.len()];
    for n in &ir.nodes {
        if let NodeKind::Exec { tool, .. } = n.kind {
            if let Some(u) = used.get_mut(tool as usize) {
                *u = true;
            }
        }
    }
    ir.tools
        .iter()
        .zip(used)
        .filter(|(_, u)| *u)
        .map(|(t, _)| &*t.name)
        .collect()
}

/// The executors, ready: the host the control plane dispatches to, the
/// tools' venues and idempotence, the registry (when there is one), its
/// bytes (hashed into `session_started`), and the host to shut down.
pub(super) struct Prepared<'a> {
    pub(super) host: Box<dyn Host + 'a>,
    pub(super) venues: BTreeMap<String, Venue>,
    pub(super) idempotent: BTreeSet<String>,
    pub(super) registry_bytes: Vec<u8>,
    /// The executor host (its registry), when there is one.
    pub(super) executor: Option<ExecutorHost>,
    /// The session started `executor` and shuts it down when it ends (a
    /// shared host is the caller's to shut down).
    pub(super) owns: bool,
    /// The executors file's text and name, for
    /// [`ProfileSource::FromExecutors`].
    pub(super) profile_text: Option<(String, String)>,
}

/// Loads `executors` and checks them against the program: every called
/// tool has an executor, and no declaration states fewer effects than
/// tools.toml gives the tool.
pub(super) fn registry(
    executors: &Executors,
    file: &SourceFile,
    ir: &Ir,
    called: &[&str],
) -> Result<Option<Registry>, StartFailure> {
    let (registry, path) = match executors {
        Executors::File(path) => match Registry::load(Path::new(path)) {
            Ok(r) => (Some(r), Some(path.as_str())),
            Err(e) => return Err(StartFailure::config(&e)),
        },
        Executors::None => (None, None),
        Executors::Shared { .. } | Executors::Custom { .. } => return Ok(None),
    };
    let missing: Vec<&str> = match &registry {
        Some(r) => r.missing(called.iter().copied()),
        None => called.to_vec(),
    };
    if !missing.is_empty() {
        return Err(missing_failure(file, ir, &missing, path));
    }
    if let Some(r) = &registry {
        if let Some(f) = understated_effects(file, &ir.tools, called, r, path) {
            return Err(f);
        }
    }
    Ok(registry)
}

/// The executor host and the tools' traits, on `handle`'s runtime.
pub(super) fn executors<'a>(
    executors: Executors<'a>,
    registry: Option<Registry>,
    handle: &tokio::runtime::Handle,
    cancel: &crate::runtime::cancel::Cancel,
) -> Result<Prepared<'a>, StartFailure> {
    match executors {
        Executors::Custom { host, venues } => Ok(Prepared {
            host,
            venues,
            idempotent: BTreeSet::new(),
            registry_bytes: Vec::new(),
            executor: None,
            owns: false,
            profile_text: None,
        }),
        Executors::Shared {
            host,
            registry_bytes,
        } => {
            let (venues, idempotent) = host.registry().tool_traits();
            // Cancelling this session stops its own tools, not those of
            // the other sessions sharing the host.
            let host = host.session_scoped().with_cancel(cancel.clone());
            Ok(Prepared {
                host: Box::new(host.clone()),
                venues,
                idempotent,
                registry_bytes,
                executor: Some(host),
                owns: false,
                profile_text: None,
            })
        }
        Executors::File(ref path) => {
            let bytes = crate::exec::read_config_bytes(Path::new(path)).map_err(|e| {
                StartFailure::new(
                    Stage::Executors,
                    StartErrorKind::Usage,
                    format!("cannot read {path}: {e}"),
                )
            })?;
            let registry = registry.ok_or_else(|| {
                StartFailure::new(Stage::Executors, StartErrorKind::Usage, "no registry")
            })?;
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let mut prepared = with_registry(registry, bytes, handle, cancel);
            prepared.profile_text = Some((text, path.clone()));
            Ok(prepared)
        }
        Executors::None => {
            let registry = match registry {
                Some(r) => r,
                None => Registry::from_str("", Path::new("."), "<no executors>")
                    .map_err(|e| StartFailure::config(&e))?,
            };
            Ok(with_registry(registry, Vec::new(), handle, cancel))
        }
    }
}

fn with_registry<'a>(
    registry: Registry,
    bytes: Vec<u8>,
    handle: &tokio::runtime::Handle,
    cancel: &crate::runtime::cancel::Cancel,
) -> Prepared<'a> {
    let (venues, idempotent) = registry.tool_traits();
    let host = ExecutorHost::new(registry, handle.clone()).with_cancel(cancel.clone());
    Prepared {
        host: Box::new(host.clone()),
        venues,
        idempotent,
        registry_bytes: bytes,
        executor: Some(host),
        owns: true,
        profile_text: None,
    }
}

/// The effective profile: named `default` when it has no name.
/// `executors_text`: the executors file's text and name, when there is one.
pub(super) fn profile(
    source: &ProfileSource,
    executors_text: &Option<(String, String)>,
) -> Result<Profile, StartFailure> {
    let profile = match source {
        ProfileSource::Given(p) => p.clone(),
        ProfileSource::Default => Profile::default(),
        ProfileSource::File(path) => {
            Profile::load(Path::new(path)).map_err(|e| StartFailure::config(&e))?
        }
        ProfileSource::FromExecutors => match executors_text {
            Some((text, path)) => Profile::from_toml(text, path)
                .map_err(|e| StartFailure::config(&e))?
                .unwrap_or_default(),
            None => Profile::default(),
        },
    };
    Ok(if profile.name.is_empty() {
        Profile {
            name: "default".to_string(),
            ..profile
        }
    } else {
        profile
    })
}

/// Opens the session's log: refuses a file that is one of `inputs`.
pub(super) fn open_log<'a>(
    target: LogTarget<'a>,
    inputs: &[String],
    id: &str,
) -> Result<Box<dyn EventSink + 'a>, StartFailure> {
    match target {
        LogTarget::None => Ok(Box::new(Discard)),
        LogTarget::Sink(sink) => Ok(sink),
        LogTarget::Store(store) => store
            .create(id)
            .map(|s| s as Box<dyn EventSink + 'a>)
            .map_err(|e| {
                StartFailure::new(
                    Stage::Log,
                    StartErrorKind::Usage,
                    format!("cannot create the session's event log: {e}"),
                )
            }),
        LogTarget::File(path) => {
            if let Some(input) = inputs.iter().find(|i| super::events::same_file(&path, i)) {
                return Err(StartFailure::new(
                    Stage::Log,
                    StartErrorKind::Usage,
                    format!("--log {path} would overwrite {input}, an input of this run"),
                )
                .with_help("write the log to a file of its own, e.g. `--log session.jsonl`"));
            }
            JsonlFile::new(&path)
                .create(id)
                .map(|s| s as Box<dyn EventSink + 'a>)
                .map_err(|e| {
                    let e = match e {
                        crate::log::StoreError::Io(io) => io.to_string(),
                        other => other.to_string(),
                    };
                    StartFailure::new(
                        Stage::Log,
                        StartErrorKind::Usage,
                        format!("cannot create the event log {path}: {e}"),
                    )
                })
        }
    }
}

/// The client channel to open once the log is open: none, the process's
/// stdio (with each client tool's timeout, or speaking another wire), or
/// the caller's channel.
pub(super) enum ClientPlan {
    None,
    Stdio(BTreeMap<String, Duration>, StdoutHandoff),
    StdioWire(crate::control::client::Wire, StdoutHandoff),
    Channel(ClientChannel),
}

impl ClientPlan {
    /// Opens the channel (a stdio channel starts its reader and writer
    /// threads now).
    pub(super) fn open(self) -> Option<ClientChannel> {
        match self {
            ClientPlan::None => None,
            ClientPlan::Stdio(timeouts, out) => {
                Some(ClientChannel::stdio(&out).with_timeouts(timeouts))
            }
            ClientPlan::StdioWire(wire, out) => Some(ClientChannel::stdio(&out).with_wire(wire)),
            ClientPlan::Channel(c) => Some(c),
        }
    }
}

/// Which client channel the session needs, checked before anything opens:
/// a stdio channel when the program calls a client-venue tool of the
/// registry, refused when stdin carried the program or the log is stdout.
pub(super) fn client(
    port: ClientPort,
    file: &SourceFile,
    called: &[&str],
    registry: Option<&Registry>,
    log: Option<&str>,
) -> Result<ClientPlan, StartFailure> {
    match port {
        ClientPort::None => Ok(ClientPlan::None),
        ClientPort::Channel(c) => Ok(ClientPlan::Channel(c)),
        ClientPort::StdioAlways { wire, stdout } => Ok(ClientPlan::StdioWire(wire, stdout)),
        ClientPort::Stdio {
            program_on_stdin,
            stdout,
        } => {
            let Some(registry) = registry else {
                return Ok(ClientPlan::None);
            };
            let Some(first) = called.iter().find(|t| registry.venue(t) == Venue::Client) else {
                return Ok(ClientPlan::None);
            };
            if program_on_stdin {
                return Err(StartFailure::new(
                    Stage::Input,
                    StartErrorKind::Usage,
                    format!(
                        "the program was read from stdin, but it calls {first}, a client-venue tool whose outcome the client reports on stdin"
                    ),
                )
                .at(file.name.clone(), None, None)
                .with_help("pass the program as a file: stdin carries the client's tool_result lines"));
            }
            if let Some(log) = log {
                if super::events::same_file(log, "/dev/stdout") {
                    return Err(StartFailure::new(
                        Stage::Log,
                        StartErrorKind::Usage,
                        format!("--log {log} is standard output, which carries the client's tool_call lines"),
                    )
                    .with_help("write the log to a file of its own, e.g. `--log session.jsonl`"));
                }
            }
            Ok(ClientPlan::Stdio(
                called
                    .iter()
                    .filter_map(|t| registry.client_timeout(t).map(|d| (t.to_string(), d)))
                    .collect(),
                stdout,
            ))
        }
    }
}

/// The called tools whose declaration in the program omits an effect that
/// tools.toml says they perform: the policy would be decided on a lie. All
/// of them in one failure (in the order of their declarations), at the
/// first: one round of fixes, not one per run.
pub fn understated_effects(
    file: &SourceFile,
    tools: &[ToolSig],
    called: &[&str],
    registry: &Registry,
    executors: Option<&str>,
) -> Option<StartFailure> {
    let executors = executors.unwrap_or("tools.toml");
    // (declaration, its real effects, those the declaration omits)
    let mut understated: Vec<(&ToolSig, &[String], Vec<&str>)> = Vec::new();
    for name in called {
        let Some(real) = registry.declared_effects(name) else {
            continue;
        };
        let Some(sig) = tools.iter().find(|t| &*t.name == *name) else {
            continue;
        };
        let missing: Vec<&str> = real
            .iter()
            .map(String::as_str)
            .filter(|l| !sig.effects.labels().any(|d| d == *l))
            .collect();
        if !missing.is_empty() {
            understated.push((sig, real, missing));
        }
    }
    understated.sort_by_key(|(sig, ..)| sig.span.start);
    let (first, ..) = understated.first()?;
    let lc = file.line_col(first.span.start);
    let fix = |sig: &ToolSig, real: &[String]| {
        format!("`tool {}: … -{{{}}}-> …;`", sig.name, real.join(", "))
    };
    let (message, help) = match understated.as_slice() {
        [(sig, real, missing)] => (
            format!(
                "the program declares tool {} with effects {}, but {executors} says it performs {}",
                sig.name,
                sig.effects,
                missing.join(", ")
            ),
            format!("declare the tool with its real effects: {}", fix(sig, real)),
        ),
        all => (
            format!(
                "the program declares {} tools with fewer effects than {executors} says they perform: {}",
                all.len(),
                all.iter()
                    .map(|(sig, _, missing)| format!(
                        "tool {} (line {}) with effects {}, but it performs {}",
                        sig.name,
                        file.line_col(sig.span.start).line,
                        sig.effects,
                        missing.join(", ")
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            format!(
                "declare each tool with its real effects: {}",
                all.iter()
                    .map(|(sig, real, _)| fix(sig, real))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    };
    Some(
        StartFailure::new(Stage::Executors, StartErrorKind::Effects, message)
            .at(file.name.clone(), Some(lc.line), Some(lc.column))
            .with_help(help),
    )
}

/// Tools the program calls without an executor, pointing at the first call
/// of the first such tool.
fn missing_failure(
    file: &SourceFile,
    ir: &Ir,
    missing: &[&str],
    executors: Option<&str>,
) -> StartFailure {
    let list: Vec<String> = missing.iter().map(|t| format!("`{t}`")).collect();
    let first_call = ir.nodes.iter().find_map(|n| match n.kind {
        NodeKind::Exec { tool, .. } => ir
            .tools
            .get(tool as usize)
            .filter(|t| *t.name == *missing[0])
            .map(|_| n.span),
        _ => None,
    });
    let (message, help) = match executors {
        Some(path) => (
            format!(
                "{path} has no executor for {} {}, which the program calls",
                if missing.len() == 1 { "tool" } else { "tools" },
                list.join(", ")
            ),
            format!(
                "add a table per tool to {path}, e.g. `[tools.{}]` with `command = [\"python3\", \"tools/{}.py\"]` (see docs/executors.md)",
                missing[0], missing[0]
            ),
        ),
        None => (
            format!("the program calls {} but no executors were given", list.join(", ")),
            format!(
                "pass --executors tools.toml with a `[tools.{}]` table (see docs/executors.md)",
                missing[0]
            ),
        ),
    };
    let at = first_call.map(|span| file.line_col(span.start));
    StartFailure::new(Stage::Executors, StartErrorKind::MissingExecutor, message)
        .at(
            file.name.clone(),
            at.map(|lc| lc.line),
            at.map(|lc| lc.column),
        )
        .with_help(help)
}
