//! Executors: how a tool call reaches the world.
//!
//! An *executor* performs the calls of one tool. A program declares a tool's
//! name and types; `tools.toml`, beside the program, says what runs it. Each
//! tool gets one table with exactly one of four executors:
//!
//! ```toml
//! [tools.lookup_account]
//! command = ["python3", "tools/lookup.py"]   # a subprocess per call
//! cwd = "."                                  # default: the folder of tools.toml
//! env = { SUPPORT_DB = "support.db" }         # added to the inherited environment
//! timeout_ms = 5000                          # default 30000
//!
//! [tools.issue_refund]
//! http = { url = "http://127.0.0.1:8080/refund", headers = { Authorization = "…" } }
//!
//! [tools.send_reply]
//! fixed = { ok = { sent = true } }   # or { error = "…" }, or { sequence = [ … ] }
//!
//! [tools.current_time]
//! mcp = { command = ["mcp-server-time"], tool = "get_current_time" }   # cwd, env inside
//! ```
//!
//! Relative paths resolve from the folder holding `tools.toml`: it is the
//! default working directory, `cwd` is relative to it, and a relative
//! `command[0]` containing `/` (`./tools/x.sh`) is made absolute against it
//! (`.` components dropped: `/cfg/tools/x.sh`, not `/cfg/./tools/x.sh`).
//! [`Registry`] is the loaded file (`config.rs` validates it, pointing at
//! `file:line:column`); [`ExecutorHost`] is the [`Host`] that runs calls
//! through it. `docs/executors.md` is the user-facing reference.
//!
//! Beside them, [`in_process`] is a host whose tools are closures (the Python
//! package's functions), handed to a session as `Executors::Custom`.
//!
//! Every way a call can go wrong is an [`Outcome`] error, never a panic:
//!
//! | what happened | kind | message |
//! | --- | --- | --- |
//! | exit status N ≠ 0 | `Failed` | `tool T failed (exit status N): <stderr>` |
//! | HTTP status not 2xx | `Failed` | `tool T failed (HTTP 500 Internal Server Error): <body>` |
//! | `fixed` error | `Failed` | `tool T failed: <msg>` |
//! | `fixed` sequence used up | `Failed` | `tool T: fixed sequence exhausted after N calls` |
//! | killed by a signal | `Crashed` | `tool T crashed (signal 11, SIGSEGV): <stderr>` |
//! | past its timeout | `TimedOut` | `tool T timed out after 500 ms` |
//! | stdout / body not JSON | `BadOutput` | `tool T returned output that is not JSON: <error> (output starts: "…")` |
//! | stdout / body over 64 MiB | `BadOutput` | `tool T returned output larger than 64 MiB; …` |
//! | program cannot start (found at load time, gone or broken since) | `Unavailable` | `tool T could not be started: /cfg/tools/x.sh: No such file or directory (os error 2)` |
//! | connection refused | `Unavailable` | `tool T could not be reached at <url>: …` |
//! | no table for the tool | `Unavailable` | `tool T has no executor in tools.toml` |
//! | MCP `isError: true` | `Failed` | `tool T failed: <the server's text>` |
//! | MCP JSON-RPC error | `Failed` | `tool T failed (MCP error -32602: <message>)` |
//! | MCP server died during the call | `Crashed` | ``tool T: the MCP server `…` exited (exit status 7) during the call`` (its stderr in [`ToolFailure::stderr`]) |
//! | MCP call past its timeout | `TimedOut` | ``tool T timed out after 500 ms (MCP server `…`)`` |
//! | MCP server cannot start, exits or refuses before `initialize` is answered | `Unavailable` | ``tool T could not be started: the MCP server `…` exited (exit status 3) before it answered `initialize`; stderr: …`` |
//! | MCP server does not answer `initialize` in time | `TimedOut` | ``tool T timed out after 500 ms: the MCP server `…` did not answer `initialize`; stderr: …`` |
//! | MCP answer that is not a tool result | `BadOutput` | ``tool T: the MCP server `…` answered tools/call with a list, not a result object`` |
//! | MCP tool called with a non-record argument | `Unavailable` | `tool T: an MCP tool takes a record argument (a JSON object), not a list; the call was not sent` |
//!
//! Empty stdout (or an empty 2xx body), whitespace aside, is the result
//! `null`: a tool returning `Unit` may print nothing. Output may be nested
//! to any depth (no recursion limit; the stack grows as needed).
//!
//! `tools.toml` is checked whole when it is loaded, before anything runs:
//! programs exist and are executable (bare names are looked up on `PATH`),
//! working directories are directories, environment names and all strings
//! are valid for `exec`. A mistake is a [`ConfigError`], not a failure in the
//! middle of a run after earlier tools have acted.
//!
//! Each command tool runs in a process group of its own, killed whole when
//! the call ends (timeout, overflow, exit, or the call dropped). An MCP
//! server (`mcp/`) is one process per session per distinct server, in a
//! group of its own too, kept across calls and ended by
//! [`ExecutorHost::shutdown`] (or killed when the host is dropped). Since a
//! terminal's Ctrl-C then no longer reaches the tools, a session's
//! [`Cancel`] token kills them ([`ExecutorHost::with_cancel`]), and
//! [`abandon_on_signals`] makes SIGINT, SIGTERM and SIGHUP sent to lt
//! trip it before lt exits.

