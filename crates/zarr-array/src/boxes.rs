//! Reads of many small boxes at once: the parts of a selection read, each inside one cell (an
//! inner chunk of a sharded array, a chunk otherwise), fetched together per shard.
//!
//! A selection read splits into one box per cell it touches. Read one by one, the boxes of
//! one shard would each cost a ranged request; batched here, the boxes of one shard cost one
//! request for their inner chunks (after the shard's index, read once per operation), and
//! the chunks of one shard of the sharding storage transformer cost its two requests in all.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use zarr_codecs::{ArrayBytes, ArrayViewMut, ChunkRepresentation, VlenBytes};
use zarr_core::Region;
use zarr_sharding::{ShardFetch, ShardingCodec};
use zarr_store::{ReadableStore, StoreKey};

use crate::array::{AbortOnDrop, Array};
use crate::error::{Error, Result};

/// The key boxes are batched by: the shard holding `region` (a box inside one cell), or
/// `None` if its cell is stored alone (it is then read alone).
///
/// Boxes of arrays whose uncompressed variable-length chunks are read element by element
/// (see `vlen_partial`) are not batched through the storage transformer: the ranged reads of
/// their elements cost less than whole chunks.
pub(crate) fn batch_key<S: ?Sized>(array: &Array<S>, region: &Region) -> Result<Option<StoreKey>> {
    if region.is_empty() {
        return Ok(None);
    }
    let metadata = &array.metadata;
    let sharded = array.inner_chunk_shape().is_some();
    let transformer = match &array.transformer {
        Some(transformer) if !sharded => {
            if crate::vlen_partial::RangedVlen::of(array).is_some() {
                return Ok(None);
            }
            Some(transformer)
        }
        _ if sharded => None,
        _ => return Ok(None),
    };
    let (chunk, _) = metadata
        .chunk_grid
        .chunk_of(&metadata.shape, &region.starts())?;
    let key = array.chunk_key_unchecked(&chunk)?;
    Ok(match transformer {
        Some(transformer) => transformer.shard_of(&key).map(|(shard, _)| shard),
        None => Some(key),
    })
}

/// How many items [`batched`] groups at a time.
pub(crate) const WINDOW: usize = 4096;

/// Batches of `items` to fetch together: the items are taken [`WINDOW`] at a time, and those
/// of a window that `measure` gives the same key (a shard) go together, in order of first
/// appearance, in batches of at most `limit` bytes by `measure` (a larger item alone); items
/// without a key go alone. Each batch comes with its bytes. An error (from `items` or
/// `measure`) comes after the batches of the items before it.
pub(crate) fn batched<T, I, F>(
    items: I,
    limit: u64,
    mut measure: F,
) -> impl Iterator<Item = Result<(u64, Vec<T>)>>
where
    I: Iterator<Item = Result<T>>,
    F: FnMut(&T) -> Result<(u64, Option<StoreKey>)>,
{
    let mut items = items.peekable();
    let mut ready: VecDeque<Result<(u64, Vec<T>)>> = VecDeque::new();
    std::iter::from_fn(move || {
        if ready.is_empty() && items.peek().is_some() {
            let mut groups: Vec<Vec<(u64, T)>> = Vec::new();
            let mut by_key: HashMap<StoreKey, usize> = HashMap::new();
            let mut failed = None;
            for item in items.by_ref().take(WINDOW) {
                let measured = item.and_then(|item| Ok((measure(&item)?, item)));
                let ((bytes, key), item) = match measured {
                    Ok(measured) => measured,
                    Err(error) => {
                        failed = Some(error);
                        break;
                    }
                };
                let slot = match key {
                    Some(key) => *by_key.entry(key).or_insert_with(|| {
                        groups.push(Vec::new());
                        groups.len() - 1
                    }),
                    None => {
                        groups.push(Vec::new());
                        groups.len() - 1
                    }
                };
                groups[slot].push((bytes, item));
            }
            for members in groups {
                let mut batch: (u64, Vec<T>) = (0, Vec::new());
                for (bytes, item) in members {
                    if !batch.1.is_empty() && batch.0.saturating_add(bytes) > limit {
                        ready.push_back(Ok(std::mem::take(&mut batch)));
                    }
                    batch.0 = batch.0.saturating_add(bytes);
                    batch.1.push(item);
                }
                if !batch.1.is_empty() {
                    ready.push_back(Ok(batch));
                }
            }
            ready.extend(failed.map(Err));
        }
        ready.pop_front()
    })
}

/// One box of a batch read through the storage transformer: its chunk and what was stored.
struct ChunkBox {
    chunk: Vec<u64>,
    shape: Vec<u64>,
    key: StoreKey,
    within: Region,
    stored: Option<Bytes>,
}

