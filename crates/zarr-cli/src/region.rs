//! numpy-like region syntax (`0:10,:,5`), shapes (`100,200`) and chunk-aligned slabs.

use std::ops::Range;

use anyhow::Result;
use zarr::array::Region;
use zarr::metadata::ArrayMetadata;

use crate::usage;

/// A parsed region: the ranges, which dimensions were given as a single index (numpy
/// drops those from the result's shape), the step of each dimension (every `step`-th index
/// of its range, from its start), and the dimensions given as an index list (increasing;
/// the range then runs from the first to the last).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Selection {
    pub(crate) region: Region,
    pub(crate) squeezed: Vec<bool>,
    pub(crate) steps: Vec<u64>,
    pub(crate) lists: Vec<Option<Vec<u64>>>,
}

/// What a selection selects along one dimension of a slab.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AxisIn {
    /// The indices `start + k * step` of the range.
    Step(Range<u64>, u64),
    /// These indices.
    List(Vec<u64>),
}

impl AxisIn {
    fn count(&self) -> u64 {
        match self {
            Self::Step(range, step) => (range.end - range.start).div_ceil(*step),
            Self::List(indices) => indices.len() as u64,
        }
    }

    /// The `k`-th index selected.
    fn index(&self, k: u64) -> u64 {
        match self {
            Self::Step(range, step) => range.start + k * step,
            Self::List(indices) => indices.get(k as usize).copied().unwrap_or_default(),
        }
    }
}

impl Selection {
    /// A region with step 1 everywhere and no single-index dimension.
    pub(crate) fn whole(region: Region) -> Self {
        let rank = region.rank();
        Self {
            region,
            squeezed: vec![false; rank],
            steps: vec![1; rank],
            lists: vec![None; rank],
        }
    }

    /// The shape of the result: the number of selected indices per dimension, without the
    /// single-index dimensions.
    pub(crate) fn out_shape(&self) -> Vec<u64> {
        self.axes_in(&self.region)
            .iter()
            .zip(&self.squeezed)
            .filter(|(_, squeezed)| !**squeezed)
            .map(|(axis, _)| axis.count())
            .collect()
    }

    /// Whether a dimension has a step other than 1 or an index list: the selection is then
    /// read and written as an orthogonal selection ([`Selection::strided_in`]).
    pub(crate) fn is_strided(&self) -> bool {
        self.steps.iter().any(|&s| s != 1) || self.lists.iter().any(Option::is_some)
    }

    /// The selection's indices inside `slab` (a part of the region), as an orthogonal
    /// selection of the array: in each dimension, the indices `start + k * step` of the
    /// region, or those of its index list, that lie in the slab.
    pub(crate) fn strided_in(&self, slab: &Region) -> zarr::array::Selection {
        zarr::array::Selection::new(self.axes_in(slab).into_iter().map(|axis| match axis {
            AxisIn::Step(range, step) => zarr::array::AxisSelection::step(range, step),
            AxisIn::List(indices) => zarr::array::AxisSelection::indices(indices),
        }))
    }

    /// The number of indices the selection selects in `slab` (a part of the region) per
    /// dimension, single-index dimensions kept (with 1).
    pub(crate) fn counts_in(&self, slab: &Region) -> Vec<u64> {
        self.axes_in(slab).iter().map(AxisIn::count).collect()
    }

    /// Per dimension, what the selection selects in `slab`: the range from its first index
    /// in the slab to the slab's end with the step, or the indices of its list in the slab.
    fn axes_in(&self, slab: &Region) -> Vec<AxisIn> {
        slab.ranges()
            .iter()
            .zip(self.region.ranges())
            .zip(self.steps.iter().zip(&self.lists))
            .map(|((part, whole), (&step, list))| match list {
                Some(indices) => AxisIn::List(
                    indices
                        .iter()
                        .copied()
                        .filter(|i| part.contains(i))
                        .collect(),
                ),
                None => {
                    let first = whole.start + (part.start - whole.start).div_ceil(step) * step;
                    AxisIn::Step(first.min(part.end)..part.end, step)
                }
            })
            .collect()
    }
}

