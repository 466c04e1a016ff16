//! Reads of part of an uncompressed ZEP0007 chunk (`zarr-rs.vlen_arrow`), stored on its own
//! or as the inner chunks of a shard: the offsets of the needed runs of elements first, then
//! only the values bytes they point at. A few strings of a chunk of millions cost two
//! requests (three inside a shard: the index comes first) and a few hundred bytes.

use std::ops::Range;

use bytes::Bytes;
use zarr_codecs::{ArrayViewMut, VlenBytes};
use zarr_core::{ChunkGrid, ChunkSelection, Region};
use zarr_sharding::ShardingCodec;
use zarr_store::{ByteRange, ReadableStore, StoreKey};
use zarr_vlen::VlenArrowCodec;

use crate::array::Array;
use crate::error::{Error, Result};
use crate::read::{bytes_of, bytes_of_mut};

/// A read with more runs of consecutive elements than this reads the chunk whole: past it,
/// the per-range bookkeeping costs more than the bytes it saves.
const MAX_RUNS: usize = 4096;

/// How an array's variable-length chunks can be read in part.
#[derive(Debug, Clone)]
pub(crate) enum RangedVlen {
    /// Every chunk is encoded by `zarr-rs.vlen_arrow` alone.
    Chunks(VlenArrowCodec),
    /// Shards whose inner chunks are encoded by `zarr-rs.vlen_arrow` alone.
    Shards(VlenArrowCodec),
}

impl RangedVlen {
    /// Whether (and how) `array`'s chunks can be read in part.
    pub(crate) fn of<S: ?Sized>(array: &Array<S>) -> Option<Self> {
        let only_vlen_arrow = |codecs: &[zarr_core::ExtensionObject]| match codecs {
            [only] if only.name == VlenArrowCodec::NAME => VlenArrowCodec::from_metadata(only).ok(),
            _ => None,
        };
        if let Some(codec) = only_vlen_arrow(&array.metadata.codecs) {
            return Some(Self::Chunks(codec));
        }
        let sharding = array.codecs.first_sharding()?;
        only_vlen_arrow(&sharding.inner_chain().to_metadata()).map(Self::Shards)
    }
}

/// The flat C-order element ranges of `region` in a chunk of `shape`, in order.
fn runs(shape: &[u64], region: &Region) -> Vec<Range<u64>> {
    let mut out: Vec<Range<u64>> = Vec::new();
    let extent = region.shape();
    let zeros = vec![0; extent.len()];
    zarr_codecs::for_each_block_run(
        shape,
        &region.starts(),
        &extent,
        &zeros,
        &extent,
        1,
        |s, _, n| {
            let (s, n) = (s as u64, n as u64);
            match out.last_mut() {
                Some(last) if last.end == s => last.end = s + n,
                _ => out.push(s..s + n),
            }
        },
    );
    out
}

/// One chunk's part in a ranged read: where its runs live in the store.
struct Part {
    /// Where the chunk's bytes start in the stored value (0 for a chunk of its own, the
    /// inner chunk's offset inside a shard).
    base: u64,
    /// The chunk's length in the stored value, when known (inner chunks), to check ranges.
    len: Option<u64>,
    /// Elements in the chunk.
    num_elements: u64,
    /// The runs of elements needed.
    runs: Vec<Range<u64>>,
    /// Where the part's elements go, relative to the output of the whole request.
    within_output: Region,
}

/// Fetch the selected elements of one chunk (or shard) of a ranged-readable array: `None` if
/// it is not stored, or if the read is better done whole (too many runs).
pub(crate) async fn fetch(
    array: &Array<impl ReadableStore + ?Sized>,
    store: &dyn ReadableStore,
    ranged: &RangedVlen,
    key: &StoreKey,
    selection: &ChunkSelection,
) -> Result<Option<Fetched>> {
    let within = &selection.within_chunk;
    match ranged {
        RangedVlen::Chunks(codec) => {
            let runs = runs(&selection.chunk_shape, within);
            if runs.len() > MAX_RUNS {
                return Ok(None);
            }
            let part = Part {
                base: 0,
                len: None,
                num_elements: Region::full(&selection.chunk_shape).num_elements()?,
                runs,
                within_output: Region::full(&within.shape()),
            };
            let parts = read_parts(array, store, codec, key, vec![part]).await?;
            Ok(Some(match parts {
                None => Fetched::Missing,
                Some(mut parts) => match parts.pop() {
                    Some((_, elements)) => Fetched::Elements(elements),
                    None => Fetched::Elements(VlenBytes::from_elements(std::iter::empty())),
                },
            }))
        }
        RangedVlen::Shards(codec) => {
            let sharding = array
                .sharding(&selection.chunk_shape)?
                .ok_or_else(|| Error::unsupported(array.path.as_str(), "not sharded"))?;
            fetch_in_shard(array, store, codec, &sharding, key, within).await
        }
    }
}

