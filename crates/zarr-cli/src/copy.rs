//! `zarr copy`: copy arrays and groups between stores, changing the layout on the way.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use futures::{StreamExt as _, TryStreamExt as _};
use zarr::array::{Array, ArrayBuilder, ArrayBytes, Group, Node};
use zarr::codecs::{BytesToBytesCodec, Lz4Codec, N5DefaultCodec, N5Lz4Codec};
use zarr::metadata::v2::ZarrFormat;
use zarr::metadata::{
    ArrayMetadata, ChunkGrid, ChunkKeyEncoding, ChunkKeySeparator, DataType, ExtensionObject,
    FillValue, GroupMetadata, NodeMetadata, NodePath,
};
use zarr::store::{ReadableStoreExt as _, Store, StoreKey, StorePrefix};

use crate::cast;
use crate::create::{note_unlisted, parse_data_type};
use crate::layout::{Grid, Layout, check_inner_divides, chosen_codecs, chunking_text, shape_text};
use crate::progress::{bar, note};
use crate::region::{element_index, element_text};
use crate::target::{Occupant, Target, resolve_pair};
use crate::{Global, usage};

/// Arguments of `zarr copy`.
#[derive(Args, Debug)]
pub(crate) struct CopyArgs {
    /// The source: a local path or a URL.
    src: String,
    /// The destination: a local path or a URL.
    dst: String,
    /// The source node's path inside SRC (SRC is then the store root).
    #[arg(long, value_name = "NODE")]
    src_path: Option<String>,
    /// The destination node's path inside DST (DST is then the store root).
    #[arg(long, value_name = "NODE")]
    dst_path: Option<String>,
    #[command(flatten)]
    layout: LayoutArgs,
    /// Convert the elements to this data type (bool, integers, float16/32/64; a value that
    /// does not fit exactly is an error, except that floats narrow with rounding).
    #[arg(long, visible_alias = "dtype", value_name = "TYPE")]
    data_type: Option<String>,
    /// The most data a block holds (whole destination chunks, at least one; of shards too
    /// large, whole inner chunks); two blocks are in memory at a time.
    #[arg(long, default_value = "64M", value_parser = crate::region::parse_size, value_name = "SIZE")]
    block_size: u64,
    /// Replace whatever is at the destination.
    #[arg(long, conflicts_with = "resume")]
    overwrite: bool,
    /// Continue an interrupted copy: keep the destination (its metadata must be what this
    /// copy would write) and skip blocks whose destination chunks are all stored. A copy
    /// with --resume that fails keeps what it copied, for the next --resume.
    #[arg(long)]
    resume: bool,
    /// The format to write: 3 (`zarr.json`), or 2 (`.zarray`/`.zgroup`, for readers that
    /// know only Zarr v2: no sharding, so give `--shards none` for a sharded source;
    /// dimension names go to xarray's `_ARRAY_DIMENSIONS` attribute; chunk keys `0.1`
    /// unless the source's are v2 keys already).
    #[arg(long, value_name = "2|3", default_value = "3", value_parser = ["2", "3"])]
    zarr_format: String,
}

/// The destination's layout, when it is not the source's.
#[derive(Args, Debug)]
pub(crate) struct LayoutArgs {
    /// The destination chunk shape (the inner chunk shape when sharded), or a rectilinear
    /// grid as JSON `chunk_shapes` (see `zarr create --chunks`; unsharded then).
    #[arg(long)]
    chunks: Option<String>,
    /// The destination shard shape, a rectilinear grid of shards as JSON `chunk_shapes`, or
    /// `none` for no sharding.
    #[arg(long)]
    shards: Option<String>,
    /// Replace the codecs: zstd[:LEVEL], gzip[:LEVEL], blosc[:CNAME[:LEVEL]],
    /// lz4[:ACCELERATION], crc32c or none, in order; repeat for a compressor and crc32c (one compressor at most; `none` only
    /// alone).
    #[arg(long = "codec", value_name = "CODEC")]
    codecs: Vec<String>,
    /// Replace the codecs with this list, as JSON as `zarr.json` holds it (the inner chunks'
    /// codecs when sharded), or `@FILE`: any registered codec (see `zarr create --codecs`).
    #[arg(long = "codecs", value_name = "JSON", conflicts_with = "codecs")]
    codecs_json: Option<String>,
}

impl LayoutArgs {
    /// Whether any of the layout flags is given.
    pub(crate) fn is_given(&self) -> bool {
        self.chunks.is_some()
            || self.shards.is_some()
            || !self.codecs.is_empty()
            || self.codecs_json.is_some()
    }
}

