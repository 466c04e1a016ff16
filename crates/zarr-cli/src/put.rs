//! `zarr put`: write the values of an `.npy` file (or of an array in an `.npz` archive) into an
//! array.
//!
//! The file is read once, front to back, in slabs of about [`SLAB_BYTES`] that end on chunk
//! boundaries, and each slab is written before the next is read. A C-order file is cut along
//! the region's first dimension. A Fortran-order file (first index fastest) is cut along the
//! region's last dimension longer than 1: in Fortran order the elements of such a slab are
//! one contiguous run of the file, which is rearranged to C order in memory. A numeric file
//! of another data type than the array's is read twice: once to check that every value
//! converts exactly, then to convert and write.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use clap::Args;
use indicatif::ProgressBar;
use zarr::array::{Array, ArrayBytes, Region};
use zarr::metadata::{DataType, NdArrayType, StructField, StructType};
use zarr::store::{ListableStore as _, ReadableStore as _, Store, StoreKey, ZipStore};
use zarr::vlen::{VlenBinary, VlenStrings};

use crate::cast;
use crate::format::{swap_bytes, swap_unit};
use crate::get::SLAB_BYTES;
use crate::layout::shape_text;
use crate::npy::{
    Descr, Header, TextDtype, fortran_to_c, npy_type, numeric_data_type, push_utf32, read_header,
    trim_nuls,
};
use crate::progress::{bar, note};
use crate::region::{Selection, element_text, parse_selection, slabs_along};
use crate::target::{Access, resolve};
use crate::{Global, TargetArgs, usage};

/// Arguments of `zarr put`.
#[derive(Args, Debug)]
pub(crate) struct PutArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// The `.npy` file holding the values: the array's numpy dtype in any byte order, C or
    /// Fortran order, or another bool, integer or float dtype whose values all convert
    /// exactly (int64 into an int32 array; checked before anything is written). `string`
    /// arrays take `<U n` (or `|S n` holding UTF-8), `bytes` arrays `|S n`; trailing NULs
    /// are padding and dropped, as numpy does.
    ///
    /// Or an `.npz` archive (`numpy.savez`, stored or compressed): give the array's name
    /// with --member unless the archive holds one array. Its data is streamed like an
    /// `.npy` file's (a compressed member is inflated as it is read).
    #[arg(short, long, value_name = "FILE")]
    input: PathBuf,
    /// The array of an `.npz` --input to write: its name in the archive (`x` for `x.npy`,
    /// as `numpy.load(FILE)["x"]`).
    #[arg(long, value_name = "NAME")]
    member: Option<String>,
    /// Where to write, numpy-like as for `get` (`100:200,0:50`, `...,3`); default the whole
    /// array. Its shape must
    /// be the file's shape (single-index dimensions may be left out of the file's shape).
    #[arg(short, long, allow_hyphen_values = true)]
    region: Option<String>,
    /// Append the file along this axis (0 for the first) instead of writing a region: the
    /// array grows by the file's length along it, and the file's other dimensions must be
    /// the array's. The new shape is stored once every value is written, so readers never
    /// see it without its data, and a failed append leaves the shape as it was, clearing
    /// the values it wrote beyond it (except on
    /// a `zarrs.regular_bounded` grid, whose edge chunks are re-encoded at the new shape
    /// before the values are written).
    #[arg(long, value_name = "AXIS", conflicts_with = "region")]
    append: Option<usize>,
}

/// `<f4` without its byte order: `f4`.
fn without_order(descr: &str) -> &str {
    descr.trim_start_matches(['<', '>', '|', '='])
}

/// How the file's elements become the array's.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Elements {
    /// Fixed-size elements of `size` bytes, stored as the array stores them once the bytes of
    /// every `swap`-byte unit are reversed (`swap` 1: nothing to reverse).
    Fixed { size: usize, swap: usize },
    /// Numeric elements of another type, `from` (`size` bytes each, `swap` as for `Fixed`),
    /// converted exactly to the array's `to` (see [`cast`]).
    Convert {
        from: DataType,
        to: DataType,
        size: usize,
        swap: usize,
    },
    /// `string` elements from `U n`, or from `S n` holding UTF-8.
    Strings(TextDtype),
    /// `bytes` elements from `S n`.
    Binary { len: usize },
    /// Struct elements from a structured dtype with the same fields: `file_size` bytes each
    /// in the file, `size` in the array. Each `(from, to, len)` run of an element's bytes is
    /// copied from the file's element to the array's (none when the two layouts are the
    /// same; an aligned dtype's padding is what they leave out), then the bytes of each
    /// `(offset, width)` unit of the array's element are reversed (its fields in the other
    /// byte order).
    Record {
        file_size: usize,
        size: usize,
        runs: Vec<(usize, usize, usize)>,
        swaps: Vec<(usize, usize)>,
    },
}

impl Elements {
    /// The bytes of one element in the file.
    fn item_size(&self) -> usize {
        match *self {
            Self::Fixed { size, .. }
            | Self::Convert { size, .. }
            | Self::Record {
                file_size: size, ..
            } => size,
            Self::Strings(text) => text.item_size(),
            Self::Binary { len } => len,
        }
    }

    /// The bytes held in memory per element of a slab: the file's bytes, a second copy when
    /// they are rearranged from Fortran order, and for variable-length elements the values
    /// (never longer than the file's) and an `i64` offset.
    fn slab_cost(&self, fortran_order: bool) -> u64 {
        let item = self.item_size() as u64;
        let rearranged = if fortran_order { item } else { 0 };
        let values = match self {
            Self::Fixed { .. } => 0,
            // The packed copy, when padding is left out.
            Self::Record { runs, size, .. } => {
                if runs.is_empty() {
                    0
                } else {
                    *size as u64
                }
            }
            Self::Convert { to, .. } => to.fixed_size().unwrap_or(1) as u64,
            Self::Strings(_) | Self::Binary { .. } => item.saturating_add(8),
        };
        item.saturating_add(rearranged)
            .saturating_add(values)
            .max(1)
    }
}

