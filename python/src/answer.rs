//! A Python function's answer as a call's outcome: its result on the
//! engine's wire (a result that is not JSON is a `bad_output`
//! `Err`), the exception it raised (a `failed` `Err` naming its type), or
//! a batch function's `(ok, value)` pairs. Below the pool's threads
//! ([`crate::worker`]), which give these outcomes, and the host's closures
//! ([`crate::tools`]).

use crate::convert::{a_type, write_wire};
use lt::runtime::host::{FailureKind, ToolFailure};
use lt::runtime::wire::Wire;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::time::Duration;

/// A call's outcome as a pool thread gives it: the function's result on
/// the wire, or why there is none.
pub type Answered = Result<Wire, ToolFailure>;

/// A failure of `kind` with its whole message.
pub(crate) fn failure(kind: FailureKind, message: String) -> ToolFailure {
    ToolFailure {
        stderr: None,
        kind,
        message,
    }
}

/// `tool T timed out after N ms`, every executor's words; `N` rounded to
/// the nearest millisecond (a call after others of its batch is given its
/// time less the microseconds they took: 199.98 ms is `200 ms`).
pub fn timed_out_message(tool: &str, after: Duration) -> String {
    let ms = after.as_micros().saturating_add(500) / 1000;
    format!("tool {tool} timed out after {ms} ms")
}

/// The failure of a function that raised `e`.
pub fn raised(py: Python<'_>, tool: &str, e: &PyErr) -> ToolFailure {
    let ty = exception_name(py, e);
    let msg = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    if is_foreign(py, e) {
        // `lt._tools._Foreign`: a result lt could not await (its words
        // say what the tool returned).
        return failure(FailureKind::BadOutput, format!("tool {tool} {msg}"));
    }
    let text = if msg.is_empty() {
        format!("tool {tool} raised {ty}")
    } else {
        format!("tool {tool} raised {ty}: {msg}")
    };
    failure(FailureKind::Failed, text)
}

/// The name of `e`'s class (`ValueError`), or `Exception` when it has none
/// to read.
pub fn exception_name(py: Python<'_>, e: &PyErr) -> String {
    e.get_type(py)
        .name()
        .map_or_else(|_| "Exception".to_string(), |n| n.to_string())
}

/// Whether `e` is lt's own `lt._tools._Foreign` (the class itself, not
/// one of a user's of that name).
fn is_foreign(py: Python<'_>, e: &PyErr) -> bool {
    py.import("lt._tools")
        .and_then(|m| m.getattr("_Foreign"))
        .is_ok_and(|class| e.get_type(py).is(&class))
}

/// `obj`, a function's result, as the call's outcome, written into `into`
/// (a buffer used before: the call's argument's).
pub fn outcome(tool: &str, obj: &Bound<'_, PyAny>, mut into: Wire) -> Answered {
    write_wire(obj, "result", &mut into)
        .map(|()| into)
        .map_err(|why| {
            failure(
                FailureKind::BadOutput,
                format!("tool {tool} returned a value that is not JSON: {why}"),
            )
        })
}

/// The outcomes of a batch function's answer: one `(ok, value)` pair per
/// call (tool, time left), in order.
pub fn batch_outcomes(
    calls: &[(String, Option<Duration>)],
    answered: &Bound<'_, PyAny>,
) -> Vec<Answered> {
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
fn pair_outcome(tool: &str, left: Option<Duration>, pair: &Bound<'_, PyAny>) -> Answered {
    let Ok(t) = pair.cast::<PyTuple>() else {
        return Err(failure(
            FailureKind::Failed,
            format!(
                "tool {tool}: the batch answered {}, not a pair",
                a_type(pair)
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
        outcome(tool, &value, Wire::new())
    } else {
        Err(failure(FailureKind::Failed, value.to_string()))
    }
}
