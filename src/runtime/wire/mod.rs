//! The wire: a flat, `Send` form of JSON data for a host that runs a
//! call's function on another thread of this process (the Python package,
//! issue 28). One buffer crosses between the two threads instead of a
//! tree of allocations, and the interpreter writes a call's argument into
//! it and reads the result out of it against the tool's declared types
//! ([`typed`]), with no JSON tree at either end.
//!
//! The format (all integers little-endian):
//!
//! | tag | value | payload |
//! | --- | --- | --- |
//! | 0 | `null` | — |
//! | 1, 2 | `false`, `true` | — |
//! | 3 | an integer in `i64` | 8 bytes |
//! | 4 | an integer above `i64::MAX` (in `u64`) | 8 bytes |
//! | 5 | a finite float | 8 bytes (IEEE 754) |
//! | 6 | a string | `u32` byte length, UTF-8 bytes |
//! | 7 | an array | `u32` item count, the items |
//! | 8 | an object | `u32` entry count, each entry a key (as a string's payload) then its value |
//!
//! It means what JSON means: `Wire::from_json(j).to_json() == j`, numbers
//! included (`1` and `1.0` differ, as `serde_json`'s do). An object's
//! entries keep their order; a key written twice is read as JSON reads it
//! (the last one counts).

pub mod typed;

use serde_json::{Map, Number, Value as Json};
use std::fmt;

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const I64: u8 = 3;
const U64: u8 = 4;
const F64: u8 = 5;
const STR: u8 = 6;
const ARRAY: u8 = 7;
const OBJECT: u8 = 8;

/// The bytes a new [`Wire`] has room for.
const SMALL_VALUE: usize = 128;

/// The most a string, an array or an object may hold (counts are `u32`).
pub const MAX_COUNT: usize = u32::MAX as usize;

/// JSON data in one buffer: written by one thread, read by another.
///
/// Besides the bytes it counts what [`crate::runtime::boundary::check_size`]
/// bounds a result by: its values (every array, object and scalar; keys
/// are not values) and its longest array.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Wire {
    bytes: Vec<u8>,
    nodes: usize,
    longest: usize,
}

/// Where a container's count is patched once its items are written
/// ([`Wire::open_array`], [`Wire::close`]).
#[must_use]
#[derive(Debug)]
pub struct Open {
    at: usize,
    array: bool,
}

/// Why bytes are not a well-formed wire value (never for a [`Wire`]
/// written through its own methods and closed properly).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireError(pub String);

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed wire data: {}", self.0)
    }
}

impl Wire {
    /// An empty buffer (write exactly one value into it), with room for
    /// a small value (a call's usual argument or result) without growing.
    pub fn new() -> Wire {
        Wire {
            bytes: Vec::with_capacity(SMALL_VALUE),
            nodes: 0,
            longest: 0,
        }
    }

