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

pub(crate) use crate::runtime::deep_json::to_compact;

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
    fn abbreviate_cuts_long_values_only() {
        let v: Json = serde_json::json!({"a": "x".repeat(500)});
        let short = abbreviate(&v, 10);
        assert_eq!(short, "{\"a\":\"xxxx…");
        assert_eq!(abbreviate(&serde_json::json!([1, 2]), 10), "[1,2]");
        assert_eq!(abbreviate(&serde_json::json!("λλλ"), 3), "\"λλ…");
    }
}