/// The per-array choices, parsed once.
pub(crate) struct Plan {
    /// `--chunks` and the text given for it.
    chunks: Option<(Grid, String)>,
    /// `None`: as the source; `Some(None)`: no sharding; `Some(Some(grid))`: these shards.
    shards: Option<Option<(Grid, String)>>,
    codecs: Vec<String>,
    /// `--codecs JSON`, which replaces `codecs` when given.
    codecs_json: Option<String>,
    data_type: Option<DataType>,
    overwrite: bool,
    resume: bool,
    block_size: u64,
    /// Copying a group: `--chunks` and `--shards` apply to the arrays of their rank only.
    group: bool,
    /// The format of everything written.
    format: ZarrFormat,
    /// Whether the destination is an N5 container: arrays are laid out as N5 datasets.
    pub(crate) n5: bool,
}

impl Plan {
    /// A plan for arrays laid out as `layout` says, in `format`, with everything else as in
    /// the source.
    pub(crate) fn new(layout: &LayoutArgs, format: ZarrFormat, block_size: u64) -> Result<Self> {
        Ok(Self {
            chunks: match layout.chunks.as_deref() {
                Some(text) => Some((Grid::parse(text, "--chunks")?, text.to_owned())),
                None => None,
            },
            shards: match layout.shards.as_deref() {
                None => None,
                Some("none") => Some(None),
                Some(text) => Some(Some((Grid::parse(text, "--shards")?, text.to_owned()))),
            },
            codecs: layout.codecs.clone(),
            codecs_json: layout.codecs_json.clone(),
            data_type: None,
            overwrite: false,
            resume: false,
            block_size,
            group: false,
            format,
            n5: false,
        })
    }
}

pub(crate) async fn run(args: CopyArgs, global: Global) -> Result<()> {
    let format = if args.zarr_format == "2" {
        ZarrFormat::V2
    } else {
        ZarrFormat::V3
    };
    let (src, dst) = resolve_pair(
        (&args.src, args.src_path.as_deref()),
        (&args.dst, args.dst_path.as_deref()),
    )?;
    if dst.n5 && format == ZarrFormat::V2 {
        usage!(
            "{}: an N5 container holds no Zarr v2 metadata",
            dst.describe()
        );
    }
    let plan = Plan {
        data_type: args.data_type.as_deref().map(parse_data_type).transpose()?,
        overwrite: args.overwrite,
        resume: args.resume,
        n5: dst.n5,
        ..Plan::new(&args.layout, format, args.block_size)?
    };
    let mut undo = Undo::new("copy");
    match copy(&src, &dst, plan, global, &mut undo).await {
        Ok(()) => dst.finish(),
        Err(err) => Err(undo.apply(err, &dst).await),
    }
}

/// What a copy (or another command that writes a new node from a source) that fails
/// leaves behind.
pub(crate) struct Undo {
    /// What failed: "copy", "pyramid".
    what: &'static str,
    /// What the command wrote; `None` until it starts writing the destination.
    pub(crate) written: Option<Written>,
}

pub(crate) enum Written {
    /// Everything at the destination's prefix is this copy's (the place was empty, or
    /// `--overwrite` erased it): erase it, and the metadata documents of the groups above
    /// it that this copy created (`ancestors`, deepest first, those that were missing).
    Erase {
        ancestors: Vec<StoreKey>,
        replaced: bool,
    },
    /// `--resume`: keep what was copied, for the next `--resume`.
    Keep,
}

impl Undo {
    pub(crate) fn new(what: &'static str) -> Self {
        Self {
            what,
            written: None,
        }
    }

    /// Clean up after `err`, and say in the error what was done.
    pub(crate) async fn apply(self, err: anyhow::Error, dst: &Target) -> anyhow::Error {
        let what = self.what;
        match self.written {
            None => {
                dst.remove_created_dirs();
                err
            }
            Some(Written::Keep) => err.context(format!(
                "{}: the {what} failed; what it copied is kept: run the same command with \
                 --resume to finish it",
                dst.describe()
            )),
            Some(Written::Erase {
                ancestors,
                replaced,
            }) => match erase_written(dst, &ancestors).await {
                Ok(()) => {
                    dst.remove_created_dirs();
                    err.context(format!(
                        "{}: the {what} failed, and the partial destination was removed{}",
                        dst.describe(),
                        if replaced {
                            " (the old destination was erased by --overwrite before the copy)"
                        } else {
                            ""
                        }
                    ))
                }
                Err(cleanup) => err.context(format!(
                    "{}: the {what} failed, and removing the partial destination failed too \
                     ({}); remove it{}",
                    dst.describe(),
                    crate::one_line(&cleanup),
                    if what == "copy" {
                        ", or finish it with --resume"
                    } else {
                        ""
                    }
                )),
            },
        }
    }
}