/// Match the file's dtype `descr` to the array's data type.
fn elements(descr: &str, data_type: &DataType, input: &str) -> Result<Elements> {
    if without_order(descr).starts_with('O') {
        usage!(
            "{} holds Python objects (dtype {descr}), which .npy stores pickled and this tool \
             does not read; save a fixed-width copy instead: numpy.save(path, arr.astype(\"U\")) \
             for text, arr.astype(\"S\") for bytes",
            input
        );
    }
    match (data_type, TextDtype::parse(descr)) {
        (DataType::String, Some(text)) => return Ok(Elements::Strings(text)),
        (DataType::Bytes, Some(TextDtype::Bytes { len })) => return Ok(Elements::Binary { len }),
        (DataType::Bytes, Some(TextDtype::Utf32 { .. })) => usage!(
            "{} holds text ({descr}) and the array bytes; encode it first: \
             numpy.char.encode(arr, \"utf-8\")",
            input
        ),
        (DataType::String | DataType::Bytes, None) => usage!(
            "{} holds {descr}, the array {} ({})",
            input,
            data_type.name(),
            if *data_type == DataType::String {
                "<U n, or |S n holding UTF-8"
            } else {
                "|S n"
            }
        ),
        _ => {}
    }
    // An optional type is stored as the record (value, present), as `get` writes it.
    let optional_record;
    let record = match data_type {
        DataType::Struct(st) => Some(st),
        DataType::Optional(o) if o.inner_size().is_none() => {
            usage!(
                "put does not write {data_type} arrays: .npy has no records of \
                 variable-length values"
            )
        }
        DataType::Optional(o) => {
            optional_record = StructType::new(vec![
                StructField::new("value", o.inner().clone()),
                StructField::new("present", DataType::Bool),
            ])?;
            Some(&optional_record)
        }
        _ => None,
    };
    if let Some(st) = record {
        let file = if descr.starts_with('[') {
            Descr::parse(descr)?
        } else {
            Descr::Type(descr.to_owned())
        };
        let mut layout = Layout::default();
        let file_size = match_fields(&file, st, (0, 0), "", &mut layout).map_err(|why| {
            anyhow::Error::new(crate::Usage(format!(
                "{} holds {descr}, the array {} ({}): {why}",
                input,
                data_type.name(),
                npy_type(data_type).map_or_else(|e| e.to_string(), |t| t.descr)
            )))
        })?;
        let size = data_type.fixed_size().unwrap_or(1);
        // The same layout needs no copying: one run of the whole element.
        if layout.runs == [(0, 0, size)] && file_size == size {
            layout.runs.clear();
        }
        return Ok(Elements::Record {
            file_size,
            size,
            runs: layout.runs,
            swaps: layout.swaps,
        });
    }
    let expected = npy_type(data_type)?;
    let needs_swap = if cfg!(target_endian = "big") {
        descr.starts_with('<')
    } else {
        descr.starts_with('>')
    };
    // int2/int4/uint2/uint4 files are int8/uint8 (as `get` writes them): converted, so that
    // each value is checked against the narrower range.
    if expected.small_int.is_none() && without_order(descr) == without_order(&expected.descr) {
        return Ok(Elements::Fixed {
            size: data_type.fixed_size().unwrap_or(1),
            swap: if needs_swap { swap_unit(data_type) } else { 1 },
        });
    }
    match numeric_data_type(descr) {
        Some(from) if cast::is_castable(data_type) => Ok(Elements::Convert {
            size: from.fixed_size().unwrap_or(1),
            swap: if needs_swap { swap_unit(&from) } else { 1 },
            from,
            to: data_type.clone(),
        }),
        _ => usage!(
            "{} holds {descr}, the array {} ({}){}",
            input,
            data_type.name(),
            expected.descr,
            if cast::is_castable(data_type) {
                "; only bool, integer and float16/32/64 files are converted"
            } else {
                ""
            }
        ),
    }
}

/// The array shape a file of fixed-shape `ndarray` elements holds: its shape without the
/// trailing element dimensions (as `get` writes them).
fn element_dims_stripped(
    nd: &NdArrayType,
    data_type: &DataType,
    header: &crate::npy::Header,
    name: &str,
) -> Result<Vec<u64>> {
    if nd.element_size().is_none() {
        usage!(
            "put does not write {data_type} arrays: elements of varying shape have no .npy \
             form"
        );
    }
    if header.fortran_order && header.shape.len() > 1 {
        usage!(
            "{name} is in Fortran order, so the scalars of each {data_type} element are not \
             together; save a C-order copy: numpy.save(path, numpy.ascontiguousarray(arr))"
        );
    }
    let dims: Vec<u64> = nd.shape().iter().map(|d| d.unwrap_or(0)).collect();
    match header.shape.len().checked_sub(dims.len()) {
        Some(split) if header.shape[split..] == dims[..] => Ok(header.shape[..split].to_vec()),
        _ => usage!(
            "{name} has shape {}, which does not end with the element shape {} of {data_type}",
            shape_text(&header.shape),
            shape_text(&dims)
        ),
    }
}

/// Where a structured file element's fields go in the array's element.
#[derive(Debug, Default)]
struct Layout {
    /// `(file offset, array offset, length)` copies, adjacent ones merged.
    runs: Vec<(usize, usize, usize)>,
    /// `(array offset, width)` units to byte-swap.
    swaps: Vec<(usize, usize)>,
}

impl Layout {
    fn copy(&mut self, from: usize, to: usize, len: usize) {
        match self.runs.last_mut() {
            Some((f, t, l)) if *f + *l == from && *t + *l == to => *l += len,
            _ => self.runs.push((from, to, len)),
        }
    }
}

/// The length of an unnamed padding field (`('', '|V3')`, as numpy writes for aligned or
/// offset structured dtypes), or `None` if `field` is not one.
fn padding(name: &str, dtype: &Descr) -> Option<usize> {
    let Descr::Type(typestr) = dtype else {
        return None;
    };
    if !name.is_empty() {
        return None;
    }
    without_order(typestr).strip_prefix('V')?.parse().ok()
}

