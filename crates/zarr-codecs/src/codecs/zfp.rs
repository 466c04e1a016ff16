//! The `zfp` and `numcodecs.zfpy` codecs: chunks compressed by zfp, LLNL's compressed format
//! for 1- to 4-dimensional arrays of floating-point and integer numbers.
//!
//! Both run the pure-Rust [`zfp_rs`], which writes byte for byte what the C library
//! (`libzfp` 1.0.1, the library of the `zfpy` wheel) writes on little-endian machines. What
//! this module adds is the Zarr side: which chunk shapes and data types each codec takes,
//! their configurations, and checks that turn a stream that does not fit the chunk into an
//! error.

use bytes::Bytes;
use serde_json::{Map, Value};
use zarr_core::{DataType, ExtensionObject};
use zfp_rs::{
    ZfpBitStream, ZfpConfig, ZfpDecompressionError, ZfpDimensionality, ZfpField, ZfpFieldMetadata,
    ZfpFieldMut, ZfpHeaderMask, ZfpScalar, ZfpScalarType, ZfpStreamAlignment,
};

use crate::array_bytes::ArrayBytes;
use crate::codec::ArrayToBytesCodec;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::representation::ChunkRepresentation;

/// How zfp trades size for accuracy: its five modes
/// (<https://zfp.readthedocs.io/en/latest/modes.html>).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ZfpMode {
    /// Every block of 4^d values takes the same number of bits: `rate` bits per value.
    FixedRate {
        /// Compressed bits per value.
        rate: f64,
    },
    /// Each block keeps `precision` bit planes (uncompressed bits per value).
    FixedPrecision {
        /// Bit planes kept, 1 to 64 (0 means 64).
        precision: u32,
    },
    /// Every value is kept within `tolerance` of the original (floats only).
    FixedAccuracy {
        /// The largest absolute error allowed.
        tolerance: f64,
    },
    /// Lossless: every value decodes to the same bits, NaN and infinities included.
    Reversible,
    /// zfp's four parameters as they are.
    Expert {
        /// The fewest bits a block takes.
        min_bits: u32,
        /// The most bits a block takes.
        max_bits: u32,
        /// The most bit planes kept, 1 to 64.
        max_prec: u32,
        /// The smallest bit plane kept, as a power of two.
        min_exp: i32,
    },
}

impl ZfpMode {
    /// zfp's parameters for values of type `scalar` in blocks of `dims` dimensions (only
    /// fixed-rate mode depends on it).
    fn config(
        self,
        codec: &str,
        scalar: ZfpScalarType,
        dims: ZfpDimensionality,
    ) -> Result<ZfpConfig> {
        match self {
            Self::FixedRate { rate } => {
                ZfpConfig::fixed_rate(rate, scalar, dims, ZfpStreamAlignment::Unaligned).map_err(
                    |e| {
                        Error::config(
                            codec,
                            format!("`rate` {rate} is not a rate zfp can use for this array ({e})"),
                        )
                    },
                )
            }
            Self::FixedPrecision { precision } => Ok(ZfpConfig::fixed_precision(precision)),
            Self::FixedAccuracy { tolerance } => Ok(ZfpConfig::fixed_accuracy(tolerance)),
            Self::Reversible => Ok(ZfpConfig::reversible()),
            Self::Expert {
                min_bits,
                max_bits,
                max_prec,
                min_exp,
            } => ZfpConfig::expert(min_bits, max_bits, max_prec, min_exp)
                .map_err(|e| Error::config(codec, format!("invalid expert parameters: {e}"))),
        }
    }

    fn is_lossy_for_floats(self) -> bool {
        !matches!(self, Self::Reversible)
    }
}

/// How a Zarr data type is stored by zfp: as one of zfp's four scalar types, with the
/// promotions the zarr-extensions `zfp` specification gives for narrower integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
}

impl Kind {
    fn of(data_type: &DataType) -> Option<Self> {
        Some(match data_type {
            DataType::Int8 => Self::I8,
            DataType::UInt8 => Self::U8,
            DataType::Int16 => Self::I16,
            DataType::UInt16 => Self::U16,
            DataType::Int32 => Self::I32,
            DataType::UInt32 => Self::U32,
            DataType::Int64 => Self::I64,
            DataType::UInt64 => Self::U64,
            DataType::Float32 => Self::F32,
            DataType::Float64 => Self::F64,
            _ => return None,
        })
    }

    fn scalar(self) -> ZfpScalarType {
        match self {
            Self::I8 | Self::U8 | Self::I16 | Self::U16 | Self::I32 | Self::U32 => {
                ZfpScalarType::I32
            }
            Self::I64 | Self::U64 => ZfpScalarType::I64,
            Self::F32 => ZfpScalarType::F32,
            Self::F64 => ZfpScalarType::F64,
        }
    }

    fn size(self) -> usize {
        match self {
            Self::I8 | Self::U8 => 1,
            Self::I16 | Self::U16 => 2,
            Self::I32 | Self::U32 | Self::F32 => 4,
            Self::I64 | Self::U64 | Self::F64 => 8,
        }
    }
}

fn scalar_name(scalar: ZfpScalarType) -> &'static str {
    match scalar {
        ZfpScalarType::I32 => "int32",
        ZfpScalarType::I64 => "int64",
        ZfpScalarType::F32 => "float32",
        ZfpScalarType::F64 => "float64",
    }
}

/// zfp's dimensions (`[nx, ny, nz, nw]`, fastest varying first, zero-padded) of a C-order
/// chunk `shape` of 1 to 4 dimensions.
fn zfp_dims(codec: &str, shape: &[u64]) -> Result<[usize; 4]> {
    if shape.is_empty() || shape.len() > 4 {
        return Err(Error::incompatible(
            codec,
            format!(
                "zfp compresses chunks of 1 to 4 dimensions, not {}",
                shape.len()
            ),
        ));
    }
    let mut dims = [0usize; 4];
    for (dim, &n) in dims.iter_mut().zip(shape.iter().rev()) {
        *dim = usize::try_from(n)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| Error::incompatible(codec, format!("chunk dimension {n}")))?;
    }
    Ok(dims)
}

fn dimensionality(dims: &[usize; 4]) -> ZfpDimensionality {
    match dims.iter().filter(|&&n| n > 0).count() {
        1 => ZfpDimensionality::D1,
        2 => ZfpDimensionality::D2,
        3 => ZfpDimensionality::D3,
        _ => ZfpDimensionality::D4,
    }
}

