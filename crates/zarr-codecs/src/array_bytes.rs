//! A chunk in memory: fixed-size element bytes, or variable-length elements in Arrow layout.

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::representation::ChunkRepresentation;

/// The decoded elements of one chunk, in C (row-major) order.
///
/// - [`ArrayBytes::Fixed`]: every element takes the data type's fixed size; the bytes are the
///   elements one after another in **native** byte order (the `bytes` codec converts to and
///   from the stored byte order).
/// - [`ArrayBytes::Variable`]: variable-length elements (`string`, `bytes`) as offsets plus one
///   values buffer, the Arrow layout (see [`VlenBytes`]).
///
/// [`bytes::Bytes`] makes clones and slices cheap: a codec that leaves the data unchanged (the
/// `bytes` codec on a native-endian chunk, `crc32c` dropping its checksum) hands the buffer on
/// without copying it.
///
/// ```
/// use zarr_codecs::{ArrayBytes, ChunkRepresentation};
/// use zarr_core::{DataType, FillValue};
///
/// let repr = ChunkRepresentation::try_new(vec![3], DataType::Int16, FillValue::new(7i16.to_ne_bytes()))?;
/// let chunk = ArrayBytes::fill(&repr)?;
/// assert!(chunk.is_fill(&repr));
/// assert_eq!(chunk.as_fixed().unwrap().len(), 6);
/// chunk.validate(&repr)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArrayBytes {
    /// Fixed-size elements, native byte order.
    Fixed(Bytes),
    /// Variable-length elements.
    Variable(VlenBytes),
}

impl ArrayBytes {
    /// Fixed-size elements from anything that converts into [`Bytes`] (`Vec<u8>` does so
    /// without copying).
    pub fn fixed(bytes: impl Into<Bytes>) -> Self {
        Self::Fixed(bytes.into())
    }

    /// A chunk in which every element is the fill value of `repr`.
    ///
    /// # Errors
    /// [`Error::InvalidRepresentation`] if the chunk does not fit in memory.
    pub fn fill(repr: &ChunkRepresentation) -> Result<Self> {
        let n = repr.num_elements_usize()?;
        let fill = repr.fill_value().as_bytes();
        match repr.element_size() {
            Some(_) => {
                let size = repr.fixed_size_usize()?;
                let mut out = zeroed_bytes(size)?;
                fill_buffer(&mut out, fill);
                Ok(Self::Fixed(out.into()))
            }
            None => {
                let total =
                    n.checked_mul(fill.len())
                        .ok_or_else(|| Error::InvalidRepresentation {
                            reason: format!("{n} copies of the fill value overflow usize"),
                        })?;
                let mut values = Vec::new();
                let mut offsets = Vec::new();
                values
                    .try_reserve_exact(total)
                    .and_then(|()| offsets.try_reserve_exact(n + 1))
                    .map_err(|_| Error::OutOfMemory {
                        what: CHUNK.into(),
                        bytes: total.saturating_add(n.saturating_mul(8)),
                    })?;
                offsets.push(0u64);
                for _ in 0..n {
                    values.extend_from_slice(fill);
                    offsets.push(values.len() as u64);
                }
                Ok(Self::Variable(VlenBytes {
                    offsets,
                    values: values.into(),
                }))
            }
        }
    }

    /// The fixed-size bytes, or `None` for variable-length data.
    pub fn as_fixed(&self) -> Option<&Bytes> {
        match self {
            Self::Fixed(b) => Some(b),
            Self::Variable(_) => None,
        }
    }

    /// The variable-length elements, or `None` for fixed-size data.
    pub fn as_variable(&self) -> Option<&VlenBytes> {
        match self {
            Self::Fixed(_) => None,
            Self::Variable(v) => Some(v),
        }
    }

    /// The fixed-size bytes.
    ///
    /// # Errors
    /// [`Error::UnexpectedArray`] (naming `codec`) for variable-length data.
    pub fn into_fixed(self, codec: &str) -> Result<Bytes> {
        match self {
            Self::Fixed(b) => Ok(b),
            Self::Variable(v) => Err(Error::UnexpectedArray {
                codec: codec.to_owned(),
                expected: "fixed-size elements".into(),
                found: format!("{} variable-length elements", v.len()),
            }),
        }
    }

    /// Check that this chunk matches `repr`: fixed-size data must hold exactly
    /// `num_elements * element_size` bytes, variable-length data exactly `num_elements`
    /// elements, and the kind must match the data type.
    ///
    /// # Errors
    /// [`Error::UnexpectedArray`] describing the mismatch.
    pub fn validate(&self, repr: &ChunkRepresentation) -> Result<()> {
        self.validate_for("chain", repr)
    }

