//! The `bytes` codec: fixed-size elements in a stated byte order.

use bytes::Bytes;
use serde_json::Value;
use zarr_core::{DataType, ExtensionObject, Region};

use crate::array_bytes::ArrayBytes;
use crate::codec::{ArrayToBytesCodec, copy_exact};
use crate::config::{self, Config};
use crate::error::{Error, Result};
use crate::representation::ChunkRepresentation;
use crate::strided;

/// A byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Least significant byte first.
    Little,
    /// Most significant byte first.
    Big,
}

impl Endian {
    /// The byte order of this machine.
    pub const NATIVE: Self = if cfg!(target_endian = "little") {
        Self::Little
    } else {
        Self::Big
    };

    /// `"little"` or `"big"`, as written in metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Little => "little",
            Self::Big => "big",
        }
    }
}

/// The `bytes` codec (array->bytes): every element's bytes, one after another in C order, in
/// the configured byte order.
///
/// Configuration: `endian`, `"little"` or `"big"`. It is required for data types whose
/// elements have more than one byte that needs ordering, and may be left out for 1-byte
/// types. Byte order applies per *component*: a `complex64` element is two `float32`s, each
/// swapped on its own; `r<N>`, `raw_bytes` and `null_terminated_bytes` are opaque bytes and
/// never swapped; `fixed_length_utf32` swaps each 4-byte code unit.
///
/// `bool` elements are written as 0 or 1. On decoding, any byte other than 0 reads as `true`
/// (stored as 1), as numpy and zarr-python read it: a chunk is never refused for its bool bytes,
/// so the padding of an edge chunk, which readers must ignore, cannot fail a read, and no other
/// byte ever reaches a Rust `bool`.
///
/// Decoding can write straight into a caller's buffer ([`ArrayToBytesCodec::decode_into`]),
/// convert in place, and decode any region without touching the rest of the chunk.
///
/// ```
/// use zarr_codecs::{ArrayBytes, ArrayToBytesCodec, BytesCodec, ChunkRepresentation, Endian};
/// use zarr_core::{DataType, FillValue};
///
/// let repr = ChunkRepresentation::try_new(vec![2], DataType::UInt16, FillValue::new([0, 0]))?;
/// let codec = BytesCodec::new(Some(Endian::Big));
/// let native: Vec<u8> = [0x0102u16, 0x0304].iter().flat_map(|v| v.to_ne_bytes()).collect();
/// let encoded = codec.encode(ArrayBytes::fixed(native.clone()), &repr)?;
/// assert_eq!(&encoded[..], &[1, 2, 3, 4]);
/// assert_eq!(codec.decode(encoded, &repr)?, ArrayBytes::fixed(native));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BytesCodec {
    endian: Option<Endian>,
}

