//! Chunk key encodings: how a chunk's grid indices become a store key.

use std::fmt;

use serde_json::Value;

use crate::error::{Error, ExtensionKind, Result};
use crate::extension::ExtensionObject;
use crate::json::{self, Map};

mod template;

pub use template::ChunkKeyTemplate;

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
/// `default` and `v2` are the Zarr v3 specification's; `prefix`, `suffix`, `fanout` and
/// `template` are registered in zarr-extensions; `zarrs.default_suffix` is zarrs'. Keys are
/// relative to the array's prefix.
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
///
/// let tiff = ChunkKeyEncoding::suffix(".tiff", ChunkKeyEncoding::default())?;
/// assert_eq!(tiff.encode(&[1, 2]), "c/1/2.tiff");
/// let fanout = ChunkKeyEncoding::fanout(101)?;
/// assert_eq!(fanout.encode(&[1234, 5]), "d0/12/34/d1/5/c");
/// assert_eq!(fanout.decode("d0/12/34/d1/5/c", 2), Some(vec![1234, 5]));
/// # Ok::<(), zarr_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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
    /// `zarrs.default_suffix` (zarrs): the `default` key followed by `suffix`.
    DefaultSuffix {
        /// The separator.
        separator: ChunkKeySeparator,
        /// Text after every key, such as `.tiff`.
        suffix: String,
    },
    /// `prefix` (zarr-extensions): `prefix` followed by the key of the base encoding.
    Prefix {
        /// Text before every key, such as `x/`.
        prefix: String,
        /// The encoding of the rest of the key.
        base: Box<ChunkKeyEncoding>,
    },
    /// `suffix` (zarr-extensions): the key of the base encoding followed by `suffix`.
    Suffix {
        /// Text after every key, such as `.tiff`.
        suffix: String,
        /// The encoding of the start of the key.
        base: Box<ChunkKeyEncoding>,
    },
    /// `fanout` (zarr-extensions): each index written in base `max_children - 1` as a path
    /// of digits after a `d<dimension>` segment, then `c`, so that no directory holds more
    /// than `max_children` entries.
    Fanout(ChunkKeyFanout),
    /// `template` (zarr-extensions): a format string.
    Template(ChunkKeyTemplate),
}

/// The configuration of the `fanout` chunk key encoding: at most `max_children` entries
/// per directory (at least 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChunkKeyFanout {
    max_children: u64,
}

impl ChunkKeyFanout {
    /// The default, 1001 entries per directory.
    pub const DEFAULT_MAX_CHILDREN: u64 = 1001;

    /// At most `max_children` entries per directory.
    ///
    /// # Errors
    /// [`Error::InvalidField`] naming `max_children` if it is below 3.
    pub fn new(max_children: u64) -> Result<Self> {
        Self::new_at(max_children, "max_children")
    }

    fn new_at(max_children: u64, field: &str) -> Result<Self> {
        if max_children < 3 {
            return Err(Error::invalid(
                field,
                format!("must be at least 3, found {max_children}"),
            ));
        }
        Ok(Self { max_children })
    }

    /// The most entries a directory holds.
    pub fn max_children(self) -> u64 {
        self.max_children
    }

    fn base(self) -> u64 {
        self.max_children - 1
    }

    fn encode(self, indices: &[u64], key: &mut String) {
        use std::fmt::Write as _;
        let base = self.base();
        let mut digits = Vec::new();
        for (dim, &index) in indices.iter().enumerate() {
            let _ = write!(key, "d{dim}/");
            digits.clear();
            let mut rest = index;
            loop {
                digits.push(rest % base);
                rest /= base;
                if rest == 0 {
                    break;
                }
            }
            for digit in digits.iter().rev() {
                let _ = write!(key, "{digit}/");
            }
        }
        key.push('c');
    }