/// Match a file's structured dtype to the fields of `st`: the same names in the same order,
/// each of the same type in either byte order (nested structs as nested lists), with
/// padding fields skipped. Records in `layout` where each field's bytes go and which to
/// byte-swap; `(file, array)` are where the record starts in each element. Returns the
/// record's size in the file; says what differs otherwise.
fn match_fields(
    file: &Descr,
    st: &StructType,
    (file_base, array_base): (usize, usize),
    path: &str,
    layout: &mut Layout,
) -> Result<usize, String> {
    let Descr::Record(all) = file else {
        return Err(format!("{}not a structured dtype", at(path)));
    };
    // Padding takes no field of the array; its bytes are skipped.
    let mut pads = vec![0usize; all.len() + 1];
    let mut fields: Vec<&(String, Descr)> = Vec::with_capacity(all.len());
    for field in all {
        match padding(&field.0, &field.1) {
            Some(n) => pads[fields.len()] += n,
            None => fields.push(field),
        }
    }
    let names = |list: Vec<&str>| list.join(", ");
    if fields.len() != st.fields().len()
        || fields
            .iter()
            .zip(st.fields())
            .any(|((n, _), f)| *n != f.name)
    {
        return Err(format!(
            "{}fields ({}) where the array has ({})",
            at(path),
            names(fields.iter().map(|(n, _)| n.as_str()).collect()),
            names(st.fields().iter().map(|f| f.name.as_str()).collect())
        ));
    }
    let mut file_at = file_base;
    for (i, (((name, dtype), field), offset)) in
        fields.iter().zip(st.fields()).zip(st.offsets()).enumerate()
    {
        file_at += pads[i];
        let here = if path.is_empty() {
            name.clone()
        } else {
            format!("{path}.{name}")
        };
        let start = array_base + offset;
        match (&field.data_type, dtype) {
            (DataType::Struct(inner), _) => {
                file_at += match_fields(dtype, inner, (file_at, start), &here, layout)?;
            }
            (DataType::NdArray(_), _) => {
                return Err(format!(
                    "field {here} holds ndarray elements, which a .npy record cannot hold here"
                ));
            }
            (data_type, Descr::Type(typestr)) => {
                let expected = npy_type(data_type).map_err(|e| format!("field {here}: {e:#}"))?;
                if expected.small_int.is_some()
                    || without_order(typestr) != without_order(&expected.descr)
                {
                    return Err(format!(
                        "field {here} is {typestr}, the array's {} ({})",
                        data_type.name(),
                        expected.descr
                    ));
                }
                let other_order = if cfg!(target_endian = "big") {
                    typestr.starts_with('<')
                } else {
                    typestr.starts_with('>')
                };
                let width = swap_unit(data_type);
                let size = data_type.fixed_size().unwrap_or(1);
                if other_order && width > 1 {
                    layout
                        .swaps
                        .extend((0..size / width).map(|i| (start + i * width, width)));
                }
                layout.copy(file_at, start, size);
                file_at += size;
            }
            (data_type, Descr::Record(_)) => {
                return Err(format!(
                    "field {here} is a structured dtype, the array's {}",
                    data_type.name()
                ));
            }
        }
    }
    Ok(file_at + pads[fields.len()] - file_base)
}

/// `field a.b: ` for a nested struct's problem, nothing at the top.
fn at(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("field {path}: ")
    }
}

/// The dimension a Fortran-order file is cut along: the region's last one longer than 1.
/// The dimensions after it have length 1, so a range of it is one contiguous run of the file.
fn fortran_axis(shape: &[u64]) -> usize {
    shape
        .iter()
        .rposition(|&n| n > 1)
        .unwrap_or(shape.len().saturating_sub(1))
}

/// Element `i` (C order) of `slab`, named by its index in the file: `element [3, 1]`.
fn element_name(i: usize, slab: &Region, selection: &Selection, file_rank: usize) -> String {
    let index = selection.element_in(slab, i as u64);
    let position = selection.position_of(&index);
    // A file without the single-index dimensions has no index for them.
    let keep_all = file_rank == index.len();
    let in_file: Vec<u64> = position
        .into_iter()
        .zip(&selection.squeezed)
        .filter(|&(_, &squeezed)| keep_all || !squeezed)
        .map(|(p, _)| p)
        .collect();
    element_text(&in_file)
}

/// `count` elements of `text` (C order) as strings; `name(i)` names element `i` in errors.
fn strings(
    buf: &[u8],
    count: usize,
    text: TextDtype,
    name: impl Fn(usize) -> String,
) -> Result<VlenStrings<i64>> {
    let item = text.item_size();
    let mut values = String::with_capacity(match text {
        TextDtype::Utf32 { .. } => buf.len() / 4,
        TextDtype::Bytes { .. } => buf.len(),
    });
    let mut offsets = Vec::with_capacity(count + 1);
    offsets.push(0i64);
    for i in 0..count {
        let e = &buf[i * item..(i + 1) * item];
        match text {
            TextDtype::Utf32 { big_endian, .. } => push_utf32(e, big_endian, &mut values)
                .map_err(|bad| anyhow!("{} is not text: {bad}", name(i)))?,
            TextDtype::Bytes { .. } => values.push_str(
                std::str::from_utf8(trim_nuls(e))
                    .map_err(|err| anyhow!("{} is not UTF-8: {err}", name(i)))?,
            ),
        }
        offsets.push(i64::try_from(values.len())?);
    }
    Ok(VlenStrings::try_new(offsets, values.into_bytes())?)
}

/// `count` elements of `|S{len}` (C order) as byte strings without their NUL padding.
fn binary(buf: &[u8], count: usize, len: usize) -> Result<VlenBinary<i64>> {
    Ok(VlenBinary::from_elements(
        (0..count).map(|i| trim_nuls(&buf[i * len..(i + 1) * len])),
    )?)
}

/// An `.npy` file, read up to its data.
struct Source<R> {
    reader: R,
    /// The file as the user named it.
    name: String,
    header: Header,
    elements: Elements,
}

impl<R: Read> Source<R> {
    /// The slabs of `selection` to read and write in turn, each about `slab_bytes` in memory:
    /// whole rows of chunks, or of an array sharded by the `sharding_indexed` codec, rows of
    /// inner chunks (see [`write_slabs`]) unless the selection is strided.
    fn slabs(
        &self,
        array: &Array<dyn Store>,
        selection: &Selection,
        slab_bytes: u64,
    ) -> Result<Vec<Region>> {
        let metadata = array.metadata();
        // Dimensions of length 1 do not change where elements lie in either order, so the file
        // is read as if it had the region's shape (single-index dimensions included).
        let fortran = self.header.fortran_order;
        let axis = if fortran {
            fortran_axis(&selection.counts_in(&selection.region))
        } else {
            0
        };
        let cost = self.elements.slab_cost(fortran);
        let inner = if selection.is_strided() || array.storage_transformer().is_some() {
            None
        } else {
            array.inner_chunk_shape()
        };
        slabs_along(metadata, inner, &selection.region, axis, cost, slab_bytes)
    }

    /// A slab's elements (C order, as read) converted to the array's data type, when the
    /// file's differs (`name(i)` names element `i` in errors); otherwise unchanged.
    fn convert(&self, mut buf: Vec<u8>, name: impl Fn(usize) -> String) -> Result<Vec<u8>> {
        let Elements::Convert { from, to, swap, .. } = &self.elements else {
            return Ok(buf);
        };
        swap_bytes(&mut buf, *swap);
        cast::convert(&buf, from, to, name).with_context(|| {
            format!(
                "converting {} ({}) to the array's {}",
                self.name,
                from.name(),
                to.name()
            )
        })
    }

