//! Chunk key encodings: how a chunk's grid indices become a store key.

use std::fmt;

use serde_json::Value;

use crate::error::{Error, ExtensionKind, Result};
use crate::extension::ExtensionObject;
use crate::json::{self, Map};

/// The separator between the parts of a chunk key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChunkKeySeparator {
    /// `/`: nested keys such as `c/1/2`.
    Slash,
    /// `.`: flat keys such as `c.1.2`.
    Dot,
}

impl ChunkKeySeparator {
    /// The separator character.
    pub fn as_char(self) -> char {
        match self {
            Self::Slash => '/',
            Self::Dot => '.',
        }
    }

    fn parse(text: &str, field: &str) -> Result<Self> {
        match text {
            "/" => Ok(Self::Slash),
            "." => Ok(Self::Dot),
            other => Err(Error::invalid(
                field,
                format!("separator must be \"/\" or \".\", found {other:?}"),
            )),
        }
    }
}

impl fmt::Display for ChunkKeySeparator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.as_char())
    }
}

/// How chunk keys are formed from chunk grid indices.
///
/// ```
/// use zarr_core::{ChunkKeyEncoding, ChunkKeySeparator};
///
/// let default = ChunkKeyEncoding::default();
/// assert_eq!(default.encode(&[1, 23, 45]), "c/1/23/45");
/// assert_eq!(default.encode(&[]), "c");
/// let v2 = ChunkKeyEncoding::V2 { separator: ChunkKeySeparator::Dot };
/// assert_eq!(v2.encode(&[1, 23, 45]), "1.23.45");
/// assert_eq!(v2.encode(&[]), "0");
/// assert_eq!(v2.decode("1.23.45", 3), Some(vec![1, 23, 45]));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChunkKeyEncoding {
    /// `default`: `c`, then each index preceded by the separator (default `/`).
    Default {
        /// The separator.
        separator: ChunkKeySeparator,
    },
    /// `v2`: the indices joined by the separator (default `.`), `0` for a 0-d array.
    V2 {
        /// The separator.
        separator: ChunkKeySeparator,
    },
}

impl Default for ChunkKeyEncoding {
    fn default() -> Self {
        Self::Default {
            separator: ChunkKeySeparator::Slash,
        }
    }
}

impl ChunkKeyEncoding {
    /// The separator in use.
    pub fn separator(&self) -> ChunkKeySeparator {
        match self {
            Self::Default { separator } | Self::V2 { separator } => *separator,
        }
    }

    /// The key of the chunk at `indices`, relative to the array's prefix.
    pub fn encode(&self, indices: &[u64]) -> String {
        use std::fmt::Write as _;
        let sep = self.separator().as_char();
        let mut key = String::with_capacity(2 + indices.len() * 4);
        match self {
            Self::Default { .. } => {
                key.push('c');
                for index in indices {
                    key.push(sep);
                    let _ = write!(key, "{index}");
                }
            }
            Self::V2 { .. } => {
                if indices.is_empty() {
                    key.push('0');
                }
                for (i, index) in indices.iter().enumerate() {
                    if i > 0 {
                        key.push(sep);
                    }
                    let _ = write!(key, "{index}");
                }
            }
        }
        key
    }

    /// The chunk indices of a key relative to the array's prefix, for an array of `rank`
    /// dimensions, or `None` if the key is not a chunk key of this encoding.
    pub fn decode(&self, key: &str, rank: usize) -> Option<Vec<u64>> {
        let sep = self.separator().as_char();
        let rest = match self {
            Self::Default { .. } => {
                let rest = key.strip_prefix('c')?;
                if rank == 0 {
                    return rest.is_empty().then(Vec::new);
                }
                rest.strip_prefix(sep)?
            }
            Self::V2 { .. } => {
                if rank == 0 {
                    return (key == "0").then(Vec::new);
                }
                key
            }
        };
        let indices: Vec<u64> = rest
            .split(sep)
            .map(|part| {
                // Canonical decimal only: no sign, no leading zeros.
                let canonical = !part.is_empty()
                    && part.bytes().all(|b| b.is_ascii_digit())
                    && (part == "0" || !part.starts_with('0'));
                canonical.then(|| part.parse().ok()).flatten()
            })
            .collect::<Option<_>>()?;
        (indices.len() == rank).then_some(indices)
    }

