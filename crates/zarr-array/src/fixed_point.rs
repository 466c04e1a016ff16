//! Reads and writes of fixed-point arrays as the numbers they stand for.

use zarr_core::{DataType, FixedPointType};
use zarr_store::{ReadableStore, WritableStore};

use crate::Array;
use crate::error::{Error, Result};
use crate::region::IntoRegion;

impl<S: ReadableStore + ?Sized> Array<S> {
    /// The array's fixed-point type, or [`Error::ElementType`] naming `element`.
    pub(crate) fn fixed_point_type(&self) -> Result<FixedPointType> {
        match &self.metadata.data_type {
            DataType::FixedPoint(fp) => Ok(*fp),
            other => Err(Error::element_type(
                self.path.as_str(),
                other,
                "f64 (fixed-point values)",
            )),
        }
    }

    /// Read `region` of a fixed-point array ([`DataType::FixedPoint`]: `Q7f8`, `N0f8`,
    /// `binary_fixed_point`) as the numbers its stored integers stand for, in C order: each
    /// integer divided by the type's [scale](FixedPointType::scale), the nearest `f64`.
    /// `read::<i16>` (the base type's integer) reads the stored integers themselves.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::ArrayBuilder;
    /// use zarr_store::MemoryStore;
    ///
    /// let store = Arc::new(MemoryStore::new());
    /// let data_type = "N0f8".parse()?;
    /// let array = ArrayBuilder::new(vec![4], data_type, vec![4])
    ///     .create(store, "/gray")
    ///     .await?;
    /// array.write_fixed_point(.., &[0.0, 0.2, 0.5, 1.0]).await?;
    /// // Stored as uint8, 0 to 255; 0.5 is between two of them and rounds to the nearer.
    /// assert_eq!(array.read::<u8>(..).await?, [0, 51, 128, 255]);
    /// assert_eq!(array.read_fixed_point(2..).await?, [128.0 / 255.0, 1.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::ElementType`] unless the data type is a fixed-point type; as
    /// [`Array::read_bytes`].
    pub async fn read_fixed_point(&self, region: impl IntoRegion) -> Result<Vec<f64>> {
        let fp = self.fixed_point_type()?;
        let bytes = self.read_bytes(region).await?;
        Ok(fixed_point_values(&fp, &bytes))
    }
}

/// The numbers the stored integers in `bytes` (native byte order) stand for.
pub(crate) fn fixed_point_values(fp: &FixedPointType, bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(fp.size())
        .map(|element| fp.to_f64(fp.raw_from_ne_bytes(element)))
        .collect()
}

impl<S: WritableStore + ?Sized> Array<S> {
    /// Write `values` (C order over `region`) to a fixed-point array: each the nearest
    /// value the type holds (the stored integer nearest to `value × scale`, ties to even).
    /// `write::<i16>` writes stored integers themselves.
    ///
    /// # Errors
    /// [`Error::ElementType`] unless the data type is a fixed-point type;
    /// [`Error::InvalidValue`], before anything is written, for a value that is NaN,
    /// infinite or outside the type's range (naming the first); as [`Array::write`].
    pub async fn write_fixed_point(&self, region: impl IntoRegion, values: &[f64]) -> Result<()> {
        let fp = self.fixed_point_type()?;
        let mut bytes = Vec::with_capacity(values.len() * fp.size());
        for (i, &value) in values.iter().enumerate() {
            let raw = fp.from_f64(value).ok_or_else(|| {
                let (min, max) = fp.raw_range();
                Error::InvalidValue {
                    array: self.path.as_str().to_owned(),
                    reason: format!(
                        "value {i} ({value}) is not a {} value: it holds {} to {}",
                        self.metadata.data_type,
                        fp.to_f64(min),
                        fp.to_f64(max)
                    ),
                }
            })?;
            bytes.extend_from_slice(&fp.raw_to_ne_bytes(raw));
        }
        self.write_bytes(region, &bytes).await
    }
}
