//! The `zstd` codec: RFC 8878 Zstandard frames.

use std::cell::RefCell;
use std::io;

use bytes::Bytes;
use serde_json::Value;
use zarr_core::ExtensionObject;
use zstd::bulk::{Compressor, Decompressor};
use zstd::zstd_safe::{self, CParameter};

use super::{read_bounded, read_exact_bounded};
use crate::codec::{BytesToBytesCodec, ExpectedSize};
use crate::config::{self, Config};
use crate::error::{Error, Result};

/// The smallest level zstd accepts.
const MIN_LEVEL: i32 = -131_072;
/// The largest level zstd accepts.
const MAX_LEVEL: i32 = 22;

thread_local! {
    // One compression and one decompression context per thread, reused for every chunk: a
    // context holds hundreds of KiB of tables, and allocating one per chunk (with the
    // allocator returning it to the kernel each time) halves small-chunk throughput.
    static COMPRESSOR: RefCell<Option<Compressor<'static>>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<Decompressor<'static>>> = const { RefCell::new(None) };
}

/// Run `f` with this thread's compression context (or a fresh one if it is in use).
fn with_compressor<R>(f: impl FnOnce(&mut Compressor<'static>) -> io::Result<R>) -> io::Result<R> {
    COMPRESSOR.with(|cell| match cell.try_borrow_mut() {
        Ok(mut slot) => {
            let compressor = match &mut *slot {
                Some(c) => c,
                None => slot.insert(Compressor::new(0)?),
            };
            f(compressor)
        }
        Err(_) => f(&mut Compressor::new(0)?),
    })
}

/// Run `f` with this thread's decompression context (or a fresh one if it is in use).
fn with_decompressor<R>(
    f: impl FnOnce(&mut Decompressor<'static>) -> io::Result<R>,
) -> io::Result<R> {
    DECOMPRESSOR.with(|cell| match cell.try_borrow_mut() {
        Ok(mut slot) => {
            let decompressor = match &mut *slot {
                Some(d) => d,
                None => slot.insert(Decompressor::new()?),
            };
            f(decompressor)
        }
        Err(_) => f(&mut Decompressor::new()?),
    })
}

/// The `zstd` codec (bytes->bytes): Zstandard frames (RFC 8878).
///
/// Configuration: `level`, an integer from -131072 to 22 where 0 means zstd's default
/// (required); `checksum`, a boolean (optional, default `false`; written only when `true`,
/// as the registry asks, and read in both forms).
///
/// The encoder writes one frame that records its content size. The decoder reads frames
/// with and without a content size, with and without a checksum (verified when present), and
/// several frames in a row. When every frame records its size, the total is checked against
/// the chunk's size *before* anything is allocated (a frame claiming 2^40 bytes for a 4 KiB
/// chunk is an [`Error::DecodedSizeLimit`] error); otherwise the frames are streamed into a
/// buffer that never grows past the chunk's size.
///
/// Compression and decompression contexts are kept per thread and reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ZstdCodec {
    level: i32,
    checksum: bool,
}

impl ZstdCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "zstd";

    /// A zstd codec.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a level outside -131072..=22.
    pub fn try_new(level: i32, checksum: bool) -> Result<Self> {
        if !(MIN_LEVEL..=MAX_LEVEL).contains(&level) {
            return Err(Error::config(
                Self::NAME,
                format!(
                    "`level` must be an integer from {MIN_LEVEL} to {MAX_LEVEL}, found {level}"
                ),
            ));
        }
        Ok(Self { level, checksum })
    }

    /// The compression level.
    pub fn level(&self) -> i32 {
        self.level
    }

    /// Whether frames carry a checksum.
    pub fn checksum(&self) -> bool {
        self.checksum
    }

    /// Parse `{"name": "zstd", "configuration": {"level": ..., "checksum": ...}}`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] if `level` is missing or out of range, `checksum` is not
    /// a boolean, or for an unknown key.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(metadata, &["level", "checksum"])?;
        let level = config.int_in(
            "level",
            config.required("level")?,
            i64::from(MIN_LEVEL)..=i64::from(MAX_LEVEL),
        )?;
        let checksum = match config.get("checksum") {
            None => false,
            Some(v) => config.bool("checksum", v)?,
        };
        Self::try_new(level as i32, checksum)
    }

    fn io_error(source: io::Error) -> Error {
        Error::Decompression {
            codec: Self::NAME.into(),
            source,
        }
    }

    /// The total content size of the frames in `data`, if every frame records it.
    ///
    /// # Errors
    /// [`Error::Corrupt`] if `data` is not a sequence of complete zstd frames.
    fn content_size(data: &[u8]) -> Result<Option<u64>> {
        if data.is_empty() {
            return Err(Error::truncated(Self::NAME, "no zstd frame (empty input)"));
        }
        let mut rest = data;
        let mut total = Some(0u64);
        while !rest.is_empty() {
            let frame_len = zstd_safe::find_frame_compressed_size(rest).map_err(|code| {
                Error::corrupt(
                    Self::NAME,
                    format!(
                        "no complete zstd frame at byte {}: {}",
                        data.len() - rest.len(),
                        zstd_safe::get_error_name(code)
                    ),
                )
            })?;
            let size = zstd_safe::get_frame_content_size(rest).map_err(|_| {
                Error::corrupt(
                    Self::NAME,
                    format!(
                        "invalid zstd frame header at byte {}",
                        data.len() - rest.len()
                    ),
                )
            })?;
            total = match (total, size) {
                (Some(t), Some(s)) => Some(t.saturating_add(s)),
                _ => None,
            };
            rest = rest.get(frame_len..).unwrap_or_default();
        }
        Ok(total)
    }
}

