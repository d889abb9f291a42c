//! The process's stdout once a client channel wrote its calls there
//! ([`ClientChannel::stdio`](super::ClientChannel::stdio)): the run's
//! final output (`lt run`'s result, `lambda_tool`'s result line) must come
//! after the last tool_call line, and must not wait forever for a client
//! that stopped reading.
//!
//! ```text
//! run ends ──▶ ClientChannel dropped: no queued line starts; the line being
//!              written is waited for while its bytes move (≤ 2 s without one)
//!          ──▶ write_final_output: stdout was never handed to a client ─▶ a plain write
//!                                  a call line was left half-written ─▶ Abandoned at once
//!                                  else written on a thread of its own ─▶ Abandoned when
//!                                  stdout takes no byte for 2 s
//! ```
//!
//! Stdout is one per process, so the two facts this needs are too: that a
//! channel was handed stdout, and that one left a line half-written.

use super::pipe::{write_chunked, Gate, WriterDone};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Set when a client channel writes its calls on the process's stdout.
static HANDED_TO_CLIENT: AtomicBool = AtomicBool::new(false);

/// Set when a client channel closed with a call line still being written
/// on stdout: the client stopped reading in the middle of it.
static LEFT_HALF_WRITTEN: AtomicBool = AtomicBool::new(false);

/// How long the final output may go without stdout taking a byte.
const OUTPUT_STALL: Duration = Duration::from_secs(2);

pub(super) fn hand_to_client() {
    HANDED_TO_CLIENT.store(true, Ordering::SeqCst);
}

pub(super) fn left_half_written() {
    LEFT_HALF_WRITTEN.store(true, Ordering::SeqCst);
}

/// What became of the final output.
#[derive(Debug)]
pub enum FinalOutput {
    /// It was written, or writing it failed (a closed pipe, a full disk).
    Written(std::io::Result<()>),
    /// It was not written: a client holds stdout and does not read it.
    /// The reason, for stderr.
    Abandoned(String),
}

/// Writes `bytes`, the last output of the process, on stdout, and flushes.
///
/// When no client channel was handed stdout this is a plain write, which
/// waits as long as the reader takes. Otherwise every channel has closed
/// (each waits for its last line, see `ClientChannel`'s `Drop`), and the
/// output is given up at once if a call line was left half-written (the
/// output would land inside it), or once stdout takes no byte for 2 s.
pub fn write_final_output(bytes: Vec<u8>) -> FinalOutput {
    if !HANDED_TO_CLIENT.load(Ordering::SeqCst) {
        return FinalOutput::Written(write_stdout(&bytes));
    }
    if LEFT_HALF_WRITTEN.load(Ordering::SeqCst) {
        return FinalOutput::Abandoned(
            "the client stopped reading stdout in the middle of a tool_call line".to_string(),
        );
    }
    let gate = Arc::new(Gate::default());
    let done = WriterDone(Arc::clone(&gate));
    let (result_tx, result) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("lt-output".into())
        .spawn(move || {
            let stdout = std::io::stdout();
            let mut lock = stdout.lock();
            let written = write_chunked(&mut lock, &bytes, |n| done.0.advance(n));
            let _ = result_tx.send(written);
        });
    if let Err(e) = spawned {
        return FinalOutput::Written(Err(e));
    }
    if !gate.wait_writer(OUTPUT_STALL) {
        return FinalOutput::Abandoned(format!(
            "stdout took no byte for {} s (the client stopped reading it)",
            OUTPUT_STALL.as_secs()
        ));
    }
    match result.recv() {
        Ok(written) => FinalOutput::Written(written),
        Err(_) => FinalOutput::Written(Err(std::io::Error::other(
            "the output thread stopped before writing",
        ))),
    }
}

fn write_stdout(bytes: &[u8]) -> std::io::Result<()> {
    let mut lock = std::io::stdout().lock();
    lock.write_all(bytes).and_then(|()| lock.flush())
}
