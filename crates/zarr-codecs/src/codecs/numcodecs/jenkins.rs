//! The `numcodecs.jenkins_lookup3` codec: Bob Jenkins' lookup3 hash (`hashlittle`, as HDF5
//! computes it) appended to the data.

use bytes::Bytes;
use serde_json::Value;
use zarr_core::ExtensionObject;

use crate::codec::{BytesToBytesCodec, ExpectedSize, copy_exact};
use crate::config::{self, Config};
use crate::error::{Error, Result};

/// The 32-bit lookup3 hash of `data` with seed `initval`: `hashlittle` of Bob Jenkins'
/// public-domain lookup3, reading the bytes in little-endian order on every machine (as HDF5's
/// `H5_checksum_lookup3` and numcodecs do).
///
/// ```
/// use zarr_codecs::jenkins_lookup3;
///
/// assert_eq!(jenkins_lookup3(b"", 0), 0xdead_beef);
/// assert_eq!(jenkins_lookup3(b"Four score and seven years ago", 0), 0x1777_0551);
/// ```
pub fn jenkins_lookup3(data: &[u8], initval: u32) -> u32 {
    // The length is folded in modulo 2^32, as the C code's `uint32_t` cast does.
    let seed = 0xdead_beef_u32
        .wrapping_add(data.len() as u32)
        .wrapping_add(initval);
    let (mut a, mut b, mut c) = (seed, seed, seed);
    let word = |k: &[u8]| {
        // Up to four bytes, little-endian, missing high bytes zero.
        k.iter()
            .enumerate()
            .fold(0u32, |w, (i, &byte)| w | (u32::from(byte) << (8 * i)))
    };
    let mut rest = data;
    let full = |k: &[u8]| u32::from_le_bytes([k[0], k[1], k[2], k[3]]);
    while rest.len() > 12 {
        a = a.wrapping_add(full(&rest[0..4]));
        b = b.wrapping_add(full(&rest[4..8]));
        c = c.wrapping_add(full(&rest[8..12]));
        mix(&mut a, &mut b, &mut c);
        rest = &rest[12..];
    }
    if rest.is_empty() {
        return c;
    }
    a = a.wrapping_add(word(&rest[..rest.len().min(4)]));
    if rest.len() > 4 {
        b = b.wrapping_add(word(&rest[4..rest.len().min(8)]));
    }
    if rest.len() > 8 {
        c = c.wrapping_add(word(&rest[8..]));
    }
    finish(&mut a, &mut b, &mut c);
    c
}

/// lookup3's `mix`: each step is `x -= y; x ^= rot(y, r); y += z`.
fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c) ^ c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a) ^ a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b) ^ b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c) ^ c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a) ^ a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b) ^ b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

/// lookup3's `final`: each step is `x ^= y; x -= rot(y, r)`.
fn finish(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c = (*c ^ *b).wrapping_sub(b.rotate_left(14));
    *a = (*a ^ *c).wrapping_sub(c.rotate_left(11));
    *b = (*b ^ *a).wrapping_sub(a.rotate_left(25));
    *c = (*c ^ *b).wrapping_sub(b.rotate_left(16));
    *a = (*a ^ *c).wrapping_sub(c.rotate_left(4));
    *b = (*b ^ *a).wrapping_sub(a.rotate_left(14));
    *c = (*c ^ *b).wrapping_sub(b.rotate_left(24));
}

/// The `numcodecs.jenkins_lookup3` codec (bytes->bytes): the data followed by its
/// [`jenkins_lookup3`] hash as a little-endian `u32`, so the encoding is exactly 4 bytes
/// longer. Zarr v2 arrays name it `jenkins_lookup3`.
///
/// Configuration: `initval`, the hash's seed, from 0 to 2^32 - 1 (default 0), and `prefix`,
/// which must be absent or `null`: numcodecs hashes a byte prefix before the data when one is
/// given, but bytes cannot be written in JSON metadata. Decoding verifies the hash: a mismatch
/// is [`Error::ChecksumMismatch`].
///
/// ```
/// use bytes::Bytes;
/// use zarr_codecs::{BytesToBytesCodec, ExpectedSize, JenkinsLookup3Codec};
///
/// let codec = JenkinsLookup3Codec::new(0);
/// let encoded = codec.encode(Bytes::from_static(b"hello zarr"))?;
/// assert_eq!(&encoded[10..], &[0x3d, 0x73, 0x90, 0x87]); // what numcodecs appends
/// assert_eq!(codec.decode(encoded, ExpectedSize::Exact(10))?, &b"hello zarr"[..]);
/// # Ok::<(), zarr_codecs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct JenkinsLookup3Codec {
    initval: u32,
}

impl JenkinsLookup3Codec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "numcodecs.jenkins_lookup3";

    /// A lookup3 checksum codec with seed `initval`.
    pub fn new(initval: u32) -> Self {
        Self { initval }
    }

    /// The hash's seed.
    pub fn initval(&self) -> u32 {
        self.initval
    }

    /// Parse `{"name": "numcodecs.jenkins_lookup3", "configuration": {"initval": 0,
    /// "prefix": null}}`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for an `initval` outside `u32`, a `prefix` that is not
    /// `null`, or an unknown key.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(metadata, &["initval", "prefix"])?;
        let initval = match config.get("initval") {
            None | Some(Value::Null) => 0,
            Some(v) => config.int_in("initval", v, 0..=i64::from(u32::MAX))? as u32,
        };
        if let Some(prefix) = config.get("prefix")
            && !prefix.is_null()
        {
            return Err(config.error(
                "prefix",
                "null (numcodecs' byte prefix cannot be written in JSON metadata)",
                prefix,
            ));
        }
        Ok(Self::new(initval))
    }

    /// The data part of `encoded`, after checking the hash.
    fn verify<'a>(&self, encoded: &'a [u8]) -> Result<&'a [u8]> {
        let Some(n) = encoded.len().checked_sub(4) else {
            return Err(Error::truncated(
                Self::NAME,
                format!("{} bytes cannot hold a 4-byte checksum", encoded.len()),
            ));
        };
        let (data, stored) = encoded.split_at(n);
        let stored = u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]]);
        let computed = jenkins_lookup3(data, self.initval);
        if stored != computed {
            return Err(Error::ChecksumMismatch {
                codec: Self::NAME.into(),
                stored,
                computed,
            });
        }
        Ok(data)
    }
}

