//! The sharding storage transformer (the 2022-2023 draft, "ZEP 2 — Sharding storage
//! transformer"): a store wrapper that keeps many chunks of one array in one shard.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;
use serde_json::Value;
use zarr_core::{ChunkKeyEncoding, ChunkKeySeparator, ExtensionObject};
use zarr_store::{
    ByteRange, ListDir, ListableStore, ReadableStore, StoreKey, StorePrefix, WritableStore,
};

use crate::codec::{IndexLocation, assemble_shard};
use crate::error::{Error, Result, ShardName};
use crate::index::{ShardIndex, chunk_count, chunk_indices, linear_index};

/// The transformer's name in `storage_transformers` (March 2023 draft form).
pub const TRANSFORMER_NAME: &str = "sharding";

/// The URL naming the transformer in its August 2022 draft form
/// (`{"extension": URL, "type": "indexed", ...}`).
pub const LEGACY_TRANSFORMER_URL: &str =
    "https://purl.org/zarr/spec/storage_transformers/sharding/1.0";

/// The configuration of the sharding storage transformer: how many chunks of the array's
/// chunk grid make one shard along each dimension.
///
/// ```
/// use zarr_sharding::ShardingTransformerConfig;
///
/// let new_form = serde_json::json!({"name": "sharding", "configuration": {"chunks_per_shard": [2, 2]}});
/// let old_form = serde_json::json!({
///     "extension": "https://purl.org/zarr/spec/storage_transformers/sharding/1.0",
///     "type": "indexed",
///     "configuration": {"chunks_per_shard": [2, 2]}
/// });
/// let a = ShardingTransformerConfig::from_json(&new_form)?;
/// let b = ShardingTransformerConfig::from_json(&old_form)?;
/// assert_eq!(a, b);
/// assert_eq!(a.chunks_per_shard, vec![2, 2]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardingTransformerConfig {
    /// Chunks per shard along each dimension (all at least 1).
    pub chunks_per_shard: Vec<u64>,
}

impl ShardingTransformerConfig {
    /// A configuration from `chunks_per_shard`.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] if a count is 0 or the shard holds more chunks than fit
    /// in memory.
    pub fn try_new(chunks_per_shard: Vec<u64>) -> Result<Self> {
        if let Some(d) = chunks_per_shard.iter().position(|&n| n == 0) {
            return Err(Error::InvalidConfiguration {
                field: format!("configuration.chunks_per_shard[{d}]"),
                reason: "must be at least 1".into(),
            });
        }
        chunk_count(&chunks_per_shard)?;
        Ok(Self { chunks_per_shard })
    }

    /// The configuration of a `storage_transformers` entry as `zarr-core` parses it: named
    /// `sharding` (it reads the August 2022 form with the `extension` URL and `"type":
    /// "indexed"` under that name too), or named by the URL itself.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] naming the field for another transformer or a malformed
    /// configuration.
    pub fn from_metadata(meta: &ExtensionObject) -> Result<Self> {
        if meta.name != TRANSFORMER_NAME && meta.name != LEGACY_TRANSFORMER_URL {
            return Err(Error::InvalidConfiguration {
                field: "name".into(),
                reason: format!("`{}` is not the sharding storage transformer", meta.name),
            });
        }
        Self::from_configuration(&meta.configuration_or_empty())
    }

    /// The configuration from the raw JSON of a `storage_transformers` entry, in either draft
    /// form.
    ///
    /// # Errors
    /// As [`from_metadata`](Self::from_metadata).
    pub fn from_json(value: &Value) -> Result<Self> {
        let Value::Object(map) = value else {
            return Err(Error::InvalidConfiguration {
                field: "storage_transformers[]".into(),
                reason: format!("expected an object, found {value}"),
            });
        };
        if let Some(url) = map.get("extension") {
            if url.as_str() != Some(LEGACY_TRANSFORMER_URL) {
                return Err(Error::InvalidConfiguration {
                    field: "extension".into(),
                    reason: format!("{url} is not the sharding storage transformer"),
                });
            }
            if let Some(kind) = map.get("type")
                && kind.as_str() != Some("indexed")
            {
                return Err(Error::InvalidConfiguration {
                    field: "type".into(),
                    reason: format!("only the \"indexed\" binary format exists, found {kind}"),
                });
            }
            let config = match map.get("configuration") {
                Some(Value::Object(c)) => c.clone(),
                None => serde_json::Map::new(),
                Some(other) => {
                    return Err(Error::InvalidConfiguration {
                        field: "configuration".into(),
                        reason: format!("expected an object, found {other}"),
                    });
                }
            };
            return Self::from_configuration(&config);
        }
        let meta = ExtensionObject::from_json(value, "storage_transformers[]")?;
        Self::from_metadata(&meta)
    }

