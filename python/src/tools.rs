//! Python functions as tools: the closures of an
//! [`InProcessHost`](lt::exec::in_process::InProcessHost). Each call is
//! handed to a Python thread ([`crate::worker`]) and waited for until the
//! call's deadline or the session's cancellation: the argument becomes
//! Python objects, the function is called with it as its first positional
//! argument, and its result becomes JSON (the engine then checks it
//! against the declared output type). A function that raises is the call's
//! `Err` (`tool T raised ValueError: …`); a result that is not JSON is a
//! `bad_output` `Err`, like any executor's garbage; a call that outlives
//! its deadline is a `timed_out` `Err`.

use crate::convert::{from_py, type_name};
use crate::worker::{perform, submit, timed_out_message, RunState, Work};
use lt::exec::in_process::{BatchFn, InProcessCall, InProcessHost, ToolFn};
use lt::runtime::host::{FailureKind, Outcome, ToolFailure};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

fn failure(kind: FailureKind, message: String) -> ToolFailure {
    ToolFailure {
        stderr: None,
        kind,
        message,
    }
}

/// The failure of a function that raised `e`.
pub fn raised(py: Python<'_>, tool: &str, e: &PyErr) -> ToolFailure {
    let ty = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into());
    let msg = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    let text = if msg.is_empty() {
        format!("tool {tool} raised {ty}")
    } else {
        format!("tool {tool} raised {ty}: {msg}")
    };
    failure(FailureKind::Failed, text)
}

/// `obj`, a function's result, as the call's outcome.
pub fn outcome(tool: &str, obj: &Bound<'_, PyAny>) -> Outcome {
    from_py(obj, "result").map_err(|why| {
        failure(
            FailureKind::BadOutput,
            format!("tool {tool} returned a value that is not JSON: {why}"),
        )
    })
}

/// The host of `tools` (name → the Python function, taking the argument).
/// `batch`, when given, performs the calls of a `gather` or `fan_out`
/// batch to the functions named in `async_tools`, together: it is called
/// on a pool thread with a list of `(tool, argument, timeout_s)` triples
/// and returns one `(ok, value_or_message)` pair per call, in order
/// (`ok` is `None` for a call that timed out). The batch's other calls are
/// performed one by one meanwhile. Every call stops waiting when the run
/// is cancelled.
pub fn host(
    tools: Vec<(String, Py<PyAny>)>,
    batch: Option<(Py<PyAny>, Vec<String>)>,
    run: Arc<RunState>,
) -> InProcessHost<'static> {
    // The functions are given the argument alone: no key to build.
    let mut host = InProcessHost::new().without_idempotency_keys();
    let mut functions = BTreeMap::new();
    for (name, f) in tools {
        let f = Arc::new(f);
        functions.insert(name.clone(), f.clone());
        let run = run.clone();
        let tool: Arc<str> = Arc::from(name.as_str());
        let f: ToolFn<'static> = Box::new(move |call| {
            perform(&f, call.arg, Work::One(tool.clone()), call.time_left, &run).one(call.tool)
        });
        host = host.tool(name, f);
    }
    if let Some((b, async_tools)) = batch {
        let b = Arc::new(b);
        let f: BatchFn<'static> =
            Box::new(move |calls| call_batch(&b, &async_tools, &functions, calls, &run));
        host = host.with_batch(f);
    }
    host
}

/// A batch: its `async` calls handed to the batch function at once (each
/// with its own time left), its other calls performed one by one
/// meanwhile, then the batch waited for until its last deadline.
fn call_batch(
    b: &Arc<Py<PyAny>>,
    async_tools: &[String],
    functions: &BTreeMap<String, Arc<Py<PyAny>>>,
    calls: Vec<InProcessCall<'_>>,
    run: &Arc<RunState>,
) -> Vec<Outcome> {
    let n = calls.len();
    let mut outcomes: Vec<Option<Outcome>> = (0..n).map(|_| None).collect();
    let mut together = Vec::new();
    let mut alone = Vec::new();
    for (i, c) in calls.into_iter().enumerate() {
        if async_tools.iter().any(|t| t == c.tool) {
            together.push((i, c));
        } else {
            alone.push((i, c));
        }
    }
    let pending = (!together.is_empty()).then(|| {
        let every_left: Option<Vec<Duration>> = together.iter().map(|(_, c)| c.time_left).collect();
        let time_left = every_left.and_then(|l| l.into_iter().max());
        let work = Work::Batch(
            together
                .iter()
                .map(|(_, c)| (c.tool.to_string(), c.time_left))
                .collect(),
        );
        let at: Vec<usize> = together.iter().map(|(i, _)| *i).collect();
        let arg = Json::Array(
            together
                .into_iter()
                .map(|(_, c)| {
                    let timeout = c.time_left.map(|t| Json::from(t.as_secs_f64()));
                    Json::Array(vec![
                        Json::from(c.tool),
                        c.arg,
                        timeout.unwrap_or(Json::Null),
                    ])
                })
                .collect(),
        );
        (at, submit(b, arg, work, time_left, run))
    });
    for (i, c) in alone {
        outcomes[i] = Some(match functions.get(c.tool) {
            Some(f) => {
                perform(f, c.arg, Work::One(Arc::from(c.tool)), c.time_left, run).one(c.tool)
            }
            None => Err(failure(
                FailureKind::Unavailable,
                format!("tool {} has no in-process function", c.tool),
            )),
        });
    }
    if let Some((at, submitted)) = pending {
        let answered = match submitted {
            Ok(p) => p.wait(),
            Err(outcomes) => outcomes,
        }
        .into_vec();
        for (i, o) in at.into_iter().zip(answered) {
            outcomes[i] = Some(o);
        }
    }
    outcomes
        .into_iter()
        .map(|o| o.unwrap_or_else(|| Err(failure(FailureKind::Unavailable, "no outcome".into()))))
        .collect()
}

/// The outcomes of a batch function's answer: one `(ok, value)` pair per
/// call (tool, time left), in order.
pub fn batch_outcomes(
    calls: &[(String, Option<Duration>)],
    answered: &Bound<'_, PyAny>,
) -> Vec<Outcome> {
    calls
        .iter()
        .enumerate()
        .map(|(i, (tool, left))| match answered.get_item(i) {
            Ok(pair) => pair_outcome(tool, *left, &pair),
            Err(e) => Err(failure(
                FailureKind::Failed,
                format!("tool {tool}: no outcome: {e}"),
            )),
        })
        .collect()
}

/// `(True, value)` → the value; `(False, message)` → a failure; `(None,
/// _)` → the call timed out (after `left`).
fn pair_outcome(tool: &str, left: Option<Duration>, pair: &Bound<'_, PyAny>) -> Outcome {
    let Ok(t) = pair.cast::<PyTuple>() else {
        return Err(failure(
            FailureKind::Failed,
            format!(
                "tool {tool}: the batch answered a {}, not a pair",
                type_name(pair)
            ),
        ));
    };
    let ok = match t.get_item(0) {
        Ok(o) if o.is_none() => {
            return Err(failure(
                FailureKind::TimedOut,
                timed_out_message(tool, left.unwrap_or_default()),
            ))
        }
        Ok(o) => o.is_truthy().unwrap_or(false),
        Err(_) => false,
    };
    let value = match t.get_item(1) {
        Ok(v) => v,
        Err(e) => return Err(failure(FailureKind::Failed, format!("tool {tool}: {e}"))),
    };
    if ok {
        outcome(tool, &value)
    } else {
        Err(failure(FailureKind::Failed, value.to_string()))
    }
}
