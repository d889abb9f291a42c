//! In-process tools: a [`Host`] whose tools are Rust closures, for an
//! embedding that implements tools in its own process (the Python package,
//! issue 28: each closure calls a Python function). It is an executor kind
//! like `command` or `http`, handed to a session as
//! [`Executors::Custom`](crate::control::session::Executors): the session,
//! the control plane (profile, budgets, log) and the interpreter's boundary
//! check of each result are the same as for every other executor.
//!
//! A closure answers with the tool's raw JSON result or a [`ToolFailure`];
//! a result of the wrong shape is caught by the interpreter, as for any
//! executor. A tool with no closure fails as `Unavailable`; an embedding
//! should refuse such a program before it runs ([`InProcessHost::missing`]).
//!
//! A closure may instead take and give [`Wire`] bytes
//! ([`InProcessHost::wire_tool`]): then a call from the interpreter
//! reaches it with no JSON built at either end ([`Host::call_value`]); one
//! through the JSON door (a session with a log) is converted on the way.
//!
//! A batch (`gather`, `fan_out`) goes to the batch closure when one is
//! given ([`InProcessHost::with_batch`]: an asyncio host runs coroutines
//! concurrently, at most the profile's `max_concurrency` at once), else
//! its calls run one after the other (as they do, closure or not, when
//! `max_concurrency` is 1).

use crate::runtime::host::{
    not_started, one_after_another, Answer, BatchEvent, CallRequest, FailureKind, Host, Outcome,
    ToolFailure, ValueCall,
};
use crate::runtime::wire::Wire;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::time::Duration;

/// One call as an in-process tool sees it.
#[derive(Clone, Debug)]
pub struct InProcessCall<'a> {
    /// The tool's declared name.
    pub tool: &'a str,
    /// The argument as JSON.
    pub arg: Json,
    /// The call's idempotency key, inside a session (`None` for a host
    /// built [`InProcessHost::without_idempotency_keys`] and a session
    /// without a log).
    pub idempotency_key: Option<&'a str>,
    /// The time the call may take: the smaller of the run's time left and
    /// the profile's timeout for the tool (`None`: no limit). A closure
    /// that cannot finish in time answers a `TimedOut` failure, as the
    /// other executors do.
    pub time_left: Option<Duration>,
}

/// The closure of one tool.
pub type ToolFn<'a> = Box<dyn FnMut(InProcessCall<'_>) -> Outcome + 'a>;

/// One call as a wire tool sees it ([`InProcessHost::wire_tool`]).
#[derive(Debug)]
pub struct WireCall<'a> {
    /// The tool's declared name.
    pub tool: &'a str,
    /// The argument.
    pub arg: Wire,
    /// As [`InProcessCall::time_left`].
    pub time_left: Option<Duration>,
}

/// The closure of one wire tool: the raw result on the wire, or why there
/// is none. It is given no idempotency key.
pub type WireFn<'a> = Box<dyn FnMut(WireCall<'_>) -> Result<Wire, ToolFailure> + 'a>;

/// A tool's closure, of either kind.
enum Closure<'a> {
    Json(ToolFn<'a>),
    Wire(WireFn<'a>),
}

/// The closure that performs a batch of calls, at most `limit` of them
/// running at once (the second argument, at least 2): all their outcomes,
/// in order.
pub type BatchFn<'a> = Box<dyn FnMut(Vec<InProcessCall<'_>>, usize) -> Vec<Outcome> + 'a>;

/// A [`Host`] performing each call with the tool's closure.
#[derive(Default)]
pub struct InProcessHost<'a> {
    tools: BTreeMap<String, Closure<'a>>,
    batch: Option<BatchFn<'a>>,
    /// The closures read no idempotency key.
    keyless: bool,
}

impl<'a> InProcessHost<'a> {
    /// A host with no tools.
    pub fn new() -> Self {
        InProcessHost {
            tools: BTreeMap::new(),
            batch: None,
            keyless: false,
        }
    }

    /// Tells the control plane that the closures read no idempotency key:
    /// without a log, a call then builds none (nor the call's identity as
    /// text), and the closures see `None`.
    pub fn without_idempotency_keys(mut self) -> Self {
        self.keyless = true;
        self
    }

    /// Adds (or replaces) the closure of `tool`.
    pub fn tool(mut self, tool: impl Into<String>, f: ToolFn<'a>) -> Self {
        self.tools.insert(tool.into(), Closure::Json(f));
        self
    }

    /// Performs calls of `tool` with `f`, which takes and gives [`Wire`]
    /// bytes (module note).
    pub fn wire_tool(mut self, tool: impl Into<String>, f: WireFn<'a>) -> Self {
        self.tools.insert(tool.into(), Closure::Wire(f));
        self
    }

    /// Performs every batch with `f` (which must return one outcome per
    /// call, in order; a missing one is an `Unavailable` failure).
    pub fn with_batch(mut self, f: BatchFn<'a>) -> Self {
        self.batch = Some(f);
        self
    }

    /// The names in `called` that have no closure, in their order.
    pub fn missing<'n>(&self, called: impl IntoIterator<Item = &'n str>) -> Vec<&'n str> {
        called
            .into_iter()
            .filter(|t| !self.tools.contains_key(*t))
            .collect()
    }
}

/// A wire tool's outcome as JSON, for the JSON door (a result whose bytes
/// do not read back is a `bad_output` failure).
pub fn json_outcome(tool: &str, result: Result<Wire, ToolFailure>) -> Outcome {
    result?.to_json().map_err(|e| ToolFailure {
        stderr: None,
        kind: FailureKind::BadOutput,
        message: format!("tool {tool}: {e}"),
    })
}