    fn from_configuration(config: &serde_json::Map<String, Value>) -> Result<Self> {
        let field = "configuration.chunks_per_shard";
        let Some(Value::Array(values)) = config.get("chunks_per_shard") else {
            return Err(Error::InvalidConfiguration {
                field: field.into(),
                reason: "required: an array of positive integers".into(),
            });
        };
        let counts = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_u64().ok_or_else(|| Error::InvalidConfiguration {
                    field: format!("{field}[{i}]"),
                    reason: format!("expected a positive integer, found {v}"),
                })
            })
            .collect::<Result<Vec<u64>>>()?;
        Self::try_new(counts)
    }

    /// The metadata entry (`{"name": "sharding", "configuration": {...}}`).
    pub fn to_metadata(&self) -> ExtensionObject {
        let mut config = serde_json::Map::new();
        config.insert(
            "chunks_per_shard".into(),
            Value::from(self.chunks_per_shard.clone()),
        );
        ExtensionObject::with_configuration(TRANSFORMER_NAME, config)
    }
}

/// Chunk changes grouped by shard key: (position in the shard, chunk key, change).
type ByShard<T> = BTreeMap<StoreKey, Vec<(usize, StoreKey, T)>>;

/// A change to one chunk of a shard.
#[derive(Debug, Clone)]
enum Change {
    /// Replace the chunk's value.
    Set(Bytes),
    /// Write bytes at offsets of the chunk's value (a missing chunk is empty).
    Patch(Vec<(u64, Bytes)>),
    /// Remove the chunk.
    Erase,
}

/// The sharding storage transformer: a store wrapper that stores the chunks of one array in
/// shards of `chunks_per_shard` chunks, as the sharding storage-transformer draft describes.
///
/// Through the wrapper, the array's chunk keys (`prefix` + the chunk key encoding of the
/// chunk's grid indices) read and write as if every chunk were its own value; underneath,
/// chunk `(i, j)` lives in the shard whose key encodes `(i / n_i, j / n_j)` with the same
/// encoding and separator. Every other key passes through unchanged.
///
/// A shard is the chunks' values back to back in C order, followed by the index: 16 bytes of
/// little-endian `(offset, nbytes)` per chunk of the shard, in C order, `(2^64-1, 2^64-1)` for
/// an absent chunk; no checksum. That is the `sharding_indexed` format with `index_codecs =
/// [bytes little]` and `index_location = end`, so the two produce identical shards for the same
/// chunk values.
///
/// - [`get_partial_values`](ReadableStore::get_partial_values): two calls below, one for the
///   indexes of every shard involved, one for every chunk range (and every passed-through
///   range).
/// - Writes take the shard's lock (in this process), read the touched shards in one call, and
///   write each rebuilt shard once; a shard whose chunks are all given whole (`set` of every
///   chunk, or erasing every chunk) is written or erased without reading. Writers in other
///   processes are not coordinated: see `docs/sharding.md`.
/// - Listings report chunk keys as if unsharded, only chunks present in the indexes.
///
/// ```
/// use std::sync::Arc;
/// use bytes::Bytes;
/// use zarr_core::ChunkKeyEncoding;
/// use zarr_sharding::ShardingTransformer;
/// use zarr_store::{ListableStore, MemoryStore, ReadableStore, StoreKey, StorePrefix, WritableStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let memory = Arc::new(MemoryStore::new());
/// let store = ShardingTransformer::new(
///     Arc::clone(&memory),
///     StorePrefix::new("array/"),
///     vec![2, 2],
///     ChunkKeyEncoding::default(),
/// )?;
/// store.set(&StoreKey::new("array/c/3/1"), Bytes::from_static(b"chunk (3,1)")).await?;
/// store.set(&StoreKey::new("array/zarr.json"), Bytes::from_static(b"{}")).await?;
/// // Chunk (3, 1) lives in shard (1, 0).
/// assert!(memory.get(&StoreKey::new("array/c/1/0")).await?.is_some());
/// assert_eq!(
///     store.get(&StoreKey::new("array/c/3/1")).await?.as_deref(),
///     Some(&b"chunk (3,1)"[..])
/// );
/// assert_eq!(
///     store.list().await?,
///     vec![StoreKey::new("array/c/3/1"), StoreKey::new("array/zarr.json")]
/// );
/// # Ok(())
/// # }
/// ```
pub struct ShardingTransformer<S: ?Sized> {
    inner: Arc<S>,
    prefix: StorePrefix,
    chunks_per_shard: Vec<u64>,
    num_chunks: usize,
    encoding: ChunkKeyEncoding,
    locks: Mutex<HashMap<StoreKey, Arc<futures::lock::Mutex<()>>>>,
}

