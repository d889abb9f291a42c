//! Resource limits of a run, and the errors that end a run.
//!
//! A run stops with a [`RunError`] (never a panic) when it exceeds a limit or
//! meets an arithmetic fault. Tool failures are not run errors: they are
//! `Err` values the program handles.

use crate::source::Span;
use std::fmt;
use std::time::Duration;

/// The limits of one run. Every limit is checked before the work that would
/// exceed it, so a limit error means nothing past the limit happened.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Most tool calls (`exec`) in the run. Default 10,000.
    pub max_calls: u64,
    /// Most evaluation steps (fuel): one per IR node evaluated, one per value
    /// compared by `==`, and one per 64 bytes a `++` copies (so building a
    /// string is charged for its length). Default 100,000,000 (about a second of pure work).
    pub max_steps: u64,
    /// Wall-clock limit for the whole run, tool calls included. Default 300 s.
    pub timeout: Option<Duration>,
    /// Longest list a tool may return (a longer one is that call's `Err`).
    /// Also the longest list a standard-library function may build
    /// (`range`, `concat`, `flatten`, `flat_map`, `split`): `map` keeps the
    /// length, `filter` shortens, literals are as long as written. Default 10,000,000.
    pub max_list_len: usize,
    /// Longest string `++` may build, in bytes. Default 16 MiB.
    pub max_string_bytes: usize,
    /// Most value nodes in one tool argument, one tool result (a larger
    /// result is that call's `Err`) or the final value (values share
    /// structure, so a short program can describe a huge one). Default 10,000,000.
    pub max_value_nodes: usize,
    /// Most bytes all the strings built by `++` in a run may add up to, in
    /// total (bytes copied, not bytes alive: a bound on the memory a pure
    /// program can take through strings). Default 4 GiB.
    pub max_string_total_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_calls: 10_000,
            max_steps: 100_000_000,
            timeout: Some(Duration::from_secs(300)),
            max_list_len: 10_000_000,
            max_string_bytes: 16 * 1024 * 1024,
            max_value_nodes: 10_000_000,
            max_string_total_bytes: 4 * 1024 * 1024 * 1024,
        }
    }
}

impl Limits {
    /// The small limits of the fuzz harness (`fuzz/src/lib.rs`) and of
    /// `tests/fuzz_regressions.rs`: 64 calls, 200,000 steps, no wall-clock
    /// timeout (runs stay deterministic), lists of at most 1,000 elements,
    /// strings of at most 64 KiB, 20,000 value nodes, 1 MiB built by `++`.
    pub fn fuzz() -> Limits {
        Limits {
            max_calls: 64,
            max_steps: 200_000,
            timeout: None,
            max_list_len: 1_000,
            max_string_bytes: 64 * 1024,
            max_value_nodes: 20_000,
            max_string_total_bytes: 1024 * 1024,
        }
    }
}

/// What ended a run early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunErrorKind {
    /// More tool calls than [`Limits::max_calls`].
    CallLimit,
    /// More steps than [`Limits::max_steps`].
    StepLimit,
    /// The run's wall clock passed [`Limits::timeout`].
    Timeout,
    /// A list, string or value larger than its limit.
    SizeLimit,
    /// The number range: an Int result outside 64 bits, or a Float result
    /// that is not finite (division by zero is 0, not an error).
    Arithmetic,
    /// A broken invariant inside lt (a bug: please report it).
    Internal,
    /// The session was cancelled from outside ([`super::cancel::Cancel`]).
    Cancelled,
}

impl RunErrorKind {
    /// A stable snake_case name for JSON and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            RunErrorKind::CallLimit => "call_limit",
            RunErrorKind::StepLimit => "step_limit",
            RunErrorKind::Timeout => "timeout",
            RunErrorKind::SizeLimit => "size_limit",
            RunErrorKind::Arithmetic => "arithmetic",
            RunErrorKind::Internal => "internal",
            RunErrorKind::Cancelled => "cancelled",
        }
    }
}

/// A run that could not finish: the kind, a message, the node's source span
/// and a hint for the fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunError {
    /// What went wrong.
    pub kind: RunErrorKind,
    /// One sentence, e.g. `step limit of 1000 exceeded`.
    pub message: String,
    /// The expression being evaluated.
    pub span: Span,
    /// How to fix or avoid it.
    pub help: Option<String>,
}

impl RunError {
    /// A run error at `span`.
    pub fn new(kind: RunErrorKind, span: Span, message: impl Into<String>) -> RunError {
        RunError {
            kind,
            message: message.into(),
            span,
            help: None,
        }
    }

    /// Adds the hint.
    pub fn with_help(mut self, help: impl Into<String>) -> RunError {
        self.help = Some(help.into());
        self
    }

    /// An internal error (a bug in lt).
    pub fn internal(span: Span, message: impl Into<String>) -> RunError {
        RunError::new(RunErrorKind::Internal, span, message)
            .with_help("this is a bug in lt; please report it with the program")
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}