/// The chunk's values as zfp scalars, narrower integers promoted as `zfp_promote_*` does.
/// `uint32` and `uint64` are stored as `int32` and `int64`, as zarrs stores them; a value
/// that does not fit is an error here rather than clamped.
enum Values {
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

fn read_values(codec: &str, kind: Kind, bytes: &[u8], data_type: &DataType) -> Result<Values> {
    fn each<const N: usize, T>(bytes: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
        bytes
            .chunks_exact(N)
            .map(|c| f(c.try_into().unwrap_or([0; N])))
            .collect()
    }
    let too_large = |index: usize, max: u64| Error::InvalidElement {
        codec: codec.to_owned(),
        index: index as u64,
        data_type: data_type.to_string(),
        reason: format!("zfp stores it as a signed integer, and only values up to {max} fit"),
    };
    Ok(match kind {
        Kind::I8 => Values::I32(each(bytes, |b: [u8; 1]| {
            i32::from(i8::from_ne_bytes(b)) << 23
        })),
        Kind::U8 => Values::I32(each(bytes, |b: [u8; 1]| (i32::from(b[0]) - 0x80) << 23)),
        Kind::I16 => Values::I32(each(bytes, |b| i32::from(i16::from_ne_bytes(b)) << 15)),
        Kind::U16 => Values::I32(each(bytes, |b| {
            (i32::from(u16::from_ne_bytes(b)) - 0x8000) << 15
        })),
        Kind::I32 => Values::I32(each(bytes, i32::from_ne_bytes)),
        Kind::U32 => {
            let values = each(bytes, u32::from_ne_bytes);
            if let Some(i) = values.iter().position(|&v| i32::try_from(v).is_err()) {
                return Err(too_large(i, i32::MAX as u64));
            }
            Values::I32(values.into_iter().map(|v| v as i32).collect())
        }
        Kind::I64 => Values::I64(each(bytes, i64::from_ne_bytes)),
        Kind::U64 => {
            let values = each(bytes, u64::from_ne_bytes);
            if let Some(i) = values.iter().position(|&v| i64::try_from(v).is_err()) {
                return Err(too_large(i, i64::MAX as u64));
            }
            Values::I64(values.into_iter().map(|v| v as i64).collect())
        }
        Kind::F32 => Values::F32(each(bytes, f32::from_ne_bytes)),
        Kind::F64 => Values::F64(each(bytes, f64::from_ne_bytes)),
    })
}

/// Refuse NaN and infinities for a lossy mode: zfp's block transform cannot represent them,
/// and would store other values in their place (and in their neighbours').
fn check_finite(codec: &str, values: &Values, data_type: &DataType) -> Result<()> {
    let bad = match values {
        Values::F32(v) => v.iter().position(|x| !x.is_finite()),
        Values::F64(v) => v.iter().position(|x| !x.is_finite()),
        Values::I32(_) | Values::I64(_) => None,
    };
    match bad {
        Some(index) => Err(Error::InvalidElement {
            codec: codec.to_owned(),
            index: index as u64,
            data_type: data_type.to_string(),
            reason: "zfp's lossy modes store finite values only (NaN and infinities need \
                     the reversible mode)"
                .into(),
        }),
        None => Ok(()),
    }
}

fn out_of_memory(bytes: usize) -> Error {
    Error::OutOfMemory {
        what: "a zfp stream".into(),
        bytes,
    }
}

fn compress<T: ZfpScalar>(
    codec: &str,
    values: &[T],
    dims: [usize; 4],
    config: &ZfpConfig,
    header: bool,
) -> Result<Vec<u8>> {
    let failed = |reason: String| Error::Compression {
        codec: codec.to_owned(),
        reason,
    };
    let field = ZfpField::new(values, dims).map_err(|e| failed(e.to_string()))?;
    let capacity = config
        .maximum_size(T::SCALAR_TYPE, dims)
        .ok_or_else(|| failed(format!("no stream can hold a field of {dims:?}")))?;
    let mut stream = ZfpBitStream::new(capacity).map_err(|_| out_of_memory(capacity))?;
    if header {
        stream
            .write_header(config, &field.metadata(), ZfpHeaderMask::FULL)
            .map_err(|e| failed(e.to_string()))?;
    }
    let size = stream
        .compress(config, &field)
        .map_err(|e| failed(e.to_string()))?;
    let mut bytes = stream.into_bytes().map_err(|_| out_of_memory(size))?;
    bytes.truncate(size);
    Ok(bytes)
}

/// Decompress the rest of `stream` (positioned after any header) into `count` values.
fn decompress<T: ZfpScalar>(
    codec: &str,
    stream: &mut ZfpBitStream,
    stream_len: usize,
    dims: [usize; 4],
    config: &ZfpConfig,
) -> Result<Vec<T>> {
    let count = dims.iter().filter(|&&n| n > 0).product::<usize>();
    let mut values = vec![T::default(); count];
    let mut field = ZfpFieldMut::new(&mut values, dims)
        .map_err(|e| Error::corrupt(codec, format!("field {dims:?}: {e}")))?;
    let end = stream.decompress(config, &mut field).map_err(|e| match e {
        ZfpDecompressionError::Truncated { .. } => {
            Error::truncated(codec, "the stream ends inside its blocks")
        }
        other => Error::corrupt(codec, other.to_string()),
    })?;
    if end > stream_len {
        return Err(Error::truncated(
            codec,
            format!("the stream's blocks end at byte {end}, after its {stream_len} bytes"),
        ));
    }
    if end < stream_len {
        return Err(Error::corrupt(
            codec,
            format!(
                "the chunk's blocks end at byte {end} of a {stream_len}-byte stream (another \
                 shape, type or mode wrote it)"
            ),
        ));
    }
    Ok(values)
}

/// Open `bytes` as a zfp stream: whole 64-bit words, as zfp writes them.
fn open_stream(codec: &str, bytes: &[u8]) -> Result<ZfpBitStream> {
    if !bytes.len().is_multiple_of(8) {
        return Err(Error::truncated(
            codec,
            format!(
                "zfp streams are whole 8-byte words, this one is {} bytes",
                bytes.len()
            ),
        ));
    }
    ZfpBitStream::from_bytes(bytes).map_err(|_| out_of_memory(bytes.len()))
}

fn write_out<T: Copy, const N: usize>(values: &[T], out: &mut [u8], f: impl Fn(T) -> [u8; N]) {
    for (v, slot) in values.iter().zip(out.chunks_exact_mut(N)) {
        slot.copy_from_slice(&f(*v));
    }
}

/// Decode the values of `kind` from `stream` into `out`, demoting promoted integers as
/// `zfp_demote_*` does (clamping to the type's range).
fn decode_kind(
    codec: &str,
    kind: Kind,
    stream: &mut ZfpBitStream,
    stream_len: usize,
    dims: [usize; 4],
    config: &ZfpConfig,
    out: &mut [u8],
) -> Result<()> {
    match kind {
        Kind::I8 | Kind::U8 | Kind::I16 | Kind::U16 | Kind::I32 | Kind::U32 => {
            let v: Vec<i32> = decompress(codec, stream, stream_len, dims, config)?;
            match kind {
                Kind::I8 => write_out(&v, out, |i| [((i >> 23).clamp(-0x80, 0x7f) as i8) as u8]),
                Kind::U8 => write_out(&v, out, |i| [((i >> 23) + 0x80).clamp(0, 0xff) as u8]),
                Kind::I16 => write_out(&v, out, |i| {
                    ((i >> 15).clamp(-0x8000, 0x7fff) as i16).to_ne_bytes()
                }),
                Kind::U16 => write_out(&v, out, |i| {
                    (((i >> 15) + 0x8000).clamp(0, 0xffff) as u16).to_ne_bytes()
                }),
                Kind::U32 => write_out(&v, out, |i| (i.max(0) as u32).to_ne_bytes()),
                _ => write_out(&v, out, i32::to_ne_bytes),
            }
        }
        Kind::I64 => {
            let v: Vec<i64> = decompress(codec, stream, stream_len, dims, config)?;
            write_out(&v, out, i64::to_ne_bytes);
        }
        Kind::U64 => {
            let v: Vec<i64> = decompress(codec, stream, stream_len, dims, config)?;
            write_out(&v, out, |i| (i.max(0) as u64).to_ne_bytes());
        }
        Kind::F32 => {
            let v: Vec<f32> = decompress(codec, stream, stream_len, dims, config)?;
            write_out(&v, out, f32::to_ne_bytes);
        }
        Kind::F64 => {
            let v: Vec<f64> = decompress(codec, stream, stream_len, dims, config)?;
            write_out(&v, out, f64::to_ne_bytes);
        }
    }
    Ok(())
}

/// Encode a chunk's native-order `bytes` (of `kind`, the array's `data_type`, in zfp's
/// `dims`) in `mode`, with zfp's header or without.
fn encode_chunk(
    codec: &str,
    mode: ZfpMode,
    (kind, data_type, dims): (Kind, &DataType, [usize; 4]),
    bytes: &[u8],
    config: &ZfpConfig,
    header: bool,
) -> Result<Bytes> {
    let values = read_values(codec, kind, bytes, data_type)?;
    if mode.is_lossy_for_floats() {
        check_finite(codec, &values, data_type)?;
    }
    let stream = match &values {
        Values::I32(v) => compress(codec, v, dims, config, header),
        Values::I64(v) => compress(codec, v, dims, config, header),
        Values::F32(v) => compress(codec, v, dims, config, header),
        Values::F64(v) => compress(codec, v, dims, config, header),
    }?;
    Ok(stream.into())
}

#[cfg(target_endian = "big")]
fn check_endian(codec: &str) -> Result<()> {
    Err(Error::unsupported(
        codec,
        "zfp streams on big-endian machines (zfp writes 64-bit words in the machine's \
         order, so other machines read them differently)",
    ))
}

#[cfg(target_endian = "little")]
fn check_endian(_codec: &str) -> Result<()> {
    Ok(())
}

// ---------------------------------------------------------------------------------------
// `zfp` (zarrs; zarr-extensions `zarrs.zfp`)
// ---------------------------------------------------------------------------------------

/// The `zfp` codec (array->bytes), registered in zarr-extensions as `zarrs.zfp` and written
/// by zarrs: the chunk compressed by zfp with the parameters of its configuration, and no
/// header (the chunk's shape and data type and the configuration say everything a header
/// would).
///
/// Configuration: `mode` `"fixed_rate"` with `rate`, `"fixed_precision"` with `precision`,
/// `"fixed_accuracy"` with `tolerance` (floats only), `"reversible"`, or `"expert"` with
/// `minbits`, `maxbits`, `maxprec` and `minexp`.
///
/// Chunk shapes: 1 to 4 dimensions; a chunk of more dimensions is compressed without its
/// dimensions of length 1 if at most four remain (a 0-d chunk as one value), as the
/// specification says. Data types: `int32`, `int64`, `float32`, `float64`; `int8`, `uint8`,
/// `int16` and `uint16` promoted to `int32` as zfp's own utility functions do, and `uint32`
/// and `uint64` stored as `int32` and `int64` as zarrs does (values above the signed
/// maximum are an error when writing, where zarrs clamps them).
///
/// Two behaviours follow zarrs for interoperability: the bits per block of `fixed_rate` are
/// `rate` times 64 whatever the chunk's dimensionality (zarrs sizes blocks as 3-D ones),
/// and `fixed_accuracy` is refused for integers.
///
/// Lossy modes cannot store NaN or infinities: writing one is [`Error::InvalidElement`].
///
/// ```
/// use zarr_codecs::{ArrayBytes, ArrayToBytesCodec, ChunkRepresentation, ZfpCodec, ZfpMode};
/// use zarr_core::{DataType, FillValue};
///
/// let repr = ChunkRepresentation::try_new(vec![32, 32], DataType::Float64, FillValue::from(0.0f64))?;
/// let values: Vec<f64> = (0..1024).map(|i| (f64::from(i) * 0.01).sin()).collect();
/// let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
///
/// let codec = ZfpCodec::new(ZfpMode::FixedAccuracy { tolerance: 1e-6 });
/// let encoded = codec.encode(ArrayBytes::fixed(bytes), &repr)?;
/// assert!(encoded.len() < 8 * 1024 / 2);
/// let decoded = codec.decode(encoded, &repr)?;
/// for (v, d) in values.iter().zip(decoded.as_fixed().unwrap().chunks_exact(8)) {
///     assert!((v - f64::from_ne_bytes(d.try_into()?)).abs() <= 1e-6);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZfpCodec {
    mode: ZfpMode,
}