impl<S: ?Sized> fmt::Debug for ShardingTransformer<S>
where
    S: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardingTransformer")
            .field("inner", &self.inner)
            .field("prefix", &self.prefix)
            .field("chunks_per_shard", &self.chunks_per_shard)
            .field("encoding", &self.encoding)
            .finish_non_exhaustive()
    }
}

impl<S: ?Sized> ShardingTransformer<S> {
    /// Wrap `inner` for the array at `prefix` whose chunk keys use `encoding`, with
    /// `chunks_per_shard` chunks per shard along each dimension (the array's rank).
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] if a count is 0 or a shard holds too many chunks;
    /// [`Error::Core`] if `encoding` is a `template` that does not suit the rank.
    pub fn new(
        inner: Arc<S>,
        prefix: StorePrefix,
        chunks_per_shard: Vec<u64>,
        encoding: ChunkKeyEncoding,
    ) -> Result<Self> {
        let config = ShardingTransformerConfig::try_new(chunks_per_shard)?;
        Self::with_config(inner, prefix, config, encoding)
    }

    /// Wrap `inner` as the `storage_transformers` entry `meta` of the array at `prefix` says.
    ///
    /// # Errors
    /// As [`ShardingTransformerConfig::from_metadata`].
    pub fn from_metadata(
        inner: Arc<S>,
        prefix: StorePrefix,
        meta: &ExtensionObject,
        encoding: ChunkKeyEncoding,
    ) -> Result<Self> {
        Self::with_config(
            inner,
            prefix,
            ShardingTransformerConfig::from_metadata(meta)?,
            encoding,
        )
    }

    /// Wrap `inner` with a parsed configuration.
    ///
    /// # Errors
    /// As [`ShardingTransformer::new`].
    pub fn with_config(
        inner: Arc<S>,
        prefix: StorePrefix,
        config: ShardingTransformerConfig,
        encoding: ChunkKeyEncoding,
    ) -> Result<Self> {
        let num_chunks = chunk_count(&config.chunks_per_shard)?;
        encoding.check_rank(config.chunks_per_shard.len(), "chunk_key_encoding")?;
        Ok(Self {
            inner,
            prefix,
            chunks_per_shard: config.chunks_per_shard,
            num_chunks,
            encoding,
            locks: Mutex::new(HashMap::new()),
        })
    }

    /// The store below.
    pub fn inner(&self) -> &Arc<S> {
        &self.inner
    }

    /// The array's prefix.
    pub fn prefix(&self) -> &StorePrefix {
        &self.prefix
    }

    /// Chunks per shard along each dimension.
    pub fn chunks_per_shard(&self) -> &[u64] {
        &self.chunks_per_shard
    }

    /// The size of a shard's index: 16 bytes per chunk.
    pub fn index_size(&self) -> u64 {
        16 * self.num_chunks as u64
    }

    fn rank(&self) -> usize {
        self.chunks_per_shard.len()
    }

    /// The grid indices of `key` if it is a chunk key of the array (a shard key has the same
    /// form: in the store below, it names a shard).
    fn grid_indices(&self, key: &StoreKey) -> Option<Vec<u64>> {
        let rel = key.as_str().strip_prefix(self.prefix.as_str())?;
        self.encoding.decode(rel, self.rank())
    }

    fn key_of(&self, indices: &[u64]) -> Result<StoreKey> {
        Ok(StoreKey::try_new(format!(
            "{}{}",
            self.prefix.as_str(),
            self.encoding.encode(indices)
        ))?)
    }

    /// The shard key holding chunk `key` and the chunk's position in the shard (C order), or
    /// `None` if `key` is not a chunk key of the array (it passes through).
    pub fn shard_of(&self, key: &StoreKey) -> Option<(StoreKey, usize)> {
        let indices = self.grid_indices(key)?;
        let shard: Vec<u64> = indices
            .iter()
            .zip(&self.chunks_per_shard)
            .map(|(i, n)| i / n)
            .collect();
        let local: Vec<u64> = indices
            .iter()
            .zip(&self.chunks_per_shard)
            .map(|(i, n)| i % n)
            .collect();
        let linear = linear_index(&self.chunks_per_shard, &local)?;
        Some((self.key_of(&shard).ok()?, linear))
    }

    /// The chunk key of position `linear` of the shard at `shard` (grid indices of the shard).
    fn chunk_key(&self, shard: &[u64], linear: usize) -> Result<StoreKey> {
        let local = chunk_indices(&self.chunks_per_shard, linear);
        let indices: Vec<u64> = shard
            .iter()
            .zip(&local)
            .zip(&self.chunks_per_shard)
            .map(|((s, l), n)| s * n + l)
            .collect();
        self.key_of(&indices)
    }

    /// Parse and validate a whole shard.
    fn parse_shard(&self, key: &StoreKey, shard: &Bytes) -> Result<ShardIndex> {
        let size = shard.len() as u64;
        let index_size = self.index_size();
        if size < index_size {
            return Err(Error::ShardTooSmall {
                shard: ShardName::from(key),
                size,
                index_size,
            });
        }
        let start = size - index_size;
        let index =
            ShardIndex::from_le_bytes(&self.chunks_per_shard, &shard[start as usize..], Some(key))?;
        index.validate(Some(key), Some(size), Some(start..size))?;
        Ok(index)
    }

    /// Build a shard from chunk values in C order (`None` = absent); `None` if all are absent.
    fn build_shard(&self, parts: &[Option<Bytes>]) -> Result<Option<Bytes>> {
        assemble_shard(
            parts,
            &self.chunks_per_shard,
            IndexLocation::End,
            self.index_size(),
            |index| Ok(Bytes::from(index.to_le_bytes())),
        )
    }

    /// Take the in-process locks of `shards` (in sorted order, so writers cannot deadlock).
    async fn lock_shards(
        &self,
        shards: impl Iterator<Item = &StoreKey>,
    ) -> Vec<futures::lock::OwnedMutexGuard<()>> {
        let mutexes: Vec<_> = {
            let mut map = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
            shards
                .map(|key| Arc::clone(map.entry(key.clone()).or_default()))
                .collect()
        };
        let mut guards = Vec::with_capacity(mutexes.len());
        for m in mutexes {
            guards.push(m.lock_owned().await);
        }
        guards
    }

    /// Drop the lock entries no writer holds any more.
    fn release_locks(&self, guards: Vec<futures::lock::OwnedMutexGuard<()>>) {
        drop(guards);
        let mut map = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        map.retain(|_, m| Arc::strong_count(m) > 1);
    }
}

