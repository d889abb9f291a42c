//! Python functions as tools: the closures of an
//! [`InProcessHost`](lt::exec::in_process::InProcessHost). Each call takes
//! the GIL only for the call itself: the argument becomes Python objects,
//! the function is called with it as its one positional argument, and its
//! result becomes JSON (the engine then checks it against the declared
//! output type). A function that raises is the call's `Err` (`tool T
//! raised ValueError: …`); a result that is not JSON is a `bad_output`
//! `Err`, like any executor's garbage.

use crate::convert::{from_py, to_py, type_name};
use lt::exec::in_process::{BatchFn, InProcessCall, InProcessHost, ToolFn};
use lt::runtime::host::{FailureKind, Outcome, ToolFailure};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

fn failure(kind: FailureKind, message: String) -> ToolFailure {
    ToolFailure {
        stderr: None,
        kind,
        message,
    }
}

/// The failure of a function that raised `e`.
fn raised(py: Python<'_>, tool: &str, e: &PyErr) -> ToolFailure {
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
fn outcome(tool: &str, obj: &Bound<'_, PyAny>) -> Outcome {
    from_py(obj, "result").map_err(|why| {
        failure(
            FailureKind::BadOutput,
            format!("tool {tool} returned a value that is not JSON: {why}"),
        )
    })
}

/// Calls `f` with the call's argument.
fn call_one(f: &Py<PyAny>, call: &InProcessCall<'_>) -> Outcome {
    Python::attach(|py| {
        let arg = to_py(py, &call.arg).map_err(|e| raised(py, call.tool, &e))?;
        match f.bind(py).call1((arg,)) {
            Ok(result) => outcome(call.tool, &result),
            Err(e) => Err(raised(py, call.tool, &e)),
        }
    })
}

/// The host of `tools` (name → Python callable); `batch`, when given,
/// performs each `gather`/`fan_out` batch: it is called with a list of
/// `(tool, argument)` pairs and returns one `(ok, value_or_message)` pair
/// per call, in order.
pub fn host(tools: Vec<(String, Py<PyAny>)>, batch: Option<Py<PyAny>>) -> InProcessHost<'static> {
    let mut host = InProcessHost::new();
    for (name, f) in tools {
        let f: ToolFn<'static> = Box::new(move |call| call_one(&f, &call));
        host = host.tool(name, f);
    }
    if let Some(b) = batch {
        let f: BatchFn<'static> = Box::new(move |calls| call_batch(&b, &calls));
        host = host.with_batch(f);
    }
    host
}

fn call_batch(b: &Py<PyAny>, calls: &[InProcessCall<'_>]) -> Vec<Outcome> {
    Python::attach(|py| {
        let all_failed = |why: String| -> Vec<Outcome> {
            calls
                .iter()
                .map(|c| {
                    Err(failure(
                        FailureKind::Failed,
                        format!("tool {}: {why}", c.tool),
                    ))
                })
                .collect()
        };
        let list = PyList::empty(py);
        for c in calls {
            let arg = match to_py(py, &c.arg) {
                Ok(a) => a,
                Err(e) => return all_failed(e.to_string()),
            };
            if let Err(e) = list.append((c.tool, arg)) {
                return all_failed(e.to_string());
            }
        }
        let answered = match b.bind(py).call1((list,)) {
            Ok(a) => a,
            Err(e) => return all_failed(format!("the batch raised: {e}")),
        };
        let mut out = Vec::with_capacity(calls.len());
        for (i, c) in calls.iter().enumerate() {
            let item = answered.get_item(i);
            out.push(match item {
                Ok(pair) => pair_outcome(c.tool, &pair),
                Err(e) => Err(failure(
                    FailureKind::Failed,
                    format!("tool {}: no outcome: {e}", c.tool),
                )),
            });
        }
        out
    })
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
