//! Validated store keys and prefixes.

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;

use crate::{Error, Result};

/// Check the segments of a key (the part of a prefix before its final `/` is checked the same
/// way). Returns the reason the string is invalid.
fn check_key(s: &str) -> Result<(), &'static str> {
    if s.is_empty() {
        return Err("a key cannot be empty");
    }
    if s.starts_with('/') {
        return Err("a key cannot start with \"/\"");
    }
    if s.ends_with('/') {
        return Err("a key cannot end with \"/\" (that is a prefix)");
    }
    if s.contains('\\') {
        return Err("a key cannot contain a backslash");
    }
    if s.contains('\0') {
        return Err("a key cannot contain a NUL character");
    }
    for segment in s.split('/') {
        match segment {
            "" => return Err("a key cannot contain an empty segment (\"//\")"),
            "." => return Err("a key cannot contain a \".\" segment"),
            ".." => return Err("a key cannot contain a \"..\" segment"),
            _ => {}
        }
    }
    Ok(())
}

/// A validated key: the name of one value in a store, such as `"array/c/0/1"`.
///
/// A key is a non-empty string of `/`-separated segments. It never starts or ends with `/`,
/// and no segment is empty, `"."` or `".."`; backslashes and NUL characters are refused. These
/// rules make every key a safe relative path on every backend: it can never name the store's
/// root or reach outside it.
///
/// ```
/// use zarr_store::StoreKey;
///
/// let key = StoreKey::try_new("group/array/zarr.json")?;
/// assert_eq!(key.name(), "zarr.json");
/// assert_eq!(key.parent().as_str(), "group/array/");
/// assert!(StoreKey::try_new("a/../b").is_err());
/// assert!(StoreKey::try_new("/etc/passwd").is_err());
/// # Ok::<(), zarr_store::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StoreKey(String);

impl StoreKey {
    /// Validate `key`.
    ///
    /// # Errors
    /// [`Error::InvalidKey`] naming the string and the rule it breaks.
    pub fn try_new(key: impl Into<String>) -> Result<Self> {
        let key = key.into();
        match check_key(&key) {
            Ok(()) => Ok(Self(key)),
            Err(reason) => Err(Error::InvalidKey { key, reason }),
        }
    }

    /// Validate `key`, panicking if it is invalid. Meant for literals in code and tests.
    ///
    /// # Panics
    /// If `key` is not a valid key; use [`StoreKey::try_new`] for input.
    #[must_use]
    #[track_caller]
    pub fn new(key: &str) -> Self {
        match Self::try_new(key) {
            Ok(key) => key,
            Err(err) => panic!("{err}"),
        }
    }

    /// The key as a string.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key's segments, from the outermost.
    pub fn segments(&self) -> impl DoubleEndedIterator<Item = &str> + '_ {
        self.0.split('/')
    }

    /// The last segment (the "file name").
    #[must_use]
    pub fn name(&self) -> &str {
        match self.0.rsplit_once('/') {
            Some((_, name)) => name,
            None => &self.0,
        }
    }

    /// The prefix holding this key: `"a/b/"` for `"a/b/c"`, the root prefix for `"c"`.
    #[must_use]
    pub fn parent(&self) -> StorePrefix {
        match self.0.rsplit_once('/') {
            Some((parent, _)) => StorePrefix(format!("{parent}/")),
            None => StorePrefix::root(),
        }
    }

    /// The prefix naming everything below this key: `"a/b/"` for `"a/b"`.
    #[must_use]
    pub fn to_prefix(&self) -> StorePrefix {
        StorePrefix(format!("{}/", self.0))
    }

    /// Whether this key lies below `prefix` (every key lies below the root prefix).
    #[must_use]
    pub fn has_prefix(&self, prefix: &StorePrefix) -> bool {
        self.0.starts_with(prefix.as_str())
    }

    /// The rest of this key after `prefix`, or `None` if the key does not lie below it.
    #[must_use]
    pub fn strip_prefix(&self, prefix: &StorePrefix) -> Option<StoreKey> {
        // A key below a valid prefix leaves a valid, non-empty key: the prefix ends at a "/".
        self.0
            .strip_prefix(prefix.as_str())
            .map(|rest| StoreKey(rest.to_owned()))
    }

    /// The string, consuming the key.
    #[must_use]
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Debug for StoreKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for StoreKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for StoreKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for StoreKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl FromStr for StoreKey {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Self::try_new(s)
    }
}