    fn decode(self, key: &str, rank: usize) -> Option<Vec<u64>> {
        let base = self.base();
        let mut segments = key.split('/').peekable();
        let mut indices = Vec::with_capacity(rank);
        for dim in 0..rank {
            let marker = segments.next()?;
            if marker.strip_prefix('d') != Some(dim.to_string().as_str()) {
                return None;
            }
            let mut value: u64 = 0;
            let mut count = 0usize;
            while let Some(segment) = segments.next_if(|s| s.bytes().all(|b| b.is_ascii_digit())) {
                let digit = canonical_decimal(segment)?;
                // A number has no leading zero digit.
                if digit >= base || (count > 0 && value == 0) {
                    return None;
                }
                value = value.checked_mul(base)?.checked_add(digit)?;
                count += 1;
            }
            if count == 0 {
                return None;
            }
            indices.push(value);
        }
        (segments.next() == Some("c") && segments.next().is_none()).then_some(indices)
    }
}

impl Default for ChunkKeyEncoding {
    fn default() -> Self {
        Self::Default {
            separator: ChunkKeySeparator::Slash,
        }
    }
}

/// A decimal number written without sign or leading zeros.
fn canonical_decimal(part: &str) -> Option<u64> {
    let canonical = !part.is_empty()
        && part.bytes().all(|b| b.is_ascii_digit())
        && (part == "0" || !part.starts_with('0'));
    canonical.then(|| part.parse().ok()).flatten()
}

impl ChunkKeyEncoding {
    /// `prefix` followed by the keys of `base`.
    ///
    /// # Errors
    /// [`Error::InvalidField`] naming `prefix` if it is empty, starts with `/`, or contains
    /// `..`, `\`, a NUL character, `//` or `zarr.json`.
    pub fn prefix(prefix: impl Into<String>, base: ChunkKeyEncoding) -> Result<Self> {
        let prefix = prefix.into();
        check_prefix(&prefix, "prefix")?;
        Ok(Self::Prefix {
            prefix,
            base: Box::new(base),
        })
    }

    /// The keys of `base` followed by `suffix`.
    ///
    /// # Errors
    /// [`Error::InvalidField`] naming `suffix` if it is empty, ends with `/`, or contains
    /// `..`, `\`, a NUL character, `//` or `zarr.json`.
    pub fn suffix(suffix: impl Into<String>, base: ChunkKeyEncoding) -> Result<Self> {
        let suffix = suffix.into();
        check_suffix(&suffix, "suffix")?;
        Ok(Self::Suffix {
            suffix,
            base: Box::new(base),
        })
    }

    /// The `fanout` encoding with at most `max_children` entries per directory.
    ///
    /// # Errors
    /// As [`ChunkKeyFanout::new`].
    pub fn fanout(max_children: u64) -> Result<Self> {
        ChunkKeyFanout::new(max_children).map(Self::Fanout)
    }

    /// The separator of a `default`, `v2` or `zarrs.default_suffix` encoding (for `prefix`
    /// and `suffix`, their base's); `None` for `fanout` and `template`.
    pub fn separator(&self) -> Option<ChunkKeySeparator> {
        match self {
            Self::Default { separator }
            | Self::V2 { separator }
            | Self::DefaultSuffix { separator, .. } => Some(*separator),
            Self::Prefix { base, .. } | Self::Suffix { base, .. } => base.separator(),
            Self::Fanout(_) | Self::Template(_) => None,
        }
    }