mod checks;
mod command;
mod config;
mod fixed;
pub(crate) mod http;
pub mod in_process;
mod located;
mod mcp;
mod text;

pub use command::{EXIT_GRACE, MAX_OUTPUT_BYTES, STDERR_KEEP_BYTES};
pub(crate) use config::convert as toml_to_json;
pub use config::{
    read_config_bytes, read_config_text, ConfigError, Registry, Venue, DEFAULT_TIMEOUT,
    MAX_CONFIG_BYTES,
};
pub use mcp::{list_tools, IDEMPOTENCY_META_KEY, PING_GRACE, SHUTDOWN_GRACE};
pub(crate) use text::check_shape;
pub use text::{MAX_OUTPUT_DEPTH, MAX_OUTPUT_VALUES};

use crate::runtime::cancel::Cancel;
use crate::runtime::host::{BatchEvent, CallRequest, FailureKind, Host, Outcome, ToolFailure};
use config::Tool;
use serde_json::Value as Json;
use std::sync::Arc;
use std::time::Duration;

/// The [`Host`] that performs calls with the executors of a [`Registry`].
///
/// The interpreter runs on a plain thread and calls [`Host::call`], which
/// spawns the executor's future on `handle`'s runtime and blocks the calling
/// thread until the outcome comes back. The runtime must be a
/// *multi-thread* one: its worker threads drive the processes, sockets and
/// timers (a current-thread runtime drives nothing unless some thread is
/// inside its `block_on`, and a call would wait forever). Call it from a
/// thread of your own or from `spawn_blocking`, not from an async task, which
/// it would block. If the runtime shuts down during a call, the call fails
/// as `Unavailable` (and the tool's process group is killed); it never
/// panics.
///
/// Cloning is cheap and shares the registry (and so the positions of
/// `fixed` sequences) and the HTTP client.
#[derive(Clone, Debug)]
pub struct ExecutorHost {
    registry: Arc<Registry>,
    handle: tokio::runtime::Handle,
    /// One client for every `http` tool (its connection pool is shared),
    /// built on the first `http` call: building it (TLS roots, connector)
    /// is a large part of a trivial run's start-up. `Err`: it could not be
    /// built; every `http` call reports why.
    client: Arc<std::sync::OnceLock<Result<reqwest::Client, String>>>,
    /// The session's MCP servers (one process per distinct server; killed
    /// when the last clone of the host is dropped).
    mcp: Arc<mcp::Servers>,
    /// The process groups of this host's running tools and servers.
    groups: Arc<command::ToolGroups>,
    /// The session's cancellation: a call waiting when it trips fails as
    /// `Unavailable` at once (its tool's group killed).
    cancel: Option<Cancel>,
}

