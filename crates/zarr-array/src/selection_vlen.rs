//! Selections of any data type as [`ArrayBytes`], and of `string` arrays as `String`s: the
//! variable-length counterparts of [`Array::read_selection`], [`Array::read_points`],
//! [`Array::write_selection`] and [`Array::write_points`].
//!
//! They run as the fixed-size ones do (see the `selection` module): one part per box of the
//! selection inside a decodable chunk (reads) or a stored unit (writes). What differs is how
//! values move: a read gathers each part's selected elements as it arrives and lays them
//! out in output order at the end; a write hands each unit its values in Arrow layout and
//! merges them into the unit's box under the unit's lock.

use tracing::Instrument;
use zarr_codecs::{ArrayBytes, VlenBytes};
use zarr_core::{DataType, Region};
use zarr_store::{ReadableStore, WritableStore};
use zarr_vlen::VlenStrings;

use crate::array::Array;

type CodecResult<T> = std::result::Result<T, zarr_codecs::Error>;
use crate::error::{Error, Result};
use crate::selection::{
    PartValues, Selection, WritePart, combinations, flatten_points, group_box, groups_dense, pick,
    plan_points, walk,
};

/// The elements of a variable-length read as they arrive, part by part, and where each goes
/// in the output.
struct Gather {
    /// The selected elements' bytes, in the order they arrived.
    arrived: Vec<u8>,
    /// For each output position, its element's start in `arrived` and length.
    slots: Vec<(usize, usize)>,
}

impl Gather {
    fn new(n: usize) -> Self {
        Self {
            arrived: Vec::new(),
            slots: vec![(0, 0); n],
        }
    }

    /// Take elements `b..b + n` of `boxed` for output positions `o..o + n`.
    fn take(&mut self, boxed: &VlenBytes, b: u64, o: u64, n: u64) -> CodecResult<()> {
        let (b, o, n) = (b as usize, o as usize, n as usize);
        let offsets = boxed.offsets();
        if b + n >= offsets.len() || o + n > self.slots.len() {
            return Err(zarr_codecs::Error::InvalidOffsets {
                reason: format!(
                    "a part of the selection holds {} elements; element {} was needed",
                    boxed.len(),
                    b + n - 1
                ),
            });
        }
        let base = self.arrived.len();
        let start = offsets[b] as usize;
        self.arrived
            .extend_from_slice(&boxed.values()[start..offsets[b + n] as usize]);
        for (i, slot) in self.slots[o..o + n].iter_mut().enumerate() {
            let (from, to) = (offsets[b + i] as usize, offsets[b + i + 1] as usize);
            *slot = (base + from - start, to - from);
        }
        Ok(())
    }

    /// The elements in output order.
    fn finish(self) -> CodecResult<VlenBytes> {
        let total = self.slots.iter().map(|s| s.1).sum();
        let mut values = Vec::with_capacity(total);
        let mut offsets = Vec::with_capacity(self.slots.len() + 1);
        offsets.push(0);
        for (start, len) in self.slots {
            values.extend_from_slice(&self.arrived[start..start + len]);
            offsets.push(values.len() as u64);
        }
        VlenBytes::try_new(offsets, values.into())
    }
}

/// Append elements `o..o + n` of `values` to `offsets` and `data` (Arrow layout).
fn append_elements(offsets: &mut Vec<u64>, data: &mut Vec<u8>, values: &VlenBytes, o: u64, n: u64) {
    let (o, n) = (o as usize, n as usize);
    let source = values.offsets();
    let start = source[o];
    data.extend_from_slice(&values.values()[start as usize..source[o + n] as usize]);
    let base = *offsets.last().unwrap_or(&0);
    offsets.extend(source[o + 1..=o + n].iter().map(|&x| base + x - start));
}

/// `n` elements as a `usize`.
fn element_count(n: u64, what: &str) -> Result<usize> {
    usize::try_from(n).map_err(|_| {
        zarr_core::Error::Overflow {
            what: format!("the number of elements in {what}"),
        }
        .into()
    })
}

