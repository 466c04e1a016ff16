//! Selections other than regions: every `step`-th index, listed indices or a mask per
//! dimension ([`Selection`], numpy's and zarr-python's orthogonal selection), and lists of
//! points (coordinate selection).
//!
//! A selection is read or written as a set of *parts*: boxes (regions) that each lie inside
//! one unit of the array's storage, read or written through the region engine, with the
//! selected elements copied between each box and the caller's values. Reads use the chunks
//! that can be decoded alone (a sharded array's inner chunks), so a sparse selection decodes
//! only the inner chunks it touches; writes use the units stored under one key (chunks or
//! shards), each updated once, under the same per-key lock as other writes.

use std::ops::{
    Bound, Range, RangeBounds, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive,
};

use std::sync::Arc;

use futures::StreamExt;
use tokio::sync::Semaphore;
use tracing::Instrument;
use zarr_codecs::VlenBytes;
use zarr_core::{ChunkGrid, Region};
use zarr_store::{ReadableStore, WritableStore};

use crate::array::{AbortOnDrop, Array};
use crate::element::{Element, as_bytes, as_bytes_mut};
use crate::error::{Error, Result};
use crate::region::IntoRegion;

/// What one dimension of a [`Selection`] selects.
///
/// Indices count from 0 and must lie inside the array: unlike a numpy slice, a range that
/// ends past the array is an error, not clipped (as for regions).
///
/// ```
/// use zarr_array::AxisSelection;
/// assert_eq!(AxisSelection::step(1..8, 3).indices_in(10)?, [1, 4, 7]);
/// assert_eq!(AxisSelection::from(2..).indices_in(4)?, [2, 3]);
/// assert_eq!(AxisSelection::from(vec![5, 0, 5]).indices_in(6)?, [5, 0, 5]);
/// assert_eq!(AxisSelection::mask([true, false, true]).indices_in(3)?, [0, 2]);
/// assert!(AxisSelection::step(.., 0).indices_in(3).is_err());
/// # Ok::<(), zarr_array::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AxisSelection {
    /// `start`, `start + step`, ... below `stop` (the dimension's length when `None`).
    /// `step` must be at least 1.
    Slice {
        /// The first index.
        start: u64,
        /// The end (exclusive); `None` for the end of the dimension.
        stop: Option<u64>,
        /// The distance between selected indices.
        step: u64,
    },
    /// These indices, in this order; an index may repeat (numpy's integer array indexing).
    Indices(Vec<u64>),
    /// The indices where the mask is `true`, in increasing order; the mask must have the
    /// dimension's length (numpy's boolean array indexing).
    Mask(Vec<bool>),
}

impl AxisSelection {
    /// The whole dimension.
    pub fn all() -> Self {
        Self::step(.., 1)
    }

    /// Every index of `range`: `AxisSelection::range(2..5)`, `..`, `3..`, `..=4`.
    pub fn range(range: impl RangeBounds<u64>) -> Self {
        Self::step(range, 1)
    }

    /// Every `step`-th index of `range`, from its start: numpy's `start:stop:step` (with
    /// `step >= 1`).
    pub fn step(range: impl RangeBounds<u64>, step: u64) -> Self {
        let start = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let stop = match range.end_bound() {
            Bound::Included(&e) => Some(e.saturating_add(1)),
            Bound::Excluded(&e) => Some(e),
            Bound::Unbounded => None,
        };
        Self::Slice { start, stop, step }
    }

    /// The one index `i` (the dimension is kept, with length 1).
    pub fn index(i: u64) -> Self {
        Self::Slice {
            start: i,
            stop: Some(i.saturating_add(1)),
            step: 1,
        }
    }

    /// These indices, in this order (repeats allowed).
    pub fn indices(indices: impl IntoIterator<Item = u64>) -> Self {
        Self::Indices(indices.into_iter().collect())
    }

    /// The indices where `mask` is `true`.
    pub fn mask(mask: impl IntoIterator<Item = bool>) -> Self {
        Self::Mask(mask.into_iter().collect())
    }

    /// The indices selected from a dimension of length `len`, in the order of the output.
    ///
    /// # Errors
    /// As [`Selection::shape_in`].
    pub fn indices_in(&self, len: u64) -> Result<Vec<u64>> {
        Ok(match self.resolve(0, len)? {
            Resolved::Strided { start, step, count } => {
                (0..count).map(|i| start + i * step).collect()
            }
            Resolved::Listed(indices) => indices,
        })
    }

    /// The number of indices selected from a dimension of length `len`.
    fn len_in(&self, dim: usize, len: u64) -> Result<u64> {
        match self {
            Self::Indices(indices) => {
                check_indices(dim, indices, len)?;
                Ok(indices.len() as u64)
            }
            _ => Ok(match self.resolve(dim, len)? {
                Resolved::Strided { count, .. } => count,
                Resolved::Listed(indices) => indices.len() as u64,
            }),
        }
    }

    /// Check the selection against dimension `dim` of length `len`.
    pub(crate) fn resolve(&self, dim: usize, len: u64) -> Result<Resolved> {
        match self {
            Self::Slice { start, stop, step } => {
                let (start, step) = (*start, *step);
                let stop = stop.unwrap_or(len);
                if step == 0 {
                    return Err(region_error(format!("dimension {dim}: the step is 0")));
                }
                if start > stop {
                    return Err(region_error(format!(
                        "dimension {dim}: the start {start} is past the stop {stop}"
                    )));
                }
                if stop > len {
                    return Err(region_error(format!(
                        "dimension {dim}: {start}..{stop} ends past the array's length {len}"
                    )));
                }
                let count = if stop == start {
                    0
                } else {
                    (stop - start - 1) / step + 1
                };
                Ok(Resolved::Strided { start, step, count })
            }
            Self::Indices(indices) => {
                check_indices(dim, indices, len)?;
                Ok(Resolved::Listed(indices.clone()))
            }
            Self::Mask(mask) => {
                if mask.len() as u64 != len {
                    return Err(region_error(format!(
                        "dimension {dim}: the mask has {} entries, the array's length is {len}",
                        mask.len()
                    )));
                }
                Ok(Resolved::Listed(
                    (0..len).filter(|&i| mask[i as usize]).collect(),
                ))
            }
        }
    }
}

fn check_indices(dim: usize, indices: &[u64], len: u64) -> Result<()> {
    match indices.iter().find(|&&i| i >= len) {
        Some(i) => Err(region_error(format!(
            "dimension {dim}: the index {i} is outside the array's length {len}"
        ))),
        None => Ok(()),
    }
}

pub(crate) fn region_error(reason: String) -> Error {
    Error::Region { reason }
}

macro_rules! from_range {
    ($($t:ty),*) => {$(
        impl From<$t> for AxisSelection {
            fn from(range: $t) -> Self {
                Self::range(range)
            }
        }
    )*};
}
from_range!(
    Range<u64>,
    RangeInclusive<u64>,
    RangeFrom<u64>,
    RangeTo<u64>,
    RangeToInclusive<u64>
);