impl TryFrom<&str> for StoreKey {
    type Error = Error;

    fn try_from(s: &str) -> Result<Self> {
        Self::try_new(s)
    }
}

impl TryFrom<String> for StoreKey {
    type Error = Error;

    fn try_from(s: String) -> Result<Self> {
        Self::try_new(s)
    }
}

impl From<StoreKey> for String {
    fn from(key: StoreKey) -> Self {
        key.0
    }
}

/// A validated prefix: a "directory" of keys, such as `"array/c/"`.
///
/// A prefix is either the root prefix `""` (everything in the store) or a valid [`StoreKey`]
/// followed by `/`.
///
/// ```
/// use zarr_store::{StoreKey, StorePrefix};
///
/// let prefix = StorePrefix::try_new("group/array/")?;
/// assert_eq!(prefix.key("zarr.json")?, StoreKey::new("group/array/zarr.json"));
/// assert!(StorePrefix::root().is_root());
/// assert!(StorePrefix::try_new("no-trailing-slash").is_err());
/// # Ok::<(), zarr_store::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StorePrefix(String);

impl StorePrefix {
    /// The root prefix `""`.
    #[must_use]
    pub const fn root() -> Self {
        Self(String::new())
    }

    /// Validate `prefix`.
    ///
    /// # Errors
    /// [`Error::InvalidPrefix`] naming the string and the rule it breaks.
    pub fn try_new(prefix: impl Into<String>) -> Result<Self> {
        let prefix = prefix.into();
        if prefix.is_empty() {
            return Ok(Self(prefix));
        }
        let reason = match prefix.strip_suffix('/') {
            None => Err("a prefix must be empty or end with \"/\""),
            Some(stem) => check_key(stem),
        };
        match reason {
            Ok(()) => Ok(Self(prefix)),
            Err(reason) => Err(Error::InvalidPrefix { prefix, reason }),
        }
    }

    /// Validate `prefix`, panicking if it is invalid. Meant for literals in code and tests.
    ///
    /// # Panics
    /// If `prefix` is not a valid prefix; use [`StorePrefix::try_new`] for input.
    #[must_use]
    #[track_caller]
    pub fn new(prefix: &str) -> Self {
        match Self::try_new(prefix) {
            Ok(prefix) => prefix,
            Err(err) => panic!("{err}"),
        }
    }

    /// The prefix as a string (`""` for the root).
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the root prefix `""`.
    #[must_use]
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The prefix without its trailing `/` as a key, or `None` for the root.
    #[must_use]
    pub fn as_key(&self) -> Option<StoreKey> {
        self.0
            .strip_suffix('/')
            .map(|stem| StoreKey(stem.to_owned()))
    }

    /// The prefix's segments, from the outermost (none for the root).
    pub fn segments(&self) -> impl DoubleEndedIterator<Item = &str> + '_ {
        self.0.split_terminator('/')
    }

    /// The key `self + name`, where `name` is a relative key such as `"c/0/0"`.
    ///
    /// # Errors
    /// [`Error::InvalidKey`] if `name` is not a valid key.
    pub fn key(&self, name: &str) -> Result<StoreKey> {
        let name = StoreKey::try_new(name)?;
        Ok(self.join(&name))
    }

    /// The key `self + key`: `key` read relative to this prefix.
    #[must_use]
    pub fn join(&self, key: &StoreKey) -> StoreKey {
        StoreKey(format!("{}{}", self.0, key.0))
    }

    /// The prefix `self + prefix`: `prefix` read relative to this prefix.
    #[must_use]
    pub fn join_prefix(&self, prefix: &StorePrefix) -> StorePrefix {
        StorePrefix(format!("{}{}", self.0, prefix.0))
    }

    /// The child prefix `self + name + "/"`.
    ///
    /// # Errors
    /// [`Error::InvalidPrefix`] if `name` is not a valid relative key.
    pub fn child(&self, name: &str) -> Result<StorePrefix> {
        Self::try_new(format!("{}{name}/", self.0))
    }

    /// The prefix holding this one (`None` for the root).
    #[must_use]
    pub fn parent(&self) -> Option<StorePrefix> {
        self.as_key().map(|key| key.parent())
    }

    /// Whether `key` lies below this prefix.
    #[must_use]
    pub fn contains(&self, key: &StoreKey) -> bool {
        key.has_prefix(self)
    }

    /// The rest of `other` after this prefix, or `None` if `other` does not lie below it.
    #[must_use]
    pub fn strip_from(&self, other: &StorePrefix) -> Option<StorePrefix> {
        other
            .0
            .strip_prefix(self.as_str())
            .map(|rest| StorePrefix(rest.to_owned()))
    }
}

