//! The `reshape` codec (zarr-extensions): the chunk's elements, in the same C order, seen
//! with another shape.

use serde_json::Value;
use zarr_core::ExtensionObject;

use crate::array_bytes::ArrayBytes;
use crate::codec::ArrayToArrayCodec;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::representation::ChunkRepresentation;

/// How one dimension of a [`ReshapeCodec`]'s output is sized.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ReshapeDim {
    /// A fixed length (a positive integer in metadata).
    Size(u64),
    /// The product of these input dimensions' lengths (an array of dimension indices).
    InputDims(Vec<usize>),
    /// Whatever length makes the element counts equal (`-1`; at most one).
    Auto,
}

/// The `reshape` codec (array->array, zarr-extensions): the same elements in the same C
/// order, with the shape `shape` describes, so that the codecs after it see another
/// dimensionality (three 2-D planes as one, a flat run as a matrix). Encoding and decoding
/// move no bytes.
///
/// Configuration: `shape`, one entry per output dimension, each a positive length, a list
/// of input dimensions whose lengths multiply to give it, or `-1` (at most once) for the
/// length that keeps the element count. Refused when the chain is built: a shape whose
/// element count is not the chunk's, input dimensions that are not in increasing order
/// across the whole list or not in the chunk, and a list of input dimensions that does not
/// line up with the output (the output dimensions before it must hold as many elements as
/// the input dimensions before its first, and likewise after its last).
///
/// ```
/// use zarr_codecs::{ArrayToArrayCodec, ChunkRepresentation, ReshapeCodec, ReshapeDim};
/// use zarr_core::{DataType, FillValue};
///
/// let codec = ReshapeCodec::try_new(vec![ReshapeDim::InputDims(vec![0, 1]), ReshapeDim::Auto])?;
/// let chunk = ChunkRepresentation::try_new(vec![4, 5, 6], DataType::Int16, FillValue::from(0i16))?;
/// assert_eq!(codec.encoded_representation(&chunk)?.shape(), &[20, 6]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReshapeCodec {
    shape: Vec<ReshapeDim>,
}

fn product(lengths: impl IntoIterator<Item = u64>) -> Option<u64> {
    lengths.into_iter().try_fold(1u64, u64::checked_mul)
}