impl Selection {
    /// Where the array element at `index` (one the selection selects) lies in the
    /// selection's result, per dimension (0 for a single-index dimension).
    pub(crate) fn position_of(&self, index: &[u64]) -> Vec<u64> {
        index
            .iter()
            .zip(self.region.ranges())
            .zip(self.steps.iter().zip(&self.lists))
            .map(|((&v, range), (&step, list))| match list {
                Some(indices) => indices.partition_point(|&i| i < v) as u64,
                None => (v - range.start) / step,
            })
            .collect()
    }

    /// The index in the array of element `i` (C order) of the selection's part in `slab`
    /// (see [`Selection::strided_in`]).
    pub(crate) fn element_in(&self, slab: &Region, i: u64) -> Vec<u64> {
        if !self.is_strided() {
            return element_index(slab, i);
        }
        let axes = self.axes_in(slab);
        let counts: Vec<u64> = axes.iter().map(AxisIn::count).collect();
        let within =
            zarr::metadata::unravel_index(i, &counts).unwrap_or_else(|| vec![0; counts.len()]);
        within
            .iter()
            .zip(&axes)
            .map(|(&k, axis)| axis.index(k))
            .collect()
    }
}

/// What a region is made of, for error messages.
const REGION_SYNTAX: &str = "expected comma-separated selections, one per dimension, each \
    `start:stop`, `start:`, `:stop`, `:`, `start:stop:step`, a single index or an increasing \
    index list `[i,j,...]` (negative counts from the end), and at most one `...` for the \
    dimensions not given (e.g. `0:10,:,5`, `[1,5,9],::2` or `...,0`)";

/// Parse `text` (or the whole array when `None`) against `shape`.
///
/// Each comma-separated entry is `a:b`, `a:`, `:b`, `:` or a single index `i`; negative
/// numbers count from the end; slice bounds are clipped to the array as numpy does, a single
/// index must lie inside it; missing trailing entries mean `:`. One entry may be `...`
/// (numpy's ellipsis): `:` for as many dimensions as the other entries leave.
pub(crate) fn parse_selection(text: Option<&str>, shape: &[u64]) -> Result<Selection> {
    let whole = text.unwrap_or_default();
    let entries: Vec<&str> = match text.map(str::trim) {
        None | Some("") => Vec::new(),
        Some(text) => split_entries(whole, text)?,
    };
    for entry in &entries {
        check_entry(whole, entry)?;
    }
    let ellipses = entries.iter().filter(|e| **e == "...").count();
    if ellipses > 1 {
        usage!("region {whole:?} has {ellipses} `...`; at most one is allowed");
    }
    let given = entries.len() - ellipses;
    if given > shape.len() {
        usage!(
            "region {whole:?} selects {given} dimension{} but the array has {}",
            if given == 1 { "" } else { "s" },
            shape.len()
        );
    }
    // One entry per dimension: `...` becomes as many `:` as needed, and missing trailing
    // entries are `:`.
    let mut full: Vec<&str> = Vec::with_capacity(shape.len());
    for entry in &entries {
        if *entry == "..." {
            full.extend(std::iter::repeat_n(":", shape.len() - given));
        } else {
            full.push(entry);
        }
    }
    full.resize(shape.len(), ":");
    let mut ranges = Vec::with_capacity(shape.len());
    let mut squeezed = Vec::with_capacity(shape.len());
    let mut steps = Vec::with_capacity(shape.len());
    let mut lists = Vec::with_capacity(shape.len());
    for (dim, (&n, entry)) in shape.iter().zip(full).enumerate() {
        if let Some(list) = entry.strip_prefix('[') {
            let indices = parse_list(whole, entry, list, n, dim)?;
            // Non-empty and increasing, so first..=last holds them all.
            ranges.push(indices[0]..indices[indices.len() - 1] + 1);
            squeezed.push(false);
            steps.push(1);
            lists.push(Some(indices));
            continue;
        }
        let (range, single, step) = parse_entry(whole, entry, n, dim)?;
        ranges.push(range);
        squeezed.push(single);
        steps.push(step);
        lists.push(None);
    }
    let region = Region::try_new(ranges)?;
    Ok(Selection {
        region,
        squeezed,
        steps,
        lists,
    })
}

