//! Copying rectangular blocks between C-order arrays of fixed-size or variable-length
//! elements: cutting inner chunks out of a shard and patching them.

use zarr_codecs::{ArrayBytes, VlenBytes};

/// Call `f(src_offset, dst_offset, len)` (in bytes) for every run that is contiguous in both
/// arrays when copying the block of `extent` at `src_start` of a C-order `src_shape` array to
/// `dst_start` of a `dst_shape` array (see [`zarr_codecs::for_each_block_run`]). The caller
/// guarantees the blocks lie in their arrays and that the arrays fit in memory.
pub(crate) fn for_each_run(
    src_shape: &[u64],
    src_start: &[u64],
    dst_shape: &[u64],
    dst_start: &[u64],
    extent: &[u64],
    elem: usize,
    f: impl FnMut(usize, usize, usize),
) {
    zarr_codecs::for_each_block_run(src_shape, src_start, dst_shape, dst_start, extent, elem, f);
}

pub(crate) use zarr_codecs::copy_block;

/// Call `f(src_element, dst_element)` for every element of the block, in C order.
fn for_each_element(
    src_shape: &[u64],
    src_start: &[u64],
    dst_shape: &[u64],
    dst_start: &[u64],
    extent: &[u64],
    mut f: impl FnMut(usize, usize),
) {
    for_each_run(
        src_shape,
        src_start,
        dst_shape,
        dst_start,
        extent,
        1,
        |s, d, n| {
            for k in 0..n {
                f(s + k, d + k);
            }
        },
    );
}

/// The block of `extent` at `start` of `array` (a C-order array of `shape`) as a C-order
/// array of its own. `elem` is the element size (`None` for variable-length data).
pub(crate) fn extract(
    array: &ArrayBytes,
    shape: &[u64],
    start: &[u64],
    extent: &[u64],
    elem: Option<usize>,
) -> ArrayBytes {
    let zeros = vec![0u64; extent.len()];
    match (array, elem) {
        (ArrayBytes::Fixed(bytes), Some(elem)) => {
            if start.iter().all(|&s| s == 0) && extent == shape {
                return ArrayBytes::Fixed(bytes.clone());
            }
            let n = extent.iter().map(|&e| e as usize).product::<usize>() * elem;
            let mut out = vec![0u8; n];
            copy_block(bytes, shape, start, &mut out, extent, &zeros, extent, elem);
            ArrayBytes::fixed(out)
        }
        (ArrayBytes::Variable(v), _) => {
            let n = extent.iter().map(|&e| e as usize).product::<usize>();
            let mut slots: Vec<&[u8]> = vec![&[]; n];
            for_each_element(shape, start, extent, &zeros, extent, |s, d| {
                slots[d] = v.get(s).unwrap_or_default();
            });
            ArrayBytes::Variable(VlenBytes::from_elements(slots))
        }
        // A fixed array without an element size cannot be cut; callers check kinds first.
        (ArrayBytes::Fixed(bytes), None) => ArrayBytes::Fixed(bytes.clone()),
    }
}