impl fmt::Debug for StorePrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for StorePrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for StorePrefix {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl FromStr for StorePrefix {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Self::try_new(s)
    }
}

impl TryFrom<&str> for StorePrefix {
    type Error = Error;

    fn try_from(s: &str) -> Result<Self> {
        Self::try_new(s)
    }
}

impl TryFrom<String> for StorePrefix {
    type Error = Error;

    fn try_from(s: String) -> Result<Self> {
        Self::try_new(s)
    }
}

impl From<StorePrefix> for String {
    fn from(prefix: StorePrefix) -> Self {
        prefix.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_keys() {
        for key in [
            "a",
            "a/b/c",
            "zarr.json",
            ".zattrs",
            "c/0/0",
            "é/ü",
            "a b/c%20d",
            "..a/b..",
        ] {
            assert_eq!(StoreKey::try_new(key).unwrap().as_str(), key);
        }
    }

    #[test]
    fn invalid_keys_name_the_rule() {
        let cases = [
            ("", "empty"),
            ("/a", "start with"),
            ("a/", "end with"),
            ("a//b", "empty segment"),
            (".", "\".\" segment"),
            ("a/./b", "\".\" segment"),
            ("..", "\"..\" segment"),
            ("a/../../etc", "\"..\" segment"),
            ("a\\b", "backslash"),
            ("..\\..\\x", "backslash"),
            ("a\0b", "NUL"),
        ];
        for (key, needle) in cases {
            match StoreKey::try_new(key) {
                Err(Error::InvalidKey { key: k, reason }) => {
                    assert_eq!(k, key);
                    assert!(reason.contains(needle), "{key:?}: {reason}");
                }
                other => panic!("{key:?} accepted: {other:?}"),
            }
        }
    }

    #[test]
    fn prefixes() {
        assert!(StorePrefix::try_new("").unwrap().is_root());
        assert_eq!(StorePrefix::try_new("a/b/").unwrap().as_str(), "a/b/");
        for bad in ["/", "a", "a//", "//", "/a/", "../", "a/./", "a\\/"] {
            assert!(
                matches!(StorePrefix::try_new(bad), Err(Error::InvalidPrefix { .. })),
                "{bad:?} accepted"
            );
        }
    }

    #[test]
    fn navigation() {
        let key = StoreKey::new("a/b/c");
        assert_eq!(key.name(), "c");
        assert_eq!(key.parent(), StorePrefix::new("a/b/"));
        assert_eq!(StoreKey::new("c").parent(), StorePrefix::root());
        assert_eq!(key.to_prefix(), StorePrefix::new("a/b/c/"));
        assert!(key.has_prefix(&StorePrefix::new("a/")));
        assert!(!key.has_prefix(&StorePrefix::new("a/bb/")));
        assert!(!StoreKey::new("a/bc").has_prefix(&StorePrefix::new("a/b/")));
        assert_eq!(
            key.strip_prefix(&StorePrefix::new("a/")),
            Some(StoreKey::new("b/c"))
        );
        assert_eq!(key.strip_prefix(&StorePrefix::new("x/")), None);
        let prefix = StorePrefix::new("a/");
        assert_eq!(prefix.key("b/c").unwrap(), key);
        assert!(prefix.key("../x").is_err());
        assert_eq!(prefix.child("b").unwrap(), StorePrefix::new("a/b/"));
        assert!(prefix.child("..").is_err());
        assert_eq!(StorePrefix::new("a/b/").parent(), Some(prefix.clone()));
        assert_eq!(prefix.parent(), Some(StorePrefix::root()));
        assert_eq!(StorePrefix::root().parent(), None);
        assert_eq!(
            StorePrefix::new("a/b/").segments().collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(StorePrefix::root().segments().count(), 0);
    }
}