/// Erase the destination's prefix, then the metadata documents `ancestors`.
async fn erase_written(dst: &Target, ancestors: &[StoreKey]) -> Result<()> {
    let prefix = StorePrefix::try_new(NodePath::new(&dst.path)?.prefix())?;
    dst.store
        .erase_prefix(&prefix)
        .await
        .with_context(|| format!("erasing {}", dst.describe()))?;
    for key in ancestors {
        dst.store
            .erase(key)
            .await
            .with_context(|| format!("erasing {key}"))?;
    }
    Ok(())
}

/// Erase the node at `path` in `dst`, and everything below it, for `--overwrite`: through
/// the group above when there is one, so that the consolidated records above forget the
/// node instead of going on listing its old metadata.
pub(crate) async fn erase_destination(dst: &Target, path: &NodePath) -> Result<()> {
    let erasing = || format!("erasing {}", dst.describe());
    if let (Some(parent), Some(name)) = (path.parent(), path.name())
        && let Ok(mut group) = Group::open(Arc::clone(&dst.store), parent.as_str()).await
    {
        match group.remove(name).await {
            Ok(()) => return Ok(()),
            // No metadata document there (files of something else): erased below.
            Err(zarr::array::Error::NodeNotFound { .. }) => {}
            Err(err) => return Err(anyhow::Error::new(err).context(erasing())),
        }
    }
    dst.store
        .erase_prefix(&StorePrefix::try_new(path.prefix())?)
        .await
        .with_context(erasing)
}

/// The metadata documents that creating a node at `path` writes above it: those of the
/// groups above that have none yet (deepest first).
pub(crate) async fn missing_ancestors(dst: &Target, path: &NodePath) -> Result<Vec<StoreKey>> {
    const DOCUMENTS: [&str; 3] = ["zarr.json", ".zarray", ".zgroup"];
    let mut missing = Vec::new();
    for ancestor in path.ancestors().iter().rev() {
        let prefix = ancestor.prefix();
        let mut absent = Vec::new();
        for name in DOCUMENTS.iter().chain([&".zattrs"]) {
            let key = StoreKey::try_new(format!("{prefix}{name}"))?;
            if !dst
                .store
                .exists(&key)
                .await
                .with_context(|| format!("reading {key} in {}", dst.describe()))?
            {
                absent.push(key);
            }
        }
        // No metadata document: creating the node writes one (and for Zarr v2 `.zattrs`).
        if DOCUMENTS
            .iter()
            .all(|name| absent.iter().any(|key| key.as_str().ends_with(name)))
        {
            missing.extend(absent);
        }
    }
    Ok(missing)
}

/// Copy `src` to `dst`, recording in `undo` what is written.
async fn copy(
    src: &Target,
    dst: &Target,
    mut plan: Plan,
    global: Global,
    undo: &mut Undo,
) -> Result<()> {
    let started = Instant::now();
    if src.overlaps(dst) {
        usage!(
            "{} and {} overlap (the same node, or one inside the other): a copy would read \
             what it writes{}; copy to another place",
            src.describe(),
            dst.describe(),
            if plan.overwrite {
                ", and --overwrite would erase the source"
            } else {
                ""
            }
        );
    }
    let dst_path = NodePath::new(&dst.path)?;
    let occupant = dst.occupant().await?;
    dst.refuse_foreign(&occupant)?;
    // A node whose metadata does not parse counts: --overwrite replaces it.
    let exists = occupant == Occupant::Node;
    if exists && !plan.overwrite && !plan.resume {
        usage!(
            "{} already exists; use --overwrite to replace it or --resume to continue a copy",
            dst.describe()
        );
    }
    // Open the source and plan every array before the destination changes, so that a copy
    // that cannot be made leaves an existing destination as it was.
    let source = src.node().await?;
    let group_nodes = match &source {
        Node::Array(array) => {
            destination_metadata(array.metadata(), array.zarr_format(), &plan)
                .with_context(|| format!("planning the copy of {}", array.path()))?;
            None
        }
        Node::Group(group) => {
            let nodes = group
                .tree()
                .await
                .with_context(|| format!("walking {}", src.describe()))?;
            plan.group = true;
            for (path, metadata) in &nodes {
                if let NodeMetadata::Array(metadata) = metadata {
                    destination_metadata(metadata, group.zarr_format(), &plan)
                        .with_context(|| format!("planning the copy of {path}"))?;
                }
            }
            Some(nodes)
        }
    };
    if exists && plan.overwrite && plan.data_type.is_some() {
        // A value that does not convert would stop the copy half-way, with the old
        // destination gone: convert everything once first.
        check_conversions(&source, group_nodes.as_deref(), src, &plan)
            .await
            .context("nothing was erased")?;
    }
    // From here on the destination changes. A copy that fails removes what it wrote, which
    // is everything at the destination unless --resume kept an earlier copy there.
    undo.written = Some(if plan.resume {
        Written::Keep
    } else {
        Written::Erase {
            ancestors: missing_ancestors(dst, &dst_path).await?,
            replaced: exists,
        }
    });
    if exists && plan.overwrite {
        erase_destination(dst, &dst_path).await?;
    }
    match source {
        Node::Array(array) => {
            copy_array(&array, dst, &dst.path, &plan, global).await?;
            note_unlisted(&dst.store, &dst_path, "array", global).await;
            note(
                global,
                &format!(
                    "copied {} to {} in {:.1} s",
                    src.describe(),
                    dst.describe(),
                    started.elapsed().as_secs_f64()
                ),
            );
        }
        Node::Group(group) => {
            let nodes = group_nodes.unwrap_or_default();
            create_group(dst, &dst.path, group.metadata(), plan.format).await?;
            let base = group.path().names().count();
            let mut arrays = 0;
            for (path, metadata) in nodes {
                let relative: Vec<&str> = path.names().skip(base).collect();
                let mut target_path = dst_path.clone();
                for name in &relative {
                    target_path = target_path.child(name)?;
                }
                match metadata {
                    NodeMetadata::Group(g) => {
                        create_group(dst, target_path.as_str(), &g, plan.format).await?;
                    }
                    NodeMetadata::Array(_) => {
                        let array = Array::open(Arc::clone(&src.store), path.as_str())
                            .await
                            .with_context(|| format!("opening {path} in {}", src.describe()))?;
                        copy_array(&array, dst, target_path.as_str(), &plan, global).await?;
                        arrays += 1;
                    }
                }
            }
            note_unlisted(&dst.store, &dst_path, "group", global).await;
            note(
                global,
                &format!(
                    "copied {} ({arrays} arrays) to {} in {:.1} s",
                    src.describe(),
                    dst.describe(),
                    started.elapsed().as_secs_f64()
                ),
            );
        }
    }
    Ok(())
}

