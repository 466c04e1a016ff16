//! The `packbits` codec registered in zarr-extensions: each element stored in the bits it
//! needs (one for `bool`, four for `int4`, ...), or in a chosen range of its bits.

use bytes::Bytes;
use serde_json::Value;
use zarr_core::{DataType, ExtensionObject};

use crate::array_bytes::ArrayBytes;
use crate::codec::ArrayToBytesCodec;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::representation::ChunkRepresentation;

/// Where the `packbits` codec records how many padding bits end the last byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PaddingEncoding {
    /// Not recorded (`"none"`, the default): the chunk shape says how many elements there are.
    #[default]
    None,
    /// In a byte before the packed bits (`"first_byte"`; `"start_byte"` is read too).
    FirstByte,
    /// In a byte after the packed bits (`"last_byte"`; `"end_byte"` is read too).
    LastByte,
}

impl PaddingEncoding {
    fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::FirstByte => "first_byte",
            Self::LastByte => "last_byte",
        }
    }

    fn extra_bytes(self) -> usize {
        usize::from(self != Self::None)
    }
}

/// The `packbits` codec of zarr-extensions (array->bytes), as zarrs writes it.
///
/// Every element becomes `k` bits: the bits `first_bit..=last_bit` (counted from the least
/// significant bit; by default all `N` bits) of each of its components, where `N` is 1 for
/// `bool`, 2 for `int2`/`uint2`, 4 for `int4`/`uint4`/`float4_e2m1fn`, 6 for the `float6_*`
/// types and the width of the type otherwise (complex numbers have two components of half
/// the width). The bits of the elements, in C order, form one sequence that fills each byte
/// from its least significant bit, padded with zero bits to a whole byte; with
/// `padding_encoding` `"first_byte"` or `"last_byte"`, a byte holding the number of padding
/// bits comes before or after it. Decoding shifts the bits back to `first_bit` and extends
/// signed integers (`int*`) from `last_bit`, other types with zeros.
///
/// Not to be confused with [`PackBitsCodec`](crate::PackBitsCodec), numcodecs' array->array
/// codec for `bool` (`numcodecs.packbits`), which fills each byte from its most significant
/// bit.
///
/// ```
/// use zarr_codecs::{ArrayBytes, ArrayToBytesCodec, BitPackingCodec, ChunkRepresentation, PaddingEncoding};
/// use zarr_core::{DataType, FillValue};
///
/// // Five int4 values in three bytes (two to a byte), after a byte saying 4 bits are padding.
/// let codec = BitPackingCodec::new(PaddingEncoding::FirstByte, None, None)?;
/// let repr = ChunkRepresentation::try_new(vec![5], DataType::Int4, FillValue::new(vec![0]))?;
/// let values: Vec<u8> = [-8i8, 7, -1, 0, 3].iter().map(|&v| v as u8).collect();
/// let packed = codec.encode(ArrayBytes::fixed(values.clone()), &repr)?;
/// assert_eq!(packed[..], [4, 0x78, 0x0f, 0x03]);
/// assert_eq!(codec.decode(packed, &repr)?.as_fixed().unwrap()[..], values[..]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BitPackingCodec {
    padding_encoding: PaddingEncoding,
    first_bit: Option<u32>,
    last_bit: Option<u32>,
}

/// How a data type's elements are made of components.
#[derive(Debug, Clone, Copy)]
struct Components {
    /// `N`: the bits of one component.
    bits: u32,
    /// 1, or 2 for complex numbers.
    count: usize,
    /// The bytes of one component in memory (1 for the types of fewer than 8 bits).
    bytes: usize,
    /// Whether decoding extends the sign.
    signed: bool,
}