/// The most a zstd frame can expand: every block holds at most 128 KiB and takes at least 4
/// bytes (an RLE block), so no frame decodes to more than 32768 times its length.
const MAX_RATIO: u64 = 32_768;

impl ZstdCodec {
    /// Check the frames' claimed total before allocating for it: against the chunk, and
    /// against what frames of this length can hold at all.
    fn check_claim(encoded: &[u8], expected: ExpectedSize, size: u64) -> Result<()> {
        expected.check_claim(Self::NAME, size)?;
        if size > (encoded.len() as u64).saturating_mul(MAX_RATIO) {
            return Err(Error::corrupt(
                Self::NAME,
                format!(
                    "frames of {} bytes claim {size} decoded bytes, more than zstd can encode \
                     in that space",
                    encoded.len()
                ),
            ));
        }
        Ok(())
    }
}

impl BytesToBytesCodec for ZstdCodec {
    fn to_metadata(&self) -> ExtensionObject {
        let mut map = config::map([("level", Value::from(self.level))]);
        if self.checksum {
            map.insert("checksum".into(), Value::Bool(true));
        }
        ExtensionObject::with_configuration(Self::NAME, map)
    }

    fn encode(&self, decoded: Bytes) -> Result<Bytes> {
        let mut out = Vec::with_capacity(zstd_safe::compress_bound(decoded.len()));
        with_compressor(|c| {
            c.set_parameter(CParameter::CompressionLevel(self.level))?;
            c.set_parameter(CParameter::ChecksumFlag(self.checksum))?;
            c.set_parameter(CParameter::ContentSizeFlag(true))?;
            c.compress_to_buffer(&decoded[..], &mut out)
        })
        .map_err(|e| Error::Compression {
            codec: Self::NAME.into(),
            reason: e.to_string(),
        })?;
        Ok(out.into())
    }

    fn decode(&self, encoded: Bytes, expected: ExpectedSize) -> Result<Bytes> {
        match Self::content_size(&encoded)? {
            Some(size) => {
                Self::check_claim(&encoded, expected, size)?;
                // `size` is at most the limit and what the frames can hold.
                let mut out = Vec::with_capacity(usize::try_from(size).unwrap_or(usize::MAX));
                let produced =
                    with_decompressor(|d| d.decompress_to_buffer(&encoded[..], &mut out))
                        .map_err(Self::io_error)?;
                expected.check(Self::NAME, produced as u64)?;
                if produced as u64 != size {
                    return Err(Error::corrupt(
                        Self::NAME,
                        format!("frames claim {size} bytes but hold {produced}"),
                    ));
                }
                Ok(out.into())
            }
            None => {
                let mut decoder = zstd::stream::read::Decoder::with_buffer(&encoded[..])
                    .map_err(Self::io_error)?;
                let out = match expected {
                    ExpectedSize::Exact(n) => {
                        let mut out =
                            crate::zeroed_bytes(usize::try_from(n).unwrap_or(usize::MAX))?;
                        let produced = read_exact_bounded(&mut decoder, &mut out, Self::NAME)?;
                        expected.check(Self::NAME, produced as u64)?;
                        out
                    }
                    ExpectedSize::AtMost(limit) => read_bounded(&mut decoder, limit, Self::NAME)?,
                };
                Ok(out.into())
            }
        }
    }