    /// Empties the buffer, keeping its memory, for the next value.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.nodes = 0;
        self.longest = 0;
    }

    /// The values written (arrays, objects and scalars; not keys).
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// The item count of the longest array written.
    pub fn longest_array(&self) -> usize {
        self.longest
    }

    /// The bytes, for a reader.
    pub fn reader(&self) -> Reader<'_> {
        Reader {
            bytes: &self.bytes,
            at: 0,
        }
    }

    /// Writes `null`.
    pub fn null(&mut self) {
        self.nodes += 1;
        self.bytes.push(NULL);
    }

    /// Writes a boolean.
    pub fn bool(&mut self, b: bool) {
        self.nodes += 1;
        self.bytes.push(if b { TRUE } else { FALSE });
    }

    /// Writes an integer.
    pub fn i64(&mut self, n: i64) {
        self.nodes += 1;
        self.bytes.push(I64);
        self.bytes.extend_from_slice(&n.to_le_bytes());
    }

    /// Writes an integer; one that fits in `i64` is written as one (so the
    /// same number always has the same bytes, as in JSON).
    pub fn u64(&mut self, n: u64) {
        match i64::try_from(n) {
            Ok(i) => self.i64(i),
            Err(_) => {
                self.nodes += 1;
                self.bytes.push(U64);
                self.bytes.extend_from_slice(&n.to_le_bytes());
            }
        }
    }

    /// Writes a float; `Err` for a NaN or an infinity, which JSON has no
    /// number for (the caller words the refusal).
    pub fn f64(&mut self, x: f64) -> Result<(), f64> {
        if !x.is_finite() {
            return Err(x);
        }
        self.nodes += 1;
        self.bytes.push(F64);
        self.bytes.extend_from_slice(&x.to_le_bytes());
        Ok(())
    }

    /// Writes a string (one of 4 GiB or more is cut to [`MAX_COUNT`]
    /// bytes, and may then not read back: [`Wire::str_checked`] refuses it).
    pub fn str(&mut self, s: &str) {
        self.nodes += 1;
        self.bytes.push(STR);
        self.text(s);
    }

    /// [`Wire::str`], or `Err` for a string of 4 GiB or more.
    pub fn str_checked(&mut self, s: &str) -> Result<(), usize> {
        if s.len() > MAX_COUNT {
            return Err(s.len());
        }
        self.str(s);
        Ok(())
    }

    /// Starts an array; its items follow, then [`Wire::close`] with their
    /// count.
    pub fn open_array(&mut self) -> Open {
        self.open(ARRAY, true)
    }

    /// Starts an object; its entries follow (each a [`Wire::key`] then a
    /// value), then [`Wire::close`] with their count.
    pub fn open_object(&mut self) -> Open {
        self.open(OBJECT, false)
    }

    fn open(&mut self, tag: u8, array: bool) -> Open {
        self.nodes += 1;
        self.bytes.push(tag);
        let at = self.bytes.len();
        self.bytes.extend_from_slice(&[0; 4]);
        Open { at, array }
    }

    /// Ends the container `open` with `count` items (entries); `Err` for a
    /// count beyond [`MAX_COUNT`].
    pub fn close(&mut self, open: Open, count: usize) -> Result<(), usize> {
        let n = u32::try_from(count).map_err(|_| count)?;
        self.bytes[open.at..open.at + 4].copy_from_slice(&n.to_le_bytes());
        if open.array {
            self.longest = self.longest.max(count);
        }
        Ok(())
    }

    /// Writes an object's key (its value follows).
    pub fn key(&mut self, k: &str) {
        self.text(k);
    }

    fn text(&mut self, s: &str) {
        // A string of 4 GiB cannot be read back: cut to what the count holds
        // (`str_checked` refuses it before it gets here).
        let n = u32::try_from(s.len()).unwrap_or(u32::MAX);
        self.bytes.extend_from_slice(&n.to_le_bytes());
        self.bytes.extend_from_slice(&s.as_bytes()[..n as usize]);
    }

    /// `json` on the wire.
    pub fn from_json(json: &Json) -> Wire {
        let mut w = Wire::new();
        w.json(json);
        w
    }

    /// Writes `json`.
    pub fn json(&mut self, json: &Json) {
        match json {
            Json::Null => self.null(),
            Json::Bool(b) => self.bool(*b),
            Json::Number(n) => {
                if let Some(i) = n.as_i64() {
                    self.i64(i);
                } else if let Some(u) = n.as_u64() {
                    self.u64(u);
                } else {
                    // serde_json holds finite floats only.
                    let _ = self.f64(n.as_f64().unwrap_or(0.0));
                }
            }
            Json::String(s) => self.str(s),
            Json::Array(items) => stacker::maybe_grow(32 * 1024, 1024 * 1024, || {
                let open = self.open_array();
                for item in items {
                    self.json(item);
                }
                let _ = self.close(open, items.len());
            }),
            Json::Object(map) => stacker::maybe_grow(32 * 1024, 1024 * 1024, || {
                let open = self.open_object();
                for (k, v) in map {
                    self.key(k);
                    self.json(v);
                }
                let _ = self.close(open, map.len());
            }),
        }
    }

    /// The value as JSON; `Err` for bytes not written as one whole value.
    pub fn to_json(&self) -> Result<Json, WireError> {
        let mut r = self.reader();
        let json = r.json()?;
        if !r.at_end() {
            return Err(WireError("bytes after the value".into()));
        }
        Ok(json)
    }
}

/// One step of reading a wire value: a scalar, or a container's start
/// with its count (its items, or its entries as [`Reader::key`] then a
/// value, follow).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Item<'a> {
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer in `i64`.
    I64(i64),
    /// An integer above `i64::MAX`.
    U64(u64),
    /// A finite float.
    F64(f64),
    /// A string.
    Str(&'a str),
    /// An array of this many items.
    Array(usize),
    /// An object of this many entries.
    Object(usize),
}

