//! The `gzip` codec: an RFC 1952 gzip member.

use bytes::Bytes;
use flate2::{Compression, GzBuilder, bufread::MultiGzDecoder};
use serde_json::Value;
use zarr_core::ExtensionObject;

use super::{decode_stream, decode_stream_into, deflate_level, encode_stream};
use crate::codec::{BytesToBytesCodec, ExpectedSize};
use crate::config::{self, Config};
use crate::error::Result;

/// The `gzip` codec (bytes->bytes): compresses into an RFC 1952 gzip member.
///
/// Configuration: `level`, an integer from 0 to 9 (required). The encoder writes a header with
/// mtime 0 and OS "unknown" (255), so equal input gives equal output. The decoder ignores the
/// header's mtime, OS byte, file name and comment, accepts several concatenated members, and stops
/// with [`Error::DecodedSizeLimit`](crate::Error::DecodedSizeLimit) as soon as the output would
/// exceed what the chunk can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GzipCodec {
    level: u32,
}

impl GzipCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "gzip";

    /// A gzip codec with compression level 0 to 9.
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

    /// Parse `{"name": "gzip", "configuration": {"level": 0..9}}`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`](crate::Error::InvalidConfiguration) if `level` is
    /// missing or out of range, or for an unknown key.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(metadata, &["level"])?;
        let level = config.int_in("level", config.required("level")?, 0..=9)?;
        Self::try_new(level as u32)
    }
}

impl BytesToBytesCodec for GzipCodec {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::with_configuration(
            Self::NAME,
            config::map([("level", Value::from(self.level))]),
        )
    }

    fn encode(&self, decoded: Bytes) -> Result<Bytes> {
        let capacity = decoded.len() / 2 + 64;
        let encoder = GzBuilder::new()
            .mtime(0)
            .operating_system(255)
            .write(Vec::with_capacity(capacity), Compression::new(self.level));
        encode_stream(
            encoder,
            &decoded,
            flate2::write::GzEncoder::finish,
            Self::NAME,
        )
    }

    fn decode(&self, encoded: Bytes, expected: ExpectedSize) -> Result<Bytes> {
        decode_stream(&mut MultiGzDecoder::new(&encoded[..]), expected, Self::NAME)
    }

    fn decode_into(&self, encoded: Bytes, out: &mut [u8]) -> Result<()> {
        decode_stream_into(&mut MultiGzDecoder::new(&encoded[..]), out, Self::NAME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn header_is_deterministic_and_mtime_is_ignored() {
        let codec = GzipCodec::try_new(5).unwrap();
        let data = Bytes::from_static(b"hello hello hello hello");
        let a = codec.encode(data.clone()).unwrap();
        let b = codec.encode(data.clone()).unwrap();
        assert_eq!(a, b);
        assert_eq!(&a[..10], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff][..]);
        let mut stamped = a.to_vec();
        stamped[4..8].copy_from_slice(&1_700_000_000u32.to_le_bytes());
        stamped[9] = 3; // OS: Unix
        let back = codec
            .decode(stamped.into(), ExpectedSize::Exact(data.len() as u64))
            .unwrap();
        assert_eq!(back, data);
    }

    #[test]
    fn level_is_checked() {
        assert!(GzipCodec::try_new(10).is_err());
        let meta =
            ExtensionObject::with_configuration("gzip", config::map([("level", Value::from(-1))]));
        assert!(GzipCodec::from_metadata(&meta).is_err());
        assert!(GzipCodec::from_metadata(&ExtensionObject::new("gzip")).is_err());
    }

    #[test]
    fn output_is_bounded() {
        let codec = GzipCodec::try_new(9).unwrap();
        let big = codec.encode(Bytes::from(vec![0u8; 1 << 20])).unwrap();
        let e = codec
            .decode(big.clone(), ExpectedSize::Exact(1000))
            .unwrap_err();
        assert!(matches!(e, Error::DecodedSizeLimit { .. }), "{e:?}");
        let e = codec
            .decode(big.clone(), ExpectedSize::AtMost(1000))
            .unwrap_err();
        assert!(matches!(e, Error::DecodedSizeLimit { .. }), "{e:?}");
        let e = codec.decode(big, ExpectedSize::Exact(2 << 20)).unwrap_err();
        assert!(matches!(e, Error::DecodedSizeMismatch { .. }), "{e:?}");
    }
}