impl ExecutorHost {
    /// A host running `registry`'s executors on `handle`'s runtime (which
    /// must be multi-thread; see the type's documentation).
    pub fn new(registry: Registry, handle: tokio::runtime::Handle) -> Self {
        let groups = Arc::new(command::ToolGroups::default());
        ExecutorHost {
            registry: Arc::new(registry),
            handle,
            client: Arc::default(),
            mcp: Arc::new(mcp::Servers::new(Arc::clone(&groups))),
            groups,
            cancel: None,
        }
    }

    /// Stops this host's tools when `cancel` trips: every running command
    /// tool and MCP server has its process group killed (and any started
    /// later is killed at once; the count of those running is what
    /// [`Cancel::cancel`] returns), and a call waiting for its outcome
    /// fails as `Unavailable` (`the session was cancelled`).
    pub fn with_cancel(mut self, cancel: Cancel) -> Self {
        let groups = Arc::clone(&self.groups);
        cancel.on_cancel(move || groups.stop_all());
        cancel.track_starts();
        self.cancel = Some(cancel);
        self
    }

    /// This host for one session among many sharing it (`lt serve`, `lt
    /// agent`): command tools it starts from now on are in process groups
    /// of its own, so that [`ExecutorHost::with_cancel`] on it stops only
    /// them (the shared MCP servers are left running for the others).
    pub fn session_scoped(mut self) -> Self {
        self.groups = Arc::new(command::ToolGroups::default());
        self
    }

    /// Kills the process group of every running tool and MCP server of this
    /// host, and of any started later; the number running. For a front end
    /// that stops the process (a signal).
    pub fn stop_tools(&self) -> usize {
        self.groups.stop_all()
    }