    pub(crate) fn validate_for(&self, codec: &str, repr: &ChunkRepresentation) -> Result<()> {
        let mismatch = |expected: String, found: String| {
            Err(Error::UnexpectedArray {
                codec: codec.to_owned(),
                expected,
                found,
            })
        };
        match (self, repr.fixed_size()) {
            (Self::Fixed(b), Some(size)) if b.len() as u64 == size => Ok(()),
            (Self::Fixed(b), Some(size)) => mismatch(
                format!(
                    "{size} bytes ({} x {})",
                    repr.num_elements(),
                    repr.data_type()
                ),
                format!("{} bytes", b.len()),
            ),
            (Self::Variable(v), None) if v.len() as u64 == repr.num_elements() => Ok(()),
            (Self::Variable(v), None) => mismatch(
                format!("{} elements", repr.num_elements()),
                format!("{} elements", v.len()),
            ),
            (Self::Fixed(b), None) => mismatch(
                format!("variable-length {} elements", repr.data_type()),
                format!("{} bytes of fixed-size elements", b.len()),
            ),
            (Self::Variable(v), Some(_)) => mismatch(
                format!("fixed-size {} elements", repr.data_type()),
                format!("{} variable-length elements", v.len()),
            ),
        }
    }

    /// Whether every element equals the fill value of `repr`, compared byte for byte (so
    /// `-0.0` differs from `0.0`, and NaNs are equal only with the same bit pattern). Writers
    /// use this to skip storing chunks that hold nothing but the fill value.
    pub fn is_fill(&self, repr: &ChunkRepresentation) -> bool {
        let fill = repr.fill_value().as_bytes();
        match self {
            Self::Fixed(bytes) => is_repeated(bytes, fill),
            Self::Variable(v) => v.iter().all(|e| e == fill),
        }
    }
}

impl From<VlenBytes> for ArrayBytes {
    fn from(v: VlenBytes) -> Self {
        Self::Variable(v)
    }
}

impl From<Vec<u8>> for ArrayBytes {
    fn from(v: Vec<u8>) -> Self {
        Self::Fixed(v.into())
    }
}

impl From<Bytes> for ArrayBytes {
    fn from(v: Bytes) -> Self {
        Self::Fixed(v)
    }
}

/// Fill `out` with copies of `element` (whose length must divide `out.len()`).
pub(crate) fn fill_buffer(out: &mut [u8], element: &[u8]) {
    match element {
        [] => {}
        [b] => out.fill(*b),
        _ if element.iter().all(|&b| b == element[0]) => out.fill(element[0]),
        _ => {
            // Write one element, then double the filled prefix.
            let n = element.len().min(out.len());
            out[..n].copy_from_slice(&element[..n]);
            let mut filled = n;
            while filled < out.len() {
                let step = filled.min(out.len() - filled);
                out.copy_within(..step, filled);
                filled += step;
            }
        }
    }
}

fn is_repeated(bytes: &[u8], element: &[u8]) -> bool {
    match element {
        [] => bytes.is_empty(),
        [b] => bytes.iter().all(|x| x == b),
        _ if element.iter().all(|&b| b == element[0]) => bytes.iter().all(|x| *x == element[0]),
        _ => {
            bytes.len().is_multiple_of(element.len())
                && bytes.chunks_exact(element.len()).all(|c| c == element)
        }
    }
}

/// Variable-length elements in the Arrow layout: `len + 1` offsets into one values buffer;
/// element `i` is `values[offsets[i]..offsets[i + 1]]`.
///
/// The constructor validates the layout: there is at least one offset, the first is 0, they
/// never decrease, and the last equals the length of the values. So every element access is
/// in bounds.
///
/// ```
/// use zarr_codecs::VlenBytes;
///
/// let v = VlenBytes::try_new(vec![0, 1, 1, 4], "abcd".as_bytes().to_vec().into())?;
/// assert_eq!(v.len(), 3);
/// assert_eq!(v.get(2), Some(&b"bcd"[..]));
/// assert!(VlenBytes::try_new(vec![0, 3, 2], "abc".as_bytes().to_vec().into()).is_err());
/// let built = VlenBytes::from_elements(["a", "", "bcd"].map(str::as_bytes));
/// assert_eq!(built, v);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlenBytes {
    offsets: Vec<u64>,
    values: Bytes,
}

impl VlenBytes {
    /// Elements from offsets and values.
    ///
    /// # Errors
    /// [`Error::InvalidOffsets`] if the offsets are empty, do not start at 0, decrease, or do
    /// not end at `values.len()`.
    pub fn try_new(offsets: Vec<u64>, values: Bytes) -> Result<Self> {
        let bad = |reason: String| Err(Error::InvalidOffsets { reason });
        let Some(&first) = offsets.first() else {
            return bad("there must be at least one offset (n + 1 for n elements)".into());
        };
        if first != 0 {
            return bad(format!("the first offset is {first}, not 0"));
        }
        if let Some(i) = offsets.windows(2).position(|w| w[1] < w[0]) {
            return bad(format!(
                "offset {} ({}) is less than offset {} ({})",
                i + 1,
                offsets[i + 1],
                i,
                offsets[i]
            ));
        }
        let last = offsets[offsets.len() - 1];
        if last != values.len() as u64 {
            return bad(format!(
                "the last offset is {last}, but there are {} value bytes",
                values.len()
            ));
        }
        Ok(Self { offsets, values })
    }

