//! The `transpose` codec: permute the dimensions of a chunk.

use bytes::Bytes;
use serde_json::Value;
use zarr_core::ExtensionObject;

use crate::array_bytes::{ArrayBytes, VlenBytes};
use crate::codec::ArrayToArrayCodec;
use crate::config::{self, Config};
use crate::error::{Error, Result};
use crate::representation::ChunkRepresentation;

/// The `transpose` codec (array->array): permutes the dimensions of a chunk.
///
/// Configuration: `order`, a permutation of `0..rank`. The encoded array's dimension `i` is
/// the decoded array's dimension `order[i]`, so its shape is
/// `[decoded_shape[order[0]], decoded_shape[order[1]], ...]`. The strings `"C"` and `"F"` of
/// early drafts are refused.
///
/// Works on fixed-size and variable-length elements. Dimensions of extent 1 and runs of
/// dimensions that stay together are merged first, so every permutation becomes a plain copy,
/// a copy of whole rows, or a cache-blocked 2-D transpose (repeated over the remaining
/// dimensions).
///
/// ```
/// use zarr_codecs::{ArrayBytes, ArrayToArrayCodec, ChunkRepresentation, TransposeCodec};
/// use zarr_core::{DataType, FillValue};
///
/// let repr = ChunkRepresentation::try_new(vec![2, 3], DataType::UInt8, FillValue::new([0]))?;
/// let transpose = TransposeCodec::try_new(vec![1, 0])?;
/// assert_eq!(transpose.encoded_representation(&repr)?.shape(), &[3, 2]);
/// let encoded = transpose.encode(ArrayBytes::fixed(vec![0, 1, 2, 3, 4, 5]), &repr)?;
/// assert_eq!(encoded, ArrayBytes::fixed(vec![0, 3, 1, 4, 2, 5]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TransposeCodec {
    order: Vec<usize>,
    inverse: Vec<usize>,
}

impl TransposeCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "transpose";

    /// A transpose with the given order.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] if `order` is not a permutation of `0..order.len()`.
    pub fn try_new(order: Vec<usize>) -> Result<Self> {
        let mut inverse = vec![usize::MAX; order.len()];
        for (i, &d) in order.iter().enumerate() {
            if d >= order.len() || inverse[d] != usize::MAX {
                return Err(Error::config(
                    Self::NAME,
                    format!(
                        "`order` {order:?} is not a permutation of 0..{}",
                        order.len()
                    ),
                ));
            }
            inverse[d] = i;
        }
        Ok(Self { order, inverse })
    }

    /// The permutation.
    pub fn order(&self) -> &[usize] {
        &self.order
    }

    /// Parse `{"name": "transpose", "configuration": {"order": [...]}}`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] if `order` is missing, is `"C"`/`"F"`, or is not a
    /// permutation.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(metadata, &["order"])?;
        let value = config.required("order")?;
        let order = match value {
            Value::Array(items) => items
                .iter()
                .map(|v| {
                    v.as_u64()
                        .and_then(|d| usize::try_from(d).ok())
                        .ok_or_else(|| config.error("order", "a list of dimension indices", value))
                })
                .collect::<Result<Vec<_>>>()?,
            Value::String(s) if s == "C" || s == "F" => {
                return Err(Error::config(
                    Self::NAME,
                    format!("`order` \"{s}\" is no longer allowed; give an explicit permutation"),
                ));
            }
            other => return Err(config.error("order", "a list of dimension indices", other)),
        };
        Self::try_new(order)
    }

    fn check_rank(&self, repr: &ChunkRepresentation) -> Result<()> {
        if repr.rank() != self.order.len() {
            return Err(Error::incompatible(
                Self::NAME,
                format!(
                    "`order` {:?} has {} entries but the chunk has {} dimensions",
                    self.order,
                    self.order.len(),
                    repr.rank()
                ),
            ));
        }
        Ok(())
    }

    fn is_identity(&self) -> bool {
        self.order.iter().enumerate().all(|(i, &d)| i == d)
    }

    /// Permute `array` of shape `shape` by `perm` (output dimension `i` = input dimension
    /// `perm[i]`).
    fn apply(
        &self,
        array: ArrayBytes,
        shape: &[u64],
        perm: &[usize],
        repr: &ChunkRepresentation,
    ) -> Result<ArrayBytes> {
        if self.is_identity() {
            return Ok(array);
        }
        let shape = usize_shape(shape)?;
        match array {
            ArrayBytes::Fixed(bytes) => {
                let elem = repr.element_size().unwrap_or(1);
                let mut out = vec![0u8; bytes.len()];
                permute(&bytes, &shape, perm, elem, &mut out);
                Ok(ArrayBytes::Fixed(out.into()))
            }
            ArrayBytes::Variable(v) => Ok(ArrayBytes::Variable(permute_vlen(&v, &shape, perm)?)),
        }
    }
}