impl From<RangeFull> for AxisSelection {
    fn from(_: RangeFull) -> Self {
        Self::all()
    }
}

impl From<u64> for AxisSelection {
    fn from(i: u64) -> Self {
        Self::index(i)
    }
}

impl From<Vec<u64>> for AxisSelection {
    fn from(indices: Vec<u64>) -> Self {
        Self::Indices(indices)
    }
}

impl From<&[u64]> for AxisSelection {
    fn from(indices: &[u64]) -> Self {
        Self::Indices(indices.to_vec())
    }
}

impl From<Vec<bool>> for AxisSelection {
    fn from(mask: Vec<bool>) -> Self {
        Self::Mask(mask)
    }
}

/// An orthogonal selection: one [`AxisSelection`] per dimension, selecting every
/// combination of the indices each selects (numpy's `oindex`, zarr-python's
/// `get_orthogonal_selection`). Values are in C order over the selection's
/// [shape](Selection::shape_in): one dimension per axis, as long as the indices it selects,
/// in their order.
///
/// ```
/// use zarr_array::{AxisSelection, Selection};
/// // Rows 0, 2, 4 and 6; columns 5 and 1, in that order.
/// let selection = Selection::new([AxisSelection::step(0..8, 2), AxisSelection::indices([5, 1])]);
/// assert_eq!(selection.shape_in(&[8, 6])?, [4, 2]);
/// # Ok::<(), zarr_array::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    axes: Vec<AxisSelection>,
}

impl Selection {
    /// A selection of one [`AxisSelection`] (or anything that converts to one: ranges,
    /// `Vec<u64>` of indices, `Vec<bool>` masks, single `u64` indices) per dimension.
    pub fn new<A: Into<AxisSelection>>(axes: impl IntoIterator<Item = A>) -> Self {
        Self {
            axes: axes.into_iter().map(Into::into).collect(),
        }
    }

    /// The whole of an array of rank `rank`.
    pub fn all(rank: usize) -> Self {
        Self {
            axes: vec![AxisSelection::all(); rank],
        }
    }

    /// The axes.
    pub fn axes(&self) -> &[AxisSelection] {
        &self.axes
    }

    /// The shape of the selected values in an array of `shape`.
    ///
    /// # Errors
    /// [`Error::Region`] if the rank differs from the array's, a step is 0, a range ends past
    /// the array or starts past its end, an index lies outside the array, or a mask's length
    /// is not the dimension's.
    pub fn shape_in(&self, shape: &[u64]) -> Result<Vec<u64>> {
        self.check_rank(shape)?;
        self.axes
            .iter()
            .zip(shape)
            .enumerate()
            .map(|(dim, (axis, &len))| axis.len_in(dim, len))
            .collect()
    }

    fn check_rank(&self, shape: &[u64]) -> Result<()> {
        if self.axes.len() == shape.len() {
            Ok(())
        } else {
            Err(region_error(format!(
                "the selection has {} dimensions, the array {}",
                self.axes.len(),
                shape.len()
            )))
        }
    }

    /// The region this selection is, if every axis is a range with step 1.
    pub(crate) fn as_region(&self, shape: &[u64]) -> Result<Option<Region>> {
        let mut ranges = Vec::with_capacity(self.axes.len());
        for (dim, (axis, &len)) in self.axes.iter().zip(shape).enumerate() {
            match axis {
                AxisSelection::Slice { step: 1, .. } => match axis.resolve(dim, len)? {
                    Resolved::Strided { start, count, .. } => ranges.push(start..start + count),
                    Resolved::Listed(_) => return Ok(None),
                },
                _ => return Ok(None),
            }
        }
        Ok(Some(Region::try_new(ranges)?))
    }
}

impl From<Region> for Selection {
    fn from(region: Region) -> Self {
        Self::new(region.ranges().iter().cloned())
    }
}

impl From<Vec<AxisSelection>> for Selection {
    fn from(axes: Vec<AxisSelection>) -> Self {
        Self { axes }
    }
}

/// An axis selection checked against its dimension.
pub(crate) enum Resolved {
    /// `count` indices `start + i * step`.
    Strided { start: u64, step: u64, count: u64 },
    /// Listed indices, in output order.
    Listed(Vec<u64>),
}

/// The indices of one dimension that lie in one cell (a chunk, or a shard's inner chunk):
/// the box `start..start + len` that holds them, and where each goes.
#[derive(Debug)]
pub(crate) struct AxisGroup {
    pub(crate) start: u64,
    pub(crate) len: u64,
    members: Members,
}

/// The selected indices of an [`AxisGroup`]: offsets in the box, with positions in the output.
#[derive(Debug)]
enum Members {
    /// `count` indices `i * step` going to `out_start + i`.
    Strided {
        step: u64,
        count: u64,
        out_start: u64,
    },
    /// `(offset, output position)`, in increasing order.
    Listed(Vec<(u64, u64)>),
}

impl AxisGroup {
    /// Whether every index of the box is selected.
    fn dense(&self) -> bool {
        match &self.members {
            Members::Strided { step, count, .. } => *step == 1 || *count == 1,
            Members::Listed(members) => {
                let mut distinct = 0u64;
                let mut last = None;
                for &(offset, _) in members {
                    if last != Some(offset) {
                        distinct += 1;
                        last = Some(offset);
                    }
                }
                distinct == self.len
            }
        }
    }
}

/// The groups of dimension `dim`'s selection, by cell of `cells`, in increasing order.
pub(crate) fn plan_axis(
    cells: &ChunkGrid,
    shape: &[u64],
    dim: usize,
    resolved: Resolved,
) -> Result<Vec<AxisGroup>> {
    let len = shape[dim];
    let mut groups = Vec::new();
    match resolved {
        Resolved::Strided { start, step, count } => {
            let mut i = 0;
            while i < count {
                let x = start + i * step;
                let (_, cell) = cells.chunk_along(shape, dim, x)?;
                let end = cell.end.min(len);
                let last = ((end - 1 - start) / step).min(count - 1);
                let n = last - i + 1;
                groups.push(AxisGroup {
                    start: x,
                    len: (n - 1) * step + 1,
                    members: Members::Strided {
                        step,
                        count: n,
                        out_start: i,
                    },
                });
                i = last + 1;
            }
        }
        Resolved::Listed(indices) => {
            let mut pairs: Vec<(u64, u64)> = indices
                .into_iter()
                .enumerate()
                .map(|(out, x)| (x, out as u64))
                .collect();
            pairs.sort_unstable();
            let mut cell_end = 0;
            let mut current: Option<(u64, Vec<(u64, u64)>)> = None;
            for (x, out) in pairs {
                if current.is_none() || x >= cell_end {
                    if let Some((start, members)) = current.take() {
                        groups.push(listed_group(start, members));
                    }
                    cell_end = cells.chunk_along(shape, dim, x)?.1.end;
                    current = Some((x, Vec::new()));
                }
                if let Some((start, members)) = current.as_mut() {
                    members.push((x - *start, out));
                }
            }
            if let Some((start, members)) = current {
                groups.push(listed_group(start, members));
            }
        }
    }
    Ok(groups)
}