impl<S: ReadableStore + ?Sized> ShardingTransformer<S> {
    /// Read the indexes of `shards` with one request; `None` for shards that are not stored.
    async fn read_indexes(&self, shards: &[StoreKey]) -> Result<Vec<Option<ShardIndex>>> {
        if shards.is_empty() {
            return Ok(Vec::new());
        }
        let requests: Vec<(StoreKey, ByteRange)> = shards
            .iter()
            .map(|k| (k.clone(), ByteRange::suffix(self.index_size())))
            .collect();
        let answers = match self.inner.get_partial_values(&requests).await {
            Ok(answers) => answers,
            Err(zarr_store::Error::RangeOutOfBounds { key, size, .. }) => {
                return Err(Error::ShardTooSmall {
                    shard: ShardName(key),
                    size,
                    index_size: self.index_size(),
                });
            }
            Err(e) => return Err(e.into()),
        };
        shards
            .iter()
            .zip(answers)
            .map(|(key, answer)| {
                answer
                    .map(|bytes| {
                        let index =
                            ShardIndex::from_le_bytes(&self.chunks_per_shard, &bytes, Some(key))?;
                        index.validate(Some(key), None, None)?;
                        Ok(index)
                    })
                    .transpose()
            })
            .collect()
    }

    async fn get_partial_values_impl(
        &self,
        key_ranges: &[(StoreKey, ByteRange)],
    ) -> Result<Vec<Option<Bytes>>> {
        // Which requests are chunks, and of which shard.
        let targets: Vec<Option<(StoreKey, usize)>> =
            key_ranges.iter().map(|(k, _)| self.shard_of(k)).collect();
        let shards: Vec<StoreKey> = targets
            .iter()
            .flatten()
            .map(|(s, _)| s.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        // Call 1: every index.
        let indexes: BTreeMap<StoreKey, Option<ShardIndex>> = shards
            .iter()
            .cloned()
            .zip(self.read_indexes(&shards).await?)
            .collect();
        // Call 2: every chunk range and every passed-through range.
        let mut out: Vec<Option<Bytes>> = vec![None; key_ranges.len()];
        let mut requests = Vec::new();
        let mut slots = Vec::new();
        for (i, ((key, range), target)) in key_ranges.iter().zip(&targets).enumerate() {
            match target {
                None => {
                    requests.push((key.clone(), *range));
                    slots.push(i);
                }
                Some((shard, linear)) => {
                    let Some(chunk) = indexes
                        .get(shard)
                        .and_then(Option::as_ref)
                        .and_then(|index| index.chunk_range(*linear))
                    else {
                        continue;
                    };
                    let within = range
                        .resolve(chunk.end - chunk.start)
                        .map_err(|e| e.with_key(key))?;
                    if within.is_empty() {
                        out[i] = Some(Bytes::new());
                        continue;
                    }
                    let absolute =
                        ByteRange::try_new(chunk.start + within.start, chunk.start + within.end)?;
                    requests.push((shard.clone(), absolute));
                    slots.push(i);
                }
            }
        }
        if requests.is_empty() {
            return Ok(out);
        }
        let answers = match self.inner.get_partial_values(&requests).await {
            Ok(answers) => answers,
            Err(zarr_store::Error::RangeOutOfBounds {
                key: Some(key),
                size,
                range,
            }) if indexes.contains_key(&key) => {
                // An index entry points past the end of its shard.
                let (offset, end) = match range.form() {
                    zarr_store::ByteRangeForm::Bounded { start, end } => (start, end),
                    _ => (0, 0),
                };
                let chunk = indexes
                    .get(&key)
                    .and_then(Option::as_ref)
                    .and_then(|index| {
                        index
                            .present()
                            .find(|(_, r)| r.end > size)
                            .map(|(l, _)| index.chunk_indices(l))
                    })
                    .unwrap_or_default();
                return Err(Error::EntryOutOfBounds {
                    shard: ShardName(Some(key)),
                    chunk,
                    offset,
                    nbytes: end - offset,
                    shard_size: Some(size),
                });
            }
            Err(e) => return Err(e.into()),
        };
        for (slot, answer) in slots.into_iter().zip(answers) {
            if targets[slot].is_some() && answer.is_none() {
                let shard = targets[slot].as_ref().map(|(s, _)| s.clone());
                return Err(Error::ShardChanged {
                    shard: ShardName(shard),
                });
            }
            out[slot] = answer;
        }
        Ok(out)
    }
}

impl<S: WritableStore + ?Sized> ShardingTransformer<S> {
    /// Apply chunk changes, grouped by shard: one read of the shards that need it, one write
    /// (or erase) per shard.
    async fn apply(&self, changes: ByShard<Change>) -> Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let guards = self.lock_shards(changes.keys()).await;
        let result = self.apply_locked(&changes).await;
        self.release_locks(guards);
        result
    }

