//! Groups, nodes and the hierarchy.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};
use zarr_core::v2::{self, ZarrFormat};
use zarr_core::{GroupMetadata, NodeMetadata, NodePath};
use zarr_store::{ListableStore, ReadableStore, StoreKey, StorePrefix, WritableStore};

use crate::array::{Array, ArrayOptions};
use crate::error::{Error, Result};

/// The store key of a node's `zarr.json`.
pub(crate) fn metadata_key(path: &NodePath) -> Result<StoreKey> {
    Ok(StoreKey::try_new(path.metadata_key())?)
}

/// The store prefix under which a node's keys live (`""` for the root).
pub(crate) fn node_prefix(path: &NodePath) -> Result<StorePrefix> {
    Ok(StorePrefix::try_new(path.prefix())?)
}

/// Read a node's metadata, `None` if there is none: `zarr.json`, or else a Zarr v2 `.zarray`
/// or `.zgroup` (with its `.zattrs`), read as its v3 equivalent.
pub(crate) async fn read_node<S: ReadableStore + ?Sized>(
    store: &S,
    path: &NodePath,
) -> Result<Option<(NodeMetadata, ZarrFormat)>> {
    let key = metadata_key(path)?;
    if let Some(bytes) = store.get(&key).await? {
        return Ok(Some((NodeMetadata::from_slice(&bytes)?, ZarrFormat::V3)));
    }
    let v2_key = |name: &str| StoreKey::try_new(format!("{}{name}", path.prefix()));
    let in_v2 = |source: zarr_core::Error| Error::V2Metadata {
        path: path.as_str().to_owned(),
        source: Box::new(source),
    };
    enum V2Document {
        Array(Bytes),
        Group(Bytes),
    }
    let document = match store.get(&v2_key(v2::ZARRAY)?).await? {
        Some(zarray) => V2Document::Array(zarray),
        None => match store.get(&v2_key(v2::ZGROUP)?).await? {
            Some(zgroup) => V2Document::Group(zgroup),
            None => return Ok(None),
        },
    };
    let attributes = match store.get(&v2_key(v2::ZATTRS)?).await? {
        Some(bytes) => v2::attributes_from_v2(&bytes).map_err(in_v2)?,
        None => Map::new(),
    };
    let metadata = match document {
        V2Document::Array(zarray) => NodeMetadata::Array(Box::new(
            v2::ArrayMetadataV2::from_slice(&zarray)
                .and_then(|v2| v2.to_v3(attributes))
                .map_err(in_v2)?,
        )),
        V2Document::Group(zgroup) => NodeMetadata::Group(Box::new(
            v2::group_from_v2(&zgroup, attributes).map_err(in_v2)?,
        )),
    };
    Ok(Some((metadata, ZarrFormat::V2)))
}

/// Read a node's metadata (v3, or v2 as its v3 equivalent), `None` if there is none.
pub(crate) async fn read_metadata<S: ReadableStore + ?Sized>(
    store: &S,
    path: &NodePath,
) -> Result<Option<NodeMetadata>> {
    Ok(read_node(store, path).await?.map(|(metadata, _)| metadata))
}

/// Read a node's metadata; a missing node is [`Error::NodeNotFound`].
pub(crate) async fn require_node<S: ReadableStore + ?Sized>(
    store: &S,
    path: &NodePath,
) -> Result<(NodeMetadata, ZarrFormat)> {
    read_node(store, path)
        .await?
        .ok_or_else(|| Error::NodeNotFound {
            path: path.as_str().to_owned(),
            key: path.metadata_key(),
        })
}

/// The store key of the document `name` (`.zarray`, `.zgroup`, `.zattrs`) of a v2 node.
pub(crate) fn v2_key(path: &NodePath, name: &str) -> Result<StoreKey> {
    Ok(StoreKey::try_new(format!("{}{name}", path.prefix()))?)
}

