//! The `zarrs.squeeze` codec: a chunk's dimensions of length 1 left out of its shape.

use zarr_core::{ExtensionObject, Region};

use crate::codec::ArrayToArrayCodec;
use crate::config::Config;
use crate::error::Result;
use crate::representation::ChunkRepresentation;

/// The `zarrs.squeeze` codec (array->array, zarrs' experimental extension): the codecs after
/// it see the chunk without its dimensions of length 1. A chunk of shape `[1, 512, 1, 512]`
/// reaches them as `[512, 512]`, which is what a codec limited in rank (as `zfp`, at most 4
/// dimensions) or one that wants a given rank (a `transpose` order) needs. A chunk whose
/// dimensions all have length 1 (and a 0-d one) becomes `[1]`, as in zarrs.
///
/// The elements keep their C order, so encoding and decoding move no bytes, and a region
/// of the chunk is the same region of the squeezed chunk: a chain with `zarrs.squeeze`
/// decodes parts of chunks whenever it would without it.
///
/// Configuration: none (`{}` or left out).
///
/// ```
/// use zarr_codecs::{ArrayToArrayCodec, ChunkRepresentation, SqueezeCodec};
/// use zarr_core::{DataType, FillValue};
///
/// let chunk = ChunkRepresentation::try_new(vec![1, 64, 1, 32], DataType::Float32, FillValue::from(0f32))?;
/// assert_eq!(SqueezeCodec.encoded_representation(&chunk)?.shape(), &[64, 32]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SqueezeCodec;

impl SqueezeCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "zarrs.squeeze";

    /// Parse `{"name": "zarrs.squeeze"}` (an empty `configuration` is allowed).
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`](crate::Error::InvalidConfiguration) for any
    /// configuration key.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        Config::new(metadata, &[])?;
        Ok(Self)
    }

    /// The shape of a squeezed chunk of shape `shape`.
    pub fn squeezed_shape(shape: &[u64]) -> Vec<u64> {
        let squeezed: Vec<u64> = shape.iter().copied().filter(|&n| n != 1).collect();
        if squeezed.is_empty() {
            vec![1]
        } else {
            squeezed
        }
    }
}

impl ArrayToArrayCodec for SqueezeCodec {
    fn to_metadata(&self) -> ExtensionObject {
        ExtensionObject::with_configuration(Self::NAME, serde_json::Map::new())
    }

    fn encoded_representation(&self, decoded: &ChunkRepresentation) -> Result<ChunkRepresentation> {
        decoded.with_shape(Self::squeezed_shape(decoded.shape()))
    }

    crate::codecs::relabel_codec_methods!();

    fn encoded_region(&self, region: &Region, decoded: &ChunkRepresentation) -> Option<Region> {
        if region.rank() != decoded.rank() {
            return None;
        }
        let kept: Vec<_> = region
            .ranges()
            .iter()
            .zip(decoded.shape())
            .filter(|&(_, &n)| n != 1)
            .map(|(range, _)| range.clone())
            .collect();
        if kept.is_empty() {
            // All of a chunk of one element (a region of it is empty or all of it).
            let len = region.num_elements().ok()?;
            return Region::try_new(std::iter::once(0..len).collect()).ok();
        }
        Region::try_new(kept).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array_bytes::ArrayBytes;
    use serde_json::json;
    use zarr_core::{DataType, FillValue};

    fn repr(shape: &[u64]) -> ChunkRepresentation {
        ChunkRepresentation::try_new(shape.to_vec(), DataType::UInt16, FillValue::from(0u16))
            .unwrap()
    }

    #[test]
    fn shapes_lose_their_ones() {
        for (shape, squeezed) in [
            (&[1, 5, 1, 7][..], &[5, 7][..]),
            (&[5, 7], &[5, 7]),
            (&[1, 1, 1], &[1]),
            (&[], &[1]),
            (&[3, 1], &[3]),
        ] {
            let encoded = SqueezeCodec.encoded_representation(&repr(shape)).unwrap();
            assert_eq!(encoded.shape(), squeezed, "{shape:?}");
        }
    }

    #[test]
    fn metadata_round_trips_and_refuses_keys() {
        let meta = SqueezeCodec.to_metadata();
        assert_eq!(
            meta.to_json(),
            json!({"name": "zarrs.squeeze", "configuration": {}})
        );
        SqueezeCodec::from_metadata(&meta).unwrap();
        SqueezeCodec::from_metadata(&ExtensionObject::new(SqueezeCodec::NAME)).unwrap();
        let bad = ExtensionObject::with_configuration(
            SqueezeCodec::NAME,
            json!({"axes": [0]}).as_object().unwrap().clone(),
        );
        let err = SqueezeCodec::from_metadata(&bad).unwrap_err();
        assert!(err.to_string().contains("axes"), "{err}");
    }

    #[test]
    fn regions_map_to_the_squeezed_chunk() {
        let decoded = repr(&[1, 5, 1, 7]);
        let region = Region::try_new(vec![0..1, 1..4, 0..1, 2..7]).unwrap();
        assert_eq!(
            SqueezeCodec.encoded_region(&region, &decoded),
            Some(Region::try_new(vec![1..4, 2..7]).unwrap())
        );
        let single = repr(&[1, 1]);
        assert_eq!(
            SqueezeCodec.encoded_region(&Region::full(&[1, 1]), &single),
            Some(Region::full(&[1]))
        );
        assert_eq!(
            SqueezeCodec.encoded_region(&Region::full(&[1]), &decoded),
            None
        );
    }

    #[test]
    fn chunks_of_the_wrong_size_are_refused() {
        let decoded = repr(&[1, 3]);
        let err = SqueezeCodec
            .decode(ArrayBytes::from(vec![0u8; 4]), &decoded)
            .unwrap_err();
        assert!(err.to_string().contains("zarrs.squeeze"), "{err}");
        let bytes = SqueezeCodec
            .encode(ArrayBytes::from(vec![1u8; 6]), &decoded)
            .unwrap();
        assert_eq!(bytes.into_fixed("test").unwrap().as_ref(), &[1u8; 6]);
    }
}
