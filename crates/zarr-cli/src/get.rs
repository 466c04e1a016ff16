//! `zarr get`: print or export the values of a region.

use std::fs::File;
use std::io::{BufWriter, IsTerminal as _, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use zarr::array::{Array, ArrayBytes, Region};
use zarr::codecs::VlenBytes;
use zarr::metadata::DataType;
use zarr::store::Store;

use crate::format::{Style, element, native_to_little, variable_element};
use crate::npy::{TextDtype, extend_utf32, header, npy_type, widen_small_ints};
use crate::region::{Selection, element_text, parse_selection, slabs};
use crate::target::{Access, resolve};
use crate::{TargetArgs, usage};

/// Bytes read per slab when streaming.
pub(crate) const SLAB_BYTES: u64 = 64 << 20;

/// The bytes per variable-length element assumed when cutting slabs (their sizes are not
/// known before reading them).
const VARIABLE_GUESS: u64 = 16;

/// Output formats of `zarr get`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Values as text (streamed).
    Text,
    /// Nested JSON arrays (built in memory: for strings and small regions).
    Json,
    /// A numpy `.npy` file (streamed).
    Npy,
    /// The elements' bytes, C order, little-endian (streamed).
    Raw,
}

impl Format {
    /// The name `--format` takes.
    fn name(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Json => "json",
            Self::Npy => "npy",
            Self::Raw => "raw",
        }
    }
}

/// Arguments of `zarr get`.
#[derive(Args, Debug)]
pub(crate) struct GetArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// The region, numpy-like: comma-separated `start:stop`, `start:`, `:stop`, `:` or an
    /// index per dimension, and at most one `...` for the dimensions not given (`0:10,:,5`,
    /// `...,-1`; default: the whole array).
    #[arg(short, long, allow_hyphen_values = true)]
    region: Option<String>,
    /// Output format [default: from the extension of -o (.npy, .json, .raw, .bin), else
    /// text].
    #[arg(short, long, value_enum)]
    format: Option<Format>,
    /// Write to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// The format an output file's extension names, if any.
fn format_of(path: &std::path::Path) -> Option<Format> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    match extension.as_str() {
        "npy" => Some(Format::Npy),
        "json" => Some(Format::Json),
        "raw" | "bin" => Some(Format::Raw),
        "txt" | "text" | "csv" | "tsv" => Some(Format::Text),
        _ => None,
    }
}

pub(crate) async fn run(args: GetArgs) -> Result<()> {
    let implied = args.output.as_deref().and_then(format_of);
    let format = match (args.format, implied) {
        (Some(given), Some(implied)) if given != implied => usage!(
            "--format {} writes no {} file; give -o a matching name, or leave --format out",
            given.name(),
            args.output
                .as_deref()
                .and_then(|p| p.extension())
                .map_or_else(String::new, |e| format!(".{}", e.to_string_lossy()))
        ),
        (Some(given), _) => given,
        (None, implied) => implied.unwrap_or(Format::Text),
    };
    let target = resolve(&args.target, Access::Read)?;
    let array = target.array().await?;
    let metadata = array.metadata();
    let selection = parse_selection(args.region.as_deref(), &metadata.shape)?;
    let binary = matches!(format, Format::Npy | Format::Raw);
    let variable = metadata.data_type.fixed_size().is_none();
    if format == Format::Raw && variable {
        usage!(
            "{} holds {} elements, which have no fixed size; use --format npy, json or text",
            target.describe(),
            metadata.data_type.name()
        );
    }
    if format == Format::Npy && variable && matches!(metadata.data_type, DataType::NdArray(_)) {
        usage!(
            "numpy has no dtype for {} (elements of varying shape); use --format json or text",
            metadata.data_type
        );
    }
    if format == Format::Npy && variable && matches!(metadata.data_type, DataType::Optional(_)) {
        usage!(
            "numpy has no dtype for {} (optional values of variable length); use --format \
             json or text",
            metadata.data_type
        );
    }
    // Variable-length elements take their npy dtype from the data (see `write_text_npy`).
    let npy = if format == Format::Npy && !variable {
        Some(npy_type(&metadata.data_type)?)
    } else {
        None
    };
    let (mut out, file): (BufWriter<Box<dyn Write>>, _) = match &args.output {
        None => {
            if binary && std::io::stdout().is_terminal() {
                usage!(
                    "not writing binary {} output to a terminal; use -o FILE",
                    format.name()
                );
            }
            (BufWriter::new(Box::new(std::io::stdout().lock())), None)
        }
        Some(path) => {
            let file =
                File::create(path).with_context(|| format!("creating {}", path.display()))?;
            (BufWriter::new(Box::new(file)), Some(path))
        }
    };
    let result = async {
        write(
            &array,
            &selection,
            format,
            npy.as_ref(),
            SLAB_BYTES,
            &mut out,
        )
        .await?;
        out.flush().with_context(|| match file {
            Some(path) => format!("writing {}", path.display()),
            None => "writing to standard output".to_owned(),
        })
    }
    .await;
    if result.is_err()
        && let Some(path) = file
    {
        // Leave no partial export behind; but only a regular file is an export's (`-o
        // /dev/null` is not to be removed, nor a named pipe or a link).
        drop(out);
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file()) {
            let _ = std::fs::remove_file(path);
        }
    }
    result?;
    Ok(())
}

