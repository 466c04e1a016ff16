//! `zarr attrs`: show or change the attributes of an array or a group.

use anyhow::{Context, Result};
use clap::Args;
use serde_json::{Map, Value};

use zarr::array::Node;

use crate::create::parse_attributes;
use crate::progress::note;
use crate::target::{Access, resolve};
use crate::{Global, TargetArgs, outln, usage};

/// Arguments of `zarr attrs`.
#[derive(Args, Debug)]
pub(crate) struct AttrsArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Set an attribute, `KEY=JSON` (a value that is not JSON is a string:
    /// `units=m`, `scale=0.5`, `dims='["y","x"]'`). Repeat for several.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Remove an attribute (an error if the node has none of that name, and nothing is
    /// written then). Repeat for several.
    #[arg(long = "delete", value_name = "KEY")]
    delete: Vec<String>,
    /// Remove every attribute first (then --set adds the new ones).
    #[arg(long, conflicts_with = "delete")]
    clear: bool,
}

pub(crate) async fn run(args: AttrsArgs, global: Global) -> Result<()> {
    let set = parse_attributes(&args.set)?;
    if let Some(key) = args.delete.iter().find(|key| set.contains_key(*key)) {
        usage!("--delete {key} and --set {key}=...: say one of them");
    }
    let changes = args.clear || !set.is_empty() || !args.delete.is_empty();
    let access = if changes {
        Access::Update
    } else {
        Access::Read
    };
    let target = resolve(&args.target, access)?;
    let mut node = target.node().await?;
    if !changes {
        let text = serde_json::to_string_pretty(node.attributes())?;
        outln!("{text}");
        return Ok(());
    }
    let mut attributes = if args.clear {
        Map::new()
    } else {
        node.attributes().clone()
    };
    if let Some(missing) = args
        .delete
        .iter()
        .find(|key| !attributes.contains_key(*key))
    {
        anyhow::bail!(
            "{} has no attribute {missing:?} (it has {}); nothing was changed",
            target.describe(),
            names(&attributes)
        );
    }
    for key in &args.delete {
        attributes.remove(key);
    }
    attributes.extend(set);
    let what = format!("writing the attributes of {}", target.describe());
    match &mut node {
        Node::Array(array) => array.set_attributes(attributes).await.context(what)?,
        Node::Group(group) => group.set_attributes(attributes).await.context(what)?,
    }
    target.finish()?;
    note(
        global,
        &format!(
            "{}: attributes {}",
            target.describe(),
            names(node.attributes())
        ),
    );
    Ok(())
}

/// The attribute names, for messages: `none`, or `"a", "b"`.
fn names(attributes: &Map<String, Value>) -> String {
    if attributes.is_empty() {
        return "none".to_owned();
    }
    attributes
        .keys()
        .map(|key| format!("{key:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}
