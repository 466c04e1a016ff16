//! Chunk grids: how an array is cut into chunks, and the arithmetic that maps elements and
//! regions to chunks.
//!
//! Three grids are supported:
//!
//! - [`RegularChunkGrid`] (`"regular"`, core specification): every chunk has the same shape.
//! - [`RectilinearChunkGrid`] (`"rectilinear"`, registered extension; also read from the
//!   ZEP0003 draft's `"rectangular"` forms): along each dimension either a regular step or an
//!   explicit list of edge lengths, kept run-length encoded.
//! - `"zarrs.regular_bounded"` ([`ChunkGrid::RegularBounded`], zarrs' experimental grid):
//!   a regular grid whose chunks at the array's upper edge are cut at the array's end, so
//!   they are encoded at the smaller shape.
//!
//! All share one implementation of the grid arithmetic: each dimension is an *axis* that
//! maps an element index to a chunk index and a chunk index to its origin and size; a regular
//! grid is the special case where every axis is a regular step.
//!
//! All arithmetic is on `u64` and never panics: sums and products are checked and overflow is
//! reported as [`Error::Overflow`].

use std::iter::FusedIterator;

use serde_json::{Value, json};

use crate::error::{Error, ExtensionKind, Result};
use crate::extension::ExtensionObject;
use crate::json::{self, Map};
use crate::region::Region;

/// The JSON path used in errors from the programmatic constructors.
const DEFAULT_FIELD: &str = "chunk_grid";

/// The name of zarrs' bounded regular grid.
const REGULAR_BOUNDED: &str = "zarrs.regular_bounded";

/// A chunk grid: how an array is divided into chunks.
///
/// Every computation takes the array shape, because the number of chunks (and, for
/// rectilinear grids, the regular steps) depend on it. Every computation checks the rank of its
/// arguments and returns [`Error::RankMismatch`] when they disagree with the grid.
///
/// ```
/// use zarr_core::{ChunkGrid, Region};
///
/// let grid = ChunkGrid::from_json(
///     &serde_json::json!({"name": "regular", "configuration": {"chunk_shape": [4, 3]}}),
///     "chunk_grid",
/// )?;
/// let shape = [10, 10];
/// assert_eq!(grid.grid_shape(&shape)?, vec![3, 4]);
/// assert_eq!(grid.chunk_of(&shape, &[9, 4])?, (vec![2, 1], vec![1, 1]));
/// // Edge chunks keep the full chunk shape; the clipped region stops at the array's end.
/// assert_eq!(grid.chunk_shape(&shape, &[2, 3])?, vec![4, 3]);
/// assert_eq!(grid.chunk_region_clipped(&shape, &[2, 3])?.to_string(), "[8..10, 9..10]");
///
/// let region = Region::try_new(vec![3..5, 0..10])?;
/// let selections: Vec<_> = grid.chunks_in_region(&shape, &region)?.collect();
/// assert_eq!(selections.len(), 8);
/// assert_eq!(selections[0].chunk, vec![0, 0]);
/// assert_eq!(selections[0].within_chunk.to_string(), "[3..4, 0..3]");
/// assert_eq!(selections[0].within_output.to_string(), "[0..1, 0..3]");
/// assert_eq!(selections[7].chunk, vec![1, 3]);
/// assert_eq!(selections[7].within_chunk.to_string(), "[0..1, 0..1]");
/// assert_eq!(selections[7].within_output.to_string(), "[1..2, 9..10]");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ChunkGrid {
    /// `"regular"`: every chunk has the same shape.
    Regular(RegularChunkGrid),
    /// `"rectilinear"`: per dimension, a regular step or explicit edge lengths.
    Rectilinear(RectilinearChunkGrid),
    /// `"zarrs.regular_bounded"` (zarrs): chunks of the grid's shape, except at the array's
    /// upper edge, where a chunk ends at the array's end and is encoded at that smaller
    /// shape. The shapes of the edge chunks therefore change when the array is resized
    /// (`zarr-array` re-encodes them).
    ///
    /// ```
    /// use zarr_core::ChunkGrid;
    ///
    /// let grid = ChunkGrid::regular_bounded(vec![4, 3])?;
    /// let shape = [10, 10];
    /// assert_eq!(grid.grid_shape(&shape)?, vec![3, 4]);
    /// assert_eq!(grid.chunk_shape(&shape, &[0, 0])?, vec![4, 3]);
    /// assert_eq!(grid.chunk_shape(&shape, &[2, 3])?, vec![2, 1]);
    /// assert!(grid.depends_on_shape());
    /// assert_eq!(grid.to_json()["name"], "zarrs.regular_bounded");
    /// # Ok::<(), zarr_core::Error>(())
    /// ```
    RegularBounded(RegularChunkGrid),
}

/// A regular chunk grid: every chunk has the shape `chunk_shape`, and chunks at the upper edge
/// of the array are still encoded at that full shape.
///
/// ```
/// use zarr_core::{ChunkGrid, RegularChunkGrid};
///
/// let grid = ChunkGrid::from(RegularChunkGrid::try_new(vec![3])?);
/// assert_eq!(grid.grid_shape(&[5])?, vec![2]);
/// assert_eq!(grid.chunk_origin(&[5], &[1])?, vec![3]);
/// assert_eq!(grid.chunk_shape(&[5], &[1])?, vec![3]);
/// assert_eq!(grid.chunk_region_clipped(&[5], &[1])?.to_string(), "[3..5]");
/// assert!(RegularChunkGrid::try_new(vec![3, 0]).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RegularChunkGrid {
    /// Every entry is at least 1.
    chunk_shape: Vec<u64>,
}

impl RegularChunkGrid {
    /// A regular grid with the given chunk shape.
    ///
    /// # Errors
    /// [`Error::InvalidField`] naming `chunk_grid.configuration.chunk_shape[i]` if an entry is
    /// zero.
    pub fn try_new(chunk_shape: Vec<u64>) -> Result<Self> {
        Self::try_new_at(
            chunk_shape,
            &json::join(DEFAULT_FIELD, "configuration.chunk_shape"),
        )
    }

    fn try_new_at(chunk_shape: Vec<u64>, field: &str) -> Result<Self> {
        match chunk_shape.iter().position(|&c| c == 0) {
            Some(i) => Err(Error::invalid(
                json::index(field, i),
                "chunk size must be greater than zero",
            )),
            None => Ok(Self { chunk_shape }),
        }
    }

    /// The shape of every chunk (every entry is at least 1).
    pub fn chunk_shape(&self) -> &[u64] {
        &self.chunk_shape
    }

    /// The number of dimensions.
    pub fn rank(&self) -> usize {
        self.chunk_shape.len()
    }
}

/// How one dimension of a [`RectilinearChunkGrid`] is divided: the programmatic counterpart of
/// one entry of `chunk_shapes`.
///
/// ```
/// use zarr_core::{ChunkGrid, DimensionChunks, RectilinearChunkGrid};
///
/// // Dimension 0: edges 1, 1, 1, 3 (written `[[1, 3], 3]`); dimension 1: a step of 4.
/// let grid = RectilinearChunkGrid::try_new(vec![
///     DimensionChunks::Explicit(vec![(1, 3), (3, 1)]),
///     DimensionChunks::Regular(4),
/// ])?;
/// assert_eq!(ChunkGrid::from(grid).grid_shape(&[6, 6])?, vec![4, 2]);
/// assert_eq!(
///     DimensionChunks::from_edges([1, 1, 1, 3]),
///     DimensionChunks::Explicit(vec![(1, 3), (3, 1)])
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DimensionChunks {
    /// A regular step `m` (at least 1): chunks of length `m`, repeated until they cover the
    /// dimension. The number of chunks therefore depends on the array's shape.
    Regular(u64),
    /// Explicit edge lengths as run-length pairs `(size, count)`: `count` chunks of length
    /// `size`, in order. Both must be at least 1. The lengths must add up to at least the
    /// dimension's length (overshoot is allowed) and to at most `u64::MAX`.
    Explicit(Vec<(u64, u64)>),
}

impl DimensionChunks {
    /// Explicit edge lengths given one by one. Adjacent equal lengths are merged into runs.
    pub fn from_edges(edges: impl IntoIterator<Item = u64>) -> Self {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for edge in edges {
            match runs.last_mut() {
                Some((size, count)) if *size == edge && *count < u64::MAX => *count += 1,
                _ => runs.push((edge, 1)),
            }
        }
        Self::Explicit(runs)
    }
}

/// A rectilinear chunk grid: along each dimension either a regular step or an explicit list of
/// edge lengths.
///
/// Explicit edge lengths are kept as run-length segments and looked up by binary search, so a
/// dimension written `[[1, 1000000000000]]` costs one segment, not a trillion entries. Adjacent
/// runs of equal length are merged, so `[4, 4, 4]` and `[[4, 3]]` describe the same grid (and
/// compare equal); [`ChunkGrid::to_json`] writes the merged form.
///
/// The sum of a dimension's edge lengths may exceed the dimension's length; chunks that start
/// at or after the end of the array are not part of the grid.
///
/// ```
/// use zarr_core::ChunkGrid;
///
/// // ZEP0003's example, on an array of shape [100, 100].
/// let grid = ChunkGrid::from_json(
///     &serde_json::json!({
///         "name": "rectilinear",
///         "configuration": {"kind": "inline", "chunk_shapes": [[5, 5, 5, 15, 15, 20, 35], 10]}
///     }),
///     "chunk_grid",
/// )?;
/// let shape = [100, 100];
/// assert_eq!(grid.grid_shape(&shape)?, vec![7, 10]);
/// assert_eq!(grid.chunk_of(&shape, &[17, 17])?, (vec![3, 1], vec![2, 7]));
/// assert_eq!(grid.chunk_region(&shape, &[3, 1])?.to_string(), "[15..30, 10..20]");
/// assert_eq!(
///     grid.to_json()["configuration"]["chunk_shapes"],
///     serde_json::json!([[[5, 3], [15, 2], 20, 35], 10])
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RectilinearChunkGrid {
    dimensions: Vec<Dimension>,
}

/// One validated dimension of a rectilinear grid.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Dimension {
    /// A regular step, at least 1.
    Regular(u64),
    /// Explicit edge lengths.
    Explicit(EdgeRuns),
}

/// Explicit edge lengths as merged run-length segments.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct EdgeRuns {
    /// Non-empty runs, no two adjacent ones of equal size; `runs[0]` starts at chunk 0,
    /// element 0 (when there is one).
    runs: Vec<Run>,
    /// The total number of chunks (sum of the counts).
    num_chunks: u64,
    /// The total length covered (sum of size × count).
    total: u64,
}