/// What a ranged fetch found.
pub(crate) enum Fetched {
    /// The chunk or shard is not stored.
    Missing,
    /// The selected elements, in the C order of the selection.
    Elements(VlenBytes),
}

async fn fetch_in_shard(
    array: &Array<impl ReadableStore + ?Sized>,
    store: &dyn ReadableStore,
    codec: &VlenArrowCodec,
    sharding: &ShardingCodec,
    key: &StoreKey,
    within: &Region,
) -> Result<Option<Fetched>> {
    let Some(index) = sharding
        .fetch_index(store, key)
        .await
        .map_err(|e| array.shard_error(key, e))?
    else {
        return Ok(Some(Fetched::Missing));
    };
    let inner_shape = sharding.inner_chunk_shape().to_vec();
    let shard_shape = sharding.shard_representation().shape().to_vec();
    let grid = ChunkGrid::regular(inner_shape.clone())?;
    let num_elements = Region::full(&inner_shape).num_elements()?;
    let fill = array.metadata.fill_value.as_bytes();
    let mut parts = Vec::new();
    let mut empty: Vec<(Region, VlenBytes)> = Vec::new();
    let mut total_runs = 0;
    for inner in grid.chunks_in_region(&shard_shape, within)? {
        let range = index
            .linear_index(&inner.chunk)
            .and_then(|linear| index.chunk_range(linear));
        match range {
            None => {
                let n = inner.within_chunk.num_elements()? as usize;
                empty.push((
                    inner.within_output,
                    VlenBytes::from_elements(std::iter::repeat_n(fill, n)),
                ));
            }
            Some(range) => {
                let runs = runs(&inner_shape, &inner.within_chunk);
                total_runs += runs.len();
                parts.push(Part {
                    base: range.start,
                    len: Some(range.end - range.start),
                    num_elements,
                    runs,
                    within_output: inner.within_output,
                });
            }
        }
    }
    if total_runs > MAX_RUNS {
        return Ok(None);
    }
    let mut pieces = match read_parts(array, store, codec, key, parts).await? {
        Some(pieces) => pieces,
        // The shard went away after its index was read.
        None => {
            return Err(array.shard_error(
                key,
                zarr_sharding::Error::ShardChanged { shard: key.into() },
            ));
        }
    };
    pieces.extend(empty);
    Ok(Some(Fetched::Elements(assemble(&within.shape(), &pieces)?)))
}

