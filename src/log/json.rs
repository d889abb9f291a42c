//! JSON text in and out of the log, at any nesting depth.
//!
//! A tool may answer with JSON nested thousands of levels deep, and the log
//! records that output verbatim; so the log parses and prints with the
//! executors' depth-safe JSON (`runtime/deep_json.rs`).
//!
//! Reading is stricter than `serde_json::from_str`: an object with the same
//! key twice is rejected. `serde_json` keeps the last value of a repeated
//! key, so without this check a line could carry a second, unhashed
//! reading of a field (`{"seq":99,…,"seq":3,…}`) for a reader that keeps
//! the first one.

use serde::Serialize;
use serde_json::Value as Json;

/// Why a line is not JSON: the parser's message and the 1-based column
/// (in characters' bytes: serde_json counts bytes) where it stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub message: String,
    pub column: usize,
}

/// Parses one JSON value at any depth, rejecting repeated object keys.
/// Whitespace around the value is allowed here; the canonical-form check
/// of the verifier rejects it later.
pub(crate) fn parse_strict(text: &str) -> Result<Json, SyntaxError> {
    let parsed = crate::runtime::deep_json::parse_str(text, true);
    parsed.map_err(|e| {
        let full = e.to_string();
        // serde_json appends " at line L column C"; the caller knows the line.
        let message = match full.rfind(" at line ") {
            Some(at) => full[..at].to_string(),
            None => full,
        };
        SyntaxError {
            message,
            column: e.column(),
        }
    })
}

pub(crate) use crate::runtime::deep_json::{to_compact, write_compact};

/// Appends `text` as a JSON string, escaped exactly as serde_json escapes
/// it: `"`, `\\` and control characters, nothing else. Text with nothing
/// to escape (session ids, hashes, timestamps, most names) is copied as is.
pub(crate) fn write_str(out: &mut Vec<u8>, text: &str) {
    if needs_escape(text.as_bytes()) {
        let mut ser = serde_json::Serializer::new(out);
        // Writing into a Vec cannot fail.
        let _ = text.serialize(&mut ser);
    } else {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    }
}

/// Whether `bytes` hold a byte JSON escapes: a control character (below
/// 0x20), `"` or `\\`. Eight bytes at a time (the log scans every string
/// of every event): in a word `x`, `(x - 0x01…01 * n) & !x & 0x80…80` is
/// non-zero exactly when some byte of `x` is below `n` (for `n` up to 128),
/// and a byte equal to `c` is a zero byte of `x ^ 0x01…01 * c`.
fn needs_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGH != 0;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let mut le = [0u8; 8];
        le.copy_from_slice(word);
        let x = u64::from_le_bytes(le);
        if below(x, 0x20) || below(x ^ (ONES * 0x22), 1) || below(x ^ (ONES * 0x5c), 1) {
            return true;
        }
    }
    words
        .remainder()
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

/// Appends `value` as compact JSON, at any depth: a scalar directly, an
/// array or object through the depth-safe printer.
pub(crate) fn write_json(out: &mut Vec<u8>, value: &Json) {
    match value {
        Json::Array(_) | Json::Object(_) => write_compact(out, value),
        Json::String(text) => write_str(out, text),
        Json::Null | Json::Bool(_) | Json::Number(_) => {
            let mut ser = serde_json::Serializer::new(out);
            // Writing into a Vec cannot fail.
            let _ = value.serialize(&mut ser);
        }
    }
}

/// Appends `n` as JSON (plain digits).
pub(crate) fn write_u64(out: &mut Vec<u8>, n: u64) {
    let mut ser = serde_json::Serializer::new(out);
    // Writing into a Vec cannot fail.
    let _ = n.serialize(&mut ser);
}

