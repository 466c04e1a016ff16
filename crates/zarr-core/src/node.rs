//! Node names and node paths, validated per the specification.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// The key of a node's metadata document, relative to the node's prefix.
pub const METADATA_KEY: &str = "zarr.json";

/// Check a node name: non-empty, no `/`, not only dots, not starting with `__` (reserved), and
/// not `zarr.json`.
///
/// # Errors
/// [`Error::InvalidNodeName`] naming the rule broken.
///
/// ```
/// use zarr_core::validate_node_name;
///
/// assert!(validate_node_name("temperature").is_ok());
/// assert!(validate_node_name("..").is_err());
/// assert!(validate_node_name("__zarr").is_err());
/// ```
pub fn validate_node_name(name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        "a name must not be empty"
    } else if name.contains('/') {
        "a name must not contain '/'"
    } else if name.bytes().all(|b| b == b'.') {
        "a name must not consist only of '.' characters"
    } else if name.starts_with("__") {
        "names starting with '__' are reserved"
    } else if name == METADATA_KEY {
        "'zarr.json' is reserved for metadata"
    } else if name.contains('\0') {
        "a name must not contain NUL"
    } else {
        return Ok(());
    };
    Err(Error::InvalidNodeName {
        name: name.to_owned(),
        reason,
    })
}

/// The path of a node (array or group) in a hierarchy: `/` for the root, `/a/b` below it.
///
/// Every name in the path is checked with [`validate_node_name`].
///
/// ```
/// use zarr_core::NodePath;
///
/// let path = NodePath::new("/weather/temperature")?;
/// assert_eq!(path.metadata_key(), "weather/temperature/zarr.json");
/// assert_eq!(path.prefix(), "weather/temperature/");
/// assert_eq!(path.parent().unwrap().as_str(), "/weather");
/// assert_eq!(NodePath::root().metadata_key(), "zarr.json");
/// assert!(NodePath::new("/a//b").is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodePath(String);

impl NodePath {
    /// The root node, `/`.
    pub fn root() -> Self {
        Self("/".into())
    }

    /// Parse a path. A leading `/` is optional; `""` and `"/"` are the root. A trailing `/`,
    /// empty names (`a//b`) and invalid names are refused.
    ///
    /// # Errors
    /// [`Error::InvalidNodePath`] wrapping the [`Error::InvalidNodeName`] of the first bad name.
    pub fn new(path: &str) -> Result<Self> {
        let trimmed = path.strip_prefix('/').unwrap_or(path);
        if trimmed.is_empty() {
            return Ok(Self::root());
        }
        for name in trimmed.split('/') {
            validate_node_name(name).map_err(|source| Error::InvalidNodePath {
                path: path.to_owned(),
                source: Box::new(source),
            })?;
        }
        Ok(Self(format!("/{trimmed}")))
    }

    /// The path as text, `/` or `/a/b`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the root.
    pub fn is_root(&self) -> bool {
        self.0 == "/"
    }

    /// The names along the path, from the root down (none for the root).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0[1..].split('/').filter(|s| !s.is_empty())
    }

    /// The last name, or `None` for the root.
    pub fn name(&self) -> Option<&str> {
        self.names().last()
    }

    /// The parent path, or `None` for the root.
    pub fn parent(&self) -> Option<Self> {
        if self.is_root() {
            return None;
        }
        let cut = self.0.rfind('/').unwrap_or(0);
        Some(if cut == 0 {
            Self::root()
        } else {
            Self(self.0[..cut].to_owned())
        })
    }

    /// The path of the child `name`.
    ///
    /// # Errors
    /// [`Error::InvalidNodeName`] if `name` is not a valid node name.
    pub fn child(&self, name: &str) -> Result<Self> {
        validate_node_name(name)?;
        Ok(if self.is_root() {
            Self(format!("/{name}"))
        } else {
            Self(format!("{}/{name}", self.0))
        })
    }

    /// The proper ancestors of this node, from the root down (empty for the root).
    pub fn ancestors(&self) -> Vec<Self> {
        let mut out = Vec::new();
        let mut current = self.parent();
        while let Some(path) = current {
            current = path.parent();
            out.push(path);
        }
        out.reverse();
        out
    }

    /// The store key prefix under which the node's metadata and chunks live: `""` for the
    /// root, `a/b/` below it.
    pub fn prefix(&self) -> String {
        if self.is_root() {
            String::new()
        } else {
            format!("{}/", &self.0[1..])
        }
    }

    /// The store key of the node's metadata: `zarr.json` or `a/b/zarr.json`.
    pub fn metadata_key(&self) -> String {
        format!("{}{METADATA_KEY}", self.prefix())
    }
}

impl Default for NodePath {
    fn default() -> Self {
        Self::root()
    }
}

impl fmt::Display for NodePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for NodePath {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Self::new(s)
    }
}

impl TryFrom<&str> for NodePath {
    type Error = Error;

    fn try_from(s: &str) -> Result<Self> {
        Self::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for good in [
            "a",
            "A-b_c.d",
            "...a",
            "a..",
            "zarr.jsonx",
            "_a",
            "ünï",
            "a b",
        ] {
            validate_node_name(good).unwrap_or_else(|e| panic!("{good}: {e}"));
        }
        for (bad, reason) in [
            ("", "empty"),
            ("a/b", "'/'"),
            (".", "only"),
            ("..", "only"),
            ("...", "only"),
            ("__zarr", "reserved"),
            ("__", "reserved"),
            ("zarr.json", "metadata"),
            ("a\0b", "NUL"),
        ] {
            let e = validate_node_name(bad).unwrap_err().to_string();
            assert!(e.contains(reason), "{bad:?}: {e}");
        }
    }

    #[test]
    fn paths() {
        assert_eq!(NodePath::new("").unwrap(), NodePath::root());
        assert_eq!(NodePath::new("/").unwrap(), NodePath::root());
        assert_eq!(NodePath::new("a/b").unwrap().as_str(), "/a/b");
        let p = NodePath::new("/a/b/c").unwrap();
        assert_eq!(p.names().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(p.name(), Some("c"));
        assert_eq!(
            p.ancestors()
                .iter()
                .map(NodePath::as_str)
                .collect::<Vec<_>>(),
            ["/", "/a", "/a/b"]
        );
        assert_eq!(NodePath::root().child("x").unwrap().as_str(), "/x");
        assert_eq!(p.child("d").unwrap().metadata_key(), "a/b/c/d/zarr.json");
        assert!(p.child("..").is_err());
        assert_eq!(NodePath::root().name(), None);
        assert_eq!(NodePath::root().parent(), None);
        assert!(NodePath::root().ancestors().is_empty());
        for bad in [
            "/a/",
            "a//b",
            "/a/../b",
            "/a/./b",
            "/__x",
            "/a/zarr.json",
            "//",
        ] {
            let e = NodePath::new(bad).unwrap_err();
            assert!(matches!(e, Error::InvalidNodePath { .. }), "{bad}");
        }
    }
}
