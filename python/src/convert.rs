//! Values across the boundary: JSON (what the engine gives a tool and the
//! program's value) to Python objects and back. Both ways go through the
//! engine's [`Wire`] (a tool's argument and result travel between the
//! session's thread and a pool thread as one, with no JSON tree at either
//! end); JSON is converted to and from it.
//!
//! JSON → Python: `null` → `None`, booleans, integers (`int`), floats,
//! strings, arrays → `list`, objects → `dict`. Python → JSON: `None`,
//! `bool`, `int` (past 64 bits, the nearest float, as JSON's reader gives
//! such a number from any executor), `float` (finite), `str`, `list` / `tuple` →
//! arrays, `dict` with `str` keys → objects. Anything else is refused with
//! the path of the offending part (`result["items"][3]: a set is not
//! JSON`), which the engine turns into the call's `Err`, like any executor's
//! bad output. Nesting is bounded ([`MAX_DEPTH`]): a cyclic or absurdly
//! deep value is refused, never a stack overflow.
//!
//! Each call of a tool goes through both ways, so the common case is made
//! cheap: a value's type is first compared with the plain types exactly
//! (subclasses take the longer way), and a pool thread builds an
//! argument's dicts with the `str` keys it made before ([`Keys`]).

use lt::runtime::wire::{Item, Reader, Wire};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::Value as Json;
use std::borrow::Cow;

/// The deepest Python value converted to JSON: as deep as a tool's result
/// may nest ([`lt::runtime::boundary::MAX_JSON_DEPTH`], 10,000 levels,
/// whose check then has the last word); a cycle hits it too.
pub const MAX_DEPTH: usize = lt::runtime::boundary::MAX_JSON_DEPTH;

/// The most values (arrays, objects and scalars) a Python value converted
/// to JSON holds: a command executor's output's ([`lt::exec::MAX_OUTPUT_VALUES`]).
pub const MAX_VALUES: usize = lt::exec::MAX_OUTPUT_VALUES;

/// `v` as a Python object.
pub fn to_py<'py>(py: Python<'py>, v: &Json) -> PyResult<Bound<'py, PyAny>> {
    wire_to_py(py, &Wire::from_json(v), &mut Keys::none())
}

/// The Python `str` objects of the object keys met lately, by a pool
/// thread (its `Job`'s): each call's argument then takes its dict keys
/// from here rather than making each `str` (and its hash) anew. A few
/// slots, each holding the last short key that fell in it.
pub struct Keys {
    slots: Vec<Option<(Box<str>, Py<PyString>)>>,
}

/// How many keys [`Keys`] holds at most.
const KEY_SLOTS: usize = 64;
/// The longest key [`Keys`] holds, in bytes.
const KEY_MAX: usize = 64;

impl Keys {
    /// Keys kept in [`KEY_SLOTS`] slots.
    pub fn new() -> Keys {
        Keys {
            slots: (0..KEY_SLOTS).map(|_| None).collect(),
        }
    }

    /// Nothing kept: every key made anew.
    fn none() -> Keys {
        Keys { slots: Vec::new() }
    }

    /// The key whose UTF-8 is `b` as a Python `str`: the one made before,
    /// if it is still held (its bytes compared, not checked again), else a
    /// new one. `Err`: `b` is not UTF-8.
    fn get<'py>(&mut self, py: Python<'py>, b: &[u8]) -> PyResult<Bound<'py, PyString>> {
        if self.slots.is_empty() || b.len() > KEY_MAX {
            return Ok(PyString::new(py, key_str(b)?));
        }
        let first = usize::from(b.first().copied().unwrap_or(0));
        let last = usize::from(b.last().copied().unwrap_or(0));
        let i = (b.len() * 31 + first * 7 + last) % KEY_SLOTS;
        if let Some((k, s)) = &self.slots[i] {
            if k.as_bytes() == b {
                return Ok(s.bind(py).clone());
            }
        }
        let key = key_str(b)?;
        let s = PyString::new(py, key);
        self.slots[i] = Some((key.into(), s.clone().unbind()));
        Ok(s)
    }
}

/// `b` as text; `Err`: it is not UTF-8 (the wire's bytes are broken).
fn key_str(b: &[u8]) -> PyResult<&str> {
    std::str::from_utf8(b)
        .map_err(|_| PyRuntimeError::new_err("malformed wire data: a key that is not UTF-8"))
}

