//! `zarr create`.

use anyhow::{Context, Result};
use clap::Args;
use serde_json::{Map, Value};
use std::sync::Arc;

use zarr::array::{ArrayBuilder, Group};
use zarr::metadata::v2::ZarrFormat;
use zarr::metadata::{ChunkKeyEncoding, DataType, FillValue, GroupMetadata, NodePath};
use zarr::store::{ReadableStore as _, Store, StoreKey};

use crate::layout::{Grid, Layout, check_inner_divides, chosen_codecs, shape_text};
use crate::progress::note;
use crate::region::parse_shape;
use crate::target::{Access, Occupant, Target, resolve};
use crate::{Global, TargetArgs, usage};

/// Arguments of `zarr create`.
#[derive(Args, Debug)]
pub(crate) struct CreateArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Create a group instead of an array (and any missing group above it); --attr and
    /// --zarr-format apply. A group already there is left as it is, with a note (asking it
    /// for attributes or a format is then an error: use `zarr attrs`).
    #[arg(long, conflicts_with_all = [
        "shape", "dtype", "chunks", "shards", "codecs", "codecs_json", "chunk_key_encoding",
        "fill_value", "dimension_names", "overwrite",
    ])]
    group: bool,
    /// The array's shape: `1000,1000` (`""` for a 0-d array).
    #[arg(long, allow_hyphen_values = true, required_unless_present = "group")]
    shape: Option<String>,
    /// The data type: bool, int8 ... int64, uint8 ... uint64, float16, float32, float64,
    /// complex64, complex128, bfloat16, string, bytes, ...
    #[arg(
        long,
        visible_alias = "data-type",
        value_name = "TYPE",
        required_unless_present = "group"
    )]
    dtype: Option<String>,
    /// The chunk shape: `100,100` (the inner chunk shape with --shards). Or a rectilinear
    /// grid, as JSON `chunk_shapes`: per dimension a regular length or a list of edge lengths,
    /// where `[SIZE,COUNT]` repeats one: `[[10,20,[30,3]],100]`. Default: the whole array, or
    /// halves of it along the longest dimensions while a chunk exceeds 1 MiB.
    #[arg(long)]
    chunks: Option<String>,
    /// Store chunks in shards of this shape, each a multiple of the chunk shape; or in a
    /// rectilinear grid of shards, given as --chunks gives one, every edge a multiple of the
    /// chunk shape.
    #[arg(long)]
    shards: Option<String>,
    /// A compression or checksum codec, in order: zstd[:LEVEL], gzip[:LEVEL],
    /// blosc[:CNAME[:LEVEL]], lz4[:ACCELERATION], crc32c, or none. Repeat for a compressor and crc32c (one
    /// compressor at most; `none` only alone). Default: zstd:3.
    #[arg(long = "codec", value_name = "CODEC")]
    codecs: Vec<String>,
    /// The whole codec list as JSON, as `zarr.json` holds it (the inner chunks' codecs with
    /// --shards), or `@FILE`: any registered codec, e.g.
    /// `[{"name":"packbits"}]` or `[{"name":"numcodecs.delta","configuration":{"dtype":"<i4"}},
    /// {"name":"bytes"},{"name":"zstd","configuration":{"level":3}}]`.
    #[arg(long = "codecs", value_name = "JSON", conflicts_with = "codecs")]
    codecs_json: Option<String>,
    /// How chunks are named in the store: `default` (`c/1/2`), `v2` (`1.2`), or the encoding
    /// as `zarr.json` holds it, e.g. `{"name":"suffix","configuration":{"suffix":".zst",
    /// "base_encoding":"default"}}`; also `prefix`, `fanout`, `template` and
    /// `zarrs.default_suffix` (see docs/metadata.md) [default: default, or v2 for Zarr v2].
    #[arg(long, value_name = "NAME|JSON")]
    chunk_key_encoding: Option<String>,
    /// The fill value, as JSON (`0`, `1.5`, `"NaN"`, `true`, `"text"`); a bare word is taken
    /// as a string (`NaN`, `Infinity`, text).
    #[arg(long, allow_hyphen_values = true)]
    fill_value: Option<String>,
    /// Dimension names, comma-separated: `y,x` (Zarr v2 keeps them in xarray's
    /// `_ARRAY_DIMENSIONS` attribute).
    #[arg(long, value_delimiter = ',')]
    dimension_names: Option<Vec<String>>,
    /// An attribute, `KEY=JSON` (a value that is not JSON is a string). Repeat for several.
    #[arg(long = "attr", value_name = "KEY=VALUE")]
    attributes: Vec<String>,
    /// Replace a node that is already there (its chunks are erased).
    #[arg(long)]
    overwrite: bool,
    /// The format to write: 3 (`zarr.json`), or 2 (`.zarray`, for readers that know only
    /// Zarr v2; no --shards then) [default: the parent group's, else 3].
    #[arg(long, value_name = "2|3", value_parser = ["2", "3"])]
    zarr_format: Option<String>,
}