impl BytesCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "bytes";

    /// A `bytes` codec with the given byte order (`None` only suits 1-byte types).
    pub fn new(endian: Option<Endian>) -> Self {
        Self { endian }
    }

    /// Little-endian, the usual choice.
    pub fn little() -> Self {
        Self::new(Some(Endian::Little))
    }

    /// The configured byte order.
    pub fn endian(&self) -> Option<Endian> {
        self.endian
    }

    /// Parse `{"name": "bytes", "configuration": {"endian": ...}}`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for an `endian` other than `"little"`/`"big"` or an
    /// unknown key.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(metadata, &["endian"])?;
        let endian = match config.get("endian") {
            None => None,
            Some(v) => Some(match config.str("endian", v)? {
                "little" => Endian::Little,
                "big" => Endian::Big,
                _ => return Err(config.error("endian", "\"little\" or \"big\"", v)),
            }),
        };
        Ok(Self { endian })
    }

    /// How many bytes are swapped as a unit for `data_type`: 1 when the byte order does not
    /// matter.
    fn swap_width(data_type: &DataType) -> Result<usize> {
        Ok(match data_type {
            DataType::Bool
            | DataType::Int8
            | DataType::UInt8
            | DataType::MiniFloat(_)
            | DataType::Int2
            | DataType::Int4
            | DataType::UInt2
            | DataType::UInt4
            | DataType::RawBits(_)
            | DataType::NullTerminatedBytes { .. }
            | DataType::RawBytes { .. } => 1,
            DataType::Int16 | DataType::UInt16 | DataType::Float16 | DataType::BFloat16 => 2,
            DataType::ComplexFloat(component) => component.size(),
            DataType::Int32
            | DataType::UInt32
            | DataType::Float32
            | DataType::Complex64
            | DataType::FixedLengthUtf32 { .. } => 4,
            DataType::Int64
            | DataType::UInt64
            | DataType::Float64
            | DataType::Complex128
            | DataType::DateTime64 { .. }
            | DataType::TimeDelta64 { .. } => 8,
            // Per field: see `swap`.
            DataType::Struct(_) => 1,
            DataType::Optional(_) => {
                return Err(Error::incompatible(
                    Self::NAME,
                    format!(
                        "data type {data_type} is nullable: its values and validity mask are \
                         encoded by the `zarrs.optional` codec, whose `data_codecs` can hold \
                         `bytes`"
                    ),
                ));
            }
            DataType::NdArray(nd) if nd.element_size().is_some() => Self::swap_width(nd.dtype())?,
            DataType::NdArray(_) => {
                return Err(Error::incompatible(
                    Self::NAME,
                    format!(
                        "data type {data_type} has variable-length elements (use the \
                         `vlen-ndarray` codec for a leading variable dimension)"
                    ),
                ));
            }
            DataType::String | DataType::Bytes => {
                return Err(Error::incompatible(
                    Self::NAME,
                    format!(
                        "data type {data_type} has variable-length elements (use a vlen codec)"
                    ),
                ));
            }
            other => {
                return Err(Error::incompatible(
                    Self::NAME,
                    format!("the byte layout of data type {other} is not known"),
                ));
            }
        })
    }

    /// The swap width to apply for `repr`: 1 for no swapping.
    fn width(&self, repr: &ChunkRepresentation) -> Result<usize> {
        let width = Self::swap_width(repr.data_type())?;
        let mut endian = self.endian;
        if matches!(repr.data_type(), DataType::NdArray(_)) {
            if endian == Some(Endian::Big) {
                return Err(Error::incompatible(
                    Self::NAME,
                    format!(
                        "data type {} is little-endian by definition (its fill value too); \
                         `endian` must be \"little\"",
                        repr.data_type()
                    ),
                ));
            }
            // zarr-vlen-ndarray 0.2 writes a bare `bytes` for fixed element shapes; the
            // data type fixes the byte order, so there is nothing to guess.
            endian = Some(Endian::Little);
        }
        match endian {
            None if width > 1 => Err(Error::incompatible(
                Self::NAME,
                format!(
                    "`endian` is required for data type {} ({width}-byte components)",
                    repr.data_type()
                ),
            )),
            Some(endian) if endian != Endian::NATIVE => Ok(width),
            _ => Ok(1),
        }
    }

    /// What converting between stored and native order takes for `repr`.
    ///
    /// A struct swaps each multi-byte unit of each field (see [`DataType::swap_units`]).
    /// Without `endian`, a struct is read and written little-endian: zarr-python 3.1 writes
    /// its `structured` arrays with a bare `bytes` codec, and the `structured` specification
    /// says to treat that as little-endian.
    fn swap(&self, repr: &ChunkRepresentation) -> Result<Swap> {
        if let DataType::Struct(st) = repr.data_type() {
            let units = repr.data_type().swap_units().unwrap_or_default();
            let endian = self.endian.unwrap_or(Endian::Little);
            return Ok(if units.is_empty() || endian == Endian::NATIVE {
                Swap::Not
            } else {
                Swap::Units {
                    elem: st.size(),
                    units,
                }
            });
        }
        Ok(match self.width(repr)? {
            1 => Swap::Not,
            width => Swap::Width(width),
        })
    }

    /// Convert between stored and native order: swap in place when the buffer is not shared,
    /// copy otherwise.
    fn convert(&self, data: Bytes, repr: &ChunkRepresentation) -> Result<Bytes> {
        let swap = self.swap(repr)?;
        if swap.is_not() {
            return Ok(data);
        }
        Ok(match data.try_into_mut() {
            Ok(mut owned) => {
                swap.in_place(&mut owned);
                owned.freeze()
            }
            Err(shared) => {
                let mut out = vec![0u8; shared.len()];
                swap.copy(&shared, &mut out);
                out.into()
            }
        })
    }

    fn check_len(bytes: &[u8], repr: &ChunkRepresentation) -> Result<()> {
        let expected = repr.fixed_size().unwrap_or(0);
        if bytes.len() as u64 != expected {
            return Err(Error::UnexpectedArray {
                codec: Self::NAME.into(),
                expected: format!(
                    "{expected} bytes ({} x {})",
                    repr.num_elements(),
                    repr.data_type()
                ),
                found: format!("{} bytes", bytes.len()),
            });
        }
        Ok(())
    }
}