/// Write a node's metadata in `format`: `zarr.json`, or for Zarr v2 `.zarray` or `.zgroup`
/// and `.zattrs` (always written, as zarr-python does).
pub(crate) async fn write_metadata<S: WritableStore + ?Sized>(
    store: &S,
    path: &NodePath,
    metadata: &NodeMetadata,
    format: ZarrFormat,
) -> Result<()> {
    let in_v2 = |source: zarr_core::Error| Error::V2Metadata {
        path: path.as_str().to_owned(),
        source: Box::new(source),
    };
    let text = |text: String| Bytes::from(text.into_bytes());
    match (format, metadata) {
        (ZarrFormat::V3, _) => {
            let mut json = metadata.to_json_pretty()?;
            json.push('\n');
            store.set(&metadata_key(path)?, text(json)).await?;
        }
        (ZarrFormat::V2, NodeMetadata::Array(array)) => {
            let zarray = v2::ArrayMetadataV2::from_v3(array)
                .and_then(|v2| v2.to_json_pretty())
                .map_err(in_v2)?;
            store.set(&v2_key(path, v2::ZARRAY)?, text(zarray)).await?;
            write_attributes_v2(store, path, &array.attributes).await?;
        }
        (ZarrFormat::V2, NodeMetadata::Group(group)) => {
            store
                .set(&v2_key(path, v2::ZGROUP)?, text(v2::zgroup_json()))
                .await?;
            write_attributes_v2(store, path, &group.attributes).await?;
        }
    }
    Ok(())
}

/// Write a Zarr v2 node's `.zattrs`.
pub(crate) async fn write_attributes_v2<S: WritableStore + ?Sized>(
    store: &S,
    path: &NodePath,
    attributes: &Map<String, Value>,
) -> Result<()> {
    let zattrs = v2::zattrs_json(attributes).map_err(|source| Error::V2Metadata {
        path: path.as_str().to_owned(),
        source: Box::new(source),
    })?;
    store
        .set(&v2_key(path, v2::ZATTRS)?, Bytes::from(zattrs.into_bytes()))
        .await?;
    Ok(())
}

/// Erase the metadata documents of `format` at `path` (before a node of the other format is
/// written there, so that it is not shadowed: `zarr.json` is read first).
pub(crate) async fn erase_metadata<S: WritableStore + ?Sized>(
    store: &S,
    path: &NodePath,
    format: ZarrFormat,
) -> Result<()> {
    let keys = match format {
        ZarrFormat::V3 => vec![metadata_key(path)?],
        ZarrFormat::V2 => vec![
            v2_key(path, v2::ZARRAY)?,
            v2_key(path, v2::ZGROUP)?,
            v2_key(path, v2::ZATTRS)?,
        ],
    };
    store.erase_values(&keys).await?;
    Ok(())
}

/// Make sure every ancestor of `path` is a group, writing the missing ones in `format`.
pub(crate) async fn ensure_ancestors<S: WritableStore + ?Sized>(
    store: &S,
    path: &NodePath,
    format: ZarrFormat,
) -> Result<()> {
    for ancestor in path.ancestors() {
        match read_node(store, &ancestor).await? {
            Some((NodeMetadata::Group(_), _)) => {}
            Some((NodeMetadata::Array(_), _)) => {
                return Err(Error::NodeExists {
                    path: path.as_str().to_owned(),
                    reason: format!("{} is an array, and arrays have no children", ancestor),
                });
            }
            None => {
                let group = NodeMetadata::Group(Box::new(GroupMetadata::new()));
                write_metadata(store, &ancestor, &group, format).await?;
            }
        }
    }
    Ok(())
}

fn kind(metadata: &NodeMetadata) -> &'static str {
    match metadata {
        NodeMetadata::Array(_) => "an array",
        NodeMetadata::Group(_) => "a group",
    }
}

/// A group: a node with attributes and children.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use std::sync::Arc;
/// use zarr_array::Group;
/// use zarr_store::MemoryStore;
///
/// let store = Arc::new(MemoryStore::new());
/// let root = Group::create(store.clone(), "/").await?;
/// let mut images = root.create_group("images").await?;
/// let mut attributes = serde_json::Map::new();
/// attributes.insert("instrument".into(), "camera 2".into());
/// images.set_attributes(attributes).await?;
///
/// let children = root.children().await?;
/// assert_eq!(children.len(), 1);
/// assert_eq!(children[0].path().as_str(), "/images");
/// # Ok::<(), zarr_array::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct Group<S: ?Sized> {
    store: Arc<S>,
    path: NodePath,
    /// Shared, so that cloning a group does not copy its attributes.
    metadata: Arc<GroupMetadata>,
    /// The format of its metadata.
    format: ZarrFormat,
}

impl<S: ?Sized> Clone for Group<S> {
    fn clone(&self) -> Self {
        Self {
            store: Arc::clone(&self.store),
            path: self.path.clone(),
            metadata: Arc::clone(&self.metadata),
            format: self.format,
        }
    }
}