/// `count` chunks of length `size`, the first of which has index `first_chunk` and starts at
/// element `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Run {
    size: u64,
    count: u64,
    first_chunk: u64,
    start: u64,
}

impl EdgeRuns {
    fn new() -> Self {
        Self {
            runs: Vec::new(),
            num_chunks: 0,
            total: 0,
        }
    }

    /// Append `count` chunks of length `size`; `field` names the run (for zero checks) and
    /// `dimension_field` the whole dimension (for overflow).
    fn push(&mut self, size: u64, count: u64, field: &str, dimension_field: &str) -> Result<()> {
        if size == 0 {
            return Err(Error::invalid(
                field,
                "edge length must be greater than zero",
            ));
        }
        if count == 0 {
            return Err(Error::invalid(
                field,
                "run-length count must be greater than zero",
            ));
        }
        let overflow = || {
            Error::overflow(format!(
                "the sum of the edge lengths in `{dimension_field}`"
            ))
        };
        let total = size
            .checked_mul(count)
            .and_then(|length| self.total.checked_add(length))
            .ok_or_else(overflow)?;
        // `num_chunks <= total` because every size is at least 1, so this cannot overflow
        // once `total` did not; keep it checked anyway.
        let num_chunks = self.num_chunks.checked_add(count).ok_or_else(overflow)?;
        match self.runs.last_mut() {
            Some(last) if last.size == size => last.count += count,
            _ => self.runs.push(Run {
                size,
                count,
                first_chunk: self.num_chunks,
                start: self.total,
            }),
        }
        self.total = total;
        self.num_chunks = num_chunks;
        Ok(())
    }

    /// The run holding element `x`. Requires `x < self.total`.
    fn run_of_element(&self, x: u64) -> &Run {
        let i = self.runs.partition_point(|r| r.start <= x);
        &self.runs[i.saturating_sub(1)]
    }

    /// The run holding chunk `k`. Requires `k < self.num_chunks`.
    fn run_of_chunk(&self, k: u64) -> &Run {
        let i = self.runs.partition_point(|r| r.first_chunk <= k);
        &self.runs[i.saturating_sub(1)]
    }

    fn pairs(&self) -> Vec<(u64, u64)> {
        self.runs.iter().map(|r| (r.size, r.count)).collect()
    }
}

impl RectilinearChunkGrid {
    /// A rectilinear grid from one description per dimension.
    ///
    /// # Errors
    /// [`Error::InvalidField`] naming `chunk_grid.configuration.chunk_shapes[i]` (a regular
    /// step of zero) or `chunk_grid.configuration.chunk_shapes[i][j]` (run `j` has a zero size
    /// or count); [`Error::Overflow`] if a dimension's edge lengths add up to more than
    /// `u64::MAX`.
    pub fn try_new(dimensions: Vec<DimensionChunks>) -> Result<Self> {
        let field = json::join(DEFAULT_FIELD, "configuration.chunk_shapes");
        let dimensions = dimensions
            .into_iter()
            .enumerate()
            .map(|(i, dimension)| {
                let dimension_field = json::index(&field, i);
                match dimension {
                    DimensionChunks::Regular(step) => regular_step(step, &dimension_field),
                    DimensionChunks::Explicit(runs) => {
                        let mut edges = EdgeRuns::new();
                        for (j, (size, count)) in runs.into_iter().enumerate() {
                            edges.push(
                                size,
                                count,
                                &json::index(&dimension_field, j),
                                &dimension_field,
                            )?;
                        }
                        Ok(Dimension::Explicit(edges))
                    }
                }
            })
            .collect::<Result<_>>()?;
        Ok(Self { dimensions })
    }

    /// The number of dimensions.
    pub fn rank(&self) -> usize {
        self.dimensions.len()
    }

    /// The description of every dimension, with adjacent runs of equal length merged.
    pub fn dimensions(&self) -> Vec<DimensionChunks> {
        self.dimensions
            .iter()
            .map(|d| match d {
                Dimension::Regular(step) => DimensionChunks::Regular(*step),
                Dimension::Explicit(edges) => DimensionChunks::Explicit(edges.pairs()),
            })
            .collect()
    }
}

/// The same grid, written with a regular step per dimension (a lossless conversion).
impl From<RegularChunkGrid> for RectilinearChunkGrid {
    fn from(grid: RegularChunkGrid) -> Self {
        Self {
            dimensions: grid
                .chunk_shape
                .into_iter()
                .map(Dimension::Regular)
                .collect(),
        }
    }
}

impl From<RegularChunkGrid> for ChunkGrid {
    fn from(grid: RegularChunkGrid) -> Self {
        Self::Regular(grid)
    }
}

impl From<RectilinearChunkGrid> for ChunkGrid {
    fn from(grid: RectilinearChunkGrid) -> Self {
        Self::Rectilinear(grid)
    }
}

fn regular_step(step: u64, field: &str) -> Result<Dimension> {
    if step == 0 {
        Err(Error::invalid(
            field,
            "chunk size must be greater than zero",
        ))
    } else {
        Ok(Dimension::Regular(step))
    }
}

/// One dimension of any grid, as the arithmetic sees it.
#[derive(Debug, Clone, Copy)]
enum Axis<'a> {
    /// Chunks of this length (at least 1), repeated forever.
    Regular(u64),
    /// Chunks of `step` (at least 1), the last one cut at `len`, the dimension's length.
    Bounded { step: u64, len: u64 },
    /// Explicit edge lengths.
    Explicit(&'a EdgeRuns),
}

impl Axis<'_> {
    /// The number of chunks that cover a dimension of length `n`. Requires the axis to cover
    /// `n` (checked by [`ChunkGrid::validate`]).
    fn num_chunks(self, n: u64) -> u64 {
        match self {
            Self::Regular(c) | Self::Bounded { step: c, .. } => {
                n / c + u64::from(!n.is_multiple_of(c))
            }
            Self::Explicit(_) if n == 0 => 0,
            Self::Explicit(_) => self.locate(n - 1).0 + 1,
        }
    }

    /// The chunk holding element `x` and the position of `x` inside it. Requires `x` inside
    /// the covered length.
    fn locate(self, x: u64) -> (u64, u64) {
        match self {
            Self::Regular(c) | Self::Bounded { step: c, .. } => (x / c, x % c),
            Self::Explicit(edges) => {
                let run = edges.run_of_element(x);
                let offset = x - run.start;
                (run.first_chunk + offset / run.size, offset % run.size)
            }
        }
    }

    /// The origin and the (full) length of chunk `k`. Requires `k` to be a chunk of the grid
    /// (so that the origin is at most the last element of the array).
    fn span(self, k: u64) -> (u64, u64) {
        match self {
            Self::Regular(c) => (k * c, c),
            Self::Bounded { step, len } => {
                let origin = k * step;
                (origin, step.min(len.saturating_sub(origin)))
            }
            Self::Explicit(edges) => {
                let run = edges.run_of_chunk(k);
                (run.start + (k - run.first_chunk) * run.size, run.size)
            }
        }
    }
}

impl ChunkGrid {
    /// A regular grid with the given chunk shape.
    ///
    /// # Errors
    /// As [`RegularChunkGrid::try_new`].
    pub fn regular(chunk_shape: Vec<u64>) -> Result<Self> {
        RegularChunkGrid::try_new(chunk_shape).map(Self::Regular)
    }

    /// A rectilinear grid from one description per dimension.
    ///
    /// # Errors
    /// As [`RectilinearChunkGrid::try_new`].
    pub fn rectilinear(dimensions: Vec<DimensionChunks>) -> Result<Self> {
        RectilinearChunkGrid::try_new(dimensions).map(Self::Rectilinear)
    }

    /// A `zarrs.regular_bounded` grid with the given chunk shape: edge chunks end at the
    /// array's end.
    ///
    /// # Errors
    /// As [`RegularChunkGrid::try_new`].
    pub fn regular_bounded(chunk_shape: Vec<u64>) -> Result<Self> {
        RegularChunkGrid::try_new(chunk_shape).map(Self::RegularBounded)
    }

    /// Whether the shapes of some chunks depend on the array's shape (a
    /// `zarrs.regular_bounded` grid): resizing the array then changes how its edge chunks
    /// are encoded.
    pub fn depends_on_shape(&self) -> bool {
        matches!(self, Self::RegularBounded(_))
    }

    /// The chunk shape of a grid whose chunks all have one nominal shape (`regular` and
    /// `zarrs.regular_bounded`; for the latter, edge chunks are smaller); `None` for a
    /// rectilinear grid.
    pub fn nominal_chunk_shape(&self) -> Option<&[u64]> {
        match self {
            Self::Regular(grid) | Self::RegularBounded(grid) => Some(grid.chunk_shape()),
            Self::Rectilinear(_) => None,
        }
    }