fn listed_group(start: u64, members: Vec<(u64, u64)>) -> AxisGroup {
    let len = members.last().map_or(1, |m| m.0 + 1);
    AxisGroup {
        start,
        len,
        members: Members::Listed(members),
    }
}

/// Call `f(box_offset, output_offset, run)` (in elements) for every run of selected elements
/// in the box of `groups` (one per dimension), in C order over the members; `out_shape` is
/// the output's shape.
pub(crate) fn walk(groups: &[&AxisGroup], out_shape: &[u64], f: &mut impl FnMut(u64, u64, u64)) {
    if groups.is_empty() {
        f(0, 0, 1);
        return;
    }
    let rank = groups.len();
    let mut box_strides = vec![1u64; rank];
    let mut out_strides = vec![1u64; rank];
    for d in (0..rank - 1).rev() {
        box_strides[d] = box_strides[d + 1] * groups[d + 1].len;
        out_strides[d] = out_strides[d + 1] * out_shape[d + 1];
    }
    walk_dim(groups, 0, &box_strides, &out_strides, 0, 0, f);
}

fn walk_dim(
    groups: &[&AxisGroup],
    d: usize,
    box_strides: &[u64],
    out_strides: &[u64],
    box_base: u64,
    out_base: u64,
    f: &mut impl FnMut(u64, u64, u64),
) {
    let last = d + 1 == groups.len();
    match &groups[d].members {
        Members::Strided {
            step,
            count,
            out_start,
        } => {
            if last && *step == 1 {
                f(box_base, out_base + out_start, *count);
                return;
            }
            for i in 0..*count {
                let b = box_base + i * step * box_strides[d];
                let o = out_base + (out_start + i) * out_strides[d];
                if last {
                    f(b, o, 1);
                } else {
                    walk_dim(groups, d + 1, box_strides, out_strides, b, o, f);
                }
            }
        }
        Members::Listed(members) if last => {
            // Runs of consecutive offsets going to consecutive positions are copied at once.
            let mut run: Option<(u64, u64, u64)> = None;
            for &(offset, out) in members {
                let (b, o) = (box_base + offset, out_base + out);
                run = match run {
                    Some((rb, ro, n)) if rb + n == b && ro + n == o => Some((rb, ro, n + 1)),
                    Some((rb, ro, n)) => {
                        f(rb, ro, n);
                        Some((b, o, 1))
                    }
                    None => Some((b, o, 1)),
                };
            }
            if let Some((rb, ro, n)) = run {
                f(rb, ro, n);
            }
        }
        Members::Listed(members) => {
            for &(offset, out) in members {
                walk_dim(
                    groups,
                    d + 1,
                    box_strides,
                    out_strides,
                    box_base + offset * box_strides[d],
                    out_base + out * out_strides[d],
                    f,
                );
            }
        }
    }
}

/// The box (a region of the array) of one combination of groups.
pub(crate) fn group_box(groups: &[&AxisGroup]) -> Result<Region> {
    Ok(Region::try_new(
        groups.iter().map(|g| g.start..g.start + g.len).collect(),
    )?)
}

/// Whether the selection covers every element of the box of `groups`.
pub(crate) fn groups_dense(groups: &[&AxisGroup]) -> bool {
    groups.iter().all(|g| g.dense())
}

/// The combinations of one group per dimension, as indices into each dimension's groups,
/// in C order (an odometer; nothing if a dimension has no group, one empty combination for
/// rank 0). Indices rather than references keep the futures that hold them `Send` for any
/// lifetime.
pub(crate) fn combinations(plans: &[Vec<AxisGroup>]) -> impl Iterator<Item = Vec<usize>> + use<> {
    let sizes: Vec<usize> = plans.iter().map(Vec::len).collect();
    let mut next = (!sizes.contains(&0)).then(|| vec![0usize; sizes.len()]);
    std::iter::from_fn(move || {
        let current = next.take()?;
        let mut following = current.clone();
        for d in (0..sizes.len()).rev() {
            if following[d] + 1 < sizes[d] {
                following[d] += 1;
                next = Some(following);
                break;
            }
            following[d] = 0;
        }
        Some(current)
    })
}

/// The groups a combination names.
pub(crate) fn pick<'a>(plans: &'a [Vec<AxisGroup>], combination: &[usize]) -> Vec<&'a AxisGroup> {
    combination
        .iter()
        .zip(plans)
        .map(|(&i, groups)| &groups[i])
        .collect()
}

/// The points that lie in one cell: their box, and for each its offset in the box (C order)
/// and its position in the list of points, in the order given.
#[derive(Debug)]
pub(crate) struct PointGroup {
    pub(crate) region: Region,
    pub(crate) members: Vec<(u64, u64)>,
}

impl PointGroup {
    /// Whether the points cover every element of the box.
    pub(crate) fn dense(&self) -> bool {
        let mut offsets: Vec<u64> = self.members.iter().map(|m| m.0).collect();
        offsets.sort_unstable();
        offsets.dedup();
        self.region
            .num_elements()
            .is_ok_and(|n| n == offsets.len() as u64)
    }
}

/// Check `points` (flattened, `rank` indices each) against `shape` and group them by cell of
/// `cells`.
pub(crate) fn plan_points(
    cells: &ChunkGrid,
    shape: &[u64],
    points: &[u64],
    count: usize,
) -> Result<Vec<PointGroup>> {
    let rank = shape.len();
    let point = |i: usize| &points[i * rank..(i + 1) * rank];
    for i in 0..count {
        let p = point(i);
        if p.iter().zip(shape).any(|(x, n)| x >= n) {
            return Err(region_error(format!(
                "point {i} {p:?} lies outside the array of shape {shape:?}"
            )));
        }
    }
    let mut keys = Vec::with_capacity(points.len());
    for i in 0..count {
        for (d, &x) in point(i).iter().enumerate() {
            keys.push(cells.chunk_along(shape, d, x)?.0);
        }
    }
    let key = |i: usize| &keys[i * rank..(i + 1) * rank];
    let mut order: Vec<usize> = (0..count).collect();
    order.sort_by(|&a, &b| key(a).cmp(key(b)).then(a.cmp(&b)));
    let mut groups = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && key(order[end]) == key(order[start]) {
            end += 1;
        }
        let members = &order[start..end];
        let mut lo = point(members[0]).to_vec();
        let mut hi = lo.clone();
        for &m in members {
            for (d, &x) in point(m).iter().enumerate() {
                lo[d] = lo[d].min(x);
                hi[d] = hi[d].max(x);
            }
        }
        let region = Region::try_new(lo.iter().zip(&hi).map(|(&l, &h)| l..h + 1).collect())?;
        let box_shape = region.shape();
        // Offsets in the box are below its size, which is at most the array's (whose
        // number of elements fits in `u64`: metadata with more is refused).
        let members = members
            .iter()
            .map(|&m| {
                let offset = point(m)
                    .iter()
                    .zip(&lo)
                    .zip(&box_shape)
                    .fold(0u64, |acc, ((&x, &l), &n)| acc * n + (x - l));
                (offset, m as u64)
            })
            .collect();
        groups.push(PointGroup { region, members });
        start = end;
    }
    Ok(groups)
}