/// Convert every value of the arrays to copy without writing anything: whether a copy with
/// `--data-type` can finish.
async fn check_conversions(
    source: &Node<dyn Store>,
    nodes: Option<&[(NodePath, NodeMetadata)]>,
    src: &Target,
    plan: &Plan,
) -> Result<()> {
    let arrays = match (source, nodes) {
        (Node::Array(array), _) => vec![array.clone()],
        (Node::Group(_), Some(nodes)) => {
            let mut arrays = Vec::new();
            for (path, metadata) in nodes {
                if matches!(metadata, NodeMetadata::Array(_)) {
                    arrays.push(
                        Array::open(Arc::clone(&src.store), path.as_str())
                            .await
                            .with_context(|| format!("opening {path} in {}", src.describe()))?,
                    );
                }
            }
            arrays
        }
        (Node::Group(_), None) => Vec::new(),
    };
    for array in arrays {
        let metadata = destination_metadata(array.metadata(), array.zarr_format(), plan)?;
        let (from, to) = (&array.metadata().data_type, &metadata.data_type);
        if from == to {
            continue;
        }
        let element = from
            .fixed_size()
            .unwrap_or(16)
            .max(to.fixed_size().unwrap_or(16)) as u64;
        for block in array.split_region(.., (plan.block_size / element).max(1))? {
            if let ArrayBytes::Fixed(bytes) = array
                .read_array_bytes(&block)
                .await
                .with_context(|| format!("reading {block} of {}", array.path()))?
            {
                cast::convert(&bytes, from, to, |i| {
                    element_text(&element_index(&block, i as u64))
                })
                .with_context(|| format!("converting {block} of {}", array.path()))?;
            }
        }
    }
    Ok(())
}

async fn create_group(
    dst: &Target,
    path: &str,
    source: &GroupMetadata,
    format: ZarrFormat,
) -> Result<()> {
    let metadata = GroupMetadata::new().with_attributes(source.attributes.clone());
    Group::create_with_format(Arc::clone(&dst.store), path, metadata, format)
        .await
        .with_context(|| format!("creating group {path} in {}", dst.describe()))?;
    Ok(())
}

