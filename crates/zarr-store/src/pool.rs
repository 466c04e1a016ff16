//! A small pool of read buffers for [`FilesystemStore`](crate::FilesystemStore).
//!
//! Reading a chunk file into a fresh allocation costs page faults (and, with glibc, the
//! buffer is often returned to the kernel when freed, so the next one faults again): a
//! quarter of the CPU time of reading uncompressed chunks from the page cache went there.
//! Buffers handed out as [`Bytes`] come back here when the last `Bytes` pointing into them
//! is dropped, and the next read of a similar size reuses them, already mapped.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use bytes::Bytes;

/// Buffers larger than this are not kept: a whole-array read of a sharded array would keep
/// shard-sized buffers idle (raising its peak memory), and glibc already reuses such large
/// blocks once one has been freed (its mmap threshold rises).
const MAX_BUFFER: usize = 4 << 20;
/// Buffers smaller than this are not worth pooling (the allocator serves them well).
const MIN_BUFFER: usize = 64 << 10;

#[derive(Debug)]
pub(crate) struct BufferPool {
    /// Idle buffers (empty, with capacity) and their total capacity.
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
    /// (and not more than twice it) if there is one, else `None` (the caller allocates).
    pub(crate) fn take(&self, capacity: usize) -> Option<Vec<u8>> {
        if !(MIN_BUFFER..=MAX_BUFFER).contains(&capacity) {
            return None;
        }
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let (buffers, held) = &mut *idle;
        let i = buffers
            .iter()
            .position(|b| b.capacity() >= capacity && b.capacity() / 2 <= capacity)?;
        let buffer = buffers.swap_remove(i);
        *held -= buffer.capacity();
        Some(buffer)
    }

    pub(crate) fn give(&self, mut buffer: Vec<u8>) {
        let capacity = buffer.capacity();
        if !(MIN_BUFFER..=MAX_BUFFER).contains(&capacity) {
            return;
        }
        buffer.clear();
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

    #[test]
    fn buffers_come_back_when_their_bytes_are_dropped() {
        let pool = BufferPool::new(1 << 20);
        let mut buffer = Vec::with_capacity(100_000);
        buffer.extend_from_slice(&[7u8; 100_000]);
        let ptr = buffer.as_ptr();
        let bytes = BufferPool::bytes(&pool, buffer);
        let slice = bytes.slice(10..20);
        drop(bytes);
        assert!(pool.take(100_000).is_none(), "a slice still uses it");
        assert_eq!(&slice[..], &[7u8; 10]);
        drop(slice);
        let again = pool.take(90_000).expect("returned to the pool");
        assert_eq!(again.as_ptr(), ptr);
        assert!(again.is_empty());
        // Too small a request for that buffer (it would waste more than half), too large.
        pool.give(again);
        assert!(pool.take(40_000).is_none());
        assert!(pool.take(200_000).is_none());
    }

    #[test]
    fn the_pool_keeps_at_most_its_limit() {
        let pool = BufferPool::new(200_000);
        for _ in 0..3 {
            pool.give(Vec::with_capacity(100_000));
        }
        let held = pool.idle.lock().unwrap().1;
        assert_eq!(held, 200_000);
        // Tiny and huge buffers are never kept.
        pool.give(Vec::with_capacity(10));
        assert_eq!(pool.idle.lock().unwrap().1, 200_000);
    }
}
