//! `zarr put`: write the values of an `.npy` file into an array.

use std::fs::File;
use std::io::{BufReader, Read as _};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use crate::format::swap_bytes;
use crate::get::SLAB_BYTES;
use crate::layout::shape_text;
use crate::npy::{npy_type, read_header};
use crate::progress::{bar, note};
use crate::region::{parse_selection, slabs};
use crate::target::{Access, resolve};
use crate::{Global, TargetArgs, usage};

/// Arguments of `zarr put`.
#[derive(Args, Debug)]
pub(crate) struct PutArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// The `.npy` file holding the values (C order, the array's data type, any byte order).
    #[arg(short, long, value_name = "FILE")]
    input: PathBuf,
    /// Where to write, numpy-like (`100:200,0:50`); default the whole array. Its shape must
    /// be the file's shape (single-index dimensions may be left out of the file's shape).
    #[arg(short, long, allow_hyphen_values = true)]
    region: Option<String>,
}

/// `<f4` without its byte order: `f4`.
fn without_order(descr: &str) -> &str {
    descr.trim_start_matches(['<', '>', '|', '='])
}

pub(crate) async fn run_put(args: PutArgs, global: Global) -> Result<()> {
    let target = resolve(&args.target, Access::Read)?;
    let array = target.array().await?;
    let metadata = array.metadata();
    let data_type = metadata.data_type;
    let expected = npy_type(&data_type)?;
    if expected.small_int.is_some() {
        usage!("put does not write {} arrays", data_type.name());
    }
    let file =
        File::open(&args.input).with_context(|| format!("opening {}", args.input.display()))?;
    let mut input = BufReader::new(file);
    let header =
        read_header(&mut input).with_context(|| format!("reading {}", args.input.display()))?;
    if header.fortran_order {
        usage!(
            "{} is in Fortran order; save it in C order (numpy.ascontiguousarray)",
            args.input.display()
        );
    }
    if without_order(&header.descr) != without_order(&expected.descr) {
        usage!(
            "{} holds {}, the array {} ({})",
            args.input.display(),
            header.descr,
            data_type.name(),
            expected.descr
        );
    }
    let big_endian = header.descr.starts_with('>');
    let needs_swap = if cfg!(target_endian = "big") {
        header.descr.starts_with('<')
    } else {
        big_endian
    };
    let selection = parse_selection(args.region.as_deref(), &metadata.shape)?;
    if header.shape != selection.out_shape() && header.shape != selection.region.shape() {
        usage!(
            "{} has shape {}, the region {}",
            args.input.display(),
            shape_text(&header.shape),
            shape_text(&selection.region.shape())
        );
    }
    let element = data_type.fixed_size().unwrap_or(1) as u64;
    let slabs = slabs(metadata, &selection.region, element, SLAB_BYTES)?;
    let progress = bar(global, slabs.len() as u64, "put");
    for slab in slabs {
        let n = usize::try_from(slab.num_elements()? * element)?;
        let mut buf = vec![0u8; n];
        input.read_exact(&mut buf).with_context(|| {
            format!(
                "reading {}: the data is shorter than its header says",
                args.input.display()
            )
        })?;
        if needs_swap {
            swap_bytes(&mut buf, crate::format::swap_unit(&data_type));
        }
        array
            .write_bytes(&slab, &buf)
            .await
            .with_context(|| format!("writing {} of {}", slab, target.describe()))?;
        progress.inc(1);
    }
    progress.finish_and_clear();
    note(
        global,
        &format!(
            "wrote {} elements from {} to {} {}",
            header.num_elements(),
            args.input.display(),
            target.describe(),
            selection.region
        ),
    );
    Ok(())
}
