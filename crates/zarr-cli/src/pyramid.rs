//! `zarr pyramid`: build a multiscale image (an OME-Zarr 0.5 or 0.4 `multiscales` group) from
//! an array: level 0 is a copy of the array, each further level the one before downsampled.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::{Map, Value, json};
use zarr::array::{Array, ArrayBuilder, Group, Node, Reduction, downsampled_shape};
use zarr::metadata::v2::ZarrFormat;
use zarr::metadata::{
    ArrayMetadata, ChunkGrid, ChunkKeyEncoding, ChunkKeySeparator, GroupMetadata, NodePath,
};
use zarr::store::Store;

use crate::copy::{
    LayoutArgs, Plan, Undo, Written, destination_metadata, erase_destination, missing_ancestors,
};
use crate::create::note_unlisted;
use crate::layout::{Layout, SHARDING, chunking_text, shape_text};
use crate::progress::note;
use crate::target::{Occupant, Target, resolve_pair};
use crate::{Global, usage};

/// Units OME-Zarr names for space axes (UDUNITS-2).
const SPACE_UNITS: [&str; 26] = [
    "angstrom",
    "attometer",
    "centimeter",
    "decimeter",
    "exameter",
    "femtometer",
    "foot",
    "gigameter",
    "hectometer",
    "inch",
    "kilometer",
    "megameter",
    "meter",
    "micrometer",
    "mile",
    "millimeter",
    "nanometer",
    "parsec",
    "petameter",
    "picometer",
    "terameter",
    "yard",
    "yoctometer",
    "yottameter",
    "zeptometer",
    "zettameter",
];

/// Units OME-Zarr names for time axes (UDUNITS-2).
const TIME_UNITS: [&str; 23] = [
    "attosecond",
    "centisecond",
    "day",
    "decisecond",
    "exasecond",
    "femtosecond",
    "gigasecond",
    "hectosecond",
    "hour",
    "kilosecond",
    "megasecond",
    "microsecond",
    "millisecond",
    "minute",
    "nanosecond",
    "petasecond",
    "picosecond",
    "second",
    "terasecond",
    "yoctosecond",
    "yottasecond",
    "zeptosecond",
    "zettasecond",
];

/// Arguments of `zarr pyramid`.
#[derive(Args, Debug)]
pub(crate) struct PyramidArgs {
    /// The source array: a local path or a URL.
    src: String,
    /// The group to create, which holds the levels as arrays `0`, `1`, ...: a local path or
    /// a URL.
    dst: String,
    /// The source array's path inside SRC (SRC is then the store root).
    #[arg(long, value_name = "NODE")]
    src_path: Option<String>,
    /// The group's path inside DST (DST is then the store root).
    #[arg(long, value_name = "NODE")]
    dst_path: Option<String>,
    /// How many levels to write, level 0 (the copy) included [default: until the last level
    /// fits in one chunk along every downsampled dimension].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    levels: Option<u32>,
    /// The downsampling factor from one level to the next: one number for every space axis
    /// (the others keep their length), or one per dimension (`1,2,2`).
    #[arg(long, default_value = "2")]
    factor: String,
    /// How a window of elements becomes one: mean (integers rounded to the nearest, halves
    /// away from zero), mode (the most frequent value, the first on a tie: for labels), min,
    /// max (a NaN wins these and the mean), or stride (the window's first element). mode and
    /// stride take any fixed-size data type; the others numbers.
    #[arg(long, default_value = "mean", value_parser = ["mean", "mode", "min", "max", "stride"])]
    method: String,
    /// The axes' names, comma-separated, one per dimension [default: the array's dimension
    /// names, or by rank: y,x / z,y,x / c,z,y,x / t,c,z,y,x]. t and time are time axes, c
    /// and channel channel axes, x, y and z space axes.
    #[arg(long, value_name = "NAMES")]
    axes: Option<String>,
    /// The physical size of one element of level 0: one number for every space axis, or
    /// one per dimension [default: 1].
    #[arg(long, value_name = "SIZES")]
    scale: Option<String>,
    /// The unit of the space axes: micrometer, nanometer, millimeter, ... (UDUNITS-2 names,
    /// as OME-Zarr lists them).
    #[arg(long)]
    unit: Option<String>,
    /// The unit of the time axis: second, millisecond, minute, ...
    #[arg(long, value_name = "UNIT")]
    time_unit: Option<String>,
    /// The multiscale image's name [default: the source array's name].
    #[arg(long)]
    name: Option<String>,
    /// The OME-Zarr version to write: 0.5 (Zarr v3, the metadata under the group's `ome`
    /// attribute) or 0.4 (Zarr v2, `multiscales` among the group's attributes, chunk keys
    /// with `/`; for viewers that read only 0.4; no sharding: give --shards none for a
    /// sharded source).
    #[arg(long, value_name = "VERSION", default_value = "0.5", value_parser = ["0.4", "0.5"])]
    ome_version: String,
    #[command(flatten)]
    layout: LayoutArgs,
    /// Replace whatever is at the destination.
    #[arg(long)]
    overwrite: bool,
}