/// Read `parts` of the value at `key`: all offsets in one request, then all values in
/// another. `None` if the value is not stored.
async fn read_parts(
    array: &Array<impl ReadableStore + ?Sized>,
    store: &dyn ReadableStore,
    codec: &VlenArrowCodec,
    key: &StoreKey,
    parts: Vec<Part>,
) -> Result<Option<Vec<(Region, VlenBytes)>>> {
    if parts.is_empty() {
        return Ok(Some(Vec::new()));
    }
    let corrupt = |reason: String| {
        array.chunk_error(
            key,
            zarr_codecs::Error::Corrupt {
                codec: VlenArrowCodec::NAME.into(),
                reason,
            },
        )
    };
    // Byte range `r` of a part, checked against the part's length and moved to the value.
    let place = |part: &Part, r: Range<u64>| -> Result<ByteRange> {
        if let Some(len) = part.len
            && r.end > len
        {
            return Err(corrupt(format!(
                "bytes {}..{} lie past the end of the {len}-byte inner chunk",
                r.start, r.end
            )));
        }
        Ok(ByteRange::new(part.base + r.start, part.base + r.end))
    };
    let truncated = |e: zarr_store::Error| match e {
        zarr_store::Error::RangeOutOfBounds { .. } => {
            corrupt(format!("the chunk is shorter than its offsets say ({e})"))
        }
        other => other.into(),
    };
    let mut requests = Vec::new();
    for part in &parts {
        for run in &part.runs {
            let r = codec
                .offsets_byte_range(part.num_elements, run.clone())
                .map_err(|e| array.chunk_error(key, e))?;
            requests.push((key.clone(), place(part, r)?));
        }
    }
    let offsets = store
        .get_partial_values(&requests)
        .await
        .map_err(truncated)?;
    if offsets.iter().any(Option::is_none) {
        return Ok(None);
    }
    let offsets: Vec<Bytes> = offsets.into_iter().flatten().collect();
    let mut requests = Vec::with_capacity(offsets.len());
    let mut i = 0;
    for part in &parts {
        for _ in &part.runs {
            let r = codec
                .values_byte_range(part.num_elements, &offsets[i])
                .map_err(|e| array.chunk_error(key, e))?;
            requests.push((key.clone(), place(part, r)?));
            i += 1;
        }
    }
    let values = store
        .get_partial_values(&requests)
        .await
        .map_err(truncated)?;
    let mut values = values.into_iter();
    let mut offsets = offsets.into_iter();
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        let mut decoded = Vec::with_capacity(part.runs.len());
        for run in part.runs {
            let (Some(offs), Some(Some(vals))) = (offsets.next(), values.next()) else {
                return Err(corrupt("the chunk changed between two reads".into()));
            };
            decoded.push(
                codec
                    .decode_range(
                        &array.metadata.data_type,
                        part.num_elements,
                        run,
                        &offs,
                        vals,
                    )
                    .map_err(|e| array.chunk_error(key, e))?,
            );
        }
        let elements = if decoded.len() == 1 {
            decoded
                .pop()
                .unwrap_or_else(|| VlenBytes::from_elements(std::iter::empty()))
        } else {
            VlenBytes::from_elements(decoded.iter().flat_map(VlenBytes::iter))
        };
        out.push((part.within_output, elements));
    }
    Ok(Some(out))
}

/// Put `pieces` (each the elements of a region of the output, in that region's C order)
/// together into the C-order elements of an output of `shape`.
pub(crate) fn assemble(shape: &[u64], pieces: &[(Region, VlenBytes)]) -> Result<VlenBytes> {
    let n = usize::try_from(Region::full(shape).num_elements()?).map_err(|_| {
        zarr_core::Error::Overflow {
            what: "the number of elements in the region".into(),
        }
    })?;
    if let [(region, only)] = pieces
        && region.shape() == shape
    {
        return Ok(only.clone());
    }
    // For every output element, a global element number: piece `p` owns the numbers from
    // `bases[p]`.
    let mut bases = Vec::with_capacity(pieces.len());
    let mut total = 0u64;
    for (_, piece) in pieces {
        bases.push(total);
        total += piece.len() as u64;
    }
    let codecs_error = |e: zarr_codecs::Error| Error::Codecs {
        array: String::new(),
        source: Box::new(e),
    };
    let mut sources = vec![0u64; n];
    {
        let view = ArrayViewMut::new(bytes_of_mut(&mut sources), shape, 8).map_err(codecs_error)?;
        for ((region, piece), base) in pieces.iter().zip(&bases) {
            let ids: Vec<u64> = (*base..*base + piece.len() as u64).collect();
            let piece_shape = region.shape();
            // SAFETY: one view at a time, inside the buffer.
            let mut target = unsafe { view.subview(region.clone()) }.map_err(codecs_error)?;
            target
                .copy_from(bytes_of(&ids), &piece_shape, &Region::full(&piece_shape))
                .map_err(codecs_error)?;
        }
    }
    let locate = |id: u64| -> &[u8] {
        let p = bases.partition_point(|&b| b <= id) - 1;
        pieces[p].1.get((id - bases[p]) as usize).unwrap_or(&[])
    };
    Ok(VlenBytes::from_elements(
        sources.iter().map(|&id| locate(id)),
    ))
}

#[cfg(test)]
// Tests build regions from literal ranges, including one-range ones.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    #[test]
    fn runs_merge_whole_rows() {
        let region = Region::try_new(vec![1..3, 0..4]).unwrap();
        assert_eq!(runs(&[3, 4], &region), [4..12]);
        let region = Region::try_new(vec![0..3, 1..2]).unwrap();
        assert_eq!(runs(&[3, 4], &region), [1..2, 5..6, 9..10]);
        let region = Region::try_new(vec![5..9]).unwrap();
        assert_eq!(runs(&[10], &region), [5..9]);
    }
}