/// What a batch of boxes was fetched as.
enum Fetched {
    /// Boxes of one shard of the sharding codec; `fetch` is `None` if the shard is not stored.
    Shard {
        codec: Arc<ShardingCodec>,
        key: StoreKey,
        chunk: Vec<u64>,
        within: Vec<Region>,
        fetch: Option<ShardFetch>,
    },
    /// Whole chunks, each holding one box.
    Chunks(Vec<ChunkBox>),
}

/// `region` relative to `origin`.
fn relative(region: &Region, origin: &[u64]) -> Result<Region> {
    let ranges = region
        .ranges()
        .iter()
        .zip(origin)
        .map(|(r, &o)| Some(r.start.checked_sub(o)?..r.end.checked_sub(o)?))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| Error::Region {
            reason: format!("the box {region} starts before its chunk at {origin:?}"),
        })?;
    Ok(Region::try_new(ranges)?)
}

/// Fetch what the boxes of one batch (all with the same [`batch_key`]) need: for the
/// sharding codec, the shard's index (shared by the operation) and one request for their
/// inner chunks; otherwise one `get_partial_values` call for their chunks, which the storage
/// transformer serves with two requests.
async fn fetch<S: ReadableStore + ?Sized>(array: &Array<S>, boxes: &[Region]) -> Result<Fetched> {
    let metadata = &array.metadata;
    let grid = &metadata.chunk_grid;
    let store = array.read_store();
    let place = |region: &Region| -> Result<(Vec<u64>, Vec<u64>, Region)> {
        let (chunk, _) = grid.chunk_of(&metadata.shape, &region.starts())?;
        let shape = grid.chunk_shape(&metadata.shape, &chunk)?;
        let origin = grid.chunk_origin(&metadata.shape, &chunk)?;
        Ok((chunk, shape, relative(region, &origin)?))
    };
    if array.inner_chunk_shape().is_some() {
        let Some(first) = boxes.first() else {
            return Ok(Fetched::Chunks(Vec::new()));
        };
        let (chunk, shape, _) = place(first)?;
        let origin = grid.chunk_origin(&metadata.shape, &chunk)?;
        let codec = array
            .sharding(&shape)?
            .ok_or_else(|| Error::unsupported(array.path.as_str(), "not sharded"))?;
        let key = array.chunk_key_unchecked(&chunk)?;
        let within = boxes
            .iter()
            .map(|region| relative(region, &origin))
            .collect::<Result<Vec<_>>>()?;
        let fetch = match crate::read::shard_index(array, store, &codec, &key).await? {
            None => None,
            Some(index) => Some(
                codec
                    .fetch_chunks_of(store, &key, index, &within)
                    .await
                    .map_err(|e| array.shard_error(&key, e))?,
            ),
        };
        return Ok(Fetched::Shard {
            codec,
            key,
            chunk,
            within,
            fetch,
        });
    }
    let mut chunks = Vec::with_capacity(boxes.len());
    for region in boxes {
        let (chunk, shape, within) = place(region)?;
        let key = array.chunk_key_unchecked(&chunk)?;
        chunks.push(ChunkBox {
            chunk,
            shape,
            key,
            within,
            stored: None,
        });
    }
    let keys: Vec<&StoreKey> = chunks.iter().map(|c| &c.key).collect();
    let answers = crate::read::get_whole(array, store, &keys).await?;
    for (chunk, stored) in chunks.iter_mut().zip(answers) {
        chunk.stored = stored;
    }
    Ok(Fetched::Chunks(chunks))
}

impl Fetched {
    /// The number of boxes fetched.
    fn len(&self) -> usize {
        match self {
            Self::Shard { within, .. } => within.len(),
            Self::Chunks(chunks) => chunks.len(),
        }
    }
}

/// Decode boxes `0..n` with `decode`: each a task of its own on a multi-threaded runtime, so
/// that the boxes of a batch decode on all cores (as separate reads would), one after
/// another otherwise. (Decoding a batch with rayon from the task that fetched it was slower:
/// a ::2 selection of a sharded array ran at 0.7 of a full read instead of 1.0, with each
/// such task blocking a runtime thread while rayon's decoded.)
async fn decode_each<T, F>(n: usize, decode: F) -> Result<Vec<T>>
where
    T: Send + 'static,
    F: Fn(usize) -> Result<T> + Send + Sync + 'static,
{
    let Some(handle) = crate::read::pipeline_handle(n) else {
        return (0..n).map(decode).collect();
    };
    let decode = Arc::new(decode);
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let decode = Arc::clone(&decode);
            AbortOnDrop(handle.spawn(async move { decode(i) }))
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    for task in tasks {
        out.push(task.join().await??);
    }
    Ok(out)
}

