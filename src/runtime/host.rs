//! The host boundary: the one door through which a running program reaches
//! the world.
//!
//! The interpreter never performs I/O itself. Each `exec` becomes a
//! [`CallRequest`] handed to a [`Host`], which answers with an [`Outcome`]:
//! the tool's raw JSON result, or a [`ToolFailure`]. The interpreter then
//! validates the JSON against the tool's declared output type
//! ([`super::boundary`]) and gives the program `Ok(v)` or `Err(message)`.
//!
//! The trait is synchronous from the interpreter's side: pure evaluation
//! runs on one thread without a future per node, and a host that does real
//! I/O (the executors in [`crate::exec`]) blocks that thread on a tokio
//! future for the duration of the call. Replay (issue 4) is a host that
//! answers from the event log instead of calling anything.

use super::value::Value;
use super::wire::Wire;
use serde_json::Value as Json;
use std::fmt;
use std::time::Duration;

/// One step of an [`CallId`]'s path: where the call sits in the dynamic
/// structure of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PathStep {
    /// Inside iteration `index` (0-based) of the `for_each` or `reduce` node `node`.
    Item {
        /// The iterating IR node.
        node: u32,
        /// The element's position in the list.
        index: u32,
    },
    /// Inside the body of a function applied at the `apply` node `node`.
    Apply {
        /// The application's IR node.
        node: u32,
    },
    /// The undo of the call, run because the `scope` node `node` ended in
    /// `Err` (extension).
    Undo {
        /// The scope's IR node.
        node: u32,
    },
}

/// The identity of one tool call: the `exec` node's id plus the iteration
/// and application path that led to it. The same program with the same tool
/// outcomes produces the same identities on every run, which is what lets a
/// log be replayed and a call be matched to its recorded outcome.
///
/// Printed as `n7` (top level), `n7[n3:2]` (item 2 of node 3's iteration),
/// `n7[n3:2,n5]` (…then inside a function applied at node 5);
/// `n7[undo@n2]` is the undo of call `n7`, run by the scope at node 2.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallId {
    /// The `exec` node's id.
    pub node: u32,
    /// Outermost first.
    pub path: Vec<PathStep>,
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n{}", self.node)?;
        if self.path.is_empty() {
            return Ok(());
        }
        f.write_str("[")?;
        for (i, step) in self.path.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match step {
                PathStep::Item { node, index } => write!(f, "n{node}:{index}")?,
                PathStep::Apply { node } => write!(f, "n{node}")?,
                PathStep::Undo { node } => write!(f, "undo@n{node}")?,
            }
        }
        f.write_str("]")
    }
}

/// A tool call the interpreter asks its host to perform.
#[derive(Clone, Debug)]
pub struct CallRequest<'a> {
    /// The call's stable identity.
    pub id: &'a CallId,
    /// The tool's declared name.
    pub tool: &'a str,
    /// The argument, already encoded as JSON (records → objects, lists →
    /// arrays, unit → `null`, `Ok`/`Err` → `{"Ok": v}` / `{"Err": e}`).
    pub arg: Json,
    /// The longest the call may take: the smaller of the tool's own
    /// `timeout_ms` (applied by the host) and the time left in the run.
    /// `None`: no run-level deadline.
    pub time_left: Option<Duration>,
    /// A key unique to this call in this session (session id and call
    /// identity), which executors pass on (`LT_IDEMPOTENCY_KEY` for
    /// commands, an `Idempotency-Key` header for HTTP) so that a tool can
    /// recognise a repeated call. `None` outside a session.
    pub idempotency_key: Option<&'a str>,
}

/// Why a tool call produced no usable JSON result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The tool ran and reported failure: a non-zero exit status, a non-2xx
    /// HTTP status, a `fixed` error response.
    Failed,
    /// The process was killed by a signal (a crash).
    Crashed,
    /// The call took longer than its timeout and was abandoned (a subprocess
    /// is killed).
    TimedOut,
    /// The tool's output is not JSON (or exceeds the output size limit).
    BadOutput,
    /// The tool could not be reached: the program could not be started, the
    /// connection was refused.
    Unavailable,
    /// The control plane's policy refused the call; the tool was not run.
    Denied,
    /// `lt` stopped after scheduling the call and before recording its
    /// outcome, and the tool is not idempotent, so `lt resume` did not run
    /// it again: it may or may not have acted.
    Unknown,
}