impl ReshapeCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "reshape";

    /// A codec giving chunks the output shape `shape`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a length of 0, more than one [`ReshapeDim::Auto`],
    /// or input dimensions that are not in increasing order across the whole list.
    pub fn try_new(shape: Vec<ReshapeDim>) -> Result<Self> {
        let autos = shape.iter().filter(|d| **d == ReshapeDim::Auto).count();
        if autos > 1 {
            return Err(Error::config(
                Self::NAME,
                format!("`shape` may hold -1 once, found it {autos} times"),
            ));
        }
        if shape.contains(&ReshapeDim::Size(0)) {
            return Err(Error::config(
                Self::NAME,
                "`shape` lengths must be positive",
            ));
        }
        let dims: Vec<usize> = shape
            .iter()
            .filter_map(|d| match d {
                ReshapeDim::InputDims(dims) => Some(dims.iter().copied()),
                _ => None,
            })
            .flatten()
            .collect();
        if dims.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Error::config(
                Self::NAME,
                format!(
                    "the input dimensions in `shape` must increase across the whole list \
                     (reshape never transposes), found {dims:?}"
                ),
            ));
        }
        Ok(Self { shape })
    }

    /// The output dimensions.
    pub fn shape(&self) -> &[ReshapeDim] {
        &self.shape
    }

    /// Parse `{"name": "reshape", "configuration": {"shape": [[0, 1], 10, -1]}}`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] for a missing or malformed `shape`, any other key, or
    /// a shape [`ReshapeCodec::try_new`] refuses.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(metadata, &["shape"])?;
        let value = config.required("shape")?;
        let expected = "a list of positive lengths, lists of input dimensions and at most one -1";
        let entries = value
            .as_array()
            .ok_or_else(|| config.error("shape", expected, value))?;
        let shape = entries
            .iter()
            .map(|entry| match entry {
                Value::Number(n) if n.as_i64() == Some(-1) => Ok(ReshapeDim::Auto),
                Value::Number(n) => match n.as_u64() {
                    Some(size) if size > 0 => Ok(ReshapeDim::Size(size)),
                    _ => Err(config.error("shape", expected, value)),
                },
                Value::Array(dims) => dims
                    .iter()
                    .map(|d| {
                        d.as_u64()
                            .and_then(|d| usize::try_from(d).ok())
                            .ok_or_else(|| config.error("shape", expected, value))
                    })
                    .collect::<Result<Vec<_>>>()
                    .map(ReshapeDim::InputDims),
                _ => Err(config.error("shape", expected, value)),
            })
            .collect::<Result<Vec<_>>>()?;
        Self::try_new(shape)
    }

    /// The output shape for a chunk of shape `input`.
    fn output_shape(&self, input: &[u64]) -> Result<Vec<u64>> {
        let refuse = |reason: String| {
            Error::incompatible(Self::NAME, format!("a chunk of shape {input:?}: {reason}"))
        };
        let overflow = || refuse("the lengths overflow".into());
        let total = product(input.iter().copied()).ok_or_else(overflow)?;
        let mut out: Vec<Option<u64>> = Vec::with_capacity(self.shape.len());
        for dim in &self.shape {
            out.push(match dim {
                ReshapeDim::Size(n) => Some(*n),
                ReshapeDim::Auto => None,
                ReshapeDim::InputDims(dims) => {
                    if let Some(&bad) = dims.iter().find(|&&d| d >= input.len()) {
                        return Err(refuse(format!(
                            "input dimension {bad} is not one of its {}",
                            input.len()
                        )));
                    }
                    Some(product(dims.iter().map(|&d| input[d])).ok_or_else(overflow)?)
                }
            });
        }
        let known = product(out.iter().flatten().copied()).ok_or_else(overflow)?;
        let shape: Vec<u64> = match out.iter().position(Option::is_none) {
            Some(auto) => {
                if known == 0 || total % known != 0 {
                    return Err(refuse(format!(
                        "its {total} elements are not a whole number of the {known} the \
                         other output dimensions hold, so -1 has no length"
                    )));
                }
                let mut shape: Vec<u64> = out.iter().map(|d| d.unwrap_or(1)).collect();
                shape[auto] = total / known;
                shape
            }
            None => out.into_iter().map(|d| d.unwrap_or(1)).collect(),
        };
        let count = product(shape.iter().copied()).ok_or_else(overflow)?;
        if count != total {
            return Err(refuse(format!(
                "the output shape {shape:?} holds {count} elements, not {total}"
            )));
        }
        for (i, dim) in self.shape.iter().enumerate() {
            if let ReshapeDim::InputDims(dims) = dim
                && let (Some(&first), Some(&last)) = (dims.first(), dims.last())
            {
                let before_out = product(shape[..i].iter().copied()).ok_or_else(overflow)?;
                let before_in = product(input[..first].iter().copied()).ok_or_else(overflow)?;
                let after_out = product(shape[i + 1..].iter().copied()).ok_or_else(overflow)?;
                let after_in = product(input[last + 1..].iter().copied()).ok_or_else(overflow)?;
                if before_out != before_in || after_out != after_in {
                    return Err(refuse(format!(
                        "output dimension {i} (input dimensions {dims:?}) does not line up: \
                         {before_out} elements before it and {after_out} after it in the \
                         output, {before_in} and {after_in} in the input"
                    )));
                }
            }
        }
        Ok(shape)
    }
}

impl ArrayToArrayCodec for ReshapeCodec {
    fn to_metadata(&self) -> ExtensionObject {
        let shape: Vec<Value> = self
            .shape
            .iter()
            .map(|d| match d {
                ReshapeDim::Size(n) => Value::from(*n),
                ReshapeDim::InputDims(dims) => Value::from(dims.clone()),
                ReshapeDim::Auto => Value::from(-1),
            })
            .collect();
        ExtensionObject::with_configuration(
            Self::NAME,
            crate::config::map([("shape", Value::from(shape))]),
        )
    }

    fn encoded_representation(&self, decoded: &ChunkRepresentation) -> Result<ChunkRepresentation> {
        decoded.with_shape(self.output_shape(decoded.shape())?)
    }