impl ArrayToArrayCodec for TransposeCodec {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::with_configuration(
            Self::NAME,
            config::map([("order", Value::from(self.order.clone()))]),
        )
    }

    fn encoded_representation(&self, decoded: &ChunkRepresentation) -> Result<ChunkRepresentation> {
        self.check_rank(decoded)?;
        let shape = self.order.iter().map(|&d| decoded.shape()[d]).collect();
        decoded.with_shape(shape)
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        self.check_rank(decoded)?;
        array.validate_for(Self::NAME, decoded)?;
        self.apply(array, decoded.shape(), &self.order, decoded)
    }

    fn decoded_position(&self, index: u64, decoded: &ChunkRepresentation) -> Option<u64> {
        let shape = decoded.shape();
        if shape.len() != self.order.len() {
            return None;
        }
        // Encoded axis i is decoded axis order[i]: unravel over the encoded shape, place
        // each coordinate on its decoded axis, then ravel over the decoded shape.
        let encoded_shape: Vec<u64> = self.order.iter().map(|&axis| shape[axis]).collect();
        let encoded = zarr_core::unravel_index(index, &encoded_shape)?;
        let mut coords = vec![0u64; shape.len()];
        for (&axis, &c) in self.order.iter().zip(&encoded) {
            coords[axis] = c;
        }
        zarr_core::ravel_index(&coords, shape)
    }

    fn decode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        let encoded = self.encoded_representation(decoded)?;
        array.validate_for(Self::NAME, &encoded)?;
        self.apply(array, encoded.shape(), &self.inverse, decoded)
    }

    fn decode_into(
        &self,
        array: ArrayBytes,
        decoded: &ChunkRepresentation,
        out: &mut [u8],
    ) -> Result<()> {
        let encoded = self.encoded_representation(decoded)?;
        array.validate_for(Self::NAME, &encoded)?;
        let bytes = array.into_fixed(Self::NAME)?;
        if bytes.len() != out.len() {
            return Err(Error::output_size(bytes.len(), out.len()));
        }
        let shape = usize_shape(encoded.shape())?;
        let elem = decoded.element_size().unwrap_or(1);
        permute(&bytes, &shape, &self.inverse, elem, out);
        Ok(())
    }
}

fn usize_shape(shape: &[u64]) -> Result<Vec<usize>> {
    shape
        .iter()
        .map(|&s| {
            usize::try_from(s).map_err(|_| Error::InvalidRepresentation {
                reason: format!("shape {shape:?} does not fit in memory"),
            })
        })
        .collect()
}

/// Permute variable-length elements.
fn permute_vlen(v: &VlenBytes, shape: &[usize], perm: &[usize]) -> Result<VlenBytes> {
    // Permute the element indices, then gather.
    let indices: Vec<u8> = (0..v.len() as u64).flat_map(u64::to_ne_bytes).collect();
    let mut permuted = vec![0u8; indices.len()];
    permute(&indices, shape, perm, 8, &mut permuted);
    let (index_chunks, _) = permuted.as_chunks::<8>();
    let mut offsets = Vec::with_capacity(v.len() + 1);
    let mut values = Vec::with_capacity(v.values().len());
    offsets.push(0u64);
    for chunk in index_chunks {
        let i = u64::from_ne_bytes(*chunk) as usize;
        values.extend_from_slice(v.get(i).unwrap_or_default());
        offsets.push(values.len() as u64);
    }
    // Same elements, rearranged: the layout is valid by construction, and checked anyway.
    VlenBytes::try_new(offsets, Bytes::from(values))
}