/// 2 or 3.
fn format_number(format: ZarrFormat) -> u8 {
    match format {
        ZarrFormat::V2 => 2,
        _ => 3,
    }
}

/// The format of a new node at `path`: `requested` (`"2"` or `"3"`), or else the nearest
/// existing group's above it, or else v3. A node of the other format than the group above
/// it would be invisible to readers that open the hierarchy: a usage error.
async fn chosen_format(
    target: &Target,
    path: &NodePath,
    requested: Option<&str>,
    kind: &str,
) -> Result<ZarrFormat> {
    let mut parent_format = None;
    for ancestor in path.ancestors().iter().rev() {
        if let Ok(group) = Group::open(Arc::clone(&target.store), ancestor.as_str()).await {
            parent_format = Some((ancestor.clone(), group.zarr_format()));
            break;
        }
    }
    let format = match (requested, &parent_format) {
        (Some("2"), _) => ZarrFormat::V2,
        (Some(_), _) => ZarrFormat::V3,
        (None, Some((_, format))) => *format,
        (None, None) => ZarrFormat::V3,
    };
    if let Some((group, parent)) = &parent_format
        && *parent != format
    {
        usage!(
            "the group {group} above is Zarr v{}: a Zarr v{} {kind} below it would be invisible \
             to readers that open the hierarchy (zarr-python); leave --zarr-format out to match it",
            format_number(*parent),
            format_number(format)
        );
    }
    Ok(format)
}

/// The bytes a default chunk holds at most (`--chunks` not given).
const DEFAULT_CHUNK_BYTES: u64 = 1 << 20;

/// A chunk shape for `shape` when none is given: the whole array while it holds at most
/// [`DEFAULT_CHUNK_BYTES`], else the largest dimension halved (rounding up) until it does.
fn default_chunks(shape: &[u64], element: u64) -> Vec<u64> {
    let mut chunks: Vec<u64> = shape.iter().map(|&n| n.max(1)).collect();
    let bytes = |c: &[u64]| {
        c.iter()
            .try_fold(element.max(1), |acc, &n| acc.checked_mul(n))
            .unwrap_or(u64::MAX)
    };
    while bytes(&chunks) > DEFAULT_CHUNK_BYTES {
        let Some((d, _)) = chunks
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n > 1)
            .max_by_key(|&(d, &n)| (n, std::cmp::Reverse(d)))
        else {
            break;
        };
        chunks[d] = chunks[d].div_ceil(2);
    }
    chunks
}

/// The groups above `path` that hold consolidated metadata (a v3 `consolidated_metadata`
/// record, or a v2 `.zmetadata`), which a new node does not appear in until re-consolidated.
async fn consolidated_ancestors(store: &Arc<dyn Store>, path: &NodePath) -> Vec<NodePath> {
    let mut out = Vec::new();
    for ancestor in path.ancestors() {
        let Ok(group) = Group::open(Arc::clone(store), ancestor.as_str()).await else {
            continue;
        };
        let zmetadata = StoreKey::new(&format!("{}.zmetadata", ancestor.prefix()));
        let v2_record = matches!(store.get(&zmetadata).await, Ok(Some(_)));
        if group.metadata().consolidated_metadata.is_some() || v2_record {
            out.push(ancestor);
        }
    }
    out
}