fn components(data_type: &DataType) -> Option<Components> {
    let of = |bits: u32, count: usize, signed: bool| Components {
        bits,
        count,
        bytes: bits.div_ceil(8) as usize,
        signed,
    };
    Some(match data_type {
        DataType::Bool => of(1, 1, false),
        DataType::Int2 => of(2, 1, true),
        DataType::UInt2 => of(2, 1, false),
        DataType::Int4 => of(4, 1, true),
        DataType::UInt4 => of(4, 1, false),
        DataType::MiniFloat(format) => of(format.bits(), 1, false),
        DataType::Int8 => of(8, 1, true),
        DataType::Int16 => of(16, 1, true),
        DataType::Int32 => of(32, 1, true),
        DataType::Int64 => of(64, 1, true),
        DataType::UInt8 => of(8, 1, false),
        DataType::UInt16 | DataType::Float16 | DataType::BFloat16 => of(16, 1, false),
        DataType::UInt32 | DataType::Float32 => of(32, 1, false),
        DataType::UInt64 | DataType::Float64 => of(64, 1, false),
        DataType::Complex64 => of(32, 2, false),
        DataType::Complex128 => of(64, 2, false),
        DataType::ComplexFloat(component) => {
            let bits = match component.data_type() {
                DataType::MiniFloat(format) => format.bits(),
                _ => 8 * component.size() as u32,
            };
            of(bits, 2, false)
        }
        _ => return None,
    })
}

/// The codec bound to a chunk's data type.
struct Plan {
    components: Components,
    first_bit: u32,
    /// Bits kept per component.
    width: u32,
    /// Components in the chunk.
    count: usize,
    /// Bytes of packed bits (without the padding byte).
    packed: usize,
    /// Padding bits at the end of the last packed byte.
    padding: u8,
}

impl Plan {
    fn last_bit(&self) -> u32 {
        self.first_bit + self.width - 1
    }
}

impl BitPackingCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "packbits";

    /// A codec keeping the bits `first_bit..=last_bit` of each component (`None`: from bit 0,
    /// up to the component's last bit).
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] if `last_bit` is below `first_bit`, or either is 64 or
    /// more.
    pub fn new(
        padding_encoding: PaddingEncoding,
        first_bit: Option<u32>,
        last_bit: Option<u32>,
    ) -> Result<Self> {
        for (key, bit) in [("first_bit", first_bit), ("last_bit", last_bit)] {
            if let Some(bit) = bit
                && bit >= 64
            {
                return Err(Error::config(
                    Self::NAME,
                    format!("`{key}` {bit} is beyond the widest component (64 bits)"),
                ));
            }
        }
        if let (Some(first), Some(last)) = (first_bit, last_bit)
            && last < first
        {
            return Err(Error::config(
                Self::NAME,
                format!("`last_bit` {last} is below `first_bit` {first}"),
            ));
        }
        Ok(Self {
            padding_encoding,
            first_bit,
            last_bit,
        })
    }

    /// Parse `{"name": "packbits", "configuration": {"padding_encoding": ..., "first_bit":
    /// ..., "last_bit": ...}}` (every member optional; `null` bits mean the defaults). The
    /// names of the extension's schema, `start_byte`/`end_byte` and
    /// `start_bit`/`end_bit`, are read too.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for an unknown key or value, or bits out of order.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(
            metadata,
            &[
                "padding_encoding",
                "first_bit",
                "last_bit",
                "start_bit",
                "end_bit",
            ],
        )?;
        let padding_encoding = match config.get("padding_encoding") {
            None | Some(Value::Null) => PaddingEncoding::None,
            Some(value) => match config.str("padding_encoding", value)? {
                "none" => PaddingEncoding::None,
                "first_byte" | "start_byte" => PaddingEncoding::FirstByte,
                "last_byte" | "end_byte" => PaddingEncoding::LastByte,
                _ => {
                    return Err(config.error(
                        "padding_encoding",
                        "\"none\", \"first_byte\" or \"last_byte\"",
                        value,
                    ));
                }
            },
        };
        let bit = |keys: [&str; 2]| -> Result<Option<u32>> {
            let mut found = None;
            for key in keys {
                match config.get(key) {
                    None | Some(Value::Null) => {}
                    Some(value) if found.is_some() => {
                        return Err(config.error(key, "absent when its alias is given", value));
                    }
                    Some(value) => {
                        let bit = config.uint(key, value)?;
                        found = Some(u32::try_from(bit).unwrap_or(u32::MAX));
                    }
                }
            }
            Ok(found)
        };
        Self::new(
            padding_encoding,
            bit(["first_bit", "start_bit"])?,
            bit(["last_bit", "end_bit"])?,
        )
    }

    fn plan(&self, decoded: &ChunkRepresentation) -> Result<Plan> {
        let data_type = decoded.data_type();
        let components = components(data_type).ok_or_else(|| {
            Error::incompatible(
                Self::NAME,
                format!("packs bool, integer and floating-point elements, not `{data_type}`"),
            )
        })?;
        let first_bit = self.first_bit.unwrap_or(0);
        let last_bit = self.last_bit.unwrap_or(components.bits - 1);
        if last_bit >= components.bits {
            return Err(Error::incompatible(
                Self::NAME,
                format!(
                    "`last_bit` {last_bit} is beyond the {} bits of a `{data_type}` component",
                    components.bits
                ),
            ));
        }
        if last_bit < first_bit {
            return Err(Error::incompatible(
                Self::NAME,
                format!("`first_bit` {first_bit} is beyond the last bit {last_bit}"),
            ));
        }
        let width = last_bit - first_bit + 1;
        let count = decoded
            .num_elements_usize()?
            .checked_mul(components.count)
            .ok_or_else(|| Error::incompatible(Self::NAME, "the chunk is too large"))?;
        let bits = (count as u128) * u128::from(width);
        let packed = usize::try_from(bits.div_ceil(8))
            .map_err(|_| Error::incompatible(Self::NAME, "the chunk is too large"))?;
        Ok(Plan {
            components,
            first_bit,
            width,
            count,
            packed,
            padding: ((8 - bits % 8) % 8) as u8,
        })
    }

    /// Whether the codec is the `bytes` codec in little-endian order for this plan, on this
    /// machine: every bit kept, whole bytes, memory already little-endian.
    fn is_plain_copy(plan: &Plan) -> bool {
        cfg!(target_endian = "little")
            && plan.components.bits.is_multiple_of(8)
            && plan.first_bit == 0
            && plan.width == plan.components.bits
    }
}

