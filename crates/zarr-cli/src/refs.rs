//! `zarr refs`: convert a reference set between kerchunk's JSON and Parquet layouts.

use std::path::Path;

use anyhow::{Context, Result};
use clap::Args;
use zarr::store::{FilesystemStore, ParquetReferences, ReferenceStore, References, StorePrefix};

use crate::{Global, outln, usage};

/// Arguments of `zarr refs`.
#[derive(Args, Debug)]
pub(crate) struct RefsArgs {
    /// The reference set to read: a JSON file, or a Parquet set's directory.
    input: String,
    /// The reference set to write: a `.json` file, or else a Parquet set's directory.
    output: String,
    /// References per record file of a Parquet output (kerchunk's default is 100000).
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    record_size: u64,
    /// Replace OUTPUT if it is a reference set already.
    #[arg(long)]
    overwrite: bool,
}

pub(crate) async fn run(args: RefsArgs, global: Global) -> Result<()> {
    let input = Path::new(&args.input);
    let output = Path::new(&args.output);
    if args.record_size == 0 {
        usage!("--record-size must be at least 1");
    }
    if !input.exists() {
        anyhow::bail!("{}: no such file or directory", input.display());
    }
    let to_json = output
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
    if output.exists() {
        if !args.overwrite {
            usage!(
                "{} exists (give --overwrite to replace a reference set)",
                output.display()
            );
        }
        // Only a reference set is replaced: never an arbitrary directory or file.
        let replaceable = if output.is_dir() {
            ReferenceStore::open(output).is_ok_and(|s| s.parquet_references().is_some())
        } else {
            to_json
                && std::fs::read(output)
                    .ok()
                    .is_some_and(|json| References::from_json(&json).is_ok())
        };
        if !replaceable {
            usage!(
                "{} is not a reference set; refusing to replace it",
                output.display()
            );
        }
        if std::fs::canonicalize(input)? == std::fs::canonicalize(output)? {
            usage!("{} is both the input and the output", input.display());
        }
    }

    let store = ReferenceStore::open(input)
        .with_context(|| format!("opening the reference set {}", input.display()))?;
    let references = match store.parquet_references() {
        Some(parquet) => parquet
            .to_references()
            .await
            .with_context(|| format!("reading {}", input.display()))?,
        None => References::clone(store.references().context("a set in memory")?),
    };

    if output.exists() {
        if output.is_dir() {
            std::fs::remove_dir_all(output)
        } else {
            std::fs::remove_file(output)
        }
        .with_context(|| format!("removing {}", output.display()))?;
    }
    if to_json {
        let json = serde_json::to_vec(&references.to_json())?;
        std::fs::write(output, json).with_context(|| format!("writing {}", output.display()))?;
    } else {
        let files = FilesystemStore::with_options(output, crate::target::file_options())
            .with_context(|| format!("creating {}", output.display()))?;
        let written =
            ParquetReferences::write(&references, &files, &StorePrefix::root(), args.record_size)
                .await;
        if let Err(e) = written {
            // Leave no half-written set behind.
            let _ = std::fs::remove_dir_all(output);
            return Err(e).with_context(|| format!("writing {}", output.display()));
        }
    }
    if !global.quiet {
        outln!(
            "wrote {} reference{} to {}",
            references.len(),
            if references.len() == 1 { "" } else { "s" },
            output.display()
        );
    }
    Ok(())
}
