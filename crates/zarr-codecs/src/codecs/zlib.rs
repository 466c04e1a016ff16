//! The `numcodecs.zlib` codec: an RFC 1950 zlib stream.

use bytes::Bytes;
use flate2::{Compression, bufread::ZlibDecoder, write::ZlibEncoder};
use serde_json::Value;
use zarr_core::ExtensionObject;

use super::{decode_stream, decode_stream_into, deflate_level, encode_stream};
use crate::codec::{BytesToBytesCodec, ExpectedSize};
use crate::config::{self, Config};
use crate::error::Result;

/// The `numcodecs.zlib` codec (bytes->bytes): compresses into an RFC 1950 zlib stream, as
/// numcodecs' `Zlib` does. Zarr v2 arrays name it `zlib` (read through its v3 equivalent,
/// see `zarr_core::v2`); zarr-python 3 writes it in v3 metadata as `numcodecs.zlib`.
///
/// Configuration: `level`, an integer from 0 to 9 (default 1, numcodecs' default). The decoder
/// checks the stream's Adler-32 checksum and stops with
/// [`Error::DecodedSizeLimit`](crate::Error::DecodedSizeLimit) as soon as the output would exceed
/// what the chunk can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ZlibCodec {
    level: u32,
}

impl ZlibCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "numcodecs.zlib";

    /// A zlib codec with compression level 0 to 9.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`](crate::Error::InvalidConfiguration) for a level above 9.
    pub fn try_new(level: u32) -> Result<Self> {
        Ok(Self {
            level: deflate_level(Self::NAME, level)?,
        })
    }

    /// The compression level.
    pub fn level(&self) -> u32 {
        self.level
    }

    /// Parse `{"name": "numcodecs.zlib", "configuration": {"level": 0..9}}`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`](crate::Error::InvalidConfiguration) if `level` is
    /// out of range, or for an unknown key.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(metadata, &["level"])?;
        let level = match config.get("level") {
            None => 1,
            Some(v) => config.int_in("level", v, 0..=9)?,
        };
        Self::try_new(level as u32)
    }
}

impl BytesToBytesCodec for ZlibCodec {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::with_configuration(
            Self::NAME,
            config::map([("level", Value::from(self.level))]),
        )
    }

    fn encode(&self, decoded: Bytes) -> Result<Bytes> {
        let capacity = decoded.len() / 2 + 64;
        let encoder = ZlibEncoder::new(Vec::with_capacity(capacity), Compression::new(self.level));
        encode_stream(encoder, &decoded, ZlibEncoder::finish, Self::NAME)
    }

    fn decode(&self, encoded: Bytes, expected: ExpectedSize) -> Result<Bytes> {
        decode_stream(&mut ZlibDecoder::new(&encoded[..]), expected, Self::NAME)
    }

    fn decode_into(&self, encoded: Bytes, out: &mut [u8]) -> Result<()> {
        decode_stream_into(&mut ZlibDecoder::new(&encoded[..]), out, Self::NAME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn round_trip_and_the_stream_format() {
        let codec = ZlibCodec::try_new(6).unwrap();
        let data = Bytes::from(b"zarr zarr zarr zarr zarr zarr".repeat(10));
        let encoded = codec.encode(data.clone()).unwrap();
        // RFC 1950: CMF 0x78 (deflate, 32 KiB window), FCHECK makes CMF*256+FLG divisible by 31.
        assert_eq!(encoded[0], 0x78);
        assert_eq!(
            (u16::from(encoded[0]) * 256 + u16::from(encoded[1])) % 31,
            0
        );
        let back = codec
            .decode(encoded.clone(), ExpectedSize::Exact(data.len() as u64))
            .unwrap();
        assert_eq!(back, data);
        let mut out = vec![0u8; data.len()];
        codec.decode_into(encoded, &mut out).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn python_zlib_output_decodes() {
        // zlib.compress(b"hello zarr", 1) in CPython.
        let encoded = Bytes::from_static(&[
            120, 1, 203, 72, 205, 201, 201, 87, 168, 74, 44, 42, 2, 0, 21, 150, 3, 244,
        ]);
        let codec = ZlibCodec::try_new(1).unwrap();
        assert_eq!(
            codec.decode(encoded, ExpectedSize::Exact(10)).unwrap(),
            Bytes::from_static(b"hello zarr")
        );
    }

    #[test]
    fn corrupt_streams_and_bad_levels_are_errors() {
        let codec = ZlibCodec::try_new(1).unwrap();
        let mut encoded = codec.encode(Bytes::from(vec![7u8; 1000])).unwrap().to_vec();
        let last = encoded.len() - 1;
        encoded[last] ^= 0xff; // the Adler-32 checksum
        assert!(
            codec
                .decode(encoded.into(), ExpectedSize::Exact(1000))
                .is_err()
        );
        let big = codec.encode(Bytes::from(vec![0u8; 1 << 20])).unwrap();
        let e = codec.decode(big, ExpectedSize::Exact(1000)).unwrap_err();
        assert!(matches!(e, Error::DecodedSizeLimit { .. }), "{e:?}");
        assert!(ZlibCodec::try_new(10).is_err());
        let meta = ExtensionObject::with_configuration(
            ZlibCodec::NAME,
            config::map([("level", Value::from(12))]),
        );
        assert!(ZlibCodec::from_metadata(&meta).is_err());
        assert_eq!(
            ZlibCodec::from_metadata(&ExtensionObject::new(ZlibCodec::NAME))
                .unwrap()
                .level(),
            1
        );
    }
}
