//! The standard library's table: every native function's name, signature
//! and one-line description (extension; λ-Tool has only `map`, `filter`,
//! `fold` and `traverse`).
//!
//! ```text
//! name ──checker (types/natives.rs)──▶ the signature instantiated per use
//!      ──lowering──▶ NodeKind::Native ──runtime (runtime/natives.rs)──▶ value
//! ```
//!
//! Signatures are written in lt's type syntax; lowercase names (`a`, `b`,
//! `k`) are type variables, fresh at every use, and `o` is a type variable
//! that must be *ordered* (Int, Float, String, Bool or an enum). Every
//! callback is pure (`a -> b` is `a -{}-> b`). Functions are curried and may
//! be partially applied or passed as values (`map to_string xs`).
//!
//! Totality: no native stops a well-typed program except through a
//! resource limit (a list or string larger than the run's limits, an Int
//! outside the 64-bit range): lookups that can miss return `Option`, parsing
//! returns `Option`, and `range`/`take`/`drop` clamp their bounds.
//! `docs/language/stdlib.md` documents each function.
//!
//! Functions that need no native code are written in lt, in the files under
//! `stdlib/` ([`prelude`]): the checker types a use of one from its
//! signature exactly as for a native, and lowering inlines its definition.

pub mod prelude;

/// The builtins and their arities: typed at their application site by the
/// checker (`types/builtins.rs`), not first-class values, lowered to
/// combinators (`ir/lower.rs`, which takes the arities from here).
/// `map`, `filter`, `fold`, `traverse` are λ-Tool's; `fan_out` and
/// `bounded_loop` are extensions.
pub const BUILTIN_ARITIES: [(&str, usize); 6] = [
    ("map", 2),
    ("filter", 2),
    ("fold", 3),
    ("traverse", 2),
    ("fan_out", 2),
    ("bounded_loop", 3),
];

/// The builtins' names ([`BUILTIN_ARITIES`] without the arities).
pub const BUILTINS: [&str; 6] = {
    let mut names = [""; 6];
    let mut i = 0;
    while i < names.len() {
        names[i] = BUILTIN_ARITIES[i].0;
        i += 1;
    }
    names
};

/// True when `name` means something without being bound: a builtin or a
/// library function.
pub fn is_predefined(name: &str) -> bool {
    BUILTINS.contains(&name) || lookup(name).is_some()
}

/// One standard-library function: native (implemented in
/// `runtime/natives.rs`) or written in lt (in a file under `stdlib/`).
#[derive(Debug)]
pub struct Native {
    /// Its name in programs.
    pub name: &'static str,
    /// Its type, in lt syntax (see the module note).
    pub signature: &'static str,
    /// What it does.
    pub doc: &'static str,
    /// `Some("stdlib/list.lt")` when written in lt (see [`prelude`]);
    /// `None` for a native.
    pub file: Option<&'static str>,
}

impl Native {
    /// The number of parameters (arrows at the top of the signature).
    pub fn arity(&self) -> usize {
        // Top-level `->` outside parentheses/brackets/braces.
        let mut depth = 0i32;
        let mut n = 0;
        let b = self.signature.as_bytes();
        for (i, &c) in b.iter().enumerate() {
            #[allow(
                clippy::collapsible_match,
                reason = "an arrow at depth > 0 must match no later arm (`>` closes a bracket)"
            )]
            match c {
                b'(' | b'[' | b'{' | b'<' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                b'>' if i > 0 && b[i - 1] == b'-' => {
                    if depth == 0 {
                        n += 1;
                    }
                }
                b'>' => depth -= 1,
                _ => {}
            }
        }
        n
    }
}

