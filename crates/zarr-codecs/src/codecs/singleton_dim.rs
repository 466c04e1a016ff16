//! The `singleton_dim` codec (zarr-extensions): dimensions of length 1 inserted into or
//! removed from a chunk's shape.

use serde_json::{Map, Value};
use zarr_core::{ExtensionObject, Region};

use crate::codec::ArrayToArrayCodec;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::representation::ChunkRepresentation;

/// One step of a [`SingletonDimCodec`], applied to the shape on encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SingletonDimOp {
    /// Insert a dimension of length 1 at this index (`{"insert": i}`).
    Insert(usize),
    /// Remove the dimension at this index, which must have length 1 (`{"remove": i}`).
    Remove(usize),
}

/// The `singleton_dim` codec (array->array, zarr-extensions): the codecs after it see the
/// chunk with dimensions of length 1 inserted or removed, as `operations` say, in order
/// (each index counts in the shape the operations before it made). Decoding undoes them
/// in reverse. It lets a codec that wants a given rank (a 2-D image codec) take one plane
/// of a 3-D array, or a `transpose` order of another rank apply.
///
/// Elements keep their C order, so no bytes move and a chain with it decodes parts of
/// chunks whenever it would without it. An operation the chunk's shape does not allow (an
/// index past the end; removing a dimension longer than 1) is an
/// [`Error::IncompatibleRepresentation`] when the array is opened.
///
/// ```
/// use zarr_codecs::{ArrayToArrayCodec, ChunkRepresentation, SingletonDimCodec, SingletonDimOp};
/// use zarr_core::{DataType, FillValue};
///
/// let codec = SingletonDimCodec::new(vec![SingletonDimOp::Insert(0), SingletonDimOp::Remove(3)]);
/// let chunk = ChunkRepresentation::try_new(vec![64, 32, 1], DataType::UInt8, FillValue::from(0u8))?;
/// assert_eq!(codec.encoded_representation(&chunk)?.shape(), &[1, 64, 32]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SingletonDimCodec {
    operations: Vec<SingletonDimOp>,
}

impl SingletonDimCodec {
    /// The codec's name in metadata.
    pub const NAME: &'static str = "singleton_dim";

    /// A codec applying `operations` in order on encoding.
    pub fn new(operations: Vec<SingletonDimOp>) -> Self {
        Self { operations }
    }

    /// The operations, in encoding order.
    pub fn operations(&self) -> &[SingletonDimOp] {
        &self.operations
    }

    /// Parse `{"name": "singleton_dim", "configuration": {"operations": [{"insert": 0},
    /// {"remove": 3}]}}`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] unless `operations` is a list of objects of exactly
    /// one key, `insert` or `remove`, holding a non-negative integer.
    pub fn from_metadata(metadata: &ExtensionObject) -> Result<Self> {
        let config = Config::new(metadata, &["operations"])?;
        let list = config.required("operations")?;
        let Some(list) = list.as_array() else {
            return Err(config.error("operations", "a list", list));
        };
        let operations = list
            .iter()
            .enumerate()
            .map(|(i, op)| {
                let key = format!("operations[{i}]");
                let expected = "an object of one key, \"insert\" or \"remove\"";
                let Some(map) = op.as_object().filter(|m| m.len() == 1) else {
                    return Err(config.error(&key, expected, op));
                };
                let (name, index) = map.iter().next().expect("one key");
                let index = config.uint(&format!("{key}.{name}"), index)?;
                let index = usize::try_from(index).map_err(|_| {
                    Error::config(Self::NAME, format!("`{key}.{name}` is too large"))
                })?;
                match name.as_str() {
                    "insert" => Ok(SingletonDimOp::Insert(index)),
                    "remove" => Ok(SingletonDimOp::Remove(index)),
                    _ => Err(config.error(&key, expected, op)),
                }
            })
            .collect::<Result<_>>()?;
        Ok(Self { operations })
    }

    /// The shape after the operations, or why they do not apply to `shape`.
    fn encoded_shape(&self, shape: &[u64]) -> std::result::Result<Vec<u64>, String> {
        let mut shape = shape.to_vec();
        for (i, op) in self.operations.iter().enumerate() {
            match *op {
                SingletonDimOp::Insert(at) if at <= shape.len() => shape.insert(at, 1),
                SingletonDimOp::Remove(at) if at < shape.len() && shape[at] == 1 => {
                    shape.remove(at);
                }
                SingletonDimOp::Insert(at) | SingletonDimOp::Remove(at) => {
                    return Err(format!(
                        "operations[{i}] ({op:?}) does not apply to a shape {shape:?} \
                         (index {at})"
                    ));
                }
            }
        }
        Ok(shape)
    }
}

impl ArrayToArrayCodec for SingletonDimCodec {
    fn to_metadata(&self) -> ExtensionObject {
        let operations = self
            .operations
            .iter()
            .map(|op| {
                let (key, at) = match *op {
                    SingletonDimOp::Insert(at) => ("insert", at),
                    SingletonDimOp::Remove(at) => ("remove", at),
                };
                let mut map = Map::new();
                map.insert(key.into(), Value::from(at as u64));
                Value::Object(map)
            })
            .collect();
        let mut config = Map::new();
        config.insert("operations".into(), Value::Array(operations));
        ExtensionObject::with_configuration(Self::NAME, config)
    }