    async fn apply_locked(&self, changes: &ByShard<Change>) -> Result<()> {
        // Shards whose every chunk is replaced or erased need no read.
        let needs_read: Vec<StoreKey> = changes
            .iter()
            .filter(|(_, list)| {
                let whole: BTreeSet<usize> = list
                    .iter()
                    .filter(|(_, _, c)| !matches!(c, Change::Patch(_)))
                    .map(|(l, _, _)| *l)
                    .collect();
                whole.len() < self.num_chunks
            })
            .map(|(k, _)| k.clone())
            .collect();
        let mut existing: BTreeMap<StoreKey, Bytes> = BTreeMap::new();
        if !needs_read.is_empty() {
            let requests: Vec<_> = needs_read
                .iter()
                .map(|k| (k.clone(), ByteRange::FULL))
                .collect();
            let answers = self.inner.get_partial_values(&requests).await?;
            for (key, answer) in needs_read.into_iter().zip(answers) {
                if let Some(bytes) = answer {
                    existing.insert(key, bytes);
                }
            }
        }
        let mut erase = Vec::new();
        for (shard_key, list) in changes {
            let mut parts: Vec<Option<Bytes>> = vec![None; self.num_chunks];
            if let Some(bytes) = existing.get(shard_key) {
                let index = self.parse_shard(shard_key, bytes)?;
                for (linear, r) in index.present() {
                    parts[linear] = Some(bytes.slice(r.start as usize..r.end as usize));
                }
            }
            for (linear, chunk_key, change) in list {
                parts[*linear] = match change {
                    Change::Set(value) => Some(value.clone()),
                    Change::Erase => None,
                    Change::Patch(writes) => {
                        Some(patch_value(parts[*linear].take(), writes, chunk_key)?)
                    }
                };
            }
            match self.build_shard(&parts)? {
                Some(shard) => self.inner.set(shard_key, shard).await?,
                None => erase.push(shard_key.clone()),
            }
        }
        if !erase.is_empty() {
            self.inner.erase_values(&erase).await?;
        }
        Ok(())
    }

