//! The `zarr` command-line tool.
//!
//! Exit codes: 0 success, 1 an error (the message says what and why), 2 bad usage.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use serde_json::Value;
use zarr::metadata::{ArrayMetadata, ChunkGrid, GroupMetadata, NodeMetadata};

/// Inspect Zarr v3 stores.
#[derive(Parser)]
#[command(name = "zarr", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Describe an array or group: shape, data type, chunking, codecs, fill value, attributes.
    ///
    /// Example: zarr info data.zarr/images/raw
    Info {
        /// The node's directory in a local store (the directory holding its zarr.json).
        target: PathBuf,
        /// Print machine-readable JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info { target, json } => info(&target, json),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let causes: Vec<String> = err.chain().map(ToString::to_string).collect();
            eprintln!("zarr: {}", causes.join(": "));
            ExitCode::FAILURE
        }
    }
}

fn read_node(dir: &Path) -> Result<NodeMetadata> {
    let key = dir.join("zarr.json");
    let bytes = std::fs::read(&key).with_context(|| format!("reading {}", key.display()))?;
    NodeMetadata::from_slice(&bytes).with_context(|| format!("parsing {}", key.display()))
}

/// The names of the child nodes of a group directory (subdirectories holding a `zarr.json`),
/// sorted.
fn children(dir: &Path) -> Result<Vec<(String, NodeMetadata)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("__") || !entry.file_type()?.is_dir() {
            continue;
        }
        if entry.path().join("zarr.json").is_file() {
            out.push((name, read_node(&entry.path())?));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn info(target: &Path, json: bool) -> Result<()> {
    let node = read_node(target)?;
    match &node {
        NodeMetadata::Array(array) => {
            if json {
                let mut out = serde_json::Map::new();
                out.insert("path".into(), target.display().to_string().into());
                out.insert("metadata".into(), array.to_value()?);
                out.insert(
                    "grid_shape".into(),
                    serde_json::to_value(array.chunk_grid.grid_shape(&array.shape)?)?,
                );
                out.insert("num_elements".into(), array.num_elements()?.into());
                println!("{}", serde_json::to_string_pretty(&Value::Object(out))?);
            } else {
                print_array(target, array)?;
            }
        }
        NodeMetadata::Group(group) => {
            let kids = children(target)?;
            if json {
                let mut out = serde_json::Map::new();
                out.insert("path".into(), target.display().to_string().into());
                out.insert("metadata".into(), group.to_value());
                out.insert(
                    "children".into(),
                    kids.iter()
                        .map(|(name, node)| {
                            let kind = match node {
                                NodeMetadata::Array(_) => "array",
                                NodeMetadata::Group(_) => "group",
                            };
                            serde_json::json!({"name": name, "node_type": kind})
                        })
                        .collect(),
                );
                println!("{}", serde_json::to_string_pretty(&Value::Object(out))?);
            } else {
                print_group(target, group, &kids);
            }
        }
    }
    Ok(())
}

fn print_array(target: &Path, array: &ArrayMetadata) -> Result<()> {
    println!("array       {}", target.display());
    println!("shape       {:?}", array.shape);
    println!("data type   {}", array.data_type);
    match &array.chunk_grid {
        ChunkGrid::Regular(grid) => println!("chunks      {:?} (regular)", grid.chunk_shape()),
        ChunkGrid::Rectilinear(_) => println!(
            "chunks      rectilinear {}",
            array.chunk_grid.to_json()["configuration"]["chunk_shapes"]
        ),
    }
    println!(
        "grid        {:?} chunks",
        array.chunk_grid.grid_shape(&array.shape)?
    );
    println!(
        "chunk keys  {} (e.g. {})",
        array.chunk_key_encoding.to_json()["name"]
            .as_str()
            .unwrap_or("?"),
        array.chunk_key(&vec![0; array.rank()])
    );
    println!(
        "fill value  {}",
        array.fill_value.to_json(&array.data_type)?
    );
    for (i, codec) in array.codecs.iter().enumerate() {
        let label = if i == 0 { "codecs" } else { "" };
        match &codec.configuration {
            Some(config) if !config.is_empty() => {
                println!(
                    "{label:<11} {} {}",
                    codec.name,
                    Value::Object(config.clone())
                );
            }
            _ => println!("{label:<11} {}", codec.name),
        }
    }
    if let Some(names) = &array.dimension_names {
        let names: Vec<&str> = names.iter().map(|n| n.as_deref().unwrap_or("-")).collect();
        println!("dimensions  {}", names.join(", "));
    }
    for t in &array.storage_transformers {
        println!(
            "transformer {} {}",
            t.name,
            Value::Object(t.configuration_or_empty())
        );
    }
    print_attributes(&array.attributes);
    Ok(())
}

fn print_group(target: &Path, group: &GroupMetadata, kids: &[(String, NodeMetadata)]) {
    println!("group       {}", target.display());
    print_attributes(&group.attributes);
    if let Some(consolidated) = &group.consolidated_metadata {
        println!(
            "consolidated metadata: {} nodes",
            consolidated.metadata.len()
        );
    }
    if kids.is_empty() {
        println!("children    (none)");
    }
    for (i, (name, node)) in kids.iter().enumerate() {
        let label = if i == 0 { "children" } else { "" };
        match node {
            NodeMetadata::Array(a) => {
                println!("{label:<11} {name}  array {:?} {}", a.shape, a.data_type);
            }
            NodeMetadata::Group(_) => println!("{label:<11} {name}/  group"),
        }
    }
}

fn print_attributes(attributes: &serde_json::Map<String, Value>) {
    if attributes.is_empty() {
        println!("attributes  (none)");
        return;
    }
    println!("attributes");
    for (key, value) in attributes {
        println!("  {key}: {value}");
    }
}