impl<S: ?Sized> Group<S> {
    /// The group's path (`/` for the root).
    pub fn path(&self) -> &NodePath {
        &self.path
    }

    /// The group's metadata (for a Zarr v2 group, its v3 equivalent).
    pub fn metadata(&self) -> &GroupMetadata {
        &self.metadata
    }

    /// The version of the format of the group's metadata: `zarr.json` (v3) or `.zgroup`
    /// (v2). Groups created under a group ([`create_group`](Group::create_group)) take its
    /// format.
    pub fn zarr_format(&self) -> ZarrFormat {
        self.format
    }

    /// The group's attributes.
    pub fn attributes(&self) -> &Map<String, Value> {
        &self.metadata.attributes
    }

    /// The store.
    pub fn store(&self) -> &Arc<S> {
        &self.store
    }
}

impl<S: ReadableStore + ?Sized> Group<S> {
    /// Open the group at `path`.
    ///
    /// # Errors
    /// [`Error::NodeNotFound`], [`Error::WrongNodeType`] if an array is there, metadata and
    /// store errors.
    pub async fn open(store: Arc<S>, path: &str) -> Result<Self> {
        let path = NodePath::new(path)?;
        match require_node(&*store, &path).await? {
            (NodeMetadata::Group(metadata), format) => Ok(Self {
                store,
                path,
                metadata: Arc::new(*metadata),
                format,
            }),
            (other, _) => Err(Error::WrongNodeType {
                path: path.as_str().to_owned(),
                expected: "a group",
                found: kind(&other),
            }),
        }
    }

    /// Re-read the group's metadata from the store.
    ///
    /// # Errors
    /// As [`Group::open`].
    pub async fn refresh(&mut self) -> Result<()> {
        *self = Self::open(Arc::clone(&self.store), self.path.as_str()).await?;
        Ok(())
    }

    /// Open the child array `name` (a relative path such as `raw` or `a/b`).
    ///
    /// # Errors
    /// As [`Array::open`].
    pub async fn open_array(&self, name: &str) -> Result<Array<S>> {
        Array::open(Arc::clone(&self.store), self.child_path(name)?.as_str()).await
    }

    /// Open the child group `name`.
    ///
    /// # Errors
    /// As [`Group::open`].
    pub async fn open_group(&self, name: &str) -> Result<Group<S>> {
        Group::open(Arc::clone(&self.store), self.child_path(name)?.as_str()).await
    }

    fn child_path(&self, name: &str) -> Result<NodePath> {
        let mut path = self.path.clone();
        for part in name.split('/').filter(|p| !p.is_empty()) {
            path = path.child(part)?;
        }
        Ok(path)
    }
}

impl<S: WritableStore + ?Sized> Group<S> {
    /// Create a Zarr v3 group at `path` (and any missing ancestor groups), with no
    /// attributes. An existing group there (of either format) is opened as it is.
    ///
    /// # Errors
    /// [`Error::NodeExists`] if an array is at `path` or at an ancestor; store errors.
    pub async fn create(store: Arc<S>, path: &str) -> Result<Self> {
        Self::create_in(store, path, ZarrFormat::V3).await
    }

    /// Create a group in `format` at `path` unless a group is there already.
    async fn create_in(store: Arc<S>, path: &str, format: ZarrFormat) -> Result<Self> {
        let node_path = NodePath::new(path)?;
        match read_node(&*store, &node_path).await? {
            Some((NodeMetadata::Group(metadata), format)) => {
                return Ok(Self {
                    store,
                    path: node_path,
                    metadata: Arc::new(*metadata),
                    format,
                });
            }
            Some((NodeMetadata::Array(_), _)) => {
                return Err(Error::NodeExists {
                    path: node_path.as_str().to_owned(),
                    reason: "an array is there".into(),
                });
            }
            None => {}
        }
        Self::create_with_format(store, path, GroupMetadata::new(), format).await
    }

    /// Create (or replace) the Zarr v3 group at `path` with the given metadata, and any
    /// missing ancestor groups.
    ///
    /// # Errors
    /// [`Error::NodeExists`] if an ancestor is an array; store errors.
    pub async fn create_with(store: Arc<S>, path: &str, metadata: GroupMetadata) -> Result<Self> {
        Self::create_with_format(store, path, metadata, ZarrFormat::V3).await
    }

