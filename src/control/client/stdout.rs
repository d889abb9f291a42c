//! The process's stdout once a client channel wrote its calls there
//! ([`ClientChannel::stdio`](super::ClientChannel::stdio)): the run's
//! final output (`lt run`'s result, `lambda_tool`'s result line) must come
//! after the last tool_call line, and must not wait forever for a client
//! that stopped reading.
//!
//! ```text
//! run ends ──▶ ClientChannel dropped: no queued line starts; the line being
//!              written is waited for while its bytes move (≤ 2 s without one)
//!          ──▶ write_final_output: a call line was left half-written ─▶ Abandoned at once
//!                                  else a plain write, which waits for a slow
//!                                  reader as any output does
//! ```
//!
//! On a stdout handed to a client, output not written whole (abandoned,
//! or a closed pipe) is a failure: the client did not receive the run's
//! result, and the process exits 2 (`cli::WRITE_FAILED`).
//!
//! Stdout is one per process, so the two facts this needs are too: that a
//! channel was handed stdout, and that one left a line half-written.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set when a client channel writes its calls on the process's stdout.
static HANDED_TO_CLIENT: AtomicBool = AtomicBool::new(false);

/// Set when a client channel closed with a call line still being written
/// on stdout: the client stopped reading in the middle of it.
static LEFT_HALF_WRITTEN: AtomicBool = AtomicBool::new(false);

pub(super) fn hand_to_client() {
    HANDED_TO_CLIENT.store(true, Ordering::SeqCst);
}

pub(super) fn left_half_written() {
    LEFT_HALF_WRITTEN.store(true, Ordering::SeqCst);
}

/// What became of the final output.
#[derive(Debug)]
pub enum FinalOutput {
    /// It was written, or writing it failed (a closed pipe, a full disk)
    /// on a stdout no client channel used.
    Written(std::io::Result<()>),
    /// It was not written whole on a stdout handed to a client: a call
    /// line was left half-written (nothing was written), or the write
    /// failed (a closed pipe included). The reason, for stderr.
    Abandoned(String),
}

/// Writes `bytes`, the last output of the process, on stdout, and flushes.
///
/// When no client channel was handed stdout this is a plain write, which
/// waits as long as the reader takes. Otherwise every channel has closed
/// (each waits for its last line, see `ClientChannel`'s `Drop`): the
/// output is given up at once if a call line was left half-written (the
/// output would land inside it), and is else written as plainly, waiting
/// for a slow reader; any failure, a closed pipe included, is
/// [`FinalOutput::Abandoned`].
pub fn write_final_output(bytes: Vec<u8>) -> FinalOutput {
    if !HANDED_TO_CLIENT.load(Ordering::SeqCst) {
        return FinalOutput::Written(write_stdout(&bytes));
    }
    if LEFT_HALF_WRITTEN.load(Ordering::SeqCst) {
        return FinalOutput::Abandoned(
            "the client stopped reading stdout in the middle of a tool_call line".to_string(),
        );
    }
    match write_stdout(&bytes) {
        Ok(()) => FinalOutput::Written(Ok(())),
        Err(e) => FinalOutput::Abandoned(format!("stdout could not be written ({e})")),
    }
}

fn write_stdout(bytes: &[u8]) -> std::io::Result<()> {
    let mut lock = std::io::stdout().lock();
    lock.write_all(bytes).and_then(|()| lock.flush())
}
