//! Default implementations of the batch and partial operations, in terms of the basic ones.
//!
//! The store traits use these as their default methods. They are public so that a backend
//! overriding a method for some cases can still defer to the generic behaviour for others.

use std::collections::{BTreeSet, HashMap};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use crate::{
    ByteRange, Error, ListDir, ListableStore, ReadableStore, Result, StoreKey, StorePrefix,
    WritableStore,
};

/// How many whole-value reads or erases the fallbacks keep in flight.
const CONCURRENCY: usize = 16;

/// Answer a `get_partial_values` request by reading each distinct key once, whole, and slicing
/// the ranges out of it without copying.
///
/// # Errors
/// [`Error::RangeOutOfBounds`] naming the key if a range reaches beyond its value, and any error
/// of [`ReadableStore::get`].
pub async fn get_partial_values_by_full_read<S: ReadableStore + ?Sized>(
    store: &S,
    key_ranges: &[(StoreKey, ByteRange)],
) -> Result<Vec<Option<Bytes>>> {
    let (keys, slots) = distinct_keys(key_ranges.iter().map(|(key, _)| key));
    // The futures are built first (they are lazy) so that the stream holds no closure: a
    // closure borrowing `store` would make the future's `Send` bound fail to prove.
    let reads: Vec<_> = keys.iter().map(|key| store.get(key)).collect();
    let values: Vec<Option<Bytes>> = futures::stream::iter(reads)
        .buffered(CONCURRENCY)
        .try_collect()
        .await?;
    key_ranges
        .iter()
        .zip(slots)
        .map(|((key, range), slot)| match &values[slot] {
            None => Ok(None),
            Some(value) => range.slice(value).map(Some).map_err(|e| e.with_key(key)),
        })
        .collect()
}

/// The distinct keys of `keys` in first-seen order, and for each input the index of its key.
pub(crate) fn distinct_keys<'a>(
    keys: impl Iterator<Item = &'a StoreKey>,
) -> (Vec<&'a StoreKey>, Vec<usize>) {
    let mut distinct = Vec::new();
    let mut index: HashMap<&StoreKey, usize> = HashMap::new();
    let slots = keys
        .map(|key| {
            *index.entry(key).or_insert_with(|| {
                distinct.push(key);
                distinct.len() - 1
            })
        })
        .collect();
    (distinct, slots)
}

/// A `get_partial_values` request grouped by value: the distinct keys in first-seen order,
/// the ranges asked of each (in request order), and for each request the index of its key.
pub(crate) struct RangesByKey<'a> {
    pub(crate) keys: Vec<&'a StoreKey>,
    pub(crate) ranges: Vec<Vec<ByteRange>>,
    pub(crate) slots: Vec<usize>,
}

/// Group `key_ranges` by key, so a backend reads each value once for all of its ranges.
pub(crate) fn ranges_by_key(key_ranges: &[(StoreKey, ByteRange)]) -> RangesByKey<'_> {
    let (keys, slots) = distinct_keys(key_ranges.iter().map(|(key, _)| key));
    let mut ranges: Vec<Vec<ByteRange>> = vec![Vec::new(); keys.len()];
    for ((_, range), &slot) in key_ranges.iter().zip(&slots) {
        ranges[slot].push(*range);
    }
    RangesByKey {
        keys,
        ranges,
        slots,
    }
}

/// The writes of a `set_partial_values` call to one key, sorted by offset, empty ones dropped.
#[derive(Debug)]
pub(crate) struct KeyWrites<'a> {
    pub(crate) key: &'a StoreKey,
    /// `(start, end, bytes)`, sorted by `start`, non-overlapping.
    pub(crate) writes: Vec<(u64, u64, &'a Bytes)>,
}

impl KeyWrites<'_> {
    /// The end of the last write.
    pub(crate) fn end(&self) -> u64 {
        self.writes.iter().map(|w| w.1).max().unwrap_or(0)
    }
}