    /// The elements `selection` selects in the next `slab`, in C order: `count` elements of
    /// `item_size()` bytes.
    fn read_slab(&mut self, selection: &Selection, slab: &Region) -> Result<(Vec<u8>, usize)> {
        let item = self.elements.item_size();
        let counts = selection.counts_in(slab);
        let count = usize::try_from(Region::full(&counts).num_elements()?)?;
        let n = count
            .checked_mul(item)
            .context("the slab does not fit in memory")?;
        let mut buf = vec![0u8; n];
        self.reader.read_exact(&mut buf).with_context(|| {
            format!(
                "reading {}: the data is shorter than its header says",
                self.name
            )
        })?;
        if self.header.fortran_order {
            let shape = counts
                .into_iter()
                .map(usize::try_from)
                .collect::<Result<Vec<_>, _>>()?;
            buf = fortran_to_c(&buf, &shape, item);
        }
        Ok((buf, count))
    }
}

/// Read each of `slabs` from `source` and convert it to the array's data type, writing
/// nothing: run before [`write_slabs`], so that a value that does not fit is reported before
/// any of the file is written.
fn check_conversion(
    source: &mut Source<impl Read>,
    selection: &Selection,
    slabs: &[Region],
    progress: &ProgressBar,
) -> Result<()> {
    let file_rank = source.header.shape.len();
    for slab in slabs {
        let (buf, _) = source.read_slab(selection, slab)?;
        source.convert(buf, |i| element_name(i, slab, selection, file_rank))?;
        progress.inc(1);
    }
    Ok(())
}

/// Read each of `slabs` from `source` and write it into `array` (named `target`). A sharded
/// array is written through a [`zarr::array::ShardWriter`]: slabs of inner chunk rows are
/// encoded as they come, and each shard is stored once, when it is whole (or at the end).
async fn write_slabs(
    array: &Array<dyn Store>,
    target: &str,
    source: &mut Source<impl Read>,
    selection: &Selection,
    slabs: Vec<Region>,
    progress: &ProgressBar,
) -> Result<()> {
    let file_rank = source.header.shape.len();
    let mut shards = array.shard_writer();
    for slab in slabs {
        let (mut buf, count) = source.read_slab(selection, &slab)?;
        let name = |i| element_name(i, &slab, selection, file_rank);
        let values = match &source.elements {
            &Elements::Fixed { swap, .. } => {
                swap_bytes(&mut buf, swap);
                ArrayBytes::fixed(buf)
            }
            Elements::Record {
                file_size,
                size,
                runs,
                swaps,
            } => {
                if !runs.is_empty() {
                    // Leave out the file's padding: copy each field to its place.
                    let mut packed = vec![0u8; count * size];
                    for (from, to) in buf
                        .chunks_exact(*file_size)
                        .zip(packed.chunks_exact_mut(*size))
                    {
                        for &(f, t, len) in runs {
                            to[t..t + len].copy_from_slice(&from[f..f + len]);
                        }
                    }
                    buf = packed;
                }
                if !swaps.is_empty() {
                    for element in buf.chunks_exact_mut(*size) {
                        for &(offset, width) in swaps {
                            element[offset..offset + width].reverse();
                        }
                    }
                }
                ArrayBytes::fixed(buf)
            }
            Elements::Convert { .. } => ArrayBytes::fixed(source.convert(buf, name)?),
            &Elements::Strings(text) => {
                let values = strings(&buf, count, text, name)
                    .with_context(|| format!("reading {}", source.name))?;
                drop(buf);
                ArrayBytes::Variable(values.to_vlen_bytes()?)
            }
            &Elements::Binary { len } => {
                let values = binary(&buf, count, len)?;
                drop(buf);
                ArrayBytes::Variable(values.to_vlen_bytes()?)
            }
        };
        let written = if selection.is_strided() {
            array
                .write_selection_array_bytes(&selection.strided_in(&slab), values)
                .await
        } else {
            shards.write_array_bytes(&slab, values).await
        };
        written.with_context(|| format!("writing {slab} of {target}"))?;
        progress.inc(1);
    }
    shards
        .finish()
        .await
        .with_context(|| format!("storing the shards of {target} written in part"))
}

/// For `--append AXIS`: the array's shape grown by the file's length along `axis`, and the
/// region the file fills in it.
fn appended(
    array: &Array<dyn Store>,
    axis: usize,
    file_shape: &[u64],
    name: &str,
) -> Result<(Vec<u64>, Selection)> {
    let shape = array.shape();
    if axis >= shape.len() {
        usage!(
            "--append {axis}: the array has {} dimension{} (axes 0 to {})",
            shape.len(),
            if shape.len() == 1 { "" } else { "s" },
            shape.len().saturating_sub(1)
        );
    }
    let others_match = file_shape.len() == shape.len()
        && (0..shape.len()).all(|d| d == axis || file_shape[d] == shape[d]);
    if !others_match {
        usage!(
            "{name} has shape {}; appending along axis {axis} of an array of shape {} takes a \
             file of shape {}",
            shape_text(file_shape),
            shape_text(shape),
            shape
                .iter()
                .enumerate()
                .map(|(d, n)| if d == axis {
                    "n".to_owned()
                } else {
                    n.to_string()
                })
                .collect::<Vec<_>>()
                .join("x")
        );
    }
    let old = shape[axis];
    let Some(new) = old.checked_add(file_shape[axis]) else {
        anyhow::bail!("appending {name} would make axis {axis} longer than 2^64");
    };
    let mut grown_shape = shape.to_vec();
    grown_shape[axis] = new;
    let ranges = grown_shape
        .iter()
        .enumerate()
        .map(|(d, &n)| if d == axis { old..new } else { 0..n })
        .collect();
    let region = Region::try_new(ranges)?;
    Ok((grown_shape, Selection::whole(region)))
}

/// Where `put` reads its values, streamed: an `.npy` file, or an array of an `.npz` archive.
struct Input {
    /// The file as the user named it, with the member of an archive: `data.npz[x]`.
    name: String,
    path: PathBuf,
    /// The archive and the member's key, for an archive.
    member: Option<(ZipStore, StoreKey)>,
    /// The length of the data, when known (not for a pipe).
    len: Option<u64>,
}

