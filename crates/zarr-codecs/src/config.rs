//! Reading codec configurations with errors that name the codec and the key.

use serde_json::{Map, Value};
use zarr_core::ExtensionObject;

use crate::error::{Error, Result};

/// A codec's configuration object (empty when absent), with the codec's name for errors.
pub(crate) struct Config<'a> {
    codec: &'a str,
    map: Option<&'a Map<String, Value>>,
}

impl<'a> Config<'a> {
    /// The configuration of `metadata`, refusing keys other than `allowed`.
    pub(crate) fn new(metadata: &'a ExtensionObject, allowed: &[&str]) -> Result<Self> {
        let config = Self {
            codec: &metadata.name,
            map: metadata.configuration.as_ref(),
        };
        if let Some(map) = config.map
            && let Some(key) = map.keys().find(|k| !allowed.contains(&k.as_str()))
        {
            return Err(Error::config(
                config.codec,
                format!(
                    "unknown key `{key}` (expected {})",
                    if allowed.is_empty() {
                        "no configuration".to_owned()
                    } else {
                        allowed
                            .iter()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ),
            ));
        }
        Ok(config)
    }

    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.and_then(|m| m.get(key))
    }

    pub(crate) fn required(&self, key: &str) -> Result<&'a Value> {
        self.get(key)
            .ok_or_else(|| Error::config(self.codec, format!("`{key}` is required")))
    }

    pub(crate) fn error(&self, key: &str, expected: &str, found: &Value) -> Error {
        Error::config(
            self.codec,
            format!("`{key}` must be {expected}, found {found}"),
        )
    }

    /// An integer in `range`.
    pub(crate) fn int_in(
        &self,
        key: &str,
        value: &Value,
        range: std::ops::RangeInclusive<i64>,
    ) -> Result<i64> {
        match value.as_i64() {
            Some(v) if range.contains(&v) => Ok(v),
            _ => Err(self.error(
                key,
                &format!("an integer from {} to {}", range.start(), range.end()),
                value,
            )),
        }
    }

    /// A non-negative integer.
    pub(crate) fn uint(&self, key: &str, value: &Value) -> Result<u64> {
        value
            .as_u64()
            .ok_or_else(|| self.error(key, "a non-negative integer", value))
    }

    pub(crate) fn bool(&self, key: &str, value: &Value) -> Result<bool> {
        value
            .as_bool()
            .ok_or_else(|| self.error(key, "a boolean", value))
    }

    pub(crate) fn str(&self, key: &str, value: &'a Value) -> Result<&'a str> {
        value
            .as_str()
            .ok_or_else(|| self.error(key, "a string", value))
    }
}

/// Build a configuration map from key-value pairs.
pub(crate) fn map<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}