    fn decode_into(&self, encoded: Bytes, out: &mut [u8]) -> Result<()> {
        let expected = ExpectedSize::Exact(out.len() as u64);
        match Self::content_size(&encoded)? {
            Some(size) => {
                Self::check_claim(&encoded, expected, size)?;
                let produced = with_decompressor(|d| d.decompress_to_buffer(&encoded[..], out))
                    .map_err(Self::io_error)?;
                expected.check(Self::NAME, produced as u64)
            }
            None => {
                let mut decoder = zstd::stream::read::Decoder::with_buffer(&encoded[..])
                    .map_err(Self::io_error)?;
                let produced = read_exact_bounded(&mut decoder, out, Self::NAME)?;
                expected.check(Self::NAME, produced as u64)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> Bytes {
        (0..10_000u32)
            .flat_map(|i| ((i / 7) as u16).to_le_bytes())
            .collect::<Vec<u8>>()
            .into()
    }

    #[test]
    fn round_trip_levels_and_checksum() {
        for (level, checksum) in [
            (0, false),
            (1, true),
            (-5, false),
            (19, true),
            (-131072, false),
        ] {
            let codec = ZstdCodec::try_new(level, checksum).unwrap();
            let enc = codec.encode(data()).unwrap();
            // Frame header descriptor: single segment + content size, checksum bit as asked.
            assert_eq!(enc[4] & 0x04 != 0, checksum, "level {level}");
            let dec = codec
                .decode(enc.clone(), ExpectedSize::Exact(20_000))
                .unwrap();
            assert_eq!(dec, data());
            let mut out = vec![0; 20_000];
            codec.decode_into(enc, &mut out).unwrap();
            assert_eq!(out, data());
        }
    }

    #[test]
    fn frames_without_content_size_decode() {
        // A streaming encoder does not know the size up front.
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        std::io::Write::write_all(&mut enc, &data()).unwrap();
        let frame = Bytes::from(enc.finish().unwrap());
        assert_eq!(ZstdCodec::content_size(&frame).unwrap(), None);
        let codec = ZstdCodec::try_new(3, false).unwrap();
        assert_eq!(
            codec
                .decode(frame.clone(), ExpectedSize::Exact(20_000))
                .unwrap(),
            data()
        );
        assert_eq!(
            codec
                .decode(frame.clone(), ExpectedSize::AtMost(1 << 30))
                .unwrap(),
            data()
        );
        let e = codec
            .decode(frame.clone(), ExpectedSize::AtMost(100))
            .unwrap_err();
        assert!(matches!(e, Error::DecodedSizeLimit { .. }), "{e:?}");
        let e = codec.decode(frame, ExpectedSize::Exact(100)).unwrap_err();
        assert!(matches!(e, Error::DecodedSizeLimit { .. }), "{e:?}");
    }

    #[test]
    fn level_is_checked() {
        assert!(ZstdCodec::try_new(23, false).is_err());
        assert!(ZstdCodec::try_new(-131_073, false).is_err());
        let meta = ExtensionObject::with_configuration(
            "zstd",
            config::map([("level", Value::from(1)), ("checksum", Value::from("no"))]),
        );
        assert!(ZstdCodec::from_metadata(&meta).is_err());
        let meta = ExtensionObject::with_configuration(
            "zstd",
            config::map([("level", Value::from(1)), ("checksum", Value::from(false))]),
        );
        let codec = ZstdCodec::from_metadata(&meta).unwrap();
        assert_eq!(
            codec.to_metadata().to_json(),
            serde_json::json!({"name": "zstd", "configuration": {"level": 1}})
        );
    }
}