    /// Group chunk keys by shard; return the passed-through keys.
    fn group<T>(
        &self,
        items: impl IntoIterator<Item = (StoreKey, T)>,
    ) -> (ByShard<T>, Vec<(StoreKey, T)>) {
        let mut chunks: ByShard<T> = BTreeMap::new();
        let mut other = Vec::new();
        for (key, value) in items {
            match self.shard_of(&key) {
                Some((shard, linear)) => {
                    chunks.entry(shard).or_default().push((linear, key, value))
                }
                None => other.push((key, value)),
            }
        }
        (chunks, other)
    }

    /// Set many chunk (and other) values at once: one write per shard, and no read at all
    /// for a shard whose every chunk is given.
    ///
    /// # Errors
    /// Store errors; index errors of existing shards.
    pub async fn set_values(&self, values: &[(StoreKey, Bytes)]) -> Result<()> {
        let (chunks, other) = self.group(
            values
                .iter()
                .map(|(k, v)| (k.clone(), Change::Set(v.clone()))),
        );
        for (key, change) in other {
            if let Change::Set(value) = change {
                self.inner.set(&key, value).await?;
            }
        }
        self.apply(chunks).await
    }

    /// Set (`Some`) or erase (`None`) many chunk (and other) values at once: each shard
    /// touched is read at most once (not at all when every one of its chunks is given) and
    /// written or erased once. This is how an array writes a batch of chunks through the
    /// transformer; it needs no listing of the store below.
    ///
    /// # Errors
    /// Store errors; index errors of existing shards.
    pub async fn set_or_erase_values(&self, values: &[(StoreKey, Option<Bytes>)]) -> Result<()> {
        let (chunks, other) = self.group(values.iter().map(|(k, v)| {
            let change = match v {
                Some(bytes) => Change::Set(bytes.clone()),
                None => Change::Erase,
            };
            (k.clone(), change)
        }));
        let mut erase = Vec::new();
        for (key, change) in other {
            match change {
                Change::Set(value) => self.inner.set(&key, value).await?,
                Change::Erase => erase.push(key),
                Change::Patch(_) => {}
            }
        }
        if !erase.is_empty() {
            self.inner.erase_values(&erase).await?;
        }
        self.apply(chunks).await
    }
}

impl<S: WritableStore + ListableStore + ?Sized> ShardingTransformer<S> {
    async fn erase_prefix_impl(&self, prefix: &StorePrefix) -> Result<()> {
        let array = self.prefix.as_str();
        if array.starts_with(prefix.as_str()) || !prefix.as_str().starts_with(array) {
            // The prefix holds the whole array (every shard goes), or lies outside it.
            self.inner.erase_prefix(prefix).await?;
            return Ok(());
        }
        // Below the array's prefix: erase exactly the chunk (and other) keys listed under it.
        let keys = self.list_prefix_impl(prefix).await?;
        self.erase_values_impl(&keys).await
    }
}

impl<S: WritableStore + ?Sized> ShardingTransformer<S> {
    async fn erase_values_impl(&self, keys: &[StoreKey]) -> Result<()> {
        let (chunks, other) = self.group(keys.iter().map(|k| (k.clone(), Change::Erase)));
        if !other.is_empty() {
            let other: Vec<StoreKey> = other.into_iter().map(|(k, _)| k).collect();
            self.inner.erase_values(&other).await?;
        }
        self.apply(chunks).await
    }
}

