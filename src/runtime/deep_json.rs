//! JSON text in and out at any nesting depth: the one implementation the
//! executors (tool output and arguments) and the event log share.
//!
//! serde_json's default recursion limit (128) would reject deep values and
//! its unlimited recursion would overflow the stack, so parsing and printing
//! go through `serde_stacker`, which grows the stack on demand, and every
//! value built or thrown away here is dropped without recursion
//! ([`super::boundary::drop_deep`]), also when parsing fails after a deep
//! prefix.

use super::boundary::drop_deep;
use serde::de::{Deserialize, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde::Serialize;
use serde_json::{Map, Value as Json};
use std::fmt;

/// Parses one JSON value (whitespace around it allowed) from `bytes`. With
/// `reject_repeated_keys`, an object with the same key twice is an error
/// (the log needs that); otherwise the last value wins, as in serde_json.
pub(crate) fn parse_slice(
    bytes: &[u8],
    reject_repeated_keys: bool,
) -> Result<Json, serde_json::Error> {
    parse(
        serde_json::Deserializer::from_slice(bytes),
        reject_repeated_keys,
    )
}

/// [`parse_slice`] for text.
pub(crate) fn parse_str(text: &str, reject_repeated_keys: bool) -> Result<Json, serde_json::Error> {
    parse(
        serde_json::Deserializer::from_str(text),
        reject_repeated_keys,
    )
}

fn parse<'de, R: serde_json::de::Read<'de>>(
    mut de: serde_json::Deserializer<R>,
    reject_repeated_keys: bool,
) -> Result<Json, serde_json::Error> {
    de.disable_recursion_limit();
    let parsed = if reject_repeated_keys {
        Deep::<true>::deserialize(serde_stacker::Deserializer::new(&mut de))
            .map(|mut v| std::mem::take(&mut v.0))
    } else {
        Deep::<false>::deserialize(serde_stacker::Deserializer::new(&mut de))
            .map(|mut v| std::mem::take(&mut v.0))
    }?;
    match de.end() {
        Ok(()) => Ok(parsed),
        Err(e) => {
            // Trailing garbage: the value is dropped without recursion.
            drop_deep(parsed);
            Err(e)
        }
    }
}

/// Compact JSON text of anything serialisable, at any depth. Object keys
/// come out in the order the value gives them (sorted by bytes for a
/// `serde_json::Value`: the crate does not enable `preserve_order`).
pub(crate) fn to_compact<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    write_compact(&mut out, value);
    out
}

/// [`to_compact`], appending to `out` (the log writes a line's values
/// straight into the line).
pub(crate) fn write_compact<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let mut ser = serde_json::Serializer::new(out);
    // Writing into a Vec cannot fail and the values here always serialise
    // (string keys only).
    let _ = value.serialize(serde_stacker::Serializer::new(&mut ser));
}

/// A JSON value under construction whose drop does not recurse.
/// `STRICT`: repeated object keys are an error.
struct Deep<const STRICT: bool>(Json);

impl<const STRICT: bool> Drop for Deep<STRICT> {
    fn drop(&mut self) {
        drop_deep(std::mem::take(&mut self.0));
    }
}

/// The elements of an array under construction (see [`Deep`]).
struct Items(Vec<Json>);

impl Drop for Items {
    fn drop(&mut self) {
        drop_deep(Json::Array(std::mem::take(&mut self.0)));
    }
}

/// The fields of an object under construction (see [`Deep`]).
struct Fields(Map<String, Json>);

impl Drop for Fields {
    fn drop(&mut self) {
        drop_deep(Json::Object(std::mem::take(&mut self.0)));
    }
}

impl<'de, const STRICT: bool> Deserialize<'de> for Deep<STRICT> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DeepVisitor::<STRICT>)
    }
}

/// Builds the same values as `serde_json::Value`'s own visitor (except for
/// repeated keys when `STRICT`).
struct DeepVisitor<const STRICT: bool>;

impl<'de, const STRICT: bool> Visitor<'de> for DeepVisitor<STRICT> {
    type Value = Deep<STRICT>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Deep(Json::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Deep(Json::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Deep(Json::from(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Deep(
            serde_json::Number::from_f64(v).map_or(Json::Null, Json::Number),
        ))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Deep(Json::String(v.to_string())))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Deep(Json::String(v)))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Deep(Json::Null))
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Deep(Json::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        Deep::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Items(Vec::new());
        while let Some(mut item) = seq.next_element::<Deep<STRICT>>()? {
            items.0.push(std::mem::take(&mut item.0));
        }
        Ok(Deep(Json::Array(std::mem::take(&mut items.0))))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = Fields(Map::new());
        while let Some(key) = map.next_key::<String>()? {
            if STRICT && fields.0.contains_key(&key) {
                return Err(A::Error::custom(format!(
                    "the key {} appears twice in one object",
                    Json::String(key)
                )));
            }
            let mut value = map.next_value::<Deep<STRICT>>()?;
            fields.0.insert(key, std::mem::take(&mut value.0));
        }
        Ok(Deep(Json::Object(std::mem::take(&mut fields.0))))
    }
}
