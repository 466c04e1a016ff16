//! Chunk layout: shards, inner chunks and codec lists, read from metadata and built from
//! command-line flags.

use anyhow::{Context, Result};
use serde_json::{Value, json};
use zarr::metadata::{ArrayMetadata, ChunkGrid, DataType, ExtensionObject};

use crate::region::parse_shape;
use crate::usage;

/// The name of the sharding codec.
pub(crate) const SHARDING: &str = "sharding_indexed";

/// A `--chunks` or `--shards` value.
#[derive(Debug, Clone)]
pub(crate) enum Grid {
    /// One chunk (or shard) shape.
    Regular(Vec<u64>),
    /// A rectilinear grid.
    Rectilinear(ChunkGrid),
}

impl Grid {
    /// Parse `--chunks` or `--shards` (`flag`): a shape, `100,100`, or a rectilinear grid's
    /// `chunk_shapes` as JSON, `[[10,20,30],100]`.
    pub(crate) fn parse(text: &str, flag: &str) -> Result<Self> {
        if !text.trim_start().starts_with('[') {
            return Ok(Self::Regular(parse_shape(text, flag, 1)?));
        }
        let chunk_shapes: Value = match serde_json::from_str(text) {
            Ok(value) => value,
            Err(e) => usage!(
                "{flag} {text}: not a JSON list of chunk lengths per dimension such as \
                 [[10,20,30],100] ({e})"
            ),
        };
        let metadata = json!({
            "name": "rectilinear",
            "configuration": {"kind": "inline", "chunk_shapes": chunk_shapes},
        });
        match ChunkGrid::from_json(&metadata, "chunk_grid") {
            Ok(grid) => Ok(Self::Rectilinear(grid)),
            Err(e) => usage!("{flag} {text}: {e}"),
        }
    }

    /// The number of dimensions.
    pub(crate) fn rank(&self) -> usize {
        match self {
            Self::Regular(shape) => shape.len(),
            Self::Rectilinear(grid) => grid.rank(),
        }
    }

    /// This grid, checked against an array of `shape`: the ranks agree and a rectilinear grid
    /// covers it (`text`, `flag`: what the user gave, for the message).
    pub(crate) fn for_shape(self, shape: &[u64], text: &str, flag: &str) -> Result<Self> {
        if self.rank() != shape.len() {
            usage!(
                "{flag} {text} has {} dimensions, the array {}",
                self.rank(),
                shape.len()
            );
        }
        if let Self::Rectilinear(grid) = &self
            && let Err(e) = grid.validate(shape)
        {
            usage!(
                "{flag} {text} does not cover the array's shape {}: {e}",
                shape_text(shape)
            );
        }
        Ok(self)
    }
}

/// Check that `inner`, the shape of the chunks inside shards, divides every shard edge of
/// `shards` (a rectilinear grid of shards covering `shape`, or one shard shape).
pub(crate) fn check_inner_divides(
    inner: &[u64],
    shards: &Grid,
    shape: &[u64],
    what: &str,
) -> Result<()> {
    let lengths = match shards {
        Grid::Regular(shards) => shards.iter().map(|&n| vec![n]).collect(),
        Grid::Rectilinear(grid) => grid.edge_lengths(shape)?,
    };
    for (d, lengths) in lengths.iter().enumerate() {
        if let Some(edge) = lengths.iter().find(|&&edge| edge % inner[d] != 0) {
            usage!(
                "{what}: a shard edge of {edge} is not a multiple of the chunk shape {} in \
                 dimension {d}",
                shape_text(inner)
            );
        }
    }
    Ok(())
}

/// How an array's elements are laid out in stored objects.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Layout {
    /// The chunk shape of a regular or `zarrs.regular_bounded` grid (the shard shape when
    /// sharded), `None` for rectilinear grids.
    pub(crate) grid: Option<Vec<u64>>,
    /// The inner chunk shape when the array is sharded.
    pub(crate) inner: Option<Vec<u64>>,
    /// The codecs of a chunk (of an inner chunk when sharded).
    pub(crate) codecs: Vec<ExtensionObject>,
}

