//! A small pool of read buffers for [`FilesystemStore`](crate::FilesystemStore).
//!
//! Reading a chunk file into a fresh allocation costs page faults (and, with glibc, the
//! buffer is often returned to the kernel when freed, so the next one faults again): a
//! quarter of the CPU time of reading uncompressed chunks from the page cache went there.
//! Buffers handed out as [`Bytes`] come back here when the last `Bytes` pointing into them
//! is dropped, and the next read of a similar size reuses them, already mapped.

use std::collections::TryReserveError;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use bytes::Bytes;

/// Buffers larger than this are not kept: a whole-array read of a sharded array would keep
/// shard-sized buffers idle (raising its peak memory), and glibc already reuses such large
/// blocks once one has been freed (its mmap threshold rises).
const MAX_BUFFER: usize = 4 << 20;
/// Buffers smaller than this are not worth pooling (the allocator serves them well).
const MIN_BUFFER: usize = 64 << 10;

/// `capacity` rounded up to a multiple of an eighth of the power of two at or above it (so
/// at most 12.5% more), for capacities the pool keeps.
fn size_class(capacity: usize) -> usize {
    let step = (capacity.next_power_of_two() / 8).max(1);
    capacity.div_ceil(step).saturating_mul(step).min(MAX_BUFFER)
}

#[derive(Debug)]
pub(crate) struct BufferPool {
    /// Idle buffers (their lengths: what their last use initialized) and their total capacity.
    idle: Mutex<(Vec<Vec<u8>>, usize)>,
    /// The most capacity kept idle.
    max_idle: usize,
}

impl BufferPool {
    pub(crate) fn new(max_idle: usize) -> Arc<Self> {
        Arc::new(Self {
            idle: Mutex::new((Vec::new(), 0)),
            max_idle,
        })
    }

    /// An empty buffer with room for `capacity` bytes: an idle one of at least that capacity
    /// (and not more than twice it) if there is one, else a new one. A new buffer of a size the
    /// pool keeps gets the capacity of its size class (`capacity` rounded up by at most an
    /// eighth), so that reads of similar sizes reuse each other's buffers instead of each
    /// leaving one more idle buffer behind.
    ///
    /// # Errors
    /// When the allocation fails.
    pub(crate) fn take(&self, capacity: usize) -> Result<Vec<u8>, TryReserveError> {
        let mut buffer = self.take_any(capacity)?;
        buffer.clear();
        Ok(buffer)
    }

    /// A buffer of exactly `len` bytes whose contents are unspecified (zeros, or what an
    /// earlier use left), for a caller that overwrites all of them: unlike
    /// `take(len)` followed by `resize(len, 0)`, a reused buffer is not zeroed again
    /// (copying an uncompressed chunk file spent 5% of its time there).
    ///
    /// # Errors
    /// When the allocation fails.
    pub(crate) fn take_filled(&self, len: usize) -> Result<Vec<u8>, TryReserveError> {
        let mut buffer = self.take_any(len)?;
        if buffer.len() >= len {
            buffer.truncate(len);
        } else {
            buffer.resize(len, 0);
        }
        Ok(buffer)
    }

    /// An idle buffer with room for `capacity` bytes, or a new empty one; an idle buffer
    /// keeps the initialized length its last use left.
    fn take_any(&self, capacity: usize) -> Result<Vec<u8>, TryReserveError> {
        let mut buffer = Vec::new();
        if !(MIN_BUFFER..=MAX_BUFFER).contains(&capacity) {
            buffer.try_reserve_exact(capacity)?;
            return Ok(buffer);
        }
        {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            let (buffers, held) = &mut *idle;
            if let Some(i) = buffers
                .iter()
                .position(|b| b.capacity() >= capacity && b.capacity() / 2 <= capacity)
            {
                let buffer = buffers.swap_remove(i);
                *held -= buffer.capacity();
                return Ok(buffer);
            }
        }
        buffer.try_reserve_exact(size_class(capacity))?;
        Ok(buffer)
    }

    pub(crate) fn give(&self, buffer: Vec<u8>) {
        let capacity = buffer.capacity();
        if !(MIN_BUFFER..=MAX_BUFFER).contains(&capacity) {
            return;
        }
        // The contents stay: `take_filled` reuses them as initialized memory.
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let (buffers, held) = &mut *idle;
        if *held + capacity <= self.max_idle {
            *held += capacity;
            buffers.push(buffer);
        }
    }

