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
    /// A line too long to keep, being skipped.
    skipping: Option<Skipped>,
}

/// How much of each end of a line too long to keep is kept: 4 KiB (enough
/// to find the id of a response, [`Skipped::response_id`]).
const ENDS_KEPT: usize = 4 * 1024;

/// A line longer than [`MAX_OUTPUT_BYTES`]: its length and its two ends.
pub(super) struct Skipped {
    pub(super) len: usize,
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl Skipped {
    fn new(start: &[u8]) -> Skipped {
        let mut skipped = Skipped {
            len: 0,
            head: start[..start.len().min(ENDS_KEPT)].to_vec(),
            tail: Vec::new(),
        };
        skipped.push(start);
        skipped
    }

    fn push(&mut self, bytes: &[u8]) {
        self.len += bytes.len();
        if bytes.len() >= ENDS_KEPT {
            self.tail.clear();
            self.tail
                .extend_from_slice(&bytes[bytes.len() - ENDS_KEPT..]);
        } else {
            self.tail.extend_from_slice(bytes);
            let excess = self.tail.len().saturating_sub(ENDS_KEPT);
            self.tail.drain(..excess);
        }
    }

    /// The id of the JSON-RPC response this line holds, when one of its ends
    /// shows it: `{"jsonrpc":"2.0","id":7,…` (the id among the members
    /// before the first large one) or `…,"id":7}` (the id last).
    pub(super) fn response_id(&self) -> Option<u64> {
        id_at_start(&self.head).or_else(|| id_at_end(&self.tail))
    }
}

pub(super) enum Line {
    Text(Vec<u8>),
    TooLong(Skipped),
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
                skipped.push(&available[..take]);
            } else if self.buf.len() + take > MAX_OUTPUT_BYTES {
                let mut skipped = Skipped::new(&self.buf);
                skipped.push(&available[..take]);
                self.skipping = Some(skipped);
                self.buf = Vec::new();
            } else {
                self.buf.extend_from_slice(&available[..take]);
            }
            self.read.consume(take);
            if newline.is_some() {
                return match self.skipping.take() {
                    Some(skipped) => Line::TooLong(skipped),
                    None => Line::Text(std::mem::take(&mut self.buf)),
                };
            }
        }
    }
}

/// The `id` of the JSON object that `head` starts, if it is a number among
/// the members that `head` holds whole.
fn id_at_start(head: &[u8]) -> Option<u64> {
    let mut at = skip_space(head, 0);
    if head.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    loop {
        at = skip_space(head, at);
        let key_end = string_end(head, at)?;
        let key = &head[at..key_end];
        at = skip_space(head, key_end);
        if head.get(at) != Some(&b':') {
            return None;
        }
        at = skip_space(head, at + 1);
        if key == b"\"id\"" {
            let digits = head[at..].iter().take_while(|b| b.is_ascii_digit()).count();
            let after = skip_space(head, at + digits);
            if digits == 0 || !matches!(head.get(after), Some(b',' | b'}')) {
                return None;
            }
            return std::str::from_utf8(&head[at..at + digits])
                .ok()?
                .parse()
                .ok();
        }
        at = skip_space(head, value_end(head, at)?);
        match head.get(at) {
            Some(b',') => at += 1,
            _ => return None,
        }
    }
}

/// The `id` of the JSON object that `tail` ends, if it is its last member
/// and a number: `…,"id":7}`.
fn id_at_end(tail: &[u8]) -> Option<u64> {
    let tail = tail.trim_ascii_end().strip_suffix(b"}")?.trim_ascii_end();
    let digits = tail.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let (rest, number) = tail.split_at(tail.len() - digits);
    let rest = rest.trim_ascii_end().strip_suffix(b":")?.trim_ascii_end();
    let rest = rest.strip_suffix(b"\"id\"")?.trim_ascii_end();
    // The member before it, or the object's start: not the inside of a key.
    if !matches!(rest.last(), Some(b',' | b'{')) {
        return None;
    }
    std::str::from_utf8(number).ok()?.parse().ok()
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// The end (one past the closing quote) of the string starting at `at`.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The end of the JSON value starting at `at`, if `bytes` holds all of it.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while let Some(&b) = bytes.get(i) {
                match b {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let len = bytes[at..]
                .iter()
                .take_while(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
                .count();
            // A scalar cut off by the end of `bytes` is not known whole.
            (at + len < bytes.len()).then_some(at + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{id_at_end, id_at_start};

    #[test]
    fn the_id_of_a_response_is_found_at_either_end() {
        assert_eq!(
            id_at_start(br#"{"jsonrpc":"2.0","id":12,"result":{"content":[{"te"#),
            Some(12)
        );
        assert_eq!(
            id_at_start(br#" { "a" : [1, {"id": 3}], "b": "x\"}", "id" : 4 , "#),
            Some(4)
        );
        assert_eq!(id_at_start(br#"{"result":{"content":[{"text":"zzzz"#), None);
        assert_eq!(id_at_start(br#"{"jsonrpc":"2.0","id":"#), None);
        assert_eq!(id_at_start(br#"{"jsonrpc":"2.0","id":1"#), None);
        assert_eq!(id_at_end(br#"zz"}]},"jsonrpc":"2.0","id":7}"#), Some(7));
        assert_eq!(id_at_end(b"zz\"}]}, \"id\" : 8 }\n"), Some(8));
        assert_eq!(id_at_end(br#"zz"x\"id":7}"#), None);
        assert_eq!(id_at_end(br#"zz"id":7}"#), None);
        assert_eq!(id_at_end(br#"{"a":{"id":7}}"#), None);
        assert_eq!(id_at_end(br#","id":"7"}"#), None);
    }
}