    /// Parse a `chunk_grid` value; `field` is its JSON path, normally `"chunk_grid"`.
    ///
    /// Accepted forms:
    /// - `{"name": "regular", "configuration": {"chunk_shape": [...]}}`;
    /// - `{"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [...]}}`,
    ///   one entry per dimension: an integer step ≥ 1, or a list whose items are edge lengths
    ///   ≥ 1 or run-length pairs `[size, count]` (both ≥ 1);
    /// - the ZEP0003 draft forms `{"name": "rectangular", "configuration": {"chunk_shape":
    ///   [...]}}` and, in the draft's old metadata style, `{"type": "rectangular",
    ///   "chunk_shape": [...], "separator": "/"}` (each entry an integer or a list of integers,
    ///   no run-length pairs), read as rectilinear grids. The old style also accepts
    ///   `"type": "regular"`. Its `separator` belongs to the chunk key encoding and is ignored
    ///   here. Unlike the draft, edge lengths adding up to more than the array's length are
    ///   accepted, as in the registered extension.
    ///
    /// # Errors
    /// - [`Error::MustUnderstandNotAllowed`] for `"must_understand": false`;
    /// - [`Error::UnknownExtension`] for a grid name other than the above;
    /// - [`Error::MissingField`] / [`Error::UnknownField`] for absent required or unexpected
    ///   members;
    /// - [`Error::InvalidField`] for values of the wrong type, sizes or counts below 1, a
    ///   `kind` other than `"inline"`, or the short-hand string form (these grids need a
    ///   configuration), naming the field, e.g. `chunk_grid.configuration.chunk_shapes[1][2]`;
    /// - [`Error::Overflow`] if a dimension's edge lengths add up to more than `u64::MAX`.
    pub fn from_json(value: &Value, field: &str) -> Result<Self> {
        if let Value::Object(map) = value
            && map.contains_key("type")
            && !map.contains_key("name")
        {
            return Self::from_draft_json(map, field);
        }
        let extension = ExtensionObject::from_json_understood(value, field)?;
        let name = extension.name.as_str();
        if !matches!(
            name,
            "regular" | "rectilinear" | "rectangular" | REGULAR_BOUNDED
        ) {
            return Err(Error::UnknownExtension {
                kind: ExtensionKind::ChunkGrid,
                name: name.to_owned(),
                field: field.to_owned(),
            });
        }
        let config_field = json::join(field, "configuration");
        let Some(config) = &extension.configuration else {
            return Err(if value.is_string() {
                Error::invalid(
                    field,
                    format!(
                        "the short-hand form {name:?} is not allowed: a {name} chunk grid needs \
                         a configuration, as in \
                         {{\"name\": \"{name}\", \"configuration\": {{...}}}}"
                    ),
                )
            } else {
                Error::missing(config_field)
            });
        };
        match name {
            "regular" => {
                json::deny_unknown(config, &["chunk_shape"], &config_field)?;
                parse_regular(config, &config_field).map(Self::Regular)
            }
            REGULAR_BOUNDED => {
                json::deny_unknown(config, &["chunk_shape"], &config_field)?;
                parse_regular(config, &config_field).map(Self::RegularBounded)
            }
            "rectilinear" => {
                json::deny_unknown(config, &["kind", "chunk_shapes"], &config_field)?;
                let kind_field = json::join(&config_field, "kind");
                let kind =
                    json::as_str(json::required(config, "kind", &config_field)?, &kind_field)?;
                if kind != "inline" {
                    return Err(Error::invalid(
                        kind_field,
                        format!("unsupported kind {kind:?} (only \"inline\" is defined)"),
                    ));
                }
                let shapes = json::required(config, "chunk_shapes", &config_field)?;
                parse_dimensions(shapes, &json::join(&config_field, "chunk_shapes"), true)
                    .map(Self::Rectilinear)
            }
            _ => {
                json::deny_unknown(config, &["chunk_shape"], &config_field)?;
                let shapes = json::required(config, "chunk_shape", &config_field)?;
                parse_dimensions(shapes, &json::join(&config_field, "chunk_shape"), false)
                    .map(Self::Rectilinear)
            }
        }
    }

    /// The ZEP0003 draft's old metadata style: `{"type": ..., "chunk_shape": ..., "separator":
    /// ...}`.
    fn from_draft_json(map: &Map, field: &str) -> Result<Self> {
        json::deny_unknown(map, &["type", "chunk_shape", "separator"], field)?;
        let type_field = json::join(field, "type");
        let kind = json::as_str(json::required(map, "type", field)?, &type_field)?;
        match kind {
            "regular" => parse_regular(map, field).map(Self::Regular),
            "rectangular" => {
                let shapes = json::required(map, "chunk_shape", field)?;
                parse_dimensions(shapes, &json::join(field, "chunk_shape"), false)
                    .map(Self::Rectilinear)
            }
            other => Err(Error::UnknownExtension {
                kind: ExtensionKind::ChunkGrid,
                name: other.to_owned(),
                field: type_field,
            }),
        }
    }