impl<S: ReadableStore + ?Sized + 'static> Array<S> {
    /// Read an orthogonal [`Selection`] of an array of any data type, in C order over the
    /// selection's [shape](Selection::shape_in): fixed-size data as by
    /// [`Array::read_selection_bytes`], variable-length data (`string`, `bytes`) in Arrow
    /// layout. Convert the latter with `VlenStrings::from_vlen_bytes` or
    /// `VlenBinary::from_vlen_bytes` (crate `zarr-vlen`), or read `string` arrays with
    /// [`Array::read_selection_text`].
    ///
    /// Only the chunks (inner chunks, for a sharded array) holding selected elements are
    /// read. Beside the output, a read of variable-length data holds the selected elements
    /// once more until it lays them out in order.
    ///
    /// # Errors
    /// As [`Array::read_selection`].
    pub async fn read_selection_array_bytes(&self, selection: &Selection) -> Result<ArrayBytes> {
        if self.metadata.data_type.fixed_size().is_some() {
            return Ok(ArrayBytes::fixed(
                self.read_selection_bytes(selection).await?,
            ));
        }
        let shape = selection.shape_in(&self.metadata.shape)?;
        if let Some(region) = selection.as_region(&self.metadata.shape)? {
            return self.read_array_bytes(&region).await;
        }
        let n = element_count(Region::full(&shape).num_elements()?, "the selection")?;
        let mut gather = Gather::new(n);
        if n > 0 {
            let plans = self.plan_selection(selection, &self.read_cells()?)?;
            let span =
                tracing::debug_span!("zarr.read_selection", array = %self.path, elements = n);
            let parts = combinations(&plans)
                .map(|combination| Ok((group_box(&pick(&plans, &combination))?, combination)));
            self.read_parts_with(
                parts,
                |array, boxes| async move { crate::boxes::read_variable(array, boxes).await },
                |combination, boxed| {
                    let mut taken = Ok(());
                    walk(&pick(&plans, &combination), &shape, &mut |b, o, n| {
                        if taken.is_ok() {
                            taken = gather.take(&boxed, b, o, n);
                        }
                    });
                    taken.map_err(|e| self.codecs_error(e))
                },
            )
            .instrument(span)
            .await?;
        }
        Ok(ArrayBytes::Variable(
            gather.finish().map_err(|e| self.codecs_error(e))?,
        ))
    }

    /// Read an orthogonal [`Selection`] of a `string` array as `String`s, in C order over
    /// the selection's [shape](Selection::shape_in).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::{ArrayBuilder, AxisSelection, Selection};
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let array = ArrayBuilder::new(vec![2, 3], DataType::String, vec![1, 2])
    ///     .create(Arc::new(MemoryStore::new()), "/words")
    ///     .await?;
    /// array.write_text(.., &["a", "bb", "ccc", "d", "ee", "fff"]).await?;
    /// let corners = Selection::new([AxisSelection::all(), AxisSelection::indices([2, 0])]);
    /// assert_eq!(array.read_selection_text(&corners).await?, ["ccc", "a", "fff", "d"]);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::ElementType`] unless the data type is `string`; [`Error::Vlen`] for values
    /// that are not UTF-8; as [`Array::read_selection`].
    pub async fn read_selection_text(&self, selection: &Selection) -> Result<Vec<String>> {
        self.check_vlen(DataType::String, "strings")?;
        let values = self.read_selection_array_bytes(selection).await?;
        self.strings_of(values)
    }

    /// Read the elements at `points` of an array of any data type, in the order of the
    /// points: [`Array::read_points`] for variable-length data, as for
    /// [`Array::read_selection_array_bytes`].
    ///
    /// # Errors
    /// As [`Array::read_points`].
    pub async fn read_points_array_bytes<P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
    ) -> Result<ArrayBytes> {
        if self.metadata.data_type.fixed_size().is_some() {
            return Ok(ArrayBytes::fixed(self.read_points_bytes(points).await?));
        }
        let (flat, count) = flatten_points(points, self.metadata.shape.len())?;
        let groups = plan_points(&self.read_cells()?, &self.metadata.shape, &flat, count)?;
        let span = tracing::debug_span!("zarr.read_points", array = %self.path, points = count);
        let mut gather = Gather::new(count);
        let parts = groups.into_iter().map(|g| Ok((g.region, g.members)));
        self.read_parts_with(
            parts,
            |array, boxes| async move { crate::boxes::read_variable(array, boxes).await },
            |members, boxed| {
                members
                    .into_iter()
                    .try_for_each(|(offset, point)| gather.take(&boxed, offset, point, 1))
                    .map_err(|e| self.codecs_error(e))
            },
        )
        .instrument(span)
        .await?;
        Ok(ArrayBytes::Variable(
            gather.finish().map_err(|e| self.codecs_error(e))?,
        ))
    }

    /// Read the elements at `points` of a `string` array as `String`s, in the order of the
    /// points.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let array = ArrayBuilder::new(vec![4], DataType::String, vec![2])
    ///     .create(Arc::new(MemoryStore::new()), "/words")
    ///     .await?;
    /// array.write_text(.., &["w", "x", "y", "z"]).await?;
    /// assert_eq!(array.read_points_text([[3u64], [0], [3]]).await?, ["z", "w", "z"]);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::ElementType`] unless the data type is `string`; [`Error::Vlen`] for values
    /// that are not UTF-8; as [`Array::read_points`].
    pub async fn read_points_text<P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
    ) -> Result<Vec<String>> {
        self.check_vlen(DataType::String, "strings")?;
        let values = self.read_points_array_bytes(points).await?;
        self.strings_of(values)
    }

    fn strings_of(&self, values: ArrayBytes) -> Result<Vec<String>> {
        let ArrayBytes::Variable(vlen) = values else {
            return Err(Error::unsupported(
                self.path.as_str(),
                "fixed-size data where variable-length data was expected",
            ));
        };
        let strings = VlenStrings::<i64>::from_vlen_bytes(&vlen).map_err(|e| self.vlen_error(e))?;
        Ok(strings.to_strings())
    }
}

