//! Turning a tool's bytes into the short text of a failure message.

/// Keeps the first and the last `keep` bytes of a stream of unknown length.
#[derive(Debug)]
pub(crate) struct Tail {
    keep: usize,
    head: Vec<u8>,
    /// The last `keep` bytes seen after `head` filled up (a ring would save
    /// copies; stderr is small and this is simple).
    tail: Vec<u8>,
    total: usize,
}

impl Tail {
    pub(crate) fn new(keep: usize) -> Tail {
        Tail {
            keep,
            head: Vec::new(),
            tail: Vec::new(),
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total = self.total.saturating_add(bytes.len());
        let room = self.keep.saturating_sub(self.head.len());
        let into_head = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..into_head]);
        bytes = &bytes[into_head..];
        if bytes.len() >= self.keep {
            self.tail.clear();
            self.tail
                .extend_from_slice(&bytes[bytes.len() - self.keep..]);
        } else {
            self.tail.extend_from_slice(bytes);
            let excess = self.tail.len().saturating_sub(self.keep);
            self.tail.drain(..excess);
        }
    }

    /// The kept text, lossily decoded and trimmed; when bytes were dropped
    /// between head and tail, a `[… N bytes omitted …]` line marks the gap.
    pub(crate) fn finish(self) -> String {
        let omitted = self.total - self.head.len() - self.tail.len();
        let head = String::from_utf8_lossy(&self.head);
        let tail = String::from_utf8_lossy(&self.tail);
        if omitted == 0 {
            format!("{head}{tail}").trim().to_string()
        } else {
            format!(
                "{}\n[… {omitted} bytes omitted …]\n{}",
                head.trim_start(),
                tail.trim_end()
            )
        }
    }
}

/// The start of `bytes` as text: at most `chars` characters, `…` appended
/// if there was more.
pub(crate) fn excerpt(bytes: &[u8], chars: usize) -> String {
    // Decoding a prefix is enough: 4 bytes per character at most.
    let prefix = &bytes[..bytes.len().min(chars.saturating_mul(4))];
    let text = String::from_utf8_lossy(prefix);
    let mut rest = text.chars();
    let mut out: String = rest.by_ref().take(chars).collect();
    if rest.next().is_some() || prefix.len() < bytes.len() {
        out.push('…');
    }
    out
}

/// `; stderr: …` to append to a message, or nothing if stderr was empty.
pub(crate) fn stderr_suffix(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; stderr: {stderr}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_head_and_tail() {
        let mut t = Tail::new(4);
        t.push(b"abcdefghij");
        t.push(b"kl");
        assert_eq!(t.finish(), "abcd\n[… 4 bytes omitted …]\nijkl");
        let mut t = Tail::new(8);
        t.push(b" ab");
        t.push(b"cdef \n");
        assert_eq!(t.finish(), "abcdef");
    }

    #[test]
    fn excerpt_cuts_and_marks() {
        assert_eq!(excerpt(b"hello", 10), "hello");
        assert_eq!(excerpt(b"hello world", 5), "hello…");
        assert_eq!(excerpt("λλλ".as_bytes(), 2), "λλ…");
    }
}
