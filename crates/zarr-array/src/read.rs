//! The read engine: fetch chunks concurrently, decode them in parallel straight into the one
//! output buffer.

use bytes::Bytes;
use futures::{StreamExt, stream};
use rayon::prelude::*;
use tracing::Instrument;
use zarr_codecs::{ArrayBytes, ArrayViewMut, VlenBytes};
use zarr_core::{ChunkSelection, Region};
use zarr_sharding::ShardFetch;
use zarr_store::{ReadableStore, StoreKey};

use crate::array::Array;
use crate::error::{Error, Result};

/// At most this many fetched chunks are decoded in one parallel batch.
const MAX_BATCH: usize = 256;

/// What was fetched for one chunk.
enum Payload {
    /// Not stored: reads as the fill value.
    Missing,
    /// The whole stored chunk (or shard).
    Whole(Bytes),
    /// The index and the needed inner chunks of a shard read in part.
    Shard(ShardFetch),
}

/// A chunk the region needs, with what was fetched for it.
struct Fetched {
    selection: ChunkSelection,
    key: StoreKey,
    payload: Payload,
}

/// Fetch the chunks of `selections` with at most `io` requests in flight, handing each ready
/// batch to `decode`. With `partial_shards`, a shard the region needs only part of is read
/// as its index plus the inner chunks needed (two requests), not whole.
async fn fetch_batches<S, I>(
    array: &Array<S>,
    selections: I,
    partial_shards: bool,
    mut decode: impl FnMut(Vec<Fetched>) -> Result<()>,
) -> Result<()>
where
    S: ReadableStore + ?Sized,
    I: Iterator<Item = ChunkSelection>,
{
    let store = array.read_store();
    let fetches = stream::iter(selections)
        .map(|selection| async move {
            let key = array.chunk_key_unchecked(&selection.chunk)?;
            let whole = selection.within_chunk.shape() == selection.chunk_shape;
            let payload = match array.sharding(&selection.chunk_shape)? {
                // Part of a shard: its index, then only the inner chunks needed.
                Some(codec) if partial_shards && !whole => {
                    match codec
                        .fetch(store, &key, &selection.within_chunk)
                        .await
                        .map_err(|e| array.shard_error(&key, e))?
                    {
                        Some(fetch) => Payload::Shard(fetch),
                        None => Payload::Missing,
                    }
                }
                _ => match store.get(&key).await? {
                    Some(bytes) => Payload::Whole(bytes),
                    None => Payload::Missing,
                },
            };
            Ok::<_, Error>(Fetched {
                selection,
                key,
                payload,
            })
        })
        .buffer_unordered(array.options.io_concurrency())
        .ready_chunks(MAX_BATCH);
    futures::pin_mut!(fetches);
    while let Some(batch) = fetches.next().await {
        let batch = batch.into_iter().collect::<Result<Vec<_>>>()?;
        decode(batch)?;
    }
    Ok(())
}

/// Read `region` of a fixed-size array into `out`.
pub(crate) async fn read_fixed<S: ReadableStore + ?Sized>(
    array: &Array<S>,
    region: &Region,
    out: &mut [u8],
) -> Result<()> {
    let metadata = &array.metadata;
    region.check_within(&metadata.shape)?;
    let elem = array.element_size()?;
    let expected = region.num_elements()?;
    if out.len() as u64 != expected.saturating_mul(elem as u64) {
        return Err(Error::BufferSize {
            expected,
            found: (out.len() / elem.max(1)) as u64,
        });
    }
    if expected == 0 {
        return Ok(());
    }
    let selections = metadata
        .chunk_grid
        .chunks_in_region(&metadata.shape, region)?;
    let chunks = selections.num_chunks()?;
    let span = tracing::debug_span!(
        "zarr.read",
        array = %array.path,
        region = %region,
        chunks,
        bytes = out.len()
    );
    let view = ArrayViewMut::new(out, &region.shape(), elem).map_err(|e| Error::Codecs {
        array: array.path.as_str().to_owned(),
        source: Box::new(e),
    })?;
    let fill = metadata.fill_value.as_bytes();
    let decode_one = |fetched: Fetched| -> Result<()> {
        // SAFETY: the selections of one region are disjoint (each output element lies in
        // exactly one chunk), so the views decoded at the same time never overlap, and the
        // parent view is not written while they live.
        let mut target = unsafe { view.subview(fetched.selection.within_output.clone()) }
            .map_err(|e| array.chunk_error(&fetched.key, e))?;
        let selection = &fetched.selection;
        match fetched.payload {
            Payload::Missing => target
                .fill(fill)
                .map_err(|e| array.chunk_error(&fetched.key, e)),
            Payload::Shard(fetch) => {
                let codec = array
                    .sharding(&selection.chunk_shape)?
                    .ok_or_else(|| Error::unsupported(array.path.as_str(), "not sharded"))?;
                codec
                    .decode_fetched_into_view(&fetch, &selection.within_chunk, &mut target)
                    .map_err(|e| array.shard_error(&fetched.key, e))
            }
            Payload::Whole(bytes) => match array.sharding(&selection.chunk_shape)? {
                Some(codec) => codec
                    .decode_shard_into_view(bytes, &selection.within_chunk, &mut target)
                    .map_err(|e| array.shard_error(&fetched.key, e)),
                None => array
                    .chain(&selection.chunk_shape)?
                    .decode_into_view(bytes, &selection.within_chunk, &mut target)
                    .map_err(|e| array.chunk_error(&fetched.key, e)),
            },
        }
    };
    fetch_batches(array, selections, true, |batch| {
        if batch.len() == 1 {
            batch.into_iter().try_for_each(&decode_one)
        } else {
            batch.into_par_iter().try_for_each(decode_one)
        }
    })
    .instrument(span)
    .await
}

