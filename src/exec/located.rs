//! [`Located`]: a value read from `tools.toml` and where it is written,
//! when toml knows.
//!
//! `toml::Spanned` (toml 0.8) cannot read a table that has no span of its
//! own: one written with dotted keys (`mcp.command = […]`), or one implied
//! by a deeper header (`[tools.echo.mcp]` alone implies `[tools.echo]`).
//! It fails with serde's `invalid type: string "mcp", expected a borrowed
//! string`. `Located` asks for the span the way `Spanned` does and, when
//! the deserializer has none, reads the value as it is (`span: None`); the
//! caller then finds the key in the text.

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::marker::PhantomData;
use std::ops::Range;

// The protocol of `serde_spanned` (0.6, toml 0.8's): a deserializer that
// knows where a value is written answers a request for a struct of this
// name and these three fields with a map of them. One that does not know
// answers with the value itself.
const NAME: &str = "$__serde_spanned_private_Spanned";
const START: &str = "$__serde_spanned_private_start";
const END: &str = "$__serde_spanned_private_end";
const VALUE: &str = "$__serde_spanned_private_value";
const FIELDS: &[&str] = &[START, END, VALUE];

/// A value and the byte range it is written at, when known.
#[derive(Clone, Debug)]
pub(super) struct Located<T> {
    span: Option<Range<usize>>,
    value: T,
}

impl<T> Located<T> {
    /// Where the value is written (`None`: a table without a span).
    pub(super) fn span(&self) -> Option<Range<usize>> {
        self.span.clone()
    }

    /// Sets the span when there is none (found by the caller).
    pub(super) fn locate(&mut self, span: impl FnOnce() -> Option<Range<usize>>) {
        if self.span.is_none() {
            self.span = span();
        }
    }

    pub(super) fn get_ref(&self) -> &T {
        &self.value
    }

    pub(super) fn get_mut(&mut self) -> &mut T {
        &mut self.value
    }

    pub(super) fn into_inner(self) -> T {
        self.value
    }
}

impl<T: PartialEq> PartialEq for Located<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T: Eq> Eq for Located<T> {}

impl<T: PartialOrd> PartialOrd for Located<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        self.value.partial_cmp(&other.value)
    }
}

impl<T: Ord> Ord for Located<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.value.cmp(&other.value)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Located<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_struct(NAME, FIELDS, LocatedVisitor(PhantomData))
    }
}

struct LocatedVisitor<T>(PhantomData<T>);

/// The value, read from a deserializer of the data model's own types.
fn plain<'de, T, D>(deserializer: D) -> Result<Located<T>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    T::deserialize(deserializer).map(|value| Located { span: None, value })
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for LocatedVisitor<T> {
    type Value = Located<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Located<T>, A::Error> {
        let first: Option<String> = map.next_key()?;
        if first.as_deref() != Some(START) {
            // A table without a span: the map is the value.
            return plain(MapAccessDeserializer::new(Replay {
                first: Some(first),
                map,
            }));
        }
        let start: usize = map.next_value()?;
        let mut end = None;
        let mut value = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                END => end = Some(map.next_value::<usize>()?),
                VALUE => value = Some(map.next_value::<T>()?),
                other => return Err(de::Error::unknown_field(other, FIELDS)),
            }
        }
        match (end, value) {
            (Some(end), Some(value)) => Ok(Located {
                span: Some(start..end),
                value,
            }),
            (None, _) => Err(de::Error::missing_field(END)),
            (_, None) => Err(de::Error::missing_field(VALUE)),
        }
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Located<T>, A::Error> {
        plain(SeqAccessDeserializer::new(seq))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Located<T>, E> {
        plain(v.into_deserializer())
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Located<T>, E> {
        plain(v.into_deserializer())
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Located<T>, E> {
        plain(v.into_deserializer())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Located<T>, E> {
        plain(v.into_deserializer())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Located<T>, E> {
        plain(v.into_deserializer())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Located<T>, E> {
        plain(v.into_deserializer())
    }
}

/// A map whose first key was already read: it is given again first.
struct Replay<A> {
    /// `Some(None)`: the map was empty.
    first: Option<Option<String>>,
    map: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Replay<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.first.take() {
            Some(Some(key)) => seed.deserialize(key.into_deserializer()).map(Some),
            Some(None) => Ok(None),
            None => self.map.next_key_seed(seed),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

#[cfg(test)]
mod tests {
    use super::Located;
    use std::collections::BTreeMap;

    #[derive(serde::Deserialize)]
    struct File {
        tools: BTreeMap<String, Located<BTreeMap<String, Located<toml::Value>>>>,
    }

    fn spans(text: &str) -> Vec<(String, Option<String>)> {
        let file: File = toml::from_str(text).unwrap_or_else(|e| panic!("{e}"));
        let mut out = Vec::new();
        for (name, table) in file.tools {
            out.push((name, table.span().map(|s| text[s].to_string())));
            for (key, value) in table.into_inner() {
                out.push((key, value.span().map(|s| text[s].to_string())));
            }
        }
        out
    }

    #[test]
    fn inline_values_have_spans_and_implied_tables_are_read_without() {
        // The spans of toml's `Spanned` (a guard against a change of its
        // protocol, which would silently drop them).
        assert_eq!(
            spans("[tools.a]\nx = 1\nt = { y = 2 }\n"),
            [
                (
                    "a".to_string(),
                    Some("[tools.a]\nx = 1\nt = { y = 2 }".to_string())
                ),
                ("t".to_string(), Some("{ y = 2 }".to_string())),
                ("x".to_string(), Some("1".to_string())),
            ]
        );
        // Dotted keys and a deeper header: no span, but read.
        assert_eq!(
            spans("[tools.a]\nt.y = 2\n[tools.b.t]\ny = 3\n"),
            [
                ("a".to_string(), Some("[tools.a]\nt.y = 2".to_string())),
                ("t".to_string(), None),
                ("b".to_string(), None),
                ("t".to_string(), Some("[tools.b.t]\ny = 3".to_string())),
            ]
        );
    }
}
