//! Reads of part of an uncompressed ZEP0007 chunk (`zarr-rs.vlen_arrow`), stored on its own
//! or as the inner chunks of a shard: the offsets of the needed runs of elements first, then
//! only the values bytes they point at. A few strings of a chunk of millions cost two
//! requests (three inside a shard: the index comes first) and a few hundred bytes.

use std::ops::Range;

use bytes::Bytes;
use zarr_codecs::VlenBytes;
use zarr_core::{ChunkGrid, ChunkSelection, Region};
use zarr_sharding::ShardingCodec;
use zarr_store::{ByteRange, ReadableStore, StoreKey};
use zarr_vlen::VlenArrowCodec;

use crate::array::Array;
use crate::error::{Error, Result};

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
        let sharding = array.codecs.sharding_codec()?;
        only_vlen_arrow(&sharding.inner_chain().to_metadata()).map(Self::Shards)
    }
}

/// The flat C-order element ranges of `region` in a chunk of `shape`, in order.
pub(crate) fn runs(shape: &[u64], region: &Region) -> Vec<Range<u64>> {
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
    if offsets.len() != requests.len() {
        return Err(Error::unsupported(
            array.path.as_str(),
            format!(
                "the store answered {} of {} byte range requests of {key}",
                offsets.len(),
                requests.len()
            ),
        ));
    }
    let offsets: Vec<Bytes> = offsets.into_iter().flatten().collect();
    let mut requests = Vec::with_capacity(offsets.len());
    let mut answers = offsets.iter();
    for part in &parts {
        for _ in &part.runs {
            let offs = answers
                .next()
                .expect("one answer per request, checked above");
            let r = codec
                .values_byte_range(part.num_elements, offs)
                .map_err(|e| array.chunk_error(key, e))?;
            requests.push((key.clone(), place(part, r)?));
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
        && only.len() == n
    {
        return Ok(only.clone());
    }
    // Each piece's elements (in its C order) land in the output in runs of consecutive
    // elements (one per row of the piece, merged where rows are whole). In output order,
    // every run is one copy of contiguous bytes and a shift of its offsets.
    let invalid = |reason: String| Error::Codecs {
        array: String::new(),
        source: Box::new(zarr_codecs::Error::InvalidOffsets { reason }),
    };
    // (first output element, piece, first element in the piece, elements)
    let mut placed: Vec<(u64, usize, usize, usize)> = Vec::new();
    for (p, (region, piece)) in pieces.iter().enumerate() {
        let mut next = 0usize;
        for run in runs(shape, region) {
            let len = usize::try_from(run.end - run.start).unwrap_or(usize::MAX);
            if len > piece.len() - next {
                return Err(invalid(format!(
                    "a piece of {} elements placed in a region of more",
                    piece.len()
                )));
            }
            placed.push((run.start, p, next, len));
            next += len;
        }
        if next != piece.len() {
            return Err(invalid(format!(
                "a piece of {} elements placed in a region of {next}",
                piece.len()
            )));
        }
    }
    placed.sort_unstable_by_key(|&(start, ..)| start);
    let bytes: usize = pieces.iter().map(|(_, piece)| piece.values().len()).sum();
    let mut offsets: Vec<u64> = Vec::with_capacity(n + 1);
    offsets.push(0);
    let mut values: Vec<u8> = Vec::with_capacity(bytes);
    for (start, p, first, len) in placed {
        if start != (offsets.len() - 1) as u64 {
            return Err(invalid(format!(
                "the pieces do not tile the region: element {start} follows {}",
                offsets.len() - 1
            )));
        }
        let piece = &pieces[p].1;
        let source = &piece.offsets()[first..=first + len];
        let (lo, hi) = (source[0], source[len]);
        let shift = values.len() as u64;
        offsets.extend(source[1..].iter().map(|&o| o - lo + shift));
        // Offsets of a valid `VlenBytes` lie inside its values.
        values.extend_from_slice(&piece.values()[lo as usize..hi as usize]);
    }
    if offsets.len() != n + 1 {
        return Err(invalid(format!(
            "the pieces hold {} of the region's {n} elements",
            offsets.len() - 1
        )));
    }
    VlenBytes::try_new(offsets, values.into()).map_err(|e| Error::Codecs {
        array: String::new(),
        source: Box::new(e),
    })
}

/// The elements of `vlen` in `runs` (ranges of element numbers), in that order: one copy of
/// contiguous bytes per run.
pub(crate) fn gather(vlen: &VlenBytes, runs: &[Range<u64>]) -> Result<VlenBytes> {
    let offsets = vlen.offsets();
    let n: u64 = runs.iter().map(|r| r.end - r.start).sum();
    let mut out_offsets: Vec<u64> = Vec::with_capacity(usize::try_from(n).unwrap_or(0) + 1);
    out_offsets.push(0);
    let bytes: u64 = runs
        .iter()
        .filter_map(|r| Some(offsets.get(r.end as usize)? - offsets.get(r.start as usize)?))
        .sum();
    let mut values: Vec<u8> = Vec::with_capacity(usize::try_from(bytes).unwrap_or(0));
    for run in runs {
        let (Ok(start), Ok(end)) = (usize::try_from(run.start), usize::try_from(run.end)) else {
            return Err(out_of_range(run, vlen.len()));
        };
        let Some(source) = offsets.get(start..=end) else {
            return Err(out_of_range(run, vlen.len()));
        };
        let (lo, hi) = (source[0], source[source.len() - 1]);
        let shift = values.len() as u64;
        out_offsets.extend(source[1..].iter().map(|&o| o - lo + shift));
        // Offsets of a valid `VlenBytes` lie inside its values.
        values.extend_from_slice(&vlen.values()[lo as usize..hi as usize]);
    }
    VlenBytes::try_new(out_offsets, values.into()).map_err(|e| Error::Codecs {
        array: String::new(),
        source: Box::new(e),
    })
}

fn out_of_range(run: &Range<u64>, len: usize) -> Error {
    Error::Codecs {
        array: String::new(),
        source: Box::new(zarr_codecs::Error::InvalidOffsets {
            reason: format!("elements {run:?} of {len}"),
        }),
    }
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

    /// Element (i, j) of a test output: variable lengths, some empty.
    fn element(i: u64, j: u64) -> Vec<u8> {
        format!("{i}{j}").repeat(j as usize).into_bytes()
    }

    fn piece(region: &Region) -> (Region, VlenBytes) {
        let r = region.ranges();
        let elements: Vec<Vec<u8>> = r[0]
            .clone()
            .flat_map(|i| r[1].clone().map(move |j| element(i, j)))
            .collect();
        (
            region.clone(),
            VlenBytes::from_elements(elements.iter().map(Vec::as_slice)),
        )
    }

    #[test]
    fn assemble_places_pieces_in_c_order_whatever_their_order() {
        let pieces: Vec<(Region, VlenBytes)> = [
            vec![2..3, 3..5],
            vec![0..2, 0..3],
            vec![2..3, 0..3],
            vec![0..2, 3..5],
        ]
        .into_iter()
        .map(|r| piece(&Region::try_new(r).unwrap()))
        .collect();
        let got = assemble(&[3, 5], &pieces).unwrap();
        let expected: Vec<Vec<u8>> = (0..3)
            .flat_map(|i| (0..5).map(move |j| element(i, j)))
            .collect();
        assert_eq!(
            got,
            VlenBytes::from_elements(expected.iter().map(Vec::as_slice))
        );
        // 1-D: whole pieces, one copy each.
        let pieces: Vec<(Region, VlenBytes)> = [vec![0..1, 2..5], vec![0..1, 0..2]]
            .into_iter()
            .map(|r| piece(&Region::try_new(r).unwrap()))
            .collect();
        let got = assemble(&[1, 5], &pieces).unwrap();
        assert_eq!(got.len(), 5);
        assert_eq!(got.get(4), Some(&element(0, 4)[..]));
    }

    #[test]
    fn assemble_refuses_pieces_that_do_not_tile_the_region() {
        let whole = |r: Vec<Range<u64>>| piece(&Region::try_new(r).unwrap());
        // A missing piece.
        assert!(assemble(&[3, 5], &[whole(vec![0..2, 0..5])]).is_err());
        // Overlapping pieces.
        assert!(assemble(&[1, 5], &[whole(vec![0..1, 0..3]), whole(vec![0..1, 2..5])]).is_err());
        // A piece with fewer elements than its region.
        let (region, _) = whole(vec![0..1, 0..5]);
        let short = VlenBytes::from_elements([&b"a"[..]]);
        assert!(assemble(&[1, 5], &[(region, short)]).is_err());
    }
}