/// A permutation after simplification: `shape` of the source, `perm` (output dimension `i` is
/// source dimension `perm[i]`) and the element size in bytes.
struct Plan {
    shape: Vec<usize>,
    perm: Vec<usize>,
    elem: usize,
}

/// Drop extent-1 dimensions, merge source dimensions that stay adjacent, and fold a last
/// dimension that stays last into the element size.
fn simplify(shape: &[usize], perm: &[usize], elem: usize) -> Plan {
    // Source dimensions in output order, grouped into runs of consecutive dimensions.
    let mut groups: Vec<(usize, usize)> = Vec::new(); // (first source dim, last source dim)
    for &d in perm.iter().filter(|&&d| shape[d] != 1) {
        match groups.last_mut() {
            Some((_, last)) if *last + 1 == d => *last = d,
            _ => groups.push((d, d)),
        }
    }
    // The groups in source order.
    let mut source_order: Vec<usize> = (0..groups.len()).collect();
    source_order.sort_by_key(|&g| groups[g].0);
    let mut new_index = vec![0; groups.len()];
    for (j, &g) in source_order.iter().enumerate() {
        new_index[g] = j;
    }
    let mut new_shape: Vec<usize> = source_order
        .iter()
        .map(|&g| shape[groups[g].0..=groups[g].1].iter().product())
        .collect();
    let mut new_perm: Vec<usize> = new_index;
    let mut elem = elem;
    let n = new_perm.len();
    if n > 0 && new_perm[n - 1] == n - 1 {
        elem *= new_shape[n - 1];
        new_shape.pop();
        new_perm.pop();
    }
    Plan {
        shape: new_shape,
        perm: new_perm,
        elem,
    }
}

fn c_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    strides
}

/// Write the permutation of `src` (C order, `shape`, `elem`-byte elements) into `dst`:
/// `dst` has shape `[shape[perm[0]], shape[perm[1]], ...]` and the element of `dst` at index
/// `e` is the element of `src` at the index `s` with `s[perm[i]] = e[i]`.
pub(crate) fn permute(src: &[u8], shape: &[usize], perm: &[usize], elem: usize, dst: &mut [u8]) {
    debug_assert_eq!(src.len(), dst.len());
    debug_assert_eq!(src.len(), shape.iter().product::<usize>() * elem);
    let plan = simplify(shape, perm, elem);
    if plan.perm.len() <= 1 || src.is_empty() {
        dst.copy_from_slice(src);
        return;
    }
    match plan.elem {
        1 => permute_typed::<1>(src, dst, &plan),
        2 => permute_typed::<2>(src, dst, &plan),
        4 => permute_typed::<4>(src, dst, &plan),
        8 => permute_typed::<8>(src, dst, &plan),
        16 => permute_typed::<16>(src, dst, &plan),
        _ => permute_bytes(src, dst, &plan),
    }
}

/// The geometry shared by both kernels: the 2-D tile (source dimension `a`, contiguous in the
/// source, and `b`, contiguous in the output) and the outer dimensions to iterate over.
struct Tiles {
    len_a: usize,
    len_b: usize,
    src_stride_b: usize,
    dst_stride_a: usize,
    /// (extent, source stride, output stride) of the other dimensions.
    outer: Vec<(usize, usize, usize)>,
}

impl Tiles {
    fn new(plan: &Plan) -> Self {
        let n = plan.perm.len();
        let src_strides = c_strides(&plan.shape);
        let dst_shape: Vec<usize> = plan.perm.iter().map(|&d| plan.shape[d]).collect();
        let dst_strides = c_strides(&dst_shape);
        let p = plan.perm.iter().position(|&d| d == n - 1).unwrap_or(0);
        let q = plan.perm[n - 1];
        let outer = (0..n)
            .filter(|&i| i != p && i != n - 1)
            .map(|i| (dst_shape[i], src_strides[plan.perm[i]], dst_strides[i]))
            .collect();
        Self {
            len_a: plan.shape[n - 1],
            len_b: plan.shape[q],
            src_stride_b: src_strides[q],
            dst_stride_a: dst_strides[p],
            outer,
        }
    }

