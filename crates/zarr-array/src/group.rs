//! Groups, nodes and the hierarchy.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};
use zarr_core::v2::{self, ZarrFormat};
use zarr_core::{ArrayMetadata, ConsolidatedMetadata, GroupMetadata, NodeMetadata, NodePath};
use zarr_store::{ListableStore, ReadableStore, StoreKey, StorePrefix, WritableStore};

use crate::array::{Array, ArrayOptions};
use crate::builder::ArrayBuilder;
use crate::error::{Error, Result};
use crate::locks::{Kind, lock, lock_node, lock_tree};
use crate::records::{forget_in_record, refresh_in_records};

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
        let metadata = NodeMetadata::from_slice(&bytes).map_err(|source| Error::Metadata {
            path: path.as_str().to_owned(),
            key: key.as_str().to_owned(),
            source: Box::new(source),
        })?;
        return Ok(Some((metadata, ZarrFormat::V3)));
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
    /// The hierarchy's metadata as consolidated metadata recorded it, when the group was
    /// opened with [`Group::open_consolidated`] (or is below one that was).
    consolidated: Option<Arc<Snapshot>>,
}

impl<S: ?Sized> Clone for Group<S> {
    fn clone(&self) -> Self {
        Self {
            store: Arc::clone(&self.store),
            path: self.path.clone(),
            metadata: Arc::clone(&self.metadata),
            format: self.format,
            consolidated: self.consolidated.clone(),
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

    /// Attribute `key` as a `T` (any `serde::Deserialize` type), or `None` if the group has
    /// no such attribute (see [`Array::attribute`](crate::Array::attribute)).
    ///
    /// # Errors
    /// [`Error::Attribute`] (naming the group and the attribute) if the attribute does not
    /// deserialize as a `T`.
    pub fn attribute<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        crate::attributes::attribute(self.path.as_str(), &self.metadata.attributes, key)
    }

    /// The attributes as a whole as a `T` (see
    /// [`Array::attributes_as`](crate::Array::attributes_as)).
    ///
    /// # Errors
    /// [`Error::Attribute`] (naming the group) if the attributes do not deserialize as a `T`.
    pub fn attributes_as<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        crate::attributes::attributes_as(self.path.as_str(), &self.metadata.attributes)
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
                consolidated: None,
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

    /// Open the group at `path` with the consolidated metadata stored with it: zarr-python's
    /// inline `consolidated_metadata` in a Zarr v3 group's `zarr.json`, or a Zarr v2 group's
    /// `.zmetadata`. That is one store request for a v3 group (its `zarr.json`), and for a
    /// v2 group the requests that find its `.zgroup` and `.zattrs` plus one for
    /// `.zmetadata`; the group, and every group opened from it, then answers [`open_array`](Self::open_array),
    /// [`open_group`](Self::open_group), [`children`](Self::children) and
    /// [`tree`](Self::tree) from that record, without store requests, as zarr-python does
    /// for a consolidated hierarchy. This is what makes opening a deep hierarchy on object
    /// storage cheap.
    ///
    /// The record lists the nodes that were there at the last
    /// [`consolidate_metadata`](Self::consolidate_metadata): a node created since is not
    /// listed (it is still opened from the store, but `children` and `tree` do not show
    /// it). Changes this library makes to a listed node do reach the record: new attributes,
    /// a resize or an append give it the node's new metadata, and a removed or replaced node
    /// leaves it. Changes by other writers (zarr-python does not update records) are seen
    /// as recorded; use [`Group::open`] for the store's current state.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::{ArrayBuilder, Group};
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let store = Arc::new(MemoryStore::new());
    /// let mut root = Group::create(store.clone(), "/").await?;
    /// ArrayBuilder::new(vec![100], DataType::Float32, vec![10])
    ///     .create(store.clone(), "/images/raw")
    ///     .await?;
    /// assert_eq!(root.consolidate_metadata().await?, 2); // the group and the array
    ///
    /// let root = Group::open_consolidated(store, "/").await?;
    /// let raw = root.open_array("images/raw").await?; // no store request
    /// assert_eq!(raw.shape(), &[100]);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// As [`Group::open`]; [`Error::Consolidated`] if the group has no consolidated metadata
    /// (or only of a kind other than `"inline"`); metadata errors naming the entry that is
    /// malformed.
    pub async fn open_consolidated(store: Arc<S>, path: &str) -> Result<Self> {
        let mut group = Self::open(store, path).await?;
        match Snapshot::read(&group).await? {
            Some(snapshot) => {
                group.consolidated = Some(Arc::new(snapshot));
                Ok(group)
            }
            None => Err(Error::Consolidated {
                path: group.path.as_str().to_owned(),
                reason: match group.format {
                    ZarrFormat::V2 => format!("there is no {}", v2::ZMETADATA),
                    ZarrFormat::V3 => {
                        "its zarr.json has no inline `consolidated_metadata`".to_owned()
                    }
                },
            }),
        }
    }

    /// Whether the group answers from consolidated metadata (it was opened with
    /// [`Group::open_consolidated`], or from a group that was).
    pub fn is_consolidated(&self) -> bool {
        self.consolidated.is_some()
    }

    /// The consolidated record of the node at `path`, if the group has one and it lists it.
    fn recorded(&self, path: &NodePath) -> Option<(&NodeMetadata, ZarrFormat)> {
        let snapshot = self.consolidated.as_ref()?;
        snapshot.nodes.get(path).map(|(m, f)| (m, *f))
    }

    /// Open the child array `name` (a relative path such as `raw` or `a/b`). A group opened
    /// with [`Group::open_consolidated`] takes the array's metadata from its record, without
    /// a store request.
    ///
    /// # Errors
    /// As [`Array::open`].
    pub async fn open_array(&self, name: &str) -> Result<Array<S>> {
        let path = self.child_path(name)?;
        match self.recorded(&path) {
            Some((NodeMetadata::Array(metadata), format)) => Ok(Array::from_metadata(
                Arc::clone(&self.store),
                path,
                ArrayMetadata::clone(metadata),
                ArrayOptions::default(),
            )?
            .with_format(format)),
            Some((NodeMetadata::Group(_), _)) => Err(Error::WrongNodeType {
                path: path.as_str().to_owned(),
                expected: "an array",
                found: "a group",
            }),
            None => Array::open(Arc::clone(&self.store), path.as_str()).await,
        }
    }

    /// Open the child group `name`. A group opened with [`Group::open_consolidated`] takes
    /// the group's metadata from its record, without a store request, and passes the
    /// record on.
    ///
    /// # Errors
    /// As [`Group::open`].
    pub async fn open_group(&self, name: &str) -> Result<Group<S>> {
        let path = self.child_path(name)?;
        match self.recorded(&path) {
            Some((NodeMetadata::Group(metadata), format)) => Ok(Group {
                store: Arc::clone(&self.store),
                path,
                metadata: Arc::new(GroupMetadata::clone(metadata)),
                format,
                consolidated: self.consolidated.clone(),
            }),
            Some((NodeMetadata::Array(_), _)) => Err(Error::WrongNodeType {
                path: path.as_str().to_owned(),
                expected: "a group",
                found: "an array",
            }),
            None => Group::open(Arc::clone(&self.store), path.as_str()).await,
        }
    }

    fn child_path(&self, name: &str) -> Result<NodePath> {
        if name.starts_with('/') {
            // Taken as relative, "/a/b" would name another node than the one meant.
            return Err(zarr_core::Error::InvalidNodePath {
                path: name.to_owned(),
                source: Box::new(zarr_core::Error::InvalidNodeName {
                    name: name.to_owned(),
                    reason: "a name below a group is relative: leave out the leading `/` \
                             (or open the absolute path with `Array::open` / `Group::open`)",
                }),
            }
            .into());
        }
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
                    consolidated: None,
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
        // Changes in flight to a node it replaces finish first; those after find it gone.
        let _tree = lock_tree(&*store, &path).await;
        let existing = read_node(&*store, &path).await?;
        // A node of the other format, or an array, would shadow the new group's documents.
        if let Some((node, existing)) = &existing
            && (*existing != format || matches!(node, NodeMetadata::Array(_)))
        {
            erase_metadata(&*store, &path, *existing).await?;
        }
        ensure_ancestors(&*store, &path, format).await?;
        let document = NodeMetadata::Group(Box::new(metadata.clone()));
        write_metadata(&*store, &path, &document, format).await?;
        if existing.is_some() {
            // Records above that list the node it replaces get the new group's metadata.
            refresh_in_records(&*store, &path, &document, format).await?;
        }
        tracing::debug!(group = %path, %format, "created group");
        Ok(Self {
            store,
            path,
            metadata: Arc::new(metadata),
            format,
            consolidated: None,
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

    /// Create the child array `name` (a relative path) from `builder`, and any missing
    /// groups between this group and it.
    ///
    /// The array must be in this group's format: a Zarr v3 array below a Zarr v2 group (or
    /// the reverse) would be invisible to readers that follow one format, such as
    /// zarr-python, so it is refused. Set [`ArrayBuilder::zarr_format`] to match.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::{ArrayBuilder, Group};
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let root = Group::create(Arc::new(MemoryStore::new()), "/").await?;
    /// let builder = ArrayBuilder::new(vec![4, 4], DataType::Int32, vec![2, 2]);
    /// let array = root.create_array("raw/counts", &builder).await?;
    /// assert_eq!(array.path().as_str(), "/raw/counts");
    /// array.write(.., &[7i32; 16]).await?;
    /// let again = root.open_group("raw").await?.open_array("counts").await?;
    /// assert_eq!(again.read::<i32>(..).await?, vec![7; 16]);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::Unsupported`] if the builder's format is not the group's; otherwise as
    /// [`ArrayBuilder::create`].
    pub async fn create_array(&self, name: &str, builder: &ArrayBuilder) -> Result<Array<S>> {
        let path = self.child_path(name)?;
        let format = builder.format();
        if format != self.format {
            return Err(Error::Unsupported {
                array: path.as_str().to_owned(),
                reason: format!(
                    "the group {} is Zarr v{}; an array below it must be too (set \
                     `ArrayBuilder::zarr_format`), or readers of one format will not see it \
                     (this builder writes Zarr v{})",
                    self.path, self.format, format
                ),
            });
        }
        builder.create(Arc::clone(&self.store), path.as_str()).await
    }

    /// Replace the group's attributes and write its `zarr.json` (`.zattrs` for Zarr v2).
    ///
    /// The rest of a v3 group's `zarr.json` is kept as it is stored now (read first), so a
    /// consolidated record written or refreshed since this handle was opened is not lost.
    /// Consolidated records above that list the group get its new attributes (see
    /// [`Array::resize`](crate::Array::resize) for what that costs).
    ///
    /// # Errors
    /// [`Error::NodeNotFound`] if the group was removed since this handle opened it, and
    /// [`Error::WrongNodeType`] or [`Error::NodeReplaced`] if another node replaced it (the
    /// change would bring it back or overwrite the other); metadata errors if its stored
    /// metadata does not parse; store errors.
    pub async fn set_attributes(&mut self, attributes: Map<String, Value>) -> Result<()> {
        self.change_attributes(|current| *current = attributes)
            .await
    }

    /// Change the attributes as stored now (another handle may have changed them since this
    /// one read them) with `change`, and write them. In the process, the group's metadata
    /// lock is held throughout, and for Zarr v3 (whose `zarr.json` holds the group's
    /// consolidated record) its record's lock while the document is read and written.
    async fn change_attributes(
        &mut self,
        change: impl FnOnce(&mut Map<String, Value>),
    ) -> Result<()> {
        let _node = lock_node(&*self.store, &self.path).await;
        let record = match self.format {
            ZarrFormat::V3 => Some(lock(&*self.store, &self.path, Kind::Record).await),
            ZarrFormat::V2 => None,
        };
        // Gone or replaced, the group is not brought back or written over.
        let path = self.path.as_str();
        let stored = match read_node(&*self.store, &self.path).await? {
            Some((NodeMetadata::Group(stored), format)) if format == self.format => *stored,
            Some((NodeMetadata::Group(_), format)) => {
                return Err(Error::NodeReplaced {
                    path: path.to_owned(),
                    reason: format!(
                        "it is stored as Zarr v{format} now, this handle holds v{}",
                        self.format
                    ),
                });
            }
            Some((NodeMetadata::Array(_), _)) => {
                return Err(Error::WrongNodeType {
                    path: path.to_owned(),
                    expected: "a group",
                    found: "an array",
                });
            }
            None => {
                return Err(Error::NodeNotFound {
                    path: path.to_owned(),
                    key: metadata_key(&self.path)?.as_str().to_owned(),
                });
            }
        };
        let mut metadata = match self.format {
            ZarrFormat::V3 => stored,
            // A v2 group's `.zgroup` is not rewritten: only its attributes are taken.
            ZarrFormat::V2 => {
                let mut metadata = GroupMetadata::clone(&self.metadata);
                metadata.attributes = stored.attributes;
                metadata
            }
        };
        change(&mut metadata.attributes);
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
        drop(record);
        let document = NodeMetadata::Group(Box::new(metadata.clone()));
        self.metadata = Arc::new(metadata);
        refresh_in_records(&*self.store, &self.path, &document, self.format).await?;
        Ok(())
    }

    /// Merge `attributes` into the group's attributes as stored now (replacing keys that
    /// exist; the attributes another handle wrote are kept) and write them.
    ///
    /// # Errors
    /// [`Error::NodeNotFound`] if the group was removed since this handle opened it, and
    /// [`Error::WrongNodeType`] or [`Error::NodeReplaced`] if another node replaced it (the
    /// change would bring it back or overwrite the other); metadata errors if its stored
    /// metadata does not parse; store errors.
    pub async fn update_attributes(&mut self, attributes: Map<String, Value>) -> Result<()> {
        self.change_attributes(|current| current.extend(attributes))
            .await
    }

    /// Set attribute `key` to `value` (any `serde::Serialize`), keeping the others, and
    /// write the metadata as [`Group::update_attributes`] does. [`Group::attribute`] reads
    /// it back.
    ///
    /// # Errors
    /// [`Error::Attribute`] if `value` does not serialize to JSON (a map with non-string
    /// keys, say), before anything is written; as [`Group::update_attributes`].
    pub async fn set_attribute<T: serde::Serialize + ?Sized>(
        &mut self,
        key: &str,
        value: &T,
    ) -> Result<()> {
        let value = crate::attributes::to_attribute(self.path.as_str(), key, value)?;
        let mut attributes = Map::new();
        attributes.insert(key.to_owned(), value);
        self.update_attributes(attributes).await
    }

    /// Remove the child node `name` (a relative path such as `raw` or `a/b`) and everything
    /// below it: its metadata, its chunks and its descendants, with one
    /// [`erase_prefix`](WritableStore::erase_prefix) of its prefix. Like zarr-python's
    /// `del group[name]`.
    ///
    /// Consolidated records that list the removed nodes lose them first: those of this group
    /// and of every group above it (inline `consolidated_metadata` in a v3 `zarr.json`,
    /// records nested in its entries included, or a v2 `.zmetadata`; one metadata read per
    /// group), and this handle's own if it was opened with
    /// [`Group::open_consolidated`]. So a failure half way never leaves a record listing a
    /// node that is gone.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::{ArrayBuilder, Error, Group};
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let store = Arc::new(MemoryStore::new());
    /// let mut root = Group::create(store.clone(), "/").await?;
    /// let scratch = ArrayBuilder::new(vec![100], DataType::Float32, vec![10]);
    /// root.create_array("scratch", &scratch).await?;
    ///
    /// root.remove("scratch").await?;
    /// assert!(root.children().await?.is_empty());
    /// assert!(matches!(root.remove("scratch").await, Err(Error::NodeNotFound { .. })));
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::NodeNotFound`] if there is no node `name` below the group (nothing is
    /// erased); [`Error::Core`] for a name that is not a relative node path, or names the
    /// group itself; metadata errors from a malformed consolidated record; store errors.
    pub async fn remove(&mut self, name: &str) -> Result<()> {
        let path = self.child_path(name)?;
        if path == self.path {
            return Err(zarr_core::Error::InvalidNodeName {
                name: name.to_owned(),
                reason: "name a node below the group; a group does not remove itself",
            }
            .into());
        }
        // Changes in flight below the node finish first; those after find it gone.
        let _tree = lock_tree(&*self.store, &path).await;
        require_node(&*self.store, &path).await?;
        // Every group from the root down to this one may hold a record listing the node.
        let mut groups = self.path.ancestors();
        groups.push(self.path.clone());
        for group in groups {
            if let Some(updated) = forget_in_record(&*self.store, &group, &path).await?
                && group == self.path
            {
                self.metadata = Arc::new(updated);
            }
        }
        if let Some(snapshot) = &self.consolidated {
            let kept = snapshot
                .nodes
                .iter()
                .filter(|(p, _)| **p != path && !p.ancestors().contains(&path))
                .map(|(p, (m, f))| (p.clone(), m.clone(), *f));
            self.consolidated = Some(Arc::new(Snapshot::new(snapshot.root.clone(), kept)));
        }
        self.store.erase_prefix(&node_prefix(&path)?).await?;
        tracing::debug!(group = %self.path, removed = %path, "removed node");
        Ok(())
    }
}

impl<S: ReadableStore + ListableStore + ?Sized> Group<S> {
    /// The group's direct children, in name order: one `list_dir` of the group's prefix, then
    /// one `zarr.json` read per child. Directories without `zarr.json` are not nodes and are
    /// skipped. A group opened with [`Group::open_consolidated`] answers from its record
    /// instead, without store requests.
    ///
    /// # Errors
    /// Store and metadata errors.
    pub async fn children(&self) -> Result<Vec<Node<S>>> {
        let nodes = match self.consolidated.as_ref().filter(|s| s.covers(&self.path)) {
            Some(snapshot) => snapshot.children_of(&self.path),
            None => listed_children(&*self.store, &self.path).await?,
        };
        nodes
            .into_iter()
            .map(|(path, metadata, format)| self.node(path, metadata, format))
            .collect()
    }

    /// The group's direct children like [`children`](Self::children), except that a child
    /// that cannot be opened (its metadata does not parse, an array's codecs cannot be
    /// built, its metadata cannot be read) does not fail the whole listing: each child
    /// comes with its own result. For tools that show what they can and mark the rest.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::{ArrayBuilder, Group};
    /// use zarr_core::DataType;
    /// use zarr_store::{MemoryStore, StoreKey, WritableStore};
    ///
    /// let store = Arc::new(MemoryStore::new());
    /// let root = Group::create(Arc::clone(&store), "/").await?;
    /// root.create_array("good", &ArrayBuilder::new(vec![2], DataType::UInt8, vec![2])).await?;
    /// store.set(&StoreKey::try_new("bad/zarr.json")?, "{ not json".into()).await?;
    ///
    /// assert!(root.children().await.is_err());
    /// let children = root.children_each().await?;
    /// assert_eq!(children.len(), 2);
    /// assert_eq!(children[0].0.as_str(), "/bad");
    /// assert!(children[0].1.is_err());
    /// assert!(children[1].1.is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// Store errors listing the group.
    pub async fn children_each(&self) -> Result<Vec<(NodePath, Result<Node<S>>)>> {
        if let Some(snapshot) = self.consolidated.as_ref().filter(|s| s.covers(&self.path)) {
            return Ok(snapshot
                .children_of(&self.path)
                .into_iter()
                .map(|(path, metadata, format)| {
                    let node = self.node(path.clone(), metadata, format);
                    (path, node)
                })
                .collect());
        }
        Ok(listed_children_each(&*self.store, &self.path)
            .await?
            .into_iter()
            .map(|(path, read)| {
                let node =
                    read.and_then(|(metadata, format)| self.node(path.clone(), metadata, format));
                (path, node)
            })
            .collect())
    }

    /// A node below this group, passing on the group's consolidated record.
    fn node(&self, path: NodePath, metadata: NodeMetadata, format: ZarrFormat) -> Result<Node<S>> {
        let mut node = Node::from_metadata(Arc::clone(&self.store), path, metadata, format)?;
        if let Node::Group(group) = &mut node {
            group.consolidated = self.consolidated.clone();
        }
        Ok(node)
    }

    /// Every node below the group, in path order, with its metadata. Uses consolidated
    /// metadata when there is some (no listing at all): the record of a group opened with
    /// [`Group::open_consolidated`], v3 consolidated metadata of the `"inline"` kind in the
    /// group's `zarr.json`, or a Zarr v2 group's `.zmetadata`; otherwise one listing per
    /// group, like [`tree_listed`](Self::tree_listed).
    ///
    /// Consolidated metadata is not refreshed when the hierarchy changes: use
    /// [`tree_listed`](Self::tree_listed) when it may be stale, and
    /// [`consolidate_metadata`](Self::consolidate_metadata) to refresh it.
    ///
    /// # Errors
    /// Store and metadata errors.
    pub async fn tree(&self) -> Result<Vec<(NodePath, NodeMetadata)>> {
        let read;
        let snapshot = match self.consolidated.as_ref().filter(|s| s.covers(&self.path)) {
            Some(snapshot) => Some(&**snapshot),
            None => {
                read = Snapshot::read(self).await?;
                read.as_ref()
            }
        };
        match snapshot {
            Some(snapshot) => Ok(snapshot
                .below(&self.path)
                .map(|(path, metadata, _)| (path, metadata))
                .collect()),
            None => self.tree_listed().await,
        }
    }

    /// Every node below the group, in path order, with its metadata, from one listing per
    /// group and each node's own `zarr.json`, ignoring any consolidated metadata.
    ///
    /// # Errors
    /// Store and metadata errors.
    pub async fn tree_listed(&self) -> Result<Vec<(NodePath, NodeMetadata)>> {
        Ok(walk_listed(&*self.store, &self.path)
            .await?
            .into_iter()
            .map(|(path, metadata, _)| (path, metadata))
            .collect())
    }
}

impl<S: ReadableStore + ListableStore + WritableStore + ?Sized> Group<S> {
    /// Record the metadata of every node below the group in the group itself, as
    /// zarr-python's `consolidate_metadata` does, so that readers can open the whole
    /// hierarchy with one request ([`Group::open_consolidated`], zarr-python's
    /// `open_consolidated`, or any reader that uses consolidated metadata). Returns the
    /// number of nodes recorded.
    ///
    /// The hierarchy is walked with listings (ignoring any consolidated metadata already
    /// there). A Zarr v3 group gets inline `consolidated_metadata` in its `zarr.json`
    /// (its attributes as stored are kept); a Zarr v2 group gets a `.zmetadata` document
    /// holding each node's `.zarray` or `.zgroup` and `.zattrs` as stored. Nothing keeps the
    /// record current afterwards: call this again after changing the hierarchy.
    ///
    /// # Errors
    /// [`Error::Consolidated`] if a node below the group is of the other Zarr format (a
    /// record holds one format); store and metadata errors.
    pub async fn consolidate_metadata(&mut self) -> Result<usize> {
        // The group's metadata lock, so that a removal of the group waits for the record to
        // be written (and is not undone by it); the record's lock from the walk to the
        // write, so that a record refresh in the process (a node below changing its
        // metadata meanwhile) comes after it, not lost under it.
        let _node = lock_node(&*self.store, &self.path).await;
        let _record = lock(&*self.store, &self.path, Kind::Record).await;
        let nodes = walk_listed(&*self.store, &self.path).await?;
        if let Some((path, _, format)) = nodes.iter().find(|(_, _, f)| *f != self.format) {
            return Err(Error::Consolidated {
                path: self.path.as_str().to_owned(),
                reason: format!(
                    "{path} is a Zarr {format} node in a Zarr {} hierarchy; a record holds \
                     one format",
                    self.format
                ),
            });
        }
        let relative = |path: &NodePath| -> String {
            let base = self.path.names().count();
            path.names().skip(base).collect::<Vec<_>>().join("/")
        };
        match self.format {
            ZarrFormat::V3 => {
                // The group's own document as stored now, so that attributes written through
                // another handle are kept.
                let mut own = match require_node(&*self.store, &self.path).await? {
                    (NodeMetadata::Group(metadata), _) => *metadata,
                    (other, _) => {
                        return Err(Error::WrongNodeType {
                            path: self.path.as_str().to_owned(),
                            expected: "a group",
                            found: kind(&other),
                        });
                    }
                };
                let mut entries = Map::new();
                for (path, metadata, _) in &nodes {
                    let document = match metadata {
                        NodeMetadata::Array(array) => array.to_value()?,
                        NodeMetadata::Group(group) => {
                            // As zarr-python records a group below: its own record empty,
                            // the nodes below it listed here.
                            let mut group = GroupMetadata::clone(group);
                            group.consolidated_metadata =
                                Some(ConsolidatedMetadata::inline(Map::new()));
                            group.to_value()
                        }
                    };
                    entries.insert(relative(path), document);
                }
                own.consolidated_metadata = Some(ConsolidatedMetadata::inline(entries));
                let document = NodeMetadata::Group(Box::new(own.clone()));
                write_metadata(&*self.store, &self.path, &document, ZarrFormat::V3).await?;
                self.metadata = Arc::new(own);
            }
            ZarrFormat::V2 => {
                let mut entries = Map::new();
                self.add_v2_documents(&mut entries, &self.path, "", v2::ZGROUP)
                    .await?;
                for (path, metadata, _) in &nodes {
                    let name = match metadata {
                        NodeMetadata::Array(_) => v2::ZARRAY,
                        NodeMetadata::Group(_) => v2::ZGROUP,
                    };
                    let prefix = format!("{}/", relative(path));
                    self.add_v2_documents(&mut entries, path, &prefix, name)
                        .await?;
                }
                let text = v2::zmetadata_json(entries).map_err(|source| Error::V2Metadata {
                    path: self.path.as_str().to_owned(),
                    source: Box::new(source),
                })?;
                let key = v2_key(&self.path, v2::ZMETADATA)?;
                self.store.set(&key, Bytes::from(text.into_bytes())).await?;
            }
        }
        tracing::debug!(group = %self.path, nodes = nodes.len(), "consolidated metadata");
        if self.consolidated.is_some() {
            self.consolidated = Some(Arc::new(Snapshot::new(
                self.path.clone(),
                nodes.iter().cloned(),
            )));
        }
        Ok(nodes.len())
    }

    /// Add the Zarr v2 documents of the node at `path` (`document`, and `.zattrs` when
    /// stored) to a `.zmetadata` record, under `prefix`.
    async fn add_v2_documents(
        &self,
        entries: &mut Map<String, Value>,
        path: &NodePath,
        prefix: &str,
        document: &str,
    ) -> Result<()> {
        for name in [document, v2::ZATTRS] {
            if let Some(bytes) = self.store.get(&v2_key(path, name)?).await? {
                let value: Value =
                    serde_json::from_slice(&bytes).map_err(|e| Error::V2Metadata {
                        path: path.as_str().to_owned(),
                        source: Box::new(zarr_core::Error::Json(e)),
                    })?;
                entries.insert(format!("{prefix}{name}"), value);
            }
        }
        Ok(())
    }
}

/// The direct children of the group at `path`, from one `list_dir` and one metadata read
/// per child, in name order.
async fn listed_children<S: ReadableStore + ListableStore + ?Sized>(
    store: &S,
    path: &NodePath,
) -> Result<Vec<(NodePath, NodeMetadata, ZarrFormat)>> {
    listed_children_each(store, path)
        .await?
        .into_iter()
        .map(|(child, read)| read.map(|(metadata, format)| (child, metadata, format)))
        .collect()
}

/// [`listed_children`], with each child's metadata read on its own: a child whose
/// metadata cannot be read or parsed comes with its error. Fails only if the listing does.
async fn listed_children_each<S: ReadableStore + ListableStore + ?Sized>(
    store: &S,
    path: &NodePath,
) -> Result<Vec<(NodePath, Result<(NodeMetadata, ZarrFormat)>)>> {
    let prefix = node_prefix(path)?;
    let listing = store.list_dir(&prefix).await?;
    let mut out = Vec::new();
    for child in listing.prefixes {
        let name = child
            .as_str()
            .strip_prefix(prefix.as_str())
            .unwrap_or(child.as_str())
            .trim_end_matches('/');
        let Ok(child_path) = path.child(name) else {
            // Not a valid node name (e.g. an array's `c/` chunk directory).
            continue;
        };
        match read_node(store, &child_path).await {
            Ok(Some(found)) => out.push((child_path, Ok(found))),
            // A directory without metadata is not a node.
            Ok(None) => {}
            Err(err) => out.push((child_path, Err(err))),
        }
    }
    Ok(out)
}

/// Every node below the group at `path`, in path order, from one listing per group.
async fn walk_listed<S: ReadableStore + ListableStore + ?Sized>(
    store: &S,
    path: &NodePath,
) -> Result<Vec<(NodePath, NodeMetadata, ZarrFormat)>> {
    let mut out = Vec::new();
    let mut stack = vec![path.clone()];
    while let Some(group) = stack.pop() {
        for (child, metadata, format) in listed_children(store, &group).await? {
            if matches!(metadata, NodeMetadata::Group(_)) {
                stack.push(child.clone());
            }
            out.push((child, metadata, format));
        }
    }
    out.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
    Ok(out)
}

/// The metadata of a hierarchy below a group, as its consolidated metadata recorded it.
#[derive(Debug)]
struct Snapshot {
    /// The consolidating group.
    root: NodePath,
    /// Every node recorded below it, by path.
    nodes: BTreeMap<NodePath, (NodeMetadata, ZarrFormat)>,
}

impl Snapshot {
    fn new(
        root: NodePath,
        nodes: impl IntoIterator<Item = (NodePath, NodeMetadata, ZarrFormat)>,
    ) -> Self {
        Self {
            root,
            nodes: nodes.into_iter().map(|(p, m, f)| (p, (m, f))).collect(),
        }
    }

    /// The record stored with `group`: its `.zmetadata` (Zarr v2, one store request) or the
    /// inline `consolidated_metadata` of its `zarr.json` (v3); `None` if there is none.
    async fn read<S: ReadableStore + ?Sized>(group: &Group<S>) -> Result<Option<Self>> {
        let mut nodes = Vec::new();
        match group.format {
            ZarrFormat::V2 => {
                let key = v2_key(&group.path, v2::ZMETADATA)?;
                let Some(bytes) = group.store.get(&key).await? else {
                    return Ok(None);
                };
                let entries =
                    v2::consolidated_nodes(&bytes).map_err(|source| Error::V2Metadata {
                        path: group.path.as_str().to_owned(),
                        source: Box::new(source),
                    })?;
                for (relative, metadata) in entries {
                    nodes.push((group.child_path(&relative)?, metadata, ZarrFormat::V2));
                }
            }
            ZarrFormat::V3 => {
                let Some(consolidated) = group
                    .metadata
                    .consolidated_metadata
                    .as_ref()
                    .filter(|c| c.is_inline())
                else {
                    return Ok(None);
                };
                add_inline(&mut nodes, &group.path, consolidated)?;
            }
        }
        Ok(Some(Self::new(group.path.clone(), nodes)))
    }

    /// Whether the record describes the group at `path` and everything below it.
    fn covers(&self, path: &NodePath) -> bool {
        *path == self.root || self.nodes.contains_key(path)
    }

    /// The recorded nodes whose parent is `path`, in name order.
    fn children_of(&self, path: &NodePath) -> Vec<(NodePath, NodeMetadata, ZarrFormat)> {
        self.nodes
            .iter()
            .filter(|(p, _)| p.parent().as_ref() == Some(path))
            .map(|(p, (m, f))| (p.clone(), m.clone(), *f))
            .collect()
    }

    /// The recorded nodes below `path`, in path order.
    fn below<'a>(
        &'a self,
        path: &'a NodePath,
    ) -> impl Iterator<Item = (NodePath, NodeMetadata, ZarrFormat)> + 'a {
        let mut nodes: Vec<_> = self
            .nodes
            .iter()
            .filter(move |(p, _)| p.ancestors().contains(path))
            .map(|(p, (m, f))| (p.clone(), m.clone(), *f))
            .collect();
        nodes.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        nodes.into_iter()
    }
}

/// Add the nodes of inline consolidated metadata recorded at `base`, and of any non-empty
/// record nested in a group entry (a layout some writers use), with absolute paths.
fn add_inline(
    nodes: &mut Vec<(NodePath, NodeMetadata, ZarrFormat)>,
    base: &NodePath,
    consolidated: &ConsolidatedMetadata,
) -> Result<()> {
    for (relative, metadata) in consolidated.nodes()? {
        let mut path = base.clone();
        for name in relative.names() {
            path = path.child(name)?;
        }
        if let NodeMetadata::Group(group) = &metadata
            && let Some(nested) = group
                .consolidated_metadata
                .as_ref()
                .filter(|c| c.is_inline() && !c.metadata.is_empty())
        {
            add_inline(nodes, &path, nested)?;
        }
        nodes.push((path, metadata, ZarrFormat::V3));
    }
    Ok(())
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

    /// The node's attribute `key` as a `T`, `None` if there is none (see
    /// [`crate::Array::attribute`]).
    ///
    /// # Errors
    /// [`Error::Attribute`] if the attribute does not deserialize as a `T`.
    pub fn attribute<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        match self {
            Self::Array(a) => a.attribute(key),
            Self::Group(g) => g.attribute(key),
        }
    }

    /// The node's attributes as a whole as a `T` (see [`crate::Array::attributes_as`]).
    ///
    /// # Errors
    /// [`Error::Attribute`] if the attributes do not deserialize as a `T`.
    pub fn attributes_as<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        match self {
            Self::Array(a) => a.attributes_as(),
            Self::Group(g) => g.attributes_as(),
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
                consolidated: None,
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
