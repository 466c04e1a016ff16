//! `zarr consolidate`: record the metadata of a hierarchy in its group.

use anyhow::{Context, Result};
use clap::Args;
use zarr::array::Node;
use zarr::metadata::v2::ZarrFormat;

use crate::progress::note;
use crate::target::{Access, resolve};
use crate::{Global, TargetArgs, outln, walk};

/// Arguments of `zarr consolidate`.
#[derive(Args, Debug)]
pub(crate) struct ConsolidateArgs {
    #[command(flatten)]
    target: TargetArgs,
}

pub(crate) async fn run(args: ConsolidateArgs, global: Global) -> Result<()> {
    let target = resolve(&args.target, Access::Update)?;
    let mut group = match target.node().await? {
        Node::Group(group) => group,
        Node::Array(array) => anyhow::bail!(
            "{} is an array; consolidated metadata is recorded in a group",
            array.path()
        ),
    };
    let nodes = group
        .consolidate_metadata()
        .await
        .with_context(|| format!("consolidating {}", target.describe()))?;
    target.finish()?;
    // Other implementations may know a codec this library does not, so such an array is
    // recorded; but `zarr tree` and this library will mark it broken: say so now.
    let recorded = group
        .tree()
        .await
        .with_context(|| format!("reading the record of {}", target.describe()))?;
    for (path, metadata) in recorded {
        if let Err(reason) = walk::usable(group.store(), &path, metadata) {
            note(
                global,
                &format!(
                    "warning: {path}: recorded, but this library cannot open it (other \
                     implementations may): {reason}"
                ),
            );
        }
    }
    let place = match group.zarr_format() {
        ZarrFormat::V3 => "its zarr.json",
        ZarrFormat::V2 => ".zmetadata",
    };
    if !global.quiet {
        outln!(
            "recorded the metadata of {nodes} node{} below {} in {place}",
            if nodes == 1 { "" } else { "s" },
            group.path()
        );
    }
    Ok(())
}