impl Input {
    /// Open `path`: an `.npz` archive (a zip file) if it starts as one, then its array
    /// `member` (or its one array); an `.npy` file otherwise.
    async fn open(path: &Path, member: Option<&str>) -> Result<Self> {
        let display = path.display().to_string();
        let mut magic = [0u8; 4];
        let mut file = File::open(path).with_context(|| format!("opening {display}"))?;
        let info = file
            .metadata()
            .with_context(|| format!("reading {display}"))?;
        let is_zip = info.is_file()
            && file.read_exact(&mut magic).is_ok()
            && (magic == *b"PK\x03\x04" || magic == *b"PK\x05\x06");
        if !is_zip {
            if let Some(member) = member {
                usage!("--member {member}: {display} is not an .npz archive");
            }
            return Ok(Self {
                name: display,
                path: path.to_owned(),
                member: None,
                len: info.is_file().then_some(info.len()),
            });
        }
        let archive = ZipStore::open(path).with_context(|| format!("opening {display}"))?;
        let arrays: Vec<String> = archive
            .list()
            .await
            .with_context(|| format!("reading {display}"))?
            .iter()
            .filter_map(|key| key.as_str().strip_suffix(".npy").map(str::to_owned))
            .collect();
        let listed = || {
            if arrays.is_empty() {
                "it holds none".to_owned()
            } else {
                format!("its arrays: {}", arrays.join(", "))
            }
        };
        let chosen = match member {
            Some(name) => {
                let name = name.strip_suffix(".npy").unwrap_or(name);
                if !arrays.iter().any(|a| a == name) {
                    usage!(
                        "--member {name}: {display} has no such array ({})",
                        listed()
                    );
                }
                name.to_owned()
            }
            None => match arrays.as_slice() {
                [only] => only.clone(),
                [] => usage!("{display} is an .npz archive with no arrays in it"),
                _ => usage!(
                    "{display} is an .npz archive of {} arrays; name one with --member \
                     ({})",
                    arrays.len(),
                    listed()
                ),
            },
        };
        let name = format!("{display}[{chosen}]");
        let key = StoreKey::new(&format!("{chosen}.npy"));
        let len = archive
            .size(&key)
            .await
            .with_context(|| format!("reading {name}"))?;
        Ok(Self {
            name,
            path: path.to_owned(),
            len,
            member: Some((archive, key)),
        })
    }

    /// For an archive member, read it through once, so that damage its CRC-32 or recorded
    /// size reveals (found only at the end of a stream) stops the command before anything
    /// is written. Costs a second read of the member, not its size in memory.
    async fn verify(&self, global: Global) -> Result<()> {
        if self.member.is_none() {
            return Ok(());
        }
        let mut reader = self.reader().await?;
        let progress = bar(global, self.len.unwrap_or(0), "verify");
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = reader
                .read(&mut buf)
                .with_context(|| format!("reading {}; nothing was written", self.name))?;
            if n == 0 {
                break;
            }
            progress.inc(n as u64);
        }
        progress.finish_and_clear();
        Ok(())
    }

    /// A reader of the data from its start (each call starts again).
    async fn reader(&self) -> Result<Box<dyn Read + Send>> {
        Ok(match &self.member {
            Some((archive, key)) => Box::new(BufReader::new(
                archive
                    .reader(key)
                    .await
                    .with_context(|| format!("reading {}", self.name))?
                    .ok_or_else(|| {
                        anyhow!(
                            "reading {}: the archive changed while it was read",
                            self.name
                        )
                    })?,
            )),
            None => Box::new(BufReader::new(
                File::open(&self.path).with_context(|| format!("opening {}", self.name))?,
            )),
        })
    }
}