    /// The runtime the executors run on.
    pub fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }

    /// Ends the session's MCP servers gracefully: each has its stdin closed
    /// and [`SHUTDOWN_GRACE`] to exit, all at once, before its process group
    /// is killed; no server starts after this (a later call of an MCP tool
    /// fails as `Unavailable`). Blocks until they are gone, at most about
    /// [`SHUTDOWN_GRACE`] plus a second. Call it from outside the runtime
    /// (the thread that runs the program), when the program has ended.
    /// Idempotent; without it the servers are killed, without grace, when
    /// the last clone of the host is dropped.
    pub fn shutdown(&self) {
        // A current-thread runtime (a program that calls no tool) runs no
        // task outside its `block_on`, so none can have started a server,
        // and a shutdown task would never run: waiting for it only delays
        // the exit by the whole grace period.
        if self.handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread {
            self.mcp.kill_all();
            return;
        }
        let servers = self.mcp.clone();
        let (sender, receiver) = std::sync::mpsc::channel();
        drop(self.handle.spawn(async move {
            servers.shutdown().await;
            let _ = sender.send(());
        }));
        // A runtime that is shutting down may never run the task.
        let _ = receiver.recv_timeout(SHUTDOWN_GRACE + Duration::from_secs(1));
        self.mcp.kill_all();
    }

    /// The registry the host runs.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Performs one call of `tool` with argument `arg` and waits for it, for
    /// at most the smaller of the tool's timeout and `time_left` (`None`: no
    /// run-level deadline). `key` is the call's idempotency key, passed to
    /// the tool (`LT_IDEMPOTENCY_KEY` for commands, an `Idempotency-Key`
    /// header for HTTP). For callers already inside the runtime (e.g. to run
    /// independent calls concurrently); [`Host::call`] wraps it.
    ///
    /// The tool's `checks` (tools.toml) apply around the executor: a failing
    /// argument is an `Err` without running the tool, a failing result an
    /// `Err` (`BadOutput`).
    pub async fn call_async(
        &self,
        tool: &str,
        arg: &Json,
        time_left: Option<Duration>,
        key: Option<&str>,
    ) -> Outcome {
        match &self.cancel {
            None => self.call_checked(tool, arg, time_left, key).await,
            Some(cancel) => tokio::select! {
                outcome = self.call_checked(tool, arg, time_left, key) => outcome,
                () = cancel.cancelled() => Err(ToolFailure {
                    stderr: None,
                    kind: FailureKind::Unavailable,
                    message: format!("tool {tool}: the session was cancelled"),
                }),
            },
        }
    }

    /// [`ExecutorHost::call_async`] without the cancellation.
    async fn call_checked(
        &self,
        tool: &str,
        arg: &Json,
        time_left: Option<Duration>,
        key: Option<&str>,
    ) -> Outcome {
        let checks = self.registry.checks(tool);
        if let Some(c) = checks {
            c.check_input(tool, arg)?;
        }
        let result = self.run_executor(tool, arg, time_left, key).await?;
        if let Some(c) = checks {
            c.check_output(tool, &result)?;
        }
        Ok(result)
    }

    /// [`ExecutorHost::call_async`] without the checks.
    async fn run_executor(
        &self,
        tool: &str,
        arg: &Json,
        time_left: Option<Duration>,
        key: Option<&str>,
    ) -> Outcome {
        let Some(executor) = self.registry.get(tool) else {
            return Err(ToolFailure {
                stderr: None,
                kind: FailureKind::Unavailable,
                message: format!("tool {tool} has no executor in {}", self.registry.origin()),
            });
        };
        let limit = |own: Duration| match time_left {
            Some(left) => own.min(left),
            None => own,
        };
        let timed_out = |timeout: Duration| {
            Err(ToolFailure {
                stderr: None,
                kind: FailureKind::TimedOut,
                message: format!("tool {tool} timed out after {} ms", timeout.as_millis()),
            })
        };
        // The call reaches its tool from here (an MCP tool's once its
        // server is up: `McpTool::call` notes it).
        let started = || {
            if let (Some(cancel), Some(key)) = (&self.cancel, key) {
                cancel.note_started(key);
            }
        };
        if !matches!(executor, Tool::Mcp(_) | Tool::Client(_)) {
            started();
        }
        match executor {
            Tool::Client(_) => Err(ToolFailure {
                stderr: None,
                kind: FailureKind::Unavailable,
                message: format!(
                    "tool {tool} runs in the client venue, and this run has no client channel"
                ),
            }),
            Tool::Fixed(f) => f.call(tool),
            Tool::Mcp(m) => {
                let timeout = limit(m.timeout);
                if timeout.is_zero() {
                    return timed_out(timeout);
                }
                m.call(&self.mcp, tool, arg, timeout, key, &started).await
            }
            Tool::Command(c) => {
                let timeout = limit(c.timeout);
                if timeout.is_zero() {
                    return timed_out(timeout);
                }
                c.call(tool, arg, timeout, key, &self.groups).await
            }
            Tool::Http(h) => {
                let timeout = limit(h.timeout);
                if timeout.is_zero() {
                    return timed_out(timeout);
                }
                let client = self.client.get_or_init(|| {
                    reqwest::Client::builder()
                        .redirect(reqwest::redirect::Policy::none())
                        .build()
                        .map_err(|e| e.to_string())
                });
                match client {
                    Ok(client) => h.call(client, tool, arg, timeout, key).await,
                    Err(e) => Err(ToolFailure {
                        stderr: None,
                        kind: FailureKind::Unavailable,
                        message: format!("tool {tool}: no HTTP client could be built: {e}"),
                    }),
                }
            }
        }
    }
}

