//! Typed reads and writes of arrays of the `ndarray` data type, whose elements are arrays.

use zarr_codecs::{ArrayBytes, VlenBytes};
use zarr_core::{DataType, NdArrayType};
use zarr_store::{ReadableStore, WritableStore};

use crate::Array;
use crate::element::{Element, as_bytes, as_bytes_mut, zeroed_vec};
use crate::error::{Error, Result};
use crate::region::IntoRegion;

/// One element of an array of the `ndarray` data type ([`DataType::NdArray`]): an array of
/// its own, as its shape and its scalars in C order.
///
/// [`Array::read_elements`] returns them, [`Array::write_elements`] takes them. With the
/// `ndarray` feature they convert to and from [`ndarray::ArrayD`].
#[derive(Debug, Clone, PartialEq)]
pub struct NdElement<T> {
    /// The element's shape: the data type's pattern with each variable dimension filled in.
    pub shape: Vec<u64>,
    /// The scalars in C order; as many as the product of `shape`.
    pub values: Vec<T>,
}

impl<T> NdElement<T> {
    /// An element of `shape` holding `values` (C order). Whether the two agree, and agree
    /// with the array's pattern, is checked when the element is written.
    pub fn new(shape: Vec<u64>, values: Vec<T>) -> Self {
        Self { shape, values }
    }

    /// The element as an [`ndarray::ArrayD`].
    ///
    /// # Errors
    /// [`ndarray::ShapeError`] if `values` does not hold `shape`'s number of scalars (never
    /// for elements [`Array::read_elements`] returns).
    #[cfg(feature = "ndarray")]
    pub fn into_ndarray(self) -> std::result::Result<ndarray::ArrayD<T>, ndarray::ShapeError> {
        let shape: Vec<usize> = self
            .shape
            .iter()
            .map(|&n| usize::try_from(n).unwrap_or(usize::MAX))
            .collect();
        ndarray::ArrayD::from_shape_vec(shape, self.values)
    }
}

/// An element from an [`ndarray`] array of any dimensionality and memory layout.
#[cfg(feature = "ndarray")]
impl<T: Clone, S: ndarray::Data<Elem = T>, D: ndarray::Dimension> From<&ndarray::ArrayBase<S, D>>
    for NdElement<T>
{
    fn from(array: &ndarray::ArrayBase<S, D>) -> Self {
        Self {
            shape: array.shape().iter().map(|&n| n as u64).collect(),
            values: array.iter().cloned().collect(),
        }
    }
}

impl<S: ?Sized> Array<S> {
    /// The array's `ndarray` element type, checked against the scalar type `T`.
    pub(crate) fn nd_type<T: Element>(&self) -> Result<&NdArrayType> {
        match &self.metadata.data_type {
            DataType::NdArray(nd) if T::is_compatible(nd.dtype()) => Ok(nd),
            other => Err(Error::element_type(
                self.path.as_str(),
                other,
                format!("NdElement<{}>", T::NAME),
            )),
        }
    }
}

impl<S: ReadableStore + ?Sized> Array<S> {
    /// One element of `bytes` (native order) as an [`NdElement`].
    fn nd_element<T: Element>(
        &self,
        nd: &NdArrayType,
        bytes: &[u8],
        i: usize,
    ) -> Result<NdElement<T>> {
        let shape = nd
            .element_shape(bytes.len())
            .ok_or_else(|| Error::InvalidValue {
                array: self.path.as_str().to_owned(),
                reason: format!(
                    "element {i} of the region holds {} bytes, which is no shape of {}",
                    bytes.len(),
                    self.metadata.data_type
                ),
            })?;
        let mut values =
            zeroed_vec::<T>(bytes.len() / size_of::<T>()).map_err(|e| self.codecs_error(e))?;
        let out = as_bytes_mut(&mut values);
        out.copy_from_slice(bytes);
        if let Some(at) = T::first_invalid(out) {
            return Err(Error::InvalidValue {
                array: self.path.as_str().to_owned(),
                reason: format!(
                    "element {i} of the region holds the byte {} at {at}, not a valid {}",
                    out[at],
                    T::NAME
                ),
            });
        }
        Ok(NdElement { shape, values })
    }

