//! The `crc32c` codec: a CRC-32C checksum after the data.

use bytes::{BufMut, Bytes};
use zarr_core::ExtensionObject;

use crate::codec::{BytesToBytesCodec, ExpectedSize, copy_exact};
use crate::codecs::numcodecs::checksum::{Checksum, Location, verify};
use crate::config::Config;
use crate::error::Result;

/// The `crc32c` codec (bytes->bytes): appends the CRC-32C (Castagnoli, RFC 3720) of the data
/// as a little-endian `u32`, so the encoding is exactly 4 bytes longer.
///
/// No configuration. Decoding verifies the checksum (a mismatch is
/// [`Error::ChecksumMismatch`](crate::Error::ChecksumMismatch)) and returns the data without copying it.
///
/// ```
/// use bytes::Bytes;
/// use zarr_codecs::{BytesToBytesCodec, Crc32cCodec, ExpectedSize};
///
/// let encoded = Crc32cCodec.encode(Bytes::from_static(b"123456789"))?;
/// assert_eq!(&encoded[9..], &0xe306_9283_u32.to_le_bytes());
/// assert_eq!(Crc32cCodec.encoded_size(ExpectedSize::Exact(9)), Some(ExpectedSize::Exact(13)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Crc32cCodec;

impl Crc32cCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "crc32c";

    /// Parse `{"name": "crc32c"}` (an empty configuration is accepted too).
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`](crate::Error::InvalidConfiguration) for any configuration key.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        Config::new(metadata, &[])?;
        Ok(Self)
    }

    /// Split off and verify the checksum: the data's length.
    fn verify(encoded: &[u8]) -> Result<usize> {
        let (_, data) = verify(encoded, Checksum::Crc32c, Location::End, Self::NAME)?;
        Ok(data.len())
    }
}

impl BytesToBytesCodec for Crc32cCodec {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::new(Self::NAME)
    }

    fn encode(&self, decoded: Bytes) -> Result<Bytes> {
        let checksum = crc32c::crc32c(&decoded).to_le_bytes();
        Ok(match decoded.try_into_mut() {
            Ok(mut owned) => {
                owned.put_slice(&checksum);
                owned.freeze()
            }
            Err(shared) => {
                let mut out = Vec::with_capacity(shared.len() + 4);
                out.extend_from_slice(&shared);
                out.extend_from_slice(&checksum);
                out.into()
            }
        })
    }

    fn decode(&self, encoded: Bytes, expected: ExpectedSize) -> Result<Bytes> {
        let n = Self::verify(&encoded)?;
        expected.check(Self::NAME, n as u64)?;
        Ok(encoded.slice(..n))
    }

    fn encoded_size(&self, decoded: ExpectedSize) -> Option<ExpectedSize> {
        Some(decoded.plus(4))
    }

    fn decode_into(&self, encoded: Bytes, out: &mut [u8]) -> Result<()> {
        let n = Self::verify(&encoded)?;
        ExpectedSize::Exact(out.len() as u64).check(Self::NAME, n as u64)?;
        copy_exact(&encoded[..n], out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn mismatch_and_truncation_are_errors() {
        let enc = Crc32cCodec
            .encode(Bytes::from_static(b"some data"))
            .unwrap();
        let mut bad = enc.to_vec();
        bad[0] ^= 0x40;
        let e = Crc32cCodec
            .decode(bad.into(), ExpectedSize::Exact(9))
            .unwrap_err();
        assert!(matches!(e, Error::ChecksumMismatch { .. }), "{e}");
        let e = Crc32cCodec
            .decode(Bytes::from_static(&[1, 2, 3]), ExpectedSize::AtMost(10))
            .unwrap_err();
        assert!(matches!(e, Error::Truncated { .. }), "{e}");
        let e = Crc32cCodec
            .decode(enc.clone(), ExpectedSize::Exact(8))
            .unwrap_err();
        assert!(matches!(e, Error::DecodedSizeMismatch { .. }), "{e}");
        assert_eq!(
            Crc32cCodec.decode(enc, ExpectedSize::Exact(9)).unwrap(),
            Bytes::from_static(b"some data")
        );
    }

    #[test]
    fn configuration_must_be_empty() {
        let meta = ExtensionObject::with_configuration("crc32c", serde_json::Map::new());
        Crc32cCodec::from_metadata(&meta).unwrap();
        let meta = ExtensionObject::with_configuration(
            "crc32c",
            crate::config::map([("seed", serde_json::Value::from(1))]),
        );
        assert!(Crc32cCodec::from_metadata(&meta).is_err());
    }
}
