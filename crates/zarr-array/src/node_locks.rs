//! In-process locks of nodes' metadata documents, so that handles updating one node's
//! metadata at the same time (attributes, a resize, an append) or one group's consolidated
//! record each read, change and write back the document in turn instead of writing back
//! what they read before the other's write.
//!
//! Keyed exactly by the store's address and the node's path (not striped: an update takes
//! the lock of its node and then those of the records above it, which stripes could map
//! onto one lock). Two kinds, taken in this order and never the other way:
//! - [`Kind::Node`]: held by an operation changing the node's own metadata, for its whole
//!   length (an append holds it while it writes the chunks, so appends through different
//!   handles in one process run one after the other). An operation takes one.
//! - [`Kind::Record`]: held while a group's consolidated record (a v3 group's `zarr.json`,
//!   a v2 `.zmetadata`) is read, changed and written. Nothing else is taken while one is
//!   held, and one is taken at a time.
//!
//! Chunk locks ([`crate::write`]) may be taken while a node lock is held, never the other
//! way round.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use tokio::sync::OwnedMutexGuard;
use zarr_core::NodePath;

/// Which document of a node a lock guards (see the module docs for the order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// The node's own metadata.
    Node,
    /// The consolidated record the group holds.
    Record,
}

type Key = (usize, String, Kind);

struct Table {
    locks: HashMap<Key, Weak<tokio::sync::Mutex<()>>>,
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

/// Take the `kind` lock of the node at `path` in `store` (by address).
pub(crate) async fn lock<S: ?Sized>(store: &S, path: &NodePath, kind: Kind) -> OwnedMutexGuard<()> {
    let key = (
        std::ptr::from_ref(store).cast::<()>() as usize,
        path.as_str().to_owned(),
        kind,
    );
    let mutex = {
        // A panic elsewhere while the table was held leaves it usable: entries are only
        // added and swept.
        let mut table = table()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match table.locks.get(&key).and_then(Weak::upgrade) {
            Some(mutex) => mutex,
            None => {
                let mutex = Arc::new(tokio::sync::Mutex::new(()));
                table.locks.insert(key, Arc::downgrade(&mutex));
                // Sweep once the table has doubled since the last sweep, so that it stays
                // within twice the locks in use, at a constant cost per insert.
                if table.locks.len() > 2 * table.swept_at.max(64) {
                    table.locks.retain(|_, lock| lock.strong_count() > 0);
                    table.swept_at = table.locks.len();
                }
                mutex
            }
        }
    };
    mutex.lock_owned().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_lock_per_store_path_and_kind() {
        let (a, b) = (1u8, 2u8);
        let path = NodePath::new("/x").unwrap();
        let held = lock(&a, &path, Kind::Node).await;
        // Other stores, paths and kinds are free.
        let _other_store = lock(&b, &path, Kind::Node).await;
        let _other_path = lock(&a, &NodePath::new("/y").unwrap(), Kind::Node).await;
        let _record = lock(&a, &path, Kind::Record).await;
        // The same one waits until released.
        let waiting = lock(&a, &path, Kind::Node);
        tokio::pin!(waiting);
        assert!(futures::poll!(waiting.as_mut()).is_pending());
        drop(held);
        let _again = waiting.await;
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
        let table = table().lock().unwrap();
        assert!(
            table.locks.len() <= 2 * table.swept_at.max(64) + 1,
            "{}",
            table.locks.len()
        );
    }
}
