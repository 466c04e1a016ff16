//! `numcodecs.shuffle`: byte shuffle.

use bytes::Bytes;
use serde_json::Value;
use zarr_core::ExtensionObject;

use crate::codec::{BytesToBytesCodec, ExpectedSize};
use crate::config::{self, Config};
use crate::error::{Error, Result};

/// The `numcodecs.shuffle` codec (bytes->bytes): the bytes of `elementsize`-byte elements
/// regrouped by position, all first bytes, then all second bytes and so on, as numcodecs'
/// `Shuffle` does. The size does not change; an `elementsize` of 0 or 1 changes nothing.
///
/// Configuration: `elementsize`, the element size in bytes; when it is left out, the size of
/// the array's elements (as zarr-python fills it in). Data whose length is not a multiple of
/// it is an error, as in numcodecs.
///
/// ```
/// use bytes::Bytes;
/// use zarr_codecs::{BytesToBytesCodec, ExpectedSize, ShuffleCodec};
///
/// let codec = ShuffleCodec::new(2);
/// let encoded = codec.encode(Bytes::from_static(&[1, 2, 3, 4, 5, 6]))?;
/// assert_eq!(&encoded[..], &[1, 3, 5, 2, 4, 6]);
/// assert_eq!(&codec.decode(encoded, ExpectedSize::Exact(6))?[..], &[1, 2, 3, 4, 5, 6]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShuffleCodec {
    elementsize: usize,
}

impl ShuffleCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "numcodecs.shuffle";

    /// A shuffle of `elementsize`-byte elements.
    pub fn new(elementsize: usize) -> Self {
        Self { elementsize }
    }

    /// The element size in bytes.
    pub fn elementsize(&self) -> usize {
        self.elementsize
    }

    /// Parse `{"name": "numcodecs.shuffle", "configuration": {"elementsize": n}}`, with
    /// `default_elementsize` (the array's element size) when `elementsize` is left out.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a bad `elementsize` or an unknown key.
    pub fn from_metadata(metadata: &ExtensionObject, default_elementsize: usize) -> Result<Self> {
        let config = Config::new(metadata, &["elementsize"])?;
        let elementsize = match config.get("elementsize") {
            None => default_elementsize,
            Some(v) => config.int_in("elementsize", v, 0..=i64::from(u16::MAX))? as usize,
        };
        Ok(Self::new(elementsize))
    }

    /// Shuffle (or unshuffle) elements of two or more bytes.
    fn apply(&self, data: &[u8], unshuffle: bool) -> Result<Bytes> {
        let size = self.elementsize;
        if !data.len().is_multiple_of(size) {
            return Err(Error::corrupt(
                Self::NAME,
                format!(
                    "{} bytes are not a whole number of {size}-byte elements",
                    data.len()
                ),
            ));
        }
        let count = data.len() / size;
        let mut out = vec![0u8; data.len()];
        for j in 0..size {
            let lane = j * count..(j + 1) * count;
            let elements = (0..count).map(|i| i * size + j);
            if unshuffle {
                for (byte, at) in data[lane].iter().zip(elements) {
                    out[at] = *byte;
                }
            } else {
                for (byte, at) in out[lane].iter_mut().zip(elements) {
                    *byte = data[at];
                }
            }
        }
        Ok(out.into())
    }
}

impl BytesToBytesCodec for ShuffleCodec {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::with_configuration(
            Self::NAME,
            config::map([("elementsize", Value::from(self.elementsize))]),
        )
    }

    fn encode(&self, decoded: Bytes) -> Result<Bytes> {
        if self.elementsize <= 1 {
            return Ok(decoded);
        }
        self.apply(&decoded, false)
    }

    fn decode(&self, encoded: Bytes, expected: ExpectedSize) -> Result<Bytes> {
        expected.check(Self::NAME, encoded.len() as u64)?;
        if self.elementsize <= 1 {
            return Ok(encoded);
        }
        self.apply(&encoded, true)
    }

    fn encoded_size(&self, decoded: ExpectedSize) -> Option<ExpectedSize> {
        Some(decoded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_numcodecs_and_round_trips() {
        // numcodecs.Shuffle(elementsize=4).encode(np.arange(8, dtype="u1")).
        let codec = ShuffleCodec::new(4);
        let data = Bytes::from((0u8..8).collect::<Vec<_>>());
        let enc = codec.encode(data.clone()).unwrap();
        assert_eq!(&enc[..], &[0, 4, 1, 5, 2, 6, 3, 7]);
        assert_eq!(codec.decode(enc, ExpectedSize::Exact(8)).unwrap(), data);
        for size in [0, 1, 3, 8] {
            let codec = ShuffleCodec::new(size);
            let data = Bytes::from((0u8..48).collect::<Vec<_>>());
            let enc = codec.encode(data.clone()).unwrap();
            assert_eq!(codec.decode(enc, ExpectedSize::Exact(48)).unwrap(), data);
        }
        let e = codec
            .decode(Bytes::from_static(&[1, 2, 3]), ExpectedSize::AtMost(3))
            .unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }), "{e}");
        assert_eq!(
            ShuffleCodec::from_metadata(&codec.to_metadata(), 1).unwrap(),
            codec
        );
        assert_eq!(
            ShuffleCodec::from_metadata(&ExtensionObject::new(ShuffleCodec::NAME), 8)
                .unwrap()
                .elementsize(),
            8
        );
    }
}