impl Host for ExecutorHost {
    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        // A `fixed` answer needs no I/O: answered on this thread, without a
        // trip through the runtime (this keeps the per-call overhead of the
        // interpreter itself measurable: `cargo bench --bench run`).
        if let Some(Tool::Fixed(f)) = self.registry.get(request.tool) {
            let checks = self.registry.checks(request.tool);
            if let Some(c) = checks {
                c.check_input(request.tool, &request.arg)?;
            }
            let result = f.call(request.tool)?;
            if let Some(c) = checks {
                c.check_output(request.tool, &result)?;
            }
            return Ok(result);
        }
        let host = self.clone();
        let tool = request.tool.to_string();
        let (arg, time_left) = (request.arg, request.time_left);
        let key = request.idempotency_key.map(str::to_string);
        let (sender, receiver) = std::sync::mpsc::sync_channel(1);
        // Spawned rather than `Handle::block_on`, which panics when the
        // thread is inside a runtime context; a task also keeps the timeout's
        // kill-and-reap independent of this thread.
        drop(self.handle.spawn(async move {
            let outcome = host
                .call_async(&tool, &arg, time_left, key.as_deref())
                .await;
            // Values may be nested deeper than a recursive drop survives.
            text::drop_deep(arg);
            if let Err(unsent) = sender.send(outcome) {
                if let Ok(value) = unsent.0 {
                    text::drop_deep(value);
                }
            }
        }));
        receiver.recv().unwrap_or_else(|_| {
            Err(ToolFailure {
                stderr: None,
                kind: FailureKind::Unavailable,
                message: format!(
                    "tool {}: the async runtime shut down before the call finished",
                    request.tool
                ),
            })
        })
    }

    /// Starts every call (at most `limit` running at once, a semaphore on
    /// the runtime) and reports each outcome as it arrives. The calls take
    /// their slots in the order of `requests` (one task hands the slots out,
    /// so a later call never overtakes an earlier one that waits). A call
    /// that has its slot first asks this thread (`BatchEvent::Starting`,
    /// where the control plane records `scheduled`) and starts only once
    /// answered, so a call still waiting for a slot has no `scheduled`
    /// event. `fixed` answers go through the runtime too, so their order is
    /// the completion order.
    fn call_batch(
        &mut self,
        requests: Vec<CallRequest<'_>>,
        limit: usize,
        events: &mut dyn FnMut(BatchEvent<'_>) -> bool,
    ) -> Vec<Outcome> {
        enum Msg {
            Starting(usize, tokio::sync::oneshot::Sender<bool>),
            Done(usize, Outcome),
        }
        let n = requests.len();
        let semaphore = Arc::new(tokio::sync::Semaphore::new(limit.clamp(1, n.max(1))));
        let (sender, receiver) = std::sync::mpsc::channel::<Msg>();
        let names: Vec<String> = requests.iter().map(|r| r.tool.to_string()).collect();
        // Time spent waiting for a slot counts against the run's deadline.
        let queued = std::time::Instant::now();
        let calls: Vec<_> = requests
            .into_iter()
            .map(|r| {
                (
                    r.tool.to_string(),
                    r.arg,
                    r.time_left,
                    r.idempotency_key.map(str::to_string),
                )
            })
            .collect();
        let host = self.clone();
        let handle = self.handle.clone();
        drop(self.handle.spawn(async move {
            for (i, (tool, arg, time_left, key)) in calls.into_iter().enumerate() {
                let permit = semaphore.clone().acquire_owned().await;
                let host = host.clone();
                let sender = sender.clone();
                drop(handle.spawn(async move {
                    let _permit = permit;
                    let (ack, go) = tokio::sync::oneshot::channel();
                    let outcome =
                        if sender.send(Msg::Starting(i, ack)).is_ok() && go.await == Ok(true) {
                            let time_left = time_left.map(|t| t.saturating_sub(queued.elapsed()));
                            host.call_async(&tool, &arg, time_left, key.as_deref())
                                .await
                        } else {
                            Err(crate::runtime::host::not_started(&tool))
                        };
                    text::drop_deep(arg);
                    if let Err(unsent) = sender.send(Msg::Done(i, outcome)) {
                        if let Msg::Done(_, Ok(value)) = unsent.0 {
                            text::drop_deep(value);
                        }
                    }
                }));
            }
        }));
        let mut out: Vec<Option<Outcome>> = (0..n).map(|_| None).collect();
        for msg in receiver.iter() {
            match msg {
                Msg::Starting(i, ack) => {
                    let _ = ack.send(events(BatchEvent::Starting(i)));
                }
                Msg::Done(i, outcome) => {
                    events(BatchEvent::Done(i, &outcome));
                    out[i] = Some(outcome);
                }
            }
        }
        out.into_iter()
            .enumerate()
            .map(|(i, o)| {
                o.unwrap_or_else(|| {
                    Err(ToolFailure {
                        stderr: None,
                        kind: FailureKind::Unavailable,
                        message: format!(
                            "tool {}: the async runtime shut down before the call finished",
                            names[i]
                        ),
                    })
                })
            })
            .collect()
    }
}

