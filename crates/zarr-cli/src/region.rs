//! numpy-like region syntax (`0:10,:,5`), shapes (`100,200`) and chunk-aligned slabs.

use std::ops::Range;

use anyhow::Result;
use zarr::array::Region;
use zarr::metadata::ArrayMetadata;

use crate::usage;

/// A parsed region: the ranges, and which dimensions were given as a single index (numpy
/// drops those from the result's shape).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Selection {
    pub(crate) region: Region,
    pub(crate) squeezed: Vec<bool>,
}

impl Selection {
    /// The shape of the result: the region's shape without the single-index dimensions.
    pub(crate) fn out_shape(&self) -> Vec<u64> {
        self.region
            .shape()
            .into_iter()
            .zip(&self.squeezed)
            .filter(|(_, squeezed)| !**squeezed)
            .map(|(n, _)| n)
            .collect()
    }
}

/// Parse `text` (or the whole array when `None`) against `shape`.
///
/// Each comma-separated entry is `a:b`, `a:`, `:b`, `:` or a single index `i`; negative
/// numbers count from the end; slice bounds are clipped to the array as numpy does, a single
/// index must lie inside it; missing trailing entries mean `:`.
pub(crate) fn parse_selection(text: Option<&str>, shape: &[u64]) -> Result<Selection> {
    let entries: Vec<&str> = match text.map(str::trim) {
        None | Some("") => Vec::new(),
        Some(text) => text.split(',').map(str::trim).collect(),
    };
    if entries.len() > shape.len() {
        usage!(
            "region {:?} has {} entries but the array has {} dimensions",
            text.unwrap_or_default(),
            entries.len(),
            shape.len()
        );
    }
    let mut ranges = Vec::with_capacity(shape.len());
    let mut squeezed = Vec::with_capacity(shape.len());
    for (dim, &n) in shape.iter().enumerate() {
        let entry = entries.get(dim).copied().unwrap_or(":");
        let (range, single) = parse_entry(entry, n, dim)?;
        ranges.push(range);
        squeezed.push(single);
    }
    let region = Region::try_new(ranges)?;
    Ok(Selection { region, squeezed })
}

fn parse_entry(entry: &str, n: u64, dim: usize) -> Result<(Range<u64>, bool)> {
    let number = |s: &str| -> Result<Option<i128>> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(None);
        }
        match s.parse::<i128>() {
            Ok(v) => Ok(Some(v)),
            Err(_) => usage!("region entry {entry:?} (dimension {dim}): {s:?} is not an integer"),
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
                usage!("region entry for dimension {dim} is empty");
            };
            let resolved = if i < 0 { i + n_i } else { i };
            if !(0..n_i).contains(&resolved) {
                usage!("index {i} is out of bounds for dimension {dim} of size {n}");
            }
            let i = u64::try_from(resolved).unwrap_or_default();
            Ok((i..i + 1, true))
        }
        [start, stop] | [start, stop, ""] => {
            let start = number(start)?.map_or(0, clip);
            let stop = number(stop)?.map_or(n, clip);
            Ok((start..stop.max(start), false))
        }
        [start, stop, step] => {
            if number(step)? == Some(1) {
                let start = number(start)?.map_or(0, clip);
                let stop = number(stop)?.map_or(n, clip);
                return Ok((start..stop.max(start), false));
            }
            usage!("region entry {entry:?}: steps other than 1 are not supported")
        }
        _ => usage!("region entry {entry:?} is not `a:b`, `:` or an index"),
    }
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

/// Split `region` along its first dimension into slabs that start and end on chunk
/// boundaries of the array (where the region allows), each holding about `target_bytes`
/// (at least one chunk row), given `element_bytes` per element.
pub(crate) fn slabs(
    metadata: &ArrayMetadata,
    region: &Region,
    element_bytes: u64,
    target_bytes: u64,
) -> Result<Vec<Region>> {
    slabs_along(metadata, region, 0, element_bytes, target_bytes)
}

/// As [`slabs`], split along dimension `axis` (`< region.rank()` unless the region is 0-d).
pub(crate) fn slabs_along(
    metadata: &ArrayMetadata,
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
        .map(|(_, r)| r.end - r.start)
        .product::<u64>()
        .saturating_mul(element_bytes)
        .max(1);
    let rows_wanted = (target_bytes / row_bytes).max(1);
    let mut out = Vec::new();
    let mut start = ranges[axis].start;
    let end = ranges[axis].end;
    let mut element = region.starts();
    while start < end {
        // Take whole chunk rows until the slab is big enough.
        let mut stop = start;
        while stop < end && stop - start < rows_wanted {
            element[axis] = stop;
            let (chunk, _) = metadata.chunk_grid.chunk_of(&metadata.shape, &element)?;
            let chunk_end = metadata
                .chunk_grid
                .chunk_region(&metadata.shape, &chunk)?
                .ranges()[axis]
                .end;
            stop = chunk_end.min(end);
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
    fn bad_regions_are_usage_errors() {
        for (text, shape) in [
            ("5", &[5u64][..]),
            ("-6", &[5]),
            ("1,2", &[5]),
            ("a:b", &[5]),
            ("0:4:2", &[5]),
            ("1:2:3:4", &[5]),
        ] {
            let err = parse_selection(Some(text), shape).unwrap_err();
            assert!(
                err.downcast_ref::<crate::Usage>().is_some(),
                "{text}: {err}"
            );
        }
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
        let got: Vec<_> = slabs(&metadata, &region, 1, 4)
            .unwrap()
            .iter()
            .map(|r| r.ranges()[0].clone())
            .collect();
        assert_eq!(got, vec![1..3, 3..6, 6..9, 9..10]);
        // 20 bytes wanted (5 rows): whole chunk rows until at least 5 rows.
        let got: Vec<_> = slabs(&metadata, &region, 1, 20)
            .unwrap()
            .iter()
            .map(|r| r.ranges()[0].clone())
            .collect();
        assert_eq!(got, vec![1..6, 6..10]);
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
        let got: Vec<_> = slabs_along(&metadata, &region, 1, 1, 8)
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