/// Flatten `points`, checking that each has `rank` indices. Returns the indices and the
/// number of points.
pub(crate) fn flatten_points<P: AsRef<[u64]>>(
    points: impl IntoIterator<Item = P>,
    rank: usize,
) -> Result<(Vec<u64>, usize)> {
    let mut flat = Vec::new();
    let mut count = 0;
    for (i, p) in points.into_iter().enumerate() {
        let p = p.as_ref();
        if p.len() != rank {
            return Err(region_error(format!(
                "point {i} has {} indices, the array {rank} dimensions",
                p.len()
            )));
        }
        flat.extend_from_slice(p);
        count += 1;
    }
    Ok((flat, count))
}

/// The most bytes of shard indexes a selection read keeps for its parts.
const OPERATION_INDEX_CACHE: usize = 16 << 20;

/// Bytes per permit of the selection budget.
const PERMIT_BYTES: usize = 64 << 10;

/// A part of a selection write: the box, whether the selection covers all of it (so it is
/// not read first), where the selected values go in it (`(offset, count)` in elements, in
/// order), and those values.
pub(crate) struct WritePart {
    pub(crate) region: Region,
    pub(crate) dense: bool,
    pub(crate) runs: Vec<(u64, u64)>,
    pub(crate) values: PartValues,
}

/// The values of a [`WritePart`], in the order of its runs.
pub(crate) enum PartValues {
    /// Fixed-size elements, native byte order.
    Fixed(Vec<u8>),
    /// Variable-length elements.
    Variable(VlenBytes),
}

impl<S: ?Sized> Array<S> {
    /// The cells a selection read is split into: chunks that decode alone (a sharded
    /// array's inner chunks, which its shards' index finds one by one).
    pub(crate) fn read_cells(&self) -> Result<ChunkGrid> {
        match self.inner_chunk_shape() {
            Some(inner) => Ok(ChunkGrid::regular(inner.to_vec())?),
            None => Ok(self.metadata.chunk_grid.clone()),
        }
    }

    /// The cells a selection write is split into: the units stored under one key (chunks,
    /// shards of the sharding codec, or the shards of the storage transformer over a
    /// regular grid), each read and written once.
    pub(crate) fn write_cells(&self) -> Result<ChunkGrid> {
        if let (Some(transformer), Some(chunk)) = (&self.transformer, self.chunk_shape()) {
            let shard = chunk
                .iter()
                .zip(transformer.chunks_per_shard())
                .map(|(c, n)| {
                    c.checked_mul(*n).ok_or_else(|| zarr_core::Error::Overflow {
                        what: "the shape of a shard of the storage transformer".into(),
                    })
                })
                .collect::<std::result::Result<Vec<u64>, _>>()?;
            return Ok(ChunkGrid::regular(shard)?);
        }
        Ok(self.metadata.chunk_grid.clone())
    }

    /// The groups of every dimension of `selection`, by cell of `cells`.
    pub(crate) fn plan_selection(
        &self,
        selection: &Selection,
        cells: &ChunkGrid,
    ) -> Result<Vec<Vec<AxisGroup>>> {
        let shape = &self.metadata.shape;
        selection.check_rank(shape)?;
        selection
            .axes
            .iter()
            .enumerate()
            .map(|(dim, axis)| plan_axis(cells, shape, dim, axis.resolve(dim, shape[dim])?))
            .collect()
    }

    /// The bytes of `n` elements, as a `usize`.
    pub(crate) fn bytes_of_elements(&self, n: u64, what: &str) -> Result<usize> {
        let elem = self.element_size()?;
        n.checked_mul(elem as u64)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| {
                zarr_core::Error::Overflow {
                    what: format!("the size of {what} in bytes"),
                }
                .into()
            })
    }

    /// The region of the array that the chunks of `blocks` (a region of chunk grid
    /// indices) cover, clipped to the array: zarr-python's block selection. For an array
    /// with the `sharding_indexed` codec the blocks are its shards.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::{ArrayBuilder, Region};
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let array = ArrayBuilder::new(vec![10, 10], DataType::UInt8, vec![4, 4])
    ///     .create(Arc::new(MemoryStore::new()), "/a")
    ///     .await?;
    /// assert_eq!(array.blocks_region([1..3, 0..1])?, Region::try_new(vec![4..10, 0..4])?);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::Core`] if the blocks lie outside the chunk grid; region errors.
    pub fn blocks_region(&self, blocks: impl IntoRegion) -> Result<Region> {
        let shape = &self.metadata.shape;
        let grid = &self.metadata.chunk_grid;
        let grid_shape = grid.grid_shape(shape)?;
        let blocks = blocks.into_region_of(&grid_shape)?;
        blocks.check_within(&grid_shape)?;
        let ranges = blocks
            .ranges()
            .iter()
            .zip(shape)
            .enumerate()
            .map(|(dim, (r, &len))| {
                let origin = |k: u64| -> Result<u64> {
                    if k == grid_shape[dim] {
                        Ok(len)
                    } else {
                        Ok(grid.chunk_range_along(shape, dim, k)?.start)
                    }
                };
                let start = origin(r.start)?;
                let end = if r.is_empty() { start } else { origin(r.end)? };
                Ok(start..end)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Region::try_new(ranges)?)
    }
}