/// Write the selected elements in `format`, reading slabs of about `slab_bytes`.
async fn write(
    array: &Array<dyn Store>,
    selection: &Selection,
    format: Format,
    npy: Option<&crate::npy::NpyType>,
    slab_bytes: u64,
    out: &mut impl Write,
) -> Result<()> {
    let metadata = array.metadata();
    let data_type = &metadata.data_type;
    let out_shape = selection.out_shape();
    let element_bytes = data_type.fixed_size().map_or(VARIABLE_GUESS, |n| n as u64);
    let read_slabs = || {
        slabs(
            metadata,
            array.inner_chunk_shape(),
            &selection.region,
            element_bytes,
            slab_bytes,
        )
    };
    match format {
        Format::Json | Format::Text => {
            // Slab by slab: memory stays at one slab however large the region.
            let (mut printer, style): (Box<dyn Printer>, _) = if format == Format::Json {
                (Box::new(JsonPrinter::new(&out_shape)), Style::Json)
            } else {
                (Box::new(TextPrinter::new(&out_shape)), Style::Text)
            };
            for slab in read_slabs()? {
                let bytes = read_slab(array, selection, &slab).await?;
                let mut buf = String::new();
                for_each_element(&bytes, data_type, style, |text| {
                    printer.push(&mut buf, text);
                    Ok(())
                })?;
                out.write_all(buf.as_bytes())?;
            }
            let mut buf = String::new();
            printer.finish(&mut buf);
            out.write_all(buf.as_bytes())?;
        }
        Format::Npy if data_type.fixed_size().is_none() => {
            write_text_npy(array, selection, slab_bytes, out).await?;
        }
        Format::Npy | Format::Raw => {
            if let Some(npy) = npy {
                // Fixed-shape `ndarray` elements become trailing dimensions of numpy's array.
                let mut npy_shape = out_shape.clone();
                if let DataType::NdArray(nd) = data_type {
                    npy_shape.extend(nd.shape().iter().map(|d| d.unwrap_or(0)));
                }
                out.write_all(&header(&npy.descr, &npy_shape))?;
            }
            for slab in read_slabs()? {
                let mut bytes = if selection.is_strided() {
                    array
                        .read_selection_bytes(&selection.strided_in(&slab))
                        .await?
                } else {
                    array.read_bytes(&slab).await?
                };
                if let Some(small) = npy.and_then(|n| n.small_int) {
                    widen_small_ints(&mut bytes, small);
                }
                native_to_little(&mut bytes, data_type);
                out.write_all(&bytes)?;
            }
        }
    }
    Ok(())
}

/// The selected elements of `slab` (a part of the selection's region, split along its first
/// dimension): the slab itself, or every `step`-th index of it for a strided selection.
async fn read_slab(
    array: &Array<dyn Store>,
    selection: &Selection,
    slab: &Region,
) -> Result<ArrayBytes> {
    if selection.is_strided() {
        let strided = selection.strided_in(slab);
        Ok(array.read_selection_array_bytes(&strided).await?)
    } else {
        Ok(array.read_array_bytes(slab).await?)
    }
}