    /// The encoding's name in the metadata.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Default { .. } => "default",
            Self::V2 { .. } => "v2",
            Self::DefaultSuffix { .. } => "zarrs.default_suffix",
            Self::Prefix { .. } => "prefix",
            Self::Suffix { .. } => "suffix",
            Self::Fanout(_) => "fanout",
            Self::Template(_) => "template",
        }
    }

    /// Check that the encoding can name the chunks of an array of `rank` dimensions. Only
    /// a `template` (possibly as a base) can fail: see [`ChunkKeyTemplate::check_rank`].
    ///
    /// # Errors
    /// [`Error::InvalidField`] naming `field`.
    pub fn check_rank(&self, rank: usize, field: &str) -> Result<()> {
        match self {
            Self::Template(template) => template.check_rank(rank, field),
            Self::Prefix { base, .. } | Self::Suffix { base, .. } => {
                base.check_rank(rank, &json::join(field, "configuration.base_encoding"))
            }
            _ => Ok(()),
        }
    }

    /// The key of the chunk at `indices`, relative to the array's prefix.
    ///
    /// # Panics
    /// For a `template` that does not suit `indices.len()` dimensions
    /// ([`ChunkKeyEncoding::check_rank`]). Arrays check this when their metadata is read or
    /// built, so their chunk keys never panic.
    pub fn encode(&self, indices: &[u64]) -> String {
        let mut key = String::with_capacity(2 + indices.len() * 4);
        self.encode_into(indices, &mut key);
        key
    }

    fn encode_into(&self, indices: &[u64], key: &mut String) {
        use std::fmt::Write as _;
        match self {
            Self::Default { separator } | Self::DefaultSuffix { separator, .. } => {
                let sep = separator.as_char();
                key.push('c');
                for index in indices {
                    key.push(sep);
                    let _ = write!(key, "{index}");
                }
                if let Self::DefaultSuffix { suffix, .. } = self {
                    key.push_str(suffix);
                }
            }
            Self::V2 { separator } => {
                if indices.is_empty() {
                    key.push('0');
                }
                for (i, index) in indices.iter().enumerate() {
                    if i > 0 {
                        key.push(separator.as_char());
                    }
                    let _ = write!(key, "{index}");
                }
            }
            Self::Prefix { prefix, base } => {
                key.push_str(prefix);
                base.encode_into(indices, key);
            }
            Self::Suffix { suffix, base } => {
                base.encode_into(indices, key);
                key.push_str(suffix);
            }
            Self::Fanout(fanout) => fanout.encode(indices, key),
            Self::Template(template) => key.push_str(&template.encode(indices)),
        }
    }

    /// The chunk indices of a key relative to the array's prefix, for an array of `rank`
    /// dimensions, or `None` if the key is not a chunk key of this encoding: exactly the keys
    /// [`ChunkKeyEncoding::encode`] writes decode, so no chunk has two keys.
    pub fn decode(&self, key: &str, rank: usize) -> Option<Vec<u64>> {
        match self {
            Self::Default { separator } => decode_default(key, rank, *separator),
            Self::DefaultSuffix { separator, suffix } => {
                decode_default(key.strip_suffix(suffix.as_str())?, rank, *separator)
            }
            Self::V2 { separator } => {
                if rank == 0 {
                    return (key == "0").then(Vec::new);
                }
                decode_joined(key, rank, *separator)
            }
            Self::Prefix { prefix, base } => base.decode(key.strip_prefix(prefix.as_str())?, rank),
            Self::Suffix { suffix, base } => base.decode(key.strip_suffix(suffix.as_str())?, rank),
            Self::Fanout(fanout) => fanout.decode(key, rank),
            Self::Template(template) => template.decode(key, rank),
        }
    }

    /// Parse the `chunk_key_encoding` field.
    ///
    /// # Errors
    /// [`Error::UnknownExtension`] for an unknown encoding, [`Error::MustUnderstandNotAllowed`]
    /// for `"must_understand": false`, [`Error::InvalidField`] for a bad configuration.
    pub fn from_json(value: &Value, field: &str) -> Result<Self> {
        let ext = ExtensionObject::from_json_understood(value, field)?;
        let config_field = json::join(field, "configuration");
        let config = ext.configuration_or_empty();
        let at = |key: &str| json::join(&config_field, key);
        let string = |key: &str| -> Result<Option<String>> {
            config
                .get(key)
                .map(|v| json::as_str(v, &at(key)).map(str::to_owned))
                .transpose()
        };
        let required_string =
            |key: &str| -> Result<String> { string(key)?.ok_or_else(|| Error::missing(at(key))) };
        let separator = |key: &str| -> Result<Option<ChunkKeySeparator>> {
            string(key)?
                .map(|s| ChunkKeySeparator::parse(&s, &at(key)))
                .transpose()
        };
        let base = |key: &str| -> Result<Box<ChunkKeyEncoding>> {
            let value = json::required(&config, key, &config_field)?;
            Ok(Box::new(Self::from_json(value, &at(key))?))
        };
        match ext.name.as_str() {
            "default" => {
                json::deny_unknown(&config, &["separator"], &config_field)?;
                Ok(Self::Default {
                    separator: separator("separator")?.unwrap_or(ChunkKeySeparator::Slash),
                })
            }
            "v2" => {
                json::deny_unknown(&config, &["separator"], &config_field)?;
                Ok(Self::V2 {
                    separator: separator("separator")?.unwrap_or(ChunkKeySeparator::Dot),
                })
            }
            "zarrs.default_suffix" => {
                json::deny_unknown(&config, &["separator", "suffix"], &config_field)?;
                let suffix = required_string("suffix")?;
                check_suffix(&suffix, &at("suffix"))?;
                Ok(Self::DefaultSuffix {
                    separator: separator("separator")?.unwrap_or(ChunkKeySeparator::Slash),
                    suffix,
                })
            }
            "prefix" => {
                json::deny_unknown(&config, &["prefix", "base_encoding"], &config_field)?;
                let prefix = required_string("prefix")?;
                check_prefix(&prefix, &at("prefix"))?;
                Ok(Self::Prefix {
                    prefix,
                    base: base("base_encoding")?,
                })
            }
            "suffix" => {
                // The extension's first example spells the key `base-encoding`.
                json::deny_unknown(
                    &config,
                    &["suffix", "base_encoding", "base-encoding"],
                    &config_field,
                )?;
                let suffix = required_string("suffix")?;
                check_suffix(&suffix, &at("suffix"))?;
                let base = match (
                    config.contains_key("base_encoding"),
                    config.contains_key("base-encoding"),
                ) {
                    (true, true) => {
                        return Err(Error::invalid(
                            at("base-encoding"),
                            "give `base_encoding` or `base-encoding`, not both",
                        ));
                    }
                    (false, true) => base("base-encoding")?,
                    _ => base("base_encoding")?,
                };
                Ok(Self::Suffix { suffix, base })
            }
            "fanout" => {
                json::deny_unknown(&config, &["max_children"], &config_field)?;
                let max_children = config
                    .get("max_children")
                    .map(|v| json::as_u64(v, &at("max_children")))
                    .transpose()?
                    .unwrap_or(ChunkKeyFanout::DEFAULT_MAX_CHILDREN);
                Ok(Self::Fanout(ChunkKeyFanout::new_at(
                    max_children,
                    &at("max_children"),
                )?))
            }
            "template" => {
                // The extension's schema names the format string `format`; its table, `template`.
                json::deny_unknown(&config, &["format", "template", "separator"], &config_field)?;
                let (key, format) = match (string("format")?, string("template")?) {
                    (Some(_), Some(_)) => {
                        return Err(Error::invalid(
                            at("template"),
                            "give `format` or `template`, not both",
                        ));
                    }
                    (Some(format), None) => ("format", format),
                    (None, Some(format)) => ("template", format),
                    (None, None) => return Err(Error::missing(at("format"))),
                };
                let separator = string("separator")?;
                Ok(Self::Template(ChunkKeyTemplate::parse(
                    &format,
                    separator.as_deref(),
                    &at(key),
                    &at("separator"),
                )?))
            }
            other => Err(Error::UnknownExtension {
                kind: ExtensionKind::ChunkKeyEncoding,
                name: other.to_owned(),
                field: field.to_owned(),
            }),
        }
    }

    /// The metadata form, always with the separator written out (as zarr-python does).
    pub fn to_json(&self) -> Value {
        let mut config = Map::new();
        let separator = |sep: &ChunkKeySeparator| Value::String(sep.as_char().to_string());
        match self {
            Self::Default { separator: sep } | Self::V2 { separator: sep } => {
                config.insert("separator".into(), separator(sep));
            }
            Self::DefaultSuffix {
                separator: sep,
                suffix,
            } => {
                config.insert("separator".into(), separator(sep));
                config.insert("suffix".into(), Value::String(suffix.clone()));
            }
            Self::Prefix { prefix, base } => {
                config.insert("prefix".into(), Value::String(prefix.clone()));
                config.insert("base_encoding".into(), base.to_json());
            }
            Self::Suffix { suffix, base } => {
                config.insert("suffix".into(), Value::String(suffix.clone()));
                config.insert("base_encoding".into(), base.to_json());
            }
            Self::Fanout(fanout) => {
                config.insert("max_children".into(), fanout.max_children().into());
            }
            Self::Template(template) => {
                config.insert("format".into(), Value::String(template.format().to_owned()));
                if let Some(separator) = template.separator() {
                    config.insert("separator".into(), Value::String(separator.to_owned()));
                }
            }
        }
        ExtensionObject::with_configuration(self.name(), config).to_json()
    }
}