/// Write the block of `extent` at `src_start` of `src` (shape `src_shape`) into `base` (shape
/// `base_shape`) at `base_start`. Both arrays must be of the same kind.
#[allow(clippy::too_many_arguments)]
pub(crate) fn patch(
    base: ArrayBytes,
    base_shape: &[u64],
    base_start: &[u64],
    src: &ArrayBytes,
    src_shape: &[u64],
    src_start: &[u64],
    extent: &[u64],
    elem: Option<usize>,
) -> ArrayBytes {
    match (base, src, elem) {
        (ArrayBytes::Fixed(base), ArrayBytes::Fixed(src), Some(elem)) => {
            let mut out = base.to_vec();
            copy_block(
                src, src_shape, src_start, &mut out, base_shape, base_start, extent, elem,
            );
            ArrayBytes::fixed(out)
        }
        (ArrayBytes::Variable(base), ArrayBytes::Variable(src), _) => {
            let mut slots: Vec<&[u8]> = base.iter().collect();
            for_each_element(
                src_shape,
                src_start,
                base_shape,
                base_start,
                extent,
                |s, d| {
                    if let Some(slot) = slots.get_mut(d) {
                        *slot = src.get(s).unwrap_or_default();
                    }
                },
            );
            ArrayBytes::Variable(VlenBytes::from_elements(slots))
        }
        (base, _, _) => base,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Element-by-element model of a block copy.
    fn naive(
        src: &[u8],
        src_shape: &[u64],
        src_start: &[u64],
        dst: &mut [u8],
        dst_shape: &[u64],
        dst_start: &[u64],
        extent: &[u64],
    ) {
        let n: u64 = extent.iter().product();
        for flat in 0..n {
            let mut rest = flat;
            let mut idx = vec![0u64; extent.len()];
            for d in (0..extent.len()).rev() {
                idx[d] = rest % extent[d];
                rest /= extent[d];
            }
            let off = |shape: &[u64], start: &[u64]| {
                (0..shape.len()).fold(0u64, |o, d| o * shape[d] + start[d] + idx[d]) as usize
            };
            dst[off(dst_shape, dst_start)] = src[off(src_shape, src_start)];
        }
    }

    #[test]
    fn blocks_copy_like_the_model() {
        let src: Vec<u8> = (0..120).collect();
        type Case<'a> = (&'a [u64], &'a [u64], &'a [u64], &'a [u64], &'a [u64]);
        let cases: [Case<'_>; 5] = [
            (&[4, 5, 6], &[0, 0, 0], &[4, 5, 6], &[0, 0, 0], &[4, 5, 6]),
            (&[4, 5, 6], &[1, 0, 0], &[6, 5, 6], &[3, 0, 0], &[2, 5, 6]),
            (&[4, 5, 6], &[1, 2, 3], &[3, 3, 3], &[0, 1, 0], &[2, 2, 3]),
            (&[4, 5, 6], &[0, 4, 0], &[2, 1, 6], &[0, 0, 0], &[2, 1, 6]),
            (&[120], &[7], &[20], &[3], &[17]),
        ];
        for (ss, sst, ds, dst, ext) in cases {
            let len: u64 = ds.iter().product();
            let mut expected = vec![0u8; len as usize];
            naive(&src, ss, sst, &mut expected, ds, dst, ext);
            let mut out = vec![0u8; len as usize];
            copy_block(&src, ss, sst, &mut out, ds, dst, ext, 1);
            assert_eq!(out, expected, "{ss:?} {sst:?} -> {ds:?} {dst:?} {ext:?}");
        }
        // Zero-dimensional arrays hold one element.
        let mut out = [0u8; 2];
        copy_block(&[7, 8], &[], &[], &mut out, &[], &[], &[], 2);
        assert_eq!(out, [7, 8]);
    }

    #[test]
    fn variable_blocks() {
        let v = VlenBytes::from_elements(["a", "bb", "", "ccc", "d", "ee"].map(str::as_bytes));
        let array = ArrayBytes::Variable(v);
        let block = extract(&array, &[2, 3], &[0, 1], &[2, 2], None);
        let expected = VlenBytes::from_elements(["bb", "", "d", "ee"].map(str::as_bytes));
        assert_eq!(block, ArrayBytes::Variable(expected));
        let patch_src = ArrayBytes::Variable(VlenBytes::from_elements([&b"X"[..]]));
        let patched = patch(
            array,
            &[2, 3],
            &[1, 0],
            &patch_src,
            &[1, 1],
            &[0, 0],
            &[1, 1],
            None,
        );
        let expected = VlenBytes::from_elements(["a", "bb", "", "X", "d", "ee"].map(str::as_bytes));
        assert_eq!(patched, ArrayBytes::Variable(expected));
    }
}