impl BytesToBytesCodec for JenkinsLookup3Codec {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::with_configuration(
            Self::NAME,
            config::map([
                ("initval", Value::from(self.initval)),
                ("prefix", Value::Null),
            ]),
        )
    }

    fn encode(&self, decoded: Bytes) -> Result<Bytes> {
        let mut out = Vec::with_capacity(decoded.len() + 4);
        out.extend_from_slice(&decoded);
        out.extend_from_slice(&jenkins_lookup3(&decoded, self.initval).to_le_bytes());
        Ok(out.into())
    }

    fn decode(&self, encoded: Bytes, expected: ExpectedSize) -> Result<Bytes> {
        let n = self.verify(&encoded)?.len();
        expected.check(Self::NAME, n as u64)?;
        Ok(encoded.slice(..n))
    }

    fn decode_into(&self, encoded: Bytes, out: &mut [u8]) -> Result<()> {
        let data = self.verify(&encoded)?;
        ExpectedSize::Exact(out.len() as u64).check(Self::NAME, data.len() as u64)?;
        copy_exact(data, out)
    }

    fn encoded_size(&self, decoded: ExpectedSize) -> Option<ExpectedSize> {
        Some(decoded.plus(4))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_matches_numcodecs_and_lookup3() {
        // lookup3.c's own test vectors, and numcodecs.jenkins.jenkins_lookup3 (0.16) on the
        // bytes 0, 1, 2, ... covering every tail length's branch.
        assert_eq!(jenkins_lookup3(b"", 0), 0xdead_beef);
        assert_eq!(jenkins_lookup3(b"", 0xdead_beef), 0xbd5b_7dde);
        assert_eq!(
            jenkins_lookup3(b"Four score and seven years ago", 0),
            0x1777_0551
        );
        assert_eq!(
            jenkins_lookup3(b"Four score and seven years ago", 1),
            0xcd62_8161
        );
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(jenkins_lookup3(&bytes[..13], 0), 0xbc9d_6816);
        assert_eq!(jenkins_lookup3(&bytes[..24], 7), 0x6bc1_7c66);
        assert_eq!(jenkins_lookup3(&bytes[..25], 7), 0xbfa5_98f8);
    }

    #[test]
    fn round_trip_and_corruption() {
        let codec = JenkinsLookup3Codec::new(42);
        let data = Bytes::from((0..1000u32).map(|i| i as u8).collect::<Vec<_>>());
        let encoded = codec.encode(data.clone()).unwrap();
        assert_eq!(encoded.len(), 1004);
        assert_eq!(
            codec
                .decode(encoded.clone(), ExpectedSize::Exact(1000))
                .unwrap(),
            data
        );
        let mut out = vec![0u8; 1000];
        codec.decode_into(encoded.clone(), &mut out).unwrap();
        assert_eq!(out, data);
        let mut bad = encoded.to_vec();
        bad[500] ^= 1;
        let e = codec
            .decode(bad.into(), ExpectedSize::Exact(1000))
            .unwrap_err();
        assert!(matches!(e, Error::ChecksumMismatch { .. }), "{e:?}");
        // Another seed does not verify.
        assert!(
            JenkinsLookup3Codec::new(0)
                .decode(encoded.clone(), ExpectedSize::Exact(1000))
                .is_err()
        );
        let e = codec
            .decode(encoded.slice(..3), ExpectedSize::AtMost(10))
            .unwrap_err();
        assert!(matches!(e, Error::Truncated { .. }), "{e:?}");
        assert!(codec.decode(encoded, ExpectedSize::Exact(999)).is_err());
    }

    #[test]
    fn configuration() {
        let meta = |config: Value| {
            ExtensionObject::with_configuration(
                JenkinsLookup3Codec::NAME,
                config.as_object().unwrap().clone(),
            )
        };
        use serde_json::json;
        assert_eq!(
            JenkinsLookup3Codec::from_metadata(&meta(json!({})))
                .unwrap()
                .initval(),
            0
        );
        let codec =
            JenkinsLookup3Codec::from_metadata(&meta(json!({"initval": 7, "prefix": null})))
                .unwrap();
        assert_eq!(codec.initval(), 7);
        assert_eq!(
            JenkinsLookup3Codec::from_metadata(&codec.to_metadata()).unwrap(),
            codec
        );
        assert!(JenkinsLookup3Codec::from_metadata(&meta(json!({"initval": -1}))).is_err());
        assert!(JenkinsLookup3Codec::from_metadata(&meta(json!({"initval": 1u64 << 32}))).is_err());
        let e = JenkinsLookup3Codec::from_metadata(&meta(json!({"prefix": "abc"}))).unwrap_err();
        assert!(e.to_string().contains("prefix"), "{e}");
        assert!(JenkinsLookup3Codec::from_metadata(&meta(json!({"seed": 1}))).is_err());
    }
}