/// The destination metadata for `src` under `plan`.
pub(crate) fn destination_metadata(
    src: &ArrayMetadata,
    src_format: ZarrFormat,
    plan: &Plan,
) -> Result<ArrayMetadata> {
    // An N5 dataset is planned from its metadata in Zarr's own layout.
    let unwrapped = n5_as_zarr(src)?;
    let from_n5 = unwrapped.is_some();
    let src = unwrapped.as_ref().unwrap_or(src);
    let source = Layout::of(src)?;
    let data_type = plan
        .data_type
        .clone()
        .unwrap_or_else(|| src.data_type.clone());
    let rank = src.shape.len();
    let v2 = plan.format == ZarrFormat::V2;
    // In a group copy, a layout of another rank is for other arrays.
    let fits = |(grid, _): &&(Grid, String)| !plan.group || grid.rank() == rank;
    let checked =
        |(grid, text): &(Grid, String), flag: &str| grid.clone().for_shape(&src.shape, text, flag);
    let chunk_flag = match plan.chunks.as_ref().filter(fits) {
        Some(flag) => Some(checked(flag, "--chunks")?),
        None => None,
    };
    let shard_flag = match &plan.shards {
        Some(Some(flag)) if fits(&flag) => Some(Some(checked(flag, "--shards")?)),
        Some(Some(_)) => None,
        Some(None) => Some(None),
        None => None,
    };
    // The copy's rectilinear grid, if it has one, and whether it is a grid of shards: given
    // by `--chunks` (unsharded) or `--shards`, or the source's, kept as it is (its shards,
    // when sharded) unless the copy changes the chunking.
    let rectilinear = match (&chunk_flag, &shard_flag, &src.chunk_grid) {
        (Some(Grid::Rectilinear(_)), Some(Some(_)), _) => usage!(
            "--chunks: the chunks inside shards are all of one shape; give the rectilinear \
             grid to --shards and a shape to --chunks"
        ),
        (Some(Grid::Rectilinear(_)), None, _) if source.inner.is_some() => usage!(
            "--chunks: the source is sharded, and the chunks inside shards are all of one \
             shape; give --shards none for a rectilinear grid of chunks"
        ),
        (Some(Grid::Rectilinear(grid)), _, _) => Some((grid.clone(), false)),
        (_, Some(Some(Grid::Rectilinear(grid))), _) => Some((grid.clone(), true)),
        // A `zarrs.regular_bounded` grid is kept like a rectilinear one.
        (None, None, grid @ (ChunkGrid::Rectilinear(_) | ChunkGrid::RegularBounded(_))) => {
            Some((grid.clone(), source.inner.is_some()))
        }
        _ => None,
    };
    if v2 && let Some((grid, _)) = &rectilinear {
        usage!(
            "Zarr v2 has only regular chunk grids, not {}{}",
            grid.to_json()["name"].as_str().unwrap_or("this grid"),
            if chunk_flag.is_none() && shard_flag.is_none() {
                "; the source has one: give --chunks (and --shards none if it is sharded)"
            } else {
                ""
            }
        );
    }
    let rectilinear_shards = matches!(rectilinear, Some((_, true)));
    // A stand-in for the rectilinear grid's chunk (or shard) shape while the layout is
    // planned; the grid replaces it in the metadata.
    let stand_in = vec![1; rank];
    let regular_chunks = match &chunk_flag {
        Some(Grid::Regular(chunks)) => Some(chunks),
        _ => None,
    };
    let chunks = match (regular_chunks, &source.inner, &source.grid) {
        _ if rectilinear.is_some() && !rectilinear_shards => stand_in.clone(),
        (Some(chunks), _, _) => chunks.clone(),
        (None, Some(inner), _) => inner.clone(),
        (None, None, Some(grid)) => grid.clone(),
        (None, None, None) => usage!(
            "the source has a rectilinear chunk grid, which a copy keeps only without \
             --chunks and --shards; give --chunks for the copy"
        ),
    };
    let shards = match &shard_flag {
        _ if rectilinear_shards => Some(stand_in.clone()),
        Some(Some(Grid::Regular(shards))) => Some(shards.clone()),
        // No sharding (a rectilinear grid of shards was taken above).
        Some(_) => None,
        None if source.inner.is_some() => source.grid.clone(),
        None => None,
    };
    if let Some(shards) = &shards {
        let what = if shard_flag.is_none() {
            "the source's shards (give --shards)"
        } else {
            "--shards"
        };
        let shards = match &rectilinear {
            Some((grid, true)) => Grid::Rectilinear(grid.clone()),
            _ => Grid::Regular(shards.clone()),
        };
        check_inner_divides(&chunks, &shards, &src.shape, what)?;
    }
    let codecs = match chosen_codecs(&plan.codecs, plan.codecs_json.as_deref(), None, &data_type)? {
        Some(codecs) => codecs,
        None => {
            if data_type != src.data_type && data_type.fixed_size().is_none() {
                bail!("cannot keep the source's codecs for {}", data_type.name());
            }
            source.codecs
        }
    };
    let layout = match shards {
        Some(shards) => Layout {
            grid: Some(shards),
            inner: Some(chunks),
            codecs,
        },
        None => Layout {
            grid: Some(chunks),
            inner: None,
            codecs,
        },
    };
    if v2 && layout.inner.is_some() {
        usage!(
            "Zarr v2 has no sharding{}; give --shards none",
            if shard_flag.is_none() {
                " and the source is sharded"
            } else {
                ""
            }
        );
    }
    let (grid, codecs) = layout.to_metadata_parts()?;
    let fill_value = if data_type == src.data_type {
        src.fill_value.clone()
    } else {
        FillValue::new(
            cast::convert(
                src.fill_value.as_bytes(),
                &src.data_type,
                &data_type,
                |_| "the fill value".to_owned(),
            )
            .with_context(|| format!("converting to {}", data_type.name()))?,
        )
    };
    let mut attributes = src.attributes.clone();
    let chunk_key_encoding = match &src.chunk_key_encoding {
        ChunkKeyEncoding::Default { .. } if v2 => ChunkKeyEncoding::V2 {
            separator: ChunkKeySeparator::Dot,
        },
        other => other.clone(),
    };
    if v2 && let Some(names) = &src.dimension_names {
        // Zarr v2 has no dimension names; xarray keeps them in an attribute, one per
        // dimension.
        let Some(names) = names.iter().cloned().collect::<Option<Vec<String>>>() else {
            bail!(
                "Zarr v2 cannot store dimension names {names:?}: xarray's \
                 `_ARRAY_DIMENSIONS` attribute needs a name for every dimension"
            );
        };
        attributes
            .entry("_ARRAY_DIMENSIONS")
            .or_insert_with(|| names.into());
    }
    let mut builder = ArrayBuilder::new(src.shape.clone(), data_type, grid);
    if let Some((grid, _)) = rectilinear {
        builder = builder.chunk_grid(grid);
    }
    let mut metadata = builder
        .codecs(codecs)
        .fill_value(fill_value)
        .chunk_key_encoding(chunk_key_encoding)
        .attributes(attributes)
        .zarr_format(plan.format)
        .build_metadata()?;
    if !v2 {
        metadata.dimension_names.clone_from(&src.dimension_names);
        if src_format == ZarrFormat::V2 || (from_n5 && src.dimension_names.is_none()) {
            // xarray keeps a v2 array's dimension names in an attribute and a v3 array's in
            // `dimension_names`: move them, so xarray sees the same dimensions in the copy.
            // (A v2 array's `dimension_names` come from that attribute; a copy to N5 keeps
            // them in it.)
            if let Some(names) = xarray_dimensions(&metadata.attributes, rank) {
                metadata.attributes.remove("_ARRAY_DIMENSIONS");
                metadata.dimension_names = Some(names.into_iter().map(Some).collect());
            }
        }
    }
    if plan.n5 {
        as_n5_dataset(&mut metadata)?;
    }
    Ok(metadata)
}

