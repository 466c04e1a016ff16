//! The `numcodecs.bz2` codec: a bzip2 stream, as Python's `bz2.compress` writes it.

use bytes::Bytes;
use bzip2::Compression;
use bzip2::read::MultiBzDecoder;
use bzip2::write::BzEncoder;
use serde_json::Value;
use zarr_core::ExtensionObject;

use crate::codec::{BytesToBytesCodec, ExpectedSize};
use crate::codecs::{decode_stream, decode_stream_into, encode_stream};
use crate::config::{self, Config};
use crate::error::{Error, Result};

/// The `numcodecs.bz2` codec (bytes->bytes): compresses into a bzip2 stream, as numcodecs'
/// `BZ2` does through Python's `bz2` module. Zarr v2 arrays name it `bz2` (as a compressor or
/// a filter); zarr-python 3 writes it in v3 metadata as `numcodecs.bz2`.
///
/// Configuration: `level`, the block size in units of 100 kB, from 1 to 9 (default 1,
/// numcodecs' default). The decoder reads concatenated streams one after another, as Python
/// does, checks each block's CRC, and stops with
/// [`Error::DecodedSizeLimit`](crate::Error::DecodedSizeLimit) as soon as the output would
/// exceed what the chunk can hold.
///
/// ```
/// use bytes::Bytes;
/// use zarr_codecs::{Bz2Codec, BytesToBytesCodec, ExpectedSize};
///
/// let codec = Bz2Codec::try_new(9)?;
/// let data = Bytes::from(b"zarr ".repeat(1000));
/// let encoded = codec.encode(data.clone())?;
/// assert_eq!(&encoded[..4], b"BZh9"); // the magic and the block size
/// assert_eq!(codec.decode(encoded, ExpectedSize::Exact(5000))?, data);
/// # Ok::<(), zarr_codecs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Bz2Codec {
    level: u32,
}

impl Bz2Codec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "numcodecs.bz2";

    /// A bzip2 codec with block size `level` (1 to 9).
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a level outside 1 to 9.
    pub fn try_new(level: u32) -> Result<Self> {
        if !(1..=9).contains(&level) {
            return Err(Error::config(
                Self::NAME,
                format!("`level` must be an integer from 1 to 9, found {level}"),
            ));
        }
        Ok(Self { level })
    }

    /// The compression level (block size in units of 100 kB).
    pub fn level(&self) -> u32 {
        self.level
    }

    /// Parse `{"name": "numcodecs.bz2", "configuration": {"level": 1..9}}`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] if `level` is out of range, or for an unknown key.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(metadata, &["level"])?;
        let level = match config.get("level") {
            None | Some(Value::Null) => 1,
            Some(v) => config.int_in("level", v, 1..=9)?,
        };
        Self::try_new(level as u32)
    }
}