    /// Read `region` of an array of the `ndarray` data type ([`DataType::NdArray`]) as one
    /// [`NdElement`] per element (C order over the region), each with its own shape. `T` is
    /// the scalar type, checked as [`Array::read`] checks an array's (`f32` for
    /// `{"dtype": "float32", ...}`). Unwritten elements are the fill value: by default the
    /// empty element (variable extents 0), or zeros for a pattern without variable
    /// dimensions.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::{ArrayBuilder, NdElement};
    /// use zarr_core::{DataType, NdArrayType};
    /// use zarr_store::MemoryStore;
    ///
    /// // Each element is an (n, 2) array of float32: a ragged list of points.
    /// let points = DataType::NdArray(NdArrayType::new(DataType::Float32, vec![None, Some(2)])?);
    /// let array = ArrayBuilder::new(vec![3], points, vec![2])
    ///     .create(Arc::new(MemoryStore::new()), "/tracks")
    ///     .await?;
    /// array
    ///     .write_elements(0..2, &[
    ///         NdElement::new(vec![2, 2], vec![0.0f32, 1.0, 2.0, 3.0]),
    ///         NdElement::new(vec![1, 2], vec![5.0, 6.0]),
    ///     ])
    ///     .await?;
    /// let cells = array.read_elements::<f32>(..).await?;
    /// assert_eq!(cells[1], NdElement::new(vec![1, 2], vec![5.0, 6.0]));
    /// assert_eq!(cells[2].shape, [0, 2]); // never written: the empty element
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::ElementType`] unless the data type is `ndarray` with scalars of type `T`;
    /// [`Error::InvalidValue`] for an element whose length is no shape of the pattern (two or
    /// more variable dimensions and a non-empty element) or a `bool` scalar other than 0 or
    /// 1; as [`Array::read`].
    pub async fn read_elements<T: Element>(
        &self,
        region: impl IntoRegion,
    ) -> Result<Vec<NdElement<T>>> {
        let nd = self.nd_type::<T>()?;
        let bytes = self.read_array_bytes(region).await?;
        self.nd_elements(nd, bytes)
    }

    /// The elements of `bytes` (read from the array) as [`NdElement`]s.
    pub(crate) fn nd_elements<T: Element>(
        &self,
        nd: &NdArrayType,
        bytes: ArrayBytes,
    ) -> Result<Vec<NdElement<T>>> {
        match bytes {
            ArrayBytes::Fixed(bytes) => bytes
                .chunks_exact(nd.item_size())
                .enumerate()
                .map(|(i, element)| self.nd_element(nd, element, i))
                .collect(),
            ArrayBytes::Variable(vlen) => vlen
                .iter()
                .enumerate()
                .map(|(i, element)| self.nd_element(nd, element, i))
                .collect(),
        }
    }

    /// [`Array::read_elements`] with each element as an [`ndarray::ArrayD`] (feature
    /// `ndarray`).
    ///
    /// # Errors
    /// As [`Array::read_elements`].
    #[cfg(feature = "ndarray")]
    pub async fn read_elements_ndarray<T: Element>(
        &self,
        region: impl IntoRegion,
    ) -> Result<Vec<ndarray::ArrayD<T>>> {
        self.read_elements::<T>(region)
            .await?
            .into_iter()
            .map(|e| {
                e.into_ndarray().map_err(|e| Error::InvalidValue {
                    array: self.path.as_str().to_owned(),
                    reason: e.to_string(),
                })
            })
            .collect()
    }
}

impl<S: WritableStore + ?Sized> Array<S> {
    /// Write `values` (C order over `region`) to an array of the `ndarray` data type; see
    /// [`Array::read_elements`]. Each element's shape must follow the data type's pattern
    /// (the same number of dimensions, the fixed ones equal) and hold as many values as its
    /// shape. With the `ndarray` feature, `NdElement::from(&array)` turns any
    /// [`ndarray`] array into an element.
    ///
    /// # Errors
    /// [`Error::ElementType`] unless the data type is `ndarray` with scalars of type `T`;
    /// [`Error::InvalidValue`] for an element whose shape does not follow the pattern or
    /// disagrees with its number of values; as [`Array::write`].
    pub async fn write_elements<T: Element>(
        &self,
        region: impl IntoRegion,
        values: &[NdElement<T>],
    ) -> Result<()> {
        let nd = self.nd_type::<T>()?;
        let invalid = |i: usize, reason: String| Error::InvalidValue {
            array: self.path.as_str().to_owned(),
            reason: format!("element {i} of the values: {reason}"),
        };
        let mut offsets = Vec::with_capacity(values.len() + 1);
        offsets.push(0u64);
        let mut bytes = Vec::new();
        for (i, element) in values.iter().enumerate() {
            let pattern = nd.shape();
            let follows = element.shape.len() == pattern.len()
                && element
                    .shape
                    .iter()
                    .zip(pattern)
                    .all(|(&n, &p)| p.is_none_or(|p| p == n));
            if !follows {
                return Err(invalid(
                    i,
                    format!(
                        "shape {:?} does not follow the pattern of {}",
                        element.shape, self.metadata.data_type
                    ),
                ));
            }
            let count = element
                .shape
                .iter()
                .try_fold(1u64, |acc, &n| acc.checked_mul(n));
            if count != Some(element.values.len() as u64) {
                return Err(invalid(
                    i,
                    format!(
                        "shape {:?} does not hold {} values",
                        element.shape,
                        element.values.len()
                    ),
                ));
            }
            bytes.extend_from_slice(as_bytes(&element.values));
            offsets.push(bytes.len() as u64);
        }
        if nd.element_size().is_some() {
            self.write_bytes(region, &bytes).await
        } else {
            let vlen =
                VlenBytes::try_new(offsets, bytes.into()).map_err(|e| self.codecs_error(e))?;
            self.write_array_bytes(region, ArrayBytes::Variable(vlen))
                .await
        }
    }
}
