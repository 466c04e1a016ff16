//! Helpers the codecs share: configuration keys, data type checks, element runs of a region,
//! and byte ranges.

use std::ops::Range;

use zarr_codecs::{
    ArrayBytes, ChunkRepresentation, Error as CodecError, Result as CodecResult, VlenBytes,
};

use crate::utf8::check_utf8;
use zarr_core::{DataType, ExtensionObject, Region};

/// Refuse configuration keys other than `allowed` (a missing configuration is fine).
pub(crate) fn check_keys(metadata: &ExtensionObject, allowed: &[&str]) -> CodecResult<()> {
    if let Some(config) = &metadata.configuration
        && let Some(key) = config.keys().find(|k| !allowed.contains(&k.as_str()))
    {
        let expected = if allowed.is_empty() {
            "an empty configuration".to_owned()
        } else {
            allowed
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(CodecError::InvalidConfiguration {
            codec: metadata.name.clone(),
            reason: format!("unknown key `{key}` (expected {expected})"),
        });
    }
    Ok(())
}

/// Check that the chunk's data type is one of `allowed`.
pub(crate) fn check_data_type(
    codec: &str,
    repr: &ChunkRepresentation,
    allowed: &[DataType],
) -> CodecResult<()> {
    if allowed.contains(repr.data_type()) {
        return Ok(());
    }
    let names: Vec<String> = allowed.iter().map(|d| format!("`{d}`")).collect();
    Err(CodecError::IncompatibleRepresentation {
        codec: codec.to_owned(),
        reason: format!(
            "it encodes data type {} only, not {}",
            names.join(" and "),
            repr.data_type()
        ),
    })
}

/// The element count of a chunk as a `usize`.
pub(crate) fn num_elements(codec: &str, num_elements: u64) -> CodecResult<usize> {
    usize::try_from(num_elements).map_err(|_| CodecError::IncompatibleRepresentation {
        codec: codec.to_owned(),
        reason: format!("{num_elements} elements do not fit in memory on this platform"),
    })
}

/// Call `f(first, count)` for each run of consecutive elements (flat C-order indices) of
/// `region` in a chunk of `shape`, in order.
pub(crate) fn for_each_run(
    shape: &[u64],
    region: &Region,
    mut f: impl FnMut(u64, u64) -> CodecResult<()>,
) -> CodecResult<()> {
    let ranges = region.ranges();
    if ranges.len() != shape.len() {
        return Err(CodecError::InvalidRegion {
            reason: format!(
                "region {region} has {} dimensions, the chunk has {}",
                ranges.len(),
                shape.len()
            ),
        });
    }
    if let Some(d) = (0..shape.len()).find(|&d| ranges[d].end > shape[d]) {
        return Err(CodecError::InvalidRegion {
            reason: format!(
                "region {region} lies outside the chunk of shape {shape:?} (dimension {d})"
            ),
        });
    }
    if ranges.iter().any(|r| r.start >= r.end) {
        return Ok(());
    }
    let rank = shape.len();
    if rank == 0 {
        return f(0, 1);
    }
    // Strides of the chunk in elements (cannot overflow: the element count fits u64).
    let mut strides = vec![1u64; rank];
    for d in (0..rank - 1).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    // The dimension `k` where runs break: every dimension after it is covered whole.
    let mut k = rank - 1;
    while k > 0 && ranges[k] == (0..shape[k]) {
        k -= 1;
    }
    let run = (ranges[k].end - ranges[k].start) * strides[k];
    // Iterate over the outer dimensions 0..k of the region.
    let mut index: Vec<u64> = ranges[..k].iter().map(|r| r.start).collect();
    loop {
        let start = index.iter().zip(&strides).map(|(i, s)| i * s).sum::<u64>()
            + ranges[k].start * strides[k];
        f(start, run)?;
        let mut d = k;
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            index[d] += 1;
            if index[d] < ranges[d].end {
                break;
            }
            index[d] = ranges[d].start;
        }
    }
}

/// `start..start + len` as a `usize` range, if it fits.
pub(crate) fn usize_range(start: u64, len: u64) -> Option<Range<usize>> {
    let s = usize::try_from(start).ok()?;
    let e = usize::try_from(start.checked_add(len)?).ok()?;
    Some(s..e)
}

/// The variable-length elements of a chunk handed to `codec` to encode, checked against
/// `decoded` (element count, offsets) and, for `string` data, as UTF-8.
pub(crate) fn variable_input<'a>(
    codec: &str,
    array: &'a ArrayBytes,
    decoded: &ChunkRepresentation,
) -> CodecResult<&'a VlenBytes> {
    array.validate(decoded).map_err(|e| match e {
        CodecError::UnexpectedArray {
            expected, found, ..
        } => CodecError::UnexpectedArray {
            codec: codec.to_owned(),
            expected,
            found,
        },
        other => other,
    })?;
    let Some(v) = array.as_variable() else {
        // `validate` refuses fixed-size bytes for string and bytes data.
        return Err(CodecError::UnexpectedArray {
            codec: codec.to_owned(),
            expected: "variable-length elements".into(),
            found: "fixed-size elements".into(),
        });
    };
    if *decoded.data_type() == DataType::String {
        check_utf8(v.values(), v.offsets(), |o| o as usize).map_err(|e| e.into_codec(codec))?;
    }
    Ok(v)
}

/// [`CodecError::Corrupt`] from `codec`.
pub(crate) fn corrupt(codec: &str, reason: String) -> CodecError {
    CodecError::Corrupt {
        codec: codec.to_owned(),
        reason,
    }
}

/// [`CodecError::Truncated`] from `codec`.
pub(crate) fn truncated(codec: &str, reason: String) -> CodecError {
    CodecError::Truncated {
        codec: codec.to_owned(),
        reason,
    }
}

#[cfg(test)]
// A region of a 1-D chunk is a `Vec` holding one range, which is what this lint dislikes.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    fn runs(shape: &[u64], region: Vec<Range<u64>>) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let region = Region::try_new(region).unwrap();
        for_each_run(shape, &region, |s, n| {
            out.push((s, n));
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn runs_cover_the_region_in_c_order() {
        assert_eq!(runs(&[10], vec![2..5]), [(2, 3)]);
        assert_eq!(runs(&[3, 4], vec![0..3, 0..4]), [(0, 12)]);
        assert_eq!(runs(&[3, 4], vec![1..3, 0..4]), [(4, 8)]);
        assert_eq!(runs(&[3, 4], vec![0..2, 1..3]), [(1, 2), (5, 2)]);
        assert_eq!(runs(&[2, 3, 4], vec![0..2, 1..3, 0..4]), [(4, 8), (16, 8)]);
        assert_eq!(runs(&[2, 3], vec![0..2, 1..1]), []);
        assert_eq!(runs(&[], vec![]), [(0, 1)]);
        let outside = Region::try_new(vec![0..5]).unwrap();
        assert!(for_each_run(&[4], &outside, |_, _| Ok(())).is_err());
        let wrong_rank = Region::try_new(vec![0..1, 0..1]).unwrap();
        assert!(for_each_run(&[4], &wrong_rank, |_, _| Ok(())).is_err());
    }
}