    fn encode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        self.output_shape(decoded.shape())?;
        array.validate_for(Self::NAME, decoded)?;
        Ok(array)
    }

    fn decode(&self, array: ArrayBytes, decoded: &ChunkRepresentation) -> Result<ArrayBytes> {
        let encoded = self.encoded_representation(decoded)?;
        array.validate_for(Self::NAME, &encoded)?;
        Ok(array)
    }

    fn decode_into(
        &self,
        array: ArrayBytes,
        decoded: &ChunkRepresentation,
        out: &mut [u8],
    ) -> Result<()> {
        let encoded = self.encoded_representation(decoded)?;
        array.validate_for(Self::NAME, &encoded)?;
        crate::codec::copy_exact(&array.into_fixed(Self::NAME)?, out)
    }

    fn decoded_position(&self, index: u64, _decoded: &ChunkRepresentation) -> Option<u64> {
        Some(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use zarr_core::{DataType, FillValue};

    fn codec(shape: serde_json::Value) -> Result<ReshapeCodec> {
        ReshapeCodec::from_metadata(&ExtensionObject::with_configuration(
            ReshapeCodec::NAME,
            json!({ "shape": shape }).as_object().unwrap().clone(),
        ))
    }

    fn out(shape: serde_json::Value, input: &[u64]) -> Result<Vec<u64>> {
        let repr =
            ChunkRepresentation::try_new(input.to_vec(), DataType::UInt8, FillValue::from(0u8))
                .unwrap();
        Ok(codec(shape)?
            .encoded_representation(&repr)?
            .shape()
            .to_vec())
    }

    #[test]
    fn output_shapes() {
        // The zarr-extensions example: [100, 50, 64, 3] -> [[0, 1], [2], 3].
        assert_eq!(
            out(json!([[0, 1], [2], 3]), &[100, 50, 64, 3]).unwrap(),
            [5000, 64, 3]
        );
        assert_eq!(out(json!([-1]), &[4, 5, 6]).unwrap(), [120]);
        assert_eq!(out(json!([2, -1, 3]), &[4, 5, 6]).unwrap(), [2, 20, 3]);
        assert_eq!(out(json!([[0], 30]), &[4, 5, 6]).unwrap(), [4, 30]);
        assert_eq!(out(json!([[], [0, 1, 2]]), &[4, 5, 6]).unwrap(), [1, 120]);
        assert_eq!(out(json!([1, 1, 24]), &[2, 3, 4]).unwrap(), [1, 1, 24]);
        // 0-d chunks hold one element.
        assert_eq!(out(json!([1]), &[]).unwrap(), [1]);
    }

    #[test]
    fn bad_shapes_are_refused() {
        for bad in [
            json!([-1, -1]),
            json!([0, 5]),
            json!([[1], [0]]),
            json!([[1, 0], 10]),
            json!([[0, 0]]),
            json!([-2]),
            json!([2.5]),
            json!("[4]"),
            json!([["0"]]),
        ] {
            assert!(
                matches!(codec(bad.clone()), Err(Error::InvalidConfiguration { .. })),
                "{bad}"
            );
        }
        for (shape, input) in [
            (json!([7]), vec![2u64, 3]),        // 7 elements for 6
            (json!([4, -1]), vec![2, 3]),       // 6 is not a multiple of 4
            (json!([[0], [3]]), vec![2, 3]),    // no dimension 3
            (json!([3, [1]]), vec![2, 3]),      // 3 before [1], but 2 before dimension 1
            (json!([[0], 2, [1]]), vec![2, 3]), // 6 x 2 elements
            (json!([[0], [2]]), vec![2, 3, 4]), // dimension 1's 3 elements go nowhere
        ] {
            assert!(
                matches!(
                    out(shape.clone(), &input),
                    Err(Error::IncompatibleRepresentation { .. })
                ),
                "{shape} on {input:?}"
            );
        }
    }

    #[test]
    fn elements_pass_through_in_c_order() {
        let repr =
            ChunkRepresentation::try_new(vec![2, 3, 2], DataType::UInt16, FillValue::from(0u16))
                .unwrap();
        let codec = codec(json!([-1, [2]])).unwrap();
        let values: Vec<u8> = (0..12u16).flat_map(u16::to_ne_bytes).collect();
        let encoded = codec
            .encode(ArrayBytes::fixed(values.clone()), &repr)
            .unwrap();
        assert_eq!(encoded.as_fixed().unwrap()[..], values[..]);
        let mut back = vec![0u8; values.len()];
        codec
            .decode_into(encoded.clone(), &repr, &mut back)
            .unwrap();
        assert_eq!(back, values);
        assert_eq!(
            codec.decode(encoded, &repr).unwrap().as_fixed().unwrap()[..],
            values[..]
        );
        // Written back as read.
        assert_eq!(
            codec.to_metadata().configuration.unwrap()["shape"],
            json!([-1, [2]])
        );
        // A chunk of the wrong size is an error.
        assert!(
            codec
                .decode(ArrayBytes::fixed(vec![0u8; 10]), &repr)
                .is_err()
        );
    }

    #[test]
    fn strings_pass_through() {
        use crate::array_bytes::VlenBytes;
        let repr =
            ChunkRepresentation::try_new(vec![2, 2], DataType::String, FillValue::new(Vec::new()))
                .unwrap();
        let codec = codec(json!([4])).unwrap();
        let values = VlenBytes::from_elements([&b"a"[..], b"", b"ccc", b"dd"]);
        let encoded = codec
            .encode(ArrayBytes::Variable(values.clone()), &repr)
            .unwrap();
        let back = codec.decode(encoded, &repr).unwrap();
        assert_eq!(back.as_variable().unwrap(), &values);
    }
}
