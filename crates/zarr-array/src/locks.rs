//! In-process locks, keyed exactly by a store's address and a name, so that writers in one
//! process that read, change and write back the same document (a chunk, a shard, a node's
//! metadata, a group's consolidated record) do so in turn instead of writing back what
//! they read before another's write.
//!
//! Exact keys, not stripes: unrelated keys never wait for each other (a slow store of one
//! chunk does not hold up another's), and an operation that takes a node's lock and then
//! the records above it cannot find two of them mapped onto one lock. The kinds, in the
//! order they are taken (never the other way):
//! - [`Kind::Tree`]: a read-write lock over a node and everything below it. Removing or
//!   replacing a node takes its own for writing and those of the groups above it for
//!   reading ([`lock_tree`]); changing a node's metadata takes those of the node and of
//!   every group above it for reading ([`lock_node`]), with the node's lock. Either takes
//!   them along the path, root first, so no two operations wait for each other in a
//!   cycle. So a removal waits for the changes
//!   in flight below it, and a change after it finds the node gone instead of writing
//!   chunks or metadata back under a removed prefix.
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

use tokio::sync::{OwnedMutexGuard, OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};
use zarr_core::NodePath;

/// Which document a lock guards (see the module docs for the order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Kind {
    /// A node and everything below it (a read-write lock).
    Tree,
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
        entry(&MUTEXES, self)
    }

    fn rw_lock(&self) -> Arc<RwLock<()>> {
        entry(&RW_LOCKS, self)
    }
}

static MUTEXES: OnceLock<Mutex<Table<tokio::sync::Mutex<()>>>> = OnceLock::new();
static RW_LOCKS: OnceLock<Mutex<Table<RwLock<()>>>> = OnceLock::new();

/// The locks of one type in use: each held by its guards and waiters, and by no one once
/// they are gone.
struct Table<L> {
    locks: HashMap<LockKey, Weak<L>>,
    /// Entries after the last sweep of those no longer in use.
    swept_at: usize,
}

/// The lock of `key` in `table`, made if none is in use.
fn entry<L: Default>(table: &'static OnceLock<Mutex<Table<L>>>, key: &LockKey) -> Arc<L> {
    let table = table.get_or_init(|| {
        Mutex::new(Table {
            locks: HashMap::new(),
            swept_at: 0,
        })
    });
    // A panic elsewhere while the table was held leaves it usable: entries are only added
    // and swept.
    let mut table = table
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(lock) = table.locks.get(key).and_then(Weak::upgrade) {
        return lock;
    }
    let lock = Arc::new(L::default());
    table.locks.insert(key.clone(), Arc::downgrade(&lock));
    // Sweep once the table has doubled since the last sweep, so that it stays within about
    // twice the locks in use, at a constant cost per insert.
    if table.locks.len() > 2 * table.swept_at.max(64) {
        table.locks.retain(|_, lock| lock.strong_count() > 0);
        table.swept_at = table.locks.len();
    }
    lock
}

/// Take the `kind` lock of the node at `path` in `store`.
pub(crate) async fn lock<S: ?Sized>(store: &S, path: &NodePath, kind: Kind) -> OwnedMutexGuard<()> {
    LockKey::new(store, path.as_str(), kind).lock().await
}

/// Held while a node's metadata changes: shared holds on the [`Kind::Tree`] locks of the
/// node and of every group above it, and the node's [`Kind::Node`] lock.
pub(crate) struct NodeGuard {
    _trees: Vec<OwnedRwLockReadGuard<()>>,
    _node: OwnedMutexGuard<()>,
}

/// Take what an operation changing the metadata of the node at `path` holds (see
/// [`NodeGuard`]).
pub(crate) async fn lock_node<S: ?Sized>(store: &S, path: &NodePath) -> NodeGuard {
    let mut trees = Vec::new();
    for node in path.ancestors().iter().chain(std::iter::once(path)) {
        let key = LockKey::new(store, node.as_str(), Kind::Tree);
        trees.push(key.rw_lock().read_owned().await);
    }
    NodeGuard {
        _trees: trees,
        _node: lock(store, path, Kind::Node).await,
    }
}

/// Held while a node and everything below it are removed or replaced: shared holds on the
/// [`Kind::Tree`] locks of every group above it, and its own for writing.
pub(crate) struct TreeGuard {
    _above: Vec<OwnedRwLockReadGuard<()>>,
    _tree: OwnedRwLockWriteGuard<()>,
}

/// Take what removing or replacing the node at `path` holds (see [`TreeGuard`]). Holding
/// the groups above for reading keeps a removal of one of them from running at the same
/// time (and writing back, say, a consolidated record of a group it erased).
pub(crate) async fn lock_tree<S: ?Sized>(store: &S, path: &NodePath) -> TreeGuard {
    let mut above = Vec::new();
    for node in path.ancestors() {
        let key = LockKey::new(store, node.as_str(), Kind::Tree);
        above.push(key.rw_lock().read_owned().await);
    }
    let tree = LockKey::new(store, path.as_str(), Kind::Tree)
        .rw_lock()
        .write_owned()
        .await;
    TreeGuard {
        _above: above,
        _tree: tree,
    }
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
    async fn a_tree_lock_waits_for_changes_below_it_and_holds_off_new_ones() {
        let store = 4u8;
        let node = |path: &str| NodePath::new(path).unwrap();
        let change = lock_node(&store, &node("/a/b")).await;
        let a = node("/a");
        let removal = lock_tree(&store, &a);
        tokio::pin!(removal);
        assert!(futures::poll!(removal.as_mut()).is_pending());
        // Changes elsewhere are not held up, nor the node's own metadata lock alone.
        let _elsewhere = lock_node(&store, &node("/ab")).await;
        let _sibling = lock_node(&store, &node("/c/b")).await;
        drop(change);
        let removing = removal.await;
        let abc = node("/a/b/c");
        let next = lock_node(&store, &abc);
        tokio::pin!(next);
        assert!(futures::poll!(next.as_mut()).is_pending());
        let _root = lock_node(&store, &node("/")).await;
        drop(removing);
        let _next = next.await;

        // Removals along one path run one at a time, either way round.
        let outer = lock_tree(&store, &node("/x")).await;
        let xy = node("/x/y");
        let inner = lock_tree(&store, &xy);
        tokio::pin!(inner);
        assert!(futures::poll!(inner.as_mut()).is_pending());
        drop(outer);
        let inner = inner.await;
        let x = node("/x");
        let outer = lock_tree(&store, &x);
        tokio::pin!(outer);
        assert!(futures::poll!(outer.as_mut()).is_pending());
        drop(inner);
        let _outer = outer.await;
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
        let table = MUTEXES.get().unwrap().lock().unwrap();
        assert!(table.locks.len() < 200, "{}", table.locks.len());
    }
}