/// `c`, then the indices each after `separator`.
fn decode_default(key: &str, rank: usize, separator: ChunkKeySeparator) -> Option<Vec<u64>> {
    let rest = key.strip_prefix('c')?;
    if rank == 0 {
        return rest.is_empty().then(Vec::new);
    }
    decode_joined(rest.strip_prefix(separator.as_char())?, rank, separator)
}

/// `rank` canonical decimals joined by `separator`.
fn decode_joined(text: &str, rank: usize, separator: ChunkKeySeparator) -> Option<Vec<u64>> {
    let indices: Vec<u64> = text
        .split(separator.as_char())
        .map(canonical_decimal)
        .collect::<Option<_>>()?;
    (indices.len() == rank).then_some(indices)
}

/// The rules of the `prefix` extension for its text.
fn check_prefix(prefix: &str, field: &str) -> Result<()> {
    let reason = if prefix.is_empty() {
        Err("cannot be empty")
    } else if prefix.starts_with('/') {
        Err("cannot start with \"/\"")
    } else if prefix
        .split('/')
        .rev()
        .skip(1)
        .any(|segment| segment == ".")
    {
        // The last part runs into the key; the others are whole segments.
        Err("makes keys with a \".\" segment")
    } else {
        template::check_text(prefix)
    };
    reason.map_err(|reason| Error::invalid(field, format!("{prefix:?} {reason}")))
}

