//! `zarr info`: describe an array or a group.

use std::collections::HashSet;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Args;
use futures::{StreamExt as _, TryStreamExt as _};
use serde_json::{Map, Value, json};
use zarr::array::{Array, Group, Node};
use zarr::metadata::{ArrayMetadata, ChunkGrid};
use zarr::store::{Store, StoreKey, StorePrefix};

use crate::TargetArgs;
use crate::layout::{Layout, chunking_text, codec_text, shape_text};
use crate::outln;
use crate::target::{Access, resolve};
use crate::walk::{self, Found};

/// Arguments of `zarr info`.
#[derive(Args, Debug)]
pub(crate) struct InfoArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Print JSON (the metadata document plus the derived facts) instead of text.
    #[arg(long)]
    json: bool,
}

impl InfoArgs {
    /// Text info of a plain path.
    pub(crate) fn for_target(target: &str) -> Self {
        Self {
            target: TargetArgs::plain(target),
            json: false,
        }
    }
}

/// Grids with more chunks than this are not walked chunk by chunk.
const MAX_WALKED_CHUNKS: u64 = 20_000_000;

/// Every chunk index of a grid, in C order.
pub(crate) fn grid_indices(grid: &[u64]) -> impl Iterator<Item = Vec<u64>> + use<> {
    let total: u64 = grid.iter().product();
    let grid = grid.to_vec();
    let mut next = vec![0u64; grid.len()];
    (0..total).map(move |_| {
        let current = next.clone();
        for d in (0..grid.len()).rev() {
            next[d] += 1;
            if next[d] < grid[d] {
                break;
            }
            next[d] = 0;
        }
        current
    })
}

/// What is stored of an array.
#[derive(Debug, Default)]
pub(crate) struct ChunkStats {
    /// Chunks (shards) in the grid.
    pub(crate) possible: u64,
    /// Chunks stored, when known.
    pub(crate) present: Option<u64>,
    /// Bytes stored in chunks, when known.
    pub(crate) stored_bytes: Option<u64>,
    /// Decoded bytes of the stored chunks (fixed-size types), when known.
    pub(crate) decoded_bytes: Option<u64>,
}

impl ChunkStats {
    /// Decoded bytes over stored bytes.
    pub(crate) fn ratio(&self) -> Option<f64> {
        match (self.decoded_bytes, self.stored_bytes) {
            (Some(d), Some(s)) if s > 0 => Some(d as f64 / s as f64),
            _ => None,
        }
    }
}

/// Count the stored chunks of an array and their sizes: one listing of the array's prefix
/// and one size request per stored chunk, or (for stores that cannot list) one size request
/// per chunk of a small grid.
pub(crate) async fn chunk_stats(array: &Array<dyn Store>) -> Result<ChunkStats> {
    chunk_stats_walking(array, MAX_WALKED_CHUNKS).await
}

/// [`chunk_stats`], walking grids of up to `max_walked` chunks chunk by chunk.
async fn chunk_stats_walking(array: &Array<dyn Store>, max_walked: u64) -> Result<ChunkStats> {
    let metadata = array.metadata();
    let grid = array.grid_shape()?;
    let possible: u64 = grid.iter().product();
    let mut stats = ChunkStats {
        possible,
        ..ChunkStats::default()
    };
    let prefix = StorePrefix::try_new(array.path().prefix())?;
    let store = array.store();
    let listed = match store.list_prefix(&prefix).await {
        Ok(keys) => Some(
            keys.into_iter()
                .filter_map(|k| k.strip_prefix(&prefix).map(StoreKey::into_string))
                .filter(|k| k != "zarr.json")
                .collect::<HashSet<String>>(),
        ),
        Err(err) => {
            tracing::info!(error = %err, "the store cannot list; asking chunk by chunk");
            None
        }
    };
    if listed.is_none() && possible > 100_000 {
        return Ok(stats);
    }
    if possible > max_walked {
        // Count the listed chunk keys without asking for their sizes.
        stats.present = listed.map(|l| count_chunk_keys(metadata, &grid, l.iter()));
        return Ok(stats);
    }
    let element = metadata.data_type.fixed_size().map(|s| s as u64);
    let mut present = Vec::new();
    let mut decoded = 0u64;
    for chunk in grid_indices(&grid) {
        let relative = metadata.chunk_key(&chunk);
        if listed.as_ref().is_none_or(|l| l.contains(&relative)) {
            present.push((chunk, relative));
        }
    }
    let sizes: Vec<(Vec<u64>, Option<u64>)> = futures::stream::iter(present)
        .map(|(chunk, relative)| {
            let key = StoreKey::try_new(format!("{}{relative}", prefix.as_str()));
            let store = Arc::clone(store);
            async move {
                let key = key?;
                let size = store.size(&key).await?;
                Ok::<_, anyhow::Error>((chunk, size))
            }
        })
        .buffer_unordered(64)
        .try_collect()
        .await?;
    let mut count = 0;
    let mut stored = 0;
    for (chunk, size) in sizes {
        if let Some(size) = size {
            count += 1;
            stored += size;
            if let Some(element) = element {
                let shape = metadata.chunk_grid.chunk_shape(&metadata.shape, &chunk)?;
                decoded += shape.iter().product::<u64>() * element;
            }
        }
    }
    stats.present = Some(count);
    stats.stored_bytes = Some(stored);
    stats.decoded_bytes = element.map(|_| decoded);
    Ok(stats)
}