/// Declares every native once — its name (the identifier), signature and
/// description — and generates from that one list [`NATIVES`] and
/// [`NativeId`], whose variants are the natives in the same order. The
/// runtime (`runtime/natives.rs`) matches a [`NativeId`] exhaustively, so
/// a native added here without an implementation does not compile (and
/// `tests/stdlib_docs.rs` wants a section in `docs/language/stdlib.md`).
macro_rules! natives {
    ($( $name:ident : $sig:literal = $doc:literal ;)*) => {
        /// Every native function, grouped as in `docs/language/stdlib.md`.
        pub const NATIVES: &[Native] = &[ $( Native { name: stringify!($name), signature: $sig, doc: $doc, file: None }, )* ];

        /// A native function: variant `i` is [`NATIVES`]`[i]` (a variant is
        /// named as the function is in programs).
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum NativeId {
            $( #[doc = $doc] $name, )*
        }

        impl NativeId {
            /// Every native, in the order of [`NATIVES`].
            pub const ALL: &'static [NativeId] = &[ $( NativeId::$name, )* ];

            /// Its name in programs.
            pub fn name(self) -> &'static str {
                match self {
                    $( NativeId::$name => stringify!($name), )*
                }
            }
        }
    };
}

impl NativeId {
    /// The native at index `index` of [`NATIVES`] (what
    /// `NodeKind::Native`'s `func` holds).
    pub fn from_index(index: usize) -> Option<NativeId> {
        NativeId::ALL.get(index).copied()
    }

    /// The native called `name`; `None` for a function written in lt.
    pub fn from_name(name: &str) -> Option<NativeId> {
        index(name).and_then(NativeId::from_index)
    }

    /// Its entry in [`NATIVES`].
    pub fn native(self) -> &'static Native {
        // Variant `i` is entry `i`, by construction (and tested).
        &NATIVES[self as usize]
    }
}

natives! {
    // ---- Bool
    not: "Bool -> Bool" = "logical negation";
    // ---- strings
    string_length: "String -> Int" = "the number of characters (Unicode scalar values)";
    contains: "String -> String -> Bool" = "`contains s sub`: whether `sub` occurs in `s`";
    starts_with: "String -> String -> Bool" = "`starts_with s prefix`";
    ends_with: "String -> String -> Bool" = "`ends_with s suffix`";
    index_of: "String -> String -> Option Int" = "`index_of s sub`: the character index of the first `sub` in `s`";
    split: "String -> String -> List String" = "`split s sep`: the parts of `s` between occurrences of `sep` (an empty `sep` splits into characters)";
    join: "String -> List String -> String" = "`join sep parts`: the parts with `sep` between them";
    trim: "String -> String" = "without leading and trailing whitespace";
    replace: "String -> String -> String -> String" = "`replace s from to`: every occurrence of `from` replaced by `to` (an empty `from` changes nothing)";
    upper: "String -> String" = "upper case";
    lower: "String -> String" = "lower case";
    substring: "String -> Int -> Int -> String" = "`substring s start count`: up to `count` characters from character `start` (clamped to the string)";
    repeat: "String -> Int -> String" = "`repeat s n`: `s` written `n` times (none when `n <= 0`)";
    // ---- conversions
    to_string: "a -> String" = "a String as itself; numbers, Bools, enums as written; other data as JSON";
    parse_int: "String -> Option Int" = "the Int a decimal string spells (optional sign, surrounding whitespace ignored), or None";
    parse_float: "String -> Option Float" = "the finite Float a string spells, or None";
    parse_bool: "String -> Option Bool" = "`\"true\"` or `\"false\"`, or None";
    to_float: "Int -> Float" = "the Int as a Float (nearest value)";
    round: "Float -> Int" = "the nearest Int (halves away from zero)";
    floor: "Float -> Int" = "the largest Int not above";
    ceil: "Float -> Int" = "the smallest Int not below";
    truncate: "Float -> Int" = "the Int part (towards zero)";
    format_float: "Int -> Float -> String" = "`format_float decimals x`: `x` with exactly `decimals` digits after the point (0 to 17)";
    // ---- numbers
    min: "o -> o -> o" = "the smaller of two ordered values";
    max: "o -> o -> o" = "the larger of two ordered values";
    safe_div: "Int -> Int -> Option Int" = "`safe_div n d`: `Some(n / d)`, or None when `d` is 0";
    // ---- lists
    length: "List a -> Int" = "the number of elements";
    head: "List a -> Option a" = "the first element, or None";
    member: "a -> List a -> Bool" = "`member x xs`: whether `x` is an element (structural equality)";
    take: "Int -> List a -> List a" = "the first `n` elements (all when fewer; none when `n <= 0`)";
    drop: "Int -> List a -> List a" = "without the first `n` elements";
    concat: "List a -> List a -> List a" = "`concat xs ys`: the elements of `xs`, then of `ys`";
    flatten: "List (List a) -> List a" = "the lists one after another";
    reverse: "List a -> List a" = "the elements in reverse order";
    zip: "List a -> List b -> List {first: a, second: b}" = "pairs of elements at the same index (as long as the shorter list)";
    range: "Int -> Int -> List Int" = "`range from to`: `from`, `from + 1`, …, `to - 1` (empty when `to <= from`): bounded iteration";
    minimum: "List o -> Option o" = "the smallest element, or None";
    maximum: "List o -> Option o" = "the largest element, or None";
    sort: "List o -> List o" = "sorted ascending (stable)";
    sort_by: "(a -> o) -> List a -> List a" = "sorted ascending by a key (stable)";
    group_by: "(a -> k) -> List a -> List {key: k, items: List a}" = "consecutive-or-not elements with equal keys, grouped; groups in order of first appearance";
    unique: "List a -> List a" = "without repeated elements (the first of each kept)";
    // ---- Json
    json_get: "String -> Json -> Option Json" = "`json_get key j`: the field `key` of a JSON object, or None";
    json_at: "Int -> Json -> Option Json" = "`json_at i j`: element `i` of a JSON array, or None";
    json_int: "Json -> Option Int" = "the Int a JSON number is (no fraction, in range), or None";
    json_float: "Json -> Option Float" = "the Float a JSON number is, or None";
    json_string: "Json -> Option String" = "the text of a JSON string, or None";
    json_bool: "Json -> Option Bool" = "a JSON boolean, or None";
    json_list: "Json -> Option (List Json)" = "the elements of a JSON array, or None";
    json_keys: "Json -> Option (List String)" = "the keys of a JSON object in order, or None";
    json_is_null: "Json -> Bool" = "whether it is JSON `null`";
    to_json: "a -> Json" = "any data as JSON (records → objects, None → null)";
    parse_json: "String -> Option Json" = "the JSON a string holds, or None";
}