impl<S: ReadableStore + ?Sized + 'static> Array<S> {
    /// Read an orthogonal [`Selection`] (every combination of the indices each dimension
    /// selects: steps, listed indices in any order, masks) as a new `Vec<T>` in C order over
    /// its [shape](Selection::shape_in): numpy's `oindex`, zarr-python's
    /// `get_orthogonal_selection`.
    ///
    /// Only the chunks holding selected elements are read (for a sharded array, only the
    /// inner chunks), each decoded once, up to `io_concurrency` requests at a time. The
    /// inner chunks of one shard are fetched together: its index, then one request for all
    /// of them (in batches of at most half the decode budget); through the sharding storage
    /// transformer, two requests per batch of one shard's chunks. Beside the output,
    /// a read holds at most the selection budget of decoded parts of chunks (256 MiB by
    /// default; [`crate::ArrayOptions::with_selection_budget`]), or one chunk if larger. A
    /// selection of ranges with step 1 is a plain [`Array::read`].
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::{ArrayBuilder, AxisSelection, Selection};
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let array = ArrayBuilder::new(vec![4, 5], DataType::Int32, vec![2, 2])
    ///     .create(Arc::new(MemoryStore::new()), "/a")
    ///     .await?;
    /// array.write(.., &(0..20).collect::<Vec<i32>>()).await?;
    /// // Every other row; columns 4 and 0.
    /// let selection =
    ///     Selection::new([AxisSelection::step(.., 2), AxisSelection::indices([4, 0])]);
    /// assert_eq!(array.read_selection::<i32>(&selection).await?, [4, 0, 14, 10]);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::Region`] for a selection that does not fit the array (see
    /// [`Selection::shape_in`]); as [`Array::read`].
    pub async fn read_selection<T: Element>(&self, selection: &Selection) -> Result<Vec<T>> {
        self.check_element::<T>()?;
        let shape = selection.shape_in(&self.metadata.shape)?;
        let n = usize::try_from(Region::full(&shape).num_elements()?).map_err(|_| {
            zarr_core::Error::Overflow {
                what: "the number of elements in the selection".into(),
            }
        })?;
        let mut out = crate::element::zeroed_vec::<T>(n).map_err(|e| self.codecs_error(e))?;
        self.read_selection_into(selection, &mut out).await?;
        Ok(out)
    }

    /// [`Array::read_selection`] into `out`, which must hold exactly the selection's
    /// elements (C order over its [shape](Selection::shape_in)): for reading many
    /// selections into one reused buffer.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::{ArrayBuilder, AxisSelection, Selection};
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let array = ArrayBuilder::new(vec![6], DataType::Float32, vec![4])
    ///     .create(Arc::new(MemoryStore::new()), "/a")
    ///     .await?;
    /// array.write(.., &[0.0f32, 0.5, 1.0, 1.5, 2.0, 2.5]).await?;
    /// let mut out = [0.0f32; 3];
    /// for start in 0..2 {
    ///     let selection = Selection::new([AxisSelection::step(start.., 2)]);
    ///     array.read_selection_into(&selection, &mut out).await?;
    /// }
    /// assert_eq!(out, [0.5, 1.5, 2.5]);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// As [`Array::read_selection`]; [`Error::BufferSize`] if `out` has the wrong length.
    pub async fn read_selection_into<T: Element>(
        &self,
        selection: &Selection,
        out: &mut [T],
    ) -> Result<()> {
        self.check_element::<T>()?;
        let shape = selection.shape_in(&self.metadata.shape)?;
        let bytes = as_bytes_mut(out);
        self.read_selection_into_bytes(selection, &shape, bytes)
            .await?;
        self.check_values::<T>(bytes, "")
    }

    /// [`Array::read_selection`] as an n-dimensional [`ndarray::ArrayD`] of the selection's
    /// shape (feature `ndarray`).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::{ArrayBuilder, AxisSelection, Selection};
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let array = ArrayBuilder::new(vec![4, 6], DataType::UInt8, vec![2, 2])
    ///     .create(Arc::new(MemoryStore::new()), "/a")
    ///     .await?;
    /// array.write(.., &(0..24).collect::<Vec<u8>>()).await?;
    /// let every_third = Selection::new([AxisSelection::all(), AxisSelection::step(.., 3)]);
    /// let view = array.read_selection_ndarray::<u8>(&every_third).await?;
    /// assert_eq!(view.shape(), [4, 2]);
    /// assert_eq!(view[[3, 1]], 21);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// As [`Array::read_selection`].
    #[cfg(feature = "ndarray")]
    pub async fn read_selection_ndarray<T: Element>(
        &self,
        selection: &Selection,
    ) -> Result<ndarray::ArrayD<T>> {
        let shape = selection.shape_in(&self.metadata.shape)?;
        let values = self.read_selection(selection).await?;
        self.to_ndarray(&shape, values, "the selection's shape")
    }

    /// [`Array::read_selection`] as raw bytes (native byte order) of any fixed-size data
    /// type.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for variable-length data; as [`Array::read_selection`].
    pub async fn read_selection_bytes(&self, selection: &Selection) -> Result<Vec<u8>> {
        let shape = selection.shape_in(&self.metadata.shape)?;
        let size = self.bytes_of_elements(Region::full(&shape).num_elements()?, "the selection")?;
        let mut out = zarr_codecs::zeroed_bytes(size).map_err(|e| self.codecs_error(e))?;
        self.read_selection_into_bytes(selection, &shape, &mut out)
            .await?;
        Ok(out)
    }

    async fn read_selection_into_bytes(
        &self,
        selection: &Selection,
        out_shape: &[u64],
        out: &mut [u8],
    ) -> Result<()> {
        if let Some(region) = selection.as_region(&self.metadata.shape)? {
            return self.read_bytes_into(&region, out).await;
        }
        let elem = self.element_size()?;
        let expected = Region::full(out_shape).num_elements()?;
        if out.len() as u64 != expected.saturating_mul(elem as u64) {
            return Err(Error::buffer_size(expected, elem, out.len()));
        }
        if out.is_empty() {
            return Ok(());
        }
        let plans = self.plan_selection(selection, &self.read_cells()?)?;
        let span =
            tracing::debug_span!("zarr.read_selection", array = %self.path, bytes = out.len());
        let parts = combinations(&plans)
            .map(|combination| Ok((group_box(&pick(&plans, &combination))?, combination)));
        self.read_combinations(parts, |combination, boxed| {
            walk(&pick(&plans, &combination), out_shape, &mut |b, o, n| {
                let (b, o, n) = (b as usize * elem, o as usize * elem, n as usize * elem);
                out[o..o + n].copy_from_slice(&boxed[b..b + n]);
            });
            Ok(())
        })
        .instrument(span)
        .await
    }

    /// Read the elements at `points` (each one index per dimension; any order, repeats
    /// allowed) as a new `Vec<T>` in the order of the points: numpy's `vindex` with integer
    /// arrays, zarr-python's `get_coordinate_selection`.
    ///
    /// The points are grouped by chunk (inner chunk, for a sharded array), and each chunk
    /// holding points is read once, up to `io_concurrency` requests at a time; the inner
    /// chunks of one shard are fetched together, as by [`Array::read_selection`].
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let array = ArrayBuilder::new(vec![4, 5], DataType::Int32, vec![2, 2])
    ///     .create(Arc::new(MemoryStore::new()), "/a")
    ///     .await?;
    /// array.write(.., &(0..20).collect::<Vec<i32>>()).await?;
    /// assert_eq!(array.read_points::<i32, _>([[3, 4], [0, 1], [3, 4]]).await?, [19, 1, 19]);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::Region`] for a point with the wrong number of indices or outside the array;
    /// as [`Array::read`].
    pub async fn read_points<T: Element, P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
    ) -> Result<Vec<T>> {
        self.check_element::<T>()?;
        let (flat, count) = flatten_points(points, self.metadata.shape.len())?;
        let mut out = crate::element::zeroed_vec::<T>(count).map_err(|e| self.codecs_error(e))?;
        let bytes = as_bytes_mut(&mut out);
        self.read_points_into_bytes(&flat, count, bytes).await?;
        self.check_values::<T>(bytes, "")?;
        Ok(out)
    }

    /// [`Array::read_points`] into `out`, which must hold one element per point.
    ///
    /// # Errors
    /// As [`Array::read_points`]; [`Error::BufferSize`] if `out` has the wrong length.
    pub async fn read_points_into<T: Element, P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
        out: &mut [T],
    ) -> Result<()> {
        self.check_element::<T>()?;
        let (flat, count) = flatten_points(points, self.metadata.shape.len())?;
        let bytes = as_bytes_mut(out);
        self.read_points_into_bytes(&flat, count, bytes).await?;
        self.check_values::<T>(bytes, "")
    }

    /// [`Array::read_points`] as raw bytes (native byte order) of any fixed-size data type.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for variable-length data; as [`Array::read_points`].
    pub async fn read_points_bytes<P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
    ) -> Result<Vec<u8>> {
        let (flat, count) = flatten_points(points, self.metadata.shape.len())?;
        let size = self.bytes_of_elements(count as u64, "the points")?;
        let mut out = zarr_codecs::zeroed_bytes(size).map_err(|e| self.codecs_error(e))?;
        self.read_points_into_bytes(&flat, count, &mut out).await?;
        Ok(out)
    }

    async fn read_points_into_bytes(
        &self,
        flat: &[u64],
        count: usize,
        out: &mut [u8],
    ) -> Result<()> {
        let elem = self.element_size()?;
        if out.len() as u64 != (count as u64).saturating_mul(elem as u64) {
            return Err(Error::buffer_size(count as u64, elem, out.len()));
        }
        let groups = plan_points(&self.read_cells()?, &self.metadata.shape, flat, count)?;
        let span = tracing::debug_span!("zarr.read_points", array = %self.path, points = count);
        let parts = groups.into_iter().map(|g| Ok((g.region, g.members)));
        self.read_combinations(parts, |members, boxed| {
            for (offset, point) in members {
                let (b, o) = (offset as usize * elem, point as usize * elem);
                out[o..o + elem].copy_from_slice(&boxed[b..b + elem]);
            }
            Ok(())
        })
        .instrument(span)
        .await
    }

    /// Read the chunks of `blocks` (a region of chunk grid indices; shards for an array
    /// with the `sharding_indexed` codec) as a new `Vec<T>` in C order: zarr-python's
    /// `get_block_selection`. The same as reading [`Array::blocks_region`].
    ///
    /// # Errors
    /// As [`Array::blocks_region`] and [`Array::read`].
    pub async fn read_blocks<T: Element>(&self, blocks: impl IntoRegion) -> Result<Vec<T>> {
        let region = self.blocks_region(blocks)?;
        self.read(region).await
    }

    /// Read the boxes of `parts` (see [`run_parts`]) as fixed-size bytes and hand each to
    /// `consume` with its payload as it arrives.
    async fn read_combinations<P, I, F>(&self, parts: I, consume: F) -> Result<()>
    where
        I: Iterator<Item = Result<(Region, P)>>,
        F: FnMut(P, Vec<u8>) -> Result<()>,
    {
        self.read_parts_with(
            parts,
            |array, boxes| async move { crate::boxes::read_fixed(array, boxes).await },
            consume,
        )
        .await
    }

    /// Read the boxes of `parts` (each inside one of the [read cells](Array::read_cells))
    /// with `fetch` (see [`run_parts`]) and hand each to `consume` with its payload as it
    /// arrives.
    ///
    /// Boxes of one shard are fetched together (see [`crate::boxes`]): the parts are taken
    /// [`WINDOW`](crate::boxes::WINDOW) at a time, and the boxes of each shard in a window
    /// go to `fetch` in batches of at most half the array's decode budget of decoded bytes (a
    /// larger box alone). Half, as for the parts of a large shard read: batches of the whole
    /// budget (1.3 MB stored in the W2 bench) went past what `FilesystemStore` reads on the
    /// calling thread, and ::2 selections of W2 ran 10-15% slower than with one request per
    /// inner chunk; with half, as fast.
    pub(crate) async fn read_parts_with<P, I, T, G, Fut, F>(
        &self,
        parts: I,
        fetch: G,
        mut consume: F,
    ) -> Result<()>
    where
        I: Iterator<Item = Result<(Region, P)>>,
        T: Send + 'static,
        G: Fn(Array<S>, Vec<Region>) -> Fut,
        Fut: std::future::Future<Output = Result<Vec<T>>> + Send + 'static,
        F: FnMut(P, T) -> Result<()>,
    {
        // Parts in one shard share its index: without a cache of the array's own, one for
        // this operation, as a region read reads each shard's index once.
        let mut shared = self.clone();
        if shared.index_cache.is_none() && self.inner_chunk_shape().is_some() {
            shared.index_cache = Some(Arc::new(crate::index_cache::IndexCache::new(
                OPERATION_INDEX_CACHE,
            )));
        }
        let batches = crate::boxes::batched(
            parts,
            (self.options.decode_budget() / 2).max(1) as u64,
            |(region, _)| {
                Ok((
                    part_bytes(self, region)?,
                    crate::boxes::batch_key(self, region)?,
                ))
            },
        );
        let jobs = batches.map(|batch| {
            let (bytes, parts) = batch?;
            let (boxes, payloads): (Vec<Region>, Vec<P>) = parts.into_iter().unzip();
            Ok((bytes, fetch(shared.clone(), boxes), payloads))
        });
        run_parts(self, jobs, |payloads: Vec<P>, outputs: Vec<T>| {
            if payloads.len() != outputs.len() {
                return Err(Error::unsupported(
                    self.path.as_str(),
                    format!(
                        "a batch of {} parts of a selection read {} boxes",
                        payloads.len(),
                        outputs.len()
                    ),
                ));
            }
            payloads
                .into_iter()
                .zip(outputs)
                .try_for_each(|(payload, output)| consume(payload, output))
        })
        .await
    }
}