    fn encoded_representation(&self, decoded: &ChunkRepresentation) -> Result<ChunkRepresentation> {
        let shape = self
            .encoded_shape(decoded.shape())
            .map_err(|reason| Error::incompatible(Self::NAME, reason))?;
        decoded.with_shape(shape)
    }

    crate::codecs::relabel_codec_methods!();

    fn encoded_region(&self, region: &Region, decoded: &ChunkRepresentation) -> Option<Region> {
        if region.rank() != decoded.rank() {
            return None;
        }
        let mut ranges = region.ranges().to_vec();
        for op in &self.operations {
            match *op {
                SingletonDimOp::Insert(at) if at <= ranges.len() => ranges.insert(at, 0..1),
                // A dimension of length 1: the region takes all of it (or is empty, and
                // has no image).
                SingletonDimOp::Remove(at) if ranges.get(at) == Some(&(0..1)) => {
                    ranges.remove(at);
                }
                _ => return None,
            }
        }
        Region::try_new(ranges).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array_bytes::ArrayBytes;
    use serde_json::json;
    use zarr_core::{DataType, FillValue};

    fn repr(shape: &[u64]) -> ChunkRepresentation {
        ChunkRepresentation::try_new(shape.to_vec(), DataType::Int16, FillValue::from(0i16))
            .unwrap()
    }

    fn codec(operations: Value) -> Result<SingletonDimCodec> {
        SingletonDimCodec::from_metadata(
            &ExtensionObject::from_json(
                &json!({"name": "singleton_dim", "configuration": {"operations": operations}}),
                "codecs[0]",
            )
            .unwrap(),
        )
    }

    #[test]
    fn the_extension_example_applies_in_order() {
        let c = codec(json!([{"insert": 0}, {"remove": 3}])).unwrap();
        assert_eq!(
            c.operations(),
            [SingletonDimOp::Insert(0), SingletonDimOp::Remove(3)]
        );
        assert_eq!(
            c.to_metadata().to_json(),
            json!({"name": "singleton_dim", "configuration":
                {"operations": [{"insert": 0}, {"remove": 3}]}})
        );
        // [a, b, 1] -> insert 0 -> [1, a, b, 1] -> remove 3 -> [1, a, b]
        assert_eq!(
            c.encoded_representation(&repr(&[5, 6, 1])).unwrap().shape(),
            &[1, 5, 6]
        );
        let err = c.encoded_representation(&repr(&[5, 6, 2])).unwrap_err();
        assert!(
            matches!(err, Error::IncompatibleRepresentation { .. }),
            "{err:?}"
        );
        let err = c.encoded_representation(&repr(&[5, 6])).unwrap_err();
        assert!(err.to_string().contains("index 3"), "{err}");
        let none = codec(json!([])).unwrap();
        assert_eq!(
            none.encoded_representation(&repr(&[])).unwrap().shape(),
            &[] as &[u64]
        );
        let scalar = codec(json!([{"insert": 0}, {"insert": 1}])).unwrap();
        assert_eq!(
            scalar.encoded_representation(&repr(&[])).unwrap().shape(),
            &[1, 1]
        );
    }

    #[test]
    fn regions_follow_the_shape() {
        let c = codec(json!([{"remove": 0}, {"insert": 2}])).unwrap();
        let decoded = repr(&[1, 4, 3]);
        assert_eq!(
            c.encoded_region(&Region::try_new(vec![0..1, 1..3, 0..2]).unwrap(), &decoded),
            Some(Region::try_new(vec![1..3, 0..2, 0..1]).unwrap())
        );
        assert_eq!(
            c.encoded_region(&Region::try_new(vec![0..0, 1..3, 0..2]).unwrap(), &decoded),
            None
        );
        assert_eq!(c.encoded_region(&Region::full(&[4, 3]), &decoded), None);
        // Bytes pass through unchanged, checked against the chunk's size.
        let bytes = ArrayBytes::from(vec![7u8; 24]);
        let encoded = c.encode(bytes.clone(), &decoded).unwrap();
        assert_eq!(c.decode(encoded, &decoded).unwrap(), bytes);
        let err = c
            .decode(ArrayBytes::from(vec![0u8; 4]), &decoded)
            .unwrap_err();
        assert!(err.to_string().contains("singleton_dim"), "{err}");
    }

    #[test]
    fn bad_configurations_are_refused() {
        for (operations, says) in [
            (json!({"insert": 0}), "a list"),
            (json!([{"insert": 0, "remove": 1}]), "operations[0]"),
            (json!([{"squeeze": 0}]), "operations[0]"),
            (json!([{"insert": -1}]), "operations[0].insert"),
            (json!([0]), "operations[0]"),
        ] {
            let err = codec(operations).unwrap_err();
            assert!(matches!(err, Error::InvalidConfiguration { .. }), "{err:?}");
            assert!(err.to_string().contains(says), "{err}");
        }
        let err =
            SingletonDimCodec::from_metadata(&ExtensionObject::new("singleton_dim")).unwrap_err();
        assert!(err.to_string().contains("operations"), "{err}");
    }
}