/// The kind of an axis, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Time,
    Channel,
    Space,
    /// Any other name: an axis of no type OME-Zarr defines, which stands where a channel
    /// axis would.
    Other,
}

impl Kind {
    fn of(name: &str) -> Self {
        match name.to_ascii_lowercase().as_str() {
            "t" | "time" => Self::Time,
            "c" | "channel" => Self::Channel,
            "x" | "y" | "z" => Self::Space,
            _ => Self::Other,
        }
    }

    fn type_name(self) -> Option<&'static str> {
        match self {
            Self::Time => Some("time"),
            Self::Channel => Some("channel"),
            Self::Space => Some("space"),
            Self::Other => None,
        }
    }
}

/// The axes of the image: names and kinds, checked against OME-Zarr 0.5's rules.
/// `source` says where the names come from, for errors.
fn axes(names: Vec<String>, rank: usize, source: &str) -> Result<Vec<(String, Kind)>> {
    if !(2..=5).contains(&rank) {
        usage!(
            "OME-Zarr images have 2 to 5 dimensions; this array has {rank} (a pyramid of \
             another rank would not be a valid multiscale image)"
        );
    }
    if names.len() != rank {
        usage!(
            "{source}: {} names for an array of {rank} dimensions",
            names.len()
        );
    }
    let axes: Vec<(String, Kind)> = names
        .into_iter()
        .map(|name| {
            let kind = Kind::of(&name);
            (name, kind)
        })
        .collect();
    for (i, (name, _)) in axes.iter().enumerate() {
        if name.is_empty() {
            usage!("{source}: dimension {i} has no name");
        }
        if axes[..i].iter().any(|(other, _)| other == name) {
            usage!("{source}: {name:?} names two dimensions");
        }
    }
    let count = |kind: Kind| axes.iter().filter(|(_, k)| *k == kind).count();
    let space = count(Kind::Space);
    let others = count(Kind::Channel) + count(Kind::Other);
    let listed = || {
        axes.iter()
            .map(|(name, _)| name.as_str())
            .collect::<Vec<_>>()
            .join(",")
    };
    if !(2..=3).contains(&space) {
        usage!(
            "{source}: OME-Zarr needs 2 or 3 space axes (x, y, z), found {space} in {}",
            listed()
        );
    }
    if count(Kind::Time) > 1 || others > 1 {
        usage!(
            "{source}: OME-Zarr allows one time axis (t) and one channel or other axis besides \
             the space axes; {} has more",
            listed()
        );
    }
    // Time first, then the channel (or other) axis, then space.
    let rank_of = |kind: Kind| match kind {
        Kind::Time => 0,
        Kind::Channel | Kind::Other => 1,
        Kind::Space => 2,
    };
    if axes.windows(2).any(|w| rank_of(w[0].1) > rank_of(w[1].1)) {
        usage!(
            "{source}: OME-Zarr orders the axes time, then channel, then space; {} does not \
             (reorder the array's dimensions, or name them otherwise)",
            listed()
        );
    }
    Ok(axes)
}

/// Parse a per-dimension list (`2` for every space axis, the others `other`; or one value
/// per dimension).
fn per_dimension<T: std::str::FromStr + Copy>(
    text: &str,
    axes: &[(String, Kind)],
    other: T,
    flag: &str,
    valid: impl Fn(T) -> bool,
) -> Result<Vec<T>> {
    let values: Vec<T> = text
        .split(',')
        .map(|part| match part.trim().parse::<T>() {
            Ok(value) if valid(value) => Ok(value),
            _ => Err(()),
        })
        .collect::<Result<_, ()>>()
        .or_else(|()| usage!("{flag}: {text:?} is not a list of valid values"))?;
    match values.as_slice() {
        [one] if axes.len() != 1 => Ok(axes
            .iter()
            .map(|(_, kind)| if *kind == Kind::Space { *one } else { other })
            .collect()),
        _ if values.len() == axes.len() => Ok(values),
        _ => usage!(
            "{flag}: {} values for {} dimensions (give one, for the space axes, or one per \
             dimension)",
            values.len(),
            axes.len()
        ),
    }
}