/// The library function called `name`: a native or one written in lt.
pub fn lookup(name: &str) -> Option<&'static Native> {
    index(name)
        .map(|i| &NATIVES[i])
        .or_else(|| prelude::lookup(name))
}

/// Every library function: the natives, then those written in lt.
pub fn all() -> impl Iterator<Item = &'static Native> {
    NATIVES.iter().chain(prelude::entries())
}

/// The index of the native called `name` in [`NATIVES`] (a hash lookup:
/// the checker and lowering ask for every free name); `None` for a
/// function written in lt.
pub fn index(name: &str) -> Option<usize> {
    static INDEX: std::sync::OnceLock<std::collections::HashMap<&'static str, usize>> =
        std::sync::OnceLock::new();
    INDEX
        .get_or_init(|| {
            NATIVES
                .iter()
                .enumerate()
                .map(|(i, n)| (n.name, i))
                .collect()
        })
        .get(name)
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_ids_are_the_table() {
        assert_eq!(NativeId::ALL.len(), NATIVES.len());
        for (i, (&id, native)) in NativeId::ALL.iter().zip(NATIVES).enumerate() {
            assert_eq!(id as usize, i, "{}", native.name);
            assert_eq!(id.name(), native.name);
            assert_eq!(id.native().signature, native.signature);
            assert_eq!(NativeId::from_index(i), Some(id));
            assert_eq!(NativeId::from_name(native.name), Some(id));
            assert_eq!(
                index(native.name),
                Some(i),
                "two natives named {}",
                native.name
            );
            assert!(native.file.is_none());
            assert!(
                !BUILTINS.contains(&native.name),
                "{} is a builtin",
                native.name
            );
        }
        assert_eq!(NativeId::from_index(NATIVES.len()), None);
        assert_eq!(NativeId::from_name("map"), None);
    }
}