impl ZfpCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "zfp";

    /// The name zarr-extensions registers it under, read as [`ZfpCodec::NAME`].
    pub const ALIAS: &'static str = "zarrs.zfp";

    /// A `zfp` codec in `mode`.
    pub fn new(mode: ZfpMode) -> Self {
        Self { mode }
    }

    /// The codec's mode.
    pub fn mode(&self) -> ZfpMode {
        self.mode
    }

    /// Parse the configuration (zarrs' keys).
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a missing or unknown mode, a missing or invalid
    /// parameter, or an unknown key.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(
            metadata,
            &[
                "mode",
                "rate",
                "precision",
                "tolerance",
                "minbits",
                "maxbits",
                "maxprec",
                "minexp",
            ],
        )?;
        let mode_value = config.required("mode")?;
        let name = config.str("mode", mode_value)?;
        let float = |key: &str| -> Result<f64> {
            let v = config.required(key)?;
            v.as_f64()
                .filter(|x| x.is_finite())
                .ok_or_else(|| config.error(key, "a finite number", v))
        };
        let uint32 = |key: &str| -> Result<u32> {
            let v = config.required(key)?;
            Ok(config.int_in(key, v, 0..=i64::from(u32::MAX))? as u32)
        };
        let (mode, keys): (ZfpMode, &[&str]) = match name {
            "fixed_rate" => {
                let rate = float("rate")?;
                if rate < 0.0 {
                    return Err(config.error("rate", "a non-negative number", &Value::from(rate)));
                }
                (ZfpMode::FixedRate { rate }, &["rate"])
            }
            "fixed_precision" => (
                ZfpMode::FixedPrecision {
                    precision: uint32("precision")?,
                },
                &["precision"],
            ),
            "fixed_accuracy" => (
                ZfpMode::FixedAccuracy {
                    tolerance: float("tolerance")?,
                },
                &["tolerance"],
            ),
            "reversible" => (ZfpMode::Reversible, &[]),
            "expert" => {
                let minexp = config.required("minexp")?;
                let mode = ZfpMode::Expert {
                    min_bits: uint32("minbits")?,
                    max_bits: uint32("maxbits")?,
                    max_prec: uint32("maxprec")?,
                    min_exp: config.int_in(
                        "minexp",
                        minexp,
                        i64::from(i32::MIN)..=i64::from(i32::MAX),
                    )? as i32,
                };
                (mode, &["minbits", "maxbits", "maxprec", "minexp"])
            }
            _ => {
                return Err(config.error(
                    "mode",
                    "\"fixed_rate\", \"fixed_precision\", \"fixed_accuracy\", \"reversible\" \
                     or \"expert\"",
                    mode_value,
                ));
            }
        };
        for key in [
            "rate",
            "precision",
            "tolerance",
            "minbits",
            "maxbits",
            "maxprec",
            "minexp",
        ] {
            if !keys.contains(&key) && config.get(key).is_some() {
                return Err(Error::config(
                    Self::NAME,
                    format!("`{key}` does not belong to mode \"{name}\""),
                ));
            }
        }
        // The expert parameters are checked once here, rather than at the first write.
        mode.config(Self::NAME, ZfpScalarType::F64, ZfpDimensionality::D3)?;
        Ok(Self { mode })
    }

    /// The chunk's zfp dimensions, following zarr-extensions' rule for more than four.
    fn dims(shape: &[u64]) -> Result<[usize; 4]> {
        if shape.len() <= 4 && !shape.is_empty() {
            return zfp_dims(Self::NAME, shape);
        }
        let kept: Vec<u64> = shape.iter().copied().filter(|&n| n != 1).collect();
        match kept.len() {
            0 => zfp_dims(Self::NAME, &[1]),
            1..=4 => zfp_dims(Self::NAME, &kept),
            n => Err(Error::incompatible(
                Self::NAME,
                format!(
                    "zfp compresses at most 4 dimensions longer than 1, this chunk has {n} \
                     ({shape:?})"
                ),
            )),
        }
    }

    /// The data type's zfp storage and the codec's parameters for it.
    fn plan(&self, decoded: &ChunkRepresentation) -> Result<(Kind, [usize; 4], ZfpConfig)> {
        check_endian(Self::NAME)?;
        let kind = Kind::of(decoded.data_type()).ok_or_else(|| {
            Error::incompatible(
                Self::NAME,
                format!(
                    "zfp compresses 8- to 64-bit integers, float32 and float64, not `{}`",
                    decoded.data_type()
                ),
            )
        })?;
        if matches!(self.mode, ZfpMode::FixedAccuracy { .. })
            && !matches!(kind, Kind::F32 | Kind::F64)
        {
            return Err(Error::incompatible(
                Self::NAME,
                format!(
                    "mode \"fixed_accuracy\" is for floats, not `{}` (zarrs refuses it too)",
                    decoded.data_type()
                ),
            ));
        }
        let dims = Self::dims(decoded.shape())?;
        // zarrs sizes fixed-rate blocks as 3-D ones whatever the chunk: so must a reader.
        let config = self
            .mode
            .config(Self::NAME, kind.scalar(), ZfpDimensionality::D3)?;
        Ok((kind, dims, config))
    }
}