/// The shapes of the levels.
fn level_shapes(
    shape: &[u64],
    factors: &[u64],
    chunk: &[u64],
    levels: Option<u32>,
) -> Vec<Vec<u64>> {
    let mut shapes = vec![shape.to_vec()];
    loop {
        let last = shapes.last().expect("level 0");
        let more = match levels {
            Some(n) => shapes.len() < n as usize,
            None => last
                .iter()
                .zip(factors)
                .zip(chunk)
                .any(|((&n, &f), &c)| f > 1 && n > c),
        };
        if !more {
            return shapes;
        }
        let next = downsampled_shape(last, factors);
        shapes.push(next);
    }
}

/// The metadata of the level of `shape`: level 0's, with its chunks (and shards) clipped to
/// the level's shape.
fn level_metadata(level0: &ArrayMetadata, shape: &[u64]) -> Result<ArrayMetadata> {
    let mut metadata = level0.clone();
    metadata.shape = shape.to_vec();
    let layout = Layout::of(level0)?;
    let Some(grid) = layout.grid.clone() else {
        bail!("level 0 has no regular chunk grid");
    };
    let clip = |chunk: &[u64]| -> Vec<u64> {
        chunk
            .iter()
            .zip(shape)
            .map(|(&c, &n)| c.min(n).max(1))
            .collect()
    };
    let layout = match &layout.inner {
        Some(inner) => {
            let inner = clip(inner);
            let shards = grid
                .iter()
                .zip(shape)
                .zip(&inner)
                .map(|((&s, &n), &i)| s.min(n.div_ceil(i) * i).max(i))
                .collect();
            Layout {
                grid: Some(shards),
                inner: Some(inner),
                codecs: layout.codecs,
            }
        }
        // A chunk whose codecs shard it below another codec keeps its shape: its inner
        // chunks must divide it.
        None if layout.codecs.iter().any(|c| c.name == SHARDING) => layout,
        None => Layout {
            grid: Some(clip(&grid)),
            inner: None,
            codecs: layout.codecs,
        },
    };
    let (grid, codecs) = layout.to_metadata_parts()?;
    metadata.chunk_grid = ChunkGrid::regular(grid)?;
    metadata.codecs = codecs;
    Ok(metadata)
}

pub(crate) async fn run(args: PyramidArgs, global: Global) -> Result<()> {
    let (src, dst) = resolve_pair(
        (&args.src, args.src_path.as_deref()),
        (&args.dst, args.dst_path.as_deref()),
    )?;
    let mut undo = Undo::new("pyramid");
    match build(&src, &dst, &args, global, &mut undo).await {
        Ok(()) => dst.finish(),
        Err(err) => Err(undo.apply(err, &dst).await),
    }
}

/// Everything about the pyramid, planned before anything is written.
struct Pyramid {
    /// Zarr v3 for OME-Zarr 0.5, v2 for 0.4.
    format: ZarrFormat,
    levels: Vec<ArrayMetadata>,
    reduction: Reduction,
    factors: Vec<u64>,
    attributes: Map<String, Value>,
}