/// The value on `wire` as a Python object, the keys of its dicts taken
/// from `keys`.
/// `Err`: bytes that are not one value. A value of any depth is read
/// (never a stack overflow).
pub fn wire_to_py<'py>(
    py: Python<'py>,
    wire: &Wire,
    keys: &mut Keys,
) -> PyResult<Bound<'py, PyAny>> {
    read(py, &mut wire.reader(), keys, 0)
}

fn read<'py>(
    py: Python<'py>,
    r: &mut Reader<'_>,
    keys: &mut Keys,
    depth: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let broken = |e: lt::runtime::wire::WireError| PyRuntimeError::new_err(e.to_string());
    Ok(match r.item().map_err(broken)? {
        Item::Null => py.None().into_bound(py),
        Item::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
        Item::I64(i) => i.into_pyobject(py)?.into_any(),
        Item::U64(u) => u.into_pyobject(py)?.into_any(),
        Item::F64(x) => PyFloat::new(py, x).into_any(),
        Item::Str(s) => PyString::new(py, s).into_any(),
        Item::Array(n) => deeper(depth, || {
            let list = PyList::empty(py);
            for _ in 0..n {
                list.append(read(py, r, keys, depth + 1)?)?;
            }
            Ok::<_, PyErr>(list.into_any())
        })?,
        Item::Object(n) => deeper(depth, || {
            let dict = PyDict::new(py);
            for _ in 0..n {
                let k = keys.get(py, r.key_bytes().map_err(broken)?)?;
                dict.set_item(k, read(py, r, keys, depth + 1)?)?;
            }
            Ok::<_, PyErr>(dict.into_any())
        })?,
    })
}

/// Runs `f`, a container's conversion at nesting `depth`. A value may nest
/// deep and a thread Python started may have a small stack: every 16
/// levels the stack is checked and grown as it must be (16 levels take far
/// less than the 32 KiB kept free), as the engine's conversions do.
fn deeper<R>(depth: usize, f: impl FnOnce() -> R) -> R {
    if depth % 16 == 15 {
        stacker::maybe_grow(32 * 1024, 1024 * 1024, f)
    } else {
        f()
    }
}

/// `obj` as JSON; `Err`: where and why it is not JSON (`path` names the
/// root, e.g. `result`).
pub fn from_py(obj: &Bound<'_, PyAny>, path: &str) -> Result<Json, String> {
    to_wire(obj, path)?
        .to_json()
        .map_err(|e| format!("{path}: {e}"))
}

/// `obj` on the wire; `Err`: where and why it is not JSON, as [`from_py`].
pub fn to_wire(obj: &Bound<'_, PyAny>, path: &str) -> Result<Wire, String> {
    let mut w = Wire::new();
    write_wire(obj, path, &mut w)?;
    Ok(w)
}

/// [`to_wire`], written into `w` (emptied first: a buffer used before).
pub fn write_wire(obj: &Bound<'_, PyAny>, path: &str, w: &mut Wire) -> Result<(), String> {
    w.clear();
    write(obj, &Path::Root(path), 0, w)
}

/// Where a part sits in the value being converted, rendered only for an
/// error (`result["items"][3]`): a call's conversion builds no string.
enum Path<'a> {
    Root(&'a str),
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

/// Steps of a [`Path`] shown at each end of a long one (a cycle's is 512).
const PATH_ENDS: usize = 8;
/// The bytes of a key shown in a path.
const KEY_SHOWN: usize = 40;

impl std::fmt::Display for Path<'_> {
    /// `result["items"][3]`; a path of more than 16 steps shows its first
    /// and last 8 (`[… 496 more …]` between), a key its first 40 bytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut steps = Vec::new();
        let mut at = self;
        let root = loop {
            match at {
                Path::Root(name) => break *name,
                Path::Key(up, _) | Path::Index(up, _) => {
                    steps.push(at);
                    at = up;
                }
            }
        };
        f.write_str(root)?;
        let n = steps.len();
        for (i, step) in steps.iter().rev().enumerate() {
            if n > 2 * PATH_ENDS && i >= PATH_ENDS && i < n - PATH_ENDS {
                if i == PATH_ENDS {
                    write!(f, "[… {} more …]", n - 2 * PATH_ENDS)?;
                }
                continue;
            }
            match step {
                Path::Key(_, key) if key.len() > KEY_SHOWN => {
                    let mut cut = KEY_SHOWN;
                    while !key.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    write!(f, "[{:?}…]", &key[..cut])?;
                }
                Path::Key(_, key) => write!(f, "[{key:?}]")?,
                Path::Index(_, i) => write!(f, "[{i}]")?,
                Path::Root(_) => {}
            }
        }
        Ok(())
    }
}