/// An N5 dataset's metadata (its one codec `n5_default`) in Zarr's own layout: the N5
/// compressor after little-endian `bytes` (the block's transpose and byte order are N5's),
/// and the default chunk keys. `None` for other arrays.
fn n5_as_zarr(src: &ArrayMetadata) -> Result<Option<ArrayMetadata>> {
    let [codec] = src.codecs.as_slice() else {
        return Ok(None);
    };
    if codec.name != "n5_default" {
        return Ok(None);
    }
    let inner = codec
        .configuration
        .as_ref()
        .and_then(|c| c.get("codecs"))
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut codecs = vec![ExtensionObject::with_configuration(
        "bytes",
        serde_json::Map::from_iter([("endian".to_owned(), "little".into())]),
    )];
    for (i, item) in inner.iter().enumerate().skip(2) {
        let mut codec = ExtensionObject::from_json(item, &format!("codecs[{i}]"))?;
        if codec.name == N5Lz4Codec::NAME {
            // lz4-java's block stream has no reader but this library: numcodecs' LZ4 (the
            // same compression in a format zarr-python reads) in its place.
            codec = Lz4Codec::default().to_metadata();
        }
        codecs.push(codec);
    }
    let mut plain = src.clone();
    plain.codecs = codecs;
    plain.chunk_key_encoding = ChunkKeyEncoding::default();
    Ok(Some(plain))
}

