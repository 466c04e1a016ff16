//! What a codec sees of a chunk: its shape, data type and fill value.

use zarr_core::{DataType, FillValue};

use crate::error::{Error, Result};

/// The decoded form of a chunk as one codec sees it: shape, data type and fill value.
///
/// A codec chain starts from the array's chunk representation; every array->array codec
/// computes the representation it passes on (see
/// [`ArrayToArrayCodec::encoded_representation`](crate::ArrayToArrayCodec::encoded_representation)).
///
/// The constructor checks that the fill value suits the data type and that the element count
/// and (for fixed-size types) the byte size fit in `u64`, so the helpers below cannot overflow.
///
/// ```
/// use zarr_codecs::ChunkRepresentation;
/// use zarr_core::{DataType, FillValue};
///
/// let repr = ChunkRepresentation::try_new(
///     vec![64, 64],
///     DataType::UInt16,
///     FillValue::new(0u16.to_ne_bytes()),
/// )?;
/// assert_eq!(repr.num_elements(), 4096);
/// assert_eq!(repr.fixed_size(), Some(8192));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChunkRepresentation {
    shape: Vec<u64>,
    data_type: DataType,
    fill_value: FillValue,
    num_elements: u64,
}

impl ChunkRepresentation {
    /// A representation of a chunk of `shape` elements of `data_type`.
    ///
    /// # Errors
    /// [`Error::InvalidRepresentation`] if the fill value does not suit the data type, or the
    /// element count or byte size overflows `u64`.
    pub fn try_new(shape: Vec<u64>, data_type: DataType, fill_value: FillValue) -> Result<Self> {
        fill_value
            .check(&data_type)
            .map_err(|e| Error::InvalidRepresentation {
                reason: zarr_core::ErrorChain(&e).to_string(),
            })?;
        let num_elements = shape
            .iter()
            .try_fold(1u64, |acc, &n| acc.checked_mul(n))
            .ok_or_else(|| Error::InvalidRepresentation {
                reason: format!("the element count of shape {shape:?} overflows u64"),
            })?;
        if let Some(size) = data_type.fixed_size()
            && num_elements.checked_mul(size as u64).is_none()
        {
            return Err(Error::InvalidRepresentation {
                reason: format!("the byte size of shape {shape:?} of {data_type} overflows u64"),
            });
        }
        Ok(Self {
            shape,
            data_type,
            fill_value,
            num_elements,
        })
    }

    /// The same data type and fill value with another shape.
    ///
    /// # Errors
    /// As [`ChunkRepresentation::try_new`].
    pub fn with_shape(&self, shape: Vec<u64>) -> Result<Self> {
        Self::try_new(shape, self.data_type.clone(), self.fill_value.clone())
    }

    /// The representation codecs see: a fixed-point type as its integer base type (the
    /// same bytes), everything else unchanged.
    pub(crate) fn stored(&self) -> Self {
        match &self.data_type {
            DataType::FixedPoint(fp) => Self {
                shape: self.shape.clone(),
                data_type: fp.base_type(),
                fill_value: FillValue::new(self.fill_value.as_bytes()),
                num_elements: self.num_elements,
            },
            _ => self.clone(),
        }
    }

    /// The chunk shape.
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// The number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The element data type.
    pub fn data_type(&self) -> &DataType {
        &self.data_type
    }

    /// The fill value (one element, native byte order).
    pub fn fill_value(&self) -> &FillValue {
        &self.fill_value
    }

    /// The number of elements, the product of the shape (1 for a 0-d chunk).
    pub fn num_elements(&self) -> u64 {
        self.num_elements
    }

    /// The element size in bytes, or `None` for a variable-length type.
    pub fn element_size(&self) -> Option<usize> {
        self.data_type.fixed_size()
    }

    /// The size of the decoded chunk in bytes, or `None` for a variable-length type.
    pub fn fixed_size(&self) -> Option<u64> {
        // Checked in the constructor: cannot overflow.
        self.element_size()
            .map(|size| self.num_elements * size as u64)
    }

    /// The element count as a `usize`, for in-memory indexing.
    ///
    /// # Errors
    /// [`Error::InvalidRepresentation`] if the count does not fit in `usize`.
    pub fn num_elements_usize(&self) -> Result<usize> {
        usize::try_from(self.num_elements).map_err(|_| Error::InvalidRepresentation {
            reason: format!(
                "{} elements do not fit in memory on this platform",
                self.num_elements
            ),
        })
    }

    /// The decoded size in bytes as a `usize`, for in-memory buffers.
    ///
    /// # Errors
    /// [`Error::InvalidRepresentation`] for a variable-length type or a size that does not fit
    /// in `usize`.
    pub fn fixed_size_usize(&self) -> Result<usize> {
        let size = self
            .fixed_size()
            .ok_or_else(|| Error::InvalidRepresentation {
                reason: format!("{} has no fixed element size", self.data_type),
            })?;
        usize::try_from(size).map_err(|_| Error::InvalidRepresentation {
            reason: format!("{size} bytes do not fit in memory on this platform"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        let r =
            ChunkRepresentation::try_new(vec![2, 3], DataType::Complex64, FillValue::new([0; 8]))
                .unwrap();
        assert_eq!(r.num_elements(), 6);
        assert_eq!(r.fixed_size(), Some(48));
        assert_eq!(r.rank(), 2);
        let scalar =
            ChunkRepresentation::try_new(vec![], DataType::UInt8, FillValue::new([0])).unwrap();
        assert_eq!(scalar.num_elements(), 1);
        let s =
            ChunkRepresentation::try_new(vec![4], DataType::String, FillValue::from("")).unwrap();
        assert_eq!(s.fixed_size(), None);
        assert!(s.fixed_size_usize().is_err());
    }

    #[test]
    fn overflow_and_bad_fill_are_refused() {
        let e =
            ChunkRepresentation::try_new(vec![u64::MAX, 2], DataType::UInt8, FillValue::new([0]))
                .unwrap_err();
        assert!(e.to_string().contains("overflows"), "{e}");
        let e =
            ChunkRepresentation::try_new(vec![1 << 62], DataType::UInt64, FillValue::new([0; 8]))
                .unwrap_err();
        assert!(e.to_string().contains("byte size"), "{e}");
        let e = ChunkRepresentation::try_new(vec![2], DataType::UInt16, FillValue::new([0]))
            .unwrap_err();
        assert!(e.to_string().contains("expected 2 bytes"), "{e}");
    }
}