impl Layout {
    /// The layout of existing metadata (only the outermost sharding level is unwrapped).
    pub(crate) fn of(metadata: &ArrayMetadata) -> Result<Self> {
        let grid = match &metadata.chunk_grid {
            ChunkGrid::Regular(grid) | ChunkGrid::RegularBounded(grid) => {
                Some(grid.chunk_shape().to_vec())
            }
            ChunkGrid::Rectilinear(_) => None,
        };
        if let [only] = metadata.codecs.as_slice()
            && only.name == SHARDING
        {
            let config = only.configuration_or_empty();
            let inner: Vec<u64> =
                serde_json::from_value(config.get("chunk_shape").cloned().unwrap_or(Value::Null))
                    .context("the sharding codec's chunk_shape")?;
            let codecs = match config.get("codecs") {
                Some(Value::Array(list)) => list
                    .iter()
                    .map(|c| ExtensionObject::from_json(c, "codecs"))
                    .collect::<Result<Vec<_>, _>>()?,
                _ => Vec::new(),
            };
            return Ok(Self {
                grid,
                inner: Some(inner),
                codecs,
            });
        }
        Ok(Self {
            grid,
            inner: None,
            codecs: metadata.codecs.clone(),
        })
    }

    /// The chunk grid shape and codec list for metadata: the codecs wrapped in
    /// `sharding_indexed` (index at the end, little-endian with crc32c) when sharded.
    pub(crate) fn to_metadata_parts(&self) -> Result<(Vec<u64>, Vec<ExtensionObject>)> {
        let Some(grid) = &self.grid else {
            anyhow::bail!("rectilinear chunk grids cannot be written by this tool");
        };
        match &self.inner {
            None => Ok((grid.clone(), self.codecs.clone())),
            Some(inner) => {
                let codecs: Vec<Value> = self.codecs.iter().map(ExtensionObject::to_json).collect();
                let config = json!({
                    "chunk_shape": inner,
                    "codecs": codecs,
                    "index_codecs": [
                        {"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "crc32c"},
                    ],
                    "index_location": "end",
                });
                Ok((grid.clone(), vec![extension(SHARDING, config)]))
            }
        }
    }
}

fn extension(name: &str, configuration: Value) -> ExtensionObject {
    match configuration {
        Value::Object(map) => ExtensionObject::with_configuration(name, map),
        _ => ExtensionObject::new(name),
    }
}

/// The codec list for `--codec` flags: the default array-to-bytes codec, then each flag's
/// bytes-to-bytes codec (`none` alone: nothing more).
///
/// Lists that contradict themselves are usage errors: `none` with anything else (no
/// compression, and some), two compressors (which one, or which level?), `crc32c` twice.
/// Unusual lists can still be written out in full with `--codecs JSON`.
pub(crate) fn codecs_from_flags(
    specs: &[String],
    data_type: &DataType,
) -> Result<Vec<ExtensionObject>> {
    let given = || {
        specs
            .iter()
            .map(|s| format!("--codec {s}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    if specs.len() > 1 && specs.iter().any(|s| s == "none") {
        usage!(
            "`--codec none` means no compression and must be the only --codec (given: {}); \
             leave it out to compress",
            given()
        );
    }
    let mut list = vec![zarr::array::default_array_to_bytes(data_type)];
    let mut compressor: Option<&str> = None;
    let mut checksum = false;
    for spec in specs {
        let Some(codec) = parse_codec(spec, data_type)? else {
            continue;
        };
        if codec.name == "crc32c" {
            if checksum {
                usage!("--codec crc32c is given twice (given: {})", given());
            }
            checksum = true;
        } else if let Some(first) = compressor {
            usage!(
                "--codec {first} and --codec {spec} are two compressors; choose one (given: \
                 {}), or write the whole list with --codecs JSON",
                given()
            );
        } else {
            compressor = Some(spec);
        }
        list.push(codec);
    }
    Ok(list)
}

/// The codec list of a node being written: `--codecs JSON` when given (the whole list, as
/// metadata holds it), else the `--codec` flags, else `default` flags. `None` when neither
/// option was given and there is no default (keep the source's codecs).
pub(crate) fn chosen_codecs(
    flags: &[String],
    json: Option<&str>,
    default: Option<&str>,
    data_type: &DataType,
) -> Result<Option<Vec<ExtensionObject>>> {
    if let Some(text) = json {
        return codecs_from_json(text).map(Some);
    }
    if !flags.is_empty() {
        return codecs_from_flags(flags, data_type).map(Some);
    }
    match default {
        Some(flag) => codecs_from_flags(&[flag.to_owned()], data_type).map(Some),
        None => Ok(None),
    }
}

/// `--codecs JSON`: a codec list as `zarr.json` holds it (`[{"name": "bytes"}, ...]`; a bare
/// name stands for a codec without configuration), or `@FILE` to read it from a file. Any
/// registered codec may appear; the list is checked when the array is created.
pub(crate) fn codecs_from_json(text: &str) -> Result<Vec<ExtensionObject>> {
    let (origin, text) = match text.strip_prefix('@') {
        Some(path) => {
            let content = std::fs::read_to_string(path)
                .with_context(|| format!("--codecs: reading {path}"))?;
            (format!("--codecs @{path}"), content)
        }
        None => ("--codecs".to_owned(), text.to_owned()),
    };
    let value: Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(err) => usage!("{origin}: not JSON: {err}"),
    };
    let Value::Array(list) = value else {
        usage!("{origin}: expected a JSON list of codecs, like [{{\"name\": \"bytes\"}}]");
    };
    if list.is_empty() {
        usage!("{origin}: the list is empty; it needs at least an array-to-bytes codec");
    }
    let mut codecs = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        match ExtensionObject::from_json(item, "codecs") {
            Ok(codec) => codecs.push(codec),
            Err(err) => usage!("{origin}: codec {i}: {err}"),
        }
    }
    Ok(codecs)
}

/// The codec `--codec lz4` names: numcodecs' LZ4 (in an N5 container, N5's own `lz4`).
pub(crate) const LZ4: &str = "numcodecs.lz4";

/// One `--codec` flag: `zstd[:LEVEL]`, `gzip[:LEVEL]`, `blosc[:CNAME[:CLEVEL]]`,
/// `lz4[:ACCELERATION]`, `crc32c` or `none`.
pub(crate) fn parse_codec(spec: &str, data_type: &DataType) -> Result<Option<ExtensionObject>> {
    let mut parts = spec.split(':');
    let name = parts.next().unwrap_or_default();
    let args: Vec<&str> = parts.collect();
    let int = |text: &str, what: &str| -> Result<i64> {
        match text.parse::<i64>() {
            Ok(v) => Ok(v),
            Err(_) => usage!("--codec {spec}: the {what} {text:?} is not an integer"),
        }
    };
    let codec = match (name, args.as_slice()) {
        ("none", []) => return Ok(None),
        ("zstd", []) => extension("zstd", json!({"level": 3, "checksum": false})),
        ("zstd", [level]) => {
            let level = int(level, "level")?;
            if !(-131_072..=22).contains(&level) {
                usage!("--codec {spec}: zstd levels run from -131072 to 22");
            }
            extension("zstd", json!({"level": level, "checksum": false}))
        }
        ("gzip", []) => extension("gzip", json!({"level": 5})),
        ("gzip", [level]) => {
            let level = int(level, "level")?;
            if !(0..=9).contains(&level) {
                usage!("--codec {spec}: gzip levels run from 0 to 9");
            }
            extension("gzip", json!({ "level": level }))
        }
        ("blosc", args) if args.len() <= 2 => {
            let cname = args.first().copied().unwrap_or("lz4");
            if !["lz4", "lz4hc", "blosclz", "zstd", "zlib", "snappy"].contains(&cname) {
                usage!(
                    "--codec {spec}: blosc compressors are lz4, lz4hc, blosclz, zstd, zlib and snappy"
                );
            }
            let clevel = match args.get(1) {
                Some(level) => int(level, "level")?,
                None => 5,
            };
            if !(0..=9).contains(&clevel) {
                usage!("--codec {spec}: blosc levels run from 0 to 9");
            }
            let typesize = data_type.fixed_size().unwrap_or(1);
            let shuffle = if typesize > 1 { "shuffle" } else { "noshuffle" };
            extension(
                "blosc",
                json!({"cname": cname, "clevel": clevel, "shuffle": shuffle,
                       "typesize": typesize, "blocksize": 0}),
            )
        }
        ("lz4", []) => extension(LZ4, json!({"acceleration": 1})),
        ("lz4", [acceleration]) => {
            let acceleration = int(acceleration, "acceleration")?;
            if !(1..=65_537).contains(&acceleration) {
                usage!("--codec {spec}: lz4 accelerations run from 1 to 65537");
            }
            extension(LZ4, json!({ "acceleration": acceleration }))
        }
        ("crc32c", []) => ExtensionObject::new("crc32c"),
        _ => usage!(
            "--codec {spec:?} is not zstd[:LEVEL], gzip[:LEVEL], blosc[:CNAME[:LEVEL]], \
             lz4[:ACCELERATION], crc32c or none"
        ),
    };
    Ok(Some(codec))
}

/// A shape as `10x20` (`()` for a 0-d array).
pub(crate) fn shape_text(shape: &[u64]) -> String {
    if shape.is_empty() {
        return "()".to_owned();
    }
    shape
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join("x")
}

/// One line for an array's chunking: `chunks 10x10`, `shards 100x100 of chunks 10x10`,
/// `rectilinear chunks` or `rectilinear shards of chunks 10x10`.
pub(crate) fn chunking_text(metadata: &ArrayMetadata) -> String {
    match Layout::of(metadata) {
        Ok(Layout {
            grid: Some(grid),
            inner: Some(inner),
            ..
        }) => format!(
            "shards {} of chunks {}",
            shape_text(&grid),
            shape_text(&inner)
        ),
        Ok(Layout {
            grid: Some(grid), ..
        }) => format!("chunks {}", shape_text(&grid)),
        Ok(Layout {
            grid: None,
            inner: Some(inner),
            ..
        }) => format!("rectilinear shards of chunks {}", shape_text(&inner)),
        _ => "rectilinear chunks".to_owned(),
    }
}

/// A codec as `name {configuration}`.
pub(crate) fn codec_text(codec: &ExtensionObject) -> String {
    match &codec.configuration {
        Some(config) if !config.is_empty() => {
            format!("{} {}", codec.name, Value::Object(config.clone()))
        }
        _ => codec.name.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codec_flags() {
        let dt = DataType::Float32;
        let list = codecs_from_flags(&["zstd:5".into(), "crc32c".into()], &dt).unwrap();
        let names: Vec<_> = list.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["bytes", "zstd", "crc32c"]);
        assert_eq!(list[1].configuration_or_empty()["level"], 5);
        let list = codecs_from_flags(&["none".into()], &dt).unwrap();
        let names: Vec<_> = list.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["bytes"]);
        for (bad, message) in [
            (
                &["none", "zstd"][..],
                "`--codec none` means no compression and must be the only",
            ),
            (&["zstd", "none"], "(given: --codec zstd --codec none)"),
            (&["none", "none"], "must be the only --codec"),
            (
                &["zstd:3", "gzip"],
                "--codec zstd:3 and --codec gzip are two compressors",
            ),
            (&["zstd:1", "crc32c", "zstd:5"], "two compressors"),
            (
                &["crc32c", "zstd", "crc32c"],
                "--codec crc32c is given twice",
            ),
        ] {
            let specs: Vec<String> = bad.iter().map(|s| (*s).to_owned()).collect();
            let err = codecs_from_flags(&specs, &dt).unwrap_err();
            assert!(err.downcast_ref::<crate::Usage>().is_some(), "{bad:?}");
            assert!(err.to_string().contains(message), "{bad:?}: {err}");
        }
        let blosc = parse_codec("blosc:zstd:7", &dt).unwrap().unwrap();
        assert_eq!(blosc.configuration_or_empty()["typesize"], 4);
        assert_eq!(blosc.configuration_or_empty()["shuffle"], "shuffle");
        let lz4 = parse_codec("lz4:8", &dt).unwrap().unwrap();
        assert_eq!(lz4.name, "numcodecs.lz4");
        assert_eq!(lz4.configuration_or_empty()["acceleration"], 8);
        let lz4 = parse_codec("lz4", &dt).unwrap().unwrap();
        assert_eq!(lz4.configuration_or_empty()["acceleration"], 1);
        for bad in [
            "zstd:x",
            "gzip:10",
            "lzma",
            "blosc:foo",
            "crc32c:1",
            "lz4:0",
            "lz4:1:2",
        ] {
            let err = parse_codec(bad, &dt).unwrap_err();
            assert!(err.downcast_ref::<crate::Usage>().is_some(), "{bad}");
        }
    }

    #[test]
    fn sharded_layouts_round_trip_through_metadata() {
        let layout = Layout {
            grid: Some(vec![8, 8]),
            inner: Some(vec![4, 2]),
            codecs: codecs_from_flags(&["gzip:1".into()], &DataType::UInt16).unwrap(),
        };
        let (grid, codecs) = layout.to_metadata_parts().unwrap();
        let metadata = zarr::array::ArrayBuilder::new(vec![16, 16], DataType::UInt16, grid)
            .codecs(codecs)
            .build_metadata()
            .unwrap();
        assert_eq!(Layout::of(&metadata).unwrap(), layout);
        assert_eq!(chunking_text(&metadata), "shards 8x8 of chunks 4x2");
    }
}
