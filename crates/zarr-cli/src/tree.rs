//! `zarr tree`: the hierarchy below a group.

use anyhow::{Context, Result};
use clap::Args;
use zarr::array::Node;
use zarr::metadata::NodeMetadata;
use zarr::metadata::v2::{self, ZarrFormat};
use zarr::store::{ReadableStoreExt as _, StoreKey};

use crate::TargetArgs;
use crate::layout::{chunking_text, shape_text};
use crate::outln;
use crate::target::{Access, resolve};

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
    let nodes = group
        .tree()
        .await
        .with_context(|| format!("walking {}", target.describe()))?;
    let recorded = match group.zarr_format() {
        ZarrFormat::V3 => group
            .metadata()
            .consolidated_metadata
            .as_ref()
            .is_some_and(|c| c.is_inline()),
        // `tree` read the group's `.zmetadata` if there is one.
        ZarrFormat::V2 => group
            .store()
            .exists(&StoreKey::try_new(format!(
                "{}{}",
                group.path().prefix(),
                v2::ZMETADATA
            ))?)
            .await
            .with_context(|| format!("reading {}", target.describe()))?,
    };
    let consolidated = if recorded {
        "  (from consolidated metadata)"
    } else {
        ""
    };
    outln!("{}{consolidated}", group.path());
    let base = group.path().names().count();
    for (path, metadata) in &nodes {
        let depth = path.names().count() - base;
        let name = path.name().unwrap_or("/");
        let slash = if matches!(metadata, NodeMetadata::Group(_)) {
            "/"
        } else {
            ""
        };
        outln!("{}{name}{slash}{}", "  ".repeat(depth), describe(metadata));
    }
    Ok(())
}
