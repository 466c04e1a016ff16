//! Walking a hierarchy without giving up at the first broken node: `tree`, `info` and
//! `verify` show (or check) every node they can read and mark each one they cannot, with its
//! error, instead of failing as a whole.

use std::sync::Arc;

use anyhow::{Context, Result};
use zarr::array::{Array, ArrayOptions, Group, Node};
use zarr::metadata::v2::{self, ZarrFormat};
use zarr::metadata::{NodeMetadata, NodePath};
use zarr::store::{ReadableStoreExt as _, Store, StoreKey};

use crate::error_line;

/// A node found below a group: its metadata (`T`), or why it cannot be used.
#[derive(Debug)]
pub(crate) struct Found<T> {
    /// The node's path.
    pub(crate) path: NodePath,
    /// The node, or the one-line error that reading or opening it gave.
    pub(crate) node: Result<T, String>,
}

impl<T> Found<T> {
    /// The node's name (`/` for the root).
    pub(crate) fn name(&self) -> &str {
        self.path.name().unwrap_or("/")
    }
}

/// Every node below a group, as [`tree`] found it.
#[derive(Debug)]
pub(crate) struct Tree {
    /// The nodes, in path order.
    pub(crate) nodes: Vec<Found<NodeMetadata>>,
    /// Whether they come from the group's consolidated metadata.
    pub(crate) consolidated: bool,
    /// Why the group's consolidated metadata could not be used (the nodes were then listed).
    pub(crate) record_error: Option<String>,
}

impl Tree {
    /// The paths of the nodes that could not be read, and of the group itself when its
    /// consolidated metadata is unusable.
    pub(crate) fn broken(&self, group: &NodePath) -> Vec<String> {
        let record = self
            .record_error
            .as_ref()
            .map(|_| group.as_str().to_owned());
        record
            .into_iter()
            .chain(
                self.nodes
                    .iter()
                    .filter(|f| f.node.is_err())
                    .map(|f| f.path.as_str().to_owned()),
            )
            .collect()
    }
}

/// Whether the group holds a record of its hierarchy that [`Group::tree`] uses: v3 inline
/// consolidated metadata, or a Zarr v2 `.zmetadata`.
async fn has_record(group: &Group<dyn Store>) -> Result<bool> {
    Ok(match group.zarr_format() {
        ZarrFormat::V3 => group
            .metadata()
            .consolidated_metadata
            .as_ref()
            .is_some_and(|c| c.is_inline()),
        ZarrFormat::V2 => {
            let key = StoreKey::try_new(format!("{}{}", group.path().prefix(), v2::ZMETADATA))?;
            group
                .store()
                .exists(&key)
                .await
                .with_context(|| format!("reading {key}"))?
        }
    })
}

/// Every node below `group`, in path order: from its consolidated metadata when it has
/// some, otherwise from one listing per group and each node's own metadata. A node whose
/// metadata does not parse, or an array whose codecs cannot be built, is returned with its
/// error; a group that cannot be read is not descended into. Fails only when the group
/// itself cannot be listed.
///
/// # Errors
/// Store errors listing a group.
pub(crate) async fn tree(group: &Group<dyn Store>) -> Result<Tree> {
    let mut record_error = None;
    if has_record(group).await? {
        match group.tree().await {
            Ok(nodes) => {
                let nodes = nodes
                    .into_iter()
                    .map(|(path, metadata)| Found {
                        node: usable(group.store(), &path, metadata),
                        path,
                    })
                    .collect();
                return Ok(Tree {
                    nodes,
                    consolidated: true,
                    record_error: None,
                });
            }
            Err(err) => record_error = Some(error_line(&err)),
        }
    }
    let mut nodes = Vec::new();
    let mut groups = vec![group.clone()];
    while let Some(parent) = groups.pop() {
        for found in children(&parent).await? {
            let node = found.node.map(|node| {
                let metadata = metadata_of(&node);
                if let Node::Group(child) = node {
                    groups.push(child);
                }
                metadata
            });
            nodes.push(Found {
                node,
                path: found.path,
            });
        }
    }
    nodes.sort_by(|a, b| a.path.as_str().cmp(b.path.as_str()));
    Ok(Tree {
        nodes,
        consolidated: false,
        record_error,
    })
}

/// The direct children of `group`, in name order, from one listing and each child's own
/// metadata (ignoring consolidated metadata); a child that cannot be opened is returned with
/// its error.
///
/// # Errors
/// Store errors listing the group.
pub(crate) async fn children(group: &Group<dyn Store>) -> Result<Vec<Found<Node<dyn Store>>>> {
    Ok(group
        .children_each()
        .await
        .with_context(|| format!("listing group {}", group.path()))?
        .into_iter()
        .map(|(path, node)| Found {
            path,
            node: node.map_err(|err| error_line(&err)),
        })
        .collect())
}

/// The metadata of an opened node.
fn metadata_of(node: &Node<dyn Store>) -> NodeMetadata {
    match node {
        Node::Array(array) => NodeMetadata::Array(Box::new(array.metadata().clone())),
        Node::Group(group) => NodeMetadata::Group(Box::new(group.metadata().clone())),
    }
}

/// Recorded metadata, checked as opening the node would check it (an array's codecs must
/// be buildable).
pub(crate) fn usable(
    store: &Arc<dyn Store>,
    path: &NodePath,
    metadata: NodeMetadata,
) -> Result<NodeMetadata, String> {
    if let NodeMetadata::Array(array) = &metadata {
        Array::from_metadata(
            Arc::clone(store),
            path.clone(),
            (**array).clone(),
            ArrayOptions::default(),
        )
        .map_err(|err| error_line(&err))?;
    }
    Ok(metadata)
}

/// `1 node` / `3 nodes`, with up to five paths: for the message that ends a command that
/// met broken nodes.
pub(crate) fn broken_summary(broken: &[String]) -> String {
    format!(
        "{} node{} could not be read ({})",
        broken.len(),
        if broken.len() == 1 { "" } else { "s" },
        list_text(broken)
    )
}

/// Up to five paths, comma-separated, then how many more: `/a, /b and 3 more`.
pub(crate) fn list_text(paths: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut list = paths
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > SHOWN {
        list.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    list
}