/// Export `string` or `bytes` elements as `.npy`, which holds them at one fixed width: `<U n`
/// (UTF-32LE, `n` the most characters of any element) or `|S n` (`n` the most bytes), each
/// element NUL-padded, and `n` at least 1 as numpy makes it.
///
/// The width must be in the header, before the data, so the region is read twice in slabs:
/// once for the width, once to write. A region that fits in one slab is read once and kept.
async fn write_text_npy(
    array: &Array<dyn Store>,
    selection: &Selection,
    slab_bytes: u64,
    out: &mut impl Write,
) -> Result<()> {
    let metadata = array.metadata();
    let strings = metadata.data_type == DataType::String;
    let slabs = slabs(
        metadata,
        array.inner_chunk_shape(),
        &selection.region,
        VARIABLE_GUESS,
        slab_bytes,
    )?;
    let mut widest = 0;
    let mut kept = None;
    for slab in &slabs {
        let vlen = read_variable(array, selection, slab).await?;
        for (i, e) in vlen.iter().enumerate() {
            widest = widest.max(measure(e, strings, selection, slab, i)?.1);
        }
        if slabs.len() == 1 {
            kept = Some(vlen);
        }
    }
    let dtype = if strings {
        TextDtype::Utf32 {
            chars: widest,
            big_endian: false,
        }
    } else {
        TextDtype::Bytes { len: widest }
    };
    let widest = widest.max(1);
    out.write_all(&header(&dtype.descr(), &selection.out_shape()))?;
    let mut item = Vec::with_capacity(dtype.item_size().max(4));
    for slab in &slabs {
        let vlen = match kept.take() {
            Some(vlen) => vlen,
            None => read_variable(array, selection, slab).await?,
        };
        for (i, e) in vlen.iter().enumerate() {
            let (text, width) = measure(e, strings, selection, slab, i)?;
            if width > widest {
                anyhow::bail!(
                    "{} of the array grew while it was exported (another writer?)",
                    element_text(&selection.element_in(slab, i as u64))
                );
            }
            item.clear();
            match text {
                Some(text) => extend_utf32(&mut item, text, widest),
                None => {
                    item.extend_from_slice(e);
                    item.resize(widest, 0);
                }
            }
            out.write_all(&item)?;
        }
    }
    Ok(())
}

/// A `string` (when `strings`) or `bytes` element's text (strings only) and width: characters
/// of a string, bytes otherwise. The element is element `i` of the selection's part in
/// `slab`, named by its index in the array if it is not UTF-8.
fn measure<'a>(
    e: &'a [u8],
    strings: bool,
    selection: &Selection,
    slab: &Region,
    i: usize,
) -> Result<(Option<&'a str>, usize)> {
    if strings {
        let text = std::str::from_utf8(e).with_context(|| {
            format!(
                "{} of the array is not UTF-8",
                element_text(&selection.element_in(slab, i as u64))
            )
        })?;
        Ok((Some(text), text.chars().count()))
    } else {
        Ok((None, e.len()))
    }
}

/// The variable-length elements the selection selects in `slab`.
async fn read_variable(
    array: &Array<dyn Store>,
    selection: &Selection,
    slab: &Region,
) -> Result<VlenBytes> {
    match read_slab(array, selection, slab).await? {
        ArrayBytes::Variable(vlen) => Ok(vlen),
        ArrayBytes::Fixed(_) => anyhow::bail!("expected variable-length elements"),
    }
}

/// Call `f` with the text of each element, in C order.
pub(crate) fn for_each_element(
    bytes: &ArrayBytes,
    data_type: &zarr::metadata::DataType,
    style: Style,
    mut f: impl FnMut(&str) -> Result<()>,
) -> Result<()> {
    let mut text = String::new();
    match bytes {
        ArrayBytes::Fixed(bytes) => {
            let size = data_type.fixed_size().unwrap_or(1).max(1);
            for e in bytes.chunks_exact(size) {
                text.clear();
                element(&mut text, data_type, e, style);
                f(&text)?;
            }
        }
        ArrayBytes::Variable(vlen) => {
            for e in vlen.iter() {
                text.clear();
                variable_element(&mut text, data_type, e, style);
                f(&text)?;
            }
        }
    }
    Ok(())
}

/// Lays out a stream of elements as text: one per line for 0-d and 1-d results; otherwise
/// rows of the last dimension, space-separated, with a blank line between 2-d planes.
/// Text output written element by element (each already formatted), in C order.
trait Printer {
    fn push(&mut self, out: &mut String, text: &str);
    /// What ends the output, after the last element.
    fn finish(&self, out: &mut String);
}