/// Split a region at the commas that separate dimensions (not those inside `[...]`).
fn split_entries<'a>(whole: &str, text: &'a str) -> Result<Vec<&'a str>> {
    let mut entries = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '[' if depth == 0 => depth = 1,
            '[' => usage!("region {whole:?}: index lists cannot be nested; {REGION_SYNTAX}"),
            ']' if depth == 1 => depth = 0,
            ']' => usage!("region {whole:?}: `]` without `[`; {REGION_SYNTAX}"),
            ',' if depth == 0 => {
                entries.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        usage!("region {whole:?}: `[` without `]`; {REGION_SYNTAX}");
    }
    entries.push(text[start..].trim());
    Ok(entries)
}

/// The indices of the list `entry` (`list` is what follows its `[`) for dimension `dim` of
/// size `n`: non-empty, each inside the dimension (negative counts from the end), increasing.
fn parse_list(whole: &str, entry: &str, list: &str, n: u64, dim: usize) -> Result<Vec<u64>> {
    let Some(inner) = list.strip_suffix(']') else {
        usage!(
            "region {whole:?}: {entry:?} (dimension {dim}) is not an index list; {REGION_SYNTAX}"
        );
    };
    let n_i = i128::from(n);
    let mut indices: Vec<u64> = Vec::new();
    for item in inner.split(',').map(str::trim) {
        if item.is_empty() {
            usage!(
                "region {whole:?}: the index list {entry:?} (dimension {dim}) has an empty entry"
            );
        }
        let Ok(i) = item.parse::<i128>() else {
            usage!(
                "region {whole:?}: {item:?} in {entry:?} (dimension {dim}) is not an integer; \
                 {REGION_SYNTAX}"
            );
        };
        let resolved = if i < 0 { i + n_i } else { i };
        if !(0..n_i).contains(&resolved) {
            usage!("region {whole:?}: index {i} is out of bounds for dimension {dim} of size {n}");
        }
        let index = u64::try_from(resolved).unwrap_or_default();
        if indices.last().is_some_and(|&last| index <= last) {
            usage!(
                "region {whole:?}: the index list {entry:?} (dimension {dim}) must be increasing \
                 (each index once, in order)"
            );
        }
        indices.push(index);
    }
    Ok(indices)
}

/// Refuse an entry that is not made of the region syntax's characters (a `;` typed for a
/// `,`, a letter), or that is empty, before reading it as numbers.
fn check_entry(whole: &str, entry: &str) -> Result<()> {
    if entry.is_empty() {
        usage!("region {whole:?} has an empty selection; {REGION_SYNTAX}");
    }
    if entry == "..." {
        return Ok(());
    }
    let list = entry.starts_with('[');
    if let Some(bad) = entry.chars().find(|c| {
        !(c.is_ascii_digit()
            || matches!(c, ':' | '-' | '+' | ' ')
            || (list && matches!(c, '[' | ']' | ',')))
    }) {
        let hint = match bad {
            ';' | '|' | '/' | '\\' => " (dimensions are separated by commas)",
            '.' => " (`...` must stand alone between commas)",
            _ => "",
        };
        usage!("region {whole:?}: {entry:?} is not a selection{hint}; {REGION_SYNTAX}");
    }
    Ok(())
}

