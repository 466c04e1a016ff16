//! Extension objects: the `{"name": ..., "configuration": {...}}` form (and the bare-string
//! short-hand) shared by data types, chunk grids, chunk key encodings, codecs and storage
//! transformers.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::json::{self, Map};

/// An extension object as written in metadata: a name, an optional configuration, and the
/// `must_understand` flag.
///
/// `zarr-core` does not interpret codecs or storage transformers; it keeps them as extension
/// objects for the crates that do (`zarr-codecs`, `zarr-sharding`).
///
/// ```
/// use zarr_core::ExtensionObject;
///
/// let short = ExtensionObject::from_json(&serde_json::json!("crc32c"), "codecs[1]")?;
/// let long = ExtensionObject::from_json(
///     &serde_json::json!({"name": "zstd", "configuration": {"level": 3}}),
///     "codecs[0]",
/// )?;
/// assert_eq!(short.name, "crc32c");
/// assert_eq!(long.configuration.unwrap()["level"], 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ExtensionObject {
    /// The extension's name, e.g. `zstd` or `sharding_indexed`.
    pub name: String,
    /// The configuration object, if one was given.
    pub configuration: Option<serde_json::Map<String, Value>>,
    /// `false` when the metadata marks the extension as ignorable by readers that do not know it.
    pub must_understand: bool,
}

impl ExtensionObject {
    /// An extension with a name and no configuration.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            configuration: None,
            must_understand: true,
        }
    }

    /// An extension with a name and a configuration.
    pub fn with_configuration(
        name: impl Into<String>,
        configuration: serde_json::Map<String, Value>,
    ) -> Self {
        Self {
            name: name.into(),
            configuration: Some(configuration),
            must_understand: true,
        }
    }

    /// Parse the short-hand string form or the object form; `field` names the value's place in
    /// the document for error messages.
    ///
    /// # Errors
    /// [`Error::InvalidField`] if the value is neither a string nor an object, the name is not a
    /// valid extension name, or `configuration`/`must_understand` have the wrong type;
    /// [`Error::UnknownField`] for members other than `name`, `configuration` and
    /// `must_understand`.
    pub fn from_json(value: &Value, field: &str) -> Result<Self> {
        let (name, configuration, must_understand) = match value {
            Value::String(name) => (name.clone(), None, true),
            Value::Object(map) => {
                json::deny_unknown(map, &["name", "configuration", "must_understand"], field)?;
                let name = json::as_str(
                    json::required(map, "name", field)?,
                    &json::join(field, "name"),
                )?;
                let configuration = match map.get("configuration") {
                    None => None,
                    Some(v) => {
                        Some(json::as_object(v, &json::join(field, "configuration"))?.clone())
                    }
                };
                let must_understand = match map.get("must_understand") {
                    None => true,
                    Some(v) => json::as_bool(v, &json::join(field, "must_understand"))?,
                };
                (name.to_owned(), configuration, must_understand)
            }
            other => {
                return Err(Error::invalid(
                    field,
                    format!(
                        "expected an extension name or object, found {}",
                        json::type_name(other)
                    ),
                ));
            }
        };
        validate_name(&name, &json::join(field, "name"))?;
        Ok(Self {
            name,
            configuration,
            must_understand,
        })
    }

    /// Parse an extension at a point where `"must_understand": false` is not allowed
    /// (`data_type`, `chunk_grid`, `chunk_key_encoding`).
    ///
    /// # Errors
    /// As [`ExtensionObject::from_json`], and [`Error::MustUnderstandNotAllowed`].
    pub(crate) fn from_json_understood(value: &Value, field: &str) -> Result<Self> {
        let ext = Self::from_json(value, field)?;
        if !ext.must_understand {
            return Err(Error::MustUnderstandNotAllowed {
                field: field.to_owned(),
            });
        }
        Ok(ext)
    }

    /// The object form: `{"name": ..., "configuration": ...}`, with `"must_understand": false`
    /// when set. Codecs are always written this way (zarr-python refuses the short-hand).
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("name".into(), Value::String(self.name.clone()));
        if let Some(configuration) = &self.configuration {
            map.insert("configuration".into(), Value::Object(configuration.clone()));
        }
        if !self.must_understand {
            map.insert("must_understand".into(), Value::Bool(false));
        }
        Value::Object(map)
    }

    /// The configuration, or an empty object when none was given.
    pub fn configuration_or_empty(&self) -> serde_json::Map<String, Value> {
        self.configuration.clone().unwrap_or_default()
    }
}

/// Check an extension name: `^[a-z][a-z0-9-_.]+$`, or a legacy URI (`scheme:...`), or one of
/// the fixed-point data type names (`Q7f8`, `N0f8`).
pub(crate) fn validate_name(name: &str, field: &str) -> Result<()> {
    let bytes = name.as_bytes();
    let registered = bytes.len() >= 2
        && bytes[0].is_ascii_lowercase()
        && bytes[1..].iter().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.')
        });
    let uri = name.split_once(':').is_some_and(|(scheme, rest)| {
        !scheme.is_empty()
            && !rest.is_empty()
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
    });
    // zarr-extensions names its fixed-point types `Q7f8`, `N0f8`, ...: capitals, outside
    // the rule, accepted for those names alone.
    let fixed_point = crate::fixed_point::FixedPointType::parse_name(name).is_some();
    if registered || uri || fixed_point {
        Ok(())
    } else {
        Err(Error::invalid(
            field,
            format!(
                "{name:?} is not a valid extension name (expected ^[a-z][a-z0-9-_.]+$ or a URI)"
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_forms_parse() {
        let a = ExtensionObject::from_json(&json!("bytes"), "codecs[0]").unwrap();
        assert_eq!(a, ExtensionObject::new("bytes"));
        let b = ExtensionObject::from_json(
            &json!({"name": "bytes", "configuration": {"endian": "little"}, "must_understand": false}),
            "codecs[0]",
        )
        .unwrap();
        assert!(!b.must_understand);
        assert_eq!(
            b.to_json(),
            json!({"name": "bytes", "configuration": {"endian": "little"}, "must_understand": false})
        );
        assert_eq!(a.to_json(), json!({"name": "bytes"}));
    }

    #[test]
    fn bad_forms_are_refused() {
        for (value, needle) in [
            (json!(3), "codecs[0]"),
            (json!({"configuration": {}}), "codecs[0].name"),
            (json!({"name": "x y"}), "codecs[0].name"),
            (json!({"name": "Zstd"}), "codecs[0].name"),
            (
                json!({"name": "zstd", "configuration": 1}),
                "codecs[0].configuration",
            ),
            (
                json!({"name": "zstd", "must_understand": "no"}),
                "codecs[0].must_understand",
            ),
            (json!({"name": "zstd", "level": 1}), "codecs[0].level"),
        ] {
            let err = ExtensionObject::from_json(&value, "codecs[0]").unwrap_err();
            assert!(
                err.to_string().contains(needle),
                "{err} should name {needle}"
            );
        }
    }

    #[test]
    fn uri_names_are_legacy_valid() {
        ExtensionObject::from_json(
            &json!({"name": "https://purl.org/zarr/spec/codec/gzip/1.0"}),
            "codecs[0]",
        )
        .unwrap();
    }
}
