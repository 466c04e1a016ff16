//! `zarr create`.

use anyhow::{Context, Result};
use clap::Args;
use serde_json::{Map, Value};
use zarr::array::ArrayBuilder;
use zarr::metadata::v2::ZarrFormat;
use zarr::metadata::{DataType, FillValue};

use crate::layout::{Layout, chosen_codecs, shape_text};
use crate::progress::note;
use crate::region::parse_shape;
use crate::target::{Access, resolve};
use crate::{Global, TargetArgs, usage};

/// Arguments of `zarr create`.
#[derive(Args, Debug)]
pub(crate) struct CreateArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// The array's shape: `1000,1000` (`""` for a 0-d array).
    #[arg(long, allow_hyphen_values = true)]
    shape: String,
    /// The data type: bool, int8 ... int64, uint8 ... uint64, float16, float32, float64,
    /// complex64, complex128, bfloat16, string, bytes, ...
    #[arg(long, visible_alias = "data-type", value_name = "TYPE")]
    dtype: String,
    /// The chunk shape (the inner chunk shape with --shards). Default: one chunk for the
    /// whole array.
    #[arg(long)]
    chunks: Option<String>,
    /// Store chunks in shards of this shape (each a multiple of the chunk shape).
    #[arg(long)]
    shards: Option<String>,
    /// A compression or checksum codec, in order: zstd[:LEVEL], gzip[:LEVEL],
    /// blosc[:CNAME[:LEVEL]], crc32c, or none. Repeat for several. Default: zstd:3.
    #[arg(long = "codec", value_name = "CODEC")]
    codecs: Vec<String>,
    /// The whole codec list as JSON, as `zarr.json` holds it (the inner chunks' codecs with
    /// --shards), or `@FILE`: any registered codec, e.g.
    /// `[{"name":"packbits"}]` or `[{"name":"numcodecs.delta","configuration":{"dtype":"<i4"}},
    /// {"name":"bytes"},{"name":"zstd","configuration":{"level":3}}]`.
    #[arg(long = "codecs", value_name = "JSON", conflicts_with = "codecs")]
    codecs_json: Option<String>,
    /// The fill value, as JSON (`0`, `1.5`, `"NaN"`, `true`, `"text"`); a bare word is taken
    /// as a string (`NaN`, `Infinity`, text).
    #[arg(long, allow_hyphen_values = true)]
    fill_value: Option<String>,
    /// Dimension names, comma-separated: `y,x`.
    #[arg(long, value_delimiter = ',')]
    dimension_names: Option<Vec<String>>,
    /// An attribute, `KEY=JSON` (a value that is not JSON is a string). Repeat for several.
    #[arg(long = "attr", value_name = "KEY=VALUE")]
    attributes: Vec<String>,
    /// Replace a node that is already there (its chunks are erased).
    #[arg(long)]
    overwrite: bool,
    /// The format to write: 3 (`zarr.json`), or 2 (`.zarray`, for readers that know only
    /// Zarr v2; no --shards or --dimension-names then).
    #[arg(long, value_name = "2|3", default_value = "3", value_parser = ["2", "3"])]
    zarr_format: String,
}

/// Parse a data type name as it appears in metadata.
pub(crate) fn parse_data_type(name: &str) -> Result<DataType> {
    let value = serde_json::from_str::<Value>(name).unwrap_or_else(|_| Value::String(name.into()));
    match DataType::from_json(&value, "data_type") {
        Ok(dt) => Ok(dt),
        Err(err) => usage!("--dtype {name}: {err}"),
    }
}

/// Parse a fill value: JSON, or a bare word as a JSON string.
pub(crate) fn parse_fill_value(text: &str, data_type: &DataType) -> Result<FillValue> {
    match FillValue::from_json_text(text, data_type) {
        Ok(fill) => Ok(fill),
        Err(first) => match FillValue::from_json(&Value::String(text.to_owned()), data_type) {
            Ok(fill) => Ok(fill),
            Err(_) => usage!("--fill-value {text}: {first}"),
        },
    }
}

fn parse_attributes(pairs: &[String]) -> Result<Map<String, Value>> {
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

pub(crate) async fn run_create(args: CreateArgs, global: Global) -> Result<()> {
    let shape = parse_shape(&args.shape, "--shape", 0)?;
    let data_type = parse_data_type(&args.dtype)?;
    let chunks = match &args.chunks {
        Some(text) => parse_shape(text, "--chunks", 1)?,
        None if args.shards.is_some() => usage!("--shards needs --chunks (the inner chunk shape)"),
        None => shape.iter().map(|&n| n.max(1)).collect(),
    };
    if chunks.len() != shape.len() {
        usage!(
            "--chunks {} has {} dimensions, --shape {}",
            shape_text(&chunks),
            chunks.len(),
            shape.len()
        );
    }
    let shards = match &args.shards {
        Some(text) => {
            let shards = parse_shape(text, "--shards", 1)?;
            if shards.len() != shape.len() {
                usage!(
                    "--shards has {} dimensions, --shape {}",
                    shards.len(),
                    shape.len()
                );
            }
            if let Some(d) = (0..shape.len()).find(|&d| shards[d] % chunks[d] != 0) {
                usage!(
                    "--shards {} is not a multiple of --chunks {} in dimension {d}",
                    shape_text(&shards),
                    shape_text(&chunks)
                );
            }
            Some(shards)
        }
        None => None,
    };
    let codecs = chosen_codecs(
        &args.codecs,
        args.codecs_json.as_deref(),
        Some("zstd:3"),
        &data_type,
    )?
    .unwrap_or_default();
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
    let (grid, codecs) = layout.to_metadata_parts()?;
    let mut builder = ArrayBuilder::new(shape, data_type.clone(), grid)
        .codecs(codecs)
        .attributes(parse_attributes(&args.attributes)?)
        .overwrite(args.overwrite)
        .zarr_format(if args.zarr_format == "2" {
            ZarrFormat::V2
        } else {
            ZarrFormat::V3
        });
    if let Some(text) = &args.fill_value {
        builder = builder.fill_value(parse_fill_value(text, &data_type)?);
    }
    if let Some(names) = &args.dimension_names {
        if names.len()
            != args
                .shape
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .count()
        {
            usage!("--dimension-names needs one name per dimension");
        }
        builder = builder.dimension_names(names.iter().cloned());
    }
    let target = resolve(&args.target, Access::Write)?;
    let array = builder
        .create(std::sync::Arc::clone(&target.store), &target.path)
        .await
        .with_context(|| format!("creating {}", target.describe()))?;
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
    Ok(())
}