fn plan(array: &Array<dyn Store>, args: &PyramidArgs) -> Result<Pyramid> {
    let source = array.metadata();
    let rank = source.shape.len();
    let data_type = &source.data_type;
    if data_type.fixed_size().is_none() {
        usage!(
            "{}: a pyramid needs a fixed-size data type, not {}",
            array.path(),
            data_type.name()
        );
    }
    let Some(reduction) = Reduction::from_name(&args.method) else {
        usage!("--method {}: not a reduction", args.method);
    };
    if !reduction.supports(data_type) {
        usage!(
            "--method {reduction}: {} is not a number type; use --method mode or stride",
            data_type.name()
        );
    }
    let format = match args.ome_version.as_str() {
        "0.4" => ZarrFormat::V2,
        _ => ZarrFormat::V3,
    };
    let plan = Plan::new(&args.layout, format, 64 << 20)?;
    let mut level0 = destination_metadata(source, array.zarr_format(), &plan)?;
    if format == ZarrFormat::V2 {
        // OME-Zarr 0.4 asks for chunk keys with "/" between the indices.
        level0.chunk_key_encoding = ChunkKeyEncoding::V2 {
            separator: ChunkKeySeparator::Slash,
        };
        if level0.codecs.iter().any(|c| c.name == SHARDING) {
            usage!(
                "OME-Zarr 0.4 is Zarr v2, which has no sharding; give --shards none (and \
                 --chunks) to write it unsharded"
            );
        }
    }
    if !matches!(level0.chunk_grid, ChunkGrid::Regular(_)) {
        usage!(
            "every level needs a regular chunk grid, and {} {}: give --chunks a chunk shape \
             (and --shards a shard shape, or none)",
            if args.layout.is_given() {
                "this layout's is"
            } else {
                "the source's is"
            },
            level0.chunk_grid.to_json()["name"]
                .as_str()
                .unwrap_or("another")
        );
    }
    let (names, source) = match &args.axes {
        Some(text) => (
            text.split(',').map(|n| n.trim().to_owned()).collect(),
            "--axes",
        ),
        None => {
            // A v2 level 0 keeps the names in xarray's attribute.
            let named: Option<Vec<String>> = level0
                .dimension_names
                .as_ref()
                .and_then(|names| names.iter().cloned().collect())
                .or_else(|| crate::copy::xarray_dimensions(&level0.attributes, rank));
            let defaults = || -> Vec<String> {
                let all = ["t", "c", "z", "y", "x"];
                all[all.len().saturating_sub(rank)..]
                    .iter()
                    .map(|n| (*n).to_owned())
                    .collect()
            };
            match named {
                Some(names) => (names, "the array's dimension names (give --axes)"),
                None => (defaults(), "the axes (give --axes)"),
            }
        }
    };
    let axes = axes(names, rank, source)?;
    let factors = per_dimension(&args.factor, &axes, 1u64, "--factor", |f| f >= 1)?;
    if factors.iter().all(|&f| f == 1) && args.levels.is_none_or(|n| n > 1) {
        usage!("--factor: every factor is 1, so every level would be the same");
    }
    let scale0 = match &args.scale {
        Some(text) => per_dimension(text, &axes, 1f64, "--scale", |s: f64| {
            s.is_finite() && s > 0.0
        })?,
        None => vec![1.0; rank],
    };
    for (flag, unit, known) in [
        ("--unit", &args.unit, &SPACE_UNITS[..]),
        ("--time-unit", &args.time_unit, &TIME_UNITS[..]),
    ] {
        if let Some(unit) = unit
            && !known.contains(&unit.as_str())
        {
            usage!(
                "{flag}: {unit:?} is not a unit OME-Zarr names; one of {}",
                known.join(", ")
            );
        }
    }
    if args.time_unit.is_some() && !axes.iter().any(|(_, k)| *k == Kind::Time) {
        usage!("--time-unit: the image has no time axis");
    }
    let chunk = Layout::of(&level0)?
        .inner
        .or_else(|| level0.chunk_grid.nominal_chunk_shape().map(<[u64]>::to_vec))
        .unwrap_or_else(|| vec![1; rank]);
    let shapes = level_shapes(&level0.shape, &factors, &chunk, args.levels);
    let mut level0 = level0;
    let names: Vec<String> = axes.iter().map(|(n, _)| n.clone()).collect();
    match format {
        ZarrFormat::V3 => level0.dimension_names = Some(names.into_iter().map(Some).collect()),
        // Zarr v2 keeps dimension names in xarray's attribute.
        ZarrFormat::V2 => {
            level0
                .attributes
                .insert("_ARRAY_DIMENSIONS".into(), json!(names));
        }
    }
    let levels = shapes
        .iter()
        .map(|shape| level_metadata(&level0, shape))
        .collect::<Result<Vec<_>>>()?;

    // The OME-Zarr metadata.
    let axes_json: Vec<Value> = axes
        .iter()
        .map(|(name, kind)| {
            let mut axis = Map::new();
            axis.insert("name".into(), name.clone().into());
            if let Some(kind) = kind.type_name() {
                axis.insert("type".into(), kind.into());
            }
            let unit = match kind {
                Kind::Space => args.unit.as_ref(),
                Kind::Time => args.time_unit.as_ref(),
                _ => None,
            };
            if let Some(unit) = unit {
                axis.insert("unit".into(), unit.clone().into());
            }
            Value::Object(axis)
        })
        .collect();
    let last = (levels.len() - 1) as i32;
    if factors
        .iter()
        .zip(&scale0)
        .any(|(&f, &s)| !(s * (f as f64).powi(last)).is_finite())
    {
        usage!(
            "--factor: level {last}'s scale (--scale times the factor to the power {last}) \
             does not fit a JSON number; give smaller factors or fewer --levels"
        );
    }
    let datasets: Vec<Value> = (0..levels.len())
        .map(|level| {
            let mut transforms = Vec::new();
            let mut scale = Vec::with_capacity(rank);
            let mut translation = Vec::with_capacity(rank);
            for (&f, &s) in factors.iter().zip(&scale0) {
                let window = (f as f64).powi(level as i32);
                scale.push(s * window);
                // A level's first element stands for the window it reduces: its centre
                // lies half a window (less half an element) from level 0's first element.
                translation.push((window - 1.0) / 2.0 * s);
            }
            transforms.push(json!({"type": "scale", "scale": scale}));
            if reduction.is_centred() && translation.iter().any(|&t| t != 0.0) {
                transforms.push(json!({"type": "translation", "translation": translation}));
            }
            json!({"path": level.to_string(), "coordinateTransformations": transforms})
        })
        .collect();
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| array.path().name().unwrap_or("image").to_owned());
    let multiscale = json!({
        "name": name,
        "axes": axes_json,
        "datasets": datasets,
        "type": reduction.name(),
        "metadata": {
            "description": format!(
                "each level is the one before, {} over windows of {} elements",
                reduction.name(),
                factors.iter().map(u64::to_string).collect::<Vec<_>>().join("x")
            ),
            "method": "zarr pyramid",
            "version": env!("CARGO_PKG_VERSION"),
        },
    });
    let mut attributes = Map::new();
    match format {
        ZarrFormat::V3 => {
            attributes.insert(
                "ome".into(),
                json!({"version": "0.5", "multiscales": [multiscale]}),
            );
        }
        ZarrFormat::V2 => {
            let mut multiscale = multiscale;
            multiscale["version"] = "0.4".into();
            attributes.insert("multiscales".into(), json!([multiscale]));
        }
    }
    Ok(Pyramid {
        format,
        levels,
        reduction,
        factors,
        attributes,
    })
}