/// A `std::io::Write` that keeps at most `limit` bytes and then fails, so
/// that printing a huge value to show its first 100 characters stops early.
struct Capped {
    out: Vec<u8>,
    limit: usize,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.limit - self.out.len();
        if room == 0 {
            return Err(std::io::Error::other("enough"));
        }
        let n = room.min(buf.len());
        self.out.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The compact JSON text of `value`, cut to at most `chars` characters with
/// `…` appended when it was longer. Stops printing once it has enough.
pub(crate) fn abbreviate(value: &Json, chars: usize) -> String {
    let mut capped = Capped {
        out: Vec::new(),
        limit: chars.saturating_mul(4).saturating_add(4),
    };
    let mut ser = serde_json::Serializer::new(&mut capped);
    let complete = value
        .serialize(serde_stacker::Serializer::new(&mut ser))
        .is_ok();
    let text = String::from_utf8_lossy(&capped.out);
    cut(&text, chars, !complete)
}

/// `text` cut to at most `chars` characters, with `…` when anything was
/// cut (or `more` says the text was already incomplete).
pub(crate) fn cut(text: &str, chars: usize, more: bool) -> String {
    let mut rest = text.chars();
    let mut out: String = rest.by_ref().take(chars).collect();
    if more || rest.next().is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::boundary::drop_deep;

    #[test]
    fn repeated_keys_are_rejected_at_any_level() {
        assert!(parse_strict(r#"{"a":1,"b":2}"#).is_ok());
        let e = parse_strict(r#"{"a":1,"a":2}"#).expect_err("repeated");
        assert!(e.message.contains("\"a\" appears twice"), "{e:?}");
        assert!(parse_strict(r#"{"x":[{"k":1,"k":1}]}"#).is_err());
    }

    #[test]
    fn syntax_errors_name_the_column() {
        let e = parse_strict(r#"{"a":1,}"#).expect_err("trailing comma");
        assert_eq!(e.column, 8, "{e:?}");
        assert!(!e.message.contains("line"), "{e:?}");
        assert!(parse_strict("{} x").is_err());
    }

    #[test]
    fn deep_values_parse_print_and_drop_on_a_small_stack() {
        let worker = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let depth = 10_000;
                let text = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
                let value = parse_strict(&text).expect("deep");
                assert_eq!(to_compact(&value), text.as_bytes());
                assert_eq!(abbreviate(&value, 3), "[[[…");
                drop_deep(value);
                assert!(parse_strict(&format!("{}1", "[".repeat(depth))).is_err());
            })
            .expect("thread");
        worker.join().expect("no stack overflow");
    }

    #[test]
    fn strings_and_numbers_are_written_as_serde_json_writes_them() {
        let texts = [
            "",
            "plain n7[n3:2] 0123456789abcdef",
            "quote \" backslash \\ slash / DEL \u{7f} é λ",
            "controls \u{0}\u{1}\u{8}\u{9}\u{a}\u{c}\u{d}\u{1f} end",
        ];
        for text in texts {
            let mut out = b"x".to_vec();
            write_str(&mut out, text);
            assert_eq!(&out[1..], to_compact(text).as_slice(), "{text:?}");
        }
        for n in [0, 7, 10, u64::MAX] {
            let mut out = Vec::new();
            write_u64(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
        }
    }

    #[test]
    fn the_word_scan_finds_every_escaped_byte_anywhere() {
        let plain = |b: u8| b >= 0x20 && b != b'"' && b != b'\\';
        for len in 1..20 {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    assert_eq!(needs_escape(&bytes), !plain(b), "{b:#x} at {at} of {len}");
                    // Bytes that borrow or carry next to it change nothing.
                    bytes
                        .iter_mut()
                        .filter(|x| **x == b'a')
                        .for_each(|x| *x = 0xff);
                    assert_eq!(
                        needs_escape(&bytes),
                        !plain(b),
                        "{b:#x} at {at} of {len}, 0xff around"
                    );
                    bytes
                        .iter_mut()
                        .filter(|x| **x == 0xff)
                        .for_each(|x| *x = 0x20);
                    assert_eq!(
                        needs_escape(&bytes),
                        !plain(b),
                        "{b:#x} at {at} of {len}, 0x20 around"
                    );
                }
            }
        }
        assert!(!needs_escape(b""));
    }

    #[test]
    fn abbreviate_cuts_long_values_only() {
        let v: Json = serde_json::json!({"a": "x".repeat(500)});
        let short = abbreviate(&v, 10);
        assert_eq!(short, "{\"a\":\"xxxx…");
        assert_eq!(abbreviate(&serde_json::json!([1, 2]), 10), "[1,2]");
        assert_eq!(abbreviate(&serde_json::json!("λλλ"), 3), "\"λλ…");
    }
}