impl ArrayToBytesCodec for BytesCodec {
    fn to_metadata(&self) -> ExtensionObject {
        match self.endian {
            None => ExtensionObject::new(Self::NAME),
            Some(e) => ExtensionObject::with_configuration(
                Self::NAME,
                config::map([("endian", Value::from(e.as_str()))]),
            ),
        }
    }

    fn encoded_size(&self, decoded: &ChunkRepresentation) -> Result<Option<u64>> {
        self.swap(decoded)?;
        Ok(decoded.fixed_size())
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<Bytes> {
        let bytes = array.into_fixed(Self::NAME)?;
        Self::check_len(&bytes, decoded)?;
        self.convert(bytes, decoded)
    }

    fn decode(&self, bytes: Bytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        Self::check_len(&bytes, decoded)?;
        let out = self.convert(bytes, decoded)?;
        Ok(ArrayBytes::Fixed(normalize_bytes(out, decoded)))
    }

    fn decode_into(
        &self,
        bytes: Bytes,
        decoded: &ChunkRepresentation,
        out: &mut [u8],
    ) -> Result<()> {
        Self::check_len(&bytes, decoded)?;
        let swap = self.swap(decoded)?;
        if swap.is_not() {
            copy_exact(&bytes, out)?;
        } else {
            if bytes.len() != out.len() {
                return Err(Error::output_size(bytes.len(), out.len()));
            }
            swap.copy(&bytes, out);
        }
        normalize(out, decoded);
        Ok(())
    }

    fn decode_unchanged<'a>(
        &self,
        bytes: &'a [u8],
        decoded: &ChunkRepresentation,
    ) -> Result<Option<&'a [u8]>> {
        if !self.swap(decoded)?.is_not() {
            return Ok(None);
        }
        Self::check_len(bytes, decoded)?;
        if *decoded.data_type() == DataType::Bool && bytes.iter().any(|&b| b > 1) {
            return Ok(None);
        }
        Ok(Some(bytes))
    }

    fn supports_in_place(&self, decoded: &ChunkRepresentation) -> bool {
        self.swap(decoded).is_ok()
    }

    fn decode_in_place(&self, data: &mut [u8], decoded: &ChunkRepresentation) -> Result<()> {
        Self::check_len(data, decoded)?;
        self.swap(decoded)?.in_place(data);
        normalize(data, decoded);
        Ok(())
    }

    fn can_partially_decode(&self) -> bool {
        true
    }

    fn partial_decode_into(
        &self,
        bytes: Bytes,
        decoded: &ChunkRepresentation,
        region: &Region,
        out: &mut [u8],
    ) -> Result<()> {
        Self::check_len(&bytes, decoded)?;
        let swap = self.swap(decoded)?;
        decoded.fixed_size_usize()?;
        let elem = decoded.element_size().unwrap_or(1);
        let n = strided::check_region(decoded, region)?;
        if out.len() != n * elem {
            return Err(Error::output_size(n * elem, out.len()));
        }
        let mut written = 0;
        strided::for_each_run(decoded.shape(), region, elem, |offset, len| {
            let dst = &mut out[written..written + len];
            let src = &bytes[offset..offset + len];
            // Runs hold whole elements, so a struct's units line up.
            swap.copy(src, dst);
            written += len;
            Ok(())
        })?;
        normalize(out, decoded);
        Ok(())
    }
}