/// Run each job of `jobs` (`(bytes it holds, future, payload)`): `io_concurrency` at a time,
/// each a task of its own on a multi-threaded runtime (so that their chunks decode on all
/// cores), with at most the array's selection budget
/// ([`crate::ArrayOptions::with_selection_budget`]) held (or one job, if larger) until `consume`
/// has taken the job's output with its payload, as each finishes.
async fn run_parts<S, P, T, F, I, C>(array: &Array<S>, jobs: I, mut consume: C) -> Result<()>
where
    S: ?Sized,
    T: Send + 'static,
    F: std::future::Future<Output = Result<T>> + Send + 'static,
    I: Iterator<Item = Result<(u64, F, P)>>,
    C: FnMut(P, T) -> Result<()>,
{
    let io = array.options.io_concurrency().max(1);
    let handle = crate::read::pipeline_handle(2);
    // Permits of `PERMIT_BYTES`; a job takes as many as its bytes, at most all of them.
    let total = (array.options.selection_budget() / PERMIT_BYTES).clamp(1, u32::MAX as usize);
    let budget = Arc::new(Semaphore::new(total));
    let running = futures::stream::iter(jobs)
        .map(|job| {
            let budget = Arc::clone(&budget);
            let handle = handle.clone();
            async move {
                let (bytes, work, payload) = job?;
                let permits = (bytes / PERMIT_BYTES as u64).clamp(1, total as u64);
                let permit = budget
                    .acquire_many_owned(permits as u32)
                    .await
                    .map_err(|e| Error::Task(e.to_string()))?;
                let output = match handle {
                    Some(handle) => AbortOnDrop(handle.spawn(work)).join().await??,
                    None => work.await?,
                };
                Ok::<_, Error>((payload, output, permit))
            }
        })
        .buffer_unordered(io);
    futures::pin_mut!(running);
    while let Some(done) = running.next().await {
        let (payload, output, _permit) = done?;
        consume(payload, output)?;
    }
    Ok(())
}