/// `metadata` laid out as an N5 dataset: its compressor inside `n5_default`, N5's block
/// paths, and dimension names in xarray's `_ARRAY_DIMENSIONS` attribute (N5 has no place
/// for them). A layout N5 cannot hold (sharding, other array codecs, more than one
/// compressor, another fill value than 0) is an error saying what to change.
pub(crate) fn as_n5_dataset(metadata: &mut ArrayMetadata) -> Result<()> {
    let names: Vec<&str> = metadata.codecs.iter().map(|c| c.name.as_str()).collect();
    if names.contains(&"sharding_indexed") {
        usage!("N5 blocks cannot be sharded: give --shards none");
    }
    let compressor = match metadata.codecs.as_slice() {
        [bytes] if bytes.name == "bytes" => None,
        [bytes, compressor] if bytes.name == "bytes" => Some(compressor.clone()),
        _ => usage!(
            "an N5 block holds its elements through at most one compressor, not the codecs {};              give --codec gzip, zstd, blosc, lz4 or none",
            names.join(", ")
        ),
    };
    if !matches!(metadata.chunk_grid, ChunkGrid::Regular(_)) {
        usage!("N5 blocks are all of one shape: give --chunks");
    }
    if metadata.fill_value.as_bytes().iter().any(|&b| b != 0) {
        bail!(
            "N5 has no fill value (blocks never written read as 0), and the source's is not 0:              copy to a Zarr store instead"
        );
    }
    // numcodecs' LZ4 becomes N5's own lz4 (lz4-java's block stream, N5's default block
    // size): what an N5 reader expects of an `lz4` dataset.
    let compressor = compressor.map(|codec| {
        if codec.name == crate::layout::LZ4 {
            N5Lz4Codec::default().to_metadata()
        } else {
            codec
        }
    });
    metadata.codecs = vec![N5DefaultCodec::default_metadata(
        metadata.shape.len(),
        compressor,
    )];
    metadata.chunk_key_encoding = ChunkKeyEncoding::V2 {
        separator: ChunkKeySeparator::Slash,
    };
    if let Some(names) = metadata.dimension_names.take() {
        let Some(names) = names.into_iter().collect::<Option<Vec<String>>>() else {
            bail!(
                "N5 cannot store dimension names with some unnamed: xarray's                  `_ARRAY_DIMENSIONS` attribute, where they go, needs a name for every dimension"
            );
        };
        metadata
            .attributes
            .entry("_ARRAY_DIMENSIONS")
            .or_insert_with(|| names.into());
    }
    Ok(())
}

/// xarray's `_ARRAY_DIMENSIONS` attribute when it names each of `rank` dimensions.
pub(crate) fn xarray_dimensions(
    attributes: &serde_json::Map<String, serde_json::Value>,
    rank: usize,
) -> Option<Vec<String>> {
    zarr::metadata::v2::dimension_names_from_attributes(attributes, rank)
        .map(|names| names.into_iter().flatten().collect())
}

async fn copy_array(
    src: &Array<dyn Store>,
    dst: &Target,
    path: &str,
    plan: &Plan,
    global: Global,
) -> Result<()> {
    let metadata = destination_metadata(src.metadata(), src.zarr_format(), plan)
        .with_context(|| format!("planning the copy of {}", src.path()))?;
    let existing = match Array::open(Arc::clone(&dst.store), path).await {
        Ok(existing) if plan.resume => Some(existing),
        _ => None,
    };
    let out: Array<dyn Store> = match existing {
        Some(existing) => {
            if *existing.metadata() != metadata {
                bail!(
                    "cannot resume: {path} in {} has other metadata than this copy would write \
                     (use --overwrite to start again)",
                    dst.describe()
                );
            }
            existing
        }
        None => ArrayBuilder::from_metadata(&metadata)
            .zarr_format(plan.format)
            .overwrite(plan.overwrite || plan.resume)
            .create(Arc::clone(&dst.store), path)
            .await
            .with_context(|| format!("creating {path} in {}", dst.describe()))?,
    };
    let from = src.metadata().data_type.clone();
    let to = metadata.data_type.clone();
    let (from, to) = (&from, &to);
    let element = from
        .fixed_size()
        .unwrap_or(16)
        .max(to.fixed_size().unwrap_or(16)) as u64;
    // Blocks of whole destination chunks, so that each is encoded and written once and
    // never read back. A destination sharded by the sharding codec may be cut along inner
    // chunks where one row of shards is larger than a block: the writer keeps each shard's
    // encoded inner chunks until it is whole, then stores it once.
    let max = (plan.block_size / element).max(1);
    let mut writer = out.shard_writer();
    let blocks = if writer.is_buffering() {
        out.split_region(.., max)?
    } else {
        out.split_region_whole_chunks(.., max)?
    };
    let progress = bar(global, blocks.len() as u64, &format!("copy {}", src.path()));
    // Each block is read (and converted) by a task of its own, the next one while this one
    // is written.
    let read = |block: zarr::array::Region| {
        let (src, out) = (src.clone(), out.clone());
        let (from, to) = (from.clone(), to.clone());
        let resume = plan.resume;
        Ahead(tokio::spawn(async move {
            if resume && all_stored(&out, &block).await? {
                return Ok::<_, anyhow::Error>((block, None));
            }
            let values = src
                .read_array_bytes(&block)
                .await
                .with_context(|| format!("reading {block} of {}", src.path()))?;
            let values = match values {
                ArrayBytes::Fixed(bytes) if from != to => ArrayBytes::fixed(
                    cast::convert(&bytes, &from, &to, |i| {
                        element_text(&element_index(&block, i as u64))
                    })
                    .with_context(|| format!("converting {block}"))?,
                ),
                other => other,
            };
            Ok((block, Some(values)))
        }))
    };
    let mut blocks = blocks.into_iter();
    let mut next = blocks.next().map(read);
    let mut skipped = 0;
    while let Some(mut task) = next.take() {
        let (block, values) = (&mut task.0)
            .await
            .map_err(|e| anyhow::anyhow!("a block's read task failed: {e}"))??;
        next = blocks.next().map(read);
        match values {
            Some(values) => writer
                .write_array_bytes(&block, values)
                .await
                .with_context(|| format!("writing {block} of {path}"))?,
            None => skipped += 1,
        }
        progress.inc(1);
    }
    writer
        .finish()
        .await
        .with_context(|| format!("storing the shards of {path} written in part"))?;
    progress.finish_and_clear();
    if skipped > 0 {
        note(
            global,
            &format!("{path}: skipped {skipped} blocks already copied"),
        );
    }
    note(
        global,
        &format!(
            "{path}: {} {} ({})",
            metadata.data_type.name(),
            shape_text(&metadata.shape),
            chunking_text(&metadata)
        ),
    );
    Ok(())
}

