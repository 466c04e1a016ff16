//! Attributes read as typed values: any `serde::Deserialize` type, for an attribute or for
//! the attributes as a whole.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// Attribute `key` of the node at `node` as a `T`, or `None` if there is no such attribute.
pub(crate) fn attribute<T: DeserializeOwned>(
    node: &str,
    attributes: &Map<String, Value>,
    key: &str,
) -> Result<Option<T>> {
    attributes
        .get(key)
        .map(|value| {
            T::deserialize(value).map_err(|source| Error::Attribute {
                node: node.to_owned(),
                key: Some(key.to_owned()),
                source,
            })
        })
        .transpose()
}

/// The attributes of the node at `node` as a `T` (a struct whose fields are attributes).
pub(crate) fn attributes_as<T: DeserializeOwned>(
    node: &str,
    attributes: &Map<String, Value>,
) -> Result<T> {
    T::deserialize(Value::Object(attributes.clone())).map_err(|source| Error::Attribute {
        node: node.to_owned(),
        key: None,
        source,
    })
}

/// `value` as the JSON of attribute `key` of the node at `node`.
pub(crate) fn to_attribute<T: Serialize + ?Sized>(
    node: &str,
    key: &str,
    value: &T,
) -> Result<Value> {
    serde_json::to_value(value).map_err(|source| Error::Attribute {
        node: node.to_owned(),
        key: Some(key.to_owned()),
        source,
    })
}