/// Turn every `bool` byte other than 0 into 1 (other data types are left alone).
fn normalize(data: &mut [u8], repr: &ChunkRepresentation) {
    if *repr.data_type() == DataType::Bool {
        for b in data.iter_mut().filter(|b| **b > 1) {
            *b = 1;
        }
    }
}

/// [`normalize`] for shared bytes: copied only when some byte changes.
fn normalize_bytes(bytes: Bytes, repr: &ChunkRepresentation) -> Bytes {
    if *repr.data_type() != DataType::Bool || bytes.iter().all(|&b| b <= 1) {
        return bytes;
    }
    let mut owned = bytes.to_vec();
    normalize(&mut owned, repr);
    Bytes::from(owned)
}

macro_rules! swap_fns {
    ($in_place:ident, $copy:ident, $int:ty, $n:literal) => {
        fn $in_place(data: &mut [u8]) {
            let (chunks, _) = data.as_chunks_mut::<$n>();
            for c in chunks {
                *c = <$int>::from_ne_bytes(*c).swap_bytes().to_ne_bytes();
            }
        }
        fn $copy(src: &[u8], dst: &mut [u8]) {
            let (s, _) = src.as_chunks::<$n>();
            let (d, _) = dst.as_chunks_mut::<$n>();
            for (d, s) in d.iter_mut().zip(s) {
                *d = <$int>::from_ne_bytes(*s).swap_bytes().to_ne_bytes();
            }
        }
    };
}

swap_fns!(swap2, swap_copy2, u16, 2);
swap_fns!(swap4, swap_copy4, u32, 4);
swap_fns!(swap8, swap_copy8, u64, 8);

/// Reverse the bytes of every `width`-byte unit of `data` in place.
pub(crate) fn swap_in_place(data: &mut [u8], width: usize) {
    match width {
        0 | 1 => {}
        2 => swap2(data),
        4 => swap4(data),
        8 => swap8(data),
        _ => data.chunks_exact_mut(width).for_each(<[u8]>::reverse),
    }
}

/// How the bytes codec converts between stored and native byte order.
enum Swap {
    /// Nothing to swap.
    Not,
    /// Reverse every `width`-byte unit.
    Width(usize),
    /// Reverse these `(offset, width)` units of every `elem`-byte element (a struct).
    Units {
        elem: usize,
        units: Vec<(usize, usize)>,
    },
}

impl Swap {
    fn is_not(&self) -> bool {
        matches!(self, Self::Not)
    }

    fn in_place(&self, data: &mut [u8]) {
        match self {
            Self::Not => {}
            Self::Width(width) => swap_in_place(data, *width),
            Self::Units { elem, units } => {
                for element in data.chunks_exact_mut(*elem) {
                    for &(offset, width) in units {
                        element[offset..offset + width].reverse();
                    }
                }
            }
        }
    }

    /// Copy `src` into `dst` (same length), converted.
    fn copy(&self, src: &[u8], dst: &mut [u8]) {
        match self {
            Self::Width(width) => swap_copy(src, dst, *width),
            _ => {
                dst.copy_from_slice(src);
                self.in_place(dst);
            }
        }
    }
}