async fn build(
    src: &Target,
    dst: &Target,
    args: &PyramidArgs,
    global: Global,
    undo: &mut Undo,
) -> Result<()> {
    let started = Instant::now();
    if src.overlaps(dst) {
        usage!(
            "{} and {} overlap (the same node, or one inside the other); write the pyramid \
             to another place",
            src.describe(),
            dst.describe()
        );
    }
    let dst_path = NodePath::new(&dst.path)?;
    let occupant = dst.occupant().await?;
    dst.refuse_foreign(&occupant)?;
    let exists = occupant == Occupant::Node;
    if exists && !args.overwrite {
        usage!(
            "{} already exists; use --overwrite to replace it",
            dst.describe()
        );
    }
    let array = match src.node().await? {
        Node::Array(array) => array,
        Node::Group(_) => usage!(
            "{} is a group; a pyramid is built from an array",
            src.describe()
        ),
    };
    let pyramid =
        plan(&array, args).with_context(|| format!("planning the pyramid of {}", array.path()))?;

    undo.written = Some(Written::Erase {
        ancestors: missing_ancestors(dst, &dst_path).await?,
        replaced: exists,
    });
    if exists {
        erase_destination(dst, &dst_path).await?;
    }
    Group::create_with_format(
        Arc::clone(&dst.store),
        dst_path.as_str(),
        GroupMetadata::new().with_attributes(pyramid.attributes.clone()),
        pyramid.format,
    )
    .await
    .with_context(|| format!("creating group {}", dst.describe()))?;
    let mut input = array.clone();
    for (level, metadata) in pyramid.levels.iter().enumerate() {
        let path = dst_path.child(&level.to_string())?;
        let output = create_level(dst, &path, metadata, pyramid.format).await?;
        // Level 0 is a copy: every factor 1.
        let (factors, reduction) = if level == 0 {
            (vec![1; metadata.shape.len()], Reduction::Stride)
        } else {
            (pyramid.factors.clone(), pyramid.reduction)
        };
        output
            .downsample_from(&input, &factors, reduction)
            .await
            .with_context(|| format!("writing level {level}"))?;
        note(
            global,
            &format!(
                "{path}: {} ({})",
                shape_text(&metadata.shape),
                chunking_text(metadata)
            ),
        );
        input = output;
    }
    note_unlisted(&dst.store, &dst_path, "group", global).await;
    note(
        global,
        &format!(
            "wrote {} levels of {} to {} in {:.1} s",
            pyramid.levels.len(),
            src.describe(),
            dst.describe(),
            started.elapsed().as_secs_f64()
        ),
    );
    Ok(())
}