/// Read the fixed-size boxes of one batch, each into a new buffer (C order, native byte
/// order).
pub(crate) async fn read_fixed<S: ReadableStore + ?Sized + 'static>(
    array: Array<S>,
    boxes: Vec<Region>,
) -> Result<Vec<Vec<u8>>> {
    if let [region] = &boxes[..] {
        return Ok(vec![array.read_bytes(region).await?]);
    }
    read_batch(array, boxes, decode_fixed).await
}

/// Fetch the boxes of one batch ([`fetch`]) and decode each with `decode` ([`decode_each`]).
async fn read_batch<S, T, D>(array: Array<S>, boxes: Vec<Region>, decode: D) -> Result<Vec<T>>
where
    S: ReadableStore + ?Sized + 'static,
    T: Send + 'static,
    D: Fn(&Array<S>, &Fetched, usize) -> Result<T> + Send + Sync + 'static,
{
    let fetched = fetch(&array, &boxes).await?;
    let n = fetched.len();
    decode_each(n, move |i| decode(&array, &fetched, i)).await
}

/// Decode box `i` of `fetched` into a new buffer.
fn decode_fixed<S: ?Sized>(array: &Array<S>, fetched: &Fetched, i: usize) -> Result<Vec<u8>> {
    let elem = array.element_size()?;
    let fill = array.metadata.fill_value.as_bytes();
    let decode_into = |within: &Region, decode: &dyn Fn(&mut ArrayViewMut<'_>) -> Result<()>| {
        let size = within
            .num_elements()?
            .checked_mul(elem as u64)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| zarr_core::Error::Overflow {
                what: "the size of a part of the selection in bytes".into(),
            })?;
        let mut out = crate::element::zeroed_vec::<u8>(size).map_err(|e| array.codecs_error(e))?;
        let mut view = ArrayViewMut::new(&mut out, &within.shape(), elem)
            .map_err(|e| array.codecs_error(e))?;
        decode(&mut view)?;
        Ok(out)
    };
    match fetched {
        Fetched::Shard {
            codec,
            key,
            chunk,
            within,
            fetch,
        } => {
            let within = &within[i];
            decode_into(within, &|view| match fetch {
                None => view.fill(fill).map_err(|e| array.chunk_error(key, e)),
                Some(fetch) => codec
                    .decode_fetched_into_view(fetch, within, view)
                    .map_err(|e| array.shard_error_at(key, chunk, e)),
            })
        }
        Fetched::Chunks(chunks) => {
            let c = &chunks[i];
            decode_into(&c.within, &|view| match &c.stored {
                None => view.fill(fill).map_err(|e| array.chunk_error(&c.key, e)),
                Some(bytes) => array
                    .chain(&c.shape)?
                    .decode_into_view(bytes.clone(), &c.within, view)
                    .map_err(|e| array.chunk_error_at(&c.key, &c.chunk, e)),
            })
        }
    }
}

/// Read the variable-length boxes of one batch, each as its elements in C order.
pub(crate) async fn read_variable<S: ReadableStore + ?Sized + 'static>(
    array: Array<S>,
    boxes: Vec<Region>,
) -> Result<Vec<VlenBytes>> {
    if let [region] = &boxes[..] {
        return Ok(vec![array.read_vlen(region).await?]);
    }
    read_batch(array, boxes, decode_variable).await
}

/// Decode box `i` of `fetched` as its elements.
fn decode_variable<S: ?Sized>(array: &Array<S>, fetched: &Fetched, i: usize) -> Result<VlenBytes> {
    let metadata = &array.metadata;
    let variable = |bytes: ArrayBytes| match bytes {
        ArrayBytes::Variable(vlen) => Ok(vlen),
        ArrayBytes::Fixed(_) => Err(Error::unsupported(
            array.path.as_str(),
            "a chunk of a variable-length data type decoded to fixed-size data",
        )),
    };
    let fill = |within: &Region| -> Result<VlenBytes> {
        let repr = ChunkRepresentation::try_new(
            within.shape(),
            metadata.data_type.clone(),
            metadata.fill_value.clone(),
        )
        .map_err(|e| array.codecs_error(e))?;
        variable(ArrayBytes::fill(&repr).map_err(|e| array.codecs_error(e))?)
    };
    match fetched {
        Fetched::Shard {
            codec,
            key,
            chunk,
            within,
            fetch,
        } => match fetch {
            None => fill(&within[i]),
            Some(fetch) => variable(
                codec
                    .decode_fetched(fetch, &within[i])
                    .map_err(|e| array.shard_error_at(key, chunk, e))?,
            ),
        },
        Fetched::Chunks(chunks) => {
            let c = &chunks[i];
            match &c.stored {
                None => fill(&c.within),
                Some(bytes) => {
                    let whole = array
                        .chain(&c.shape)?
                        .decode(bytes.clone())
                        .map_err(|e| array.chunk_error_at(&c.key, &c.chunk, e))?;
                    crate::read::select_elements(&variable(whole)?, &c.shape, &c.within)
                }
            }
        }
    }
}