fn write(
    obj: &Bound<'_, PyAny>,
    path: &Path<'_>,
    depth: usize,
    w: &mut Wire,
) -> Result<(), String> {
    // `depth` counts from 0 at the top, the boundary's levels from 1: a
    // value at index MAX_DEPTH is its level MAX_DEPTH + 1, refused here
    // with its path rather than there without one.
    if depth >= MAX_DEPTH {
        return Err(format!(
            "{path}: nested more than {MAX_DEPTH} levels deep (or contains itself)"
        ));
    }
    // The plain types by an exact comparison first (a pointer each), then
    // every type by the checks that accept subclasses.
    if let Ok(dict) = obj.cast_exact::<PyDict>() {
        return object(dict, path, depth, w);
    }
    if let Ok(s) = obj.cast_exact::<PyString>() {
        return text(s, path, w);
    }
    if obj.is_exact_instance_of::<PyInt>() {
        return int(obj, path, w);
    }
    if let Ok(list) = obj.cast_exact::<PyList>() {
        return items(list.iter(), path, depth, w);
    }
    if obj.is_none() {
        w.null();
        return Ok(());
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        w.bool(b.is_true());
        return Ok(());
    }
    if obj.cast::<PyInt>().is_ok() {
        return int(obj, path, w);
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return w
            .f64(f.value())
            .map_err(|x| format!("{path}: the float {x} is not a JSON number"));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return text(s, path, w);
    }
    if let Ok(list) = obj.cast::<PyList>() {
        return items(list.iter(), path, depth, w);
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        return items(tuple.iter(), path, depth, w);
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        return object(dict, path, depth, w);
    }
    Err(format!(
        "{path}: {} is not JSON (give None, bool, int, float, str, list, tuple or dict)",
        a_type(obj)
    ))
}

fn int(obj: &Bound<'_, PyAny>, path: &Path<'_>, w: &mut Wire) -> Result<(), String> {
    if let Ok(i) = obj.extract::<i64>() {
        w.i64(i);
        return Ok(());
    }
    if let Ok(u) = obj.extract::<u64>() {
        w.u64(u);
        return Ok(());
    }
    // Past 64 bits, the nearest float, as JSON's reader takes such a number
    // from any other executor (`100000000000000000000` reads as 1e20).
    match obj.extract::<f64>() {
        Ok(x) if x.is_finite() => w
            .f64(x)
            .map_err(|x| format!("{path}: the integer {x} is not a JSON number")),
        // Its size in bits, not its digits (`str` of a huge int raises).
        _ => Err(format!(
            "{path}: an integer of {} bits is too large for a JSON number (at most about 1.8e308)",
            obj.call_method0("bit_length")
                .map_or_else(|_| "many".to_string(), |b| b.to_string())
        )),
    }
}

fn text(s: &Bound<'_, PyString>, path: &Path<'_>, w: &mut Wire) -> Result<(), String> {
    let t = utf8(s).map_err(|e| format!("{path}: the string is not valid UTF-8: {e}"))?;
    w.str_checked(&t)
        .map_err(|n| format!("{path}: a string of {n} bytes is too long (at most 4 GiB)"))
}

/// The text of `s`, read in place where the running Python allows it.
///
/// Under the 3.9 stable ABI (`abi3-py39`) pyo3 reads a `str` through
/// `PyUnicode_AsUTF8String`: a new `bytes` object, copied again into a
/// `String` (two allocations and a Python object per string, twice per
/// key and string a call). `PyUnicode_AsUTF8AndSize` is in the stable ABI
/// from Python 3.10 (PEP 384's list, "Added in version 3.10"): on 3.10 and
/// later it gives the string's own UTF-8 (an ASCII `str` holds it already;
/// any other caches it in the object, as CPython itself does), borrowed.
pub fn utf8<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Cow<'a, str>> {
    if in_place(s.py()) {
        let mut size: pyo3::ffi::Py_ssize_t = 0;
        // SAFETY: `s` is a `str` object held for 'a; the function is in the
        // stable ABI of the running Python (3.10 or later, checked above)
        // and returns its UTF-8 buffer, owned by `s`, or NULL with an
        // exception set.
        let data = unsafe { PyUnicode_AsUTF8AndSize(s.as_ptr(), &mut size) };
        if data.is_null() {
            return Err(PyErr::fetch(s.py()));
        }
        let len = usize::try_from(size).unwrap_or(0);
        // SAFETY: `data` points to `len` bytes of valid UTF-8 that live as
        // long as `s` (CPython's contract for this function).
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) };
        // SAFETY: CPython returns valid UTF-8 (a string it cannot encode,
        // one with lone surrogates, is the NULL above).
        return Ok(Cow::Borrowed(unsafe {
            std::str::from_utf8_unchecked(bytes)
        }));
    }
    s.to_cow()
}

