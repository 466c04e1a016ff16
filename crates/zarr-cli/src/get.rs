//! `zarr get`: print or export the values of a region.

use std::fs::File;
use std::io::{BufWriter, IsTerminal as _, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use zarr::array::{Array, ArrayBytes};
use zarr::store::Store;

use crate::format::{Style, element, native_to_little, variable_element};
use crate::npy::{header, npy_type, widen_small_ints};
use crate::region::{Selection, parse_selection, slabs};
use crate::target::{Access, resolve};
use crate::{TargetArgs, usage};

/// Bytes read per slab when streaming.
pub(crate) const SLAB_BYTES: u64 = 64 << 20;

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

/// Arguments of `zarr get`.
#[derive(Args, Debug)]
pub(crate) struct GetArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// The region, numpy-like: `0:10,:,5` (default: the whole array).
    #[arg(short, long, allow_hyphen_values = true)]
    region: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Write to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

pub(crate) async fn run(args: GetArgs) -> Result<()> {
    let target = resolve(&args.target, Access::Read)?;
    let array = target.array().await?;
    let metadata = array.metadata();
    let selection = parse_selection(args.region.as_deref(), &metadata.shape)?;
    let binary = matches!(args.format, Format::Npy | Format::Raw);
    if binary && metadata.data_type.fixed_size().is_none() {
        usage!(
            "{} holds {} elements, which have no fixed size; use --format json or text",
            target.describe(),
            metadata.data_type.name()
        );
    }
    let npy = if args.format == Format::Npy {
        Some(npy_type(&metadata.data_type)?)
    } else {
        None
    };
    match &args.output {
        None => {
            if binary && std::io::stdout().is_terminal() {
                usage!(
                    "not writing binary {:?} output to a terminal; use -o FILE",
                    args.format
                );
            }
            let mut out = BufWriter::new(std::io::stdout().lock());
            write(&array, &selection, args.format, npy.as_ref(), &mut out).await?;
            out.flush()?;
        }
        Some(path) => {
            let file =
                File::create(path).with_context(|| format!("creating {}", path.display()))?;
            let mut out = BufWriter::new(file);
            let result = async {
                write(&array, &selection, args.format, npy.as_ref(), &mut out).await?;
                out.flush()
                    .with_context(|| format!("writing {}", path.display()))
            }
            .await;
            if result.is_err() {
                // Leave no partial export behind.
                drop(out);
                let _ = std::fs::remove_file(path);
            }
            result?;
        }
    }
    Ok(())
}

async fn write(
    array: &Array<dyn Store>,
    selection: &Selection,
    format: Format,
    npy: Option<&crate::npy::NpyType>,
    out: &mut impl Write,
) -> Result<()> {
    let metadata = array.metadata();
    let data_type = &metadata.data_type;
    let out_shape = selection.out_shape();
    let element_bytes = data_type.fixed_size().unwrap_or(16) as u64;
    match format {
        Format::Json => {
            let bytes = array.read_array_bytes(&selection.region).await?;
            let mut values = Vec::new();
            for_each_element(&bytes, data_type, Style::Json, |text| {
                values.push(text.to_owned());
                Ok(())
            })?;
            let mut text = String::new();
            nest(&mut text, &out_shape, &values);
            text.push('\n');
            out.write_all(text.as_bytes())?;
        }
        Format::Text => {
            let mut printer = TextPrinter::new(&out_shape);
            for slab in slabs(metadata, &selection.region, element_bytes, SLAB_BYTES)? {
                let bytes = array.read_array_bytes(&slab).await?;
                let mut buf = String::new();
                for_each_element(&bytes, data_type, Style::Text, |text| {
                    printer.push(&mut buf, text);
                    Ok(())
                })?;
                out.write_all(buf.as_bytes())?;
            }
        }
        Format::Npy | Format::Raw => {
            if let Some(npy) = npy {
                out.write_all(&header(&npy.descr, &out_shape))?;
            }
            for slab in slabs(metadata, &selection.region, element_bytes, SLAB_BYTES)? {
                let mut bytes = array.read_bytes(&slab).await?;
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