    /// The canonical JSON form of the registered specifications:
    /// `{"name": "regular", "configuration": {"chunk_shape": [...]}}` or
    /// `{"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [...]}}`.
    ///
    /// In `chunk_shapes` a regular step is written as an integer and explicit edge lengths as a
    /// list in which a run of one chunk is a bare integer and a longer run is `[size, count]`.
    /// Grids read from the ZEP0003 draft forms are written in this form too.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Regular(grid) => json!({
                "name": "regular",
                "configuration": {"chunk_shape": grid.chunk_shape},
            }),
            Self::RegularBounded(grid) => json!({
                "name": REGULAR_BOUNDED,
                "configuration": {"chunk_shape": grid.chunk_shape},
            }),
            Self::Rectilinear(grid) => {
                let shapes: Vec<Value> = grid
                    .dimensions
                    .iter()
                    .map(|dimension| match dimension {
                        Dimension::Regular(step) => json!(step),
                        Dimension::Explicit(edges) => edges
                            .runs
                            .iter()
                            .map(|r| {
                                if r.count == 1 {
                                    json!(r.size)
                                } else {
                                    json!([r.size, r.count])
                                }
                            })
                            .collect(),
                    })
                    .collect();
                json!({
                    "name": "rectilinear",
                    "configuration": {"kind": "inline", "chunk_shapes": shapes},
                })
            }
        }
    }

    /// The number of dimensions.
    pub fn rank(&self) -> usize {
        match self {
            Self::Regular(grid) | Self::RegularBounded(grid) => grid.rank(),
            Self::Rectilinear(grid) => grid.rank(),
        }
    }

    /// The axis of dimension `i` (`i < self.rank()`) of an array of `shape` (of the grid's
    /// rank).
    fn axis(&self, i: usize, shape: &[u64]) -> Axis<'_> {
        match self {
            Self::Regular(grid) => Axis::Regular(grid.chunk_shape[i]),
            Self::RegularBounded(grid) => Axis::Bounded {
                step: grid.chunk_shape[i],
                len: shape[i],
            },
            Self::Rectilinear(grid) => match &grid.dimensions[i] {
                Dimension::Regular(step) => Axis::Regular(*step),
                Dimension::Explicit(edges) => Axis::Explicit(edges),
            },
        }
    }

    /// The axes of an array of `shape`, which has the grid's rank (checked by
    /// [`ChunkGrid::validate`]).
    fn axes<'s, 'a>(&'s self, shape: &'a [u64]) -> impl Iterator<Item = Axis<'s>> + use<'s, 'a> {
        (0..self.rank()).map(move |i| self.axis(i, shape))
    }

    /// Check that the grid fits an array of the given shape: the ranks agree, and explicit edge
    /// lengths cover their dimension (going past its end is allowed).
    ///
    /// Every other computation performs this check first.
    ///
    /// # Errors
    /// [`Error::RankMismatch`] if the ranks differ; [`Error::InvalidField`] naming
    /// `chunk_grid.configuration.chunk_shapes[i]` if the edge lengths of dimension `i` add up
    /// to less than `shape[i]`.
    pub fn validate(&self, shape: &[u64]) -> Result<()> {
        if shape.len() != self.rank() {
            return Err(Error::RankMismatch {
                what: "chunk grid".into(),
                expected: shape.len(),
                found: self.rank(),
            });
        }
        for (i, (axis, &n)) in self.axes(shape).zip(shape).enumerate() {
            if let Axis::Explicit(edges) = axis
                && edges.total < n
            {
                return Err(Error::invalid(
                    json::index(&json::join(DEFAULT_FIELD, "configuration.chunk_shapes"), i),
                    format!(
                        "the edge lengths add up to {}, less than the array's length {n} in \
                         dimension {i}",
                        edges.total
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The distinct chunk lengths along each dimension, ascending: the full (unclipped)
    /// lengths of the chunks that start inside an array of `shape`. A regular grid has one
    /// per dimension, a `zarrs.regular_bounded` grid one or two (its last chunk is cut at
    /// the array's end); a zero-length dimension has none.
    ///
    /// A codec with a constraint per dimension (the sharding codec's inner chunk shape must
    /// divide every shard) can check a rectilinear grid with these, without visiting every
    /// chunk.
    ///
    /// ```
    /// use zarr_core::{ChunkGrid, DimensionChunks};
    ///
    /// let grid = ChunkGrid::rectilinear(vec![
    ///     DimensionChunks::from_edges([10, 20, 10, 5]),
    ///     DimensionChunks::Regular(4),
    /// ])?;
    /// // The 5 starts at 40, the array's end: it is no chunk of this array.
    /// assert_eq!(grid.edge_lengths(&[40, 9])?, [vec![10, 20], vec![4]]);
    /// # Ok::<(), zarr_core::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`ChunkGrid::validate`].
    pub fn edge_lengths(&self, shape: &[u64]) -> Result<Vec<Vec<u64>>> {
        self.validate(shape)?;
        Ok(self
            .axes(shape)
            .zip(shape)
            .map(|(axis, &n)| {
                let mut lengths: Vec<u64> = match axis {
                    _ if n == 0 => Vec::new(),
                    Axis::Regular(c) => vec![c],
                    Axis::Bounded { step, len } => {
                        // Full chunks (if there are two or more), then the last one.
                        let last = len - (axis.num_chunks(len) - 1) * step;
                        if len > step {
                            vec![step, last]
                        } else {
                            vec![last]
                        }
                    }
                    Axis::Explicit(edges) => edges
                        .runs
                        .iter()
                        .take_while(|run| run.start < n)
                        .map(|run| run.size)
                        .collect(),
                };
                lengths.sort_unstable();
                lengths.dedup();
                lengths
            })
            .collect())
    }

    /// The number of chunks along each dimension: `ceil(shape[i] / chunk[i])` for a regular
    /// step, and the number of chunks needed to cover `shape[i]` for explicit edge lengths
    /// (chunks starting at or after the array's end are not counted). A zero-length dimension
    /// has no chunks.
    ///
    /// # Errors
    /// As [`ChunkGrid::validate`].
    pub fn grid_shape(&self, shape: &[u64]) -> Result<Vec<u64>> {
        self.validate(shape)?;
        Ok(self
            .axes(shape)
            .zip(shape)
            .map(|(axis, &n)| axis.num_chunks(n))
            .collect())
    }

    /// The total number of chunks in the grid (`1` for a 0-dimensional array).
    ///
    /// # Errors
    /// As [`ChunkGrid::validate`]; [`Error::Overflow`] if the product does not fit in `u64`.
    pub fn num_chunks(&self, shape: &[u64]) -> Result<u64> {
        product(&self.grid_shape(shape)?, "the number of chunks in the grid")
    }

    /// The chunk holding an element, and the element's position inside that chunk.
    ///
    /// # Errors
    /// As [`ChunkGrid::validate`]; [`Error::RankMismatch`] if `element` has the wrong rank;
    /// [`Error::RegionOutOfBounds`] if the element lies outside the array.
    pub fn chunk_of(&self, shape: &[u64], element: &[u64]) -> Result<(Vec<u64>, Vec<u64>)> {
        self.validate(shape)?;
        check_rank("element", shape.len(), element.len())?;
        if element.iter().zip(shape).any(|(x, n)| x >= n) {
            let ranges: Vec<String> = element
                .iter()
                .map(|&x| format!("{x}..{}", u128::from(x) + 1))
                .collect();
            return Err(Error::RegionOutOfBounds {
                region: format!("[{}]", ranges.join(", ")),
                shape: shape.to_vec(),
            });
        }
        Ok(self
            .axes(shape)
            .zip(element)
            .map(|(axis, &x)| axis.locate(x))
            .unzip())
    }

    /// Along dimension `dim` alone: the index of the chunk holding element index `x`, and the
    /// elements that chunk covers (not clipped to the array). The one-dimensional
    /// [`ChunkGrid::chunk_of`], for grouping many indices of one dimension by chunk.
    ///
    /// ```
    /// use zarr_core::{ChunkGrid, DimensionChunks};
    ///
    /// let grid = ChunkGrid::rectilinear(vec![
    ///     DimensionChunks::Regular(10),
    ///     DimensionChunks::from_edges([2, 3, 5]),
    /// ])?;
    /// assert_eq!(grid.chunk_along(&[25, 10], 0, 24)?, (2, 20..30));
    /// assert_eq!(grid.chunk_along(&[25, 10], 1, 4)?, (1, 2..5));
    /// assert!(grid.chunk_along(&[25, 10], 1, 10).is_err());
    /// # Ok::<(), zarr_core::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`ChunkGrid::validate`]; [`Error::RankMismatch`] if `dim` is not a dimension;
    /// [`Error::RegionOutOfBounds`] if `x` is not below `shape[dim]`.
    pub fn chunk_along(
        &self,
        shape: &[u64],
        dim: usize,
        x: u64,
    ) -> Result<(u64, std::ops::Range<u64>)> {
        self.validate(shape)?;
        check_dimension(dim, shape.len())?;
        if x >= shape[dim] {
            let ranges: Vec<String> = shape
                .iter()
                .enumerate()
                .map(|(d, n)| {
                    if d == dim {
                        format!("{x}..{}", u128::from(x) + 1)
                    } else {
                        format!("0..{n}")
                    }
                })
                .collect();
            return Err(Error::RegionOutOfBounds {
                region: format!("[{}]", ranges.join(", ")),
                shape: shape.to_vec(),
            });
        }
        let axis = self.axis(dim, shape);
        let (k, _) = axis.locate(x);
        let (origin, size) = axis.span(k);
        Ok((k, origin..origin.saturating_add(size)))
    }

    /// Along dimension `dim` alone: the elements chunk `k` covers (not clipped to the array).
    ///
    /// ```
    /// use zarr_core::{ChunkGrid, DimensionChunks};
    ///
    /// let grid = ChunkGrid::rectilinear(vec![DimensionChunks::from_edges([2, 3, 5])])?;
    /// assert_eq!(grid.chunk_range_along(&[10], 0, 1)?, 2..5);
    /// assert!(grid.chunk_range_along(&[10], 0, 3).is_err());
    /// # Ok::<(), zarr_core::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`ChunkGrid::validate`]; [`Error::RankMismatch`] if `dim` is not a dimension;
    /// [`Error::ChunkOutOfBounds`] if `k` is not a chunk of the dimension.
    pub fn chunk_range_along(
        &self,
        shape: &[u64],
        dim: usize,
        k: u64,
    ) -> Result<std::ops::Range<u64>> {
        let grid_shape = self.grid_shape(shape)?;
        check_dimension(dim, shape.len())?;
        if k >= grid_shape[dim] {
            let mut chunk = vec![0; shape.len()];
            chunk[dim] = k;
            return Err(Error::ChunkOutOfBounds { chunk, grid_shape });
        }
        let (origin, size) = self.axis(dim, shape).span(k);
        Ok(origin..origin.saturating_add(size))
    }

    /// Check a chunk index against the grid.
    fn check_chunk(&self, shape: &[u64], chunk: &[u64]) -> Result<()> {
        let grid_shape = self.grid_shape(shape)?;
        check_rank("chunk index", shape.len(), chunk.len())?;
        if chunk.iter().zip(&grid_shape).any(|(k, g)| k >= g) {
            return Err(Error::ChunkOutOfBounds {
                chunk: chunk.to_vec(),
                grid_shape,
            });
        }
        Ok(())
    }

    /// The origin (first element) and full length of a chunk in every dimension.
    fn spans(&self, shape: &[u64], chunk: &[u64]) -> Result<Vec<(u64, u64)>> {
        self.check_chunk(shape, chunk)?;
        Ok(self
            .axes(shape)
            .zip(chunk)
            .map(|(axis, &k)| axis.span(k))
            .collect())
    }

    /// The indices of the first element of a chunk.
    ///
    /// # Errors
    /// As [`ChunkGrid::validate`]; [`Error::RankMismatch`] if `chunk` has the wrong rank;
    /// [`Error::ChunkOutOfBounds`] if the chunk lies outside the grid.
    pub fn chunk_origin(&self, shape: &[u64], chunk: &[u64]) -> Result<Vec<u64>> {
        Ok(self.spans(shape, chunk)?.into_iter().map(|s| s.0).collect())
    }

    /// The full shape of a chunk, as it is encoded: chunks at the array's upper edge are not
    /// clipped.
    ///
    /// # Errors
    /// As [`ChunkGrid::chunk_origin`].
    pub fn chunk_shape(&self, shape: &[u64], chunk: &[u64]) -> Result<Vec<u64>> {
        Ok(self.spans(shape, chunk)?.into_iter().map(|s| s.1).collect())
    }

    /// The elements a chunk covers, `origin..origin + chunk_shape`, not clipped to the array.
    ///
    /// # Errors
    /// As [`ChunkGrid::chunk_origin`]; [`Error::Overflow`] if the chunk ends past `u64::MAX`
    /// (possible only for the last chunk of a regular dimension whose length is close to
    /// 2^64); [`ChunkGrid::chunk_region_clipped`] always succeeds for such chunks.
    pub fn chunk_region(&self, shape: &[u64], chunk: &[u64]) -> Result<Region> {
        let ranges = self
            .spans(shape, chunk)?
            .into_iter()
            .enumerate()
            .map(|(i, (origin, size))| {
                origin
                    .checked_add(size)
                    .map(|end| origin..end)
                    .ok_or_else(|| {
                        Error::overflow(format!("the end of chunk {chunk:?} in dimension {i}"))
                    })
            })
            .collect::<Result<_>>()?;
        Ok(Region::from_valid_ranges(ranges))
    }

    /// The elements of the array a chunk covers: its region clipped to the array's shape.
    ///
    /// # Errors
    /// As [`ChunkGrid::chunk_origin`].
    pub fn chunk_region_clipped(&self, shape: &[u64], chunk: &[u64]) -> Result<Region> {
        let ranges = self
            .spans(shape, chunk)?
            .into_iter()
            .zip(shape)
            .map(|((origin, size), &n)| origin..origin.saturating_add(size).min(n))
            .collect();
        Ok(Region::from_valid_ranges(ranges))
    }

    /// The chunks a region of the array touches, with the part of each chunk it needs, in C
    /// order of chunk indices (last dimension fastest).
    ///
    /// The iterator is lazy and holds O(rank) state, so a region may touch any number of
    /// chunks. An empty region yields nothing; a 0-dimensional array has one chunk `[]`, which
    /// the region `[]` selects.
    ///
    /// ```
    /// use zarr_core::{ChunkGrid, Region};
    ///
    /// let grid = ChunkGrid::regular(vec![1, 1])?;
    /// let shape = [u64::MAX, u64::MAX];
    /// let mut chunks = grid.chunks_in_region(&shape, &Region::full(&shape))?;
    /// assert!(chunks.num_chunks().is_err()); // 2^128 - 2^65 + 1 chunks: more than u64 counts
    /// assert_eq!(chunks.nth(2).unwrap().chunk, vec![0, 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`ChunkGrid::validate`]; [`Error::RankMismatch`] or [`Error::RegionOutOfBounds`] if
    /// the region does not lie inside the array.
    pub fn chunks_in_region(&self, shape: &[u64], region: &Region) -> Result<ChunkSelections<'_>> {
        self.validate(shape)?;
        region.check_within(shape)?;
        let axes: Vec<Axis<'_>> = self.axes(shape).collect();
        let rank = axes.len();
        let mut first = Vec::with_capacity(rank);
        let mut last = Vec::with_capacity(rank);
        let mut remaining = Some(1u64);
        if region.is_empty() {
            remaining = Some(0);
        } else {
            for (axis, range) in axes.iter().zip(region.ranges()) {
                let k0 = axis.locate(range.start).0;
                let k1 = axis.locate(range.end - 1).0;
                let (origin, size) = axis.span(k0);
                first.push(FirstChunk {
                    index: k0,
                    origin,
                    size,
                });
                last.push(k1);
                remaining = remaining.and_then(|r| r.checked_mul(k1 - k0 + 1));
            }
        }
        let current = first.iter().map(|f| f.index).collect();
        let spans = first.iter().map(|f| (f.origin, f.size)).collect();
        Ok(ChunkSelections {
            axes,
            region: region.clone(),
            first,
            last,
            current,
            spans,
            remaining,
            done: region.is_empty(),
        })
    }
}

/// Check that `dim` is a dimension of an array of rank `rank`.
fn check_dimension(dim: usize, rank: usize) -> Result<()> {
    if dim < rank {
        Ok(())
    } else {
        Err(Error::RankMismatch {
            what: "dimension index".into(),
            expected: rank,
            found: dim + 1,
        })
    }
}

fn check_rank(what: &str, expected: usize, found: usize) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::RankMismatch {
            what: what.into(),
            expected,
            found,
        })
    }
}

fn product(values: &[u64], what: &str) -> Result<u64> {
    if values.contains(&0) {
        return Ok(0);
    }
    values
        .iter()
        .try_fold(1u64, |acc, &v| acc.checked_mul(v))
        .ok_or_else(|| Error::overflow(what))
}

/// `chunk_shape` of a `regular` configuration (or of the draft's old style object).
fn parse_regular(map: &Map, prefix: &str) -> Result<RegularChunkGrid> {
    let field = json::join(prefix, "chunk_shape");
    let chunk_shape = json::as_u64_list(json::required(map, "chunk_shape", prefix)?, &field)?;
    RegularChunkGrid::try_new_at(chunk_shape, &field)
}

/// `chunk_shapes` (or the draft's `chunk_shape`): one entry per dimension.
fn parse_dimensions(value: &Value, field: &str, allow_runs: bool) -> Result<RectilinearChunkGrid> {
    let dimensions = json::as_array(value, field)?
        .iter()
        .enumerate()
        .map(|(i, entry)| parse_dimension(entry, &json::index(field, i), allow_runs))
        .collect::<Result<_>>()?;
    Ok(RectilinearChunkGrid { dimensions })
}

fn parse_dimension(value: &Value, field: &str, allow_runs: bool) -> Result<Dimension> {
    match value {
        Value::Number(_) => regular_step(json::as_u64(value, field)?, field),
        Value::Array(items) => {
            let mut edges = EdgeRuns::new();
            for (j, item) in items.iter().enumerate() {
                let item_field = json::index(field, j);
                let (size, count) = match item {
                    Value::Number(_) => (positive(item, &item_field, "edge length")?, 1),
                    Value::Array(pair) if allow_runs => {
                        if pair.len() != 2 {
                            return Err(Error::invalid(
                                item_field,
                                format!(
                                    "a run-length pair must be [size, count], found {} entries",
                                    pair.len()
                                ),
                            ));
                        }
                        (
                            positive(&pair[0], &json::index(&item_field, 0), "edge length")?,
                            positive(&pair[1], &json::index(&item_field, 1), "run-length count")?,
                        )
                    }
                    other => {
                        let expected = if allow_runs {
                            "an edge length or a [size, count] pair"
                        } else {
                            "an edge length"
                        };
                        return Err(Error::invalid(
                            item_field,
                            format!("expected {expected}, found {}", json::type_name(other)),
                        ));
                    }
                };
                edges.push(size, count, &item_field, field)?;
            }
            Ok(Dimension::Explicit(edges))
        }
        other => Err(Error::invalid(
            field,
            format!(
                "expected a chunk size or a list of edge lengths, found {}",
                json::type_name(other)
            ),
        )),
    }
}

/// An integer that must be at least 1.
fn positive(value: &Value, field: &str, what: &str) -> Result<u64> {
    match json::as_u64(value, field)? {
        0 => Err(Error::invalid(
            field,
            format!("{what} must be greater than zero"),
        )),
        v => Ok(v),
    }
}

/// One chunk touched by a region, as yielded by [`ChunkGrid::chunks_in_region`].
///
/// `within_chunk` and `within_output` have the same shape, are never empty, and in every
/// dimension `chunk_origin + within_chunk.start == region.start + within_output.start`, where
/// `chunk_origin` is [`ChunkGrid::chunk_origin`] of `chunk`: element `p` of `within_chunk`
/// (counted from the chunk's origin) is element `p` of `within_output` (counted from the
/// region's start).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChunkSelection {
    /// The chunk's grid indices.
    pub chunk: Vec<u64>,
    /// The chunk's full (encoded) shape.
    pub chunk_shape: Vec<u64>,
    /// The part of the chunk the region needs, relative to the chunk's origin.
    pub within_chunk: Region,
    /// Where that part goes, relative to the region's start.
    pub within_output: Region,
}