    /// `buffer` as [`Bytes`] without a copy; it returns to `pool` when the last `Bytes` using
    /// it is dropped.
    pub(crate) fn bytes(pool: &Arc<Self>, buffer: Vec<u8>) -> Bytes {
        if !(MIN_BUFFER..=MAX_BUFFER).contains(&buffer.capacity()) {
            return Bytes::from(buffer);
        }
        Bytes::from_owner(Pooled {
            buffer,
            pool: Arc::downgrade(pool),
        })
    }
}

/// A pooled buffer owned by `Bytes`.
struct Pooled {
    buffer: Vec<u8>,
    pool: Weak<BufferPool>,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.buffer
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.upgrade() {
            pool.give(std::mem::take(&mut self.buffer));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Idle bytes held by `pool`.
    fn held(pool: &BufferPool) -> usize {
        pool.idle.lock().unwrap().1
    }

    #[test]
    fn buffers_come_back_when_their_bytes_are_dropped() {
        let pool = BufferPool::new(1 << 20);
        let mut buffer = Vec::with_capacity(100_000);
        buffer.extend_from_slice(&[7u8; 100_000]);
        let ptr = buffer.as_ptr();
        let bytes = BufferPool::bytes(&pool, buffer);
        let slice = bytes.slice(10..20);
        drop(bytes);
        assert_eq!(held(&pool), 0, "a slice still uses it");
        assert_eq!(&slice[..], &[7u8; 10]);
        drop(slice);
        assert_eq!(held(&pool), 100_000, "returned to the pool");
        let again = pool.take(90_000).unwrap();
        assert_eq!(again.as_ptr(), ptr);
        assert!(again.is_empty());
        assert_eq!(held(&pool), 0);
        // Too small a request for that buffer (it would waste more than half), too large.
        pool.give(again);
        let small = pool.take(40_000).unwrap();
        let large = pool.take(200_000).unwrap();
        assert_eq!(held(&pool), 100_000, "neither came from the pool");
        assert!(small.capacity() >= 40_000 && large.capacity() >= 200_000);
        let fits = pool.take(90_000).unwrap();
        assert_eq!(fits.as_ptr(), ptr);
    }

    #[test]
    fn filled_buffers_reuse_initialized_bytes_and_zero_only_new_ones() {
        let pool = BufferPool::new(1 << 20);
        let fresh = pool.take_filled(100_000).unwrap();
        assert_eq!(fresh.len(), 100_000);
        assert!(fresh.iter().all(|&b| b == 0), "new memory is zeroed");
        let ptr = fresh.as_ptr();
        let mut used = fresh;
        used.fill(9);
        pool.give(used);
        // Shorter: the old bytes are kept, not zeroed again.
        let shorter = pool.take_filled(90_000).unwrap();
        assert_eq!(shorter.as_ptr(), ptr);
        assert_eq!(shorter.len(), 90_000);
        assert!(shorter.iter().all(|&b| b == 9));
        pool.give(shorter);
        // Longer (within the capacity): only the bytes past the old length are zeroed.
        let longer = pool.take_filled(110_000).unwrap();
        assert_eq!(longer.as_ptr(), ptr);
        assert!(longer[..90_000].iter().all(|&b| b == 9));
        assert!(longer[90_000..].iter().all(|&b| b == 0));
        pool.give(longer);
        // `take` still hands out an empty buffer.
        assert!(pool.take(100_000).unwrap().is_empty());
    }

    #[test]
    fn new_buffers_get_the_capacity_of_their_size_class() {
        let pool = BufferPool::new(8 << 20);
        // Reads of slightly different sizes share one buffer: 1.20 to 1.25 MiB are one class.
        let first = pool.take(1_260_000).unwrap();
        assert_eq!(first.capacity(), 1_310_720);
        let ptr = first.as_ptr();
        pool.give(first);
        let second = pool.take(1_300_000).unwrap();
        assert_eq!(second.as_ptr(), ptr);
        assert_eq!(size_class(MIN_BUFFER), MIN_BUFFER);
        assert_eq!(size_class(MAX_BUFFER - 1), MAX_BUFFER);
        assert_eq!(size_class(100_000), 114_688);
        // Sizes the pool does not keep are allocated exactly.
        assert_eq!(pool.take(100).unwrap().capacity(), 100);
        assert_eq!(
            pool.take(MAX_BUFFER + 1).unwrap().capacity(),
            MAX_BUFFER + 1
        );
    }

    #[test]
    fn the_pool_keeps_at_most_its_limit() {
        let pool = BufferPool::new(200_000);
        for _ in 0..3 {
            pool.give(Vec::with_capacity(100_000));
        }
        assert_eq!(held(&pool), 200_000);
        // Tiny and huge buffers are never kept.
        pool.give(Vec::with_capacity(10));
        assert_eq!(held(&pool), 200_000);
    }
}