/// How many of `keys` (relative to the array's prefix) are keys of chunks in `grid`: not the
/// metadata documents (`.zarray`, `.zattrs` of a Zarr v2 array) or anything else stored there.
fn count_chunk_keys<'a>(
    metadata: &ArrayMetadata,
    grid: &[u64],
    keys: impl Iterator<Item = &'a String>,
) -> u64 {
    let encoding = &metadata.chunk_key_encoding;
    keys.filter(|key| {
        encoding
            .decode(key, grid.len())
            .is_some_and(|chunk| chunk.iter().zip(grid).all(|(i, n)| i < n))
    })
    .count() as u64
}

/// `1.5 MiB (1572864 bytes)`.
pub(crate) fn bytes_text(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64;
    let mut unit = "B";
    for u in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = u;
    }
    format!("{value:.1} {unit} ({n} bytes)")
}

pub(crate) async fn run(args: InfoArgs) -> Result<()> {
    let target = resolve(&args.target, Access::Read)?;
    match target.node().await? {
        Node::Array(array) => {
            let stats = chunk_stats(&array)
                .await
                .with_context(|| format!("counting the chunks of {}", target.describe()))?;
            if args.json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&array_json(&array, &stats)?)?
                );
            } else {
                print_array(&target.describe(), &array, &stats)?;
            }
        }
        Node::Group(group) => {
            let children = walk::children(&group)
                .await
                .with_context(|| format!("listing the children of {}", target.describe()))?;
            if args.json {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&group_json(&group, &children))?
                );
            } else {
                print_group(&target.describe(), &group, &children)?;
            }
            let broken: Vec<String> = children
                .iter()
                .filter(|c| c.node.is_err())
                .map(|c| c.path.as_str().to_owned())
                .collect();
            if !broken.is_empty() {
                bail!(
                    "{}: {}; the other children are shown",
                    target.describe(),
                    walk::broken_summary(&broken)
                );
            }
        }
    }
    Ok(())
}

fn array_json(array: &Array<dyn Store>, stats: &ChunkStats) -> Result<Value> {
    let metadata = array.metadata();
    let layout = Layout::of(metadata)?;
    let mut out = Map::new();
    out.insert("path".into(), array.path().as_str().into());
    out.insert("node_type".into(), "array".into());
    // The format it is stored in; `metadata` is its v3 description either way.
    out.insert("format".into(), format_number(array.zarr_format()).into());
    out.insert("metadata".into(), metadata.to_value()?);
    out.insert("grid_shape".into(), json!(array.grid_shape()?));
    if let Some(inner) = &layout.inner {
        out.insert("shard_shape".into(), json!(layout.grid));
        out.insert("inner_chunk_shape".into(), json!(inner));
    }
    out.insert("num_elements".into(), metadata.num_elements()?.into());
    out.insert(
        "chunks".into(),
        json!({"possible": stats.possible, "present": stats.present}),
    );
    out.insert("stored_bytes".into(), json!(stats.stored_bytes));
    out.insert("decoded_bytes".into(), json!(stats.decoded_bytes));
    out.insert("compression_ratio".into(), json!(stats.ratio()));
    Ok(Value::Object(out))
}

