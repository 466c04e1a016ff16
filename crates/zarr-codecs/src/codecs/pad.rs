//! The `pad` and `offset` codecs (zarr-extensions proposals): fixed-size bytes before or
//! after a chunk's data, such as a file header (TIFF, N5) or footer.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use serde_json::{Map, Value};
use zarr_core::ExtensionObject;

use crate::codec::{BytesToBytesCodec, ExpectedSize, byte_range, copy_exact};
use crate::config::Config;
use crate::error::{Error, Result};

/// Where [`PadCodec`]'s bytes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PadLocation {
    /// Before the data (`"start"`): a header.
    Start,
    /// After the data (`"end"`): a footer.
    End,
}

impl PadLocation {
    fn name(self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::End => "end",
        }
    }
}

/// `nbytes` of padding at one end of a chunk: what both codecs are.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Frame {
    location: PadLocation,
    /// The bytes written; their length is what decoding strips.
    padding: Bytes,
}

impl Frame {
    fn parse(codec: &str, nbytes: u64, padding: Option<&str>, key: &str) -> Result<Self> {
        let nbytes = usize::try_from(nbytes)
            .map_err(|_| Error::config(codec, format!("{nbytes} bytes do not fit in memory")))?;
        let padding = match padding {
            // Fallible: `nbytes` comes from metadata.
            None => Bytes::from(crate::zeroed_bytes(nbytes).map_err(|_| {
                Error::config(
                    codec,
                    format!("{nbytes} bytes of padding cannot be allocated"),
                )
            })?),
            Some(text) => {
                let bytes = STANDARD.decode(text).map_err(|e| {
                    Error::config(codec, format!("`{key}` is not valid base64: {e}"))
                })?;
                if bytes.len() != nbytes {
                    return Err(Error::config(
                        codec,
                        format!(
                            "`{key}` holds {} bytes, but the codec strips {nbytes}",
                            bytes.len()
                        ),
                    ));
                }
                Bytes::from(bytes)
            }
        };
        Ok(Self {
            location: PadLocation::Start,
            padding,
        })
    }

    fn len(&self) -> usize {
        self.padding.len()
    }

    fn encode(&self, decoded: &[u8]) -> Result<Bytes> {
        let total = decoded.len().checked_add(self.len());
        let mut out = Vec::new();
        total
            .and_then(|n| out.try_reserve_exact(n).ok())
            .ok_or_else(|| Error::OutOfMemory {
                what: "a padded chunk".into(),
                bytes: total.unwrap_or(usize::MAX),
            })?;
        match self.location {
            PadLocation::Start => {
                out.extend_from_slice(&self.padding);
                out.extend_from_slice(decoded);
            }
            PadLocation::End => {
                out.extend_from_slice(decoded);
                out.extend_from_slice(&self.padding);
            }
        }
        Ok(out.into())
    }

    /// Where the data lies in `encoded`.
    fn data(&self, codec: &str, encoded: usize) -> Result<std::ops::Range<usize>> {
        let n = self.len();
        if encoded < n {
            return Err(Error::Truncated {
                codec: codec.to_owned(),
                reason: format!(
                    "{encoded} bytes, fewer than the {n} bytes of padding at the {}",
                    self.location.name()
                ),
            });
        }
        Ok(match self.location {
            PadLocation::Start => n..encoded,
            PadLocation::End => 0..encoded - n,
        })
    }

    fn decode(&self, codec: &str, encoded: Bytes, expected: ExpectedSize) -> Result<Bytes> {
        let data = self.data(codec, encoded.len())?;
        expected.check(codec, data.len() as u64)?;
        Ok(encoded.slice(data))
    }

    fn decode_into(&self, codec: &str, encoded: &[u8], out: &mut [u8]) -> Result<()> {
        let data = self.data(codec, encoded.len())?;
        ExpectedSize::Exact(out.len() as u64).check(codec, data.len() as u64)?;
        copy_exact(&encoded[data], out)
    }

    fn partial_decode_into(
        &self,
        codec: &str,
        encoded: &[u8],
        expected: ExpectedSize,
        offset: u64,
        out: &mut [u8],
    ) -> Result<()> {
        let data = self.data(codec, encoded.len())?;
        expected.check(codec, data.len() as u64)?;
        let range = byte_range(offset, out.len(), data.len())?;
        out.copy_from_slice(&encoded[data][range]);
        Ok(())
    }
}

