//! The shard index: one `(offset, nbytes)` pair of `u64` per inner chunk, in C order.

use std::ops::Range;

use crate::error::{Error, Result, ShardName};

/// The value of both `offset` and `nbytes` of an inner chunk that is not stored (it reads as
/// the fill value).
pub const EMPTY_ENTRY: u64 = u64::MAX;

/// The decoded index of a shard: for each inner chunk, in C order of the inner chunk grid, the
/// byte range of its encoded data within the shard, or nothing (the chunk is empty and reads
/// as the fill value).
///
/// The same structure serves the `sharding_indexed` codec and the sharding storage
/// transformer; only the index's encoding differs (the codec runs it through `index_codecs`,
/// the transformer stores plain little-endian `u64`s).
///
/// An index built from stored bytes is checked by [`ShardIndex::validate`]: every entry lies
/// inside the shard, `offset + nbytes` does not overflow, and no entry overlaps the index's
/// own bytes. Entries may come in any order, leave gaps, and even share bytes (nothing in the
/// format forbids two chunks with identical encodings from pointing at one copy).
///
/// ```
/// use zarr_sharding::ShardIndex;
///
/// // A shard of 2x2 inner chunks; chunk (0,1) holds 4 bytes at offset 0, the rest are empty.
/// let mut index = ShardIndex::new_empty(&[2, 2])?;
/// index.set(1, Some(0..4));
/// assert_eq!(index.chunk_range(1), Some(0..4));
/// assert_eq!(index.chunk_range(0), None);
/// assert_eq!(index.linear_index(&[0, 1]), Some(1));
/// // Bytes 0..4 hold the chunk, 4..68 the index: valid.
/// index.validate(None, Some(68), Some(4..68))?;
/// // A 3-byte shard cannot hold the chunk.
/// assert!(index.validate(None, Some(3), None).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardIndex {
    chunks_per_shard: Vec<u64>,
    /// `2 * n` values: offset, nbytes, offset, nbytes, ...
    entries: Vec<u64>,
}

impl ShardIndex {
    /// An index in which every inner chunk is empty.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] if the number of inner chunks does not fit in memory.
    pub fn new_empty(chunks_per_shard: &[u64]) -> Result<Self> {
        let n = chunk_count(chunks_per_shard)?;
        Ok(Self {
            chunks_per_shard: chunks_per_shard.to_vec(),
            entries: vec![EMPTY_ENTRY; 2 * n],
        })
    }

    /// An index from decoded entries: `offset, nbytes` for each inner chunk in C order (the
    /// `u64` array of shape `chunks_per_shard + [2]` of the specification), not yet validated.
    ///
    /// # Errors
    /// [`Error::InvalidConfiguration`] if the number of values is not twice the number of inner
    /// chunks.
    pub fn from_entries(chunks_per_shard: &[u64], entries: Vec<u64>) -> Result<Self> {
        let n = chunk_count(chunks_per_shard)?;
        if entries.len() != 2 * n {
            return Err(Error::InvalidConfiguration {
                field: "index".into(),
                reason: format!(
                    "{} index values for {n} inner chunks (expected {})",
                    entries.len(),
                    2 * n
                ),
            });
        }
        Ok(Self {
            chunks_per_shard: chunks_per_shard.to_vec(),
            entries,
        })
    }