    /// Call `f(source base, output base)` (in elements) for every combination of the outer
    /// dimensions.
    fn for_each_base(&self, mut f: impl FnMut(usize, usize)) {
        let mut index = vec![0usize; self.outer.len()];
        let (mut s, mut d) = (0usize, 0usize);
        loop {
            f(s, d);
            let mut k = self.outer.len();
            loop {
                if k == 0 {
                    return;
                }
                k -= 1;
                let (extent, ss, ds) = self.outer[k];
                index[k] += 1;
                s += ss;
                d += ds;
                if index[k] < extent {
                    break;
                }
                s -= extent * ss;
                d -= extent * ds;
                index[k] = 0;
            }
        }
    }
}

/// The tile side for `N`-byte elements: a tile row is about two cache lines, and a tile is at
/// most 8 KiB, so the scratch tile stays in L1.
const fn block(n: usize) -> usize {
    let b = 128 / n;
    if b < 8 {
        8
    } else if b > 64 {
        64
    } else {
        b
    }
}

/// Transpose tile by tile through a small scratch buffer: each tile's source rows are read
/// front to back into the scratch (transposing there, in L1), then written out as contiguous
/// output rows. Reading or writing the large arrays with a stride instead makes every access
/// a cache miss when the stride is a power of two (a 64^3 chunk's planes are 8 KiB apart,
/// which maps them all to one L1 set).
fn permute_typed<const N: usize>(src: &[u8], dst: &mut [u8], plan: &Plan) {
    let (src, _) = src.as_chunks::<N>();
    let (dst, _) = dst.as_chunks_mut::<N>();
    let t = Tiles::new(plan);
    let block = block(N);
    let mut scratch = vec![[0u8; N]; block * block];
    t.for_each_base(|sbase, dbase| {
        for b0 in (0..t.len_b).step_by(block) {
            let bn = block.min(t.len_b - b0);
            for a0 in (0..t.len_a).step_by(block) {
                let an = block.min(t.len_a - a0);
                for b in 0..bn {
                    let start = sbase + (b0 + b) * t.src_stride_b + a0;
                    for (a, v) in src[start..start + an].iter().enumerate() {
                        scratch[a * block + b] = *v;
                    }
                }
                for a in 0..an {
                    let start = dbase + b0 + (a0 + a) * t.dst_stride_a;
                    dst[start..start + bn].copy_from_slice(&scratch[a * block..a * block + bn]);
                }
            }
        }
    });
}

