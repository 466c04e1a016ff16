//! `zarr verify`: decode every stored chunk and report the ones that do not decode.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Args;
use futures::StreamExt as _;
use serde_json::{Map, Value};
use zarr::array::{Array, Node};
use zarr::metadata::{ExtensionObject, NodeMetadata};
use zarr::store::Store;

use crate::info::grid_indices;
use crate::outln;
use crate::progress::bar;
use crate::target::{Access, resolve};
use crate::walk;
use crate::{Global, TargetArgs, error_line};

/// Arguments of `zarr verify`.
#[derive(Args, Debug)]
pub(crate) struct VerifyArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// How many chunks are fetched and decoded at once.
    #[arg(long, default_value_t = 32, value_name = "N")]
    jobs: usize,
}

/// What checking one chunk found.
enum Outcome {
    /// Not stored: reads as the fill value.
    Missing,
    /// Stored and decodes.
    Good,
    /// Stored but unreadable or undecodable.
    Bad { key: String, reason: String },
}

async fn check(array: Array<dyn Store>, chunk: Vec<u64>) -> Outcome {
    let key = match array.chunk_key(&chunk) {
        Ok(key) => key.as_str().to_owned(),
        Err(err) => {
            return Outcome::Bad {
                key: format!("{chunk:?}"),
                reason: error_line(&err),
            };
        }
    };
    let bytes = match array.read_encoded_chunk(&chunk).await {
        Ok(None) => return Outcome::Missing,
        Ok(Some(bytes)) => bytes,
        Err(err) => {
            return Outcome::Bad {
                key,
                reason: format!("cannot be read: {}", error_line(&err)),
            };
        }
    };
    let metadata = array.metadata();
    let shape = metadata
        .chunk_grid
        .chunk_shape(&metadata.shape, &chunk)
        .unwrap_or_default();
    let chain = array.codec_chain();
    let result = if chain.decoded_representation().shape() == shape.as_slice() {
        // Decode the bytes already fetched.
        chain.decode(bytes).map(drop).map_err(|e| error_line(&e))
    } else {
        // A chunk of another shape (rectilinear grids): the array builds its chain.
        match array.read_chunk(&chunk).await {
            Ok(_) => Ok(()),
            Err(zarr::array::Error::Chunk { source, .. }) => Err(error_line(&*source)),
            Err(err) => Err(error_line(&err)),
        }
    };
    match result {
        Ok(()) => Outcome::Good,
        Err(reason) => Outcome::Bad { key, reason },
    }
}

/// Whether a codec list checks the stored bytes of every chunk when it decodes: a checksum
/// codec (`crc32c`, numcodecs' `crc32`, `adler32`, `fletcher32`, `jenkins_lookup3`), zstd
/// with its frame checksum on, or gzip (whose trailer holds a CRC-32), at the top level or
/// among the inner chunks' codecs of a shard or of an N5 block (`n5_default`). The shard
/// index's own checksum does not
/// count: it covers the index, not the chunks.
fn has_checksum(codecs: &[ExtensionObject]) -> bool {
    codecs
        .iter()
        .any(|c| codec_checks(&c.name, c.configuration.as_ref()))
}