/// Read component `i` (of `bytes` bytes, native order) as an unsigned value.
fn read_component(data: &[u8], i: usize, bytes: usize) -> u64 {
    let mut buf = [0u8; 8];
    let src = &data[i * bytes..(i + 1) * bytes];
    if cfg!(target_endian = "little") {
        buf[..bytes].copy_from_slice(src);
        u64::from_le_bytes(buf)
    } else {
        buf[8 - bytes..].copy_from_slice(src);
        u64::from_be_bytes(buf)
    }
}

/// Write the low `bytes` bytes of `value` as component `i` (native order).
fn write_component(data: &mut [u8], i: usize, bytes: usize, value: u64) {
    let dst = &mut data[i * bytes..(i + 1) * bytes];
    if cfg!(target_endian = "little") {
        dst.copy_from_slice(&value.to_le_bytes()[..bytes]);
    } else {
        dst.copy_from_slice(&value.to_be_bytes()[8 - bytes..]);
    }
}

fn low_bits(width: u32) -> u64 {
    if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

impl ArrayToBytesCodec for BitPackingCodec {
    fn to_metadata(&self) -> ExtensionObject {
        let mut config = serde_json::Map::new();
        config.insert(
            "padding_encoding".into(),
            self.padding_encoding.name().into(),
        );
        config.insert("first_bit".into(), self.first_bit.into());
        config.insert("last_bit".into(), self.last_bit.into());
        ExtensionObject::with_configuration(Self::NAME, config)
    }

    fn encoded_size(&self, decoded: &ChunkRepresentation) -> Result<Option<u64>> {
        let plan = self.plan(decoded)?;
        Ok(Some(
            (plan.packed + self.padding_encoding.extra_bytes()) as u64,
        ))
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<Bytes> {
        let plan = self.plan(decoded)?;
        array.validate_for(Self::NAME, decoded)?;
        let values = array.into_fixed(Self::NAME)?;
        let extra = self.padding_encoding.extra_bytes();
        let mut out = Vec::with_capacity(plan.packed + extra);
        if self.padding_encoding == PaddingEncoding::FirstByte {
            out.push(plan.padding);
        }
        if Self::is_plain_copy(&plan) {
            out.extend_from_slice(&values);
        } else {
            let mask = low_bits(plan.width);
            let bytes = plan.components.bytes;
            // Bits waiting to be written, the oldest in the least significant place.
            let mut pending: u128 = 0;
            let mut pending_bits = 0u32;
            for i in 0..plan.count {
                let bits = (read_component(&values, i, bytes) >> plan.first_bit) & mask;
                pending |= u128::from(bits) << pending_bits;
                pending_bits += plan.width;
                while pending_bits >= 8 {
                    out.push(pending as u8);
                    pending >>= 8;
                    pending_bits -= 8;
                }
            }
            if pending_bits > 0 {
                out.push(pending as u8);
            }
        }
        if self.padding_encoding == PaddingEncoding::LastByte {
            out.push(plan.padding);
        }
        debug_assert_eq!(out.len(), plan.packed + extra);
        Ok(Bytes::from(out))
    }

    fn decode(&self, bytes: Bytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        let plan = self.plan(decoded)?;
        let mut out = crate::zeroed_bytes(decoded.fixed_size_usize()?)?;
        self.unpack(&plan, &bytes, &mut out)?;
        Ok(ArrayBytes::fixed(out))
    }

    fn decode_into(
        &self,
        bytes: Bytes,
        decoded: &ChunkRepresentation,
        out: &mut [u8],
    ) -> Result<()> {
        let plan = self.plan(decoded)?;
        let expected = decoded.fixed_size_usize()?;
        if out.len() != expected {
            return Err(Error::output_size(expected, out.len()));
        }
        self.unpack(&plan, &bytes, out)
    }
}

impl BitPackingCodec {
    /// Check the encoded length and padding byte, then unpack into `out` (the whole chunk).
    fn unpack(&self, plan: &Plan, encoded: &[u8], out: &mut [u8]) -> Result<()> {
        let expected = plan.packed + self.padding_encoding.extra_bytes();
        if encoded.len() != expected {
            return Err(Error::DecodedSizeMismatch {
                codec: Self::NAME.into(),
                expected: format!(
                    "{expected} bytes for {} components of {} bits",
                    plan.count, plan.width
                ),
                found: encoded.len() as u64,
            });
        }
        let (packed, recorded) = match self.padding_encoding {
            PaddingEncoding::None => (encoded, None),
            PaddingEncoding::FirstByte => (&encoded[1..], Some(encoded[0])),
            PaddingEncoding::LastByte => (&encoded[..plan.packed], Some(encoded[plan.packed])),
        };
        if let Some(recorded) = recorded
            && recorded != plan.padding
        {
            return Err(Error::corrupt(
                Self::NAME,
                format!(
                    "the chunk records {recorded} padding bits, but its elements leave {}",
                    plan.padding
                ),
            ));
        }
        if Self::is_plain_copy(plan) {
            out.copy_from_slice(packed);
            return Ok(());
        }
        let mask = low_bits(plan.width);
        let bytes = plan.components.bytes;
        // The sign bit's place once shifted back, and the shift that extends it.
        let extend = 63 - plan.last_bit();
        let mut pending: u128 = 0;
        let mut pending_bits = 0u32;
        let mut next = packed.iter();
        for i in 0..plan.count {
            while pending_bits < plan.width {
                // The length was checked: every component's bits are there.
                let byte = next.next().copied().unwrap_or(0);
                pending |= u128::from(byte) << pending_bits;
                pending_bits += 8;
            }
            let mut value = ((pending as u64) & mask) << plan.first_bit;
            pending >>= plan.width;
            pending_bits -= plan.width;
            if plan.components.signed {
                value = (((value << extend) as i64) >> extend) as u64;
            }
            write_component(out, i, bytes, value);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use zarr_core::{FillValue, MiniFloat};

    use super::*;

    fn repr(shape: Vec<u64>, data_type: DataType) -> ChunkRepresentation {
        let size = data_type.fixed_size().unwrap();
        ChunkRepresentation::try_new(shape, data_type, FillValue::new(vec![0; size])).unwrap()
    }

    fn codec(padding: PaddingEncoding, first: Option<u32>, last: Option<u32>) -> BitPackingCodec {
        BitPackingCodec::new(padding, first, last).unwrap()
    }

    fn round_trip(c: &BitPackingCodec, r: &ChunkRepresentation, values: &[u8]) -> Bytes {
        let packed = c.encode(ArrayBytes::fixed(values.to_vec()), r).unwrap();
        assert_eq!(
            c.encoded_size(r).unwrap(),
            Some(packed.len() as u64),
            "{c:?} {r:?}"
        );
        let back = c.decode(packed.clone(), r).unwrap();
        assert_eq!(back.as_fixed().unwrap()[..], values[..], "{c:?} {r:?}");
        let mut into = vec![0xa5; values.len()];
        c.decode_into(packed.clone(), r, &mut into).unwrap();
        assert_eq!(into, values, "{c:?} {r:?}");
        packed
    }

    #[test]
    fn bools_fill_each_byte_from_its_least_significant_bit() {
        let r = repr(vec![10], DataType::Bool);
        let values = [1u8, 0, 1, 1, 0, 0, 0, 1, 1, 0];
        let packed = round_trip(&codec(PaddingEncoding::None, None, None), &r, &values);
        assert_eq!(packed[..], [0b1000_1101, 0b0000_0001]);
        let packed = round_trip(&codec(PaddingEncoding::FirstByte, None, None), &r, &values);
        assert_eq!(packed[..], [6, 0b1000_1101, 0b0000_0001]);
        let packed = round_trip(&codec(PaddingEncoding::LastByte, None, None), &r, &values);
        assert_eq!(packed[..], [0b1000_1101, 0b0000_0001, 6]);
    }

    #[test]
    fn sub_byte_types_sign_extend_into_their_byte() {
        let r = repr(vec![2, 3], DataType::Int2);
        let values: Vec<u8> = [-2i8, -1, 0, 1, 1, -2].iter().map(|&v| v as u8).collect();
        let packed = round_trip(&BitPackingCodec::default(), &r, &values);
        // 2 bits each: 10 11 00 01 | 01 10, least significant first.
        assert_eq!(packed[..], [0b0100_1110, 0b0000_1001]);
        let r = repr(vec![3], DataType::UInt4);
        let packed = round_trip(&BitPackingCodec::default(), &r, &[15, 0, 9]);
        assert_eq!(packed[..], [0x0f, 0x09]);
        let r = repr(vec![4], DataType::MiniFloat(MiniFloat::F6E3M2FN));
        let packed = round_trip(&BitPackingCodec::default(), &r, &[0x3f, 0x01, 0x20, 0x15]);
        assert_eq!(packed.len(), 3);
    }

    #[test]
    fn a_bit_range_keeps_those_bits_and_extends_signs_from_the_last() {
        // uint16, bits 4..=11: the middle byte of each value.
        let c = codec(PaddingEncoding::None, Some(4), Some(11));
        let r = repr(vec![3], DataType::UInt16);
        let values: Vec<u8> = [0x0ab0u16, 0x0ff0, 0x0010]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let packed = round_trip(&c, &r, &values);
        assert_eq!(packed[..], [0xab, 0xff, 0x01]);
        // Bits outside the range are dropped.
        let noisy: Vec<u8> = [0xfab1u16].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let r1 = repr(vec![1], DataType::UInt16);
        let back = c
            .decode(c.encode(ArrayBytes::fixed(noisy), &r1).unwrap(), &r1)
            .unwrap();
        assert_eq!(back.as_fixed().unwrap()[..], 0x0ab0u16.to_ne_bytes());
        // int32 keeping bits 0..=11: the sign comes from bit 11, across all four bytes.
        let c = codec(PaddingEncoding::None, None, Some(11));
        let r = repr(vec![3], DataType::Int32);
        let values: Vec<u8> = [-2048i32, 2047, -1]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let packed = round_trip(&c, &r, &values);
        assert_eq!(packed.len(), 5); // 36 bits
        // Complex numbers: both parts, each its own range (here the upper halves, which
        // hold these values whole).
        let c = codec(PaddingEncoding::FirstByte, Some(16), Some(31));
        let r = repr(vec![2], DataType::Complex64);
        let values: Vec<u8> = [1.5f32, -2.0, 0.25, 65536.0]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let packed = round_trip(&c, &r, &values);
        assert_eq!(packed.len(), 1 + 8);
    }

    #[test]
    fn whole_bytes_are_the_bytes_codec_in_little_endian() {
        let r = repr(vec![3], DataType::Float64);
        let values: Vec<u8> = [1.0f64, -0.0, f64::NAN]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let packed = round_trip(&BitPackingCodec::default(), &r, &values);
        let le: Vec<u8> = [1.0f64, -0.0, f64::NAN]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(packed[..], le[..]);
    }

    #[test]
    fn every_type_and_padding_round_trips() {
        let types = [
            DataType::Bool,
            DataType::Int2,
            DataType::UInt2,
            DataType::Int4,
            DataType::UInt4,
            DataType::MiniFloat(MiniFloat::F4E2M1FN),
            DataType::MiniFloat(MiniFloat::F6E2M3FN),
            DataType::MiniFloat(MiniFloat::E4M3FN),
            DataType::Int8,
            DataType::UInt16,
            DataType::Int64,
            DataType::BFloat16,
            DataType::Float32,
            DataType::Complex128,
        ];
        for data_type in types {
            let comps = components(&data_type).unwrap();
            for n in [0u64, 1, 7, 9, 33] {
                let r = repr(vec![n], data_type.clone());
                // Values that fit the type: random bits, narrowed and sign-extended.
                let mut values = Vec::new();
                for i in 0..n as usize * comps.count {
                    let raw = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                    let v = raw & low_bits(comps.bits);
                    let v = if comps.signed {
                        let s = 64 - comps.bits;
                        (((v << s) as i64) >> s) as u64
                    } else {
                        v
                    };
                    let v = if data_type == DataType::Bool {
                        v & 1
                    } else {
                        v
                    };
                    let mut bytes = vec![0u8; comps.bytes];
                    write_component(&mut bytes, 0, comps.bytes, v);
                    values.extend(bytes);
                }
                for padding in [
                    PaddingEncoding::None,
                    PaddingEncoding::FirstByte,
                    PaddingEncoding::LastByte,
                ] {
                    round_trip(&codec(padding, None, None), &r, &values);
                }
            }
        }
    }

    #[test]
    fn bad_chunks_and_configurations_are_errors() {
        let c = codec(PaddingEncoding::FirstByte, None, None);
        let r = repr(vec![10], DataType::Bool);
        let e = c.decode(Bytes::from_static(&[6, 0]), &r).unwrap_err();
        assert!(matches!(e, Error::DecodedSizeMismatch { .. }), "{e:?}");
        let e = c.decode(Bytes::from_static(&[5, 0, 0]), &r).unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }), "{e:?}");
        let strings = ChunkRepresentation::try_new(
            vec![2],
            DataType::String,
            FillValue::new(Vec::<u8>::new()),
        );
        if let Ok(strings) = strings {
            assert!(matches!(
                c.encoded_size(&strings),
                Err(Error::IncompatibleRepresentation { .. })
            ));
        }
        let wide = codec(PaddingEncoding::None, None, Some(8));
        assert!(matches!(
            wide.encoded_size(&repr(vec![2], DataType::UInt8)),
            Err(Error::IncompatibleRepresentation { .. })
        ));
        let late = codec(PaddingEncoding::None, Some(9), None);
        assert!(late.encoded_size(&repr(vec![2], DataType::UInt8)).is_err());
        assert!(BitPackingCodec::new(PaddingEncoding::None, Some(3), Some(2)).is_err());

        let meta = |config: serde_json::Value| {
            ExtensionObject::with_configuration(
                BitPackingCodec::NAME,
                config.as_object().unwrap().clone(),
            )
        };
        let parsed = BitPackingCodec::from_metadata(&meta(serde_json::json!(
            {"padding_encoding": "start_byte", "start_bit": 2, "end_bit": null}
        )))
        .unwrap();
        assert_eq!(parsed, codec(PaddingEncoding::FirstByte, Some(2), None));
        for bad in [
            serde_json::json!({"padding_encoding": "middle"}),
            serde_json::json!({"first_bit": -1}),
            serde_json::json!({"first_bit": 1, "start_bit": 1}),
            serde_json::json!({"bitorder": "big"}),
        ] {
            assert!(
                BitPackingCodec::from_metadata(&meta(bad.clone())).is_err(),
                "{bad}"
            );
        }
        let c = codec(PaddingEncoding::LastByte, Some(1), Some(5));
        assert_eq!(BitPackingCodec::from_metadata(&c.to_metadata()).unwrap(), c);
        assert_eq!(
            BitPackingCodec::from_metadata(&ExtensionObject::new(BitPackingCodec::NAME)).unwrap(),
            BitPackingCodec::default()
        );
    }
}
