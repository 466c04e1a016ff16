//! numcodecs' 32-bit checksum codecs: `numcodecs.crc32`, `numcodecs.adler32`,
//! `numcodecs.crc32c` and `numcodecs.fletcher32`.

use bytes::Bytes;
use serde_json::Value;
use zarr_core::ExtensionObject;

use crate::codec::{BytesToBytesCodec, ExpectedSize, copy_exact};
use crate::config::{self, Config};
use crate::error::{Error, Result};

/// Which checksum a [`ChecksumCodec`] computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Checksum {
    /// CRC-32 (ISO-HDLC, zlib's `crc32`): `numcodecs.crc32`.
    Crc32,
    /// Adler-32 (zlib's `adler32`): `numcodecs.adler32`.
    Adler32,
    /// CRC-32C (Castagnoli): `numcodecs.crc32c`.
    Crc32c,
    /// Fletcher-32 as HDF5 computes it (16-bit big-endian words): `numcodecs.fletcher32`.
    Fletcher32,
}

impl Checksum {
    /// The codec name in metadata.
    pub fn name(self) -> &'static str {
        match self {
            Self::Crc32 => "numcodecs.crc32",
            Self::Adler32 => "numcodecs.adler32",
            Self::Crc32c => "numcodecs.crc32c",
            Self::Fletcher32 => "numcodecs.fletcher32",
        }
    }

    /// Where numcodecs puts the checksum when the configuration does not say.
    fn default_location(self) -> Location {
        match self {
            Self::Crc32 | Self::Adler32 => Location::Start,
            Self::Crc32c | Self::Fletcher32 => Location::End,
        }
    }

    /// The checksum of `data`.
    pub fn compute(self, data: &[u8]) -> u32 {
        match self {
            Self::Crc32 => crc32fast::hash(data),
            Self::Adler32 => adler2::adler32_slice(data),
            Self::Crc32c => crc32c::crc32c(data),
            Self::Fletcher32 => fletcher32(data),
        }
    }
}

/// Where a [`ChecksumCodec`] puts the checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Location {
    /// Before the data.
    Start,
    /// After the data.
    End,
}

/// numcodecs' checksum codecs (bytes->bytes): the data with a 32-bit little-endian checksum
/// before it or after it, so the encoding is exactly 4 bytes longer.
///
/// Configuration: `location`, `"start"` or `"end"`, for `numcodecs.crc32`,
/// `numcodecs.adler32` (default `"start"`) and `numcodecs.crc32c` (default `"end"`);
/// `numcodecs.fletcher32` has none (always at the end). Decoding verifies the checksum: a
/// mismatch is [`Error::ChecksumMismatch`].
///
/// ```
/// use bytes::Bytes;
/// use zarr_codecs::{BytesToBytesCodec, Checksum, ChecksumCodec, ExpectedSize, Location};
///
/// let codec = ChecksumCodec::new(Checksum::Crc32, Location::Start);
/// let encoded = codec.encode(Bytes::from_static(b"123456789"))?;
/// assert_eq!(&encoded[..4], &0xcbf4_3926_u32.to_le_bytes());
/// assert_eq!(codec.decode(encoded, ExpectedSize::Exact(9))?, &b"123456789"[..]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChecksumCodec {
    checksum: Checksum,
    location: Location,
}

impl ChecksumCodec {
    /// A checksum codec. Fletcher-32 is always at the end, as numcodecs writes it.
    pub fn new(checksum: Checksum, location: Location) -> Self {
        let location = if checksum == Checksum::Fletcher32 {
            Location::End
        } else {
            location
        };
        Self { checksum, location }
    }

    /// The checksum.
    pub fn checksum(&self) -> Checksum {
        self.checksum
    }

    /// Where the checksum goes.
    pub fn location(&self) -> Location {
        self.location
    }

    /// Parse the codec's metadata (its name says which checksum).
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a bad `location` or an unknown key.
    pub fn from_metadata(checksum: Checksum, metadata: &ExtensionObject) -> Result<Self> {
        let allowed: &[&str] = if checksum == Checksum::Fletcher32 {
            &[]
        } else {
            &["location"]
        };
        let config = Config::new(metadata, allowed)?;
        let location = match config.get("location") {
            None => checksum.default_location(),
            Some(v) => match config.str("location", v)? {
                "start" => Location::Start,
                "end" => Location::End,
                _ => return Err(config.error("location", "\"start\" or \"end\"", v)),
            },
        };
        Ok(Self::new(checksum, location))
    }

    /// The data part of `encoded` and where it starts, after checking the checksum.
    fn verify<'a>(&self, encoded: &'a [u8]) -> Result<(usize, &'a [u8])> {
        verify(encoded, self.checksum, self.location, self.checksum.name())
    }
}

/// The data part of `encoded` (a 32-bit little-endian `checksum` at `location` around it) and
/// where it starts, after checking the checksum; errors name `codec`.
pub(crate) fn verify<'a>(
    encoded: &'a [u8],
    checksum: Checksum,
    location: Location,
    codec: &str,
) -> Result<(usize, &'a [u8])> {
    let Some(n) = encoded.len().checked_sub(4) else {
        return Err(Error::truncated(
            codec,
            format!("{} bytes cannot hold a 4-byte checksum", encoded.len()),
        ));
    };
    let (stored, start) = match location {
        Location::Start => (&encoded[..4], 4),
        Location::End => (&encoded[n..], 0),
    };
    let stored = u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]]);
    let data = &encoded[start..start + n];
    let computed = checksum.compute(data);
    if stored != computed {
        return Err(Error::ChecksumMismatch {
            codec: codec.into(),
            stored,
            computed,
        });
    }
    Ok((start, data))
}