impl<S: ListableStore + ReadableStore + ?Sized> ShardingTransformer<S> {
    /// The prefix in the store below that holds every shard with a chunk under `rel` (a prefix
    /// relative to the array's), or `None` if no chunk key lies under `rel`.
    fn shard_prefix(&self, rel: &str) -> Option<String> {
        let segments: Vec<&str> = rel.trim_end_matches('/').split('/').collect();
        let (head, indices) = match &self.encoding {
            ChunkKeyEncoding::Default {
                separator: ChunkKeySeparator::Slash,
            } => match segments.split_first() {
                Some((&"c", rest)) => ("c/", rest),
                _ => return None,
            },
            ChunkKeyEncoding::V2 {
                separator: ChunkKeySeparator::Slash,
            } => ("", &segments[..]),
            // Keys with `.` between the indices lie under no prefix below the array's.
            ChunkKeyEncoding::Default { .. } | ChunkKeyEncoding::V2 { .. } => return None,
            // The other encodings: every shard of the array, filtered afterwards.
            _ => return Some(self.prefix.as_str().to_owned()),
        };
        if indices.len() >= self.rank() {
            return None;
        }
        let mut out = format!("{}{head}", self.prefix.as_str());
        for (segment, n) in indices.iter().zip(&self.chunks_per_shard) {
            let canonical = !segment.is_empty()
                && segment.bytes().all(|b| b.is_ascii_digit())
                && (*segment == "0" || !segment.starts_with('0'));
            let index: u64 = segment.parse().ok().filter(|_| canonical)?;
            out.push_str(&(index / n).to_string());
            out.push('/');
        }
        Some(out)
    }

    async fn list_prefix_impl(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        let array = self.prefix.as_str();
        let p = prefix.as_str();
        let mut listed: Vec<StoreKey> = Vec::new();
        if array.starts_with(p) || !p.starts_with(array) {
            listed = self.inner.list_prefix(prefix).await?;
        } else {
            // Below the array's prefix: shards under the translated prefix, other keys under
            // the prefix itself.
            let rel = &p[array.len()..];
            let below = self.inner.list_prefix(prefix).await?;
            listed.extend(below.into_iter().filter(|k| self.grid_indices(k).is_none()));
            if let Some(shard_prefix) = self.shard_prefix(rel) {
                let shard_prefix = StorePrefix::try_new(shard_prefix)?;
                listed.extend(self.inner.list_prefix(&shard_prefix).await?);
            }
        }
        let (shard_keys, other): (Vec<StoreKey>, Vec<StoreKey>) = listed
            .into_iter()
            .partition(|k| self.grid_indices(k).is_some());
        let shard_keys: Vec<StoreKey> = shard_keys
            .into_iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let indexes = self.read_indexes(&shard_keys).await?;
        let mut out: BTreeSet<StoreKey> =
            other.into_iter().filter(|k| k.has_prefix(prefix)).collect();
        for (shard_key, index) in shard_keys.iter().zip(indexes) {
            let Some(index) = index else { continue };
            let shard = self.grid_indices(shard_key).unwrap_or_default();
            for (linear, _) in index.present() {
                let key = self.chunk_key(&shard, linear)?;
                if key.has_prefix(prefix) {
                    out.insert(key);
                }
            }
        }
        Ok(out.into_iter().collect())
    }
}

/// Write `writes` into a chunk value (missing = empty), extending with zeros as needed.
fn patch_value(old: Option<Bytes>, writes: &[(u64, Bytes)], key: &StoreKey) -> Result<Bytes> {
    let mut value = old.map(|b| b.to_vec()).unwrap_or_default();
    for (start, bytes) in writes {
        if bytes.is_empty() {
            continue;
        }
        let end = start
            .checked_add(bytes.len() as u64)
            .and_then(|e| usize::try_from(e).ok())
            .ok_or_else(|| zarr_store::Error::TooLarge {
                what: "partial write end",
                value: start.saturating_add(bytes.len() as u64),
                key: Some(key.clone()),
            })?;
        let start = end - bytes.len();
        if value.len() < end {
            value.resize(end, 0);
        }
        value[start..end].copy_from_slice(bytes);
    }
    Ok(Bytes::from(value))
}