/// Read `region` of a variable-length array.
pub(crate) async fn read_variable<S: ReadableStore + ?Sized>(
    array: &Array<S>,
    region: &Region,
) -> Result<ArrayBytes> {
    let metadata = &array.metadata;
    let n = usize::try_from(region.num_elements()?).map_err(|_| zarr_core::Error::Overflow {
        what: "the number of elements in the region".into(),
    })?;
    if n == 0 {
        return Ok(ArrayBytes::Variable(VlenBytes::from_elements(
            std::iter::empty(),
        )));
    }
    let selections = metadata
        .chunk_grid
        .chunks_in_region(&metadata.shape, region)?;
    let span = tracing::debug_span!("zarr.read", array = %array.path, region = %region);
    // Each chunk's selected elements, in the C order of its `within_chunk`.
    let mut parts: Vec<(ChunkSelection, VlenBytes)> = Vec::new();
    fetch_batches(array, selections, false, |batch| {
        let decoded: Vec<(ChunkSelection, VlenBytes)> = batch
            .into_par_iter()
            .map(|fetched| {
                let chain = array.chain(&fetched.selection.chunk_shape)?;
                let whole = match fetched.payload {
                    Payload::Whole(bytes) => chain.decode(bytes),
                    _ => ArrayBytes::fill(chain.decoded_representation()),
                }
                .map_err(|e| array.chunk_error(&fetched.key, e))?;
                let ArrayBytes::Variable(vlen) = whole else {
                    return Err(Error::unsupported(
                        array.path.as_str(),
                        "a chunk of a variable-length data type decoded to fixed-size data",
                    ));
                };
                let part = select_elements(
                    &vlen,
                    &fetched.selection.chunk_shape,
                    &fetched.selection.within_chunk,
                )?;
                Ok((fetched.selection, part))
            })
            .collect::<Result<_>>()?;
        parts.extend(decoded);
        Ok(())
    })
    .instrument(span)
    .await?;
    // Where each output element comes from: part number and element within the part,
    // packed as (part << 32 | element) would limit sizes, so use a global element number.
    let mut bases = Vec::with_capacity(parts.len());
    let mut total = 0u64;
    for (_, part) in &parts {
        bases.push(total);
        total += part.len() as u64;
    }
    let out_shape = region.shape();
    let mut sources = vec![0u64; n];
    {
        let view = ArrayViewMut::new(bytes_of_mut(&mut sources), &out_shape, 8).map_err(|e| {
            Error::Codecs {
                array: array.path.as_str().to_owned(),
                source: Box::new(e),
            }
        })?;
        for ((selection, part), base) in parts.iter().zip(&bases) {
            let ids: Vec<u64> = (*base..*base + part.len() as u64).collect();
            let shape = selection.within_output.shape();
            // SAFETY: one view at a time, inside the buffer.
            let mut target =
                unsafe { view.subview(selection.within_output.clone()) }.map_err(|e| {
                    Error::Codecs {
                        array: array.path.as_str().to_owned(),
                        source: Box::new(e),
                    }
                })?;
            target
                .copy_from(bytes_of(&ids), &shape, &Region::full(&shape))
                .map_err(|e| Error::Codecs {
                    array: array.path.as_str().to_owned(),
                    source: Box::new(e),
                })?;
        }
    }
    let locate = |id: u64| -> &[u8] {
        let p = bases.partition_point(|&b| b <= id) - 1;
        parts[p].1.get((id - bases[p]) as usize).unwrap_or(&[])
    };
    let elements: Vec<&[u8]> = sources.iter().map(|&id| locate(id)).collect();
    Ok(ArrayBytes::Variable(VlenBytes::from_elements(elements)))
}

/// The elements of `region` of a C-order chunk of `shape`, in the region's C order.
pub(crate) fn select_elements(
    vlen: &VlenBytes,
    shape: &[u64],
    region: &Region,
) -> Result<VlenBytes> {
    if region.shape() == shape {
        return Ok(vlen.clone());
    }
    let ids = element_ids(shape, region)?;
    Ok(VlenBytes::from_elements(
        ids.iter().map(|&i| vlen.get(i as usize).unwrap_or(&[])),
    ))
}

/// The C-order element numbers (within a C-order buffer of `shape`) of `region`'s elements,
/// in the region's C order.
pub(crate) fn element_ids(shape: &[u64], region: &Region) -> Result<Vec<u64>> {
    let n: u64 = shape.iter().product();
    let all: Vec<u64> = (0..n).collect();
    let region_shape = region.shape();
    let m = region.num_elements()? as usize;
    let mut out = vec![0u64; m];
    let mut view =
        ArrayViewMut::new(bytes_of_mut(&mut out), &region_shape, 8).map_err(|e| Error::Codecs {
            array: String::new(),
            source: Box::new(e),
        })?;
    view.copy_from(bytes_of(&all), shape, region)
        .map_err(|e| Error::Codecs {
            array: String::new(),
            source: Box::new(e),
        })?;
    Ok(out)
}

pub(crate) fn bytes_of(values: &[u64]) -> &[u8] {
    crate::element::as_bytes(values)
}

pub(crate) fn bytes_of_mut(values: &mut [u64]) -> &mut [u8] {
    crate::element::as_bytes_mut(values)
}