async fn create_level(
    dst: &Target,
    path: &NodePath,
    metadata: &ArrayMetadata,
    format: ZarrFormat,
) -> Result<Array<dyn Store>> {
    let names: Vec<String> = metadata
        .dimension_names
        .iter()
        .flatten()
        .map(|n| n.clone().unwrap_or_default())
        .collect();
    let chunks = metadata
        .chunk_grid
        .nominal_chunk_shape()
        .expect("levels have regular grids")
        .to_vec();
    let mut builder = ArrayBuilder::new(metadata.shape.clone(), metadata.data_type.clone(), chunks)
        .codecs(metadata.codecs.clone())
        .fill_value(metadata.fill_value.clone())
        .chunk_key_encoding(metadata.chunk_key_encoding.clone())
        .attributes(metadata.attributes.clone())
        .zarr_format(format);
    if metadata.dimension_names.is_some() {
        builder = builder.dimension_names(names);
    }
    let array = builder
        .create(Arc::clone(&dst.store), path.as_str())
        .await
        .with_context(|| format!("creating {path} in {}", dst.describe()))?;
    Ok(array)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn axes_follow_ome_zarr_rules() {
        let ok = axes(names(&["t", "c", "z", "y", "x"]), 5, "--axes").unwrap();
        let kinds: Vec<Kind> = ok.iter().map(|(_, k)| *k).collect();
        assert_eq!(
            kinds,
            [
                Kind::Time,
                Kind::Channel,
                Kind::Space,
                Kind::Space,
                Kind::Space
            ]
        );
        assert!(axes(names(&["Y", "X"]), 2, "--axes").is_ok());
        assert!(axes(names(&["band", "y", "x"]), 3, "--axes").is_ok());
        for (list, rank, why) in [
            (&["y", "x"][..], 3, "2 names for an array of 3"),
            (&["x"][..], 1, "2 to 5 dimensions"),
            (&["lat", "lon"][..], 2, "2 or 3 space axes"),
            (&["y", "y"][..], 2, "names two dimensions"),
            (&["y", "t", "x"][..], 3, "orders the axes"),
            (&["c", "band", "y", "x"][..], 4, "one channel or other axis"),
            (
                &["w", "z", "y", "x", "v"][..],
                5,
                "one channel or other axis",
            ),
            (&["z", "c", "y", "x"][..], 4, "orders the axes"),
            (&["t", "y", "x", "time"][..], 4, "one time axis"),
        ] {
            let err = axes(names(list), rank, "--axes").unwrap_err().to_string();
            assert!(err.contains(why), "{list:?}: {err}");
        }
    }

    #[test]
    fn factors_and_scales_apply_to_space_axes_unless_given_per_dimension() {
        let ax = axes(names(&["c", "y", "x"]), 3, "--axes").unwrap();
        let f = per_dimension("2", &ax, 1u64, "--factor", |f| f >= 1).unwrap();
        assert_eq!(f, [1, 2, 2]);
        let f = per_dimension("1,3,2", &ax, 1u64, "--factor", |f| f >= 1).unwrap();
        assert_eq!(f, [1, 3, 2]);
        assert!(per_dimension("0", &ax, 1u64, "--factor", |f| f >= 1).is_err());
        assert!(per_dimension("2,2", &ax, 1u64, "--factor", |f| f >= 1).is_err());
        let s = per_dimension("0.5", &ax, 1f64, "--scale", |s: f64| s > 0.0).unwrap();
        assert_eq!(s, [1.0, 0.5, 0.5]);
    }

    #[test]
    fn levels_stop_once_one_chunk_holds_each_downsampled_dimension() {
        let shapes = level_shapes(&[3, 1000, 300], &[1, 2, 2], &[1, 128, 128], None);
        assert_eq!(
            shapes,
            [
                vec![3, 1000, 300],
                vec![3, 500, 150],
                vec![3, 250, 75],
                vec![3, 125, 38]
            ]
        );
        // Already one chunk: level 0 alone.
        assert_eq!(level_shapes(&[64, 64], &[2, 2], &[64, 64], None).len(), 1);
        assert_eq!(
            level_shapes(&[5, 5], &[2, 2], &[64, 64], Some(4)),
            [vec![5, 5], vec![3, 3], vec![2, 2], vec![1, 1]]
        );
    }
}