/// The same rules for a suffix, which may start but not end with `/` (a key cannot).
fn check_suffix(suffix: &str, field: &str) -> Result<()> {
    let reason = if suffix.is_empty() {
        Err("cannot be empty")
    } else if suffix.ends_with('/') {
        Err("cannot end with \"/\"")
    } else if suffix.split('/').skip(1).any(|segment| segment == ".") {
        // The first part runs on from the key; the others are whole segments.
        Err("makes keys with a \".\" segment")
    } else {
        template::check_text(suffix)
    };
    reason.map_err(|reason| Error::invalid(field, format!("{suffix:?} {reason}")))
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
                json!({"name": "hilbert"}),
                "unknown chunk key encoding `hilbert`",
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

    #[test]
    fn extension_encodings_parse_encode_and_write() {
        let cases = [
            (
                json!({"name": "zarrs.default_suffix", "configuration": {"suffix": ".tiff"}}),
                "c/1/2.tiff",
                r#"{"name":"zarrs.default_suffix","configuration":{"separator":"/","suffix":".tiff"}}"#,
            ),
            (
                json!({"name": "zarrs.default_suffix", "configuration": {"separator": ".", "suffix": ".b"}}),
                "c.1.2.b",
                r#"{"name":"zarrs.default_suffix","configuration":{"separator":".","suffix":".b"}}"#,
            ),
            (
                json!({"name": "prefix", "configuration": {"prefix": "x/", "base_encoding": "v2"}}),
                "x/1.2",
                r#"{"name":"prefix","configuration":{"prefix":"x/","base_encoding":{"name":"v2","configuration":{"separator":"."}}}}"#,
            ),
            (
                json!({"name": "suffix", "configuration": {"suffix": ".shard.zip", "base_encoding": {"name": "v2"}}}),
                "1.2.shard.zip",
                r#"{"name":"suffix","configuration":{"suffix":".shard.zip","base_encoding":{"name":"v2","configuration":{"separator":"."}}}}"#,
            ),
            (
                json!({"name": "suffix", "configuration": {"suffix": ".tiff", "base-encoding": {"name": "default"}}}),
                "c/1/2.tiff",
                r#"{"name":"suffix","configuration":{"suffix":".tiff","base_encoding":{"name":"default","configuration":{"separator":"/"}}}}"#,
            ),
            (
                json!({"name": "suffix", "configuration": {"suffix": ".t", "base_encoding":
                    {"name": "prefix", "configuration": {"prefix": "p-", "base_encoding": "default"}}}}),
                "p-c/1/2.t",
                r#"{"name":"suffix","configuration":{"suffix":".t","base_encoding":{"name":"prefix","configuration":{"prefix":"p-","base_encoding":{"name":"default","configuration":{"separator":"/"}}}}}}"#,
            ),
            (
                json!({"name": "fanout"}),
                "d0/1/d1/2/c",
                r#"{"name":"fanout","configuration":{"max_children":1001}}"#,
            ),
            (
                json!({"name": "fanout", "configuration": {"max_children": 3}}),
                "d0/1/d1/1/0/c",
                r#"{"name":"fanout","configuration":{"max_children":3}}"#,
            ),
            (
                json!({"name": "template", "configuration": {"format": "{-1}-{0:03}.png"}}),
                "2-001.png",
                r#"{"name":"template","configuration":{"format":"{-1}-{0:03}.png"}}"#,
            ),
            (
                json!({"name": "template", "configuration": {"template": "t/{*}", "separator": "_"}}),
                "t/1_2",
                r#"{"name":"template","configuration":{"format":"t/{*}","separator":"_"}}"#,
            ),
        ];
        for (value, key, written) in cases {
            let enc = ChunkKeyEncoding::from_json(&value, "chunk_key_encoding").unwrap();
            assert_eq!(enc.encode(&[1, 2]), key, "{value}");
            assert_eq!(enc.decode(key, 2), Some(vec![1, 2]), "{value}");
            assert_eq!(enc.to_json().to_string(), written);
            assert_eq!(
                ChunkKeyEncoding::from_json(&enc.to_json(), "x").unwrap(),
                enc
            );
        }
    }

    /// The extension's table for `max_children = 101`.
    #[test]
    fn fanout_keys() {
        let fanout = ChunkKeyEncoding::fanout(101).unwrap();
        for (coords, key) in [
            (&[][..], "c"),
            (&[123][..], "d0/1/23/c"),
            (&[1234, 5, 67890][..], "d0/12/34/d1/5/d2/6/78/90/c"),
            (&[0, 100][..], "d0/0/d1/1/0/c"),
            (&[u64::MAX][..], "d0/18/44/67/44/7/37/9/55/16/15/c"),
        ] {
            assert_eq!(fanout.encode(coords), key);
            assert_eq!(
                fanout.decode(key, coords.len()),
                Some(coords.to_vec()),
                "{key}"
            );
        }
        for key in [
            "d0/1/23",
            "d0/1/23/c/x",
            "d1/1/c",
            "d0/c",
            "d0/0/1/c",
            "d0/100/c",
            "d0/01/c",
            "d0/1//c",
            "d0/99/99/99/99/99/99/99/99/99/99/99/c",
            "zarr.json",
        ] {
            assert_eq!(fanout.decode(key, 1), None, "{key}");
        }
        assert_eq!(fanout.decode("d0/1/c", 2), None);
    }

    #[test]
    fn every_encoding_reads_back_exactly_the_keys_it_writes() {
        let encodings = [
            ChunkKeyEncoding::default(),
            ChunkKeyEncoding::V2 {
                separator: ChunkKeySeparator::Slash,
            },
            ChunkKeyEncoding::DefaultSuffix {
                separator: ChunkKeySeparator::Dot,
                suffix: ".0".into(),
            },
            ChunkKeyEncoding::prefix("a1/", ChunkKeyEncoding::default()).unwrap(),
            ChunkKeyEncoding::suffix(
                "9",
                ChunkKeyEncoding::V2 {
                    separator: ChunkKeySeparator::Dot,
                },
            )
            .unwrap(),
            ChunkKeyEncoding::fanout(7).unwrap(),
            ChunkKeyEncoding::Template(ChunkKeyTemplate::new("{1:02}x{*}0", Some("-")).unwrap()),
        ];
        let coords: Vec<Vec<u64>> = vec![
            vec![0, 0, 0],
            vec![7, 48, 1],
            vec![100, 3, 9_999_999],
            vec![u64::MAX, 6, 0],
        ];
        for enc in &encodings {
            let mut keys = std::collections::HashSet::new();
            for c in &coords {
                let key = enc.encode(c);
                assert_eq!(enc.decode(&key, 3).as_ref(), Some(c), "{enc:?} {key}");
                assert!(keys.insert(key.clone()), "{enc:?}: two chunks share {key}");
                // Changing a character leaves no key of the same chunk.
                for (i, ch) in key.char_indices() {
                    let mut other = key.clone();
                    other.replace_range(i..i + ch.len_utf8(), if ch == '0' { "00" } else { "0" });
                    if let Some(decoded) = enc.decode(&other, 3) {
                        assert_eq!(
                            enc.encode(&decoded),
                            other,
                            "{enc:?}: {other} is not canonical"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn bad_extension_encodings() {
        for (value, needle) in [
            (
                json!({"name": "prefix", "configuration": {"prefix": "/x", "base_encoding": "default"}}),
                "chunk_key_encoding.configuration.prefix",
            ),
            (
                json!({"name": "prefix", "configuration": {"prefix": "", "base_encoding": "default"}}),
                "cannot be empty",
            ),
            (
                json!({"name": "prefix", "configuration": {"prefix": "a/../", "base_encoding": "default"}}),
                "\"..\"",
            ),
            (
                json!({"name": "prefix", "configuration": {"prefix": "x/"}}),
                "chunk_key_encoding.configuration.base_encoding",
            ),
            (
                json!({"name": "prefix", "configuration": {"prefix": "x/", "base_encoding": "nope"}}),
                "unknown chunk key encoding `nope`",
            ),
            (
                json!({"name": "suffix", "configuration": {"suffix": "x/", "base_encoding": "v2"}}),
                "cannot end with",
            ),
            (
                json!({"name": "prefix", "configuration": {"prefix": "./", "base_encoding": "default"}}),
                "\".\" segment",
            ),
            (
                json!({"name": "prefix", "configuration": {"prefix": "a/./b.", "base_encoding": "default"}}),
                "\".\" segment",
            ),
            (
                json!({"name": "suffix", "configuration": {"suffix": "/.", "base_encoding": "v2"}}),
                "\".\" segment",
            ),
            (
                json!({"name": "suffix", "configuration": {"suffix": "x", "base_encoding": "v2", "base-encoding": "v2"}}),
                "not both",
            ),
            (
                json!({"name": "suffix", "configuration": {"suffix": 3, "base_encoding": "v2"}}),
                "chunk_key_encoding.configuration.suffix",
            ),
            (
                json!({"name": "zarrs.default_suffix", "configuration": {}}),
                "chunk_key_encoding.configuration.suffix",
            ),
            (
                json!({"name": "zarrs.default_suffix", "configuration": {"suffix": "\\x"}}),
                "backslash",
            ),
            (
                json!({"name": "fanout", "configuration": {"max_children": 2}}),
                "at least 3",
            ),
            (
                json!({"name": "fanout", "configuration": {"max_children": -5}}),
                "chunk_key_encoding.configuration.max_children",
            ),
            (
                json!({"name": "fanout", "configuration": {"fanout": 10}}),
                "chunk_key_encoding.configuration.fanout",
            ),
            (
                json!({"name": "template", "configuration": {}}),
                "chunk_key_encoding.configuration.format",
            ),
            (
                json!({"name": "template", "configuration": {"format": "{0}", "template": "{0}"}}),
                "not both",
            ),
            (
                json!({"name": "template", "configuration": {"template": "{x}"}}),
                "chunk_key_encoding.configuration.template",
            ),
            (
                json!({"name": "template", "configuration": {"format": "{*}"}}),
                "chunk_key_encoding.configuration.separator",
            ),
        ] {
            let err = ChunkKeyEncoding::from_json(&value, "chunk_key_encoding")
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{err} should contain {needle}");
        }
        let nested = json!({"name": "prefix", "configuration": {"prefix": "p/", "base_encoding":
            {"name": "template", "configuration": {"format": "{0}_{1}"}}}});
        let enc = ChunkKeyEncoding::from_json(&nested, "chunk_key_encoding").unwrap();
        assert!(enc.check_rank(2, "chunk_key_encoding").is_ok());
        let err = enc
            .check_rank(3, "chunk_key_encoding")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("chunk_key_encoding.configuration.base_encoding"),
            "{err}"
        );
    }
}