    /// Build from elements, copying them into one buffer.
    pub fn from_elements<'a>(elements: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut offsets = vec![0u64];
        let mut values = Vec::new();
        for e in elements {
            values.extend_from_slice(e);
            offsets.push(values.len() as u64);
        }
        Self {
            offsets,
            values: values.into(),
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The offsets (`len() + 1` of them, from 0 to `values().len()`).
    pub fn offsets(&self) -> &[u64] {
        &self.offsets
    }

    /// The values buffer.
    pub fn values(&self) -> &Bytes {
        &self.values
    }

    /// Element `index`, or `None` past the end.
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        let start = *self.offsets.get(index)? as usize;
        let end = *self.offsets.get(index + 1)? as usize;
        Some(&self.values[start..end])
    }

    /// The elements in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        self.offsets
            .windows(2)
            .map(|w| &self.values[w[0] as usize..w[1] as usize])
    }

    /// The offsets and the values.
    pub fn into_parts(self) -> (Vec<u64>, Bytes) {
        (self.offsets, self.values)
    }
}

/// What [`zeroed_bytes`] says its buffers are for.
const CHUNK: &str = "a chunk or shard (is the chunk shape right?)";

/// `len` zero bytes, or [`Error::OutOfMemory`] where `vec![0; len]` would abort the
/// process. Like `vec!`, it asks the allocator for zeroed memory, so the pages of a large
/// buffer are not touched here.
///
/// ```
/// assert_eq!(zarr_codecs::zeroed_bytes(3)?, [0, 0, 0]);
/// assert!(zarr_codecs::zeroed_bytes(usize::MAX / 2).is_err());
/// # Ok::<(), zarr_codecs::Error>(())
/// ```
///
/// # Errors
/// [`Error::OutOfMemory`] if the allocator refuses.
pub fn zeroed_bytes(len: usize) -> Result<Vec<u8>> {
    let refused = || Error::OutOfMemory {
        what: CHUNK.into(),
        bytes: len,
    };
    if len == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(len).map_err(|_| refused())?;
    // SAFETY: the layout has a non-zero size.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err(refused());
    }
    // SAFETY: allocated by the global allocator with `u8`'s layout for exactly `len` bytes,
    // all initialised (zeroed).
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use zarr_core::{DataType, FillValue};

    #[test]
    fn offsets_are_validated() {
        let values = Bytes::from_static(b"abc");
        assert!(VlenBytes::try_new(vec![], values.clone()).is_err());
        assert!(VlenBytes::try_new(vec![1, 3], values.clone()).is_err());
        assert!(VlenBytes::try_new(vec![0, 2, 1, 3], values.clone()).is_err());
        assert!(VlenBytes::try_new(vec![0, 2], values.clone()).is_err());
        assert!(VlenBytes::try_new(vec![0, 4], values.clone()).is_err());
        let ok = VlenBytes::try_new(vec![0, 0, 3], values).unwrap();
        assert_eq!(ok.iter().collect::<Vec<_>>(), vec![&b""[..], b"abc"]);
        assert_eq!(ok.get(2), None);
        let empty = VlenBytes::try_new(vec![0], Bytes::new()).unwrap();
        assert!(empty.is_empty());
    }

    #[test]
    fn fill_and_is_fill() {
        let repr = ChunkRepresentation::try_new(
            vec![5],
            DataType::Float32,
            FillValue::new(1.5f32.to_ne_bytes()),
        )
        .unwrap();
        let chunk = ArrayBytes::fill(&repr).unwrap();
        let b = chunk.as_fixed().unwrap();
        assert_eq!(b.len(), 20);
        assert!(b.chunks(4).all(|c| c == 1.5f32.to_ne_bytes()));
        assert!(chunk.is_fill(&repr));
        let mut other = b.to_vec();
        other[19] ^= 1;
        assert!(!ArrayBytes::fixed(other).is_fill(&repr));

        let s =
            ChunkRepresentation::try_new(vec![3], DataType::String, FillValue::from("ab")).unwrap();
        let chunk = ArrayBytes::fill(&s).unwrap();
        chunk.validate(&s).unwrap();
        assert!(chunk.is_fill(&s));
        assert_eq!(chunk.as_variable().unwrap().values().as_ref(), b"ababab");
        assert!(chunk.validate(&repr).is_err());
        assert!(ArrayBytes::fixed(vec![0; 19]).validate(&repr).is_err());
    }

    #[test]
    fn fill_buffer_repeats() {
        let mut out = vec![0u8; 12];
        fill_buffer(&mut out, &[1, 2, 3]);
        assert_eq!(out, [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3]);
    }
}