struct TextPrinter {
    rank: usize,
    row_len: u64,
    plane_rows: u64,
    index: u64,
}

impl TextPrinter {
    fn new(shape: &[u64]) -> Self {
        let rank = shape.len();
        Self {
            rank,
            row_len: shape.last().copied().unwrap_or(1).max(1),
            plane_rows: if rank >= 2 { shape[rank - 2].max(1) } else { 1 },
            index: 0,
        }
    }
}

impl Printer for TextPrinter {
    fn push(&mut self, out: &mut String, text: &str) {
        if self.rank < 2 {
            out.push_str(text);
            out.push('\n');
        } else {
            let column = self.index % self.row_len;
            let row = self.index / self.row_len;
            if column == 0 && row > 0 && self.rank >= 3 && row.is_multiple_of(self.plane_rows) {
                out.push('\n');
            }
            if column > 0 {
                out.push(' ');
            }
            out.push_str(text);
            if column + 1 == self.row_len {
                out.push('\n');
            }
        }
        self.index += 1;
    }

    fn finish(&self, _out: &mut String) {}
}

/// Nested JSON arrays of a shape, written element by element (each already JSON, in C
/// order), as [`nest`] writes them all at once: `[[0, 1, 2], [3, 4, 5]]`.
struct JsonPrinter {
    shape: Vec<u64>,
    /// The index of the next element.
    index: Vec<u64>,
    /// Dimensions whose index wrapped to 0 on the way to the next element: brackets to close
    /// and open again before it.
    wrapped: usize,
    pushed: bool,
}

impl JsonPrinter {
    fn new(shape: &[u64]) -> Self {
        Self {
            shape: shape.to_vec(),
            index: vec![0; shape.len()],
            wrapped: 0,
            pushed: false,
        }
    }
}

impl Printer for JsonPrinter {
    fn push(&mut self, out: &mut String, text: &str) {
        let rank = self.shape.len();
        if !self.pushed {
            out.extend(std::iter::repeat_n('[', rank));
        } else {
            out.extend(std::iter::repeat_n(']', self.wrapped));
            out.push_str(", ");
            out.extend(std::iter::repeat_n('[', self.wrapped));
        }
        out.push_str(text);
        self.pushed = true;
        self.wrapped = 0;
        for d in (0..rank).rev() {
            self.index[d] += 1;
            if self.index[d] < self.shape[d] || d == 0 {
                break;
            }
            self.index[d] = 0;
            self.wrapped += 1;
        }
    }

    /// Close what is open (for a shape without elements, write the empty arrays it has),
    /// then end the line.
    fn finish(&self, out: &mut String) {
        if self.pushed {
            out.extend(std::iter::repeat_n(']', self.shape.len()));
        } else {
            nest(out, &self.shape, &[]);
        }
        out.push('\n');
    }
}