/// The failure of a call to a tool without a closure.
fn no_tool(tool: &str) -> ToolFailure {
    ToolFailure {
        stderr: None,
        kind: FailureKind::Unavailable,
        message: format!("tool {tool} has no in-process function"),
    }
}

impl Host for InProcessHost<'_> {
    fn uses_idempotency_keys(&self) -> bool {
        !self.keyless
    }

    fn call(&mut self, request: CallRequest<'_>) -> Outcome {
        match self.tools.get_mut(request.tool) {
            Some(Closure::Json(f)) => f(InProcessCall {
                tool: request.tool,
                arg: request.arg,
                idempotency_key: request.idempotency_key,
                time_left: request.time_left,
            }),
            Some(Closure::Wire(f)) => {
                let result = f(WireCall {
                    tool: request.tool,
                    arg: Wire::from_json(&request.arg),
                    time_left: request.time_left,
                });
                json_outcome(request.tool, result)
            }
            None => Err(no_tool(request.tool)),
        }
    }

    /// A wire tool's call, with no JSON between; `None` for the others.
    fn call_value(&mut self, request: ValueCall<'_>) -> Option<Answer> {
        match self.tools.get_mut(request.tool) {
            Some(Closure::Wire(f)) => Some(Answer::Wire(f(WireCall {
                tool: request.tool,
                arg: Wire::from_value(request.arg),
                time_left: request.time_left,
            }))),
            _ => None,
        }
    }

    fn call_batch(
        &mut self,
        requests: Vec<CallRequest<'_>>,
        limit: usize,
        events: &mut dyn FnMut(BatchEvent<'_>) -> bool,
    ) -> Vec<Outcome> {
        let Some(batch) = self.batch.as_mut().filter(|_| limit > 1) else {
            // One after the other, as the trait's default does (and, one
            // at a time, as `max_concurrency = 1` asks).
            return one_after_another(self, requests, events);
        };
        let mut started = Vec::with_capacity(requests.len());
        let mut calls = Vec::new();
        for (i, r) in requests.iter().enumerate() {
            let go = events(BatchEvent::Starting(i));
            started.push(go);
            if go {
                calls.push(InProcessCall {
                    tool: r.tool,
                    arg: r.arg.clone(),
                    idempotency_key: r.idempotency_key,
                    time_left: r.time_left,
                });
            }
        }
        let mut answered = batch(calls, limit).into_iter();
        requests
            .iter()
            .zip(started)
            .enumerate()
            .map(|(i, (r, go))| {
                let o = if go {
                    answered.next().unwrap_or_else(|| {
                        Err(ToolFailure {
                            stderr: None,
                            kind: FailureKind::Unavailable,
                            message: format!("tool {}: the batch gave no outcome", r.tool),
                        })
                    })
                } else {
                    Err(not_started(r.tool))
                };
                events(BatchEvent::Done(i, &o));
                o
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::host::CallId;

    fn request<'a>(id: &'a CallId, tool: &'a str) -> CallRequest<'a> {
        CallRequest {
            id,
            tool,
            arg: Json::from(2),
            time_left: None,
            idempotency_key: None,
        }
    }

    #[test]
    fn calls_the_closure_and_fails_without_one() {
        let mut host = InProcessHost::new().tool(
            "double",
            Box::new(|c: InProcessCall<'_>| Ok(Json::from(c.arg.as_i64().unwrap_or(0) * 2))),
        );
        let id = CallId {
            node: 0,
            path: vec![],
        };
        assert_eq!(host.call(request(&id, "double")), Ok(Json::from(4)));
        let missing = host.call(request(&id, "other"));
        assert!(matches!(missing, Err(f) if f.kind == FailureKind::Unavailable));
        assert_eq!(host.missing(["double", "other"]), vec!["other"]);
    }

    /// `max_concurrency` reaches the batch closure, and a limit of 1 runs
    /// the calls one after the other without it.
    #[test]
    fn a_batch_closure_is_given_the_limit_and_skipped_at_one() {
        let limits = std::cell::RefCell::new(Vec::new());
        let singles = std::cell::Cell::new(0);
        let mut host = InProcessHost::new()
            .tool(
                "double",
                Box::new(|c: InProcessCall<'_>| {
                    singles.set(singles.get() + 1);
                    Ok(Json::from(c.arg.as_i64().unwrap_or(0) * 2))
                }),
            )
            .with_batch(Box::new(|calls: Vec<InProcessCall<'_>>, limit| {
                limits.borrow_mut().push(limit);
                calls.iter().map(|_| Ok(Json::from(0))).collect()
            }));
        let id = CallId {
            node: 0,
            path: vec![],
        };
        let mut started = Vec::new();
        let mut events = |e: BatchEvent<'_>| {
            if let BatchEvent::Starting(i) = e {
                started.push(i);
            }
            true
        };
        let two = || vec![request(&id, "double"), request(&id, "double")];
        let batched = host.call_batch(two(), 3, &mut events);
        assert_eq!(batched, vec![Ok(Json::from(0)), Ok(Json::from(0))]);
        let alone = host.call_batch(two(), 1, &mut events);
        assert_eq!(alone, vec![Ok(Json::from(4)), Ok(Json::from(4))]);
        drop(host);
        assert_eq!(*limits.borrow(), vec![3]);
        assert_eq!(singles.get(), 2);
        assert_eq!(started, vec![0, 1, 0, 1]);
    }
}