fn print_array(name: &str, array: &Array<dyn Store>, stats: &ChunkStats) -> Result<()> {
    let metadata: &ArrayMetadata = array.metadata();
    outln!("array        {name}");
    outln!("path         {}", array.path());
    if array.zarr_format() == zarr::metadata::v2::ZarrFormat::V2 {
        outln!("format       Zarr v2 (.zarray, shown as its v3 equivalent)");
    }
    outln!("shape        {}", shape_text(&metadata.shape));
    outln!("data type    {}", metadata.data_type);
    let grid = array.grid_shape()?;
    match &metadata.chunk_grid {
        ChunkGrid::Regular(_) => outln!("chunking     {}", chunking_text(metadata)),
        ChunkGrid::RegularBounded(_) => outln!(
            "chunking     {}, cut at the array's end (zarrs.regular_bounded)",
            chunking_text(metadata)
        ),
        ChunkGrid::Rectilinear(_) => outln!(
            "chunking     rectilinear {}",
            metadata.chunk_grid.to_json()["configuration"]["chunk_shapes"]
        ),
    }
    let sharded = Layout::of(metadata)?.inner.is_some();
    let kind = if sharded { "shards" } else { "chunks" };
    outln!("grid         {} {kind}", shape_text(&grid));
    outln!(
        "chunk keys   {} (first: {})",
        metadata.chunk_key_encoding.to_json()["name"]
            .as_str()
            .unwrap_or("?"),
        metadata.chunk_key(&vec![0; metadata.rank()])
    );
    let layout = Layout::of(metadata)?;
    let codecs = if layout.inner.is_some() {
        let config = metadata.codecs[0].configuration_or_empty();
        outln!(
            "sharding     {}, index at the {}; inner chunks use the codecs below",
            crate::layout::SHARDING,
            config
                .get("index_location")
                .and_then(Value::as_str)
                .unwrap_or("end")
        );
        &layout.codecs
    } else {
        &metadata.codecs
    };
    for (i, codec) in codecs.iter().enumerate() {
        let label = if i == 0 { "codecs" } else { "" };
        outln!("{label:<12} {}", codec_text(codec));
    }
    outln!(
        "fill value   {}",
        metadata.fill_value.to_json(&metadata.data_type)?
    );
    if let Some(names) = &metadata.dimension_names {
        let names: Vec<&str> = names.iter().map(|n| n.as_deref().unwrap_or("-")).collect();
        outln!("dimensions   {}", names.join(", "));
    }
    for t in &metadata.storage_transformers {
        outln!("transformer  {}", codec_text(t));
    }
    match stats.present {
        Some(present) => outln!(
            "stored       {present} of {} {kind}{}",
            stats.possible,
            if present < stats.possible {
                " (the others read as the fill value)"
            } else {
                ""
            }
        ),
        None => outln!("stored       ? of {} {kind}", stats.possible),
    }
    if let Some(bytes) = stats.stored_bytes {
        outln!("stored bytes {}", bytes_text(bytes));
    }
    if let Some(ratio) = stats.ratio() {
        outln!("ratio        {ratio:.2} (decoded bytes of the stored {kind} / stored bytes)");
    }
    print_attributes(&metadata.attributes)?;
    Ok(())
}

fn child_summary(node: &Node<dyn Store>) -> String {
    match node {
        Node::Array(a) => {
            let m = a.metadata();
            format!(
                "array {} {} ({})",
                m.data_type.name(),
                shape_text(&m.shape),
                chunking_text(m)
            )
        }
        Node::Group(_) => "group".to_owned(),
    }
}