impl ArrayToBytesCodec for ZfpCodec {
    fn to_metadata(&self) -> ExtensionObject {
        let mut map = Map::new();
        let mut put = |k: &str, v: Value| {
            map.insert(k.to_owned(), v);
        };
        match self.mode {
            ZfpMode::FixedRate { rate } => {
                put("mode", "fixed_rate".into());
                put("rate", rate.into());
            }
            ZfpMode::FixedPrecision { precision } => {
                put("mode", "fixed_precision".into());
                put("precision", precision.into());
            }
            ZfpMode::FixedAccuracy { tolerance } => {
                put("mode", "fixed_accuracy".into());
                put("tolerance", tolerance.into());
            }
            ZfpMode::Reversible => put("mode", "reversible".into()),
            ZfpMode::Expert {
                min_bits,
                max_bits,
                max_prec,
                min_exp,
            } => {
                put("mode", "expert".into());
                put("minbits", min_bits.into());
                put("maxbits", max_bits.into());
                put("maxprec", max_prec.into());
                put("minexp", min_exp.into());
            }
        }
        ExtensionObject::with_configuration(Self::NAME, map)
    }

    fn encoded_size(&self, decoded: &ChunkRepresentation) -> Result<Option<u64>> {
        self.plan(decoded)?;
        Ok(None)
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<Bytes> {
        let (kind, dims, config) = self.plan(decoded)?;
        array.validate_for(Self::NAME, decoded)?;
        let bytes = array.into_fixed(Self::NAME)?;
        let chunk = (kind, decoded.data_type(), dims);
        encode_chunk(Self::NAME, self.mode, chunk, &bytes, &config, false)
    }

    fn decode(&self, bytes: Bytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        let mut out = crate::zeroed_bytes(decoded.fixed_size_usize()?)?;
        self.decode_into(bytes, decoded, &mut out)?;
        Ok(ArrayBytes::fixed(out))
    }

    fn decode_into(
        &self,
        bytes: Bytes,
        decoded: &ChunkRepresentation,
        out: &mut [u8],
    ) -> Result<()> {
        let (kind, dims, config) = self.plan(decoded)?;
        let size = decoded.fixed_size_usize()?;
        if out.len() != size {
            return Err(Error::output_size(size, out.len()));
        }
        debug_assert!(size.is_multiple_of(kind.size()));
        let mut stream = open_stream(Self::NAME, &bytes)?;
        decode_kind(
            Self::NAME,
            kind,
            &mut stream,
            bytes.len(),
            dims,
            &config,
            out,
        )
    }
}

// ---------------------------------------------------------------------------------------
// `numcodecs.zfpy` (zarr-python with numcodecs' `ZFPY`)
// ---------------------------------------------------------------------------------------

/// numcodecs' mode numbers (zfpy's `mode_fixed_rate`, `mode_fixed_precision`,
/// `mode_fixed_accuracy`).
const ZFPY_FIXED_RATE: i64 = 2;
const ZFPY_FIXED_PRECISION: i64 = 3;
const ZFPY_FIXED_ACCURACY: i64 = 4;

/// The `numcodecs.zfpy` codec (array->bytes): numcodecs' `ZFPY`, as zarr-python 3 writes
/// it in v3 metadata (and Zarr v2 as the compressor `zfpy`). Each chunk is a zfp stream
/// with zfp's full header (magic, the field's type and shape, the mode), as
/// `zfpy.compress_numpy` writes it, so reading needs nothing from the configuration.
///
/// Configuration, numcodecs' keys: `mode` 2 (fixed rate, with `rate`), 3 (fixed precision,
/// with `precision`) or 4 (fixed accuracy, with `tolerance`; the default). As in numcodecs,
/// a negative value of the mode's parameter (the default -1) means zfp's reversible,
/// lossless mode. The other keys numcodecs writes (`compression_kwargs` and the other
/// modes' parameters) are read and kept.
///
/// Chunk shapes: 1 to 4 dimensions (zfpy's limit). Data types: `int32`, `int64`,
/// `float32`, `float64` (zfpy's). Reading checks the header's type and number of values
/// against the chunk's. Lossy modes cannot store NaN or infinities: writing one is
/// [`Error::InvalidElement`].
///
/// ```
/// use zarr_codecs::{ArrayBytes, ArrayToBytesCodec, ChunkRepresentation, ZfpyCodec};
/// use zarr_core::{DataType, FillValue};
///
/// let repr = ChunkRepresentation::try_new(vec![1000], DataType::Int64, FillValue::from(0i64))?;
/// let bytes: Vec<u8> = (0..1000i64).flat_map(|i| (i * i).to_ne_bytes()).collect();
/// let codec = ZfpyCodec::reversible();
/// let encoded = codec.encode(ArrayBytes::fixed(bytes.clone()), &repr)?;
/// assert_eq!(&encoded[..4], b"zfp\x05"); // zfp's header, as zfpy writes it
/// assert_eq!(codec.decode(encoded, &repr)?.as_fixed().unwrap()[..], bytes[..]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ZfpyCodec {
    mode: i64,
    /// The three parameters, `None` where the configuration does not hold them (numcodecs'
    /// default, -1).
    tolerance: Option<f64>,
    rate: Option<f64>,
    precision: Option<i64>,
    /// numcodecs' `compression_kwargs`, kept as read.
    compression_kwargs: Option<Value>,
}