/// A note for each group above `path` whose consolidated metadata does not list the new
/// node (`kind`: array or group) until it is consolidated again.
pub(crate) async fn note_unlisted(
    store: &Arc<dyn Store>,
    path: &NodePath,
    kind: &str,
    global: Global,
) {
    for group in consolidated_ancestors(store, path).await {
        note(
            global,
            &format!(
                "note: the group {group} has consolidated metadata, which does not list the \
                 new {kind} until `zarr consolidate` records it again"
            ),
        );
    }
}

/// The Zarr name of a numpy spelling of a data type (`f4`, `<f4`, `float`, `i8`, `?`), if
/// it is one. Byte order is the codecs' business in Zarr v3, so `<` and `>` both name the
/// type.
fn numpy_name(name: &str) -> Option<&'static str> {
    let code = name.trim_start_matches(['<', '>', '=', '|']);
    Some(match code {
        "?" | "b1" => "bool",
        "i1" => "int8",
        "i2" => "int16",
        "i4" => "int32",
        "i8" | "int" => "int64",
        "u1" => "uint8",
        "u2" => "uint16",
        "u4" => "uint32",
        "u8" => "uint64",
        "f2" | "half" => "float16",
        "f4" | "single" => "float32",
        "f8" | "float" | "double" => "float64",
        "c8" => "complex64",
        "c16" | "complex" => "complex128",
        "str" | "U" => "string",
        _ => return None,
    })
}

/// Parse a data type name as it appears in metadata (`float32`, `uint8`, `string`, ...),
/// its JSON form, the text forms `DataType` displays (`struct{x: float32}`,
/// `zarrs.optional<int16>`, `numpy.datetime64[s]`), or a numpy spelling of one (`f4`,
/// `<i8`, `float`).
pub(crate) fn parse_data_type(name: &str) -> Result<DataType> {
    let name = numpy_name(name).unwrap_or(name);
    match name.parse::<DataType>() {
        Ok(dt) => Ok(dt),
        Err(e) => usage!(
            "--dtype {name}: not a data type ({e}); use bool, int8/16/32/64, uint8/16/32/64, \
             float16/32/64, bfloat16, complex64/128, string, bytes, numpy.datetime64[unit] \
             (or its JSON form), r<bits>, struct{{name: type, ...}}, zarrs.optional<type>, or \
             a numpy code such as f4 or <i8"
        ),
    }
}

/// Parse a fill value: JSON, or a bare word as a JSON string.
pub(crate) fn parse_fill_value(text: &str, data_type: &DataType) -> Result<FillValue> {
    match FillValue::from_json_text(text, data_type) {
        Ok(fill) => Ok(fill),
        Err(first) => match FillValue::from_json(&Value::String(text.to_owned()), data_type) {
            Ok(fill) => Ok(fill),
            // Not JSON at all: say what the word is not, rather than what JSON is not.
            Err(as_word) if matches!(first, zarr::metadata::Error::Json(_)) => {
                usage!("--fill-value {text}: {as_word}")
            }
            Err(_) => usage!("--fill-value {text}: {first}"),
        },
    }
}

/// `--chunk-key-encoding`: a bare name, or the JSON object `zarr.json` holds, checked
/// against the array's rank.
fn parse_chunk_key_encoding(text: &str, rank: usize) -> Result<ChunkKeyEncoding> {
    const FLAG: &str = "--chunk-key-encoding";
    let value = match serde_json::from_str::<Value>(text) {
        Ok(value) => value,
        Err(_) if !text.trim_start().starts_with(['{', '"', '[']) => Value::String(text.into()),
        Err(err) => usage!("{FLAG}: {text:?} is not JSON: {err}"),
    };
    let encoding = match ChunkKeyEncoding::from_json(&value, FLAG) {
        Ok(encoding) => encoding,
        Err(err) => usage!("{err}"),
    };
    if let Err(err) = encoding.check_rank(rank, FLAG) {
        usage!("{err}");
    }
    Ok(encoding)
}

