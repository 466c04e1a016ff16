//! `zarr consolidate`: record the metadata of a hierarchy in its group.

use anyhow::{Context, Result};
use clap::Args;
use zarr::array::Node;
use zarr::metadata::v2::ZarrFormat;

use crate::target::{Access, resolve};
use crate::{Global, TargetArgs, outln};

/// Arguments of `zarr consolidate`.
#[derive(Args, Debug)]
pub(crate) struct ConsolidateArgs {
    #[command(flatten)]
    target: TargetArgs,
}

pub(crate) async fn run(args: ConsolidateArgs, global: Global) -> Result<()> {
    let target = resolve(&args.target, Access::Read)?;
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