impl FailureKind {
    /// A stable lowercase name (`failed`, `crashed`, `timed_out`,
    /// `bad_output`, `unavailable`, `denied`, `unknown`) for logs and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Failed => "failed",
            FailureKind::Crashed => "crashed",
            FailureKind::TimedOut => "timed_out",
            FailureKind::BadOutput => "bad_output",
            FailureKind::Unavailable => "unavailable",
            FailureKind::Denied => "denied",
            FailureKind::Unknown => "unknown",
        }
    }

    /// The kind named `name` ([`FailureKind::as_str`]'s names); `None` for
    /// any other text.
    pub fn from_name(name: &str) -> Option<FailureKind> {
        Some(match name {
            "failed" => FailureKind::Failed,
            "crashed" => FailureKind::Crashed,
            "timed_out" => FailureKind::TimedOut,
            "bad_output" => FailureKind::BadOutput,
            "unavailable" => FailureKind::Unavailable,
            "denied" => FailureKind::Denied,
            "unknown" => FailureKind::Unknown,
            _ => return None,
        })
    }

    /// The kinds a client may report for a client-venue call it ran (the
    /// optional `kind` of a `tool_result` line or of an outcome posted to
    /// `lt serve`): what an executor can find, not the control plane's own
    /// `denied` and `unknown`.
    pub const CLIENT_REPORTABLE: [FailureKind; 5] = [
        FailureKind::Failed,
        FailureKind::Crashed,
        FailureKind::TimedOut,
        FailureKind::BadOutput,
        FailureKind::Unavailable,
    ];
}

/// A failed tool call. `message` is what the program sees as the `Err`
/// payload, e.g. `tool issue_refund failed (exit status 1): card declined`,
/// including a command tool's stderr (trimmed, at most a few KiB) where
/// there is one: a command's stderr is its error message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolFailure {
    /// The output a long-lived server wrote on stderr (an MCP server's log
    /// lines, its last 2 KiB), kept apart from `message`: the log records
    /// it beside the failure, the program and the model never see it.
    pub stderr: Option<String>,
    /// What kind of failure.
    pub kind: FailureKind,
    /// The whole message, naming the tool.
    pub message: String,
}

/// What a host answers for one call: the tool's raw JSON result (not yet
/// validated against the declared output type), or why there is none.
pub type Outcome = Result<Json, ToolFailure>;

/// A tool call whose argument is the interpreter's own value
/// ([`Host::call_value`]), for a host that takes it without JSON.
#[derive(Clone, Debug)]
pub struct ValueCall<'a> {
    /// The call's stable identity.
    pub id: &'a CallId,
    /// The tool's declared name.
    pub tool: &'a str,
    /// The argument (of the tool's declared input type).
    pub arg: &'a Value,
    /// The longest the call may take, as [`CallRequest::time_left`].
    pub time_left: Option<Duration>,
}

/// A host's answer to a [`ValueCall`]: the outcome as JSON (what
/// [`Host::call`] answers), or the tool's raw result on the wire, read by
/// the interpreter with [`super::wire::typed::program_result`].
#[derive(Debug)]
pub enum Answer {
    /// The outcome, as [`Host::call`] gives it.
    Json(Outcome),
    /// The result on the wire, or why there is none.
    Wire(Result<Wire, ToolFailure>),
}

/// An `@intent` annotation (extension) starting or ending, as the
/// interpreter tells its host ([`Host::annotation`]).
#[derive(Clone, Copy, Debug)]
pub enum AnnotationEvent<'a> {
    /// The annotated expression starts.
    Started {
        /// The annotation's identity: the `annotate` node and path, printed
        /// as a [`CallId`] is (`n4`, `n4[n2:1]`).
        id: &'a str,
        /// What the program says it is doing.
        intent: &'a str,
        /// What it expects, if given.
        hypothesis: Option<&'a str>,
        /// Notes, if given.
        notes: Option<&'a str>,
        /// The enclosing annotation, if any.
        parent: Option<&'a str>,
    },
    /// The annotated expression ended.
    Ended {
        /// The annotation's identity.
        id: &'a str,
        /// The identities of the calls made directly under it (not under a
        /// nested annotation), in the order they were issued.
        calls: &'a [String],
        /// `ok` / `err` (its value was `Ok`/`Err`), `value` (any other
        /// value), or `stopped` (the run stopped inside it).
        outcome: &'a str,
    },
}

/// An `approve tool NAME arg` (extension): the program asks for a token
/// approving one call of `tool` with `arg` (the input without its
/// `!Approval` fields).
#[derive(Clone, Debug)]
pub struct ApprovalRequest<'a> {
    /// The request's identity (the `approve` node and path, as a call's).
    pub id: &'a CallId,
    /// The tool the approval is for.
    pub tool: &'a str,
    /// The argument it approves, as JSON.
    pub arg: Json,
    /// The time left in the run (`None`: no deadline): a prompt waits no longer.
    pub time_left: Option<Duration>,
}

/// What [`Host::call_batch`] tells its caller while a batch runs.
#[derive(Debug)]
pub enum BatchEvent<'a> {
    /// Call `i` is about to start (it has a slot): the caller may record
    /// that it starts, and answers whether it may.
    Starting(usize),
    /// Call `i` finished with this outcome.
    Done(usize, &'a Outcome),
}