    /// Parse the plain little-endian form (16 bytes per inner chunk, no checksum) that the
    /// storage transformer stores, and that `index_codecs = [bytes little]` produces.
    ///
    /// # Errors
    /// [`Error::IndexDecode`] (naming `shard`) if `bytes` has the wrong length.
    pub fn from_le_bytes(
        chunks_per_shard: &[u64],
        bytes: &[u8],
        shard: Option<&zarr_store::StoreKey>,
    ) -> Result<Self> {
        let n = chunk_count(chunks_per_shard)?;
        if bytes.len() as u64 != 16 * n as u64 {
            return Err(Error::IndexDecode {
                shard: ShardName::from(shard),
                source: Box::new(zarr_codecs::Error::DecodedSizeMismatch {
                    codec: "bytes".into(),
                    expected: (16 * n as u64).to_string(),
                    found: bytes.len() as u64,
                }),
            });
        }
        let entries = bytes
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0xff; 8])))
            .collect();
        Self::from_entries(chunks_per_shard, entries)
    }

    /// The plain little-endian form: 16 bytes per inner chunk.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        self.entries.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// The entries as native-endian bytes (the decoded form an index codec chain encodes).
    pub(crate) fn to_ne_bytes(&self) -> Vec<u8> {
        self.entries.iter().flat_map(|v| v.to_ne_bytes()).collect()
    }

    /// The raw entries: `offset, nbytes` per inner chunk in C order.
    pub fn entries(&self) -> &[u64] {
        &self.entries
    }

    /// The number of inner chunks along each dimension.
    pub fn chunks_per_shard(&self) -> &[u64] {
        &self.chunks_per_shard
    }

    /// The number of inner chunks.
    pub fn len(&self) -> usize {
        self.entries.len() / 2
    }

    /// Whether the shard has no inner chunks at all (some dimension has zero chunks).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether every inner chunk is empty (the shard need not be stored).
    pub fn is_all_empty(&self) -> bool {
        self.entries.iter().all(|&v| v == EMPTY_ENTRY)
    }

    /// The byte range of inner chunk `linear` (its position in C order) within the shard, or
    /// `None` if it is empty or `linear` is out of range. An entry is empty only when both
    /// values are 2^64-1; other entries are returned as they are, `offset + nbytes` saturating
    /// (call [`validate`](Self::validate) first to rule out bad entries).
    pub fn chunk_range(&self, linear: usize) -> Option<Range<u64>> {
        let offset = *self.entries.get(2 * linear)?;
        let nbytes = *self.entries.get(2 * linear + 1)?;
        if offset == EMPTY_ENTRY && nbytes == EMPTY_ENTRY {
            None
        } else {
            Some(offset..offset.saturating_add(nbytes))
        }
    }

    /// Set inner chunk `linear`'s byte range (`None` marks it empty). Out-of-range positions
    /// are ignored.
    pub fn set(&mut self, linear: usize, range: Option<Range<u64>>) {
        if 2 * linear + 1 >= self.entries.len() {
            return;
        }
        let (offset, nbytes) = match range {
            Some(r) => (r.start, r.end.saturating_sub(r.start)),
            None => (EMPTY_ENTRY, EMPTY_ENTRY),
        };
        self.entries[2 * linear] = offset;
        self.entries[2 * linear + 1] = nbytes;
    }

    /// The position in C order of the inner chunk at `indices`, or `None` if they lie outside
    /// the shard or have the wrong rank.
    pub fn linear_index(&self, indices: &[u64]) -> Option<usize> {
        linear_index(&self.chunks_per_shard, indices)
    }

    /// The indices of the inner chunk at position `linear` in C order.
    pub fn chunk_indices(&self, linear: usize) -> Vec<u64> {
        chunk_indices(&self.chunks_per_shard, linear)
    }

    /// The non-empty inner chunks: position in C order and byte range.
    pub fn present(&self) -> impl Iterator<Item = (usize, Range<u64>)> + '_ {
        (0..self.len()).filter_map(|i| self.chunk_range(i).map(|r| (i, r)))
    }

    /// Check every entry: an entry is empty (both values 2^64-1) or neither value is 2^64-1,
    /// `offset + nbytes` does not overflow, ends within `shard_size` (when known), and does
    /// not overlap `index` (the bytes of the index within the shard, when known).
    ///
    /// # Errors
    /// [`Error::EntryOutOfBounds`] or [`Error::EntryOverlapsIndex`] naming `shard` and the
    /// first bad inner chunk.
    pub fn validate(
        &self,
        shard: Option<&zarr_store::StoreKey>,
        shard_size: Option<u64>,
        index: Option<Range<u64>>,
    ) -> Result<()> {
        for i in 0..self.len() {
            let (offset, nbytes) = (self.entries[2 * i], self.entries[2 * i + 1]);
            if offset == EMPTY_ENTRY && nbytes == EMPTY_ENTRY {
                continue;
            }
            let end = offset.checked_add(nbytes);
            let outside = match (end, shard_size) {
                // Half an empty marker (`(2^64-1, 0)`, `(0, 2^64-1)`): no shard reaches that
                // far, whether or not its size is known.
                _ if offset == EMPTY_ENTRY || nbytes == EMPTY_ENTRY => true,
                (None, _) => true,
                (Some(end), Some(size)) => end > size,
                (Some(_), None) => false,
            };
            if outside {
                return Err(Error::EntryOutOfBounds {
                    shard: shard.into(),
                    chunk: self.chunk_indices(i),
                    offset,
                    nbytes,
                    shard_size: end.and(shard_size),
                });
            }
            if let (Some(end), Some(index)) = (end, index.as_ref())
                && nbytes > 0
                && offset < index.end
                && index.start < end
            {
                return Err(Error::EntryOverlapsIndex {
                    shard: shard.into(),
                    chunk: self.chunk_indices(i),
                    offset,
                    nbytes,
                    index: index.clone(),
                });
            }
        }
        Ok(())
    }
}