pub(crate) fn parse_attributes(pairs: &[String]) -> Result<Map<String, Value>> {
    let mut out = Map::new();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            usage!("--attr {pair:?} is not KEY=VALUE");
        };
        let value =
            serde_json::from_str::<Value>(value).unwrap_or_else(|_| Value::String(value.into()));
        out.insert(key.to_owned(), value);
    }
    Ok(out)
}

/// `zarr create --group`: a group (and any missing group above it).
async fn create_group(args: CreateArgs, global: Global) -> Result<()> {
    let attributes = parse_attributes(&args.attributes)?;
    let target = resolve(&args.target, Access::Write)?;
    let result: Result<()> = async {
        let node_path = NodePath::new(&target.path)?;
        let occupant = target.occupant().await?;
        target.refuse_foreign(&occupant)?;
        if occupant == Occupant::Node {
            match Group::open(Arc::clone(&target.store), &target.path).await {
                Ok(_) if attributes.is_empty() && args.zarr_format.is_none() => {
                    note(
                        global,
                        &format!("{} is a group already: nothing to do", target.describe()),
                    );
                    return Ok(());
                }
                Ok(_) => usage!(
                    "{} is a group already; change its attributes with `zarr attrs`",
                    target.describe()
                ),
                Err(_) => usage!(
                    "{} already exists and is not a group (`zarr rm` it first to replace it)",
                    target.describe()
                ),
            }
        }
        let format =
            chosen_format(&target, &node_path, args.zarr_format.as_deref(), "group").await?;
        let metadata = GroupMetadata::new().with_attributes(attributes);
        Group::create_with_format(Arc::clone(&target.store), &target.path, metadata, format)
            .await
            .with_context(|| format!("creating {}", target.describe()))?;
        note_unlisted(&target.store, &node_path, "group", global).await;
        note(
            global,
            &format!(
                "created {}: a Zarr v{} group",
                target.describe(),
                format_number(format)
            ),
        );
        target.finish()?;
        Ok(())
    }
    .await;
    if result.is_err() {
        target.remove_created_dirs();
    }
    result
}

