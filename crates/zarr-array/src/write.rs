//! The write engine: merge and encode chunks in parallel, store them concurrently.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt, stream};
use rayon::prelude::*;
use tracing::Instrument;
use zarr_codecs::{ArrayBytes, ArrayViewMut, CodecChain, VlenBytes};
use zarr_core::{ChunkSelection, Region};
use zarr_sharding::ShardingCodec;
use zarr_store::{StoreKey, WritableStore};

use crate::array::Array;
use crate::error::{Error, Result};
use crate::read::{bytes_of, bytes_of_mut, element_ids};

/// What to do with one chunk after encoding.
enum Action {
    Set(StoreKey, Bytes),
    Erase(StoreKey),
}

/// A chunk the write touches.
struct Touched {
    selection: ChunkSelection,
    key: StoreKey,
    /// Whether the write covers every element of the chunk that lies inside the array (no
    /// read needed).
    whole: bool,
    /// The chunk's current bytes, for partial writes.
    existing: Option<Bytes>,
}

/// Encode `values` for `key`, or `None` if it is all fill value and empty chunks are not
/// written.
pub(crate) fn encode_chunk<S: ?Sized>(
    array: &Array<S>,
    chain: &CodecChain,
    key: &StoreKey,
    values: ArrayBytes,
) -> Result<Option<Bytes>> {
    let repr = chain.decoded_representation();
    values
        .validate(repr)
        .map_err(|e| array.chunk_error(key, e))?;
    if !array.options.write_empty_chunks() && values.is_fill(repr) {
        return Ok(None);
    }
    chain
        .encode(values)
        .map(Some)
        .map_err(|e| array.chunk_error(key, e))
}

/// Whether `selection` covers every element of its chunk that lies inside the array.
fn covers_chunk<S: ?Sized>(array: &Array<S>, selection: &ChunkSelection) -> Result<bool> {
    let inside = array
        .metadata
        .chunk_grid
        .chunk_region_clipped(&array.metadata.shape, &selection.chunk)?;
    Ok(inside.shape() == selection.within_chunk.shape()
        && selection.within_chunk.starts().iter().all(|&s| s == 0))
}

/// Locks that serialise read-merge-write of one chunk (or shard) key within the process:
/// two writers updating different parts of one chunk at the same time must not lose either
/// update. Striped by a hash of the store's address and the key.
fn key_locks() -> &'static [tokio::sync::Mutex<()>] {
    static LOCKS: OnceLock<Vec<tokio::sync::Mutex<()>>> = OnceLock::new();
    LOCKS.get_or_init(|| (0..256).map(|_| tokio::sync::Mutex::new(())).collect())
}

fn stripe<S: ?Sized>(array: &Array<S>, key: &StoreKey) -> usize {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (Arc::as_ptr(&array.store).cast::<()>() as usize).hash(&mut hasher);
    key.as_str().hash(&mut hasher);
    (hasher.finish() % key_locks().len() as u64) as usize
}

