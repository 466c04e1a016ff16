//! `numcodecs.lz4`: an LZ4 block after its decoded size.

use bytes::Bytes;
use serde_json::Value;
use zarr_core::ExtensionObject;

use crate::codec::{BytesToBytesCodec, ExpectedSize};
use crate::config::{self, Config};
use crate::error::{Error, Result};

/// The `numcodecs.lz4` codec (bytes->bytes): the decoded size as a little-endian `u32`, then
/// one LZ4 block (the LZ4 block format, not the frame format), as numcodecs' `LZ4` writes it.
///
/// Configuration: `acceleration` (numcodecs' default 1), kept in the metadata. It tunes the
/// C library's compressor only; this codec compresses with `lz4_flex`, whose output any LZ4
/// decoder reads, at its one speed. Decoding checks the size header against the chunk's
/// size before allocating, and a block that decodes to any other size is an error.
///
/// ```
/// use bytes::Bytes;
/// use zarr_codecs::{BytesToBytesCodec, ExpectedSize, Lz4Codec};
///
/// let codec = Lz4Codec::default();
/// let data = Bytes::from(b"zarr ".repeat(100));
/// let encoded = codec.encode(data.clone())?;
/// assert_eq!(&encoded[..4], &500u32.to_le_bytes());
/// assert_eq!(codec.decode(encoded, ExpectedSize::Exact(500))?, data);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lz4Codec {
    acceleration: i64,
}

impl Default for Lz4Codec {
    fn default() -> Self {
        Self { acceleration: 1 }
    }
}

impl Lz4Codec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "numcodecs.lz4";

    /// The `acceleration` written in the metadata.
    pub fn acceleration(&self) -> i64 {
        self.acceleration
    }

    /// Parse `{"name": "numcodecs.lz4", "configuration": {"acceleration": n}}`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a non-integer `acceleration` or an unknown key.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(metadata, &["acceleration"])?;
        let acceleration = match config.get("acceleration") {
            None => 1,
            Some(v) => {
                config.int_in("acceleration", v, i64::from(i32::MIN)..=i64::from(i32::MAX))?
            }
        };
        Ok(Self { acceleration })
    }

    /// The decoded size the header claims, checked against `expected`.
    fn header(encoded: &[u8], expected: ExpectedSize) -> Result<usize> {
        let Some(header) = encoded.get(..4) else {
            return Err(Error::truncated(
                Self::NAME,
                format!("{} bytes cannot hold the 4-byte size header", encoded.len()),
            ));
        };
        let claimed = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
        expected.check_claim(Self::NAME, u64::from(claimed))?;
        Ok(claimed as usize)
    }

    fn decompress(encoded: &[u8], out: &mut [u8]) -> Result<()> {
        let produced = lz4_flex::block::decompress_into(&encoded[4..], out)
            .map_err(|e| Error::corrupt(Self::NAME, e.to_string()))?;
        if produced != out.len() {
            return Err(Error::DecodedSizeMismatch {
                codec: Self::NAME.into(),
                expected: out.len().to_string(),
                found: produced as u64,
            });
        }
        Ok(())
    }
}

impl BytesToBytesCodec for Lz4Codec {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::with_configuration(
            Self::NAME,
            config::map([("acceleration", Value::from(self.acceleration))]),
        )
    }

    fn encode(&self, decoded: Bytes) -> Result<Bytes> {
        let size = u32::try_from(decoded.len()).map_err(|_| Error::Compression {
            codec: Self::NAME.into(),
            reason: format!(
                "{} bytes do not fit the format's 32-bit size header",
                decoded.len()
            ),
        })?;
        let mut out = vec![0u8; 4 + lz4_flex::block::get_maximum_output_size(decoded.len())];
        out[..4].copy_from_slice(&size.to_le_bytes());
        let n = lz4_flex::block::compress_into(&decoded, &mut out[4..]).map_err(|e| {
            Error::Compression {
                codec: Self::NAME.into(),
                reason: e.to_string(),
            }
        })?;
        out.truncate(4 + n);
        Ok(out.into())
    }

    fn decode(&self, encoded: Bytes, expected: ExpectedSize) -> Result<Bytes> {
        let n = Self::header(&encoded, expected)?;
        let mut out = crate::zeroed_bytes(n)?;
        Self::decompress(&encoded, &mut out)?;
        Ok(out.into())
    }

    fn decode_into(&self, encoded: Bytes, out: &mut [u8]) -> Result<()> {
        Self::header(&encoded, ExpectedSize::Exact(out.len() as u64))?;
        Self::decompress(&encoded, out)
    }

    fn encoded_size(&self, decoded: ExpectedSize) -> Option<ExpectedSize> {
        let bound = lz4_flex::block::get_maximum_output_size(decoded.limit_usize()) as u64;
        Some(ExpectedSize::AtMost(bound.saturating_add(4)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_numcodecs_output() {
        // numcodecs.LZ4().encode(b"hello hello hello hello").
        let encoded = Bytes::from_static(&[
            23, 0, 0, 0, 104, 104, 101, 108, 108, 111, 32, 6, 0, 80, 104, 101, 108, 108, 111,
        ]);
        let codec = Lz4Codec::default();
        assert_eq!(
            codec
                .decode(encoded.clone(), ExpectedSize::Exact(23))
                .unwrap(),
            &b"hello hello hello hello"[..]
        );
        let mut out = [0u8; 23];
        codec.decode_into(encoded, &mut out).unwrap();
        assert_eq!(&out, b"hello hello hello hello");
    }

    #[test]
    fn bad_input_is_an_error() {
        let codec = Lz4Codec::default();
        let data = Bytes::from(
            (0..1000u32)
                .flat_map(|i| (i % 7).to_le_bytes())
                .collect::<Vec<_>>(),
        );
        let enc = codec.encode(data.clone()).unwrap();
        assert_eq!(
            codec
                .decode(enc.clone(), ExpectedSize::Exact(4000))
                .unwrap(),
            data
        );
        // A header claiming more than the chunk holds: refused before allocating.
        let e = codec
            .decode(enc.clone(), ExpectedSize::Exact(100))
            .unwrap_err();
        assert!(matches!(e, Error::DecodedSizeLimit { .. }), "{e}");
        // Truncated block.
        let e = codec
            .decode(enc.slice(..enc.len() / 2), ExpectedSize::Exact(4000))
            .unwrap_err();
        assert!(
            matches!(e, Error::Corrupt { .. } | Error::DecodedSizeMismatch { .. }),
            "{e}"
        );
        let e = codec
            .decode(Bytes::from_static(&[1, 0]), ExpectedSize::AtMost(9))
            .unwrap_err();
        assert!(matches!(e, Error::Truncated { .. }), "{e}");
        // A header claiming less than the block produces.
        let mut lying = enc.to_vec();
        lying[..4].copy_from_slice(&3999u32.to_le_bytes());
        assert!(
            codec
                .decode(lying.into(), ExpectedSize::AtMost(4000))
                .is_err()
        );
        assert_eq!(
            Lz4Codec::from_metadata(&codec.to_metadata()).unwrap(),
            codec
        );
    }
}