/// The calls of a batch run one after the other, in order, by `host`'s
/// `call`, telling `events` as [`Host::call_batch`] says (a `false` from
/// `Starting` leaves a call unstarted, an `Unavailable` failure): the
/// default batch, and that of a host without a concurrent one.
pub fn one_after_another<H: Host + ?Sized>(
    host: &mut H,
    requests: Vec<CallRequest<'_>>,
    events: &mut dyn FnMut(BatchEvent<'_>) -> bool,
) -> Vec<Outcome> {
    // The time a call waits for those before it counts against its own, as
    // a wait for a slot does (`Host::call_batch`): a call whose time is up
    // is given none (its host answers it timed out).
    let began = std::time::Instant::now();
    requests
        .into_iter()
        .enumerate()
        .map(|(i, mut r)| {
            let o = if events(BatchEvent::Starting(i)) {
                r.time_left = r.time_left.map(|t| t.saturating_sub(began.elapsed()));
                host.call(r)
            } else {
                Err(not_started(r.tool))
            };
            events(BatchEvent::Done(i, &o));
            o
        })
        .collect()
}

/// The failure of a batch call its caller did not let start.
pub fn not_started(tool: &str) -> ToolFailure {
    ToolFailure {
        stderr: None,
        kind: FailureKind::Unavailable,
        message: format!("tool {tool}: the call was not started (its start could not be recorded)"),
    }
}

/// Performs tool calls for the interpreter. Implementations: the executor
/// host (`tools.toml`, [`crate::exec`]), the fixed hosts in tests, and later
/// the control plane and replay.
pub trait Host {
    /// Performs one call and waits for its outcome. Must not panic on any
    /// tool behaviour: every failure is an `Err(ToolFailure)`.
    fn call(&mut self, request: CallRequest<'_>) -> Outcome;

    /// Performs independent calls (a `gather` or a `fan_out`), concurrently
    /// where the host can, at most `limit` at a time (at least one), and
    /// waits for all of them. `events` is told [`BatchEvent::Starting`]
    /// just before a call starts (when it is about to take a slot; `false`
    /// leaves it unstarted, an `Unavailable` failure) and
    /// [`BatchEvent::Done`] of each outcome as it arrives (completion
    /// order); `i` indexes `requests`. The outcomes are returned in request
    /// order. A host that hands the calls on (the control plane, replay)
    /// reports only `Done`.
    ///
    /// The default runs the calls one after the other, in order.
    fn call_batch(
        &mut self,
        requests: Vec<CallRequest<'_>>,
        limit: usize,
        events: &mut dyn FnMut(BatchEvent<'_>) -> bool,
    ) -> Vec<Outcome> {
        let _ = limit;
        one_after_another(self, requests, events)
    }

    /// Asks for an approval: the token (a string the control plane minted
    /// for exactly this tool and argument), or why there is none. The
    /// default has no one to ask and refuses.
    fn approve(&mut self, request: ApprovalRequest<'_>) -> Result<String, String> {
        Err(format!(
            "approval for {} refused: this run has no control plane to ask",
            request.tool
        ))
    }

    /// Told when an `@intent` annotation starts and ends (the control
    /// plane records it). The default ignores it.
    fn annotation(&mut self, event: AnnotationEvent<'_>) {
        let _ = event;
    }

    /// Whether this host's tools see the calls' idempotency keys
    /// ([`CallRequest::idempotency_key`]). `false`: the control plane
    /// builds a key only for its log, and without a log passes none. The
    /// default: they do.
    fn uses_idempotency_keys(&self) -> bool {
        true
    }

    /// Performs one call whose argument is the interpreter's value, if
    /// this host takes it that way ([`crate::runtime::wire`]: no JSON
    /// between the value and the tool). `None`: it does not, and nothing
    /// was done; the interpreter then calls [`Host::call`] with the
    /// argument's JSON. Must answer exactly as [`Host::call`] would, events
    /// and policy included (a host that records, or that cannot, answers
    /// `None`). The default: `None`.
    fn call_value(&mut self, request: ValueCall<'_>) -> Option<Answer> {
        let _ = request;
        None
    }
}

/// A host behind a pointer (`&mut H`, `Box<H>`) is the host itself.
macro_rules! forward_host {
    ($($ptr:ty),*) => {$(
        impl<H: Host + ?Sized> Host for $ptr {
            fn call(&mut self, request: CallRequest<'_>) -> Outcome {
                (**self).call(request)
            }

            fn call_batch(
                &mut self,
                requests: Vec<CallRequest<'_>>,
                limit: usize,
                events: &mut dyn FnMut(BatchEvent<'_>) -> bool,
            ) -> Vec<Outcome> {
                (**self).call_batch(requests, limit, events)
            }

            fn annotation(&mut self, event: AnnotationEvent<'_>) {
                (**self).annotation(event)
            }

            fn approve(&mut self, request: ApprovalRequest<'_>) -> Result<String, String> {
                (**self).approve(request)
            }

            fn uses_idempotency_keys(&self) -> bool {
                (**self).uses_idempotency_keys()
            }

            fn call_value(&mut self, request: ValueCall<'_>) -> Option<Answer> {
                (**self).call_value(request)
            }
        }
    )*};
}

forward_host!(&mut H, Box<H>);