impl BytesToBytesCodec for Bz2Codec {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::with_configuration(
            Self::NAME,
            config::map([("level", Value::from(self.level))]),
        )
    }

    fn encode(&self, decoded: Bytes) -> Result<Bytes> {
        let capacity = decoded.len() / 2 + 64;
        let encoder = BzEncoder::new(Vec::with_capacity(capacity), Compression::new(self.level));
        encode_stream(encoder, &decoded, BzEncoder::finish, Self::NAME)
    }

    fn decode(&self, encoded: Bytes, expected: ExpectedSize) -> Result<Bytes> {
        decode_stream(&mut MultiBzDecoder::new(&encoded[..]), expected, Self::NAME)
    }

    fn decode_into(&self, encoded: Bytes, out: &mut [u8]) -> Result<()> {
        decode_stream_into(&mut MultiBzDecoder::new(&encoded[..]), out, Self::NAME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_at_every_level() {
        let data = Bytes::from(
            (0..50_000u32)
                .flat_map(|i| (i % 251).to_le_bytes())
                .collect::<Vec<u8>>(),
        );
        for level in 1..=9 {
            let codec = Bz2Codec::try_new(level).unwrap();
            let encoded = codec.encode(data.clone()).unwrap();
            assert_eq!(&encoded[..4], format!("BZh{level}").as_bytes());
            let n = data.len() as u64;
            assert_eq!(
                codec
                    .decode(encoded.clone(), ExpectedSize::Exact(n))
                    .unwrap(),
                data
            );
            let mut out = vec![0u8; data.len()];
            codec.decode_into(encoded, &mut out).unwrap();
            assert_eq!(out, data);
        }
    }

    #[test]
    fn python_bz2_output_decodes_and_concatenated_streams_are_read() {
        // bz2.compress(b"hello zarr", 1) in CPython 3.11.
        const HELLO: &[u8] = &[
            0x42, 0x5a, 0x68, 0x31, 0x31, 0x41, 0x59, 0x26, 0x53, 0x59, 0x6a, 0xa7, 0x54, 0x8b,
            0x00, 0x00, 0x01, 0x91, 0x80, 0x40, 0x00, 0x22, 0x44, 0x90, 0x10, 0x20, 0x00, 0x22,
            0x06, 0x9a, 0x7a, 0x10, 0xc0, 0x86, 0x33, 0xca, 0xd0, 0x82, 0xee, 0x48, 0xa7, 0x0a,
            0x12, 0x0d, 0x54, 0xea, 0x91, 0x60,
        ];
        let codec = Bz2Codec::try_new(1).unwrap();
        assert_eq!(
            codec
                .decode(Bytes::from_static(HELLO), ExpectedSize::Exact(10))
                .unwrap(),
            Bytes::from_static(b"hello zarr")
        );
        let twice = Bytes::from([HELLO, HELLO].concat());
        assert_eq!(
            codec.decode(twice, ExpectedSize::AtMost(100)).unwrap(),
            Bytes::from_static(b"hello zarrhello zarr")
        );
    }

    #[test]
    fn corrupt_truncated_and_oversized_streams_are_errors() {
        let codec = Bz2Codec::try_new(1).unwrap();
        let encoded = codec.encode(Bytes::from(vec![7u8; 10_000])).unwrap();
        let mut corrupt = encoded.to_vec();
        corrupt[20] ^= 0x55;
        assert!(
            codec
                .decode(corrupt.into(), ExpectedSize::Exact(10_000))
                .is_err()
        );
        let truncated = encoded.slice(..encoded.len() - 5);
        assert!(
            codec
                .decode(truncated, ExpectedSize::Exact(10_000))
                .is_err()
        );
        let e = codec
            .decode(encoded.clone(), ExpectedSize::Exact(100))
            .unwrap_err();
        assert!(matches!(e, Error::DecodedSizeLimit { .. }), "{e:?}");
        let e = codec
            .decode(encoded, ExpectedSize::Exact(20_000))
            .unwrap_err();
        assert!(matches!(e, Error::DecodedSizeMismatch { .. }), "{e:?}");
        assert!(
            codec
                .decode(Bytes::from_static(b"not bzip2"), ExpectedSize::AtMost(100))
                .is_err()
        );
    }

    #[test]
    fn configuration() {
        assert!(Bz2Codec::try_new(0).is_err());
        assert!(Bz2Codec::try_new(10).is_err());
        let meta = |config: Value| {
            ExtensionObject::with_configuration(Bz2Codec::NAME, config.as_object().unwrap().clone())
        };
        assert_eq!(
            Bz2Codec::from_metadata(&meta(serde_json::json!({})))
                .unwrap()
                .level(),
            1
        );
        assert_eq!(
            Bz2Codec::from_metadata(&meta(serde_json::json!({"level": 5})))
                .unwrap()
                .level(),
            5
        );
        assert!(Bz2Codec::from_metadata(&meta(serde_json::json!({"level": 0}))).is_err());
        assert!(Bz2Codec::from_metadata(&meta(serde_json::json!({"lvl": 3}))).is_err());
        let codec = Bz2Codec::try_new(4).unwrap();
        assert_eq!(
            Bz2Codec::from_metadata(&codec.to_metadata()).unwrap(),
            codec
        );
    }
}
