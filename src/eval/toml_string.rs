//! Where each byte of a TOML string's value sits in the file: an lt
//! criterion is a TOML string, and its diagnostics must point into the
//! suite file, not into the program it is checked as.
//!
//! [`offsets`] decodes the string literal as TOML does (basic `"…"` with
//! escapes, literal `'…'`, and both multi-line forms, whose first newline
//! is dropped and whose line-ending backslash swallows the whitespace
//! after it) and records, for every byte of the value and one past its
//! end, the offset of the source byte it came from.

/// The source offset, within `raw` (the literal with its quotes), of each
/// byte of the decoded value, plus one entry for its end. `None` when the
/// decoding does not give back `value` (a form this does not know): the
/// caller then points at the literal as a whole.
pub fn offsets(raw: &str, value: &str) -> Option<Vec<usize>> {
    let (open, basic) = if raw.starts_with("\"\"\"") {
        (3, true)
    } else if raw.starts_with("'''") {
        (3, false)
    } else if raw.starts_with('"') {
        (1, true)
    } else if raw.starts_with('\'') {
        (1, false)
    } else {
        return None;
    };
    let close = raw.len().checked_sub(open).filter(|c| *c >= open)?;
    let mut i = open;
    if open == 3 {
        if raw[i..close].starts_with('\n') {
            i += 1;
        } else if raw[i..close].starts_with("\r\n") {
            i += 2;
        }
    }
    let bytes = raw.as_bytes();
    let mut out = String::new();
    let mut map = Vec::new();
    while i < close {
        let c = raw[i..].chars().next()?;
        if basic && c == '\\' {
            let next = raw[i + 1..].chars().next()?;
            let simple = match next {
                'b' => Some('\u{8}'),
                't' => Some('\t'),
                'n' => Some('\n'),
                'f' => Some('\u{c}'),
                'r' => Some('\r'),
                'e' => Some('\u{1b}'),
                '"' => Some('"'),
                '\\' => Some('\\'),
                _ => None,
            };
            if let Some(s) = simple {
                push(&mut out, &mut map, s, i);
                i += 2;
            } else if next == 'u' || next == 'U' || next == 'x' {
                let n = match next {
                    'u' => 4,
                    'U' => 8,
                    _ => 2,
                };
                let hex = raw.get(i + 2..i + 2 + n)?;
                let ch = char::from_u32(u32::from_str_radix(hex, 16).ok()?)?;
                push(&mut out, &mut map, ch, i);
                i += 2 + n;
            } else if open == 3 && next.is_whitespace() {
                // A line-ending backslash: skip whitespace and newlines.
                i += 1;
                while i < close && (bytes[i] as char).is_ascii_whitespace() {
                    i += 1;
                }
            } else {
                return None;
            }
        } else {
            push(&mut out, &mut map, c, i);
            i += c.len_utf8();
        }
    }
    map.push(close);
    (out == value).then_some(map)
}

fn push(out: &mut String, map: &mut Vec<usize>, c: char, at: usize) {
    out.push(c);
    map.extend(std::iter::repeat_n(at, c.len_utf8()));
}

#[cfg(test)]
mod tests {
    use super::offsets;

    #[test]
    fn basic_literal_and_multiline_strings_map_back() {
        let m = offsets(r#""a\"b""#, "a\"b").expect("offsets of a basic string");
        assert_eq!(m, vec![1, 2, 4, 5]);
        let m = offsets("'a\\b'", "a\\b").expect("offsets of a literal string");
        assert_eq!(m, vec![1, 2, 3, 4]);
        let raw = "\"\"\"\nx ==\n  y\"\"\"";
        let m = offsets(raw, "x ==\n  y").expect("offsets of a multi-line string");
        assert_eq!(&raw[m[5]..m[5] + 1], " ");
        assert_eq!(&raw[m[7]..m[7] + 1], "y");
        let raw = "\"\"\"a \\\n    b\"\"\"";
        let m = offsets(raw, "a b").expect("offsets of a line-ending backslash");
        assert_eq!(&raw[m[2]..m[2] + 1], "b");
        assert!(offsets("\"x\"", "y").is_none());
    }
}