/// The first chunk a region touches along one dimension.
#[derive(Debug, Clone, Copy)]
struct FirstChunk {
    index: u64,
    origin: u64,
    size: u64,
}

/// The lazy iterator of [`ChunkGrid::chunks_in_region`]: [`ChunkSelection`]s in C order of
/// chunk indices, holding O(rank) state.
///
/// Its [`size_hint`](Iterator::size_hint) is exact whenever the count fits in `usize`;
/// [`ChunkSelections::num_chunks`] gives it as a `u64`.
#[derive(Debug, Clone)]
pub struct ChunkSelections<'a> {
    axes: Vec<Axis<'a>>,
    region: Region,
    first: Vec<FirstChunk>,
    last: Vec<u64>,
    /// The next chunk to yield (when not `done`).
    current: Vec<u64>,
    /// Origin and length of `current` in every dimension.
    spans: Vec<(u64, u64)>,
    /// How many selections are left, `None` if that does not fit in `u64`.
    remaining: Option<u64>,
    done: bool,
}

impl ChunkSelections<'_> {
    /// The number of selections not yet yielded (all of them before the first call to
    /// `next`).
    ///
    /// # Errors
    /// [`Error::Overflow`] if the number does not fit in `u64`.
    pub fn num_chunks(&self) -> Result<u64> {
        self.remaining
            .ok_or_else(|| Error::overflow("the number of chunks in the region"))
    }

    /// Move `current` to the next chunk in C order, or finish.
    fn advance(&mut self) {
        self.remaining = self.remaining.map(|r| r.saturating_sub(1));
        for d in (0..self.current.len()).rev() {
            if self.current[d] < self.last[d] {
                self.current[d] += 1;
                self.spans[d] = self.axes[d].span(self.current[d]);
                return;
            }
            let first = self.first[d];
            self.current[d] = first.index;
            self.spans[d] = (first.origin, first.size);
        }
        self.done = true;
        self.remaining = Some(0);
    }
}

impl Iterator for ChunkSelections<'_> {
    type Item = ChunkSelection;

    fn next(&mut self) -> Option<ChunkSelection> {
        if self.done {
            return None;
        }
        let rank = self.current.len();
        let mut within_chunk = Vec::with_capacity(rank);
        let mut within_output = Vec::with_capacity(rank);
        for (&(origin, size), range) in self.spans.iter().zip(self.region.ranges()) {
            // The chunk overlaps the range, so `lo < hi`, `origin <= lo` and
            // `range.start <= lo`; the chunk's end may lie past u64::MAX, hence saturating.
            let lo = origin.max(range.start);
            let hi = origin.saturating_add(size).min(range.end);
            within_chunk.push(lo - origin..hi - origin);
            within_output.push(lo - range.start..hi - range.start);
        }
        let selection = ChunkSelection {
            chunk: self.current.clone(),
            chunk_shape: self.spans.iter().map(|s| s.1).collect(),
            within_chunk: Region::from_valid_ranges(within_chunk),
            within_output: Region::from_valid_ranges(within_output),
        };
        self.advance();
        Some(selection)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self.remaining.map(usize::try_from) {
            Some(Ok(n)) => (n, Some(n)),
            _ => (usize::MAX, None),
        }
    }
}

impl FusedIterator for ChunkSelections<'_> {}