/// Group partial writes per key (in first-seen key order), checking that no two writes to one
/// key overlap and that no end overflows.
pub(crate) fn group_partial_writes(
    key_start_values: &[(StoreKey, u64, Bytes)],
) -> Result<Vec<KeyWrites<'_>>> {
    let (keys, slots) = distinct_keys(key_start_values.iter().map(|(key, _, _)| key));
    let mut groups: Vec<KeyWrites<'_>> = keys
        .into_iter()
        .map(|key| KeyWrites {
            key,
            writes: Vec::new(),
        })
        .collect();
    for ((key, start, bytes), slot) in key_start_values.iter().zip(slots) {
        if bytes.is_empty() {
            continue;
        }
        let end = start
            .checked_add(bytes.len() as u64)
            .ok_or_else(|| Error::TooLarge {
                what: "partial write end",
                value: u64::MAX,
                key: Some(key.clone()),
            })?;
        groups[slot].writes.push((*start, end, bytes));
    }
    for group in &mut groups {
        group.writes.sort_by_key(|w| w.0);
        for pair in group.writes.windows(2) {
            if pair[1].0 < pair[0].1 {
                return Err(Error::OverlappingWrites {
                    key: group.key.clone(),
                    first_start: pair[0].0,
                    first_end: pair[0].1,
                    second_start: pair[1].0,
                    second_end: pair[1].1,
                });
            }
        }
    }
    groups.retain(|group| !group.writes.is_empty());
    Ok(groups)
}

/// Apply `writes` to `old` (a missing value is empty), extending with zeros as needed.
pub(crate) fn patch_value(old: Option<&[u8]>, writes: &KeyWrites<'_>) -> Result<Bytes> {
    let old = old.unwrap_or_default();
    let too_large = |value: u64| Error::TooLarge {
        what: "patched value",
        value,
        key: Some(writes.key.clone()),
    };
    let end = writes.end();
    let new_len = usize::try_from(end)
        .map_err(|_| too_large(end))?
        .max(old.len());
    let mut value = Vec::new();
    value
        .try_reserve_exact(new_len)
        .map_err(|_| too_large(new_len as u64))?;
    value.extend_from_slice(old);
    value.resize(new_len, 0);
    for &(start, end, bytes) in &writes.writes {
        // Both ends are at most `new_len`, which is a usize.
        let start = usize::try_from(start).map_err(|_| too_large(start))?;
        let end = usize::try_from(end).map_err(|_| too_large(end))?;
        value[start..end].copy_from_slice(bytes);
    }
    Ok(Bytes::from(value))
}

/// Apply partial writes by reading each touched value whole, patching it in memory and
/// writing it back with [`WritableStore::set`].
///
/// Not atomic with respect to other writers of the same key.
///
/// # Errors
/// [`Error::OverlappingWrites`] before anything is written, [`Error::TooLarge`], and errors of
/// [`ReadableStore::get`] and [`WritableStore::set`].
pub async fn set_partial_values_by_read_modify_write<S: WritableStore + ?Sized>(
    store: &S,
    key_start_values: &[(StoreKey, u64, Bytes)],
) -> Result<()> {
    for group in group_partial_writes(key_start_values)? {
        let old = store.get(group.key).await?;
        let new = patch_value(old.as_deref(), &group)?;
        store.set(group.key, new).await?;
    }
    Ok(())
}

/// Erase each key with [`WritableStore::erase`], a few at a time.
///
/// # Errors
/// The first error of [`WritableStore::erase`].
pub async fn erase_values_one_by_one<S: WritableStore + ?Sized>(
    store: &S,
    keys: &[StoreKey],
) -> Result<()> {
    let erases: Vec<_> = keys.iter().map(|key| store.erase(key)).collect();
    futures::stream::iter(erases)
        .buffer_unordered(CONCURRENCY)
        .try_collect::<()>()
        .await
}

/// Answer `list_dir` from [`ListableStore::list_prefix`].
///
/// # Errors
/// Errors of [`ListableStore::list_prefix`].
pub async fn list_dir_from_list_prefix<S: ListableStore + ?Sized>(
    store: &S,
    prefix: &StorePrefix,
) -> Result<ListDir> {
    let keys = store.list_prefix(prefix).await?;
    Ok(list_dir_from_keys(prefix, keys))
}

/// Split `keys` (all below `prefix`) into direct children and child prefixes, sorted.
pub(crate) fn list_dir_from_keys(
    prefix: &StorePrefix,
    keys: impl IntoIterator<Item = StoreKey>,
) -> ListDir {
    let mut direct = BTreeSet::new();
    let mut prefixes = BTreeSet::new();
    for key in keys {
        let Some(rest) = key.as_str().strip_prefix(prefix.as_str()) else {
            continue;
        };
        match rest.split_once('/') {
            Some((child, _)) => {
                prefixes.insert(format!("{}{child}/", prefix.as_str()));
            }
            None => {
                direct.insert(key);
            }
        }
    }
    ListDir {
        keys: direct.into_iter().collect(),
        prefixes: prefixes
            .into_iter()
            .filter_map(|p| StorePrefix::try_new(p).ok())
            .collect(),
    }
}
