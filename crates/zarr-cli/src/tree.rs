//! `zarr tree`: the hierarchy below a group.

use anyhow::{Context, Result, bail};
use clap::Args;
use zarr::array::Node;
use zarr::metadata::NodeMetadata;

use crate::TargetArgs;
use crate::layout::{chunking_text, shape_text};
use crate::outln;
use crate::target::{Access, resolve};
use crate::walk;

/// Arguments of `zarr tree`.
#[derive(Args, Debug)]
pub(crate) struct TreeArgs {
    #[command(flatten)]
    target: TargetArgs,
}

impl TreeArgs {
    /// The tree of a plain path.
    pub(crate) fn for_target(target: &str) -> Self {
        Self {
            target: TargetArgs::plain(target),
        }
    }
}

fn describe(metadata: &NodeMetadata) -> String {
    match metadata {
        NodeMetadata::Array(a) => format!(
            "  {} {} ({})",
            a.data_type.name(),
            shape_text(&a.shape),
            chunking_text(a)
        ),
        NodeMetadata::Group(_) => String::new(),
    }
}

pub(crate) async fn run(args: TreeArgs) -> Result<()> {
    let target = resolve(&args.target, Access::Read)?;
    let group = match target.node().await? {
        Node::Group(group) => group,
        Node::Array(array) => {
            let metadata = NodeMetadata::Array(Box::new(array.metadata().clone()));
            outln!("{}{}", array.path(), describe(&metadata));
            return Ok(());
        }
    };
    let tree = walk::tree(&group)
        .await
        .with_context(|| format!("walking {}", target.describe()))?;
    let note = match &tree.record_error {
        _ if tree.consolidated => "  (from consolidated metadata)".to_owned(),
        Some(err) => format!("  (error in its consolidated metadata, listed instead: {err})"),
        None => String::new(),
    };
    outln!("{}{note}", group.path());
    let base = group.path().names().count();
    for found in &tree.nodes {
        let depth = found.path.names().count() - base;
        let indent = "  ".repeat(depth);
        let name = found.name();
        match &found.node {
            Ok(metadata) => {
                let slash = if matches!(metadata, NodeMetadata::Group(_)) {
                    "/"
                } else {
                    ""
                };
                outln!("{indent}{name}{slash}{}", describe(metadata));
            }
            Err(err) => outln!("{indent}{name}  (error: {err})"),
        }
    }
    let broken = tree.broken(group.path());
    if !broken.is_empty() {
        bail!(
            "{}: {}; the rest of the tree is shown",
            target.describe(),
            walk::broken_summary(&broken)
        );
    }
    Ok(())
}