/// The [`BytesToBytesCodec`] methods both codecs share: everything but `to_metadata`,
/// delegated to their [`Frame`] (the codec's `.0`) under the codec's `NAME`.
macro_rules! frame_codec_methods {
    () => {
        fn encode(&self, decoded: Bytes) -> Result<Bytes> {
            self.0.encode(&decoded)
        }

        fn decode(&self, encoded: Bytes, expected: ExpectedSize) -> Result<Bytes> {
            self.0.decode(Self::NAME, encoded, expected)
        }

        fn encoded_size(&self, decoded: ExpectedSize) -> Option<ExpectedSize> {
            Some(decoded.plus(self.0.len() as u64))
        }

        fn decode_into(&self, encoded: Bytes, out: &mut [u8]) -> Result<()> {
            self.0.decode_into(Self::NAME, &encoded, out)
        }

        fn can_partially_decode(&self) -> bool {
            true
        }

        fn partial_decode_into(
            &self,
            encoded: &Bytes,
            expected: ExpectedSize,
            offset: u64,
            out: &mut [u8],
        ) -> Result<()> {
            self.0
                .partial_decode_into(Self::NAME, encoded, expected, offset, out)
        }
    };
}

/// The `pad` codec (bytes->bytes, a zarr-extensions proposal): `nbytes` bytes before
/// (`"location": "start"`) or after (`"end"`) the data. Encoding adds `padding` (base64 in
/// the metadata; zeros if left out); decoding drops that many bytes, whatever they hold,
/// so that chunks stored with a header that varies (an N5 block header, a TIFF header)
/// read too. Two `pad` codecs give a header and a footer.
///
/// ```
/// use bytes::Bytes;
/// use zarr_codecs::{BytesToBytesCodec, ExpectedSize, PadCodec, PadLocation};
///
/// let codec = PadCodec::new(PadLocation::Start, Bytes::from_static(b"II*\0"));
/// let encoded = codec.encode(Bytes::from_static(b"data"))?;
/// assert_eq!(&encoded[..], b"II*\0data");
/// assert_eq!(codec.decode(encoded, ExpectedSize::Exact(4))?, Bytes::from_static(b"data"));
/// assert_eq!(codec.to_metadata().to_json()["configuration"]["padding"], "SUkqAA==");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PadCodec(Frame);

impl PadCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "pad";

    /// Pad with `padding` at `location`.
    pub fn new(location: PadLocation, padding: Bytes) -> Self {
        Self(Frame { location, padding })
    }

    /// Pad with `nbytes` zeros at `location`.
    pub fn zeros(location: PadLocation, nbytes: usize) -> Self {
        Self::new(location, Bytes::from(vec![0u8; nbytes]))
    }

    /// Where the padding goes.
    pub fn location(&self) -> PadLocation {
        self.0.location
    }

    /// The padding encoding writes; decoding drops as many bytes.
    pub fn padding(&self) -> &Bytes {
        &self.0.padding
    }

    /// Parse `{"name": "pad", "configuration": {"location": "start" | "end", "nbytes": n,
    /// "padding": base64}}` (`padding` optional).
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a missing or unknown key, a location other than
    /// `start` or `end`, `padding` that is not base64 or not `nbytes` long.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(metadata, &["location", "nbytes", "padding"])?;
        let location = config.required("location")?;
        let location = match config.str("location", location)? {
            "start" => PadLocation::Start,
            "end" => PadLocation::End,
            _ => return Err(config.error("location", "\"start\" or \"end\"", location)),
        };
        let nbytes = config.uint("nbytes", config.required("nbytes")?)?;
        let padding = match config.get("padding") {
            Some(value) => Some(config.str("padding", value)?),
            None => None,
        };
        let mut frame = Frame::parse(Self::NAME, nbytes, padding, "padding")?;
        frame.location = location;
        Ok(Self(frame))
    }
}

impl BytesToBytesCodec for PadCodec {
    fn to_metadata(&self) -> ExtensionObject {
        let mut config = Map::new();
        config.insert("location".into(), self.0.location.name().into());
        config.insert("nbytes".into(), Value::from(self.0.len() as u64));
        if self.0.padding.iter().any(|&b| b != 0) {
            config.insert("padding".into(), STANDARD.encode(&self.0.padding).into());
        }
        ExtensionObject::with_configuration(Self::NAME, config)
    }

    frame_codec_methods!();
}

