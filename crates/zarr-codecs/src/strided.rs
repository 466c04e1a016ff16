//! Regions of C-order buffers: contiguous runs, copies in and out.

use zarr_core::Region;

use crate::error::{Error, Result};
use crate::representation::ChunkRepresentation;

/// Check that `region` lies inside a chunk of `repr` and return the region's element count.
pub(crate) fn check_region(repr: &ChunkRepresentation, region: &Region) -> Result<usize> {
    if region.rank() != repr.rank() {
        return Err(Error::InvalidRegion {
            reason: format!(
                "region {region:?} has {} dimensions, the chunk {}",
                region.rank(),
                repr.rank()
            ),
        });
    }
    for (range, &extent) in region.ranges().iter().zip(repr.shape()) {
        if range.end > extent {
            return Err(Error::InvalidRegion {
                reason: format!(
                    "region {:?} lies outside the chunk of shape {:?}",
                    region.ranges(),
                    repr.shape()
                ),
            });
        }
    }
    let n = region.num_elements()?;
    usize::try_from(n).map_err(|_| Error::InvalidRegion {
        reason: format!("{n} elements do not fit in memory"),
    })
}

/// Call `f(source_offset, length)` (in bytes) for each contiguous run of `region` in a C-order
/// buffer of `shape` with `elem`-byte elements, in the region's C order. The runs' lengths add
/// up to the region's byte size, so a destination offset is the running sum. The region must
/// have been checked with [`check_region`] against a chunk that fits in memory.
pub(crate) fn for_each_run(
    shape: &[u64],
    region: &Region,
    elem: usize,
    mut f: impl FnMut(usize, usize) -> Result<()>,
) -> Result<()> {
    let ranges = region.ranges();
    let rank = shape.len();
    if ranges.iter().any(|r| r.start == r.end) {
        return Ok(());
    }
    // Strides in bytes.
    let mut strides = vec![elem; rank];
    for i in (0..rank.saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1] as usize;
    }
    // The run dimension: the outermost dimension after which every dimension is whole.
    let mut k = rank;
    while k > 0 && ranges[k - 1].start == 0 && ranges[k - 1].end == shape[k - 1] {
        k -= 1;
    }
    if k == 0 {
        // The whole chunk (or a 0-d chunk).
        let total = shape.iter().map(|&s| s as usize).product::<usize>() * elem;
        return f(0, total);
    }
    let run_dim = k - 1;
    let run_len = (ranges[run_dim].end - ranges[run_dim].start) as usize * strides[run_dim];
    let base: usize = ranges
        .iter()
        .zip(&strides)
        .map(|(r, s)| r.start as usize * s)
        .sum();
    // Odometer over the dimensions before the run dimension.
    let outer = &ranges[..run_dim];
    let mut index: Vec<u64> = outer.iter().map(|r| r.start).collect();
    let mut offset = base;
    loop {
        f(offset, run_len)?;
        let mut d = run_dim;
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            index[d] += 1;
            offset += strides[d];
            if index[d] < outer[d].end {
                break;
            }
            offset -= (index[d] - outer[d].start) as usize * strides[d];
            index[d] = outer[d].start;
        }
    }
}

/// Copy `region` out of a whole decoded chunk into `out` (C order of the region).
pub(crate) fn extract_region(
    chunk: &[u8],
    repr: &ChunkRepresentation,
    region: &Region,
    out: &mut [u8],
) -> Result<()> {
    let elem = repr
        .element_size()
        .ok_or_else(|| Error::unsupported("chain", "partial decoding of variable-length data"))?;
    let n = check_region(repr, region)?;
    if out.len() != n * elem {
        return Err(Error::output_size(n * elem, out.len()));
    }
    if chunk.len() as u64 != repr.fixed_size().unwrap_or(0) {
        return Err(Error::output_size(chunk.len(), out.len()));
    }
    let mut written = 0;
    for_each_run(repr.shape(), region, elem, |offset, len| {
        out[written..written + len].copy_from_slice(&chunk[offset..offset + len]);
        written += len;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use zarr_core::{DataType, FillValue};

    fn runs(shape: &[u64], region: Vec<std::ops::Range<u64>>) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for_each_run(shape, &Region::try_new(region).unwrap(), 1, |o, l| {
            out.push((o, l));
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn runs_merge_whole_trailing_dimensions() {
        assert_eq!(runs(&[4, 5], vec![0..4, 0..5]), vec![(0, 20)]);
        assert_eq!(runs(&[4, 5], vec![1..3, 0..5]), vec![(5, 10)]);
        assert_eq!(runs(&[4, 5], vec![1..3, 2..4]), vec![(7, 2), (12, 2)]);
        assert_eq!(
            runs(&[2, 3, 4], vec![0..2, 1..3, 0..4]),
            vec![(4, 8), (16, 8)]
        );
        assert_eq!(runs(&[], vec![]), vec![(0, 1)]);
        let empty: Vec<std::ops::Range<u64>> = std::iter::once(1..1).collect();
        assert_eq!(runs(&[3], empty), vec![]);
    }

    #[test]
    fn extract() {
        let repr =
            ChunkRepresentation::try_new(vec![3, 3], DataType::UInt8, FillValue::new([0])).unwrap();
        let chunk: Vec<u8> = (0..9).collect();
        let mut out = [0u8; 4];
        extract_region(
            &chunk,
            &repr,
            &Region::try_new(vec![1..3, 0..2]).unwrap(),
            &mut out,
        )
        .unwrap();
        assert_eq!(out, [3, 4, 6, 7]);
        let e = extract_region(
            &chunk,
            &repr,
            &Region::try_new(vec![1..4, 0..2]).unwrap(),
            &mut out,
        )
        .unwrap_err();
        assert!(matches!(e, Error::InvalidRegion { .. }));
    }
}
