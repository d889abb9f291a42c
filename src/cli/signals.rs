//! Signals for the one session a command runs: SIGINT, SIGTERM and SIGHUP
//! interrupt it ([`crate::exec::abandon_on_signals`]: its running tools and
//! MCP servers killed, nothing more recorded but a last
//! `session_interrupted`, so its log can be resumed), then lt exits with
//! 128 + the signal number: 130, 143 or 129 (the handler, or the command
//! once its session has settled: [`crate::runtime::cancel::Cancel::exit_status`]).
//! The handler belongs to the command, as the process does.

pub(super) use crate::exec::abandon_on_signals;

/// The executors' runtime of a command that runs one session: two worker
/// threads. Errors: it could not be started (the message says why).
pub(super) fn io_runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("lt-io")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the tokio runtime: {e}"))
}