/// Refuse overlapping writes to one key, as the store contract requires, before writing.
fn check_overlaps(writes: &[(StoreKey, u64, Bytes)]) -> zarr_store::Result<()> {
    let mut by_key: BTreeMap<&StoreKey, Vec<(u64, u64)>> = BTreeMap::new();
    for (key, start, bytes) in writes {
        if bytes.is_empty() {
            continue;
        }
        let end = start.saturating_add(bytes.len() as u64);
        by_key.entry(key).or_default().push((*start, end));
    }
    for (key, mut ranges) in by_key {
        ranges.sort_unstable();
        for pair in ranges.windows(2) {
            if pair[1].0 < pair[0].1 {
                return Err(zarr_store::Error::OverlappingWrites {
                    key: key.clone(),
                    first_start: pair[0].0,
                    first_end: pair[0].1,
                    second_start: pair[1].0,
                    second_end: pair[1].1,
                });
            }
        }
    }
    Ok(())
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<S: ReadableStore + ?Sized> ReadableStore for ShardingTransformer<S>
where
    S: fmt::Debug,
{
    async fn get(&self, key: &StoreKey) -> zarr_store::Result<Option<Bytes>> {
        if self.shard_of(key).is_none() {
            return self.inner.get(key).await;
        }
        let mut values = self
            .get_partial_values_impl(&[(key.clone(), ByteRange::FULL)])
            .await?;
        Ok(values.pop().flatten())
    }

    async fn size(&self, key: &StoreKey) -> zarr_store::Result<Option<u64>> {
        let Some((shard, linear)) = self.shard_of(key) else {
            return self.inner.size(key).await;
        };
        let index = self.read_indexes(std::slice::from_ref(&shard)).await?;
        Ok(index
            .into_iter()
            .next()
            .flatten()
            .and_then(|index| index.chunk_range(linear))
            .map(|r| r.end - r.start))
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, ByteRange)],
    ) -> zarr_store::Result<Vec<Option<Bytes>>> {
        Ok(self.get_partial_values_impl(key_ranges).await?)
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<S: WritableStore + ListableStore + ?Sized> WritableStore for ShardingTransformer<S>
where
    S: fmt::Debug,
{
    async fn set(&self, key: &StoreKey, value: Bytes) -> zarr_store::Result<()> {
        Ok(self.set_values(&[(key.clone(), value)]).await?)
    }

    async fn set_partial_values(
        &self,
        key_start_values: &[(StoreKey, u64, Bytes)],
    ) -> zarr_store::Result<()> {
        check_overlaps(key_start_values)?;
        let mut patches: BTreeMap<StoreKey, Vec<(u64, Bytes)>> = BTreeMap::new();
        for (key, start, bytes) in key_start_values {
            patches
                .entry(key.clone())
                .or_default()
                .push((*start, bytes.clone()));
        }
        let (chunks, other) = self.group(
            patches
                .into_iter()
                .map(|(k, writes)| (k, Change::Patch(writes))),
        );
        let other: Vec<(StoreKey, u64, Bytes)> = other
            .into_iter()
            .flat_map(|(key, change)| match change {
                Change::Patch(writes) => writes
                    .into_iter()
                    .map(|(s, b)| (key.clone(), s, b))
                    .collect::<Vec<_>>(),
                Change::Set(_) | Change::Erase => Vec::new(),
            })
            .collect();
        if !other.is_empty() {
            self.inner.set_partial_values(&other).await?;
        }
        Ok(self.apply(chunks).await?)
    }

    async fn erase(&self, key: &StoreKey) -> zarr_store::Result<()> {
        Ok(self.erase_values_impl(std::slice::from_ref(key)).await?)
    }

    async fn erase_values(&self, keys: &[StoreKey]) -> zarr_store::Result<()> {
        Ok(self.erase_values_impl(keys).await?)
    }

    async fn erase_prefix(&self, prefix: &StorePrefix) -> zarr_store::Result<()> {
        Ok(self.erase_prefix_impl(prefix).await?)
    }
}

/// Listing reads indexes, so the store below must be readable too. (Erasing a prefix below the
/// array lists it, so the [`WritableStore`] implementation needs a listable store as well.)
#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<S: ListableStore + ReadableStore + ?Sized> ListableStore for ShardingTransformer<S>
where
    S: fmt::Debug,
{
    async fn list(&self) -> zarr_store::Result<Vec<StoreKey>> {
        Ok(self.list_prefix_impl(&StorePrefix::root()).await?)
    }

    async fn list_prefix(&self, prefix: &StorePrefix) -> zarr_store::Result<Vec<StoreKey>> {
        Ok(self.list_prefix_impl(prefix).await?)
    }

    async fn list_dir(&self, prefix: &StorePrefix) -> zarr_store::Result<ListDir> {
        zarr_store::fallback::list_dir_from_list_prefix(self, prefix).await
    }
}