/// Reads a wire value front to back.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// Whether every byte has been read.
    pub fn at_end(&self) -> bool {
        self.at == self.bytes.len()
    }

    /// Whether the next value is `null` (not read).
    pub fn next_is_null(&self) -> bool {
        self.bytes.get(self.at) == Some(&NULL)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| WireError("cut short".into()))?;
        let b = &self.bytes[self.at..end];
        self.at = end;
        Ok(b)
    }

    fn word(&mut self) -> Result<[u8; 8], WireError> {
        let b = self.take(8)?;
        let mut w = [0; 8];
        w.copy_from_slice(b);
        Ok(w)
    }

    fn count(&mut self) -> Result<usize, WireError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }

    fn text(&mut self) -> Result<&'a str, WireError> {
        let b = self.text_bytes()?;
        std::str::from_utf8(b).map_err(|_| WireError("a string that is not UTF-8".into()))
    }

    /// A string's bytes, not checked to be UTF-8 (to compare or to pass).
    fn text_bytes(&mut self) -> Result<&'a [u8], WireError> {
        let n = self.count()?;
        self.take(n)
    }

    /// The next item.
    pub fn item(&mut self) -> Result<Item<'a>, WireError> {
        let tag = *self.take(1)?.first().unwrap_or(&u8::MAX);
        Ok(match tag {
            NULL => Item::Null,
            FALSE => Item::Bool(false),
            TRUE => Item::Bool(true),
            I64 => Item::I64(i64::from_le_bytes(self.word()?)),
            U64 => Item::U64(u64::from_le_bytes(self.word()?)),
            F64 => Item::F64(f64::from_le_bytes(self.word()?)),
            STR => Item::Str(self.text()?),
            ARRAY => Item::Array(self.count()?),
            OBJECT => Item::Object(self.count()?),
            other => return Err(WireError(format!("unknown tag {other}"))),
        })
    }

    /// The next object key.
    pub fn key(&mut self) -> Result<&'a str, WireError> {
        self.text()
    }

    /// The next object key's bytes, not checked to be UTF-8 (to compare
    /// with a name).
    pub fn key_bytes(&mut self) -> Result<&'a [u8], WireError> {
        self.text_bytes()
    }

    /// Passes over the next whole value.
    pub fn skip(&mut self) -> Result<(), WireError> {
        // A scalar (most of a record's entries) is passed at once.
        match self.bytes.get(self.at) {
            Some(&(NULL | FALSE | TRUE)) => {
                self.at += 1;
                return Ok(());
            }
            Some(&(I64 | U64 | F64)) => {
                self.take(9)?;
                return Ok(());
            }
            Some(&STR) => {
                self.at += 1;
                self.text_bytes()?;
                return Ok(());
            }
            _ => {}
        }
        // Containers still to pass, as counts of values left in each.
        let mut left: usize = 1;
        let mut stack: Vec<(usize, bool)> = Vec::new();
        let mut in_object = false;
        loop {
            while left == 0 {
                match stack.pop() {
                    Some((l, o)) => {
                        left = l;
                        in_object = o;
                    }
                    None => return Ok(()),
                }
            }
            left -= 1;
            if in_object {
                self.text_bytes()?;
            }
            let tag = *self.take(1)?.first().unwrap_or(&u8::MAX);
            let item = match tag {
                STR => {
                    self.text_bytes()?;
                    continue;
                }
                _ => {
                    self.at -= 1;
                    self.item()?
                }
            };
            match item {
                Item::Array(n) => {
                    stack.push((left, in_object));
                    left = n;
                    in_object = false;
                }
                Item::Object(n) => {
                    stack.push((left, in_object));
                    left = n;
                    in_object = true;
                }
                _ => {}
            }
        }
    }

    /// Where the reader is, in bytes from the start.
    pub fn position(&self) -> usize {
        self.at
    }

    /// A reader of the same bytes from `position` (one a reader was at).
    pub fn at(&self, position: usize) -> Reader<'a> {
        Reader {
            bytes: self.bytes,
            at: position.min(self.bytes.len()),
        }
    }

    /// The bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    /// The next value as JSON.
    pub fn json(&mut self) -> Result<Json, WireError> {
        Ok(match self.item()? {
            Item::Null => Json::Null,
            Item::Bool(b) => Json::Bool(b),
            Item::I64(i) => Json::from(i),
            Item::U64(u) => Json::from(u),
            Item::F64(x) => Number::from_f64(x)
                .map(Json::Number)
                .ok_or_else(|| WireError(format!("the float {x}")))?,
            Item::Str(s) => Json::String(s.to_string()),
            Item::Array(n) => stacker::maybe_grow(32 * 1024, 1024 * 1024, || {
                let mut items = Vec::with_capacity(n.min(self.bytes.len()));
                for _ in 0..n {
                    items.push(self.json()?);
                }
                Ok::<_, WireError>(Json::Array(items))
            })?,
            Item::Object(n) => stacker::maybe_grow(32 * 1024, 1024 * 1024, || {
                let mut map = Map::new();
                for _ in 0..n {
                    let k = self.key()?.to_string();
                    let v = self.json()?;
                    map.insert(k, v);
                }
                Ok::<_, WireError>(Json::Object(map))
            })?,
        })
    }
}

#[cfg(test)]
mod tests;