/// Run `touched` chunks through: fetch existing bytes for partial ones, merge and encode in
/// parallel with `merge`, then store, `io` requests at a time, batch by batch. Partial
/// chunks are locked (in the process) from their read until their write.
async fn write_chunks<S, I, F>(array: &Array<S>, selections: I, merge: F) -> Result<()>
where
    S: WritableStore + ?Sized,
    I: Iterator<Item = ChunkSelection>,
    F: Fn(&Touched) -> Result<Action> + Sync,
{
    let store = &*array.store;
    let io = array.options.io_concurrency();
    let batch_size = io.max(4 * rayon::current_num_threads());
    let mut selections = selections.peekable();
    while selections.peek().is_some() {
        let batch = selections
            .by_ref()
            .take(batch_size)
            .map(|selection| {
                let key = array.chunk_key_unchecked(&selection.chunk)?;
                let whole = covers_chunk(array, &selection)?;
                Ok((selection, key, whole))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut stripes: Vec<usize> = batch
            .iter()
            .filter(|(_, _, whole)| !whole)
            .map(|(_, key, _)| stripe(array, key))
            .collect();
        stripes.sort_unstable();
        stripes.dedup();
        let mut guards = Vec::with_capacity(stripes.len());
        for s in stripes {
            guards.push(key_locks()[s].lock().await);
        }
        let touched: Vec<Touched> = stream::iter(batch)
            .map(|(selection, key, whole)| async move {
                let existing = if whole { None } else { store.get(&key).await? };
                Ok::<_, Error>(Touched {
                    selection,
                    key,
                    whole,
                    existing,
                })
            })
            .buffer_unordered(io)
            .try_collect()
            .await?;
        let actions: Vec<Action> = if touched.len() == 1 {
            touched.iter().map(&merge).collect::<Result<_>>()?
        } else {
            touched.par_iter().map(&merge).collect::<Result<_>>()?
        };
        stream::iter(actions)
            .map(|action| async move {
                match action {
                    Action::Set(key, bytes) => store.set(&key, bytes).await,
                    Action::Erase(key) => store.erase(&key).await,
                }
            })
            .buffer_unordered(io)
            .try_collect::<Vec<()>>()
            .await?;
        drop(guards);
    }
    Ok(())
}

fn codecs_error<S: ?Sized>(array: &Array<S>, source: zarr_codecs::Error) -> Error {
    Error::Codecs {
        array: array.path.as_str().to_owned(),
        source: Box::new(source),
    }
}

/// Write `values` (C order over `region`) of a fixed-size array.
pub(crate) async fn write_fixed<S: WritableStore + ?Sized>(
    array: &Array<S>,
    region: &Region,
    values: &[u8],
) -> Result<()> {
    let metadata = &array.metadata;
    region.check_within(&metadata.shape)?;
    let elem = array.element_size()?;
    let expected = region.num_elements()?;
    if values.len() as u64 != expected.saturating_mul(elem as u64) {
        return Err(Error::BufferSize {
            expected,
            found: (values.len() / elem.max(1)) as u64,
        });
    }
    if expected == 0 {
        return Ok(());
    }
    let region_shape = region.shape();
    let selections = metadata
        .chunk_grid
        .chunks_in_region(&metadata.shape, region)?;
    let span = tracing::debug_span!(
        "zarr.write",
        array = %array.path,
        region = %region,
        chunks = selections.num_chunks()?,
        bytes = values.len()
    );
    let merge = |t: &Touched| -> Result<Action> {
        if let Some(codec) = array.sharding(&t.selection.chunk_shape)? {
            return merge_shard(array, &codec, t, values, &region_shape, elem);
        }
        let chain = array.chain(&t.selection.chunk_shape)?;
        let repr = chain.decoded_representation();
        let size = repr
            .fixed_size_usize()
            .map_err(|e| array.chunk_error(&t.key, e))?;
        let mut chunk = vec![0u8; size];
        match (&t.existing, t.whole) {
            (Some(bytes), false) => chain
                .decode_into(bytes.clone(), &mut chunk)
                .map_err(|e| array.chunk_error(&t.key, e))?,
            _ => fill_bytes(&mut chunk, metadata.fill_value.as_bytes()),
        }
        {
            let view = ArrayViewMut::new(&mut chunk, &t.selection.chunk_shape, elem)
                .map_err(|e| codecs_error(array, e))?;
            // SAFETY: the only view of the chunk buffer in use.
            let mut target = unsafe { view.subview(t.selection.within_chunk.clone()) }
                .map_err(|e| codecs_error(array, e))?;
            target
                .copy_from(values, &region_shape, &t.selection.within_output)
                .map_err(|e| codecs_error(array, e))?;
        }
        Ok(
            match encode_chunk(array, &chain, &t.key, ArrayBytes::fixed(chunk))? {
                Some(bytes) => Action::Set(t.key.clone(), bytes),
                None => Action::Erase(t.key.clone()),
            },
        )
    };
    write_chunks(array, selections, merge)
        .instrument(span)
        .await
}

/// Merge `values` into a shard: a shard written whole is encoded (inner chunks in parallel)
/// without being read; a shard written in part re-encodes only the inner chunks it touches.
fn merge_shard<S: ?Sized>(
    array: &Array<S>,
    codec: &ShardingCodec,
    t: &Touched,
    values: &[u8],
    region_shape: &[u64],
    elem: usize,
) -> Result<Action> {
    let within = &t.selection.within_chunk;
    let shape = within.shape();
    let n = within.num_elements()? as usize;
    let mut part = vec![0u8; n * elem];
    {
        let mut view =
            ArrayViewMut::new(&mut part, &shape, elem).map_err(|e| codecs_error(array, e))?;
        view.copy_from(values, region_shape, &t.selection.within_output)
            .map_err(|e| codecs_error(array, e))?;
    }
    let existing = if t.whole { None } else { t.existing.clone() };
    let merged = if t.whole && shape != t.selection.chunk_shape {
        // An edge shard covered whole: the part outside the array is fill.
        let mut full = vec![
            0u8;
            codec
                .shard_representation()
                .fixed_size_usize()
                .map_err(|e| codecs_error(array, e))?
        ];
        fill_bytes(&mut full, array.metadata.fill_value.as_bytes());
        {
            let view = ArrayViewMut::new(&mut full, &t.selection.chunk_shape, elem)
                .map_err(|e| codecs_error(array, e))?;
            // SAFETY: the only view of `full` in use.
            let mut target =
                unsafe { view.subview(within.clone()) }.map_err(|e| codecs_error(array, e))?;
            target
                .copy_from(&part, &shape, &Region::full(&shape))
                .map_err(|e| codecs_error(array, e))?;
        }
        codec.encode_shard(ArrayBytes::fixed(full))
    } else {
        codec.merge_region(existing, within, &ArrayBytes::fixed(part))
    }
    .map_err(|e| array.shard_error(&t.key, e))?;
    Ok(match merged {
        Some(bytes) => Action::Set(t.key.clone(), bytes),
        None if array.options.write_empty_chunks() => Action::Set(
            t.key.clone(),
            codec
                .empty_shard()
                .map_err(|e| array.shard_error(&t.key, e))?,
        ),
        None => Action::Erase(t.key.clone()),
    })
}

/// Write variable-length `values` (C order over `region`).
pub(crate) async fn write_variable<S: WritableStore + ?Sized>(
    array: &Array<S>,
    region: &Region,
    values: VlenBytes,
) -> Result<()> {
    let metadata = &array.metadata;
    region.check_within(&metadata.shape)?;
    if metadata.data_type.fixed_size().is_some() {
        return Err(Error::unsupported(
            array.path.as_str(),
            "variable-length values for a fixed-size data type",
        ));
    }
    let expected = region.num_elements()?;
    if values.len() as u64 != expected {
        return Err(Error::BufferSize {
            expected,
            found: values.len() as u64,
        });
    }
    if expected == 0 {
        return Ok(());
    }
    let region_shape = region.shape();
    let selections = metadata
        .chunk_grid
        .chunks_in_region(&metadata.shape, region)?;
    let span = tracing::debug_span!("zarr.write", array = %array.path, region = %region);
    let merge = |t: &Touched| -> Result<Action> {
        let chain = array.chain(&t.selection.chunk_shape)?;
        let repr = chain.decoded_representation();
        let existing = match (&t.existing, t.whole) {
            (Some(bytes), false) => chain.decode(bytes.clone()),
            _ => ArrayBytes::fill(repr),
        }
        .map_err(|e| array.chunk_error(&t.key, e))?;
        let ArrayBytes::Variable(existing) = existing else {
            return Err(Error::unsupported(
                array.path.as_str(),
                "a chunk of a variable-length data type decoded to fixed-size data",
            ));
        };
        // For each chunk element: below n_chunk it keeps element i of the old chunk, from
        // n_chunk on it takes element (id - n_chunk) of the new values.
        let n_chunk = existing.len() as u64;
        let mut sources: Vec<u64> = (0..n_chunk).collect();
        let from_values: Vec<u64> = element_ids(&region_shape, &t.selection.within_output)?
            .into_iter()
            .map(|i| i + n_chunk)
            .collect();
        {
            let view = ArrayViewMut::new(bytes_of_mut(&mut sources), &t.selection.chunk_shape, 8)
                .map_err(|e| codecs_error(array, e))?;
            // SAFETY: the only view of `sources` in use.
            let mut target = unsafe { view.subview(t.selection.within_chunk.clone()) }
                .map_err(|e| codecs_error(array, e))?;
            let shape = t.selection.within_chunk.shape();
            target
                .copy_from(bytes_of(&from_values), &shape, &Region::full(&shape))
                .map_err(|e| codecs_error(array, e))?;
        }
        let merged = VlenBytes::from_elements(sources.iter().map(|&id| {
            if id < n_chunk {
                existing.get(id as usize).unwrap_or(&[])
            } else {
                values.get((id - n_chunk) as usize).unwrap_or(&[])
            }
        }));
        Ok(
            match encode_chunk(array, &chain, &t.key, ArrayBytes::Variable(merged))? {
                Some(bytes) => Action::Set(t.key.clone(), bytes),
                None => Action::Erase(t.key.clone()),
            },
        )
    };
    write_chunks(array, selections, merge)
        .instrument(span)
        .await
}

/// Fill `buffer` with copies of `element`.
pub(crate) fn fill_bytes(buffer: &mut [u8], element: &[u8]) {
    if element.iter().all(|&b| b == 0) {
        // A fresh zeroed buffer is already right; writing would touch every page.
        if buffer.iter().all(|&b| b == 0) {
            return;
        }
        buffer.fill(0);
    } else if !element.is_empty() {
        for chunk in buffer.chunks_exact_mut(element.len()) {
            chunk.copy_from_slice(element);
        }
    }
}

/// After shrinking to `shape`: erase chunks wholly outside it, and reset the elements of
/// edge chunks that lie outside it to the fill value.
pub(crate) async fn clear_outside<S: WritableStore + ?Sized>(
    array: &Array<S>,
    shape: &[u64],
) -> Result<()> {
    let metadata = &array.metadata;
    let old = &metadata.shape;
    if old.contains(&0) {
        return Ok(());
    }
    let grid = &metadata.chunk_grid;
    let mut erase = Vec::new();
    let mut straddling = Vec::new();
    for selection in grid.chunks_in_region(old, &Region::full(old))? {
        let region = grid.chunk_region(old, &selection.chunk)?;
        let outside = region
            .ranges()
            .iter()
            .zip(shape)
            .any(|(r, &n)| r.start >= n);
        let crosses = region.ranges().iter().zip(shape).any(|(r, &n)| r.end > n);
        let key = array.chunk_key_unchecked(&selection.chunk)?;
        if outside {
            erase.push(key);
        } else if crosses {
            straddling.push((selection.chunk, region));
        }
    }
    for keys in erase.chunks(1024) {
        array.store.erase_values(keys).await?;
    }
    for (chunk, region) in straddling {
        let key = array.chunk_key_unchecked(&chunk)?;
        if array.store.size(&key).await?.is_none() {
            continue;
        }
        let values = array.read_chunk(&chunk).await?;
        let chunk_shape = region.shape();
        // The part of the chunk still inside the new shape.
        let keep: Vec<std::ops::Range<u64>> = region
            .ranges()
            .iter()
            .zip(shape)
            .map(|(r, &n)| 0..n.saturating_sub(r.start).min(r.end - r.start))
            .collect();
        let keep = Region::try_new(keep)?;
        let chain = array.chain(&chunk_shape)?;
        let mut fresh = ArrayBytes::fill(chain.decoded_representation())
            .map_err(|e| array.chunk_error(&key, e))?;
        match (&values, &mut fresh) {
            (ArrayBytes::Fixed(old_bytes), ArrayBytes::Fixed(new_bytes)) => {
                let elem = array.element_size()?;
                let mut buffer = new_bytes.to_vec();
                {
                    let view = ArrayViewMut::new(&mut buffer, &chunk_shape, elem)
                        .map_err(|e| codecs_error(array, e))?;
                    // SAFETY: the only view of the buffer in use.
                    let mut target = unsafe { view.subview(keep.clone()) }
                        .map_err(|e| codecs_error(array, e))?;
                    target
                        .copy_from(old_bytes, &chunk_shape, &keep)
                        .map_err(|e| codecs_error(array, e))?;
                }
                fresh = ArrayBytes::fixed(buffer);
            }
            (ArrayBytes::Variable(old_vlen), ArrayBytes::Variable(fill_vlen)) => {
                let keep_ids = element_ids(&chunk_shape, &keep)?;
                let mut elements: Vec<&[u8]> = fill_vlen.iter().collect();
                for id in keep_ids {
                    elements[id as usize] = old_vlen.get(id as usize).unwrap_or(&[]);
                }
                fresh = ArrayBytes::Variable(VlenBytes::from_elements(elements));
            }
            _ => {
                return Err(Error::unsupported(
                    array.path.as_str(),
                    "a chunk decoded to the wrong kind of data",
                ));
            }
        }
        array.write_chunk(&chunk, fresh).await?;
    }
    Ok(())
}
