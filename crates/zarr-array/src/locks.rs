//! In-process locks, keyed exactly by a store's address and a name, so that writers in one
//! process that read, change and write back the same document (a chunk, a shard, a node's
//! metadata, a group's consolidated record) do so in turn instead of writing back what
//! they read before another's write.
//!
//! Exact keys, not stripes: unrelated keys never wait for each other (a slow store of one
//! chunk does not hold up another's), and an operation that takes a node's lock and then
//! the records above it cannot find two of them mapped onto one lock. The kinds, in the
//! order they are taken (never the other way):
//! - [`Kind::Node`]: held by an operation changing the node's own metadata, for its whole
//!   length (an append holds it while it writes the chunks, so appends through different
//!   handles in one process run one after the other). An operation takes one.
//! - [`Kind::Chunk`]: a chunk's (or, through the sharding transformer, a shard's) stored
//!   value. A writer holding several while it waits for another takes all of them at once
//!   in key order ([`lock_all`]); a whole chunk stored alone takes its own around the store
//!   only, holding no other while it waits.
//! - [`Kind::Record`]: held while a group's consolidated record (a v3 group's `zarr.json`,
//!   a v2 `.zmetadata`) is read, changed and written. Nothing else is taken while one is
//!   held, and one is taken at a time.
//!
//! Handles share locks when they share the store instance (clones of one `Arc`); two store
//! instances over one directory or bucket are as two processes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use tokio::sync::OwnedMutexGuard;
use zarr_core::NodePath;

/// Which document a lock guards (see the module docs for the order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Kind {
    /// A node's own metadata.
    Node,
    /// A chunk's (or shard's) stored value.
    Chunk,
    /// The consolidated record a group holds.
    Record,
}

/// One lock: the store's address, the name (a node path or a store key) and the kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct LockKey {
    store: usize,
    name: String,
    kind: Kind,
}

impl LockKey {
    pub(crate) fn new<S: ?Sized>(store: &S, name: &str, kind: Kind) -> Self {
        Self {
            store: std::ptr::from_ref(store).cast::<()>() as usize,
            name: name.to_owned(),
            kind,
        }
    }

    /// Wait for the lock and take it.
    pub(crate) async fn lock(&self) -> OwnedMutexGuard<()> {
        self.mutex().lock_owned().await
    }

    /// The lock, if it is free now.
    pub(crate) fn try_lock(&self) -> Option<OwnedMutexGuard<()>> {
        self.mutex().try_lock_owned().ok()
    }

    fn mutex(&self) -> Arc<tokio::sync::Mutex<()>> {
        // A panic elsewhere while the table was held leaves it usable: entries are only
        // added and swept.
        let mut table = table()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(mutex) = table.locks.get(self).and_then(Weak::upgrade) {
            return mutex;
        }
        let mutex = Arc::new(tokio::sync::Mutex::new(()));
        table.locks.insert(self.clone(), Arc::downgrade(&mutex));
        // Sweep once the table has doubled since the last sweep, so that it stays within
        // about twice the locks in use, at a constant cost per insert.
        if table.locks.len() > 2 * table.swept_at.max(64) {
            table.locks.retain(|_, lock| lock.strong_count() > 0);
            table.swept_at = table.locks.len();
        }
        mutex
    }
}

struct Table {
    locks: HashMap<LockKey, Weak<tokio::sync::Mutex<()>>>,
    /// Entries after the last sweep of those no longer in use.
    swept_at: usize,
}

fn table() -> &'static Mutex<Table> {
    static TABLE: OnceLock<Mutex<Table>> = OnceLock::new();
    TABLE.get_or_init(|| {
        Mutex::new(Table {
            locks: HashMap::new(),
            swept_at: 0,
        })
    })
}

/// Take the `kind` lock of the node at `path` in `store`.
pub(crate) async fn lock<S: ?Sized>(store: &S, path: &NodePath, kind: Kind) -> OwnedMutexGuard<()> {
    LockKey::new(store, path.as_str(), kind).lock().await
}

/// Take every lock of `keys` (each once), in key order, so that writers taking several
/// cannot deadlock.
pub(crate) async fn lock_all(mut keys: Vec<LockKey>) -> Vec<OwnedMutexGuard<()>> {
    keys.sort_unstable();
    keys.dedup();
    let mut guards = Vec::with_capacity(keys.len());
    for key in keys {
        guards.push(key.lock().await);
    }
    guards
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_lock_per_store_name_and_kind() {
        let (a, b) = (1u8, 2u8);
        let path = NodePath::new("/x").unwrap();
        let held = lock(&a, &path, Kind::Node).await;
        // Other stores, names and kinds are free.
        let _other_store = lock(&b, &path, Kind::Node).await;
        let _other_path = lock(&a, &NodePath::new("/y").unwrap(), Kind::Node).await;
        let _record = lock(&a, &path, Kind::Record).await;
        assert!(LockKey::new(&a, "x", Kind::Chunk).try_lock().is_some());
        // The same one waits until released.
        assert!(
            LockKey::new(&a, path.as_str(), Kind::Node)
                .try_lock()
                .is_none()
        );
        let waiting = lock(&a, &path, Kind::Node);
        tokio::pin!(waiting);
        assert!(futures::poll!(waiting.as_mut()).is_pending());
        drop(held);
        let _again = waiting.await;
    }

    #[tokio::test]
    async fn lock_all_takes_each_once() {
        let a = 1u8;
        let keys = ["b", "a", "b", "c"]
            .iter()
            .map(|name| LockKey::new(&a, name, Kind::Chunk))
            .collect();
        let guards = lock_all(keys).await;
        assert_eq!(guards.len(), 3);
        assert!(LockKey::new(&a, "c", Kind::Chunk).try_lock().is_none());
        drop(guards);
        assert!(LockKey::new(&a, "c", Kind::Chunk).try_lock().is_some());
    }

    #[tokio::test]
    async fn unused_locks_are_swept() {
        let store = 3u8;
        for i in 0..1000 {
            let _guard = lock(
                &store,
                &NodePath::new(&format!("/n{i}")).unwrap(),
                Kind::Node,
            )
            .await;
        }
        // Every guard is dropped: the table holds the locks since the last sweep (at most
        // 129 once it starts sweeping at 128) and a few of other tests running beside it.
        let table = table().lock().unwrap();
        assert!(table.locks.len() < 200, "{}", table.locks.len());
    }
}