fn print_group(
    name: &str,
    group: &Group<dyn Store>,
    children: &[Found<Node<dyn Store>>],
) -> Result<()> {
    outln!("group        {name}");
    outln!("path         {}", group.path());
    if group.zarr_format() == zarr::metadata::v2::ZarrFormat::V2 {
        outln!("format       Zarr v2 (.zgroup)");
    }
    print_attributes(group.attributes())?;
    if let Some(consolidated) = &group.metadata().consolidated_metadata {
        outln!(
            "consolidated metadata for {} nodes",
            consolidated.metadata.len()
        );
    }
    if children.is_empty() {
        outln!("children     (none)");
    }
    for (i, child) in children.iter().enumerate() {
        let label = if i == 0 { "children" } else { "" };
        let name = child.name();
        match &child.node {
            Ok(node @ Node::Group(_)) => outln!("{label:<12} {name}/  {}", child_summary(node)),
            Ok(node @ Node::Array(_)) => outln!("{label:<12} {name}  {}", child_summary(node)),
            Err(err) => outln!("{label:<12} {name}  (error: {err})"),
        }
    }
    Ok(())
}

fn group_json(group: &Group<dyn Store>, children: &[Found<Node<dyn Store>>]) -> Value {
    let kids: Vec<Value> = children
        .iter()
        .map(|child| match &child.node {
            Ok(Node::Array(a)) => json!({
                "name": child.name(),
                "node_type": "array",
                "shape": a.metadata().shape,
                "data_type": a.metadata().data_type.name(),
            }),
            Ok(Node::Group(_)) => json!({"name": child.name(), "node_type": "group"}),
            Err(err) => json!({"name": child.name(), "error": err}),
        })
        .collect();
    json!({
        "path": group.path().as_str(),
        "node_type": "group",
        "format": format_number(group.zarr_format()),
        "metadata": group.metadata().to_value(),
        "children": kids,
    })
}

/// 2 or 3.
fn format_number(format: zarr::metadata::v2::ZarrFormat) -> u8 {
    match format {
        zarr::metadata::v2::ZarrFormat::V2 => 2,
        zarr::metadata::v2::ZarrFormat::V3 => 3,
    }
}

fn print_attributes(attributes: &Map<String, Value>) -> Result<()> {
    if attributes.is_empty() {
        outln!("attributes   (none)");
        return Ok(());
    }
    outln!("attributes");
    for (key, value) in attributes {
        outln!("  {key}: {value}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_indices_are_c_order() {
        let all: Vec<_> = grid_indices(&[2, 3]).collect();
        assert_eq!(all.len(), 6);
        assert_eq!(all[0], [0, 0]);
        assert_eq!(all[1], [0, 1]);
        assert_eq!(all[5], [1, 2]);
        assert_eq!(
            grid_indices(&[]).collect::<Vec<_>>(),
            vec![Vec::<u64>::new()]
        );
        assert_eq!(grid_indices(&[0, 4]).count(), 0);
    }

    /// Above the walking threshold only chunk keys count: not a Zarr v2 array's `.zarray`
    /// and `.zattrs`, nor other files, nor keys outside the grid.
    #[test]
    fn a_grid_too_large_to_walk_counts_only_chunk_keys() {
        use zarr::metadata::v2::ZarrFormat;
        use zarr::store::{MemoryStore, WritableStore as _};

        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            for format in [ZarrFormat::V2, ZarrFormat::V3] {
                let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
                let array = zarr::array::ArrayBuilder::new(
                    vec![4, 6],
                    zarr::metadata::DataType::UInt8,
                    vec![2, 2],
                )
                .zarr_format(format)
                .attribute("units", "m")
                .create(Arc::clone(&store), "/a")
                .await
                .unwrap();
                array.write([0..2, 0..4], &[1u8; 8]).await.unwrap();
                let stray = |name: &str| StoreKey::try_new(format!("a/{name}")).unwrap();
                for name in ["notes.txt", "c/9/9", "9.9", "c/0/0/0", "0.0.0"] {
                    store.set(&stray(name), vec![1].into()).await.unwrap();
                }
                let walked = chunk_stats(&array).await.unwrap();
                let counted = chunk_stats_walking(&array, 0).await.unwrap();
                assert_eq!(
                    (walked.possible, walked.present, counted.present),
                    (6, Some(2), Some(2)),
                    "{format:?}"
                );
            }
        });
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(bytes_text(10), "10 B");
        assert_eq!(bytes_text(1536), "1.5 KiB (1536 bytes)");
    }
}