fn parse_entry(whole: &str, entry: &str, n: u64, dim: usize) -> Result<(Range<u64>, bool, u64)> {
    let number = |s: &str| -> Result<Option<i128>> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(None);
        }
        match s.parse::<i128>() {
            Ok(v) => Ok(Some(v)),
            Err(_) => usage!(
                "region {whole:?}: {entry:?} (dimension {dim}) is not a selection: {s:?} is not \
                 an integer; {REGION_SYNTAX}"
            ),
        }
    };
    let n_i = i128::from(n);
    // numpy's slice clipping.
    let clip = |v: i128| -> u64 {
        let v = if v < 0 { v + n_i } else { v };
        // In 0..=n, so it fits in u64.
        u64::try_from(v.clamp(0, n_i)).unwrap_or(n)
    };
    let parts: Vec<&str> = entry.split(':').collect();
    match parts.as_slice() {
        [index] => {
            let Some(i) = number(index)? else {
                usage!("region {whole:?}: the selection for dimension {dim} is empty");
            };
            let resolved = if i < 0 { i + n_i } else { i };
            if !(0..n_i).contains(&resolved) {
                usage!(
                    "region {whole:?}: index {i} is out of bounds for dimension {dim} of size {n}"
                );
            }
            let i = u64::try_from(resolved).unwrap_or_default();
            Ok((i..i + 1, true, 1))
        }
        [start, stop] | [start, stop, ""] => {
            let start = number(start)?.map_or(0, clip);
            let stop = number(stop)?.map_or(n, clip);
            Ok((start..stop.max(start), false, 1))
        }
        [start, stop, step] => {
            let step = match number(step)? {
                Some(step) if step > 0 => u64::try_from(step).unwrap_or(u64::MAX),
                Some(step) => usage!(
                    "region {whole:?}: {entry:?} (dimension {dim}) has a step of {step}; steps \
                     must be positive (negative steps are not supported)"
                ),
                None => 1,
            };
            let start = number(start)?.map_or(0, clip);
            let stop = number(stop)?.map_or(n, clip);
            Ok((start..stop.max(start), false, step))
        }
        _ => usage!(
            "region {whole:?}: {entry:?} (dimension {dim}) has {} colons; {REGION_SYNTAX}",
            parts.len() - 1
        ),
    }
}

/// The index in the array of element `i` (C order) of `region`.
pub(crate) fn element_index(region: &Region, i: u64) -> Vec<u64> {
    let shape = region.shape();
    let within = zarr::metadata::unravel_index(i, &shape).unwrap_or_else(|| vec![0; shape.len()]);
    within
        .iter()
        .zip(region.ranges())
        .map(|(w, r)| r.start + w)
        .collect()
}

/// `element [3, 1]`, or `the element` of a 0-d array.
pub(crate) fn element_text(index: &[u64]) -> String {
    if index.is_empty() {
        return "the element".to_owned();
    }
    let parts: Vec<String> = index.iter().map(u64::to_string).collect();
    format!("element [{}]", parts.join(", "))
}

/// Parse a shape such as `100,200` (every entry at least `min`).
pub(crate) fn parse_shape(text: &str, what: &str, min: u64) -> Result<Vec<u64>> {
    let text = text.trim();
    if text.is_empty() || text == "()" {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for part in text.split(',') {
        match part.trim().parse::<u64>() {
            Ok(v) if v >= min => out.push(v),
            _ => usage!("{what} {text:?}: {part:?} is not an integer of at least {min}"),
        }
    }
    Ok(out)
}

/// Parse a byte size: `1000`, `512K`, `64M`, `2G` (binary units).
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, ""),
    };
    let shift = match unit.to_ascii_uppercase().trim_end_matches(['B', 'I']) {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => {
            return Err(format!(
                "{text:?} is not a size such as 4096, 512K, 64M or 1G"
            ));
        }
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{text:?} is not a size such as 4096, 512K, 64M or 1G"))
}

/// Split `region` along its first dimension into slabs for reading, each holding about
/// `target_bytes` given `element_bytes` per element. A slab starts and ends on chunk
/// boundaries of the array (where the region allows) and holds at least one row of chunks;
/// for a sharded array (`inner`: the shape of its inner chunks) a row of shards larger than
/// the target is cut on inner chunk boundaries instead, so a slab holds at least one row of
/// inner chunks, each read once, and a shard is never held whole.
pub(crate) fn slabs(
    metadata: &ArrayMetadata,
    inner: Option<&[u64]>,
    region: &Region,
    element_bytes: u64,
    target_bytes: u64,
) -> Result<Vec<Region>> {
    slabs_cut(metadata, inner, region, 0, element_bytes, target_bytes)
}

