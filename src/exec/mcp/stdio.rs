//! Reading a server's stdout and stderr: whole lines of stdout, each at
//! most [`MAX_OUTPUT_BYTES`], and the tail of stderr.

use super::super::command::{MAX_OUTPUT_BYTES, STDERR_KEEP_BYTES};
use std::collections::VecDeque;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStdout;

/// The last [`STDERR_KEEP_BYTES`] of a stream.
#[derive(Default)]
pub(super) struct StderrTail {
    bytes: VecDeque<u8>,
    dropped: bool,
}

impl StderrTail {
    pub(super) fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend(chunk);
        let excess = self.bytes.len().saturating_sub(STDERR_KEEP_BYTES);
        if excess > 0 {
            self.bytes.drain(..excess);
            self.dropped = true;
        }
    }

    pub(super) fn text(&self) -> String {
        let bytes: Vec<u8> = self.bytes.iter().copied().collect();
        // Not from the middle of a character.
        let start = if self.dropped {
            bytes
                .iter()
                .take_while(|b| (0x80..0xC0).contains(*b))
                .count()
        } else {
            0
        };
        let text = String::from_utf8_lossy(&bytes[start..]);
        let text = text.trim();
        if self.dropped && !text.is_empty() {
            format!("…{text}")
        } else {
            text.to_string()
        }
    }
}

/// Lines of a server's stdout, each at most [`MAX_OUTPUT_BYTES`]. Cancel
/// safe: a partial line stays in the buffer for the next call.
pub(super) struct Lines {
    read: BufReader<ChildStdout>,
    buf: Vec<u8>,
    /// The length so far of a line too long to keep, being skipped.
    skipping: Option<usize>,
}

pub(super) enum Line {
    Text(Vec<u8>),
    TooLong(usize),
    End,
}

impl Lines {
    pub(super) fn new(stdout: ChildStdout) -> Lines {
        Lines {
            read: BufReader::with_capacity(64 * 1024, stdout),
            buf: Vec::new(),
            skipping: None,
        }
    }

    pub(super) async fn next(&mut self) -> Line {
        loop {
            let available = match self.read.fill_buf().await {
                Ok(a) => a,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return Line::End,
            };
            if available.is_empty() {
                // A last line without its newline is still a line.
                if self.skipping.take().is_none() && !self.buf.is_empty() {
                    return Line::Text(std::mem::take(&mut self.buf));
                }
                return Line::End;
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            if let Some(skipped) = &mut self.skipping {
                *skipped += take;
            } else if self.buf.len() + take > MAX_OUTPUT_BYTES {
                self.skipping = Some(self.buf.len() + take);
                self.buf = Vec::new();
            } else {
                self.buf.extend_from_slice(&available[..take]);
            }
            self.read.consume(take);
            if newline.is_some() {
                return match self.skipping.take() {
                    Some(n) => Line::TooLong(n),
                    None => Line::Text(std::mem::take(&mut self.buf)),
                };
            }
        }
    }
}
