//! Turning a tool's bytes into values and into the short text of a failure
//! message.
//!
//! JSON crosses the tool boundary at any depth: lt itself may send an
//! argument nested thousands of levels deep, and a tool may answer in kind.
//! serde_json's default recursion limit (128) would reject such output and
//! its unlimited recursion would overflow the stack, so [`parse_json`] and
//! [`to_json_bytes`] go through `serde_stacker`, which grows the stack on
//! demand, and every value built or thrown away here is dropped without
//! recursion ([`drop_deep`]).

use serde_json::Value as Json;

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

/// The deepest nesting a tool's output may have. lt's own types nest at
/// most about a thousand levels (the parser's depth limit), so deeper
/// output could never be valid; refusing it before parsing also keeps the
/// parser's error path, which is quadratic in the depth, away from it.
pub const MAX_OUTPUT_DEPTH: usize = 10_000;

/// The most JSON values (counting every array, object, and scalar) a tool's
/// output may hold, checked before parsing: parsed values take many times
/// the bytes of their text.
pub const MAX_OUTPUT_VALUES: usize = 10_000_000;

/// Why `bytes` is refused before parsing: too deep or too many values. One
/// linear pass that skips string contents.
pub(crate) fn check_shape(bytes: &[u8]) -> Result<(), String> {
    let (mut depth, mut values, mut in_string, mut escaped) = (0usize, 1usize, false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                values += 1;
                if depth > MAX_OUTPUT_DEPTH {
                    return Err(format!(
                        "it is nested more than {MAX_OUTPUT_DEPTH} levels deep"
                    ));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b',' => {
                values += 1;
                if values > MAX_OUTPUT_VALUES {
                    return Err(format!("it holds more than {MAX_OUTPUT_VALUES} values"));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Parses one JSON value (whitespace around it allowed) at any nesting
/// depth, without overflowing the stack, also when the input is invalid
/// after a deep prefix. A repeated key keeps its last value.
pub(crate) fn parse_json(bytes: &[u8]) -> Result<Json, serde_json::Error> {
    crate::runtime::deep_json::parse_slice(bytes, false)
}

/// `value` as compact JSON text, at any nesting depth.
pub(crate) fn to_json_bytes(value: &Json) -> Vec<u8> {
    crate::runtime::deep_json::to_compact(value)
}

pub(crate) use crate::runtime::boundary::drop_deep;

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

    fn nested(depth: usize, inner: &str, tail: &str) -> String {
        format!("{}{inner}{}{tail}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn parse_json_matches_serde_json() {
        for text in [
            r#" {"a": [1, -2, 3.5, 1e3, null, true, "s\u00e9"], "b": {}} "#,
            "18446744073709551615",
            "-9223372036854775808",
            "[]",
        ] {
            let ours = parse_json(text.as_bytes()).expect("parses");
            let theirs: Json = serde_json::from_str(text).expect("parses");
            assert_eq!(ours, theirs, "{text}");
        }
        for text in ["[1,", "1 2", "{\"a\" 1}", "1e400", ""] {
            assert!(parse_json(text.as_bytes()).is_err(), "{text}");
        }
    }

    #[test]
    fn deep_json_neither_hits_a_limit_nor_overflows_the_stack() {
        // Run on a thread with a small stack: 100 000 levels would need
        // tens of megabytes if anything recursed once per level.
        let worker = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let depth = 100_000;
                let value = parse_json(nested(depth, "7", "").as_bytes()).expect("deep");
                let text = to_json_bytes(&value);
                assert_eq!(text, nested(depth, "7", "").into_bytes());
                drop_deep(value);
                // Invalid after a deep, complete prefix, and inside one.
                assert!(parse_json(nested(depth, "7", " x").as_bytes()).is_err());
                let open = format!("[{}, }}", nested(depth, "1", ""));
                assert!(parse_json(open.as_bytes()).is_err());
                let object = format!("{{\"k\": {}, \"j\": ]", nested(depth, "{}", ""));
                assert!(parse_json(object.as_bytes()).is_err());
            })
            .expect("thread");
        worker.join().expect("no overflow");
    }
}