    /// Create (or replace) the group at `path` with the given metadata in `format`: Zarr
    /// v3 (`zarr.json`) or Zarr v2 (`.zgroup` and `.zattrs`, which zarr-python 2 and other
    /// v2 readers open). Missing ancestor groups are written in the same format; a node of
    /// the other format at `path` is replaced (its metadata documents are erased).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::Group;
    /// use zarr_core::{GroupMetadata, v2::ZarrFormat};
    /// use zarr_store::{MemoryStore, ReadableStoreExt, StoreKey};
    ///
    /// let store = Arc::new(MemoryStore::new());
    /// let metadata = GroupMetadata::new().with_attributes(
    ///     serde_json::json!({"title": "v2"}).as_object().unwrap().clone(),
    /// );
    /// let group = Group::create_with_format(Arc::clone(&store), "/a/b", metadata, ZarrFormat::V2)
    ///     .await?;
    /// assert!(store.exists(&StoreKey::new("a/.zgroup")).await?);
    /// assert!(store.exists(&StoreKey::new("a/b/.zattrs")).await?);
    /// // Groups created below it are v2 too.
    /// let child = group.create_group("c").await?;
    /// assert_eq!(child.zarr_format(), ZarrFormat::V2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::NodeExists`] if an ancestor is an array; store errors.
    pub async fn create_with_format(
        store: Arc<S>,
        path: &str,
        metadata: GroupMetadata,
        format: ZarrFormat,
    ) -> Result<Self> {
        let path = NodePath::new(path)?;
        if let Some((_, existing)) = read_node(&*store, &path).await?
            && existing != format
        {
            erase_metadata(&*store, &path, existing).await?;
        }
        ensure_ancestors(&*store, &path, format).await?;
        write_metadata(
            &*store,
            &path,
            &NodeMetadata::Group(Box::new(metadata.clone())),
            format,
        )
        .await?;
        tracing::debug!(group = %path, %format, "created group");
        Ok(Self {
            store,
            path,
            metadata: Arc::new(metadata),
            format,
        })
    }

    /// Create the child group `name` (a relative path), in this group's format; an
    /// existing group there is opened.
    ///
    /// # Errors
    /// As [`Group::create`].
    pub async fn create_group(&self, name: &str) -> Result<Group<S>> {
        Group::create_in(
            Arc::clone(&self.store),
            self.child_path(name)?.as_str(),
            self.format,
        )
        .await
    }

    /// Replace the group's attributes and write its `zarr.json` (`.zattrs` for Zarr v2).
    ///
    /// # Errors
    /// Store errors.
    pub async fn set_attributes(&mut self, attributes: Map<String, Value>) -> Result<()> {
        let mut metadata = GroupMetadata::clone(&self.metadata);
        metadata.attributes = attributes;
        match self.format {
            ZarrFormat::V2 => {
                write_attributes_v2(&*self.store, &self.path, &metadata.attributes).await?;
            }
            ZarrFormat::V3 => {
                write_metadata(
                    &*self.store,
                    &self.path,
                    &NodeMetadata::Group(Box::new(metadata.clone())),
                    ZarrFormat::V3,
                )
                .await?;
            }
        }
        self.metadata = Arc::new(metadata);
        Ok(())
    }

    /// Merge `attributes` into the group's attributes (replacing keys that exist) and write
    /// them.
    ///
    /// # Errors
    /// Store errors.
    pub async fn update_attributes(&mut self, attributes: Map<String, Value>) -> Result<()> {
        let mut merged = self.metadata.attributes.clone();
        merged.extend(attributes);
        self.set_attributes(merged).await
    }
}

impl<S: ReadableStore + ListableStore + ?Sized> Group<S> {
    /// The group's direct children, in name order: one `list_dir` of the group's prefix, then
    /// one `zarr.json` read per child. Directories without `zarr.json` are not nodes and are
    /// skipped.
    ///
    /// # Errors
    /// Store and metadata errors.
    pub async fn children(&self) -> Result<Vec<Node<S>>> {
        let prefix = node_prefix(&self.path)?;
        let listing = self.store.list_dir(&prefix).await?;
        let mut out = Vec::new();
        for child in listing.prefixes {
            let name = child
                .as_str()
                .strip_prefix(prefix.as_str())
                .unwrap_or(child.as_str())
                .trim_end_matches('/');
            let Ok(path) = self.path.child(name) else {
                // Not a valid node name (e.g. an array's `c/` chunk directory).
                continue;
            };
            if let Some((metadata, format)) = read_node(&*self.store, &path).await? {
                out.push(Node::from_metadata(
                    Arc::clone(&self.store),
                    path,
                    metadata,
                    format,
                )?);
            }
        }
        Ok(out)
    }