    /// Parse the `chunk_key_encoding` field.
    ///
    /// # Errors
    /// [`Error::UnknownExtension`] for an unknown encoding, [`Error::MustUnderstandNotAllowed`]
    /// for `"must_understand": false`, [`Error::InvalidField`] for a bad separator.
    pub fn from_json(value: &Value, field: &str) -> Result<Self> {
        let ext = ExtensionObject::from_json_understood(value, field)?;
        let config_field = json::join(field, "configuration");
        let config = ext.configuration_or_empty();
        json::deny_unknown(&config, &["separator"], &config_field)?;
        let separator = config
            .get("separator")
            .map(|v| {
                let sep_field = json::join(&config_field, "separator");
                ChunkKeySeparator::parse(json::as_str(v, &sep_field)?, &sep_field)
            })
            .transpose()?;
        match ext.name.as_str() {
            "default" => Ok(Self::Default {
                separator: separator.unwrap_or(ChunkKeySeparator::Slash),
            }),
            "v2" => Ok(Self::V2 {
                separator: separator.unwrap_or(ChunkKeySeparator::Dot),
            }),
            other => Err(Error::UnknownExtension {
                kind: ExtensionKind::ChunkKeyEncoding,
                name: other.to_owned(),
                field: field.to_owned(),
            }),
        }
    }

    /// The metadata form, always with the separator written out (as zarr-python does).
    pub fn to_json(&self) -> Value {
        let name = match self {
            Self::Default { .. } => "default",
            Self::V2 { .. } => "v2",
        };
        let mut config = Map::new();
        config.insert(
            "separator".into(),
            Value::String(self.separator().as_char().to_string()),
        );
        ExtensionObject::with_configuration(name, config).to_json()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parse_and_write() {
        let cases = [
            (
                json!({"name": "default"}),
                "c/1/2",
                r#"{"name":"default","configuration":{"separator":"/"}}"#,
            ),
            (
                json!("default"),
                "c/1/2",
                r#"{"name":"default","configuration":{"separator":"/"}}"#,
            ),
            (
                json!({"name": "default", "configuration": {"separator": "."}}),
                "c.1.2",
                r#"{"name":"default","configuration":{"separator":"."}}"#,
            ),
            (
                json!({"name": "v2"}),
                "1.2",
                r#"{"name":"v2","configuration":{"separator":"."}}"#,
            ),
            (
                json!({"name": "v2", "configuration": {"separator": "/"}}),
                "1/2",
                r#"{"name":"v2","configuration":{"separator":"/"}}"#,
            ),
        ];
        for (value, key, written) in cases {
            let enc = ChunkKeyEncoding::from_json(&value, "chunk_key_encoding").unwrap();
            assert_eq!(enc.encode(&[1, 2]), key);
            assert_eq!(enc.decode(key, 2), Some(vec![1, 2]));
            assert_eq!(enc.to_json().to_string(), written);
            assert_eq!(
                ChunkKeyEncoding::from_json(&enc.to_json(), "x").unwrap(),
                enc
            );
        }
    }

    #[test]
    fn zero_dimensional_keys() {
        let default = ChunkKeyEncoding::default();
        assert_eq!(default.encode(&[]), "c");
        assert_eq!(default.decode("c", 0), Some(vec![]));
        let v2 = ChunkKeyEncoding::V2 {
            separator: ChunkKeySeparator::Dot,
        };
        assert_eq!(v2.encode(&[]), "0");
        assert_eq!(v2.decode("0", 0), Some(vec![]));
    }

    #[test]
    fn decode_refuses_non_keys() {
        let default = ChunkKeyEncoding::default();
        for key in [
            "c/1",
            "c/1/2/3",
            "c/01/2",
            "c/-1/2",
            "c/+1/2",
            "d/1/2",
            "c1/2",
            "c//2",
            "zarr.json",
            "c/1/99999999999999999999",
        ] {
            assert_eq!(default.decode(key, 2), None, "{key}");
        }
        assert_eq!(default.decode("c/0/10", 2), Some(vec![0, 10]));
    }

    #[test]
    fn bad_encodings() {
        for (value, needle) in [
            (
                json!({"name": "prefix"}),
                "unknown chunk key encoding `prefix`",
            ),
            (
                json!({"name": "default", "configuration": {"separator": "-"}}),
                "chunk_key_encoding.configuration.separator",
            ),
            (
                json!({"name": "default", "configuration": {"separator": 1}}),
                "chunk_key_encoding.configuration.separator",
            ),
            (
                json!({"name": "default", "configuration": {"sep": "/"}}),
                "chunk_key_encoding.configuration.sep",
            ),
            (
                json!({"name": "default", "must_understand": false}),
                "not allowed",
            ),
        ] {
            let err = ChunkKeyEncoding::from_json(&value, "chunk_key_encoding")
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{err} should contain {needle}");
        }
    }
}
