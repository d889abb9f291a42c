//! The process's stdout once a client channel wrote its calls there
//! ([`ClientChannel::stdio`](super::ClientChannel::stdio)): the run's
//! final output (`lt run`'s result, `lambda_tool`'s result line) must come
//! after the last tool_call line, and must not wait forever for a client
//! that stopped reading.
//!
//! ```text
//! run ends ──▶ ClientChannel dropped: no queued line starts; the line being
//!              written is waited for while its bytes move (≤ 2 s without one)
//!          ──▶ StdoutHandoff::write_final: a call line was left half-written ─▶ Abandoned at once
//!                                          else a plain write, which waits for a slow
//!                                          reader as any output does
//! ```
//!
//! On a stdout handed to a client, output not written whole (abandoned,
//! or a closed pipe) is a failure: the client did not receive the run's
//! result, and the front end exits 2. The two facts this needs (a channel
//! was handed stdout; one left a line half-written) live in the
//! [`StdoutHandoff`] the front end creates and gives the channel, not in
//! process-wide flags.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Debug, Default)]
struct State {
    /// A client channel writes its calls on stdout.
    handed: AtomicBool,
    /// A client channel closed with a call line still being written.
    half_written: AtomicBool,
}

/// What a front end shares with the client channels it opens on stdout, to
/// write its final output after theirs. Clones share the state.
#[derive(Clone, Debug, Default)]
pub struct StdoutHandoff(Arc<State>);

impl StdoutHandoff {
    /// A hand-off no channel has used yet.
    pub fn new() -> StdoutHandoff {
        StdoutHandoff::default()
    }

    pub(super) fn hand_to_client(&self) {
        self.0.handed.store(true, Ordering::SeqCst);
    }

    pub(super) fn left_half_written(&self) {
        self.0.half_written.store(true, Ordering::SeqCst);
    }

    /// Writes `bytes`, the last output of the process, on stdout, and
    /// flushes.
    ///
    /// When no client channel was handed stdout this is a plain write,
    /// which waits as long as the reader takes. Otherwise every channel has
    /// closed (each waits for its last line, see `ClientChannel`'s `Drop`):
    /// the output is given up at once if a call line was left half-written
    /// (the output would land inside it), and is else written as plainly,
    /// waiting for a slow reader; any failure, a closed pipe included, is
    /// [`FinalOutput::Abandoned`].
    pub fn write_final(&self, bytes: Vec<u8>) -> FinalOutput {
        if !self.0.handed.load(Ordering::SeqCst) {
            return FinalOutput::Written(write_stdout(&bytes));
        }
        if self.0.half_written.load(Ordering::SeqCst) {
            return FinalOutput::Abandoned(
                "the client stopped reading stdout in the middle of a tool_call line".to_string(),
            );
        }
        match write_stdout(&bytes) {
            Ok(()) => FinalOutput::Written(Ok(())),
            Err(e) => FinalOutput::Abandoned(format!("stdout could not be written ({e})")),
        }
    }
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

fn write_stdout(bytes: &[u8]) -> std::io::Result<()> {
    let mut lock = std::io::stdout().lock();
    lock.write_all(bytes).and_then(|()| lock.flush())
}