/// The `offset` codec (bytes->bytes, a zarr-extensions proposal): a header of `offset`
/// bytes before the data. Encoding writes `prefix` (base64 in the metadata; zeros if left
/// out); decoding skips `offset` bytes, whatever they hold. The same as [`PadCodec`] at
/// the start, under its own name.
///
/// ```
/// use bytes::Bytes;
/// use zarr_codecs::{BytesToBytesCodec, ExpectedSize, OffsetCodec};
///
/// let codec = OffsetCodec::zeros(2);
/// let encoded = codec.encode(Bytes::from_static(b"xyz"))?;
/// assert_eq!(&encoded[..], b"\0\0xyz");
/// assert_eq!(codec.decode(encoded, ExpectedSize::AtMost(8))?, Bytes::from_static(b"xyz"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OffsetCodec(Frame);

impl OffsetCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "offset";

    /// A header of `prefix`.
    pub fn new(prefix: Bytes) -> Self {
        Self(Frame {
            location: PadLocation::Start,
            padding: prefix,
        })
    }

    /// A header of `offset` zeros.
    pub fn zeros(offset: usize) -> Self {
        Self::new(Bytes::from(vec![0u8; offset]))
    }

    /// The header encoding writes; decoding skips as many bytes.
    pub fn prefix(&self) -> &Bytes {
        &self.0.padding
    }

    /// Parse `{"name": "offset", "configuration": {"offset": n, "prefix": base64}}`
    /// (`prefix` optional).
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a missing or unknown key, or a `prefix` that is
    /// not base64 or not `offset` bytes long.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(metadata, &["offset", "prefix"])?;
        let offset = config.uint("offset", config.required("offset")?)?;
        let prefix = match config.get("prefix") {
            Some(value) => Some(config.str("prefix", value)?),
            None => None,
        };
        Ok(Self(Frame::parse(Self::NAME, offset, prefix, "prefix")?))
    }
}

impl BytesToBytesCodec for OffsetCodec {
    fn to_metadata(&self) -> ExtensionObject {
        let mut config = Map::new();
        config.insert("offset".into(), Value::from(self.0.len() as u64));
        if self.0.padding.iter().any(|&b| b != 0) {
            config.insert("prefix".into(), STANDARD.encode(&self.0.padding).into());
        }
        ExtensionObject::with_configuration(Self::NAME, config)
    }

    frame_codec_methods!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(value: Value) -> ExtensionObject {
        ExtensionObject::from_json(&value, "codecs[0]").unwrap()
    }

    /// The 12-byte N5 block header of the zarr-extensions examples (mode 0, 2-D, 64 x 64).
    const N5_HEADER: &str = "AAAAAgAAAEAAAABA";

    #[test]
    fn pad_round_trips_at_either_end() {
        for (location, encoded) in [
            (PadLocation::Start, &b"HDdata"[..]),
            (PadLocation::End, &b"dataHD"[..]),
        ] {
            let codec = PadCodec::new(location, Bytes::from_static(b"HD"));
            let enc = codec.encode(Bytes::from_static(b"data")).unwrap();
            assert_eq!(&enc[..], encoded);
            assert_eq!(
                codec.encoded_size(ExpectedSize::Exact(4)),
                Some(ExpectedSize::Exact(6))
            );
            assert_eq!(
                codec.decode(enc.clone(), ExpectedSize::Exact(4)).unwrap(),
                Bytes::from_static(b"data")
            );
            let mut out = [0u8; 4];
            codec.decode_into(enc.clone(), &mut out).unwrap();
            assert_eq!(&out, b"data");
            let mut part = [0u8; 2];
            codec
                .partial_decode_into(&enc, ExpectedSize::Exact(4), 1, &mut part)
                .unwrap();
            assert_eq!(&part, b"at");
            // Whatever the padding holds is dropped.
            let mut other = enc.to_vec();
            let at = if location == PadLocation::Start { 0 } else { 4 };
            other[at] = b'?';
            assert_eq!(
                codec.decode(other.into(), ExpectedSize::Exact(4)).unwrap(),
                Bytes::from_static(b"data")
            );
            let back = PadCodec::from_metadata(&codec.to_metadata()).unwrap();
            assert_eq!(back, codec);
        }
    }