extern "C" {
    // Declared here: pyo3-ffi declares it only for builds whose minimum is
    // 3.10 or that do not use the stable ABI. Called only on 3.10 and later.
    fn PyUnicode_AsUTF8AndSize(
        unicode: *mut pyo3::ffi::PyObject,
        size: *mut pyo3::ffi::Py_ssize_t,
    ) -> *const std::os::raw::c_char;
}

/// Whether the running Python is 3.10 or later (asked once).
fn in_place(py: Python<'_>) -> bool {
    static AT_LEAST_3_10: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AT_LEAST_3_10.get_or_init(|| py.version_info() >= (3, 10))
}

/// The text of a dict key; `Err`: why it is not a JSON object key.
fn key_text<'k>(k: &'k Bound<'_, PyAny>) -> Result<Cow<'k, str>, String> {
    let s = match k.cast_exact::<PyString>() {
        Ok(s) => s,
        Err(_) => k.cast::<PyString>().map_err(|_| {
            format!(
                "the key {} is {}, not a str (JSON object keys are strings)",
                repr(k),
                a_type(k)
            )
        })?,
    };
    utf8(s).map_err(|e| format!("the key {} is not valid UTF-8: {e}", repr(k)))
}

/// A dict's entries (the stack grown as it must, [`deeper`]).
fn object(
    dict: &Bound<'_, PyDict>,
    path: &Path<'_>,
    depth: usize,
    w: &mut Wire,
) -> Result<(), String> {
    deeper(depth, || {
        let open = w.open_object();
        let mut n = 0;
        for (k, v) in dict.iter() {
            too_many(path, w)?;
            let key = key_text(&k).map_err(|why| format!("{path}: {why}"))?;
            w.key(&key);
            write(&v, &Path::Key(path, &key), depth + 1, w)?;
            n += 1;
        }
        w.close(open, n)
            .map_err(|n| format!("{path}: a dict of {n} entries is too large"))
    })
}

/// `Err` once `w` holds more than [`MAX_VALUES`] values: a result read
/// stops there, as a command executor's output does before it is parsed,
/// so a list of a billion items, or one list shared at every level (each
/// path read anew: 2^40 values), costs a bounded time and memory.
fn too_many(path: &Path<'_>, w: &Wire) -> Result<(), String> {
    if w.nodes() > MAX_VALUES {
        return Err(format!(
            "{path}: the value holds more than {MAX_VALUES} values"
        ));
    }
    Ok(())
}

/// A list's or tuple's items (the stack grown as it must, [`deeper`]).
fn items<'py>(
    iter: impl Iterator<Item = Bound<'py, PyAny>>,
    path: &Path<'_>,
    depth: usize,
    w: &mut Wire,
) -> Result<(), String> {
    deeper(depth, || {
        let open = w.open_array();
        let mut n = 0;
        for (i, item) in iter.enumerate() {
            too_many(path, w)?;
            write(&item, &Path::Index(path, i), depth + 1, w)?;
            n += 1;
        }
        w.close(open, n)
            .map_err(|n| format!("{path}: a list of {n} items is too long"))
    })
}

/// The name of `obj`'s type (`set`, `MyClass`).
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "value".to_string())
}

/// `a set`, `an int`: the name of `obj`'s type with its article.
pub fn a_type(obj: &Bound<'_, PyAny>) -> String {
    let name = type_name(obj);
    let vowel = name
        .chars()
        .next()
        .is_some_and(|c| "aeiouAEIOU".contains(c));
    format!("{} {name}", if vowel { "an" } else { "a" })
}

fn repr(obj: &Bound<'_, PyAny>) -> String {
    obj.repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".to_string())
}