impl<S: WritableStore + ?Sized + 'static> Array<S> {
    /// Write `values` (C order over the selection's [shape](Selection::shape_in)) of any
    /// data type into an orthogonal [`Selection`]: [`Array::write_selection`] for
    /// variable-length data, whose values come in Arrow layout
    /// ([`ArrayBytes::Variable`]). Where an index repeats, the last value written there
    /// stays.
    ///
    /// Each chunk (or shard) holding selected elements is read once (unless the selection
    /// covers all of it), merged and written once, under the same in-process lock as
    /// [`Array::write`].
    ///
    /// # Errors
    /// [`Error::BufferSize`] if `values` does not hold one element per selected element;
    /// [`Error::Unsupported`] for variable-length values on a fixed-size data type; as
    /// [`Array::write_selection`].
    pub async fn write_selection_array_bytes(
        &self,
        selection: &Selection,
        values: ArrayBytes,
    ) -> Result<()> {
        let values = match values {
            ArrayBytes::Fixed(bytes) => return self.write_selection_bytes(selection, &bytes).await,
            ArrayBytes::Variable(values) => values,
        };
        self.check_variable_values()?;
        let out_shape = selection.shape_in(&self.metadata.shape)?;
        let expected = Region::full(&out_shape).num_elements()?;
        if values.len() as u64 != expected {
            return Err(Error::BufferSize {
                expected,
                found: values.len() as u64,
            });
        }
        if let Some(region) = selection.as_region(&self.metadata.shape)? {
            return crate::write::write_variable(self, &region, values).await;
        }
        if values.is_empty() {
            return Ok(());
        }
        let plans = self.plan_selection(selection, &self.write_cells()?)?;
        let span = tracing::debug_span!(
            "zarr.write_selection",
            array = %self.path,
            elements = values.len()
        );
        let parts = combinations(&plans).map(|combination| {
            let groups = pick(&plans, &combination);
            let mut runs = Vec::new();
            let (mut offsets, mut data) = (vec![0u64], Vec::new());
            walk(&groups, &out_shape, &mut |b, o, n| {
                runs.push((b, n));
                append_elements(&mut offsets, &mut data, &values, o, n);
            });
            Ok(WritePart {
                region: group_box(&groups)?,
                dense: groups_dense(&groups),
                runs,
                values: PartValues::Variable(
                    VlenBytes::try_new(offsets, data.into()).map_err(|e| self.codecs_error(e))?,
                ),
            })
        });
        self.write_combinations(parts).instrument(span).await
    }

    /// Write strings into an orthogonal [`Selection`] of a `string` array, in C order over
    /// the selection's [shape](Selection::shape_in).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::{ArrayBuilder, AxisSelection, Selection};
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let array = ArrayBuilder::new(vec![5], DataType::String, vec![2])
    ///     .create(Arc::new(MemoryStore::new()), "/words")
    ///     .await?;
    /// let even = Selection::new([AxisSelection::step(.., 2)]);
    /// array.write_selection_text(&even, &["a", "b", "c"]).await?;
    /// assert_eq!(array.read_text(..).await?, ["a", "", "b", "", "c"]);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::ElementType`] unless the data type is `string`; as
    /// [`Array::write_selection_array_bytes`].
    pub async fn write_selection_text<T: AsRef<str>>(
        &self,
        selection: &Selection,
        values: &[T],
    ) -> Result<()> {
        let values = self.text_values(values)?;
        self.write_selection_array_bytes(selection, values).await
    }

    /// Write one value per point (in the order of `points`) of any data type:
    /// [`Array::write_points`] for variable-length data, whose values come in Arrow layout.
    /// Where a point repeats, the last value given for it stays.
    ///
    /// # Errors
    /// [`Error::BufferSize`] if there is not one value per point; [`Error::Unsupported`]
    /// for variable-length values on a fixed-size data type; as [`Array::write_points`].
    pub async fn write_points_array_bytes<P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
        values: ArrayBytes,
    ) -> Result<()> {
        let values = match values {
            ArrayBytes::Fixed(bytes) => return self.write_points_bytes(points, &bytes).await,
            ArrayBytes::Variable(values) => values,
        };
        self.check_variable_values()?;
        let (flat, count) = flatten_points(points, self.metadata.shape.len())?;
        if values.len() != count {
            return Err(Error::BufferSize {
                expected: count as u64,
                found: values.len() as u64,
            });
        }
        let groups = plan_points(&self.write_cells()?, &self.metadata.shape, &flat, count)?;
        let span = tracing::debug_span!("zarr.write_points", array = %self.path, points = count);
        let parts = groups.into_iter().map(|g| {
            let dense = g.dense();
            let (mut offsets, mut data) = (vec![0u64], Vec::new());
            let runs = g
                .members
                .iter()
                .map(|&(offset, point)| {
                    append_elements(&mut offsets, &mut data, &values, point, 1);
                    (offset, 1)
                })
                .collect();
            Ok(WritePart {
                region: g.region,
                dense,
                runs,
                values: PartValues::Variable(
                    VlenBytes::try_new(offsets, data.into()).map_err(|e| self.codecs_error(e))?,
                ),
            })
        });
        self.write_combinations(parts).instrument(span).await
    }

    /// Write one string per point (in the order of `points`) of a `string` array.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use zarr_array::ArrayBuilder;
    /// use zarr_core::DataType;
    /// use zarr_store::MemoryStore;
    ///
    /// let array = ArrayBuilder::new(vec![2, 2], DataType::String, vec![1, 1])
    ///     .create(Arc::new(MemoryStore::new()), "/words")
    ///     .await?;
    /// array.write_points_text([[1u64, 1], [0, 0]], &["last", "first"]).await?;
    /// assert_eq!(array.read_text(..).await?, ["first", "", "", "last"]);
    /// # Ok::<(), zarr_array::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::ElementType`] unless the data type is `string`; as
    /// [`Array::write_points_array_bytes`].
    pub async fn write_points_text<T: AsRef<str>, P: AsRef<[u64]>>(
        &self,
        points: impl IntoIterator<Item = P>,
        values: &[T],
    ) -> Result<()> {
        let values = self.text_values(values)?;
        self.write_points_array_bytes(points, values).await
    }

    fn text_values<T: AsRef<str>>(&self, values: &[T]) -> Result<ArrayBytes> {
        self.check_vlen(DataType::String, "strings")?;
        let strings = VlenStrings::<i64>::from_strs(values).map_err(|e| self.vlen_error(e))?;
        Ok(ArrayBytes::Variable(
            strings.to_vlen_bytes().map_err(|e| self.vlen_error(e))?,
        ))
    }

    fn check_variable_values(&self) -> Result<()> {
        if self.metadata.data_type.fixed_size().is_some() {
            return Err(Error::unsupported(
                self.path.as_str(),
                "variable-length values for a fixed-size data type",
            ));
        }
        Ok(())
    }
}