/// Whether every destination chunk of `block` is stored.
async fn all_stored(array: &Array<dyn Store>, block: &zarr::array::Region) -> Result<bool> {
    let metadata = array.metadata();
    let chunks: Vec<Vec<u64>> = metadata
        .chunk_grid
        .chunks_in_region(&metadata.shape, block)?
        .map(|selection| selection.chunk)
        .collect();
    let stored: Vec<bool> = futures::stream::iter(chunks)
        .map(|chunk| async move { array.chunk_exists(&chunk).await })
        .buffer_unordered(32)
        .try_collect()
        .await?;
    Ok(stored.into_iter().all(|s| s))
}

/// A spawned task aborted when dropped: an error that ends a copy stops the read of the
/// next block too.
struct Ahead<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for Ahead<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zarr::store::{MemoryStore, Operation, RecordingStore};

    /// A read ahead dropped (an error ended the copy) is stopped, not left running.
    #[test]
    fn a_read_ahead_dropped_stops() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let flag = Arc::clone(&done);
            let ahead = Ahead(tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
            }));
            tokio::task::yield_now().await;
            drop(ahead);
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            assert!(!done.load(std::sync::atomic::Ordering::SeqCst));
        });
    }

    /// A copy into shards larger than a block reads the source in blocks of inner chunk rows
    /// and stores each shard once, never reading the destination.
    #[test]
    fn copies_into_large_shards_store_each_shard_once() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let source = Arc::new(RecordingStore::new(MemoryStore::new()));
            let src = ArrayBuilder::new(vec![40, 30], DataType::UInt32, vec![10, 10])
                .create(Arc::clone(&source) as Arc<dyn Store>, "/s")
                .await
                .unwrap();
            let values: Vec<u32> = (0..1200).map(|i| i * 7 + 1).collect();
            src.write(.., &values).await.unwrap();
            source.clear();
            let store = Arc::new(RecordingStore::new(MemoryStore::new()));
            let dst = Target::in_memory(Arc::clone(&store) as Arc<dyn Store>, "/d");
            let layout = LayoutArgs {
                chunks: Some("4,30".into()),
                shards: Some("20,30".into()),
                codecs: vec!["zstd:1".into()],
                codecs_json: None,
            };
            // Blocks of 480 bytes: one row of inner chunks (4 x 30 x 4 bytes).
            let plan = Plan::new(&layout, ZarrFormat::V3, 480).unwrap();
            let global = Global {
                quiet: true,
                verbose: 0,
                threads: None,
                in_place_writes: false,
                durable: false,
            };
            copy_array(&src, &dst, "/d", &plan, global).await.unwrap();
            let mut sets = Vec::new();
            for operation in store.operations() {
                match operation {
                    Operation::Set { key, .. } if key.as_str().starts_with("d/c/") => {
                        sets.push(key.as_str().to_owned());
                    }
                    Operation::Get { key, .. } if key.as_str().starts_with("d/c/") => {
                        panic!("{key} read while copying")
                    }
                    Operation::GetPartialValues { requests, .. } => {
                        panic!("{requests:?} read while copying")
                    }
                    _ => {}
                }
            }
            assert_eq!(sets, ["d/c/0/0", "d/c/1/0"]);
            // Blocks of 4 rows read a 10-row source chunk row two or three times: more
            // than the 12 reads of blocks of whole shards.
            assert!(source.stats().gets > 12, "{:?}", source.stats());
            let copy = Array::open(Arc::clone(&store) as Arc<dyn Store>, "/d")
                .await
                .unwrap();
            assert_eq!(copy.inner_chunk_shape(), Some(&[4u64, 30][..]));
            assert_eq!(copy.read::<u32>(..).await.unwrap(), values);
        });
    }
}