fn codec_checks(name: &str, configuration: Option<&Map<String, Value>>) -> bool {
    let name = name.strip_prefix("numcodecs.").unwrap_or(name);
    match name {
        "crc32c" | "crc32" | "adler32" | "fletcher32" | "jenkins_lookup3" | "gzip" => true,
        "zstd" => configuration
            .and_then(|c| c.get("checksum"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
        // Codecs whose inner chain holds the chunk's (an N5 block's) stored bytes.
        "sharding_indexed" | "n5_default" => {
            configuration
                .and_then(|c| c.get("codecs"))
                .and_then(Value::as_array)
                .is_some_and(|inner| {
                    inner.iter().any(|codec| match codec {
                        Value::String(name) => codec_checks(name, None),
                        Value::Object(codec) => codec
                            .get("name")
                            .and_then(Value::as_str)
                            .is_some_and(|name| {
                                codec_checks(
                                    name,
                                    codec.get("configuration").and_then(Value::as_object),
                                )
                            }),
                        _ => false,
                    })
                })
        }
        _ => false,
    }
}

/// The note for arrays whose codecs hold no checksum (`unchecked` of `total`; `target` names
/// the array when it was the only one), if any.
fn checksum_note(unchecked: &[String], total: usize, target: &str) -> Option<String> {
    let advice = "arrays with a crc32c codec (or zstd with its checksum on, or gzip) also get \
                  their stored bytes verified";
    match unchecked {
        [] => None,
        [_] if total == 1 => Some(format!(
            "note: {target} has no checksum, so only decoding was checked; {advice}"
        )),
        _ => Some(format!(
            "note: {} of {total} arrays {} no checksum ({}), so for {} only decoding was \
             checked; {advice}",
            unchecked.len(),
            if unchecked.len() == 1 { "has" } else { "have" },
            crate::walk::list_text(unchecked),
            if unchecked.len() == 1 { "it" } else { "them" },
        )),
    }
}

/// The chunks of `array` that are stored ([`Array::stored_chunks`]), or `None` when the
/// store cannot list or chunks are not keys of their own (the sharding storage transformer,
/// whose listing would read every shard's index): then every chunk of the grid is asked for.
async fn stored_chunks(array: &Array<dyn Store>) -> Option<Vec<Vec<u64>>> {
    if array.uses_storage_transformer() {
        return None;
    }
    match array.stored_chunks().await {
        Ok(chunks) => Some(chunks),
        Err(err) => {
            tracing::info!(error = %err, "the store cannot list; asking chunk by chunk");
            None
        }
    }
}

pub(crate) async fn run(args: VerifyArgs, global: Global) -> Result<()> {
    let target = resolve(&args.target, Access::Read)?;
    let mut problems = 0u64;
    let arrays: Vec<Array<dyn Store>> = match target.node().await? {
        Node::Array(array) => vec![array],
        Node::Group(group) => {
            let tree = walk::tree(&group)
                .await
                .with_context(|| format!("walking {}", target.describe()))?;
            if let Some(err) = &tree.record_error {
                problems += 1;
                outln!("unusable consolidated metadata in {}: {err}", group.path());
            }
            let mut arrays = Vec::new();
            for found in tree.nodes {
                match found.node {
                    Ok(NodeMetadata::Array(_)) => {
                        match Array::open(Arc::clone(&target.store), found.path.as_str()).await {
                            Ok(array) => arrays.push(array),
                            Err(err) => {
                                problems += 1;
                                outln!("unopenable {}: {}", found.path, error_line(&err));
                            }
                        }
                    }
                    Ok(NodeMetadata::Group(_)) => {}
                    Err(err) => {
                        problems += 1;
                        outln!("unopenable {}: {err}", found.path);
                    }
                }
            }
            arrays
        }
    };
    // The chunks to check: the stored ones, from one listing per array; where the store
    // cannot list, every chunk of the grid, generated as the checks go (a grid of a billion
    // chunks is not held in memory).
    let mut work = Vec::with_capacity(arrays.len());
    let mut total = 0u64;
    let (mut good, mut missing) = (0u64, 0u64);
    for array in &arrays {
        let grid = array.grid_shape()?;
        let possible: u64 = grid.iter().product();
        let chunks: Box<dyn Iterator<Item = Vec<u64>> + Send> = match stored_chunks(array).await {
            Some(stored) => {
                missing += possible - stored.len() as u64;
                total += stored.len() as u64;
                Box::new(stored.into_iter())
            }
            None => {
                total += possible;
                Box::new(grid_indices(&grid))
            }
        };
        work.push((array, chunks));
    }
    let progress = bar(global, total, "verify");
    for (array, chunks) in work {
        let mut outcomes = futures::stream::iter(chunks)
            .map(|chunk| tokio::spawn(check(array.clone(), chunk)))
            .buffer_unordered(args.jobs.max(1));
        while let Some(outcome) = outcomes.next().await {
            match outcome? {
                Outcome::Missing => missing += 1,
                Outcome::Good => good += 1,
                Outcome::Bad { key, reason } => {
                    problems += 1;
                    progress.suspend(|| {
                        use std::io::Write as _;
                        writeln!(std::io::stdout(), "corrupt {key}: {reason}")
                    })?;
                }
            }
            progress.inc(1);
        }
    }
    progress.finish_and_clear();
    outln!(
        "checked {} array{}: {good} chunks decode, {missing} not stored (fill value), {problems} problem{}",
        arrays.len(),
        if arrays.len() == 1 { "" } else { "s" },
        if problems == 1 { "" } else { "s" }
    );
    let unchecked: Vec<String> = arrays
        .iter()
        .filter(|a| !has_checksum(&a.metadata().codecs))
        .map(|a| a.path().as_str().to_owned())
        .collect();
    if let Some(note) = checksum_note(&unchecked, arrays.len(), &target.describe())
        && !global.quiet
    {
        outln!("{note}");
    }
    if problems > 0 {
        bail!(
            "{}: {problems} problem{} found (corrupt or unreadable chunks, or nodes that do not open)",
            target.describe(),
            if problems == 1 { "" } else { "s" }
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codecs(json: &str) -> Vec<ExtensionObject> {
        let list: Vec<Value> = serde_json::from_str(json).unwrap();
        list.iter()
            .map(|c| ExtensionObject::from_json(c, "codecs").unwrap())
            .collect()
    }

    #[test]
    fn checksums_are_found_where_they_cover_the_chunks() {
        for (json, checked) in [
            (r#"[{"name": "bytes"}]"#, false),
            (r#"[{"name": "bytes"}, {"name": "crc32c"}]"#, true),
            (
                r#"[{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 1, "checksum": false}}]"#,
                false,
            ),
            (
                r#"[{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 1, "checksum": true}}]"#,
                true,
            ),
            (
                r#"[{"name": "bytes"}, {"name": "gzip", "configuration": {"level": 1}}]"#,
                true,
            ),
            (
                r#"[{"name": "bytes"}, {"name": "numcodecs.fletcher32"}]"#,
                true,
            ),
            (
                r#"[{"name": "bytes"}, {"name": "blosc", "configuration": {}}]"#,
                false,
            ),
            // A shard: the inner codecs count, the index's do not.
            (
                r#"[{"name": "sharding_indexed", "configuration": {"chunk_shape": [2],
                    "codecs": [{"name": "bytes"}, "crc32c"],
                    "index_codecs": [{"name": "bytes"}]}}]"#,
                true,
            ),
            (
                r#"[{"name": "sharding_indexed", "configuration": {"chunk_shape": [2],
                    "codecs": [{"name": "bytes"}],
                    "index_codecs": [{"name": "bytes"}, {"name": "crc32c"}]}}]"#,
                false,
            ),
            // An N5 block: its compressor counts.
            (
                r#"[{"name": "n5_default", "configuration": {"codecs": [
                    {"name": "transpose", "configuration": {"order": [0]}},
                    {"name": "bytes", "configuration": {"endian": "big"}},
                    {"name": "gzip", "configuration": {"level": 1}}]}}]"#,
                true,
            ),
        ] {
            assert_eq!(has_checksum(&codecs(json)), checked, "{json}");
        }
    }
}