/// As [`slabs`], split along dimension `axis` (`< region.rank()` unless the region is 0-d):
/// for writing, where a slab holds whole rows of chunks, or with `inner` given, rows of
/// inner chunks of a row of shards too large (for a writer that keeps a shard's inner chunks
/// until it is whole).
pub(crate) fn slabs_along(
    metadata: &ArrayMetadata,
    inner: Option<&[u64]>,
    region: &Region,
    axis: usize,
    element_bytes: u64,
    target_bytes: u64,
) -> Result<Vec<Region>> {
    slabs_cut(metadata, inner, region, axis, element_bytes, target_bytes)
}

/// [`slabs`] and [`slabs_along`]: along `axis`, cut on inner chunk boundaries where `inner`
/// is given and a row of (outer) chunks is more than wanted.
fn slabs_cut(
    metadata: &ArrayMetadata,
    inner: Option<&[u64]>,
    region: &Region,
    axis: usize,
    element_bytes: u64,
    target_bytes: u64,
) -> Result<Vec<Region>> {
    if region.rank() == 0 {
        return Ok(vec![region.clone()]);
    }
    if region.is_empty() {
        return Ok(Vec::new());
    }
    let ranges = region.ranges();
    let row_bytes = ranges
        .iter()
        .enumerate()
        .filter(|&(d, _)| d != axis)
        .fold(element_bytes, |n, (_, r)| n.saturating_mul(r.end - r.start))
        .max(1);
    let rows_wanted = (target_bytes / row_bytes).max(1);
    let mut out = Vec::new();
    let mut start = ranges[axis].start;
    let end = ranges[axis].end;
    let mut element = region.starts();
    while start < end {
        // Take whole chunk rows until the slab is big enough; of a row of shards that
        // would make it larger than wanted, only the inner chunk rows needed.
        let mut stop = start;
        while stop < end && stop - start < rows_wanted {
            element[axis] = stop;
            let (chunk, _) = metadata.chunk_grid.chunk_of(&metadata.shape, &element)?;
            let chunk_range = metadata
                .chunk_grid
                .chunk_region(&metadata.shape, &chunk)?
                .ranges()[axis]
                .clone();
            stop = chunk_range.end.min(end);
            if let Some(step) = inner.and_then(|inner| inner.get(axis)).filter(|&&s| s > 0)
                && stop - start > rows_wanted
            {
                // The first inner chunk boundary of this shard at or past the rows wanted
                // (`start + rows_wanted < stop <= chunk_range.end`, so no overflow).
                let wanted = start + rows_wanted - chunk_range.start;
                let boundary = chunk_range
                    .start
                    .saturating_add(wanted.div_ceil(*step).saturating_mul(*step));
                stop = boundary.min(stop);
            }
        }
        let mut slab = ranges.to_vec();
        slab[axis] = start..stop;
        out.push(Region::try_new(slab)?);
        start = stop;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ranges as `(start, end)` pairs, and the result's shape.
    fn sel(text: &str, shape: &[u64]) -> (Vec<(u64, u64)>, Vec<u64>) {
        let s = parse_selection(Some(text), shape).unwrap();
        let ranges = s.region.ranges().iter().map(|r| (r.start, r.end)).collect();
        (ranges, s.out_shape())
    }

    #[test]
    fn numpy_slicing() {
        assert_eq!(
            sel("0:10,:,5", &[20, 3, 8]),
            (vec![(0, 10), (0, 3), (5, 6)], vec![10, 3])
        );
        assert_eq!(sel("-2:", &[5]), (vec![(3, 5)], vec![2]));
        assert_eq!(sel(":-1", &[5]), (vec![(0, 4)], vec![4]));
        assert_eq!(sel("-1", &[5, 2]), (vec![(4, 5), (0, 2)], vec![2]));
        assert_eq!(sel("3:100", &[5]), (vec![(3, 5)], vec![2]));
        assert_eq!(sel("4:2", &[5]), (vec![(4, 4)], vec![0]));
        assert_eq!(sel("1:3:1", &[5]), (vec![(1, 3)], vec![2]));
        assert_eq!(sel("", &[2, 2]), (vec![(0, 2), (0, 2)], vec![2, 2]));
    }

    #[test]
    fn steps_select_every_nth_index_of_the_clipped_range() {
        // numpy: len(range(20)[1:100:3]) == 7, len(range(5)[::2]) == 3.
        assert_eq!(
            sel("1:100:3,::2,4", &[20, 5, 8]),
            (vec![(1, 20), (0, 5), (4, 5)], vec![7, 3])
        );
        assert_eq!(sel("4:2:2", &[5]), (vec![(4, 4)], vec![0]));
        let s = parse_selection(Some("1:100:3,::2"), &[20, 5]).unwrap();
        assert!(s.is_strided());
        assert!(!parse_selection(Some("::1"), &[5]).unwrap().is_strided());
        // A slab of the region starting between two selected indices: 1, 4, 7, ... so
        // rows 8..14 hold 10 and 13.
        let slab = Region::try_new(vec![8..14, 0..5]).unwrap();
        assert_eq!(
            s.strided_in(&slab),
            zarr::array::Selection::new([
                zarr::array::AxisSelection::step(10..14, 3),
                zarr::array::AxisSelection::step(0..5, 2),
            ])
        );
        // Its elements, [10, 0], [10, 2], [10, 4], [13, 0], ..., name their array indices.
        assert_eq!(s.element_in(&slab, 0), [10, 0]);
        assert_eq!(s.element_in(&slab, 2), [10, 4]);
        assert_eq!(s.element_in(&slab, 4), [13, 2]);
        let plain = Selection::whole(slab.clone());
        assert_eq!(plain.element_in(&slab, 6), [9, 1]);
    }

    #[test]
    fn index_lists_select_their_indices() {
        // numpy's orthogonal indexing with increasing lists; negative counts from the end.
        let s = parse_selection(Some("[1, 4,-1],::2"), &[10, 5]).unwrap();
        assert_eq!(s.region.ranges(), [1..10, 0..5]);
        assert_eq!(s.out_shape(), [3, 3]);
        assert!(s.is_strided());
        assert_eq!(s.lists[0], Some(vec![1, 4, 9]));
        // With `...`, and a list of one index (kept as a dimension, as numpy keeps it).
        assert_eq!(sel("...,[2]", &[4, 5]), (vec![(0, 4), (2, 3)], vec![4, 1]));
        // A slab of the region holds the list's indices that lie in it.
        let slab = Region::try_new(vec![3..10, 0..5]).unwrap();
        assert_eq!(
            s.strided_in(&slab),
            zarr::array::Selection::new([
                zarr::array::AxisSelection::indices([4, 9]),
                zarr::array::AxisSelection::step(0..5, 2),
            ])
        );
        assert_eq!(s.counts_in(&slab), [2, 3]);
        assert_eq!(s.element_in(&slab, 0), [4, 0]);
        assert_eq!(s.element_in(&slab, 4), [9, 2]);
        // Where an element lies in the result: list position, step count.
        assert_eq!(s.position_of(&[9, 4]), [2, 2]);
        assert_eq!(s.position_of(&[1, 0]), [0, 0]);
    }

    /// The message of the usage error `text` is for a 5 x 5 array.
    fn message(text: &str) -> String {
        let err = parse_selection(Some(text), &[5, 5]).unwrap_err();
        assert!(
            err.downcast_ref::<crate::Usage>().is_some(),
            "{text}: {err}"
        );
        err.to_string()
    }

    #[test]
    fn bad_index_lists_are_usage_errors_that_say_why() {
        assert!(message("[3,1]").contains("must be increasing"));
        assert!(message("[1,1]").contains("must be increasing"));
        assert!(message("[1,5]").contains("index 5 is out of bounds for dimension 0 of size 5"));
        assert!(message(":,[-6]").contains("index -6 is out of bounds for dimension 1"));
        assert!(message("[]").contains("has an empty entry"));
        assert!(message("[1,,2]").contains("has an empty entry"));
        assert!(message("[1,[2]]").contains("cannot be nested"));
        assert!(message("[1,2").contains("`[` without `]`"));
        assert!(message("1,2]").contains("`]` without `[`"));
        assert!(message("[1:3]").contains("\"1:3\" in \"[1:3]\" (dimension 0) is not an integer"));
        assert!(message("[1]:3").contains("is not an index list"));
        assert!(message("1[2]").contains("is not a selection"));
        assert!(message("[1],[2],[3]").contains("selects 3 dimensions but the array has 2"));
    }

    #[test]
    fn ellipsis_fills_the_dimensions_not_given() {
        let shape = [4, 5, 6];
        assert_eq!(
            sel("...,2", &shape),
            (vec![(0, 4), (0, 5), (2, 3)], vec![4, 5])
        );
        assert_eq!(
            sel("1:3,...", &shape),
            (vec![(1, 3), (0, 5), (0, 6)], vec![2, 5, 6])
        );
        assert_eq!(
            sel("0, ... ,-1", &shape),
            (vec![(0, 1), (0, 5), (5, 6)], vec![5])
        );
        // Standing for no dimension at all, as in numpy.
        assert_eq!(
            sel("1,2,3,...", &shape),
            (vec![(1, 2), (2, 3), (3, 4)], Vec::new())
        );
        assert_eq!(sel("...", &[]), (Vec::new(), Vec::new()));
        assert_eq!(sel("...", &[2]), (vec![(0, 2)], vec![2]));
        let err = parse_selection(Some("...,1,..."), &shape).unwrap_err();
        assert!(err.to_string().contains("at most one"), "{err}");
        let err = parse_selection(Some("1,...,2,3,4"), &shape).unwrap_err();
        assert_eq!(
            err.to_string(),
            "region \"1,...,2,3,4\" selects 4 dimensions but the array has 3"
        );
    }

    #[test]
    fn errors_say_what_a_region_is_and_quote_the_bad_part() {
        let err = message("0:3;0:3");
        assert!(
            err.starts_with(
                "region \"0:3;0:3\": \"0:3;0:3\" is not a selection (dimensions are separated \
                 by commas); expected comma-separated selections, one per dimension, each \
                 `start:stop`"
            ),
            "{err}"
        );
        assert!(!err.contains("has a step"), "{err}");
        let err = message("1,x:2");
        assert!(
            err.contains("\"x:2\" is not a selection; expected"),
            "{err}"
        );
        let err = message("0..3");
        assert!(
            err.contains("\"0..3\" is not a selection (`...` must stand"),
            "{err}"
        );
        let err = message("1,,2");
        assert!(err.contains("has an empty selection; expected"), "{err}");
        let err = message("0:4:-2");
        assert!(
            err.contains("\"0:4:-2\" (dimension 0) has a step of -2; steps must be positive"),
            "{err}"
        );
        assert!(message("::0").contains("has a step of 0"));
        let err = message(":,1:2:3:4");
        assert!(
            err.contains("\"1:2:3:4\" (dimension 1) has 3 colons"),
            "{err}"
        );
        let err = message("1 0");
        assert!(err.contains("\"1 0\" is not an integer"), "{err}");
        let err = message("1,7");
        assert!(
            err.contains("index 7 is out of bounds for dimension 1 of size 5"),
            "{err}"
        );
    }

    #[test]
    fn bad_regions_are_usage_errors() {
        for (text, shape) in [
            ("5", &[5u64][..]),
            ("-6", &[5]),
            ("1,2", &[5]),
            ("a:b", &[5]),
            ("0:4:-2", &[5]),
            ("1:2:3:4", &[5]),
            ("0:3;0:3", &[5, 5]),
            ("...,...", &[5, 5]),
            ("....", &[5]),
        ] {
            let err = parse_selection(Some(text), shape).unwrap_err();
            assert!(
                err.downcast_ref::<crate::Usage>().is_some(),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn elements_of_a_region_are_named_by_their_array_index() {
        let region = Region::try_new(vec![2..4, 10..13]).unwrap();
        assert_eq!(element_index(&region, 0), [2, 10]);
        assert_eq!(element_index(&region, 4), [3, 11]);
        assert_eq!(element_text(&element_index(&region, 5)), "element [3, 12]");
        let scalar = Region::try_new(vec![]).unwrap();
        assert_eq!(element_text(&element_index(&scalar, 0)), "the element");
    }

    #[test]
    fn shapes() {
        assert_eq!(parse_shape("10, 20", "--shape", 0).unwrap(), vec![10, 20]);
        assert_eq!(parse_shape("", "--shape", 0).unwrap(), Vec::<u64>::new());
        assert!(parse_shape("0,1", "--chunks", 1).is_err());
        assert!(parse_shape("x", "--chunks", 1).is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("512K"), Ok(512 << 10));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert!(parse_size("0").is_err());
        assert!(parse_size("12Q").is_err());
    }

    #[test]
    fn slabs_follow_chunk_rows() {
        let metadata = zarr::array::ArrayBuilder::new(
            vec![10, 4],
            zarr::metadata::DataType::UInt8,
            vec![3, 2],
        )
        .build_metadata()
        .unwrap();
        let region = Region::try_new(vec![1..10, 0..4]).unwrap();
        // One row is 4 bytes: 4 bytes wanted gives one chunk row per slab.
        let got: Vec<_> = slabs(&metadata, None, &region, 1, 4)
            .unwrap()
            .iter()
            .map(|r| r.ranges()[0].clone())
            .collect();
        assert_eq!(got, vec![1..3, 3..6, 6..9, 9..10]);
        // 20 bytes wanted (5 rows): whole chunk rows until at least 5 rows.
        let got: Vec<_> = slabs(&metadata, None, &region, 1, 20)
            .unwrap()
            .iter()
            .map(|r| r.ranges()[0].clone())
            .collect();
        assert_eq!(got, vec![1..6, 6..10]);
    }

    #[test]
    fn rows_of_shards_larger_than_wanted_are_cut_on_inner_chunks() {
        // Shards of 8 rows (inner chunks of 3 rows: 0..3, 3..6, 6..8 in each shard).
        let metadata = zarr::array::ArrayBuilder::new(
            vec![20, 4],
            zarr::metadata::DataType::UInt8,
            vec![8, 4],
        )
        .build_metadata()
        .unwrap();
        let inner = [3, 2];
        let cut = |region: Range<u64>, bytes: u64, inner: Option<&[u64]>| -> Vec<Range<u64>> {
            let region = Region::try_new(vec![region, 0..4]).unwrap();
            slabs(&metadata, inner, &region, 1, bytes)
                .unwrap()
                .iter()
                .map(|r| r.ranges()[0].clone())
                .collect()
        };
        // One row (4 bytes) wanted: one inner chunk row per slab, the edge ones clipped.
        assert_eq!(
            cut(1..20, 4, Some(&inner)),
            vec![1..3, 3..6, 6..8, 8..11, 11..14, 14..16, 16..19, 19..20]
        );
        // Without inner chunks, whole shard rows.
        assert_eq!(cut(1..20, 4, None), vec![1..8, 8..16, 16..20]);
        // 4 rows wanted: up to the first inner boundary at or past them.
        assert_eq!(
            cut(0..20, 16, Some(&inner)),
            vec![0..6, 6..11, 11..16, 16..20]
        );
        // 10 rows wanted: a shard row that fits is taken whole, and the next one is cut at
        // its first inner boundary at or past row 12.
        assert_eq!(cut(2..20, 40, Some(&inner)), vec![2..14, 14..20]);
    }

    #[test]
    fn slabs_along_the_last_dimension() {
        let metadata = zarr::array::ArrayBuilder::new(
            vec![4, 10],
            zarr::metadata::DataType::UInt8,
            vec![2, 3],
        )
        .build_metadata()
        .unwrap();
        let region = Region::try_new(vec![0..4, 1..10]).unwrap();
        // A column is 4 bytes: 8 bytes wanted gives whole chunk columns of at least 2.
        let got: Vec<_> = slabs_along(&metadata, None, &region, 1, 1, 8)
            .unwrap()
            .iter()
            .map(|r| (r.ranges()[0].clone(), r.ranges()[1].clone()))
            .collect();
        assert_eq!(
            got,
            vec![(0..4, 1..3), (0..4, 3..6), (0..4, 6..9), (0..4, 9..10)]
        );
    }
}
