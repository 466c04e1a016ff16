//! `zarr rm`: remove a node and everything below it.

use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use zarr::array::Group;
use zarr::metadata::NodePath;

use crate::target::{Access, resolve};
use crate::{Global, TargetArgs, outln, usage};

/// Arguments of `zarr rm`.
#[derive(Args, Debug)]
pub(crate) struct RmArgs {
    #[command(flatten)]
    target: TargetArgs,
}

pub(crate) async fn run(args: RmArgs, global: Global) -> Result<()> {
    let target = resolve(&args.target, Access::Update)?;
    let path = NodePath::new(&target.path)?;
    let (Some(parent), Some(name)) = (path.parent(), path.name()) else {
        usage!(
            "{} is the root of its store; `zarr rm` removes a node below a group (delete the \
             store itself to remove everything)",
            target.describe()
        );
    };
    let mut group = Group::open(Arc::clone(&target.store), parent.as_str())
        .await
        .with_context(|| format!("opening the group above {}", target.describe()))?;
    group
        .remove(name)
        .await
        .with_context(|| format!("removing {}", target.describe()))?;
    target.finish()?;
    if !global.quiet {
        outln!("removed {path} and everything below it");
    }
    Ok(())
}
