//! What a job of the pool is ([`crate::worker`]): the run its calls
//! belong to ([`RunState`]: its cancellation, the `KeyboardInterrupt` or
//! `SystemExit` a tool raised), what the job computes ([`Work`]: one call,
//! or a batch of `async` calls) and what it gives ([`Outcomes`]).

use crate::answer::{failure, timed_out_message, Answered};
use lt::runtime::cancel::Cancel;
use lt::runtime::host::FailureKind;
use pyo3::prelude::*;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// What one run's calls share: its cancellation, and the
/// `KeyboardInterrupt` / `SystemExit` a tool raised, to raise from
/// `lt.run`.
pub struct RunState {
    /// The session's cancellation.
    pub cancel: Cancel,
    /// `settle(result, job)`: the value of a function's result that is
    /// not of a plain type (an awaitable, awaited); `None`: such a result
    /// is converted as it is.
    pub(crate) settle: Option<Py<PyAny>>,
    escaped: Mutex<Option<PyErr>>,
}

impl RunState {
    /// The state of a run cancelled by `cancel`, whose results not of a
    /// plain type go through `settle` first.
    pub fn new(cancel: Cancel, settle: Option<Py<PyAny>>) -> Arc<RunState> {
        Arc::new(RunState {
            cancel,
            settle,
            escaped: Mutex::new(None),
        })
    }

    /// The `KeyboardInterrupt` or `SystemExit` a tool raised (the first),
    /// which cancelled the session.
    pub fn take_escaped(&self) -> Option<PyErr> {
        self.escaped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Records `err`, raised by `tool`, and cancels the session.
    pub(crate) fn escape(&self, py: Python<'_>, tool: &str, err: PyErr) {
        let ty = crate::answer::exception_name(py, &err);
        {
            let mut e = self.escaped.lock().unwrap_or_else(PoisonError::into_inner);
            if e.is_none() {
                *e = Some(err);
            }
        }
        self.cancel.cancel(format!("tool {tool} raised {ty}"));
    }
}

/// What a job computes, and how its Python result becomes outcomes.
pub enum Work {
    /// One call of the tool: the function takes the argument.
    One(Arc<str>),
    /// A batch (the `async` calls of a `gather` or `fan_out`): the
    /// function takes a list of `(tool, argument, timeout_s)` triples.
    /// Each call's tool and time left.
    Batch(Vec<(String, Option<Duration>)>),
}

impl Work {
    /// Whether `other` is one call of this work's tool (the same `Arc`);
    /// a batch is never the same.
    pub(crate) fn same(&self, other: &Work) -> bool {
        matches!((self, other), (Work::One(a), Work::One(b)) if Arc::ptr_eq(a, b))
    }

    /// Its tools, for a message (`tool {label} raised …`): the tool of one
    /// call; a batch's tools, each once, and how many calls it has.
    pub(crate) fn label(&self) -> String {
        match self {
            Work::One(t) => t.to_string(),
            // Each tool once (a `fan_out` of 5,000 calls named its tool
            // 5,000 times: break-it pass).
            Work::Batch(calls) => {
                let mut names: Vec<&str> = Vec::new();
                for (t, _) in calls {
                    if !names.contains(&t.as_str()) {
                        names.push(t);
                    }
                }
                match calls.len() {
                    1 => names.join(", "),
                    n => format!("{} (one of a batch of {n} calls)", names.join(", ")),
                }
            }
        }
    }

    /// Every call's `Err` of `kind`: `message(tool, time_left)`.
    pub(crate) fn all(
        &self,
        kind: FailureKind,
        message: impl Fn(&str, Option<Duration>) -> String,
        time_left: Option<Duration>,
    ) -> Outcomes {
        match self {
            Work::One(t) => Outcomes::One(Err(failure(kind, message(t, time_left)))),
            Work::Batch(calls) => Outcomes::Batch(
                calls
                    .iter()
                    .map(|(t, left)| Err(failure(kind, message(t, *left))))
                    .collect(),
            ),
        }
    }

    pub(crate) fn cancelled(&self) -> Outcomes {
        self.all(
            FailureKind::Unavailable,
            |t, _| format!("tool {t}: the session was cancelled"),
            None,
        )
    }

    pub(crate) fn timed_out(&self, time_left: Option<Duration>) -> Outcomes {
        self.all(
            FailureKind::TimedOut,
            |t, left| timed_out_message(t, left.unwrap_or_default()),
            time_left,
        )
    }
}

/// A job's outcomes: its one call's, or its batch's, one per call in
/// order (a single call allocates no vector).
pub enum Outcomes {
    /// The outcome of a [`Work::One`].
    One(Answered),
    /// The outcomes of a [`Work::Batch`].
    Batch(Vec<Answered>),
}

impl Outcomes {
    /// The outcome of a single call of `tool` (a batch's first).
    pub fn one(self, tool: &str) -> Answered {
        match self {
            Outcomes::One(o) => o,
            Outcomes::Batch(v) => v.into_iter().next().unwrap_or_else(|| {
                Err(failure(
                    FailureKind::Unavailable,
                    format!("tool {tool}: no outcome"),
                ))
            }),
        }
    }

    /// Every outcome, in order.
    pub fn into_vec(self) -> Vec<Answered> {
        match self {
            Outcomes::One(o) => vec![o],
            Outcomes::Batch(v) => v,
        }
    }
}