impl ZfpyCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "numcodecs.zfpy";

    fn with_mode(mode: i64) -> Self {
        Self {
            mode,
            tolerance: None,
            rate: None,
            precision: None,
            compression_kwargs: None,
        }
    }

    /// Fixed-accuracy mode: values kept within `tolerance` (floats; integers are kept as
    /// zfp keeps them in this mode, at full precision).
    pub fn fixed_accuracy(tolerance: f64) -> Self {
        Self {
            tolerance: Some(tolerance),
            ..Self::with_mode(ZFPY_FIXED_ACCURACY)
        }
    }

    /// Fixed-rate mode: `rate` compressed bits per value.
    pub fn fixed_rate(rate: f64) -> Self {
        Self {
            rate: Some(rate),
            ..Self::with_mode(ZFPY_FIXED_RATE)
        }
    }

    /// Fixed-precision mode: `precision` bit planes kept.
    pub fn fixed_precision(precision: u32) -> Self {
        Self {
            precision: Some(i64::from(precision)),
            ..Self::with_mode(ZFPY_FIXED_PRECISION)
        }
    }

    /// zfp's reversible (lossless) mode, as numcodecs configures it: fixed accuracy with a
    /// tolerance of -1.
    pub fn reversible() -> Self {
        Self::fixed_accuracy(-1.0)
    }

    /// The zfp mode chunks are written in.
    pub fn mode(&self) -> ZfpMode {
        match (self.mode, self.tolerance, self.rate, self.precision) {
            (ZFPY_FIXED_RATE, _, Some(rate), _) if rate >= 0.0 => ZfpMode::FixedRate { rate },
            (ZFPY_FIXED_PRECISION, _, _, Some(p)) if p >= 0 => ZfpMode::FixedPrecision {
                precision: u32::try_from(p).unwrap_or(u32::MAX),
            },
            (ZFPY_FIXED_ACCURACY, Some(tolerance), _, _) if tolerance >= 0.0 => {
                ZfpMode::FixedAccuracy { tolerance }
            }
            _ => ZfpMode::Reversible,
        }
    }

    /// Parse numcodecs' configuration.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a mode other than 2, 3 or 4 (numcodecs cannot
    /// encode with them), a parameter of the wrong type, or an unknown key.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(
            metadata,
            &[
                "mode",
                "tolerance",
                "rate",
                "precision",
                "compression_kwargs",
            ],
        )?;
        let given = |key: &str| config.get(key).filter(|v| !v.is_null());
        let mode = match given("mode") {
            None => ZFPY_FIXED_ACCURACY,
            Some(v) => config.int_in("mode", v, ZFPY_FIXED_RATE..=ZFPY_FIXED_ACCURACY)?,
        };
        let number = |key: &str| -> Result<Option<f64>> {
            given(key)
                .map(|v| {
                    v.as_f64()
                        .filter(|x| x.is_finite())
                        .ok_or_else(|| config.error(key, "a finite number", v))
                })
                .transpose()
        };
        let precision = given("precision")
            .map(|v| config.int_in("precision", v, -1..=i64::from(u32::MAX)))
            .transpose()?;
        let compression_kwargs = match given("compression_kwargs") {
            Some(v) if !v.is_object() => {
                return Err(config.error("compression_kwargs", "an object", v));
            }
            v => v.cloned(),
        };
        Ok(Self {
            mode,
            tolerance: number("tolerance")?,
            rate: number("rate")?,
            precision,
            compression_kwargs,
        })
    }

    fn plan(&self, decoded: &ChunkRepresentation) -> Result<(Kind, [usize; 4])> {
        check_endian(Self::NAME)?;
        let kind = Kind::of(decoded.data_type())
            .filter(|k| matches!(k, Kind::I32 | Kind::I64 | Kind::F32 | Kind::F64))
            .ok_or_else(|| {
                Error::incompatible(
                    Self::NAME,
                    format!(
                        "zfpy compresses int32, int64, float32 and float64, not `{}`",
                        decoded.data_type()
                    ),
                )
            })?;
        let dims = zfp_dims(Self::NAME, decoded.shape())?;
        // zfp's header holds each dimension in 48, 24, 16 or 12 bits (1 to 4 dimensions).
        ZfpFieldMetadata {
            scalar_type: kind.scalar(),
            dims,
        }
        .to_bits()
        .map_err(|_| {
            Error::incompatible(
                Self::NAME,
                format!(
                    "zfp's header cannot hold the chunk shape {:?}",
                    decoded.shape()
                ),
            )
        })?;
        Ok((kind, dims))
    }
}

impl ArrayToBytesCodec for ZfpyCodec {
    fn to_metadata(&self) -> ExtensionObject {
        let mut map = Map::new();
        map.insert("mode".into(), self.mode.into());
        // The mode's own parameter always (-1 if unset, as numcodecs), the others if read.
        let own = |mode| (self.mode == mode).then_some(-1.0);
        let params = [
            (
                "tolerance",
                self.tolerance.or(own(ZFPY_FIXED_ACCURACY)).map(Value::from),
            ),
            ("rate", self.rate.or(own(ZFPY_FIXED_RATE)).map(Value::from)),
            (
                "precision",
                self.precision
                    .or(own(ZFPY_FIXED_PRECISION).map(|_| -1))
                    .map(Value::from),
            ),
        ];
        for (key, value) in params {
            if let Some(value) = value {
                map.insert(key.into(), value);
            }
        }
        if let Some(v) = &self.compression_kwargs {
            map.insert("compression_kwargs".into(), v.clone());
        }
        ExtensionObject::with_configuration(Self::NAME, map)
    }