pub(crate) async fn run_put(args: PutArgs, global: Global) -> Result<()> {
    let target = resolve(&args.target, Access::Update)?;
    let mut array = target.array().await?;
    let input = Input::open(&args.input, args.member.as_deref()).await?;
    let name = input.name.clone();
    let mut reader = input.reader().await?;
    let mut header = read_header(&mut reader).with_context(|| format!("reading {name}"))?;
    if let DataType::NdArray(nd) = &array.metadata().data_type {
        header.shape = element_dims_stripped(nd, &array.metadata().data_type, &header, &name)?;
    }
    let elements = elements(&header.descr, &array.metadata().data_type, &name)?;
    // The handle written through: the array, or for `--append` the array with its grown
    // shape, stored only once every value is written.
    let (writer, selection) = match args.append {
        Some(axis) => {
            let (grown, selection) = appended(&array, axis, &header.shape, &name)?;
            let writer = if array.chunk_grid().depends_on_shape() {
                // The grid's edge chunks change shape with the array: resizing first
                // re-encodes them, and the values are written into the grown array.
                array
                    .resize(grown)
                    .await
                    .with_context(|| format!("growing {}", target.describe()))?;
                array.clone()
            } else {
                array.with_shape(grown)?
            };
            (writer, selection)
        }
        None => {
            let selection = parse_selection(args.region.as_deref(), array.shape())?;
            let selected = selection.counts_in(&selection.region);
            if header.shape != selection.out_shape() && header.shape != selected {
                usage!(
                    "{name} has shape {}, the region {}",
                    shape_text(&header.shape),
                    shape_text(&selected)
                );
            }
            (array.clone(), selection)
        }
    };
    // A short file (an interrupted download, say) is found before anything is written,
    // rather than when the slab it ends in is read.
    let total = header.num_elements();
    let needed = total
        .checked_mul(elements.item_size() as u64)
        .and_then(|data| data.checked_add(header.data_offset));
    if let Some(len) = input.len
        && needed.is_none_or(|needed| len < needed)
    {
        anyhow::bail!(
            "{name} is shorter than its header says: {} elements of {} take {} bytes after \
             its {}-byte header, and the file has {} bytes in all; nothing was written",
            shape_text(&header.shape),
            header.descr,
            needed.map_or_else(
                || "more than 2^64".to_owned(),
                |n| (n - header.data_offset).to_string()
            ),
            header.data_offset,
            len
        );
    }
    let mut source = Source {
        reader,
        name,
        header,
        elements,
    };
    let slabs = source.slabs(&writer, &selection, SLAB_BYTES)?;
    input.verify(global).await?;
    if let Elements::Convert { .. } = source.elements {
        // Every value must fit before anything is written: read the file twice.
        let mut reader = input.reader().await?;
        read_header(&mut reader).with_context(|| format!("reading {}", source.name))?;
        let mut check = Source {
            reader,
            name: source.name.clone(),
            header: source.header.clone(),
            elements: source.elements.clone(),
        };
        let progress = bar(global, slabs.len() as u64, "check");
        check_conversion(&mut check, &selection, &slabs, &progress)?;
        progress.finish_and_clear();
    }
    let progress = bar(global, slabs.len() as u64, "put");
    let written = write_slabs(
        &writer,
        &target.describe(),
        &mut source,
        &selection,
        slabs,
        &progress,
    )
    .await;
    if written.is_err() && args.append.is_some() && writer.shape() != array.shape() {
        // A failed append leaves no values beyond the stored shape for a later resize to
        // bring to light.
        if let Err(err) = array.discard_outside(&writer).await {
            note(
                global,
                &format!("warning: cannot clear the values of the failed append: {err}"),
            );
        }
    }
    written?;
    progress.finish_and_clear();
    if args.append.is_some() {
        let old = array.shape().to_vec();
        array
            .resize(writer.shape().to_vec())
            .await
            .with_context(|| format!("storing the new shape of {}", target.describe()))?;
        note(
            global,
            &format!(
                "appended {total} elements from {} to {} {}: shape {} -> {}",
                source.name,
                target.describe(),
                selection.region,
                shape_text(&old),
                shape_text(array.shape())
            ),
        );
        return target.finish();
    }
    note(
        global,
        &format!(
            "wrote {total} elements from {} to {} {}",
            source.name,
            target.describe(),
            selection.region
        ),
    );
    target.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(descr: &str, data_type: DataType) -> Result<Elements> {
        elements(descr, &data_type, "x.npy")
    }

    #[test]
    fn dtypes_match_arrays() {
        let utf32 = TextDtype::Utf32 {
            chars: 3,
            big_endian: true,
        };
        assert_eq!(
            kind(">U3", DataType::String).unwrap(),
            Elements::Strings(utf32)
        );
        assert_eq!(
            kind("|S2", DataType::String).unwrap(),
            Elements::Strings(TextDtype::Bytes { len: 2 })
        );
        assert_eq!(
            kind("|S2", DataType::Bytes).unwrap(),
            Elements::Binary { len: 2 }
        );
        let swap = if cfg!(target_endian = "big") { 1 } else { 4 };
        assert_eq!(
            kind(">f4", DataType::Float32).unwrap(),
            Elements::Fixed { size: 4, swap }
        );
        assert_eq!(
            kind(">i8", DataType::Int32).unwrap(),
            Elements::Convert {
                from: DataType::Int64,
                to: DataType::Int32,
                size: 8,
                swap: if cfg!(target_endian = "big") { 1 } else { 8 },
            }
        );
        assert!(matches!(
            kind("<f8", DataType::Bool).unwrap(),
            Elements::Convert { size: 8, .. }
        ));
        for (descr, data_type, message) in [
            ("<i8", DataType::Complex64, "the array complex64 (<c8)"),
            (
                "<c8",
                DataType::Int64,
                "only bool, integer and float16/32/64 files",
            ),
            ("|O", DataType::String, "astype(\"U\")"),
            ("|O", DataType::Int32, "pickled"),
            ("<U2", DataType::Bytes, "numpy.char.encode"),
            ("<i4", DataType::String, "<U n, or |S n holding UTF-8"),
            ("<i4", DataType::Bytes, "(|S n)"),
            (
                "<U2",
                DataType::Float32,
                "holds <U2, the array float32 (<f4)",
            ),
        ] {
            let err = kind(descr, data_type).unwrap_err();
            assert!(err.downcast_ref::<crate::Usage>().is_some(), "{descr}");
            assert!(err.to_string().contains(message), "{descr}: {err}");
        }
    }

    #[test]
    fn fortran_files_are_cut_along_the_last_long_dimension() {
        assert_eq!(fortran_axis(&[4, 5, 1]), 1);
        assert_eq!(fortran_axis(&[4, 5]), 1);
        assert_eq!(fortran_axis(&[1, 1]), 1);
        assert_eq!(fortran_axis(&[]), 0);
    }

    #[test]
    fn elements_are_named_by_their_index_in_the_file() {
        let selection = parse_selection(Some("2,1:5,:"), &[4, 6, 3]).unwrap();
        let slab = Region::try_new(vec![2..3, 3..5, 0..3]).unwrap();
        // Element 4 of the slab is [0, 1, 1] in it, [0, 3, 1] in the region.
        assert_eq!(element_name(4, &slab, &selection, 3), "element [0, 3, 1]");
        assert_eq!(element_name(4, &slab, &selection, 2), "element [3, 1]");
        let scalar = parse_selection(None, &[]).unwrap();
        assert_eq!(element_name(0, &scalar.region, &scalar, 0), "the element");
        // With steps, the file's index counts the selected indices: rows 1, 4, 7 and
        // columns 0, 2 of a 9x3 array; element 3 of the slab of rows 4..9 is [7, 2] in the
        // array, [2, 1] in the file.
        let strided = parse_selection(Some("1::3,::2"), &[9, 3]).unwrap();
        let slab = Region::try_new(vec![4..9, 0..3]).unwrap();
        assert_eq!(element_name(3, &slab, &strided, 2), "element [2, 1]");
    }

    #[test]
    fn text_elements_decode() {
        let le = |units: &[u32]| {
            units
                .iter()
                .flat_map(|u| u.to_le_bytes())
                .collect::<Vec<_>>()
        };
        let text = TextDtype::Utf32 {
            chars: 2,
            big_endian: false,
        };
        let buf = le(&[0x1F600, 0x61, 0, 0, 0xE9, 0]);
        let got = strings(&buf, 3, text, |i| i.to_string()).unwrap();
        assert_eq!(got.to_strings(), ["\u{1F600}a", "", "\u{e9}"]);
        let bad = le(&[0x61, 0, 0xDFFF, 0]);
        let err = strings(&bad, 2, text, |i| format!("element [{i}]")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "element [1] is not text: U+DFFF is a surrogate, not a character"
        );
        let bytes = TextDtype::Bytes { len: 3 };
        let err = strings(b"ab\0\xff\0\0", 2, bytes, |i| i.to_string()).unwrap_err();
        assert!(err.to_string().starts_with("1 is not UTF-8"), "{err}");
        let got = binary(b"a\0b\0\0\0", 2, 3).unwrap();
        assert_eq!(got.to_vecs(), [b"a\0b".to_vec(), Vec::new()]);
        // Zero-width dtypes hold only empty values.
        let none = TextDtype::Utf32 {
            chars: 0,
            big_endian: false,
        };
        assert_eq!(strings(&[], 2, none, |i| i.to_string()).unwrap().len(), 2);
        assert_eq!(
            binary(&[], 2, 0).unwrap().to_vecs(),
            [Vec::<u8>::new(), Vec::new()]
        );
    }

    /// Put `data` (an `.npy` body of `descr`, `shape`, `fortran_order`) into `region` of a
    /// fresh in-memory array, cut in slabs of about `slab_bytes`; the array and slab count.
    fn put(
        array: (Vec<u64>, DataType, Vec<u64>),
        npy: (&str, Vec<u64>, bool, &[u8]),
        region: &str,
        slab_bytes: u64,
    ) -> (Array<dyn Store>, usize, Result<()>) {
        let (shape, data_type, chunks) = array;
        let builder = zarr::array::ArrayBuilder::new(shape, data_type, chunks);
        let store = std::sync::Arc::new(zarr::store::MemoryStore::new());
        put_into(&builder, store, npy, region, slab_bytes)
    }

    /// As [`put`], into an array made by `builder` in `store`.
    fn put_into(
        builder: &zarr::array::ArrayBuilder,
        store: std::sync::Arc<dyn Store>,
        npy: (&str, Vec<u64>, bool, &[u8]),
        region: &str,
        slab_bytes: u64,
    ) -> (Array<dyn Store>, usize, Result<()>) {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let array = builder.create(store, "/a").await.unwrap();
            let data_type = array.metadata().data_type.clone();
            let (descr, shape, fortran_order, data) = npy;
            let mut source = Source {
                reader: data,
                name: "x.npy".to_owned(),
                header: Header {
                    descr: descr.to_owned(),
                    fortran_order,
                    shape,
                    data_offset: 0,
                },
                elements: elements(descr, &data_type, "x.npy").unwrap(),
            };
            let selection = parse_selection(Some(region), &array.metadata().shape).unwrap();
            let slabs = source.slabs(&array, &selection, slab_bytes).unwrap();
            let count = slabs.len();
            let result = write_slabs(
                &array,
                "a",
                &mut source,
                &selection,
                slabs,
                &ProgressBar::hidden(),
            )
            .await;
            if result.is_ok() {
                assert!(source.reader.is_empty(), "the whole file is read");
            }
            (array, count, result)
        })
    }

    fn read_u16(array: &Array<dyn Store>, region: &str) -> Vec<u16> {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let selection = parse_selection(Some(region), &array.metadata().shape).unwrap();
        let bytes = runtime
            .block_on(array.read_bytes(&selection.region))
            .unwrap();
        bytes
            .chunks_exact(2)
            .map(|b| u16::from_ne_bytes([b[0], b[1]]))
            .collect()
    }

    /// Aligned structured dtypes (padding as unnamed `|V n` fields, numpy's way) go into the
    /// packed struct, in Fortran order and across slabs too; unnamed fields that are not
    /// padding are refused.
    #[test]
    fn padding_of_aligned_records_is_left_out() {
        let data_type = DataType::from_json(
            &serde_json::json!({"name": "structured", "configuration": {"fields":
                [["a", "uint8"], ["b", "int16"], ["c", "uint8"]]}}),
            "data_type",
        )
        .unwrap();
        assert_eq!(data_type.fixed_size(), Some(4));
        let descr = "[('a', '|u1'), ('', '|V1'), ('b', '>i2'), ('c', '|u1'), ('', '|V1')]";
        // A 2x3 Fortran-order file: element [i, j] has a = 10i + j, b = -a, c = 200 + j.
        let mut data = Vec::new();
        for j in 0..3u8 {
            for i in 0..2u8 {
                let a = 10 * i + j;
                data.extend([a, 0xEE]);
                data.extend((-i16::from(a)).to_be_bytes());
                data.extend([200 + j, 0xEE]);
            }
        }
        let (array, slabs, result) = put(
            (vec![2, 3], data_type.clone(), vec![1, 2]),
            (descr, vec![2, 3], true, &data),
            ":,:",
            6 * 2,
        );
        result.unwrap();
        assert!(slabs > 1, "{slabs}");
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let region = Region::try_new(vec![0..2, 0..3]).unwrap();
        let bytes = runtime.block_on(array.read_bytes(&region)).unwrap();
        let mut want = Vec::new();
        for i in 0..2u8 {
            for j in 0..3u8 {
                let a = 10 * i + j;
                want.push(a);
                want.extend((-i16::from(a)).to_ne_bytes());
                want.push(200 + j);
            }
        }
        assert_eq!(bytes, want);
        match elements(descr, &data_type, "x.npy").unwrap() {
            Elements::Record {
                file_size,
                size,
                runs,
                swaps,
            } => {
                assert_eq!((file_size, size), (6, 4));
                assert_eq!(runs, [(0, 0, 1), (2, 1, 3)]);
                assert_eq!(swaps, [(1, 2)]);
            }
            other => panic!("{other:?}"),
        }
        // An unnamed field of another type is a field named "", not padding.
        let err = elements(
            "[('a', '|u1'), ('', '<i2'), ('c', '|u1')]",
            &data_type,
            "x.npy",
        )
        .unwrap_err();
        assert!(err.to_string().contains("fields (a, , c)"), "{err:#}");
        // A packed file needs no copying.
        match elements(
            "[('a', '|u1'), ('b', '<i2'), ('c', '|u1')]",
            &data_type,
            "x.npy",
        ) {
            Ok(Elements::Record { runs, .. }) => assert!(runs.is_empty()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fortran_files_go_in_slabs_along_the_last_long_dimension() {
        // A 2x5x3 Fortran-order big-endian file whose element [i, j, k] is 100i + 10j + k,
        // into [1:3, :, 1:4] of a 3x5x4 array with 2x2x3 chunks.
        let mut data = Vec::new();
        for k in 0..3u16 {
            for j in 0..5u16 {
                for i in 0..2u16 {
                    data.extend((100 * i + 10 * j + k).to_be_bytes());
                }
            }
        }
        let want: Vec<u16> = (0..2u16)
            .flat_map(|i| (0..5u16).flat_map(move |j| (0..3u16).map(move |k| 100 * i + 10 * j + k)))
            .collect();
        let array = (vec![3, 5, 4], DataType::UInt16, vec![2, 2, 3]);
        // A slab of one column (2x5 elements, 4 bytes each in memory): the chunk columns
        // 1..3 and 3..4.
        let (a, slabs, result) = put(
            array.clone(),
            (">u2", vec![2, 5, 3], true, &data),
            "1:3,:,1:4",
            40,
        );
        result.unwrap();
        assert_eq!(slabs, 2);
        assert_eq!(read_u16(&a, "1:3,:,1:4"), want);
        assert_eq!(read_u16(&a, "0,0,:"), [0; 4]);
        // The same values as one slab.
        let (a, slabs, result) = put(
            array.clone(),
            (">u2", vec![2, 5, 3], true, &data),
            "1:3,:,1:4",
            1 << 20,
        );
        result.unwrap();
        assert_eq!(slabs, 1);
        assert_eq!(read_u16(&a, "1:3,:,1:4"), want);
        // A 2-d file into a region whose last dimension is a single index: cut along the
        // middle one (chunk rows 0..2, 2..4, 4..5).
        let plane = &data[..2 * 5 * 2];
        let (a, slabs, result) = put(array, (">u2", vec![2, 5], true, plane), "1:3,:,2", 8);
        result.unwrap();
        assert_eq!(slabs, 3);
        let want: Vec<u16> = (0..2u16)
            .flat_map(|i| (0..5u16).map(move |j| 100 * i + 10 * j))
            .collect();
        assert_eq!(read_u16(&a, "1:3,:,2"), want);
    }

    /// A file put into a sharded array in slabs smaller than a row of shards: slabs of inner
    /// chunk rows, each shard stored once and none read back; a region that cuts inner
    /// chunks keeps the elements around it.
    #[test]
    fn sharded_arrays_are_put_in_rows_of_inner_chunks_storing_each_shard_once() {
        use zarr::store::{Operation, RecordingStore};
        let data: Vec<u8> = (0..20 * 6u16).flat_map(u16::to_le_bytes).collect();
        let builder = zarr::array::ArrayBuilder::new(vec![20, 6], DataType::UInt16, vec![8, 6])
            .sharding(vec![2, 3]);
        let store = std::sync::Arc::new(RecordingStore::new(zarr::store::MemoryStore::new()));
        // 6 elements of 2 bytes a row: two rows (one row of inner chunks) per slab.
        let (a, slabs, result) = put_into(
            &builder,
            std::sync::Arc::clone(&store) as std::sync::Arc<dyn Store>,
            ("<u2", vec![20, 6], false, &data),
            ":,:",
            24,
        );
        result.unwrap();
        assert_eq!(slabs, 10);
        let mut sets = Vec::new();
        for operation in store.operations() {
            match operation {
                Operation::Set { key, .. } if key.as_str().starts_with("a/c/") => {
                    sets.push(key.as_str().to_owned());
                }
                Operation::Get { key, .. } if key.as_str().starts_with("a/c/") => {
                    panic!("{key} read while writing")
                }
                Operation::GetPartialValues { requests, .. } => {
                    panic!("{requests:?} read while writing")
                }
                _ => {}
            }
        }
        assert_eq!(sets, ["a/c/0/0", "a/c/1/0", "a/c/2/0"], "each shard once");
        let want: Vec<u16> = (0..20 * 6).collect();
        assert_eq!(read_u16(&a, ":,:"), want);

        // Rows 3..13 of a filled array from a 10-row file: the rows around them stay.
        let filled = builder
            .clone()
            .fill_value(zarr::metadata::FillValue::new(7u16.to_ne_bytes()));
        let part: Vec<u8> = (0..10 * 6u16)
            .flat_map(|v| (1000 + v).to_le_bytes())
            .collect();
        let store = std::sync::Arc::new(zarr::store::MemoryStore::new());
        let (a, slabs, result) = put_into(
            &filled,
            store,
            ("<u2", vec![10, 6], false, &part),
            "3:13,:",
            24,
        );
        result.unwrap();
        assert!(slabs > 2, "{slabs}");
        let got = read_u16(&a, ":,:");
        for (i, v) in got.iter().enumerate() {
            let row = i / 6;
            let want = if (3..13).contains(&row) {
                1000 + (i - 18) as u16
            } else {
                7
            };
            assert_eq!(*v, want, "element {i}");
        }
    }

    #[test]
    fn strided_selections_take_files_of_the_selected_shape() {
        // Rows 1, 4, 7 and columns 0, 3 of a 9x5 array with 2x2 chunks, from a 3x2 file in C
        // and in Fortran order, in one slab and in several.
        let want = |a: &Array<dyn Store>| {
            let all = read_u16(a, ":,:");
            let mut expected = vec![0u16; 45];
            for (n, (r, c)) in [(1, 0), (1, 3), (4, 0), (4, 3), (7, 0), (7, 3)]
                .into_iter()
                .enumerate()
            {
                expected[r * 5 + c] = n as u16 + 1;
            }
            assert_eq!(all, expected);
        };
        let c_order: Vec<u8> = (1..=6u16).flat_map(u16::to_le_bytes).collect();
        let f_order: Vec<u8> = [1u16, 3, 5, 2, 4, 6]
            .into_iter()
            .flat_map(u16::to_le_bytes)
            .collect();
        let array = (vec![9, 5], DataType::UInt16, vec![2, 2]);
        for (data, fortran) in [(&c_order, false), (&f_order, true)] {
            for slab_bytes in [8, 1 << 20] {
                let (a, slabs, result) = put(
                    array.clone(),
                    ("<u2", vec![3, 2], fortran, data),
                    "1::3,::3",
                    slab_bytes,
                );
                result.unwrap();
                assert!(
                    (slab_bytes == 8) == (slabs > 1),
                    "{slabs} slabs of {slab_bytes}"
                );
                want(&a);
            }
        }
        // A bad string is named by its index in the file, not in the array.
        let le = |units: &[u32]| {
            units
                .iter()
                .flat_map(|u| u.to_le_bytes())
                .collect::<Vec<_>>()
        };
        let data = le(&[0x61, 0x62, 0x63, 0x110000]);
        let (_, _, result) = put(
            (vec![8], DataType::String, vec![2]),
            ("<U1", vec![4], false, &data),
            "::2",
            32,
        );
        let err = format!("{:#}", result.unwrap_err());
        assert!(err.contains("element [3] is not text"), "{err}");
    }

    #[test]
    fn string_slabs_name_bad_elements_by_their_file_index() {
        let le = |units: &[u32]| {
            units
                .iter()
                .flat_map(|u| u.to_le_bytes())
                .collect::<Vec<_>>()
        };
        let mut data = le(&[0x61, 0, 0, 0x62, 0x63, 0, 0x1F600, 0, 0]);
        data.extend(le(&[0x64, 0x110000, 0, 0x65, 0, 0]));
        let array = (vec![6], DataType::String, vec![2]);
        // 32 bytes per element in memory: one chunk per slab (array 1..2, 2..4, 4..6), so
        // file element [3] is in the third.
        let (a, slabs, result) = put(array, ("<U3", vec![5], false, &data), "1:", 32);
        assert_eq!(slabs, 3);
        let err = format!("{:#}", result.unwrap_err());
        assert!(
            err.contains("element [3] is not text: 0x110000 is beyond U+10FFFF"),
            "{err}"
        );
        // Slabs before the bad one are written.
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let got = runtime.block_on(a.read_strings::<i32>(0..6)).unwrap();
        assert_eq!(got.to_strings(), ["", "a", "bc", "\u{1F600}", "", ""]);
    }
}