pub(crate) async fn run_create(args: CreateArgs, global: Global) -> Result<()> {
    if args.group {
        return create_group(args, global).await;
    }
    let (Some(shape), Some(dtype)) = (&args.shape, &args.dtype) else {
        usage!("--shape and --dtype are needed to create an array (or --group for a group)");
    };
    let shape = parse_shape(shape, "--shape", 0)?;
    let data_type = parse_data_type(dtype)?;
    let chunks = match &args.chunks {
        Some(text) => Grid::parse(text, "--chunks")?.for_shape(&shape, text, "--chunks")?,
        None if args.shards.is_some() => usage!("--shards needs --chunks (the inner chunk shape)"),
        None => Grid::Regular(default_chunks(
            &shape,
            data_type.fixed_size().unwrap_or(16) as u64,
        )),
    };
    let shards = match &args.shards {
        Some(text) => {
            let shards = Grid::parse(text, "--shards")?.for_shape(&shape, text, "--shards")?;
            if let Grid::Regular(inner) = &chunks {
                check_inner_divides(inner, &shards, &shape, "--shards")?;
            }
            Some(shards)
        }
        None => None,
    };
    // A rectilinear grid replaces the layout's stand-in regular grid in the metadata.
    let stand_in = vec![1; shape.len()];
    let (grid, inner, rectilinear) = match (shards, chunks) {
        (None, Grid::Regular(chunks)) => (chunks, None, None),
        (None, Grid::Rectilinear(grid)) => (stand_in, None, Some(grid)),
        (Some(Grid::Regular(shards)), Grid::Regular(inner)) => (shards, Some(inner), None),
        (Some(Grid::Rectilinear(grid)), Grid::Regular(inner)) => {
            (stand_in, Some(inner), Some(grid))
        }
        (Some(_), Grid::Rectilinear(_)) => usage!(
            "--chunks: the chunks inside shards are all of one shape; give the rectilinear \
             grid to --shards and a shape to --chunks"
        ),
    };
    let codecs = chosen_codecs(
        &args.codecs,
        args.codecs_json.as_deref(),
        Some("zstd:3"),
        &data_type,
    )?
    .unwrap_or_default();
    let layout = Layout {
        grid: Some(grid),
        inner,
        codecs,
    };
    let (grid, codecs) = layout.to_metadata_parts()?;
    // Everything the command line can get wrong is checked before the target is resolved
    // (which creates a new store's directory).
    let fill_value = args
        .fill_value
        .as_deref()
        .map(|text| parse_fill_value(text, &data_type))
        .transpose()?;
    let attributes = parse_attributes(&args.attributes)?;
    let chunk_key_encoding = args
        .chunk_key_encoding
        .as_deref()
        .map(|text| parse_chunk_key_encoding(text, shape.len()))
        .transpose()?;
    if let Some(names) = &args.dimension_names
        && names.len() != shape.len()
    {
        usage!("--dimension-names needs one name per dimension");
    }
    let target = resolve(&args.target, Access::Write)?;
    // A failure from here on (a codec the library does not know, a store error) leaves no
    // empty store directory behind, which would make the next attempt's path resolve
    // differently (an existing directory that is not a node becomes a store root).
    let result: Result<()> = async {
        let node_path = NodePath::new(&target.path)?;
        let occupant = target.occupant().await?;
        target.refuse_foreign(&occupant)?;
        if !args.overwrite && occupant == Occupant::Node {
            usage!(
                "{} already exists; use --overwrite to replace it",
                target.describe()
            );
        }
        let format =
            chosen_format(&target, &node_path, args.zarr_format.as_deref(), "array").await?;
        if format == ZarrFormat::V2 {
            if rectilinear.is_some() {
                usage!(
                    "{}: Zarr v2 has no rectilinear chunk grids (give a chunk shape, or write \
                     Zarr v3)",
                    if layout.inner.is_some() {
                        "--shards"
                    } else {
                        "--chunks"
                    }
                );
            }
            if layout.inner.is_some() {
                usage!("--shards: Zarr v2 has no sharding (leave --shards out, or write Zarr v3)");
            }
        }
        let mut builder = ArrayBuilder::new(shape, data_type.clone(), grid)
            .codecs(codecs)
            .attributes(attributes)
            .overwrite(args.overwrite)
            .zarr_format(format);
        if let Some(grid) = rectilinear.clone() {
            builder = builder.chunk_grid(grid);
        }
        if let Some(fill_value) = fill_value {
            builder = builder.fill_value(fill_value);
        }
        if let Some(encoding) = chunk_key_encoding.clone() {
            builder = builder.chunk_key_encoding(encoding);
        }
        if let Some(names) = &args.dimension_names {
            builder = builder.dimension_names(names.iter().cloned());
        }
        if target.n5 {
            // An N5 dataset: the compressor inside `n5_default`, N5's block paths, the
            // dimension names as an attribute.
            if format == ZarrFormat::V2 {
                usage!(
                    "{}: an N5 container holds no Zarr v2 metadata",
                    target.describe()
                );
            }
            let mut metadata = builder.build_metadata()?;
            crate::copy::as_n5_dataset(&mut metadata)?;
            builder = ArrayBuilder::new(
                metadata.shape.clone(),
                metadata.data_type.clone(),
                vec![1; metadata.shape.len()],
            )
            .chunk_grid(metadata.chunk_grid)
            .codecs(metadata.codecs)
            .chunk_key_encoding(metadata.chunk_key_encoding)
            .attributes(metadata.attributes)
            .overwrite(args.overwrite);
        }
        let array = builder
            .create(Arc::clone(&target.store), &target.path)
            .await
            .with_context(|| format!("creating {}", target.describe()))?;
        note_unlisted(&target.store, &node_path, "array", global).await;
        note(
            global,
            &format!(
                "created {}: {} {} ({})",
                target.describe(),
                array.data_type().name(),
                shape_text(array.shape()),
                crate::layout::chunking_text(array.metadata())
            ),
        );
        target.finish()?;
        Ok(())
    }
    .await;
    if result.is_err() {
        target.remove_created_dirs();
    }
    result
}