    fn encoded_size(&self, decoded: &ChunkRepresentation) -> Result<Option<u64>> {
        self.plan(decoded)?;
        Ok(None)
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<Bytes> {
        let (kind, dims) = self.plan(decoded)?;
        array.validate_for(Self::NAME, decoded)?;
        let bytes = array.into_fixed(Self::NAME)?;
        let mode = self.mode();
        // zfpy sizes fixed-rate blocks by the array's dimensionality.
        let config = mode.config(Self::NAME, kind.scalar(), dimensionality(&dims))?;
        let chunk = (kind, decoded.data_type(), dims);
        encode_chunk(Self::NAME, mode, chunk, &bytes, &config, true)
    }

    fn decode(&self, bytes: Bytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        let mut out = crate::zeroed_bytes(decoded.fixed_size_usize()?)?;
        self.decode_into(bytes, decoded, &mut out)?;
        Ok(ArrayBytes::fixed(out))
    }

    fn decode_into(
        &self,
        bytes: Bytes,
        decoded: &ChunkRepresentation,
        out: &mut [u8],
    ) -> Result<()> {
        let (kind, dims) = self.plan(decoded)?;
        let size = decoded.fixed_size_usize()?;
        if out.len() != size {
            return Err(Error::output_size(size, out.len()));
        }
        let mut stream = open_stream(Self::NAME, &bytes)?;
        let header = stream
            .read_header(ZfpHeaderMask::FULL)
            .map_err(|e| Error::corrupt(Self::NAME, format!("zfp header: {e}")))?;
        let (Some(meta), Some(config)) = (header.metadata, header.config) else {
            return Err(Error::corrupt(Self::NAME, "zfp header is incomplete"));
        };
        if meta.scalar_type != kind.scalar() {
            return Err(Error::corrupt(
                Self::NAME,
                format!(
                    "the stream holds {} values, the array's data type is `{}`",
                    scalar_name(meta.scalar_type),
                    decoded.data_type()
                ),
            ));
        }
        // zarr-python reshapes what zfpy decodes to the chunk's shape: any shape of the
        // same number of values is the same C-order values.
        let stored: u128 = meta
            .dims
            .iter()
            .filter(|&&n| n > 0)
            .map(|&n| n as u128)
            .product();
        let expected: u128 = dims
            .iter()
            .filter(|&&n| n > 0)
            .map(|&n| n as u128)
            .product();
        if stored != expected {
            return Err(Error::DecodedSizeMismatch {
                codec: Self::NAME.into(),
                expected: format!("{expected} values"),
                found: u64::try_from(stored).unwrap_or(u64::MAX),
            });
        }
        decode_kind(
            Self::NAME,
            kind,
            &mut stream,
            bytes.len(),
            meta.dims,
            &config,
            out,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codecs::unhex;
    use serde_json::json;
    use zarr_core::FillValue;

    fn repr(shape: &[u64], data_type: DataType) -> ChunkRepresentation {
        let fill = FillValue::default_for(&data_type);
        ChunkRepresentation::try_new(shape.to_vec(), data_type, fill).unwrap()
    }

    fn ne<T: Copy, const N: usize>(values: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
        values.iter().flat_map(|&v| f(v)).collect()
    }

    fn f64s(bytes: &[u8]) -> Vec<f64> {
        bytes
            .chunks_exact(8)
            .map(|c| f64::from_ne_bytes(c.try_into().unwrap()))
            .collect()
    }

    fn metadata(name: &str, config: Value) -> ExtensionObject {
        ExtensionObject::with_configuration(name, config.as_object().unwrap().clone())
    }

    /// `zfpy.compress_numpy` (zfpy 1.0.1, libzfp 1.0.1) output for arrays built the same
    /// way in NumPy: ours must be the same bytes, and decode.
    #[test]
    fn zfpy_streams_are_byte_identical_to_libzfp() {
        // np.arange(8).astype("f8"), tolerance=0.01
        let values: Vec<f64> = (0..8).map(f64::from).collect();
        let stream = "7a667005730000000000c0ca0368a700000014a0d50500000000000000000000";
        let r = repr(&[8], DataType::Float64);
        let codec = ZfpyCodec::fixed_accuracy(0.01);
        let encoded = codec
            .encode(ArrayBytes::fixed(ne(&values, f64::to_ne_bytes)), &r)
            .unwrap();
        assert_eq!(encoded[..], unhex(stream)[..]);
        let back = f64s(codec.decode(encoded, &r).unwrap().as_fixed().unwrap());
        for (v, b) in values.iter().zip(&back) {
            assert!((v - b).abs() <= 0.01, "{v} {b}");
        }

        // (np.sin(np.arange(30) * 0.3) * 100).astype("f4").reshape(5, 6), rate=8
        let values: Vec<f32> = (0..30)
            .map(|i| ((f64::from(i) * 0.3).sin() * 100.0) as f32)
            .collect();
        let r = repr(&[5, 6], DataType::Float32);
        let encoded = ZfpyCodec::fixed_rate(8.0)
            .encode(ArrayBytes::fixed(ne(&values, f32::to_ne_bytes)), &r)
            .unwrap();
        assert_eq!(
            encoded[..],
            unhex(
                "7a667005560000400000f0070d05108008012840088ad810980099880d092aa2028e4888ca04288c\
                 220c68840dadcc14094004493082400201241a400dad465004015010400014444010011000000000"
            )[..]
        );

        // (np.arange(7) ** 3 - 50).astype("i4"), no parameter: reversible.
        let values: Vec<i32> = (0..7).map(|i: i32| i.pow(3) - 50).collect();
        let r = repr(&[7], DataType::Int32);
        let bytes = ne(&values, i32::to_ne_bytes);
        let encoded = ZfpyCodec::reversible()
            .encode(ArrayBytes::fixed(bytes.clone()), &r)
            .unwrap();
        assert_eq!(
            encoded[..],
            unhex("7a66700560000000000000881f000060b1195a3e00001008c629d20a00000000")[..]
        );
        let back = ZfpyCodec::reversible().decode(encoded, &r).unwrap();
        assert_eq!(back.as_fixed().unwrap()[..], bytes[..]);

        // (np.arange(60) * 1000003 - 7).astype("i8").reshape(3, 4, 5), precision=20
        let values: Vec<i64> = (0..60).map(|i| i * 1_000_003 - 7).collect();
        let r = repr(&[3, 4, 5], DataType::Int64);
        let encoded = ZfpyCodec::fixed_precision(20)
            .encode(ArrayBytes::fixed(ne(&values, i64::to_ne_bytes)), &r)
            .unwrap();
        assert_eq!(
            encoded[..],
            unhex("7a6670054900300020003081000000000000000000000000")[..]
        );

        // np.array([nan, inf, -0.0, 1e-40, 3.5, -2, 7, 1e30, -inf], "f4"), reversible: every
        // bit kept, NaN, infinities, a subnormal and negative zero included.
        let values = [
            f32::NAN,
            f32::INFINITY,
            -0.0,
            1e-40,
            3.5,
            -2.0,
            7.0,
            1e30,
            f32::NEG_INFINITY,
        ];
        let r = repr(&[9], DataType::Float32);
        let bytes = ne(&values, f32::to_ne_bytes);
        let encoded = ZfpyCodec::reversible()
            .encode(ArrayBytes::fixed(bytes.clone()), &r)
            .unwrap();
        assert_eq!(
            encoded[..],
            unhex(
                "7a6670058200000000000088ff0b000090ff0100000111101011010089ff2d1101b0c6071111001\
                 001111101915cff03800200000000a000"
            )[..]
        );
        let back = ZfpyCodec::reversible().decode(encoded, &r).unwrap();
        assert_eq!(back.as_fixed().unwrap()[..], bytes[..]);
    }

    #[test]
    fn a_4d_chunk_with_partial_blocks_matches_libzfp() {
        // np.cos(np.arange(120) * 0.1).reshape(2, 3, 4, 5), tolerance=1e-3: the first bytes
        // (header and first blocks) and the length of zfpy's stream.
        let values: Vec<f64> = (0..120).map(|i| (f64::from(i) * 0.1).cos()).collect();
        let r = repr(&[2, 3, 4, 5], DataType::Float64);
        let codec = ZfpyCodec::fixed_accuracy(1e-3);
        let encoded = codec
            .encode(ArrayBytes::fixed(ne(&values, f64::to_ne_bytes)), &r)
            .unwrap();
        let expected_start = unhex(
            "7a6670054f000320000190ca01480010001800000000002000000004010000a002000000000000500000",
        );
        assert_eq!(encoded[..expected_start.len()], expected_start[..]);
        assert_eq!(encoded.len(), 832);
        let back = f64s(codec.decode(encoded, &r).unwrap().as_fixed().unwrap());
        for (v, b) in values.iter().zip(&back) {
            assert!((v - b).abs() <= 1e-3, "{v} {b}");
        }
    }

    /// `zfpy.compress_numpy(..., write_header=False)`: the `zfp` codec's chunks are the same
    /// streams without the header.
    #[test]
    fn zfp_streams_are_libzfp_streams_without_a_header() {
        let values: Vec<f64> = (0..8).map(f64::from).collect();
        let encoded = ZfpCodec::new(ZfpMode::FixedAccuracy { tolerance: 0.01 })
            .encode(
                ArrayBytes::fixed(ne(&values, f64::to_ne_bytes)),
                &repr(&[8], DataType::Float64),
            )
            .unwrap();
        assert_eq!(encoded[..], unhex("0368a700000014a0d505000000000000")[..]);

        // zarrs' fixed rate: rate 8 is 512 bits per block (64 x 8) even for a 2-D chunk,
        // which zfpy writes for rate 32 on a 2-D array.
        let values: Vec<f32> = (0..30)
            .map(|i| ((f64::from(i) * 0.3).sin() * 100.0) as f32)
            .collect();
        let r = repr(&[5, 6], DataType::Float32);
        let codec = ZfpCodec::new(ZfpMode::FixedRate { rate: 8.0 });
        let encoded = codec
            .encode(ArrayBytes::fixed(ne(&values, f32::to_ne_bytes)), &r)
            .unwrap();
        assert_eq!(encoded.len(), 4 * 512 / 8); // four blocks of 4x4
        assert_eq!(
            encoded[..64],
            unhex(
                "0d05108008012840088ad8109800998888c8ba144281eac159c43ccdbf99247a9fbb2f74f76c0ee2\
                 b34e0914fb5aea28df998adfafebb04a757df91e00000000"
            )[..]
        );
        assert!(codec.decode(encoded, &r).is_ok());

        // int16 promoted to int32 (<< 15), reversible.
        let values: [i16; 6] = [-32768, -1, 0, 1, 32767, 1234];
        let r = repr(&[6], DataType::Int16);
        let codec = ZfpCodec::new(ZfpMode::Reversible);
        let bytes = ne(&values, i16::to_ne_bytes);
        let encoded = codec.encode(ArrayBytes::fixed(bytes.clone()), &r).unwrap();
        assert_eq!(
            encoded[..],
            unhex("f07a0000000000006481f500404c8c4c4c8c0e0000000000")[..]
        );
        assert_eq!(
            codec.decode(encoded, &r).unwrap().as_fixed().unwrap()[..],
            bytes[..]
        );

        // uint8 promoted ((v - 128) << 23), 12 bit planes: exact for 8-bit values.
        let values: [u8; 5] = [0, 1, 127, 128, 255];
        let r = repr(&[5], DataType::UInt8);
        let codec = ZfpCodec::new(ZfpMode::FixedPrecision { precision: 12 });
        let encoded = codec
            .encode(ArrayBytes::fixed(values.to_vec()), &r)
            .unwrap();
        assert_eq!(encoded[..], unhex("7c2a0088806200100000000000000000")[..]);
        assert_eq!(
            codec.decode(encoded, &r).unwrap().as_fixed().unwrap()[..],
            values[..]
        );
    }

    #[test]
    fn every_type_round_trips_reversibly() {
        let n: i64 = 5 * 7 * 3;
        let shape = [5, 7, 3];
        let cases: Vec<(DataType, Vec<u8>)> = vec![
            (
                DataType::Int8,
                (0..n).map(|i| (i * 37 % 256) as u8).collect(),
            ),
            (
                DataType::UInt8,
                (0..n).map(|i| (i * 91 % 256) as u8).collect(),
            ),
            (
                DataType::Int16,
                (0..n)
                    .flat_map(|i| ((i * 7919) as i16).to_ne_bytes())
                    .collect(),
            ),
            (
                DataType::UInt16,
                (0..n)
                    .flat_map(|i| ((i * 7919) as u16).to_ne_bytes())
                    .collect(),
            ),
            (
                DataType::Int32,
                (0..n)
                    .flat_map(|i| (i as i32 * 99_991 - 5_000_000).to_ne_bytes())
                    .collect(),
            ),
            (
                DataType::UInt32,
                (0..n)
                    .flat_map(|i| (i as u32 * 19_999_999).to_ne_bytes())
                    .collect(),
            ),
            (
                DataType::Int64,
                (0..n)
                    .flat_map(|i| (i * -1_234_567_891).to_ne_bytes())
                    .collect(),
            ),
            (
                DataType::UInt64,
                (0..n)
                    .flat_map(|i| (i as u64 * 987_654_321_987).to_ne_bytes())
                    .collect(),
            ),
            (
                DataType::Float32,
                (0..n)
                    .flat_map(|i| (i as f32 / 7.0).to_ne_bytes())
                    .collect(),
            ),
            (
                DataType::Float64,
                (0..n)
                    .flat_map(|i| (i as f64).ln_1p().to_ne_bytes())
                    .collect(),
            ),
        ];
        for (data_type, bytes) in cases {
            let r = repr(&shape, data_type.clone());
            let codec = ZfpCodec::new(ZfpMode::Reversible);
            let encoded = codec.encode(ArrayBytes::fixed(bytes.clone()), &r).unwrap();
            let back = codec.decode(encoded, &r).unwrap();
            assert_eq!(back.as_fixed().unwrap()[..], bytes[..], "{data_type}");
        }
    }

    #[test]
    fn chunk_shapes() {
        let codec = ZfpCodec::new(ZfpMode::Reversible);
        // More than four dimensions: those of length 1 are dropped; a 0-d chunk is one value.
        for shape in [
            &[2u64, 1, 3, 1, 4, 1][..],
            &[1, 1, 1, 1, 1],
            &[],
            &[3, 1, 2, 2, 2],
        ] {
            let r = repr(shape, DataType::Float64);
            let count = shape.iter().product::<u64>() as usize;
            let bytes: Vec<u8> = (0..count).flat_map(|i| (i as f64).to_ne_bytes()).collect();
            let encoded = codec.encode(ArrayBytes::fixed(bytes.clone()), &r).unwrap();
            assert_eq!(
                codec.decode(encoded, &r).unwrap().as_fixed().unwrap()[..],
                bytes[..],
                "{shape:?}"
            );
        }
        let e = codec
            .encoded_size(&repr(&[2, 2, 2, 2, 2], DataType::Float64))
            .unwrap_err();
        assert!(
            matches!(e, Error::IncompatibleRepresentation { .. }),
            "{e:?}"
        );
        // zfpy takes 1 to 4 dimensions, and shapes its header can hold.
        for shape in [&[][..], &[1, 1, 1, 1, 1], &[4097, 2, 2, 2]] {
            let e = ZfpyCodec::reversible()
                .encoded_size(&repr(shape, DataType::Float32))
                .unwrap_err();
            assert!(
                matches!(e, Error::IncompatibleRepresentation { .. }),
                "{e:?}"
            );
        }
        // Data types.
        for data_type in [DataType::Bool, DataType::Float16, DataType::Complex64] {
            assert!(codec.encoded_size(&repr(&[4], data_type)).is_err());
        }
        for data_type in [DataType::Int16, DataType::UInt32, DataType::Float16] {
            assert!(
                ZfpyCodec::reversible()
                    .encoded_size(&repr(&[4], data_type))
                    .is_err()
            );
        }
        let e = ZfpCodec::new(ZfpMode::FixedAccuracy { tolerance: 1.0 })
            .encoded_size(&repr(&[4], DataType::Int32))
            .unwrap_err();
        assert!(
            matches!(e, Error::IncompatibleRepresentation { .. }),
            "{e:?}"
        );
    }

    #[test]
    fn values_zfp_cannot_store_are_refused_by_index() {
        let r = repr(&[4], DataType::Float64);
        let bytes = ne(&[1.0, 2.0, f64::NAN, 4.0], f64::to_ne_bytes);
        for codec in [
            Box::new(ZfpyCodec::fixed_accuracy(0.1)) as Box<dyn ArrayToBytesCodec>,
            Box::new(ZfpCodec::new(ZfpMode::FixedRate { rate: 16.0 })),
        ] {
            let e = codec
                .encode(ArrayBytes::fixed(bytes.clone()), &r)
                .unwrap_err();
            assert!(matches!(e, Error::InvalidElement { index: 2, .. }), "{e:?}");
        }
        let r = repr(&[3], DataType::UInt32);
        let e = ZfpCodec::new(ZfpMode::Reversible)
            .encode(
                ArrayBytes::fixed(ne(&[1u32, u32::MAX, 2], u32::to_ne_bytes)),
                &r,
            )
            .unwrap_err();
        assert!(matches!(e, Error::InvalidElement { index: 1, .. }), "{e:?}");
    }

    #[test]
    fn streams_that_do_not_fit_the_chunk_are_errors() {
        let values: Vec<f64> = (0..64).map(|i| f64::from(i).sqrt()).collect();
        let bytes = ne(&values, f64::to_ne_bytes);
        let r = repr(&[8, 8], DataType::Float64);
        let zfpy = ZfpyCodec::fixed_precision(30);
        let encoded = zfpy.encode(ArrayBytes::fixed(bytes.clone()), &r).unwrap();
        // Another shape of the same count is the same values (zarr-python reshapes).
        let flat = zfpy.decode(encoded.clone(), &repr(&[64], DataType::Float64));
        assert_eq!(
            flat.unwrap().as_fixed().unwrap()[..],
            zfpy.decode(encoded.clone(), &r)
                .unwrap()
                .as_fixed()
                .unwrap()[..]
        );
        let e = zfpy
            .decode(encoded.clone(), &repr(&[8, 9], DataType::Float64))
            .unwrap_err();
        assert!(matches!(e, Error::DecodedSizeMismatch { .. }), "{e:?}");
        let e = zfpy
            .decode(encoded.clone(), &repr(&[8, 8], DataType::Int64))
            .unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }), "{e:?}");
        let mut longer = encoded.to_vec();
        longer.extend_from_slice(&[0; 8]);
        let e = zfpy.decode(longer.into(), &r).unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }), "{e:?}");
        let e = zfpy
            .decode(encoded.slice(..encoded.len() - 8), &r)
            .unwrap_err();
        assert!(matches!(e, Error::Truncated { .. }), "{e:?}");
        let e = zfpy
            .decode(encoded.slice(..encoded.len() - 3), &r)
            .unwrap_err();
        assert!(matches!(e, Error::Truncated { .. }), "{e:?}");
        let mut bad_magic = encoded.to_vec();
        bad_magic[0] = b'Z';
        let e = zfpy.decode(bad_magic.into(), &r).unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }), "{e:?}");

        // Without a header, a chunk of another shape is seen by where its blocks end (unless
        // the extra blocks are empty ones that fit in the last word's padding).
        let zfp = ZfpCodec::new(ZfpMode::FixedPrecision { precision: 30 });
        let encoded = zfp.encode(ArrayBytes::fixed(bytes), &r).unwrap();
        let e = zfp
            .decode(encoded.clone(), &repr(&[40, 40], DataType::Float64))
            .unwrap_err();
        assert!(matches!(e, Error::Truncated { .. }), "{e:?}");
        assert!(
            zfp.decode(encoded, &repr(&[4, 4], DataType::Float64))
                .is_err()
        );
    }

    #[test]
    fn damaged_streams_never_panic() {
        let values: Vec<f32> = (0..300).map(|i| (i as f32 * 0.05).sin()).collect();
        let bytes = ne(&values, f32::to_ne_bytes);
        let r = repr(&[3, 10, 10], DataType::Float32);
        let codecs: [Box<dyn ArrayToBytesCodec>; 4] = [
            Box::new(ZfpyCodec::fixed_accuracy(1e-4)),
            Box::new(ZfpyCodec::reversible()),
            Box::new(ZfpCodec::new(ZfpMode::FixedRate { rate: 10.0 })),
            Box::new(ZfpCodec::new(ZfpMode::FixedPrecision { precision: 14 })),
        ];
        for codec in codecs {
            let encoded = codec.encode(ArrayBytes::fixed(bytes.clone()), &r).unwrap();
            for cut in (0..encoded.len()).step_by(3) {
                assert!(codec.decode(encoded.slice(..cut), &r).is_err(), "cut {cut}");
            }
            crate::codecs::assert_bit_flips_decode_safely(
                &*codec,
                &encoded,
                &r,
                &[0x01, 0x10, 0x80],
            );
        }
    }

    #[test]
    fn configurations() {
        for config in [
            json!({"mode": "fixed_rate", "rate": 12.5}),
            json!({"mode": "fixed_precision", "precision": 20}),
            json!({"mode": "fixed_accuracy", "tolerance": 0.001}),
            json!({"mode": "reversible"}),
            json!({"mode": "expert", "minbits": 1, "maxbits": 16658, "maxprec": 30,
                   "minexp": -20}),
        ] {
            let codec = ZfpCodec::from_metadata(&metadata("zfp", config.clone())).unwrap();
            let written = codec.to_metadata();
            assert_eq!(written.name, "zfp");
            assert_eq!(Value::Object(written.configuration.unwrap()), config);
            // The zarr-extensions name reads the same codec.
            assert_eq!(
                ZfpCodec::from_metadata(&metadata(ZfpCodec::ALIAS, config)).unwrap(),
                codec
            );
        }
        for bad in [
            json!({}),
            json!({"mode": "lossless"}),
            json!({"mode": "fixed_rate"}),
            json!({"mode": "fixed_rate", "rate": -1}),
            json!({"mode": "fixed_rate", "rate": "8"}),
            json!({"mode": "fixed_precision", "precision": -3}),
            json!({"mode": "reversible", "tolerance": 0.1}),
            json!({"mode": "expert", "minbits": 100, "maxbits": 10, "maxprec": 30,
                   "minexp": -20}),
            json!({"mode": "expert", "minbits": 1, "maxbits": 10, "maxprec": 65,
                   "minexp": -20}),
            json!({"mode": "reversible", "write_header": true}),
        ] {
            let e = ZfpCodec::from_metadata(&metadata("zfp", bad.clone()));
            assert!(
                matches!(e, Err(Error::InvalidConfiguration { .. })),
                "{bad}: {e:?}"
            );
        }

        // numcodecs: what zarr-python writes, and what numcodecs' get_config holds.
        let read = |config: Value| ZfpyCodec::from_metadata(&metadata(ZfpyCodec::NAME, config));
        let codec = read(json!({"mode": 4, "tolerance": 0.01})).unwrap();
        assert_eq!(codec, ZfpyCodec::fixed_accuracy(0.01));
        assert_eq!(codec.mode(), ZfpMode::FixedAccuracy { tolerance: 0.01 });
        let full = json!({"mode": 2, "compression_kwargs": {"rate": 8}, "tolerance": -1,
                          "rate": 8, "precision": -1});
        let codec = read(full.clone()).unwrap();
        assert_eq!(codec.mode(), ZfpMode::FixedRate { rate: 8.0 });
        assert_eq!(
            Value::Object(codec.to_metadata().configuration.unwrap()),
            json!({"mode": 2, "tolerance": -1.0, "rate": 8.0, "precision": -1,
                   "compression_kwargs": {"rate": 8}})
        );
        assert_eq!(read(json!({})).unwrap().mode(), ZfpMode::Reversible);
        assert_eq!(
            read(json!({"mode": 3, "precision": -1})).unwrap().mode(),
            ZfpMode::Reversible
        );
        assert_eq!(
            Value::Object(ZfpyCodec::reversible().to_metadata().configuration.unwrap()),
            json!({"mode": 4, "tolerance": -1.0})
        );
        for bad in [
            json!({"mode": 1}),
            json!({"mode": 5}),
            json!({"mode": "fixed_rate"}),
            json!({"mode": 2, "rate": "8"}),
            json!({"mode": 3, "precision": 2.5}),
            json!({"compression_kwargs": 3}),
            json!({"level": 3}),
        ] {
            assert!(
                matches!(read(bad.clone()), Err(Error::InvalidConfiguration { .. })),
                "{bad}"
            );
        }
    }
}