#[cfg(test)]
// Tests build regions from literal ranges, including one-range ones.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<ChunkGrid> {
        ChunkGrid::from_json(&value, "chunk_grid")
    }

    fn rectilinear(shapes: Value) -> Result<ChunkGrid> {
        parse(json!({
            "name": "rectilinear",
            "configuration": {"kind": "inline", "chunk_shapes": shapes}
        }))
    }

    /// The error's field, for the variants that carry one.
    fn field_of(err: &Error) -> &str {
        match err {
            Error::MissingField { field }
            | Error::InvalidField { field, .. }
            | Error::UnknownField { field }
            | Error::UnknownExtension { field, .. }
            | Error::MustUnderstandNotAllowed { field } => field,
            other => panic!("error without a field: {other:?}"),
        }
    }

    fn assert_invalid(result: Result<ChunkGrid>, field: &str) {
        let err = result.unwrap_err();
        assert!(
            matches!(err, Error::InvalidField { .. }),
            "expected InvalidField for {field}, got {err:?}"
        );
        assert_eq!(field_of(&err), field, "{err}");
        assert!(err.to_string().contains(field), "{err}");
    }

    fn sizes(grid: &ChunkGrid, shape: &[u64], dim: usize) -> Vec<u64> {
        let grid_shape = grid.grid_shape(shape).unwrap();
        (0..grid_shape[dim])
            .map(|k| {
                let mut chunk = vec![0; shape.len()];
                chunk[dim] = k;
                grid.chunk_shape(shape, &chunk).unwrap()[dim]
            })
            .collect()
    }

    #[test]
    fn regular_parses_and_round_trips() {
        let value = json!({"name": "regular", "configuration": {"chunk_shape": [10, 3]}});
        let grid = parse(value.clone()).unwrap();
        assert_eq!(grid, ChunkGrid::regular(vec![10, 3]).unwrap());
        assert_eq!(grid.to_json(), value);
        assert_eq!(grid.rank(), 2);
        let with_flag = json!({
            "name": "regular", "configuration": {"chunk_shape": [1]}, "must_understand": true
        });
        assert_eq!(
            parse(with_flag).unwrap(),
            ChunkGrid::regular(vec![1]).unwrap()
        );
    }

    #[test]
    fn regular_errors_name_the_field() {
        let regular = |shape: Value| {
            parse(json!({"name": "regular", "configuration": {"chunk_shape": shape}}))
        };
        assert_invalid(
            regular(json!([4, 0])),
            "chunk_grid.configuration.chunk_shape[1]",
        );
        assert_invalid(
            regular(json!([4, -1])),
            "chunk_grid.configuration.chunk_shape[1]",
        );
        assert_invalid(
            regular(json!([2.5])),
            "chunk_grid.configuration.chunk_shape[0]",
        );
        assert_invalid(
            regular(json!(["4"])),
            "chunk_grid.configuration.chunk_shape[0]",
        );
        assert_invalid(regular(json!(4)), "chunk_grid.configuration.chunk_shape");
        assert_invalid(
            regular(json!([1e30])),
            "chunk_grid.configuration.chunk_shape[0]",
        );

        let err = parse(json!({"name": "regular", "configuration": {}})).unwrap_err();
        assert!(matches!(err, Error::MissingField { .. }));
        assert_eq!(field_of(&err), "chunk_grid.configuration.chunk_shape");

        let err = parse(json!({"name": "regular"})).unwrap_err();
        assert!(matches!(err, Error::MissingField { .. }));
        assert_eq!(field_of(&err), "chunk_grid.configuration");

        let err = parse(json!({"name": "regular", "configuration": {"chunk_shape": [1], "x": 1}}))
            .unwrap_err();
        assert!(matches!(err, Error::UnknownField { .. }));
        assert_eq!(field_of(&err), "chunk_grid.configuration.x");

        let err = parse(json!({"name": "regular", "configuration": {"chunk_shape": [1]}, "x": 1}))
            .unwrap_err();
        assert!(matches!(err, Error::UnknownField { .. }));
        assert_eq!(field_of(&err), "chunk_grid.x");

        assert_invalid(
            parse(json!({"name": "regular", "configuration": [1]})),
            "chunk_grid.configuration",
        );
        let err = RegularChunkGrid::try_new(vec![1, 0]).unwrap_err();
        assert!(matches!(err, Error::InvalidField { .. }));
        assert_eq!(field_of(&err), "chunk_grid.configuration.chunk_shape[1]");
    }

    #[test]
    fn field_prefix_is_used() {
        let err = ChunkGrid::from_json(
            &json!({"name": "regular", "configuration": {"chunk_shape": [0]}}),
            "a.chunk_grid",
        )
        .unwrap_err();
        assert_eq!(field_of(&err), "a.chunk_grid.configuration.chunk_shape[0]");
    }

    #[test]
    fn short_hand_is_refused_with_a_clear_message() {
        for name in ["regular", "rectilinear", "rectangular"] {
            let err = parse(json!(name)).unwrap_err();
            assert!(matches!(err, Error::InvalidField { .. }), "{err:?}");
            assert_eq!(field_of(&err), "chunk_grid");
            assert!(err.to_string().contains("needs a configuration"), "{err}");
        }
        let err = parse(json!("hexagonal")).unwrap_err();
        assert!(matches!(err, Error::UnknownExtension { .. }), "{err:?}");
    }

    #[test]
    fn must_understand_false_is_refused() {
        let err = parse(json!({
            "name": "regular", "configuration": {"chunk_shape": [1]}, "must_understand": false
        }))
        .unwrap_err();
        assert!(matches!(err, Error::MustUnderstandNotAllowed { .. }));
        assert_eq!(field_of(&err), "chunk_grid");
    }

    #[test]
    fn unknown_names_and_bad_values() {
        let err = parse(json!({"name": "hexagonal", "configuration": {}})).unwrap_err();
        assert!(matches!(
            &err,
            Error::UnknownExtension { kind: ExtensionKind::ChunkGrid, name, field }
                if name == "hexagonal" && field == "chunk_grid"
        ));
        assert!(err.to_string().contains("hexagonal"), "{err}");
        assert_invalid(parse(json!(4)), "chunk_grid");
        assert_invalid(parse(json!(null)), "chunk_grid");
        assert_invalid(parse(json!({"name": 4})), "chunk_grid.name");
        let err = parse(json!({"configuration": {}})).unwrap_err();
        assert_eq!(field_of(&err), "chunk_grid.name");
    }

    #[test]
    fn rectilinear_parses_every_entry_form() {
        let grid = rectilinear(json!([4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [4, 4, 4]])).unwrap();
        assert_eq!(
            grid,
            ChunkGrid::rectilinear(vec![
                DimensionChunks::Regular(4),
                DimensionChunks::Explicit(vec![(1, 1), (2, 1), (3, 1)]),
                DimensionChunks::Explicit(vec![(4, 2)]),
                DimensionChunks::Explicit(vec![(1, 3), (3, 1)]),
                DimensionChunks::Explicit(vec![(4, 3)]),
            ])
            .unwrap()
        );
        let ChunkGrid::Rectilinear(inner) = &grid else {
            panic!("not rectilinear")
        };
        assert_eq!(inner.rank(), 5);
        assert_eq!(
            inner.dimensions()[4],
            DimensionChunks::Explicit(vec![(4, 3)])
        );
        // The registry's example on shape [6, 6, 6, 6, 6].
        let shape = [6; 5];
        grid.validate(&shape).unwrap();
        assert_eq!(grid.grid_shape(&shape).unwrap(), vec![2, 3, 2, 4, 2]);
        assert_eq!(sizes(&grid, &shape, 0), vec![4, 4]);
        assert_eq!(sizes(&grid, &shape, 1), vec![1, 2, 3]);
        assert_eq!(sizes(&grid, &shape, 2), vec![4, 4]);
        assert_eq!(sizes(&grid, &shape, 3), vec![1, 1, 1, 3]);
        // [4, 4, 4] overshoots: the third chunk starts at 8, past the end, and is not counted.
        assert_eq!(sizes(&grid, &shape, 4), vec![4, 4]);
        assert_eq!(
            grid.chunk_region_clipped(&shape, &[1, 2, 1, 3, 1])
                .unwrap()
                .to_string(),
            "[4..6, 3..6, 4..6, 3..6, 4..6]"
        );
        assert_eq!(
            grid.chunk_region(&shape, &[1, 2, 1, 3, 1])
                .unwrap()
                .to_string(),
            "[4..8, 3..6, 4..8, 3..6, 4..8]"
        );
        assert_eq!(
            grid.chunk_of(&shape, &[5, 5, 5, 2, 5]).unwrap(),
            (vec![1, 2, 1, 2, 1], vec![1, 2, 1, 0, 1])
        );
    }

    #[test]
    fn rectilinear_to_json_is_canonical() {
        let grid = rectilinear(json!([
            4,
            [1, 2, 3],
            [[4, 2]],
            [[1, 3], 3],
            [4, 4, 4],
            [[2, 1], [2, 1]],
            []
        ]))
        .unwrap();
        assert_eq!(
            grid.to_json(),
            json!({
                "name": "rectilinear",
                "configuration": {
                    "kind": "inline",
                    "chunk_shapes": [4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [[4, 3]], [[2, 2]], []]
                }
            })
        );
        assert_eq!(parse(grid.to_json()).unwrap(), grid);
        // A regular grid converts losslessly into steps.
        let regular = RegularChunkGrid::try_new(vec![3, 5]).unwrap();
        let as_rectilinear = ChunkGrid::from(RectilinearChunkGrid::from(regular.clone()));
        assert_eq!(
            as_rectilinear.to_json()["configuration"]["chunk_shapes"],
            json!([3, 5])
        );
        let regular = ChunkGrid::from(regular);
        for shape in [[7, 10], [0, 5], [3, 5]] {
            assert_eq!(
                regular.grid_shape(&shape).unwrap(),
                as_rectilinear.grid_shape(&shape).unwrap()
            );
        }
    }

    #[test]
    fn rectilinear_errors_name_the_field() {
        let base = "chunk_grid.configuration.chunk_shapes";
        assert_invalid(rectilinear(json!([4, [1, 2, 0]])), &format!("{base}[1][2]"));
        assert_invalid(
            rectilinear(json!([4, [1, 2, -3]])),
            &format!("{base}[1][2]"),
        );
        assert_invalid(
            rectilinear(json!([4, [1, 2, 2.5]])),
            &format!("{base}[1][2]"),
        );
        assert_invalid(
            rectilinear(json!([4, [1, 2, "3"]])),
            &format!("{base}[1][2]"),
        );
        assert_invalid(
            rectilinear(json!([4, [1, 2, null]])),
            &format!("{base}[1][2]"),
        );
        assert_invalid(rectilinear(json!([0])), &format!("{base}[0]"));
        assert_invalid(rectilinear(json!([-4])), &format!("{base}[0]"));
        assert_invalid(rectilinear(json!([4.5])), &format!("{base}[0]"));
        assert_invalid(rectilinear(json!(["4"])), &format!("{base}[0]"));
        assert_invalid(rectilinear(json!([{"a": 1}])), &format!("{base}[0]"));
        assert_invalid(rectilinear(json!([[[4, 0]]])), &format!("{base}[0][0][1]"));
        assert_invalid(rectilinear(json!([[[0, 4]]])), &format!("{base}[0][0][0]"));
        assert_invalid(rectilinear(json!([[[4, -1]]])), &format!("{base}[0][0][1]"));
        assert_invalid(rectilinear(json!([[1, [4]]])), &format!("{base}[0][1]"));
        assert_invalid(
            rectilinear(json!([[1, [4, 1, 1]]])),
            &format!("{base}[0][1]"),
        );
        assert_invalid(
            rectilinear(json!([[1, [[4], 1]]])),
            &format!("{base}[0][1][0]"),
        );
        assert_invalid(rectilinear(json!(4)), base);

        let config = |c: Value| parse(json!({"name": "rectilinear", "configuration": c}));
        let err = config(json!({"chunk_shapes": [4]})).unwrap_err();
        assert!(matches!(err, Error::MissingField { .. }));
        assert_eq!(field_of(&err), "chunk_grid.configuration.kind");
        assert_invalid(
            config(json!({"kind": "file", "chunk_shapes": [4]})),
            "chunk_grid.configuration.kind",
        );
        assert_invalid(
            config(json!({"kind": 1, "chunk_shapes": [4]})),
            "chunk_grid.configuration.kind",
        );
        let err = config(json!({"kind": "inline"})).unwrap_err();
        assert!(matches!(err, Error::MissingField { .. }));
        assert_eq!(field_of(&err), base);
        let err =
            config(json!({"kind": "inline", "chunk_shapes": [4], "chunk_shape": [4]})).unwrap_err();
        assert!(matches!(err, Error::UnknownField { .. }));
        assert_eq!(field_of(&err), "chunk_grid.configuration.chunk_shape");

        // Programmatic construction names the run.
        let err = RectilinearChunkGrid::try_new(vec![
            DimensionChunks::Regular(2),
            DimensionChunks::Explicit(vec![(1, 1), (2, 0)]),
        ])
        .unwrap_err();
        assert_eq!(field_of(&err), format!("{base}[1][1]"));
        let err = RectilinearChunkGrid::try_new(vec![DimensionChunks::Regular(0)]).unwrap_err();
        assert_eq!(field_of(&err), format!("{base}[0]"));
        let err = RectilinearChunkGrid::try_new(vec![DimensionChunks::Explicit(vec![(0, 1)])])
            .unwrap_err();
        assert_eq!(field_of(&err), format!("{base}[0][0]"));
    }

    #[test]
    fn validate_checks_rank_and_coverage() {
        let grid = rectilinear(json!([[5, 5], 3])).unwrap();
        grid.validate(&[10, 100]).unwrap();
        grid.validate(&[7, 0]).unwrap();
        let err = grid.validate(&[11, 100]).unwrap_err();
        assert!(matches!(err, Error::InvalidField { .. }));
        assert_eq!(field_of(&err), "chunk_grid.configuration.chunk_shapes[0]");
        assert!(err.to_string().contains("add up to 10"), "{err}");
        // Every computation validates first.
        assert!(grid.grid_shape(&[11, 1]).is_err());
        assert!(grid.chunk_of(&[11, 1], &[0, 0]).is_err());
        assert!(
            grid.chunks_in_region(&[11, 1], &Region::full(&[11, 1]))
                .is_err()
        );
        assert!(matches!(
            grid.validate(&[10]),
            Err(Error::RankMismatch {
                expected: 1,
                found: 2,
                ..
            })
        ));
        assert!(matches!(
            ChunkGrid::regular(vec![2]).unwrap().grid_shape(&[4, 4]),
            Err(Error::RankMismatch { .. })
        ));
    }

    #[test]
    fn zep0003_forms() {
        let shape = [100, 100];
        let old = parse(json!({
            "type": "rectangular",
            "chunk_shape": [[5, 5, 5, 15, 15, 20, 35], 10],
            "separator": "/"
        }))
        .unwrap();
        let new = parse(json!({
            "name": "rectangular",
            "configuration": {"chunk_shape": [[5, 5, 5, 15, 15, 20, 35], 10]}
        }))
        .unwrap();
        let registered = rectilinear(json!([[[5, 3], [15, 2], 20, 35], 10])).unwrap();
        assert_eq!(old, registered);
        assert_eq!(new, registered);
        assert_eq!(old.to_json(), registered.to_json());
        // Cumulative sums [0, 5, 10, 15, 30, 45, 65, 100]: 17 is in chunk 3 = [15, 30) at 2;
        // along the regular dimension 17 is in chunk 1 = [10, 20) at 7.
        assert_eq!(old.grid_shape(&shape).unwrap(), vec![7, 10]);
        assert_eq!(
            old.chunk_of(&shape, &[17, 17]).unwrap(),
            (vec![3, 1], vec![2, 7])
        );
        assert_eq!(old.chunk_origin(&shape, &[3, 1]).unwrap(), vec![15, 10]);
        assert_eq!(old.chunk_shape(&shape, &[3, 1]).unwrap(), vec![15, 10]);
        assert_eq!(old.chunk_origin(&shape, &[6, 9]).unwrap(), vec![65, 90]);
        assert_eq!(old.chunk_shape(&shape, &[6, 9]).unwrap(), vec![35, 10]);
        assert_eq!(
            old.chunk_of(&shape, &[99, 0]).unwrap(),
            (vec![6, 0], vec![34, 0])
        );

        // Without separator, and the old regular form.
        parse(json!({"type": "rectangular", "chunk_shape": [[50, 50]]})).unwrap();
        assert_eq!(
            parse(json!({"type": "regular", "chunk_shape": [10, 10], "separator": "/"})).unwrap(),
            ChunkGrid::regular(vec![10, 10]).unwrap()
        );

        // Run-length pairs did not exist in the draft.
        assert_invalid(
            parse(json!({"type": "rectangular", "chunk_shape": [[[5, 2]]]})),
            "chunk_grid.chunk_shape[0][0]",
        );
        assert_invalid(
            parse(json!({"name": "rectangular", "configuration": {"chunk_shape": [[5, [5, 2]]]}})),
            "chunk_grid.configuration.chunk_shape[0][1]",
        );
        assert_invalid(
            parse(json!({"type": "rectangular", "chunk_shape": [[5, 0]]})),
            "chunk_grid.chunk_shape[0][1]",
        );
        let err = parse(json!({"type": "rectangular", "chunk_shape": [1], "x": 1})).unwrap_err();
        assert!(matches!(err, Error::UnknownField { .. }));
        assert_eq!(field_of(&err), "chunk_grid.x");
        let err = parse(json!({"type": "hexagonal", "chunk_shape": [1]})).unwrap_err();
        assert!(matches!(err, Error::UnknownExtension { .. }));
        assert_eq!(field_of(&err), "chunk_grid.type");
        let err = parse(json!({"type": "rectangular"})).unwrap_err();
        assert_eq!(field_of(&err), "chunk_grid.chunk_shape");
        assert_invalid(
            parse(json!({"type": 3, "chunk_shape": [1]})),
            "chunk_grid.type",
        );
        // Both styles at once are refused.
        let err = parse(
            json!({"name": "regular", "type": "regular", "configuration": {"chunk_shape": [1]}}),
        )
        .unwrap_err();
        assert_eq!(field_of(&err), "chunk_grid.type");
    }

    #[test]
    fn regular_edge_chunks() {
        let grid = ChunkGrid::regular(vec![3]).unwrap();
        let shape = [5];
        assert_eq!(grid.grid_shape(&shape).unwrap(), vec![2]);
        assert_eq!(grid.num_chunks(&shape).unwrap(), 2);
        assert_eq!(grid.chunk_origin(&shape, &[1]).unwrap(), vec![3]);
        assert_eq!(grid.chunk_shape(&shape, &[1]).unwrap(), vec![3]);
        assert_eq!(grid.chunk_region(&shape, &[1]).unwrap().ranges(), &[3..6]);
        assert_eq!(
            grid.chunk_region_clipped(&shape, &[1]).unwrap().ranges(),
            &[3..5]
        );
        assert_eq!(grid.chunk_of(&shape, &[4]).unwrap(), (vec![1], vec![1]));
        assert_eq!(grid.grid_shape(&[6]).unwrap(), vec![2]);
        assert_eq!(grid.grid_shape(&[7]).unwrap(), vec![3]);
        assert_eq!(grid.grid_shape(&[0]).unwrap(), vec![0]);
    }

    #[test]
    fn regular_bounded_cuts_edge_chunks_at_the_array_end() {
        let value = json!({
            "name": "zarrs.regular_bounded", "configuration": {"chunk_shape": [1, 2, 3]}
        });
        let grid = parse(value.clone()).unwrap();
        assert_eq!(grid, ChunkGrid::regular_bounded(vec![1, 2, 3]).unwrap());
        assert_eq!(grid.to_json(), value);
        assert!(grid.depends_on_shape());
        assert!(!ChunkGrid::regular(vec![1]).unwrap().depends_on_shape());
        assert_eq!(grid.nominal_chunk_shape(), Some(&[1, 2, 3][..]));
        // zarrs' own example: an array of [5, 7, 52].
        let shape = [5, 7, 52];
        assert_eq!(grid.grid_shape(&shape).unwrap(), vec![5, 4, 18]);
        assert_eq!(grid.chunk_shape(&shape, &[0, 0, 0]).unwrap(), vec![1, 2, 3]);
        assert_eq!(
            grid.chunk_shape(&shape, &[0, 3, 17]).unwrap(),
            vec![1, 1, 1]
        );
        assert_eq!(
            grid.chunk_origin(&shape, &[1, 1, 1]).unwrap(),
            vec![1, 2, 3]
        );
        assert_eq!(
            grid.chunk_region(&shape, &[4, 3, 17]).unwrap().ranges(),
            &[4..5, 6..7, 51..52]
        );
        assert_eq!(
            grid.chunk_of(&shape, &[3, 5, 50]).unwrap(),
            (vec![3, 2, 16], vec![0, 1, 2])
        );
        assert!(grid.chunk_shape(&shape, &[5, 0, 0]).is_err());
        assert_eq!(
            grid.edge_lengths(&shape).unwrap(),
            [vec![1], vec![1, 2], vec![1, 3]]
        );
        assert_eq!(
            grid.edge_lengths(&[1, 2, 2]).unwrap(),
            [vec![1], vec![2], vec![2]]
        );
        assert_eq!(grid.edge_lengths(&[0, 4, 6]).unwrap()[0], Vec::<u64>::new());
        assert_eq!(grid.chunk_along(&shape, 1, 6).unwrap(), (3, 6..7));
        assert_eq!(grid.chunk_range_along(&shape, 2, 17).unwrap(), 51..52);
        // A region's selections carry the cut shapes.
        let region = Region::try_new(vec![0..1, 5..7, 50..52]).unwrap();
        let selections: Vec<_> = grid.chunks_in_region(&shape, &region).unwrap().collect();
        let shapes: Vec<_> = selections.iter().map(|s| s.chunk_shape.clone()).collect();
        assert_eq!(
            shapes,
            [vec![1, 2, 3], vec![1, 2, 1], vec![1, 1, 3], vec![1, 1, 1]]
        );
        assert_eq!(selections[3].within_chunk.ranges(), &[0..1, 0..1, 0..1]);
        // Near u64::MAX the last chunk is cut, so its region does not overflow.
        let big = [u64::MAX];
        let grid = ChunkGrid::regular_bounded(vec![10]).unwrap();
        let last = grid.grid_shape(&big).unwrap()[0] - 1;
        assert_eq!(
            grid.chunk_region(&big, &[last]).unwrap().ranges(),
            &[last * 10..u64::MAX]
        );
        // Errors name the field, like `regular`'s.
        assert_invalid(
            parse(json!({"name": "zarrs.regular_bounded", "configuration": {"chunk_shape": [0]}})),
            "chunk_grid.configuration.chunk_shape[0]",
        );
        assert!(matches!(
            parse(json!({"name": "zarrs.regular_bounded",
                         "configuration": {"chunk_shape": [1], "x": 1}})),
            Err(Error::UnknownField { .. })
        ));
    }

    #[test]
    fn out_of_bounds_and_rank_errors() {
        let grid = ChunkGrid::regular(vec![3, 3]).unwrap();
        let shape = [5, 6];
        let err = grid.chunk_of(&shape, &[5, 0]).unwrap_err();
        assert!(
            matches!(&err, Error::RegionOutOfBounds { region, shape }
                if region == "[5..6, 0..1]" && shape == &[5, 6]),
            "{err:?}"
        );
        let err = grid.chunk_of(&[u64::MAX, 1], &[u64::MAX, 0]).unwrap_err();
        assert!(
            err.to_string()
                .contains("18446744073709551615..18446744073709551616"),
            "{err}"
        );
        assert!(matches!(
            grid.chunk_of(&shape, &[1]),
            Err(Error::RankMismatch {
                expected: 2,
                found: 1,
                ..
            })
        ));
        let err = grid.chunk_origin(&shape, &[2, 0]).unwrap_err();
        assert!(
            matches!(&err, Error::ChunkOutOfBounds { chunk, grid_shape }
                if chunk == &[2, 0] && grid_shape == &[2, 2]),
            "{err:?}"
        );
        assert!(matches!(
            grid.chunk_shape(&shape, &[0, 2]),
            Err(Error::ChunkOutOfBounds { .. })
        ));
        assert!(matches!(
            grid.chunk_region(&shape, &[0, 2]),
            Err(Error::ChunkOutOfBounds { .. })
        ));
        assert!(matches!(
            grid.chunk_region_clipped(&shape, &[0, 0, 0]),
            Err(Error::RankMismatch { .. })
        ));
        // Overshooting chunks of an explicit dimension are outside the grid.
        let grid = rectilinear(json!([[4, 4, 4]])).unwrap();
        assert!(matches!(
            grid.chunk_origin(&[6], &[2]),
            Err(Error::ChunkOutOfBounds { .. })
        ));
        assert_eq!(grid.chunk_origin(&[9], &[2]).unwrap(), vec![8]);
        // Regions outside the array.
        let grid = ChunkGrid::regular(vec![3, 3]).unwrap();
        let region = Region::try_new(vec![0..5, 0..7]).unwrap();
        assert!(matches!(
            grid.chunks_in_region(&shape, &region),
            Err(Error::RegionOutOfBounds { .. })
        ));
        assert!(matches!(
            grid.chunks_in_region(&shape, &Region::full(&[5])),
            Err(Error::RankMismatch { .. })
        ));
    }

    #[test]
    fn zero_dimensional_grids() {
        for grid in [
            ChunkGrid::regular(vec![]).unwrap(),
            ChunkGrid::rectilinear(vec![]).unwrap(),
            parse(json!({"name": "regular", "configuration": {"chunk_shape": []}})).unwrap(),
        ] {
            assert_eq!(grid.rank(), 0);
            assert_eq!(grid.grid_shape(&[]).unwrap(), Vec::<u64>::new());
            assert_eq!(grid.num_chunks(&[]).unwrap(), 1);
            assert_eq!(grid.chunk_of(&[], &[]).unwrap(), (vec![], vec![]));
            assert_eq!(grid.chunk_origin(&[], &[]).unwrap(), Vec::<u64>::new());
            assert_eq!(grid.chunk_region(&[], &[]).unwrap(), Region::full(&[]));
            let chunks = grid.chunks_in_region(&[], &Region::full(&[])).unwrap();
            assert_eq!(chunks.num_chunks().unwrap(), 1);
            let all: Vec<_> = chunks.collect();
            assert_eq!(
                all,
                vec![ChunkSelection {
                    chunk: vec![],
                    chunk_shape: vec![],
                    within_chunk: Region::full(&[]),
                    within_output: Region::full(&[]),
                }]
            );
        }
    }

    #[test]
    fn zero_length_dimensions_have_no_chunks() {
        for grid in [
            ChunkGrid::regular(vec![2, 2]).unwrap(),
            rectilinear(json!([2, []])).unwrap(),
            rectilinear(json!([2, [[3, 2]]])).unwrap(),
        ] {
            let shape = [4, 0];
            assert_eq!(grid.grid_shape(&shape).unwrap(), vec![2, 0]);
            assert_eq!(grid.num_chunks(&shape).unwrap(), 0);
            assert!(matches!(
                grid.chunk_of(&shape, &[0, 0]),
                Err(Error::RegionOutOfBounds { .. })
            ));
            assert!(matches!(
                grid.chunk_origin(&shape, &[0, 0]),
                Err(Error::ChunkOutOfBounds { .. })
            ));
            let mut chunks = grid
                .chunks_in_region(&shape, &Region::full(&shape))
                .unwrap();
            assert_eq!(chunks.num_chunks().unwrap(), 0);
            assert_eq!(chunks.size_hint(), (0, Some(0)));
            assert!(chunks.next().is_none());
        }
        // A zero-length region inside a non-empty array selects nothing either.
        let grid = ChunkGrid::regular(vec![2]).unwrap();
        let region = Region::try_new(vec![3..3]).unwrap();
        assert_eq!(grid.chunks_in_region(&[4], &region).unwrap().count(), 0);
    }

    #[test]
    fn chunks_in_region_in_c_order() {
        let grid = rectilinear(json!([[2, 3, 5], 4])).unwrap();
        let shape = [10, 9];
        let region = Region::try_new(vec![1..6, 3..9]).unwrap();
        let mut chunks = grid.chunks_in_region(&shape, &region).unwrap();
        assert_eq!(chunks.num_chunks().unwrap(), 9);
        assert_eq!(chunks.size_hint(), (9, Some(9)));
        let first = chunks.next().unwrap();
        assert_eq!(chunks.num_chunks().unwrap(), 8);
        assert_eq!(
            first,
            ChunkSelection {
                chunk: vec![0, 0],
                chunk_shape: vec![2, 4],
                within_chunk: Region::try_new(vec![1..2, 3..4]).unwrap(),
                within_output: Region::try_new(vec![0..1, 0..1]).unwrap(),
            }
        );
        let rest: Vec<_> = chunks.by_ref().collect();
        assert_eq!(
            rest.iter().map(|s| s.chunk.clone()).collect::<Vec<_>>(),
            vec![
                vec![0, 1],
                vec![0, 2],
                vec![1, 0],
                vec![1, 1],
                vec![1, 2],
                vec![2, 0],
                vec![2, 1],
                vec![2, 2]
            ]
        );
        let last = rest.last().unwrap();
        assert_eq!(last.chunk_shape, vec![5, 4]);
        assert_eq!(last.within_chunk.to_string(), "[0..1, 0..1]");
        assert_eq!(last.within_output.to_string(), "[4..5, 5..6]");
        assert!(chunks.next().is_none());
        assert_eq!(chunks.num_chunks().unwrap(), 0);
    }

    #[test]
    fn huge_run_length_grids_do_not_expand() {
        let grid = rectilinear(json!([
            [[1, 1_000_000_000_000_u64]],
            [[7, 3], [1, 1_000_000]]
        ]))
        .unwrap();
        let ChunkGrid::Rectilinear(inner) = &grid else {
            panic!("not rectilinear")
        };
        assert_eq!(
            inner.dimensions[0],
            Dimension::Explicit(EdgeRuns {
                runs: vec![Run {
                    size: 1,
                    count: 1_000_000_000_000,
                    first_chunk: 0,
                    start: 0
                }],
                num_chunks: 1_000_000_000_000,
                total: 1_000_000_000_000,
            })
        );
        let shape = [1_000_000_000_000, 1_000_021];
        assert_eq!(
            grid.grid_shape(&shape).unwrap(),
            vec![1_000_000_000_000, 1_000_003]
        );
        assert_eq!(
            grid.chunk_of(&shape, &[999_999_999_999, 1_000_020])
                .unwrap(),
            (vec![999_999_999_999, 1_000_002], vec![0, 0])
        );
        assert_eq!(
            grid.chunk_of(&shape, &[5, 20]).unwrap(),
            (vec![5, 2], vec![0, 6])
        );
        assert_eq!(
            grid.chunk_of(&shape, &[5, 21]).unwrap(),
            (vec![5, 3], vec![0, 0])
        );
        assert_eq!(
            grid.chunk_origin(&shape, &[999_999_999_999, 1_000_002])
                .unwrap(),
            vec![999_999_999_999, 1_000_020]
        );
        assert_eq!(grid.num_chunks(&shape).unwrap(), 1_000_003_000_000_000_000);
        let mut all = grid
            .chunks_in_region(&shape, &Region::full(&shape))
            .unwrap();
        assert_eq!(all.num_chunks().unwrap(), 1_000_003_000_000_000_000);
        assert_eq!(all.nth(1_000_003).unwrap().chunk, vec![1, 0]);
        assert_eq!(
            grid.to_json()["configuration"]["chunk_shapes"],
            json!([[[1, 1_000_000_000_000_u64]], [[7, 3], [1, 1_000_000]]])
        );
    }

    #[test]
    fn edge_length_sums_overflowing_u64_are_errors() {
        for shapes in [
            json!([[[u64::MAX, 2]]]),
            json!([[u64::MAX, 1]]),
            json!([[[2, 1u64 << 63]]]),
            json!([[[1, u64::MAX], 1]]),
            json!([[[1, u64::MAX], [1, 1]]]),
        ] {
            let err = rectilinear(shapes.clone()).unwrap_err();
            assert!(matches!(err, Error::Overflow { .. }), "{shapes}: {err:?}");
            assert!(
                err.to_string()
                    .contains("chunk_grid.configuration.chunk_shapes[0]"),
                "{err}"
            );
        }
        assert!(matches!(
            RectilinearChunkGrid::try_new(vec![DimensionChunks::Explicit(vec![
                (u64::MAX, 1),
                (1, 1)
            ])]),
            Err(Error::Overflow { .. })
        ));
        // Exactly u64::MAX is fine.
        let grid = rectilinear(json!([[[1, u64::MAX]]])).unwrap();
        assert_eq!(grid.grid_shape(&[u64::MAX]).unwrap(), vec![u64::MAX]);
        let grid = rectilinear(json!([[u64::MAX - 1, 1]])).unwrap();
        assert_eq!(
            grid.chunk_of(&[u64::MAX], &[u64::MAX - 1]).unwrap(),
            (vec![1], vec![0])
        );
    }

    #[test]
    fn regular_grids_near_u64_max() {
        let grid = ChunkGrid::regular(vec![2]).unwrap();
        let shape = [u64::MAX];
        let last = u64::MAX / 2;
        assert_eq!(grid.grid_shape(&shape).unwrap(), vec![last + 1]);
        assert_eq!(
            grid.chunk_origin(&shape, &[last]).unwrap(),
            vec![u64::MAX - 1]
        );
        assert_eq!(grid.chunk_shape(&shape, &[last]).unwrap(), vec![2]);
        assert!(matches!(
            grid.chunk_region(&shape, &[last]),
            Err(Error::Overflow { .. })
        ));
        assert_eq!(
            grid.chunk_region_clipped(&shape, &[last]).unwrap().ranges(),
            &[u64::MAX - 1..u64::MAX]
        );
        let region = Region::try_new(vec![u64::MAX - 3..u64::MAX]).unwrap();
        let selections: Vec<_> = grid.chunks_in_region(&shape, &region).unwrap().collect();
        assert_eq!(selections.len(), 2);
        assert_eq!(selections[1].chunk, vec![last]);
        assert_eq!(selections[1].within_chunk.ranges(), &[0..1]);
        assert_eq!(selections[1].within_output.ranges(), &[2..3]);

        let grid = ChunkGrid::regular(vec![u64::MAX]).unwrap();
        assert_eq!(grid.grid_shape(&shape).unwrap(), vec![1]);
        assert_eq!(
            grid.chunk_region(&shape, &[0]).unwrap(),
            Region::full(&shape)
        );

        let grid = ChunkGrid::regular(vec![1, 1, 1]).unwrap();
        let shape = [u64::MAX; 3];
        assert!(matches!(
            grid.num_chunks(&shape),
            Err(Error::Overflow { .. })
        ));
        let chunks = grid
            .chunks_in_region(&shape, &Region::full(&shape))
            .unwrap();
        assert!(matches!(chunks.num_chunks(), Err(Error::Overflow { .. })));
        assert_eq!(chunks.size_hint(), (usize::MAX, None));
    }

    #[test]
    fn from_edges_merges_runs() {
        assert_eq!(
            DimensionChunks::from_edges([]),
            DimensionChunks::Explicit(vec![])
        );
        assert_eq!(
            DimensionChunks::from_edges([2, 2, 3, 2]),
            DimensionChunks::Explicit(vec![(2, 2), (3, 1), (2, 1)])
        );
    }
}