/// What a part's budget counts per element of variable-length data (its offset and a
/// short value), whose size is not known before the part is read.
const VLEN_ELEMENT_BYTES: u64 = 16;

/// The decoded bytes of a box of `region` (estimated for variable-length data).
fn part_bytes<S: ?Sized>(array: &Array<S>, region: &Region) -> Result<u64> {
    let per_element = array
        .metadata
        .data_type
        .fixed_size()
        .map_or(VLEN_ELEMENT_BYTES, |n| n as u64);
    Ok(region.num_elements()?.saturating_mul(per_element))
}

impl<S: WritableStore + ?Sized + 'static> Array<S> {
    /// Write `values` (C order over the selection's [shape](Selection::shape_in)) into an
    /// orthogonal [`Selection`]: numpy's `oindex` assignment, zarr-python's
    /// `set_orthogonal_selection`. Where an index repeats, the last value written there
    /// stays.
    ///
    /// Each chunk (or shard) holding selected elements is read once (unless the selection
    /// covers all of it), merged and written once, under the same in-process lock as
    /// [`Array::write`]; chunks that end up all fill value are erased as by a write. A
    /// selection of ranges with step 1 is a plain [`Array::write`].
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::{ArrayBuilder, AxisSelection, Selection};
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let array = ArrayBuilder::new(vec![3, 4], DataType::UInt8, vec![2, 2])
    ///     .create(Arc::new(MemoryStore::new()), "/a")
    ///     .await?;
    /// let selection =
    ///     Selection::new([AxisSelection::indices([2, 0]), AxisSelection::step(.., 3)]);
    /// array.write_selection(&selection, &[1u8, 2, 3, 4]).await?;
    /// assert_eq!(array.read::<u8>(..).await?, [3, 0, 0, 4, 0, 0, 0, 0, 1, 0, 0, 2]);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::ElementType`]; [`Error::BufferSize`] if `values` does not hold the selection;
    /// as [`Array::read_selection`] and [`Array::write`]. Chunks are written independently:
    /// after an error, some may hold the new values.
    pub async fn write_selection<T: Element>(
        &self,
        selection: &Selection,
        values: &[T],
    ) -> Result<()> {
        self.check_element::<T>()?;
        self.write_selection_bytes(selection, as_bytes(values))
            .await
    }

    /// [`Array::write_selection`] from raw bytes (native byte order) of any fixed-size data
    /// type.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for variable-length data; as [`Array::write_selection`].
    pub async fn write_selection_bytes(&self, selection: &Selection, values: &[u8]) -> Result<()> {
        let elem = self.element_size()?;
        let out_shape = selection.shape_in(&self.metadata.shape)?;
        let expected = Region::full(&out_shape).num_elements()?;
        if values.len() as u64 != expected.saturating_mul(elem as u64) {
            return Err(Error::buffer_size(expected, elem, values.len()));
        }
        if let Some(region) = selection.as_region(&self.metadata.shape)? {
            return self.write_bytes(&region, values).await;
        }
        if values.is_empty() {
            return Ok(());
        }
        let plans = self.plan_selection(selection, &self.write_cells()?)?;
        let span =
            tracing::debug_span!("zarr.write_selection", array = %self.path, bytes = values.len());
        let parts = combinations(&plans).map(|combination| {
            let groups = pick(&plans, &combination);
            let mut runs = Vec::new();
            let mut part = Vec::new();
            walk(&groups, &out_shape, &mut |b, o, n| {
                runs.push((b, n));
                let (o, n) = (o as usize * elem, n as usize * elem);
                part.extend_from_slice(&values[o..o + n]);
            });
            Ok(WritePart {
                region: group_box(&groups)?,
                dense: groups_dense(&groups),
                runs,
                values: PartValues::Fixed(part),
            })
        });
        self.write_combinations(parts).instrument(span).await
    }

    /// Write `values`, one per point in the order of `points` (each one index per
    /// dimension): numpy's `vindex` assignment, zarr-python's `set_coordinate_selection`.
    /// Where a point repeats, the last value given for it stays. Each chunk (or shard)
    /// holding points is read once, merged and written once, as for
    /// [`Array::write_selection`].
    ///
    /// # Errors
    /// [`Error::ElementType`]; [`Error::BufferSize`] if there is not one value per point; as
    /// [`Array::read_points`] and [`Array::write`].
    pub async fn write_points<T: Element, P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
        values: &[T],
    ) -> Result<()> {
        self.check_element::<T>()?;
        self.write_points_bytes(points, as_bytes(values)).await
    }

    /// [`Array::write_points`] from raw bytes (native byte order) of any fixed-size data
    /// type.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for variable-length data; as [`Array::write_points`].
    pub async fn write_points_bytes<P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
        values: &[u8],
    ) -> Result<()> {
        let elem = self.element_size()?;
        let (flat, count) = flatten_points(points, self.metadata.shape.len())?;
        if values.len() as u64 != (count as u64).saturating_mul(elem as u64) {
            return Err(Error::buffer_size(count as u64, elem, values.len()));
        }
        let groups = plan_points(&self.write_cells()?, &self.metadata.shape, &flat, count)?;
        let span = tracing::debug_span!("zarr.write_points", array = %self.path, points = count);
        let parts = groups.into_iter().map(|g| {
            let dense = g.dense();
            let mut part = Vec::with_capacity(g.members.len() * elem);
            let runs = g
                .members
                .iter()
                .map(|&(offset, point)| {
                    let o = point as usize * elem;
                    part.extend_from_slice(&values[o..o + elem]);
                    (offset, 1)
                })
                .collect();
            Ok(WritePart {
                region: g.region,
                dense,
                runs,
                values: PartValues::Fixed(part),
            })
        });
        self.write_combinations(parts).instrument(span).await
    }

    /// Write each part (see [`run_parts`]): under its unit's lock, read its box (unless
    /// covered whole), copy the values in, and write the box back.
    pub(crate) async fn write_combinations(
        &self,
        parts: impl Iterator<Item = Result<WritePart>>,
    ) -> Result<()> {
        let jobs = parts.map(|part| {
            let part = part?;
            let bytes = part_bytes(self, &part.region)?;
            let array = self.clone();
            Ok((bytes, async move { array.write_part(part).await }, ()))
        });
        run_parts(self, jobs, |(), ()| Ok(())).await
    }

    async fn write_part(&self, part: WritePart) -> Result<()> {
        let shape = &self.metadata.shape;
        let chunk = self
            .metadata
            .chunk_grid
            .chunk_of(shape, &part.region.starts())?
            .0;
        let _guard = crate::write::lock_unit(self, &chunk).await?;
        match part.values {
            PartValues::Fixed(values) => {
                let elem = self.element_size()?;
                let mut boxed = if part.dense {
                    let size = self.bytes_of_elements(part.region.num_elements()?, "a part")?;
                    zarr_codecs::zeroed_bytes(size).map_err(|e| self.codecs_error(e))?
                } else {
                    self.read_bytes(&part.region).await?
                };
                let mut from = 0;
                for (offset, n) in part.runs {
                    let (b, n) = (offset as usize * elem, n as usize * elem);
                    boxed[b..b + n].copy_from_slice(&values[from..from + n]);
                    from += n;
                }
                crate::write::write_fixed_locked(self, &part.region, &boxed).await
            }
            PartValues::Variable(values) => {
                let merged = self
                    .merge_variable(&part.region, &part.runs, &values)
                    .await?;
                crate::write::write_variable_locked(self, &part.region, merged).await
            }
        }
    }

    /// The box of `region` with the variable-length `values` placed at `runs` (as in
    /// [`WritePart`]; a later value for an element replaces an earlier one), and the box's
    /// other elements read from the array (only if there are any).
    async fn merge_variable(
        &self,
        region: &Region,
        runs: &[(u64, u64)],
        values: &VlenBytes,
    ) -> Result<VlenBytes> {
        let n =
            usize::try_from(region.num_elements()?).map_err(|_| zarr_core::Error::Overflow {
                what: "the number of elements in a part of the selection".into(),
            })?;
        // For each element of the box, the value that replaces it (`KEEP`: none).
        const KEEP: usize = usize::MAX;
        let mut source = vec![KEEP; n];
        let mut next = 0usize;
        for &(offset, count) in runs {
            for slot in &mut source[offset as usize..(offset + count) as usize] {
                *slot = next;
                next += 1;
            }
        }
        if next != values.len() {
            return Err(Error::BufferSize {
                expected: next as u64,
                found: values.len() as u64,
            });
        }
        let existing = if source.contains(&KEEP) {
            Some(self.read_vlen(region).await?)
        } else {
            None
        };
        let element = |i: usize| -> Result<&[u8]> {
            let found = match (source[i], &existing) {
                (KEEP, Some(existing)) => existing.get(i),
                (KEEP, None) => None,
                (v, _) => values.get(v),
            };
            found.ok_or_else(|| {
                Error::unsupported(
                    self.path.as_str(),
                    format!("element {i} of a part of {region} was read short"),
                )
            })
        };
        let elements = (0..n).map(element).collect::<Result<Vec<&[u8]>>>()?;
        Ok(VlenBytes::from_elements(elements))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group: its box's start and length, and `(offset, output position)` per member.
    type Described = (u64, u64, Vec<(u64, u64)>);

    fn indices(groups: &[AxisGroup]) -> Vec<Described> {
        groups
            .iter()
            .map(|g| {
                let mut members = Vec::new();
                walk(&[g], &[u64::MAX], &mut |b, o, n| {
                    for k in 0..n {
                        members.push((b + k, o + k));
                    }
                });
                (g.start, g.len, members)
            })
            .collect()
    }

    #[test]
    fn strided_axes_split_at_cell_edges() {
        let grid = ChunkGrid::regular(vec![4]).unwrap();
        let resolved = AxisSelection::step(1..11, 3).resolve(0, 12).unwrap();
        let groups = plan_axis(&grid, &[12], 0, resolved).unwrap();
        // 1, 4, 7, 10: cells 0..4, 4..8, 8..12.
        assert_eq!(
            indices(&groups),
            [
                (1, 1, vec![(0, 0)]),
                (4, 4, vec![(0, 1), (3, 2)]),
                (10, 1, vec![(0, 3)])
            ]
        );
    }

    #[test]
    fn listed_axes_sort_and_keep_repeats() {
        let grid = ChunkGrid::regular(vec![4]).unwrap();
        let resolved = AxisSelection::indices([6, 1, 6, 2]).resolve(0, 8).unwrap();
        let groups = plan_axis(&grid, &[8], 0, resolved).unwrap();
        assert_eq!(
            indices(&groups),
            [(1, 2, vec![(0, 1), (1, 3)]), (6, 1, vec![(0, 0), (0, 2)])]
        );
        assert!(groups[0].dense() && groups[1].dense());
        let sparse = plan_axis(&grid, &[8], 0, Resolved::Listed(vec![0, 3])).unwrap();
        assert!(!sparse[0].dense());
    }

    #[test]
    fn bad_axes_are_region_errors() {
        for (axis, len) in [
            (AxisSelection::step(0..3, 0), 5),
            (
                AxisSelection::step((Bound::Included(4), Bound::Excluded(3)), 1),
                5,
            ),
            (AxisSelection::range(0..6), 5),
            (AxisSelection::indices([5]), 5),
            (AxisSelection::mask([true]), 2),
        ] {
            assert!(
                matches!(axis.resolve(0, len), Err(Error::Region { .. })),
                "{axis:?}"
            );
        }
    }

    #[test]
    fn points_group_by_cell_in_order() {
        let grid = ChunkGrid::regular(vec![2, 2]).unwrap();
        let (flat, n) = flatten_points([[3, 0], [0, 1], [1, 0], [3, 0]], 2).unwrap();
        let groups = plan_points(&grid, &[4, 4], &flat, n).unwrap();
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].region, Region::try_new(vec![0..2, 0..2]).unwrap());
        assert_eq!(groups[0].members, [(1, 1), (2, 2)]);
        assert_eq!(groups[1].region, Region::try_new(vec![3..4, 0..1]).unwrap());
        assert_eq!(groups[1].members, [(0, 0), (0, 3)]);
        assert!(!groups[0].dense() && groups[1].dense());
        assert!(flatten_points([vec![1u64]], 2).is_err());
        assert!(plan_points(&grid, &[4, 4], &[4, 0], 1).is_err());
    }
}
