//! Small helpers for reading typed values out of `serde_json::Value`s, producing errors that
//! name the field's JSON path.

use serde_json::Value;

use crate::error::{Error, Result};

/// A JSON object, with key order preserved.
pub(crate) type Map = serde_json::Map<String, Value>;

/// A short name for the JSON type of `value`, for error messages.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `prefix.key`, or `key` when `prefix` is empty.
pub(crate) fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

/// `prefix[index]`.
pub(crate) fn index(prefix: &str, index: usize) -> String {
    format!("{prefix}[{index}]")
}

fn wrong_type(value: &Value, field: &str, expected: &str) -> Error {
    Error::invalid(
        field,
        format!("expected {expected}, found {}", type_name(value)),
    )
}

/// The value as an object.
pub(crate) fn as_object<'a>(value: &'a Value, field: &str) -> Result<&'a Map> {
    value
        .as_object()
        .ok_or_else(|| wrong_type(value, field, "an object"))
}

/// The value as an array.
pub(crate) fn as_array<'a>(value: &'a Value, field: &str) -> Result<&'a Vec<Value>> {
    value
        .as_array()
        .ok_or_else(|| wrong_type(value, field, "an array"))
}

/// The value as a string.
pub(crate) fn as_str<'a>(value: &'a Value, field: &str) -> Result<&'a str> {
    value
        .as_str()
        .ok_or_else(|| wrong_type(value, field, "a string"))
}

/// The value as a boolean.
pub(crate) fn as_bool(value: &Value, field: &str) -> Result<bool> {
    value
        .as_bool()
        .ok_or_else(|| wrong_type(value, field, "a boolean"))
}

/// The value as a non-negative integer written without fraction or exponent.
pub(crate) fn as_u64(value: &Value, field: &str) -> Result<u64> {
    match value {
        Value::Number(n) => n.as_u64().ok_or_else(|| {
            Error::invalid(field, format!("expected a non-negative integer, found {n}"))
        }),
        _ => Err(wrong_type(value, field, "a non-negative integer")),
    }
}

/// The value as an array of non-negative integers.
pub(crate) fn as_u64_list(value: &Value, field: &str) -> Result<Vec<u64>> {
    as_array(value, field)?
        .iter()
        .enumerate()
        .map(|(i, v)| as_u64(v, &index(field, i)))
        .collect()
}

/// The member `key` of `map`, or a [`Error::MissingField`] naming `prefix.key`.
pub(crate) fn required<'a>(map: &'a Map, key: &str, prefix: &str) -> Result<&'a Value> {
    map.get(key)
        .ok_or_else(|| Error::missing(join(prefix, key)))
}

/// Refuse members of `map` other than `allowed`, naming the first unknown one.
pub(crate) fn deny_unknown(map: &Map, allowed: &[&str], prefix: &str) -> Result<()> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(Error::UnknownField {
            field: join(prefix, key),
        }),
        None => Ok(()),
    }
}
