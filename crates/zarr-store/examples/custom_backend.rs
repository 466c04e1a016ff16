//! A store backend written outside the crate, as a user would write one, proven with the
//! conformance suite.
//!
//! Run it with `cargo run -p zarr-store --example custom_backend`; the test
//! command (`cargo test`) also runs it as a test.
//!
//! The backend keeps values in a `HashMap` behind a mutex and implements only the required
//! methods. The traits' default methods supply the rest: range reads by slicing a whole value,
//! partial writes by read-modify-write, batch erases one by one, `list` and `list_dir` from
//! `list_prefix`. A real backend (a database, a zip file, a remote service) overrides the
//! defaults it can do better, such as native range reads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;
use zarr_store::{
    ListableStore, ReadableStore, Result, StoreKey, StorePrefix, WritableStore, testing,
};

/// A minimal in-memory backend.
#[derive(Debug, Default)]
pub struct HashMapStore {
    values: Mutex<HashMap<String, Bytes>>,
}

impl HashMapStore {
    fn values(&self) -> MutexGuard<'_, HashMap<String, Bytes>> {
        // No update can be left half-done by a panic, so a poisoned lock is still usable.
        self.values.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl ReadableStore for HashMapStore {
    async fn get(&self, key: &StoreKey) -> Result<Option<Bytes>> {
        Ok(self.values().get(key.as_str()).cloned())
    }

    async fn size(&self, key: &StoreKey) -> Result<Option<u64>> {
        Ok(self.values().get(key.as_str()).map(|v| v.len() as u64))
    }
}

#[async_trait]
impl WritableStore for HashMapStore {
    async fn set(&self, key: &StoreKey, value: Bytes) -> Result<()> {
        self.values().insert(key.as_str().to_owned(), value);
        Ok(())
    }

    async fn erase(&self, key: &StoreKey) -> Result<()> {
        self.values().remove(key.as_str());
        Ok(())
    }

    async fn erase_prefix(&self, prefix: &StorePrefix) -> Result<()> {
        self.values()
            .retain(|key, _| !key.starts_with(prefix.as_str()));
        Ok(())
    }
}

#[async_trait]
impl ListableStore for HashMapStore {
    async fn list_prefix(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        let mut keys = self
            .values()
            .keys()
            .filter(|key| key.starts_with(prefix.as_str()))
            .map(|key| StoreKey::try_new(key.as_str()))
            .collect::<Result<Vec<_>>>()?;
        // Listings are sorted.
        keys.sort();
        Ok(keys)
    }
}

/// Run the whole conformance suite on a fresh store.
async fn prove() {
    testing::run_conformance(Arc::new(HashMapStore::default())).await;
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(prove());
    println!("HashMapStore passes the zarr-store conformance suite");
    Ok(())
}

#[cfg(test)]
mod tests {
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn custom_backend_passes_the_conformance_suite() {
        super::prove().await;
    }
}