/// The number of inner chunks, as a `usize` that also leaves room for `2 * n` entries.
pub(crate) fn chunk_count(chunks_per_shard: &[u64]) -> Result<usize> {
    chunks_per_shard
        .iter()
        .try_fold(1u64, |acc, &n| acc.checked_mul(n))
        .and_then(|n| n.checked_mul(16))
        .and_then(|b| usize::try_from(b).ok())
        .map(|b| b / 16)
        .ok_or_else(|| Error::InvalidConfiguration {
            field: "chunks_per_shard".into(),
            reason: format!("{chunks_per_shard:?} inner chunks per shard do not fit in memory"),
        })
}

/// C-order position of `indices` in a grid of `counts`.
pub(crate) fn linear_index(counts: &[u64], indices: &[u64]) -> Option<usize> {
    usize::try_from(zarr_core::ravel_index(indices, counts)?).ok()
}

/// The indices of C-order position `linear` in a grid of `counts` (all zeros past its end).
pub(crate) fn chunk_indices(counts: &[u64], linear: usize) -> Vec<u64> {
    zarr_core::unravel_index(linear as u64, counts).unwrap_or_else(|| vec![0; counts.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_round_trip() {
        let counts = [3u64, 1, 4];
        for linear in 0..12 {
            let idx = chunk_indices(&counts, linear);
            assert_eq!(linear_index(&counts, &idx), Some(linear));
        }
        assert_eq!(linear_index(&counts, &[3, 0, 0]), None);
        assert_eq!(linear_index(&counts, &[0, 0]), None);
        assert_eq!(linear_index(&[], &[]), Some(0));
    }

    #[test]
    fn validation_names_the_chunk() {
        let mut index = ShardIndex::new_empty(&[2, 2]).unwrap();
        index.set(3, Some(10..20));
        assert!(index.validate(None, Some(20), Some(20..84)).is_ok());
        match index.validate(None, Some(19), None).unwrap_err() {
            Error::EntryOutOfBounds { chunk, .. } => assert_eq!(chunk, vec![1, 1]),
            e => panic!("{e}"),
        }
        match index.validate(None, Some(100), Some(15..79)).unwrap_err() {
            Error::EntryOverlapsIndex { chunk, .. } => assert_eq!(chunk, vec![1, 1]),
            e => panic!("{e}"),
        }
        let overflowing = ShardIndex::from_entries(&[1], vec![u64::MAX - 1, 2]).unwrap();
        assert!(matches!(
            overflowing.validate(None, None, None),
            Err(Error::EntryOutOfBounds {
                shard_size: None,
                ..
            })
        ));
        // Half-empty entries are not empty: offset 2^64-1 with nbytes 0 lies outside any shard.
        // So is either half of the marker, whether the shard's size is known or not.
        for entries in [vec![u64::MAX, 0], vec![0, u64::MAX], vec![u64::MAX, 5]] {
            let half = ShardIndex::from_entries(&[1], entries).unwrap();
            for size in [Some(100), None] {
                assert!(matches!(
                    half.validate(None, size, None),
                    Err(Error::EntryOutOfBounds { .. })
                ));
            }
        }
    }

    #[test]
    fn le_bytes_round_trip() {
        let mut index = ShardIndex::new_empty(&[3]).unwrap();
        index.set(1, Some(5..9));
        let bytes = index.to_le_bytes();
        assert_eq!(bytes.len(), 48);
        assert_eq!(
            ShardIndex::from_le_bytes(&[3], &bytes, None).unwrap(),
            index
        );
        assert!(ShardIndex::from_le_bytes(&[3], &bytes[1..], None).is_err());
    }
}
