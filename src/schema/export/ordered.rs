//! A JSON value whose objects keep their keys in insertion order, so that
//! exported schemas list properties in declaration order (models fill
//! arguments in the order the schema gives them). `serde_json`'s own maps are
//! sorted in this crate (the log's canonical form relies on it).

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// JSON with ordered objects; no numbers (schemas here need none).
#[derive(Clone, Debug, PartialEq)]
pub enum OrderedJson {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A string.
    Str(String),
    /// An array.
    Arr(Vec<OrderedJson>),
    /// An object, keys in insertion order.
    Obj(Vec<(String, OrderedJson)>),
}

impl OrderedJson {
    /// An object of these entries.
    pub fn obj<const N: usize>(entries: [(&str, OrderedJson); N]) -> OrderedJson {
        OrderedJson::Obj(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }

    /// A string.
    pub fn str(s: impl Into<String>) -> OrderedJson {
        OrderedJson::Str(s.into())
    }

    /// An array of strings.
    pub fn strs<'a>(items: impl IntoIterator<Item = &'a str>) -> OrderedJson {
        OrderedJson::Arr(items.into_iter().map(OrderedJson::str).collect())
    }

    /// Sets `key` (in place when present, else at the end); no-op on a non-object.
    pub fn set(&mut self, key: &str, value: OrderedJson) {
        if let OrderedJson::Obj(entries) = self {
            match entries.iter_mut().find(|(k, _)| k == key) {
                Some((_, v)) => *v = value,
                None => entries.push((key.to_string(), value)),
            }
        }
    }

    /// The value of `key` in an object.
    pub fn get(&self, key: &str) -> Option<&OrderedJson> {
        match self {
            OrderedJson::Obj(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value as a `serde_json::Value` (whose objects sort their keys).
    pub fn to_value(&self) -> serde_json::Value {
        match self {
            OrderedJson::Null => serde_json::Value::Null,
            OrderedJson::Bool(b) => serde_json::Value::Bool(*b),
            OrderedJson::Str(s) => serde_json::Value::String(s.clone()),
            OrderedJson::Arr(items) => items.iter().map(OrderedJson::to_value).collect(),
            OrderedJson::Obj(entries) => serde_json::Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
        }
    }

    /// Two-space indented JSON text, keys in order.
    pub fn to_pretty_string(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("\"{e}\""))
    }
}

impl Serialize for OrderedJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            OrderedJson::Null => serializer.serialize_unit(),
            OrderedJson::Bool(b) => serializer.serialize_bool(*b),
            OrderedJson::Str(s) => serializer.serialize_str(s),
            OrderedJson::Arr(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            OrderedJson::Obj(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}
