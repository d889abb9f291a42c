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
use crate::worker::{perform, Work};
use lt::exec::in_process::{BatchFn, InProcessCall, InProcessHost, ToolFn};
use lt::runtime::cancel::Cancel;
use lt::runtime::host::{FailureKind, Outcome, ToolFailure};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use serde_json::Value as Json;
use std::sync::Arc;

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

/// The host of `tools` (name → Python callable taking the argument and
/// the job); `batch`, when given, performs each `gather`/`fan_out` batch:
/// it is called with a list of `(tool, argument)` pairs (and the job) and
/// returns one `(ok, value_or_message)` pair per call, in order. Every call
/// stops waiting when `cancel` is cancelled.
pub fn host(
    tools: Vec<(String, Py<PyAny>)>,
    batch: Option<Py<PyAny>>,
    cancel: Cancel,
) -> InProcessHost<'static> {
    let mut host = InProcessHost::new();
    for (name, f) in tools {
        let f = Arc::new(f);
        let cancel = cancel.clone();
        let f: ToolFn<'static> = Box::new(move |call| {
            let mut out = perform(
                &f,
                call.arg,
                Work::One(call.tool.to_string()),
                call.time_left,
                &cancel,
            );
            out.pop().unwrap_or_else(|| {
                Err(failure(
                    FailureKind::Unavailable,
                    format!("tool {}: no outcome", call.tool),
                ))
            })
        });
        host = host.tool(name, f);
    }
    if let Some(b) = batch {
        let b = Arc::new(b);
        let f: BatchFn<'static> = Box::new(move |calls| call_batch(&b, calls, &cancel));
        host = host.with_batch(f);
    }
    host
}

fn call_batch(b: &Arc<Py<PyAny>>, calls: Vec<InProcessCall<'_>>, cancel: &Cancel) -> Vec<Outcome> {
    let time_left = calls.iter().filter_map(|c| c.time_left).min();
    let tools = calls.iter().map(|c| c.tool.to_string()).collect();
    let arg = Json::Array(
        calls
            .into_iter()
            .map(|c| Json::Array(vec![Json::from(c.tool), c.arg]))
            .collect(),
    );
    perform(b, arg, Work::Batch(tools), time_left, cancel)
}

/// The outcomes of a batch function's answer: one `(ok, value)` pair per
/// call of `tools`, in order.
pub fn batch_outcomes(tools: &[String], answered: &Bound<'_, PyAny>) -> Vec<Outcome> {
    tools
        .iter()
        .enumerate()
        .map(|(i, tool)| match answered.get_item(i) {
            Ok(pair) => pair_outcome(tool, &pair),
            Err(e) => Err(failure(
                FailureKind::Failed,
                format!("tool {tool}: no outcome: {e}"),
            )),
        })
        .collect()
}

/// `(True, value)` → the value; `(False, message)` → a failure.
fn pair_outcome(tool: &str, pair: &Bound<'_, PyAny>) -> Outcome {
    let Ok(t) = pair.cast::<PyTuple>() else {
        return Err(failure(
            FailureKind::Failed,
            format!(
                "tool {tool}: the batch answered a {}, not a pair",
                type_name(pair)
            ),
        ));
    };
    let ok = t.get_item(0).and_then(|o| o.is_truthy()).unwrap_or(false);
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