    #[test]
    fn metadata_as_the_proposals_write_it() {
        let codec = PadCodec::from_metadata(&meta(json!({
            "name": "pad",
            "configuration": {"location": "start", "nbytes": 12, "padding": N5_HEADER}
        })))
        .unwrap();
        assert_eq!(
            &codec.padding()[..],
            &[0, 0, 0, 2, 0, 0, 0, 0x40, 0, 0, 0, 0x40]
        );
        assert_eq!(
            codec.to_metadata().to_json(),
            json!({"name": "pad", "configuration":
                {"location": "start", "nbytes": 12, "padding": N5_HEADER}})
        );
        let zeros = PadCodec::from_metadata(&meta(json!({
            "name": "pad", "configuration": {"location": "end", "nbytes": 3}
        })))
        .unwrap();
        assert_eq!(zeros, PadCodec::zeros(PadLocation::End, 3));
        assert_eq!(
            zeros.to_metadata().to_json(),
            json!({"name": "pad", "configuration": {"location": "end", "nbytes": 3}})
        );

        let offset = OffsetCodec::from_metadata(&meta(json!({
            "name": "offset", "configuration": {"offset": 12, "prefix": N5_HEADER}
        })))
        .unwrap();
        assert_eq!(offset.prefix(), codec.padding());
        assert_eq!(
            offset.to_metadata().to_json(),
            json!({"name": "offset", "configuration": {"offset": 12, "prefix": N5_HEADER}})
        );
        assert_eq!(
            OffsetCodec::from_metadata(&meta(
                json!({"name": "offset", "configuration": {"offset": 0}})
            ))
            .unwrap(),
            OffsetCodec::zeros(0)
        );
    }

    #[test]
    fn bad_configurations_are_refused() {
        for (config, says) in [
            (json!({"nbytes": 2}), "location"),
            (json!({"location": "middle", "nbytes": 2}), "location"),
            (json!({"location": "start"}), "nbytes"),
            (json!({"location": "start", "nbytes": -1}), "nbytes"),
            (
                json!({"location": "start", "nbytes": 2, "padding": "!!"}),
                "base64",
            ),
            (
                json!({"location": "start", "nbytes": 2, "padding": "AAAA"}),
                "3 bytes",
            ),
            (json!({"location": "start", "nbytes": 2, "fill": 0}), "fill"),
            (json!({"location": "end", "nbytes": u64::MAX}), "bytes"),
        ] {
            let err =
                PadCodec::from_metadata(&meta(json!({"name": "pad", "configuration": config})))
                    .unwrap_err();
            assert!(matches!(err, Error::InvalidConfiguration { .. }), "{err:?}");
            assert!(err.to_string().contains(says), "{err}");
        }
        for (config, says) in [
            (json!({}), "offset"),
            (json!({"offset": "12"}), "offset"),
            (json!({"offset": 4, "prefix": N5_HEADER}), "12 bytes"),
            (json!({"offset": 4, "suffix": ""}), "suffix"),
        ] {
            let err = OffsetCodec::from_metadata(&meta(
                json!({"name": "offset", "configuration": config}),
            ))
            .unwrap_err();
            assert!(matches!(err, Error::InvalidConfiguration { .. }), "{err:?}");
            assert!(err.to_string().contains(says), "{err}");
        }
    }

    #[test]
    fn short_and_wrong_sized_chunks_are_errors() {
        let codec = OffsetCodec::zeros(4);
        let err = codec
            .decode(Bytes::from_static(b"abc"), ExpectedSize::AtMost(10))
            .unwrap_err();
        assert!(matches!(err, Error::Truncated { .. }), "{err:?}");
        let err = codec
            .decode(Bytes::from_static(b"abcdef"), ExpectedSize::Exact(3))
            .unwrap_err();
        assert!(matches!(err, Error::DecodedSizeMismatch { .. }), "{err:?}");
        let mut out = [0u8; 3];
        assert!(
            codec
                .decode_into(Bytes::from_static(b"abcdef"), &mut out)
                .is_err()
        );
        let pad = PadCodec::zeros(PadLocation::End, 8);
        let err = pad
            .decode(Bytes::from_static(b"short"), ExpectedSize::AtMost(10))
            .unwrap_err();
        assert!(err.to_string().contains("end"), "{err}");
        let err = pad
            .partial_decode_into(
                &Bytes::from_static(b"0123456789"),
                ExpectedSize::Exact(2),
                1,
                &mut [0u8; 2],
            )
            .unwrap_err();
        assert!(matches!(err, Error::InvalidRegion { .. }), "{err:?}");
    }
}