/// Nested JSON arrays of `shape` from the flat elements (already JSON).
fn nest(out: &mut String, shape: &[u64], values: &[String]) {
    match shape {
        [] => out.push_str(values.first().map_or("null", String::as_str)),
        [_] => {
            out.push('[');
            out.push_str(&values.join(", "));
            out.push(']');
        }
        [n, rest @ ..] => {
            let step = rest.iter().product::<u64>() as usize;
            out.push('[');
            for i in 0..*n as usize {
                if i > 0 {
                    out.push_str(", ");
                }
                nest(out, rest, &values[i * step..(i + 1) * step]);
            }
            out.push(']');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn print(shape: &[u64]) -> String {
        let mut printer = TextPrinter::new(shape);
        let mut out = String::new();
        let n: u64 = shape.iter().product();
        for i in 0..n {
            printer.push(&mut out, &i.to_string());
        }
        out
    }

    #[test]
    fn text_layout() {
        assert_eq!(print(&[]), "0\n");
        assert_eq!(print(&[3]), "0\n1\n2\n");
        assert_eq!(print(&[2, 3]), "0 1 2\n3 4 5\n");
        assert_eq!(print(&[2, 1, 2]), "0 1\n\n2 3\n");
    }

    /// `get --format npy` of `region` of a fresh in-memory `data_type` array of `shape`
    /// (chunks of 2 along the first dimension) holding `values`, in slabs of `slab_bytes`.
    fn export(
        data_type: DataType,
        shape: Vec<u64>,
        values: &[&[u8]],
        region: &str,
        slab_bytes: u64,
    ) -> Vec<u8> {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let store: std::sync::Arc<dyn Store> =
                std::sync::Arc::new(zarr::store::MemoryStore::new());
            let mut chunks = shape.clone();
            chunks[0] = 2;
            let array = zarr::array::ArrayBuilder::new(shape, data_type, chunks)
                .create(store, "/a")
                .await
                .unwrap();
            let all = parse_selection(None, &array.metadata().shape).unwrap();
            let vlen = zarr::vlen::VlenBinary::<i32>::from_elements(values).unwrap();
            let vlen = vlen.to_vlen_bytes().unwrap();
            array
                .write_array_bytes(&all.region, ArrayBytes::Variable(vlen))
                .await
                .unwrap();
            let selection = parse_selection(Some(region), &array.metadata().shape).unwrap();
            let mut out = Vec::new();
            write_text_npy(&array, &selection, slab_bytes, &mut out)
                .await
                .unwrap();
            out
        })
    }

    /// `get --format json` of `region` of a 5x4x3 `int16` array (chunks 2x4x3), in slabs of
    /// about `slab_bytes`.
    fn json_export(region: &str, slab_bytes: u64) -> String {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let store: std::sync::Arc<dyn Store> =
                std::sync::Arc::new(zarr::store::MemoryStore::new());
            let array =
                zarr::array::ArrayBuilder::new(vec![5, 4, 3], DataType::Int16, vec![2, 4, 3])
                    .create(store, "/a")
                    .await
                    .unwrap();
            let values: Vec<i16> = (0..60).map(|i| i * 3 - 50).collect();
            array.write(array.full_region(), &values).await.unwrap();
            let selection = parse_selection(Some(region), &array.metadata().shape).unwrap();
            let mut out = Vec::new();
            write(&array, &selection, Format::Json, None, slab_bytes, &mut out)
                .await
                .unwrap();
            String::from_utf8(out).unwrap()
        })
    }

    #[test]
    fn json_exports_in_slabs_equal_one_read() {
        for region in [":", "1:4,::2,1", "3", "2:2", "::2,1:3,::-1"] {
            let Ok(_) = parse_selection(Some(region), &[5, 4, 3]) else {
                continue;
            };
            let whole = json_export(region, 1 << 20);
            // 24 bytes: one chunk row (2 x 4 x 3 x 2 bytes) per slab at most.
            let slabbed = json_export(region, 24);
            assert_eq!(slabbed, whole, "region {region}");
            assert!(whole.ends_with('\n'));
            serde_json::from_str::<serde_json::Value>(&whole).unwrap();
        }
        let all: serde_json::Value = serde_json::from_str(&json_export(":", 1)).unwrap();
        assert_eq!(all[4][3][2], 59 * 3 - 50, "{all}");
        assert_eq!(json_export("2:2", 1), "[]\n");
        assert_eq!(json_export("1,2,0", 1), "4\n"); // element 18: 18 x 3 - 50
    }

    #[test]
    fn sharded_exports_read_rows_of_inner_chunks_not_whole_shards() {
        use zarr::store::{Operation, RecordingStore};
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let recording =
                std::sync::Arc::new(RecordingStore::new(zarr::store::MemoryStore::new()));
            let store: std::sync::Arc<dyn Store> = std::sync::Arc::clone(&recording) as _;
            // Shards of 8 x 8 `uint16` (128 bytes of data), inner chunks of 2 x 8 (32 bytes).
            let array = zarr::array::ArrayBuilder::new(vec![16, 8], DataType::UInt16, vec![8, 8])
                .sharding(vec![2, 8])
                .create(store, "/s")
                .await
                .unwrap();
            let values: Vec<u16> = (0..128).map(|i| i * 7 + 1).collect();
            array.write(array.full_region(), &values).await.unwrap();
            recording.clear();
            let selection = parse_selection(Some("1:15"), &array.metadata().shape).unwrap();
            let mut out = Vec::new();
            // Slabs of 2 rows (32 bytes), where a row of shards holds 128 bytes.
            write(&array, &selection, Format::Raw, None, 32, &mut out)
                .await
                .unwrap();
            let want: Vec<u8> = values[8..120]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
            assert_eq!(out, want);
            // Each read took an inner chunk row at most (or a shard's index), never a shard.
            let operations = recording.operations();
            assert!(!operations.is_empty());
            for operation in operations {
                let bytes = match &operation {
                    Operation::Get { bytes, .. } => bytes.unwrap_or(0),
                    Operation::GetPartialValues { bytes, .. } => *bytes,
                    _ => 0,
                };
                // The index: 4 inner chunks x 16 bytes + a 4-byte checksum.
                assert!(bytes <= 68, "{operation:?}");
            }
        });
    }

    /// The `descr` and data of an `.npy` file.
    fn parts(npy: &[u8]) -> (String, Vec<u64>, Vec<u8>) {
        let h = crate::npy::read_header(&mut &npy[..]).unwrap();
        let data = npy[usize::try_from(h.data_offset).unwrap()..].to_vec();
        (h.descr, h.shape, data)
    }

    #[test]
    fn strings_export_at_the_widest_element() {
        let le = |units: &[u32]| {
            units
                .iter()
                .flat_map(|u| u.to_le_bytes())
                .collect::<Vec<_>>()
        };
        let values: [&[u8]; 6] = [
            b"ab",
            "\u{1F600}".as_bytes(),
            b"",
            "\u{e9}t\u{e9}".as_bytes(),
            b"x",
            b"",
        ];
        // One slab (kept from the first pass) or three (read twice): the same file.
        let one = export(DataType::String, vec![6], &values, ":", 1 << 20);
        let three = export(DataType::String, vec![6], &values, ":", 16);
        assert_eq!(one, three);
        let (descr, shape, data) = parts(&one);
        assert_eq!((descr.as_str(), shape.as_slice()), ("<U3", &[6u64][..]));
        let want = le(&[
            0x61, 0x62, 0, 0x1F600, 0, 0, 0, 0, 0, 0xE9, 0x74, 0xE9, 0x78, 0, 0, 0, 0, 0,
        ]);
        assert_eq!(data, want);
        // A region: the width is the widest element in it.
        let (descr, shape, data) =
            parts(&export(DataType::String, vec![3, 2], &values, "1:,1", 16));
        assert_eq!((descr.as_str(), shape.as_slice()), ("<U3", &[2u64][..]));
        assert_eq!(data, le(&[0xE9, 0x74, 0xE9, 0, 0, 0]));
        // All empty: numpy's <U1.
        let (descr, _, data) = parts(&export(DataType::String, vec![2], &[b"", b""], ":", 16));
        assert_eq!(descr, "<U1");
        assert_eq!(data, [0; 8]);
        // Bytes: |S n, NUL-padded.
        let bytes: [&[u8]; 3] = [b"a\0b", b"", b"\xff"];
        let (descr, _, data) = parts(&export(DataType::Bytes, vec![3], &bytes, ":", 16));
        assert_eq!(descr, "|S3");
        assert_eq!(data, b"a\0b\0\0\0\xff\0\0");
    }

    #[test]
    fn json_printed_element_by_element_nests_as_a_whole() {
        for shape in [
            &[][..],
            &[0],
            &[1],
            &[4],
            &[2, 3],
            &[3, 1],
            &[1, 1, 1],
            &[2, 0],
            &[0, 3],
            &[2, 3, 4],
            &[3, 1, 2, 2],
        ] {
            let n: u64 = shape.iter().product();
            let values: Vec<String> = (0..n).map(|i| i.to_string()).collect();
            let mut whole = String::new();
            nest(&mut whole, shape, &values);
            let mut printer = JsonPrinter::new(shape);
            let mut streamed = String::new();
            for v in &values {
                printer.push(&mut streamed, v);
            }
            printer.finish(&mut streamed);
            assert_eq!(streamed, format!("{whole}\n"), "shape {shape:?}");
            let parsed: serde_json::Value = serde_json::from_str(&streamed).unwrap();
            assert!(parsed.is_array() || shape.is_empty(), "{streamed}");
        }
    }

    #[test]
    fn json_nesting() {
        let values: Vec<String> = (0..6).map(|i| i.to_string()).collect();
        let mut out = String::new();
        nest(&mut out, &[2, 3], &values);
        assert_eq!(out, "[[0, 1, 2], [3, 4, 5]]");
        let mut out = String::new();
        nest(&mut out, &[2, 0], &[]);
        assert_eq!(out, "[[], []]");
    }
}