impl BytesToBytesCodec for ChecksumCodec {
    fn to_metadata(&self) -> ExtensionObject {
        let name = self.checksum.name();
        if self.checksum == Checksum::Fletcher32 {
            // zarr-python refuses a numcodecs codec without a `configuration` member.
            return ExtensionObject::with_configuration(name, serde_json::Map::new());
        }
        let location = match self.location {
            Location::Start => "start",
            Location::End => "end",
        };
        ExtensionObject::with_configuration(
            name,
            config::map([("location", Value::from(location))]),
        )
    }

    fn encode(&self, decoded: Bytes) -> Result<Bytes> {
        let checksum = self.checksum.compute(&decoded).to_le_bytes();
        let mut out = Vec::with_capacity(decoded.len() + 4);
        match self.location {
            Location::Start => {
                out.extend_from_slice(&checksum);
                out.extend_from_slice(&decoded);
            }
            Location::End => {
                out.extend_from_slice(&decoded);
                out.extend_from_slice(&checksum);
            }
        }
        Ok(out.into())
    }

    fn decode(&self, encoded: Bytes, expected: ExpectedSize) -> Result<Bytes> {
        let (start, data) = self.verify(&encoded)?;
        let n = data.len();
        expected.check(self.checksum.name(), n as u64)?;
        Ok(encoded.slice(start..start + n))
    }

    fn encoded_size(&self, decoded: ExpectedSize) -> Option<ExpectedSize> {
        Some(decoded.plus(4))
    }

    fn decode_into(&self, encoded: Bytes, out: &mut [u8]) -> Result<()> {
        let (_, data) = self.verify(&encoded)?;
        ExpectedSize::Exact(out.len() as u64).check(self.checksum.name(), data.len() as u64)?;
        copy_exact(data, out)
    }
}

/// Fletcher-32 over 16-bit big-endian words, a trailing odd byte taken as the high half of a
/// last word, with both sums folded every 360 words (HDF5's `H5_checksum_fletcher32`, which
/// numcodecs follows).
fn fletcher32(data: &[u8]) -> u32 {
    let (mut sum1, mut sum2) = (0_u32, 0_u32);
    let even = data.len() & !1;
    for block in data[..even].chunks(720) {
        for w in block.chunks_exact(2) {
            sum1 += (u32::from(w[0]) << 8) | u32::from(w[1]);
            sum2 += sum1;
        }
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    if let Some(&last) = data.get(even) {
        sum1 += u32::from(last) << 8;
        sum2 += sum1;
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    (sum2 << 16) | sum1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_values() {
        // The standard check inputs: "123456789".
        let data = b"123456789";
        assert_eq!(Checksum::Crc32.compute(data), 0xcbf4_3926);
        assert_eq!(Checksum::Adler32.compute(data), 0x091e_01de);
        assert_eq!(Checksum::Crc32c.compute(data), 0xe306_9283);
        // numcodecs' Fletcher32 of the same bytes (odd and even lengths, more than one fold).
        assert_eq!(fletcher32(b"abcde"), 0x4ff0_29c7);
        assert_eq!(fletcher32(b"abcdef"), 0x5056_2a2d);
        let mut long: Vec<u8> = (0..=255).cycle().take(256 * 7).collect();
        long.push(b'x');
        assert_eq!(fletcher32(&long), 0xad56_b9be);
        // Sums start at 0, not 0xffff (equal modulo 65535, but not for all-zero data).
        assert_eq!(fletcher32(&[0; 8]), 0);
        assert_eq!(fletcher32(&[0; 800]), 0);
        let mut ones = vec![0u8; 1440];
        ones.extend([255, 255]);
        assert_eq!(fletcher32(&ones), 0xffff_ffff);
    }

    #[test]
    fn locations_and_errors() {
        for checksum in [Checksum::Crc32, Checksum::Adler32, Checksum::Crc32c] {
            for location in [Location::Start, Location::End] {
                let codec = ChecksumCodec::new(checksum, location);
                let enc = codec.encode(Bytes::from_static(b"zarr data")).unwrap();
                assert_eq!(enc.len(), 13);
                let body = if location == Location::Start {
                    &enc[4..]
                } else {
                    &enc[..9]
                };
                assert_eq!(body, b"zarr data");
                assert_eq!(
                    codec.decode(enc.clone(), ExpectedSize::Exact(9)).unwrap(),
                    &b"zarr data"[..]
                );
                let mut out = [0u8; 9];
                codec.decode_into(enc.clone(), &mut out).unwrap();
                assert_eq!(&out, b"zarr data");
                let mut bad = enc.to_vec();
                bad[6] ^= 1;
                let e = codec
                    .decode(bad.into(), ExpectedSize::Exact(9))
                    .unwrap_err();
                assert!(matches!(e, Error::ChecksumMismatch { .. }), "{e}");
                let meta = codec.to_metadata();
                assert_eq!(
                    ChecksumCodec::from_metadata(checksum, &meta).unwrap(),
                    codec
                );
            }
        }
        let e = ChecksumCodec::new(Checksum::Crc32, Location::Start)
            .decode(Bytes::from_static(&[1, 2]), ExpectedSize::AtMost(10))
            .unwrap_err();
        assert!(matches!(e, Error::Truncated { .. }), "{e}");
        let meta = ExtensionObject::with_configuration(
            "numcodecs.crc32",
            config::map([("location", Value::from("middle"))]),
        );
        assert!(ChecksumCodec::from_metadata(Checksum::Crc32, &meta).is_err());
        let defaults = ExtensionObject::new("numcodecs.crc32c");
        assert_eq!(
            ChecksumCodec::from_metadata(Checksum::Crc32c, &defaults)
                .unwrap()
                .location(),
            Location::End
        );
    }
}
