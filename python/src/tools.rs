//! Python functions as tools: the wire closures of an
//! [`InProcessHost`](lt::exec::in_process::InProcessHost). Each call is
//! handed to a Python thread ([`crate::worker`]) and waited for until the
//! call's deadline or the session's cancellation: the argument (on the
//! engine's wire, written from the program's value) becomes Python
//! objects, the function is called with it as its first positional
//! argument, and its result goes back on the wire (the engine then reads
//! it against the declared output type). A function that raises is the call's
//! `Err` (`tool T raised ValueError: …`); a result that is not JSON is a
//! `bad_output` `Err`, like any executor's garbage; a call that outlives
//! its deadline is a `timed_out` `Err`.

use crate::answer::failure;
use crate::work::{RunState, Work};
use crate::worker::{perform, submit};
use lt::exec::in_process::{json_outcome, BatchFn, InProcessCall, InProcessHost, WireFn};
use lt::runtime::host::{FailureKind, Outcome};
use lt::runtime::wire::Wire;
use pyo3::prelude::*;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The host of `tools` (name → the Python function, taking the argument).
/// `batch`, when given, performs the calls of a `gather` or `fan_out`
/// batch to the functions named in `async_tools`, together: it is called
/// on a pool thread with a pair `(slots, calls)`, `calls` a list of
/// `(tool, argument, timeout_s)` triples of which at most `slots` may run
/// at once, and returns one `(ok, value_or_message)` pair per call, in
/// order (`ok` is `None` for a call that timed out). The batch's other
/// calls are performed one by one meanwhile, on a slot of their own, so
/// that at most the profile's `max_concurrency` calls run at once. Every
/// call stops waiting when the run is cancelled.
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
        let f: WireFn<'static> = Box::new(move |call| {
            perform(&f, call.arg, Work::One(tool.clone()), call.time_left, &run).one(call.tool)
        });
        host = host.wire_tool(name, f);
    }
    if let Some((b, async_tools)) = batch {
        let b = Arc::new(b);
        let f: BatchFn<'static> = Box::new(move |calls, limit| {
            call_batch(&b, &async_tools, &functions, calls, limit, &run)
        });
        host = host.with_batch(f);
    }
    host
}

/// How long past its longest call's time a batch is waited for. The
/// batch function answers each call that outlives its own time as timed
/// out; waited for only that long, the batch timed out at the same moment
/// as its slowest call, and every call of it was reported timed out, even
/// those that had finished (break-it pass). A run's own deadline may be
/// passed by this much.
const BATCH_GRACE: Duration = Duration::from_millis(100);

/// A batch: its `async` calls handed to the batch function at once (each
/// with its own time left; at most `limit` running at once, or one fewer
/// when the batch has other calls), its other calls performed one by one
/// meanwhile, then the batch waited for until its last deadline (and
/// [`BATCH_GRACE`]).
fn call_batch(
    b: &Arc<Py<PyAny>>,
    async_tools: &[String],
    functions: &BTreeMap<String, Arc<Py<PyAny>>>,
    calls: Vec<InProcessCall<'_>>,
    limit: usize,
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
        let time_left = every_left
            .and_then(|l| l.into_iter().max())
            .map(|t| t + BATCH_GRACE);
        let work = Work::Batch(
            together
                .iter()
                .map(|(_, c)| (c.tool.to_string(), c.time_left))
                .collect(),
        );
        let at: Vec<(usize, String)> = together
            .iter()
            .map(|(i, c)| (*i, c.tool.to_string()))
            .collect();
        let slots = if alone.is_empty() {
            limit
        } else {
            limit.saturating_sub(1)
        }
        .max(1);
        let calls = Json::Array(
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
        let arg = Json::Array(vec![Json::from(slots), calls]);
        (at, submit(b, Wire::from_json(&arg), work, time_left, run))
    });
    let began = std::time::Instant::now();
    for (i, c) in alone {
        // The wait for the calls before it counts against its time, as a
        // wait for a slot does (break-it pass: past the run's deadline,
        // each call still started with the time the batch began with).
        let time_left = c.time_left.map(|t| t.saturating_sub(began.elapsed()));
        outcomes[i] = Some(match functions.get(c.tool) {
            Some(f) => {
                let arg = Wire::from_json(&c.arg);
                let answered =
                    perform(f, arg, Work::One(Arc::from(c.tool)), time_left, run).one(c.tool);
                json_outcome(c.tool, answered)
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
        for ((i, tool), o) in at.into_iter().zip(answered) {
            outcomes[i] = Some(json_outcome(&tool, o));
        }
    }
    outcomes
        .into_iter()
        .map(|o| o.unwrap_or_else(|| Err(failure(FailureKind::Unavailable, "no outcome".into()))))
        .collect()
}