    /// Every node below the group, in path order, with its metadata. Uses the group's
    /// consolidated metadata when it has some (no listing at all): v3 consolidated metadata
    /// of the `"inline"` kind in `zarr.json`, or a Zarr v2 group's `.zmetadata`; otherwise one
    /// listing per group, like [`tree_listed`](Self::tree_listed).
    ///
    /// Consolidated metadata is not refreshed when the hierarchy changes: use
    /// [`tree_listed`](Self::tree_listed) when it may be stale.
    ///
    /// # Errors
    /// Store and metadata errors.
    pub async fn tree(&self) -> Result<Vec<(NodePath, NodeMetadata)>> {
        if self.format == ZarrFormat::V2 {
            let key = StoreKey::try_new(format!("{}{}", self.path.prefix(), v2::ZMETADATA))?;
            if let Some(bytes) = self.store.get(&key).await? {
                let nodes = v2::consolidated_nodes(&bytes).map_err(|source| Error::V2Metadata {
                    path: self.path.as_str().to_owned(),
                    source: Box::new(source),
                })?;
                let mut out = Vec::with_capacity(nodes.len());
                for (relative, metadata) in nodes {
                    out.push((self.child_path(&relative)?, metadata));
                }
                out.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
                return Ok(out);
            }
        }
        if let Some(consolidated) = self
            .metadata
            .consolidated_metadata
            .as_ref()
            .filter(|c| c.is_inline())
        {
            let mut nodes = Vec::new();
            for (relative, metadata) in consolidated.nodes()? {
                let mut path = self.path.clone();
                for name in relative.names() {
                    path = path.child(name)?;
                }
                nodes.push((path, metadata));
            }
            nodes.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
            return Ok(nodes);
        }
        self.tree_listed().await
    }

    /// Every node below the group, in path order, with its metadata, from one listing per
    /// group and each node's own `zarr.json`, ignoring any consolidated metadata.
    ///
    /// # Errors
    /// Store and metadata errors.
    pub async fn tree_listed(&self) -> Result<Vec<(NodePath, NodeMetadata)>> {
        let mut out = Vec::new();
        let mut stack = vec![self.clone()];
        while let Some(group) = stack.pop() {
            let mut groups = Vec::new();
            for child in group.children().await? {
                match child {
                    Node::Array(array) => {
                        out.push((
                            array.path().clone(),
                            NodeMetadata::Array(Box::new(array.metadata().clone())),
                        ));
                    }
                    Node::Group(g) => {
                        out.push((
                            g.path.clone(),
                            NodeMetadata::Group(Box::new(GroupMetadata::clone(&g.metadata))),
                        ));
                        groups.push(g);
                    }
                }
            }
            stack.extend(groups.into_iter().rev());
        }
        out.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        Ok(out)
    }
}

/// A node of the hierarchy: an array or a group.
#[derive(Debug)]
pub enum Node<S: ?Sized> {
    /// An array.
    Array(Array<S>),
    /// A group.
    Group(Group<S>),
}

impl<S: ?Sized> Node<S> {
    /// The node's path.
    pub fn path(&self) -> &NodePath {
        match self {
            Self::Array(a) => a.path(),
            Self::Group(g) => g.path(),
        }
    }

    /// The node's attributes.
    pub fn attributes(&self) -> &Map<String, Value> {
        match self {
            Self::Array(a) => a.attributes(),
            Self::Group(g) => g.attributes(),
        }
    }

    fn from_metadata(
        store: Arc<S>,
        path: NodePath,
        metadata: NodeMetadata,
        format: ZarrFormat,
    ) -> Result<Self> {
        Ok(match metadata {
            NodeMetadata::Group(metadata) => Self::Group(Group {
                store,
                path,
                metadata: Arc::new(*metadata),
                format,
            }),
            NodeMetadata::Array(metadata) => Self::Array(
                Array::from_metadata(store, path, *metadata, ArrayOptions::default())?
                    .with_format(format),
            ),
        })
    }
}

impl<S: ReadableStore + ?Sized> Node<S> {
    /// Open the node at `path`, whatever it is.
    ///
    /// # Errors
    /// [`Error::NodeNotFound`]; metadata and store errors.
    pub async fn open(store: Arc<S>, path: &str) -> Result<Self> {
        let path = NodePath::new(path)?;
        let (metadata, format) = require_node(&*store, &path).await?;
        Self::from_metadata(store, path, metadata, format)
    }
}