fn permute_bytes(src: &[u8], dst: &mut [u8], plan: &Plan) {
    let e = plan.elem;
    let t = Tiles::new(plan);
    t.for_each_base(|sbase, dbase| {
        for b in 0..t.len_b {
            for a in 0..t.len_a {
                let s = (sbase + b * t.src_stride_b + a) * e;
                let d = (dbase + b + a * t.dst_stride_a) * e;
                dst[d..d + e].copy_from_slice(&src[s..s + e]);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, element by element.
    fn naive(src: &[u8], shape: &[usize], perm: &[usize], elem: usize) -> Vec<u8> {
        let n: usize = shape.iter().product();
        let src_strides = c_strides(shape);
        let dst_shape: Vec<usize> = perm.iter().map(|&d| shape[d]).collect();
        let mut out = vec![0; src.len()];
        for flat in 0..n {
            // Unravel flat in dst_shape.
            let mut rem = flat;
            let mut s = 0;
            for i in (0..dst_shape.len()).rev() {
                let e = rem % dst_shape[i];
                rem /= dst_shape[i];
                s += e * src_strides[perm[i]];
            }
            out[flat * elem..(flat + 1) * elem].copy_from_slice(&src[s * elem..(s + 1) * elem]);
        }
        out
    }

    fn all_perms(n: usize) -> Vec<Vec<usize>> {
        if n == 0 {
            return vec![vec![]];
        }
        let mut out = Vec::new();
        for p in all_perms(n - 1) {
            for i in 0..=p.len() {
                let mut q = p.clone();
                q.insert(i, n - 1);
                out.push(q);
            }
        }
        out
    }

    #[test]
    fn every_permutation_matches_the_definition() {
        for shape in [
            vec![3usize, 4],
            vec![2, 3, 5],
            vec![1, 3, 1],
            vec![40, 1, 35],
            vec![2, 3, 4, 5],
            vec![33, 34, 3],
        ] {
            for perm in all_perms(shape.len()) {
                for elem in [1usize, 2, 3, 4, 8, 16] {
                    let n: usize = shape.iter().product::<usize>() * elem;
                    let src: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
                    let mut dst = vec![0; n];
                    permute(&src, &shape, &perm, elem, &mut dst);
                    assert_eq!(
                        dst,
                        naive(&src, &shape, &perm, elem),
                        "shape {shape:?} perm {perm:?} elem {elem}"
                    );
                }
            }
        }
    }

    /// `decoded_position` agrees with the codec itself: encode a chunk whose elements are
    /// their own C-order positions, and each encoded element names where it came from.
    #[test]
    fn decoded_positions_follow_the_encoding() {
        use zarr_core::{DataType, FillValue};
        for shape in [
            vec![3u64, 4],
            vec![2, 3, 5],
            vec![1, 3, 1],
            vec![2, 3, 4, 5],
        ] {
            let repr = ChunkRepresentation::try_new(
                shape.clone(),
                DataType::UInt32,
                FillValue::from(0u32),
            )
            .unwrap();
            let n = repr.num_elements_usize().unwrap();
            let positions: Vec<u8> = (0..n as u32).flat_map(u32::to_ne_bytes).collect();
            for perm in all_perms(shape.len()) {
                let codec = TransposeCodec::try_new(perm.clone()).unwrap();
                let encoded = codec
                    .encode(ArrayBytes::fixed(positions.clone()), &repr)
                    .unwrap()
                    .into_fixed("test")
                    .unwrap();
                for (p, came_from) in encoded.chunks_exact(4).enumerate() {
                    let came_from = u32::from_ne_bytes(came_from.try_into().unwrap());
                    assert_eq!(
                        codec.decoded_position(p as u64, &repr),
                        Some(u64::from(came_from)),
                        "shape {shape:?} perm {perm:?} position {p}"
                    );
                }
                assert_eq!(codec.decoded_position(n as u64, &repr), None);
            }
        }
    }

    #[test]
    fn order_is_validated() {
        assert!(TransposeCodec::try_new(vec![0, 0]).is_err());
        assert!(TransposeCodec::try_new(vec![1, 2]).is_err());
        for bad in [
            serde_json::json!("C"),
            serde_json::json!("F"),
            serde_json::json!([0, -1]),
            serde_json::json!(3),
        ] {
            let meta = ExtensionObject::with_configuration(
                "transpose",
                config::map([("order", bad.clone())]),
            );
            let e = TransposeCodec::from_metadata(&meta).unwrap_err();
            assert!(matches!(e, Error::InvalidConfiguration { .. }), "{bad}");
        }
        let missing = ExtensionObject::new("transpose");
        assert!(TransposeCodec::from_metadata(&missing).is_err());
    }

    #[test]
    fn variable_length_elements_are_permuted() {
        use zarr_core::{DataType, FillValue};
        let repr = ChunkRepresentation::try_new(vec![2, 2], DataType::String, FillValue::from(""))
            .unwrap();
        let v = VlenBytes::from_elements(["a", "bb", "", "dddd"].map(str::as_bytes));
        let t = TransposeCodec::try_new(vec![1, 0]).unwrap();
        let enc = t.encode(ArrayBytes::Variable(v.clone()), &repr).unwrap();
        let got: Vec<&[u8]> = enc.as_variable().unwrap().iter().collect();
        assert_eq!(got, vec![&b"a"[..], b"", b"bb", b"dddd"]);
        assert_eq!(t.decode(enc, &repr).unwrap(), ArrayBytes::Variable(v));
    }
}