/// Catches SIGXFSZ for the life of the process: a write past the
/// file-size limit (`ulimit -f`) then fails with EFBIG, which lt reports
/// (the log says it is incomplete), instead of the signal killing lt in the
/// middle of a session. Catching it (tokio's handler stays installed) is
/// the safe-Rust way to replace its default action. `handle`'s runtime
/// needs its I/O driver (`enable_all`); it may be a current-thread one.
pub fn ignore_file_size_signal(handle: &tokio::runtime::Handle) {
    use nix::sys::signal::Signal;
    use tokio::signal::unix::{signal, SignalKind};
    let _entered = handle.enter();
    let _ = signal(SignalKind::from_raw(Signal::SIGXFSZ as i32));
}

/// How long lt waits, after a signal, for its session to record why it
/// ended before it exits anyway: 3 s.
pub const SETTLE_GRACE: Duration = Duration::from_secs(3);

/// Makes SIGINT, SIGTERM and SIGHUP interrupt the session of `cancel`, then
/// end the process: for a command-line front end that runs one session.
///
/// Tools run in process groups of their own, so a Ctrl-C at the terminal
/// (which signals the terminal's foreground process group) reaches lt but
/// not them, and a SIGTERM to lt alone would leave them running. On any of
/// the three signals, `cancel` is interrupted ([`Cancel::interrupt`]: the
/// executor hosts that watch it kill the process group of every running
/// command tool and MCP server, and the session records no outcome but a
/// last `session_interrupted` event, so its log says why it ended and can
/// be resumed), `error: interrupted by SIGTERM; stopped N running tool(s)`
/// is printed on stderr, and once the session has settled (at most
/// [`SETTLE_GRACE`], or a second signal) the process exits with status
/// 128 + the signal number: 130 (SIGINT), 143 (SIGTERM) or 129 (SIGHUP).
/// The thread running the session may finish first (the cancelled run
/// returns as soon as the session has settled): the front end then exits
/// with [`Cancel::exit_status`], the same status, itself.
///
/// The handlers are installed before this returns and run as a task on
/// `handle`'s runtime, which needs its I/O driver (`enable_all`). They stay
/// installed for the life of the process: once the runtime has shut down,
/// the three signals are caught and ignored. If a handler cannot be
/// installed, a warning is printed on stderr and the signals keep their
/// default action. A server does not use this: it abandons its sessions on
/// its own shutdown.
pub fn abandon_on_signals(handle: &tokio::runtime::Handle, cancel: Cancel) {
    use nix::sys::signal::Signal;
    use tokio::signal::unix::{signal, SignalKind};
    let _entered = handle.enter();
    let streams = (|| {
        Ok::<_, std::io::Error>((
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
            signal(SignalKind::hangup())?,
        ))
    })();
    let (mut int, mut term, mut hup) = match streams {
        Ok(s) => s,
        Err(e) => {
            eprintln!("warning: cannot forward signals to running tools: {e}");
            return;
        }
    };
    ignore_file_size_signal(handle);
    drop(handle.spawn(async move {
        let signal = tokio::select! {
            Some(()) = int.recv() => Signal::SIGINT,
            Some(()) = term.recv() => Signal::SIGTERM,
            Some(()) = hup.recv() => Signal::SIGHUP,
            else => return,
        };
        let status = 128 + signal as i32;
        // The thread that runs the session exits with the same status once
        // the session has settled (`Cancel::exit_status`): it may get there
        // first.
        let stopped = cancel.interrupt_exiting(format!("interrupted by {signal}"), status as u8);
        eprintln!("error: interrupted by {signal}; stopped {stopped} running tool(s)");
        // The session records why it ended (`session_interrupted`); a
        // second signal, or a session that cannot, does not keep lt up.
        tokio::select! {
            () = cancel.settled() => {}
            () = tokio::time::sleep(SETTLE_GRACE) => {}
            Some(()) = int.recv() => {}
            Some(()) = term.recv() => {}
        }
        std::process::exit(status);
    }));
}