/// Copy `src` into `dst` (same length), reversing every `width`-byte unit.
pub(crate) fn swap_copy(src: &[u8], dst: &mut [u8], width: usize) {
    debug_assert_eq!(src.len(), dst.len());
    match width {
        0 | 1 => dst.copy_from_slice(src),
        2 => swap_copy2(src, dst),
        4 => swap_copy4(src, dst),
        8 => swap_copy8(src, dst),
        _ => {
            for (d, s) in dst.chunks_exact_mut(width).zip(src.chunks_exact(width)) {
                for (x, y) in d.iter_mut().zip(s.iter().rev()) {
                    *x = *y;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zarr_core::FillValue;

    fn repr(shape: Vec<u64>, dt: DataType) -> ChunkRepresentation {
        let fill = FillValue::default_for(&dt);
        ChunkRepresentation::try_new(shape, dt, fill).unwrap()
    }

    #[test]
    fn complex_swaps_per_component() {
        let r = repr(vec![1], DataType::Complex64);
        let native: Vec<u8> = [1.0f32, -2.0]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let be = BytesCodec::new(Some(Endian::Big))
            .encode(ArrayBytes::fixed(native), &r)
            .unwrap();
        let expected: Vec<u8> = [1.0f32, -2.0]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        assert_eq!(&be[..], &expected[..]);
    }

    #[test]
    fn endian_is_required_for_multibyte_types_only() {
        let codec = BytesCodec::new(None);
        assert!(codec.encoded_size(&repr(vec![2], DataType::UInt8)).is_ok());
        assert!(
            codec
                .encoded_size(&repr(vec![2], DataType::RawBits(3)))
                .is_ok()
        );
        let e = codec
            .encoded_size(&repr(vec![2], DataType::Int32))
            .unwrap_err();
        assert!(e.to_string().contains("`bytes`"), "{e}");
        assert!(e.to_string().contains("endian"), "{e}");
        let e = BytesCodec::little()
            .encoded_size(&repr(vec![2], DataType::String))
            .unwrap_err();
        assert!(matches!(e, Error::IncompatibleRepresentation { .. }));
    }

    /// SPEC-NOTES checklist 53: a bool byte other than 0 reads as true, on every decode path.
    #[test]
    #[allow(clippy::single_range_in_vec_init)]
    fn nonzero_bool_bytes_read_as_true() {
        let r = repr(vec![4], DataType::Bool);
        let codec = BytesCodec::new(None);
        let stored = Bytes::from_static(&[0, 1, 2, 0xff]);
        let expected = [0u8, 1, 1, 1];
        let decoded = codec.decode(stored.clone(), &r).unwrap();
        assert_eq!(decoded.into_fixed("test").unwrap(), &expected[..]);
        let mut out = [9u8; 4];
        codec.decode_into(stored.clone(), &r, &mut out).unwrap();
        assert_eq!(out, expected);
        let mut data = stored.to_vec();
        codec.decode_in_place(&mut data, &r).unwrap();
        assert_eq!(data, expected);
        let mut part = [9u8; 2];
        let region = zarr_core::Region::try_new(vec![2..4]).unwrap();
        codec
            .partial_decode_into(stored.clone(), &r, &region, &mut part)
            .unwrap();
        assert_eq!(part, [1, 1]);
        assert_eq!(codec.decode_unchanged(&stored, &r).unwrap(), None);
        assert_eq!(
            codec.decode_unchanged(&expected, &r).unwrap(),
            Some(&expected[..])
        );
    }

    #[test]
    fn configuration_is_checked() {
        let bad = ExtensionObject::with_configuration(
            "bytes",
            config::map([("endian", Value::from("middle"))]),
        );
        assert!(BytesCodec::from_metadata(&bad).is_err());
        let extra = ExtensionObject::with_configuration(
            "bytes",
            config::map([("order", Value::from("C"))]),
        );
        let e = BytesCodec::from_metadata(&extra).unwrap_err();
        assert!(e.to_string().contains("unknown key `order`"), "{e}");
    }

    #[test]
    fn swaps() {
        for width in [2usize, 3, 4, 8, 16] {
            let src: Vec<u8> = (0..width as u8 * 3).collect();
            let mut dst = vec![0; src.len()];
            swap_copy(&src, &mut dst, width);
            let mut in_place = src.clone();
            swap_in_place(&mut in_place, width);
            assert_eq!(dst, in_place);
            let expected: Vec<u8> = src
                .chunks(width)
                .flat_map(|c| c.iter().rev().copied())
                .collect();
            assert_eq!(dst, expected);
        }
    }
}
