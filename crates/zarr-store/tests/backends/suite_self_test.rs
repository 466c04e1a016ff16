//! The conformance suite must catch broken stores: each store here has one bug.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use zarr_store::{
    ByteRange, ListDir, ListableStore, MemoryStore, ReadableStore, Result, StoreKey, StorePrefix,
    WritableStore, testing,
};

#[derive(Clone, Copy, Debug)]
enum Bug {
    /// Ranges past the end are answered short instead of failing.
    ClampsRanges,
    /// A repeated key is answered once, shifting later answers.
    MergesRepeatedKeys,
    /// Listings are not sorted.
    UnsortedList,
    /// `erase_prefix("a/b/")` also erases `a/bc`.
    TextualErasePrefix,
    /// `list_dir` reports grandchildren as keys.
    FlatListDir,
    /// Erasing a missing key fails.
    EraseMissingFails,
    /// Partial writes ignore overlaps.
    AcceptsOverlaps,
    /// Suffix ranges are read from the start.
    SuffixFromStart,
}

#[derive(Debug)]
struct Buggy {
    inner: MemoryStore,
    bug: Bug,
}

#[async_trait]
impl ReadableStore for Buggy {
    async fn get(&self, key: &StoreKey) -> Result<Option<Bytes>> {
        self.inner.get(key).await
    }

    async fn size(&self, key: &StoreKey) -> Result<Option<u64>> {
        self.inner.size(key).await
    }

    async fn get_partial_values(
        &self,
        key_ranges: &[(StoreKey, ByteRange)],
    ) -> Result<Vec<Option<Bytes>>> {
        match self.bug {
            Bug::ClampsRanges => {
                let mut out = Vec::new();
                for (key, range) in key_ranges {
                    let Some(value) = self.inner.get(key).await? else {
                        out.push(None);
                        continue;
                    };
                    let len = value.len() as u64;
                    let r = match range.resolve(len) {
                        Ok(r) => r,
                        Err(_) => match range.form() {
                            zarr_store::ByteRangeForm::Bounded { start, .. } => start.min(len)..len,
                            _ => 0..len,
                        },
                    };
                    out.push(Some(value.slice(r.start as usize..r.end as usize)));
                }
                Ok(out)
            }
            Bug::MergesRepeatedKeys => {
                let mut seen = std::collections::HashSet::new();
                let unique: Vec<_> = key_ranges
                    .iter()
                    .filter(|(key, _)| seen.insert(key.clone()))
                    .cloned()
                    .collect();
                let mut out = self.inner.get_partial_values(&unique).await?;
                out.resize(key_ranges.len(), None);
                Ok(out)
            }
            Bug::SuffixFromStart => {
                let fixed: Vec<_> = key_ranges
                    .iter()
                    .map(|(key, range)| match range.form() {
                        zarr_store::ByteRangeForm::Suffix { length } => {
                            (key.clone(), ByteRange::new(0, length))
                        }
                        _ => (key.clone(), *range),
                    })
                    .collect();
                self.inner.get_partial_values(&fixed).await
            }
            _ => self.inner.get_partial_values(key_ranges).await,
        }
    }
}

#[async_trait]
impl WritableStore for Buggy {
    async fn set(&self, key: &StoreKey, value: Bytes) -> Result<()> {
        self.inner.set(key, value).await
    }

    async fn set_partial_values(&self, writes: &[(StoreKey, u64, Bytes)]) -> Result<()> {
        if matches!(self.bug, Bug::AcceptsOverlaps) {
            for (key, start, bytes) in writes {
                self.inner
                    .set_partial_values(&[(key.clone(), *start, bytes.clone())])
                    .await?;
            }
            return Ok(());
        }
        self.inner.set_partial_values(writes).await
    }

    async fn erase(&self, key: &StoreKey) -> Result<()> {
        if matches!(self.bug, Bug::EraseMissingFails) && self.inner.get(key).await?.is_none() {
            return Err(zarr_store::Error::ReadOnly {
                store: "buggy".into(),
                operation: "erase a missing key",
            });
        }
        self.inner.erase(key).await
    }

    async fn erase_prefix(&self, prefix: &StorePrefix) -> Result<()> {
        if matches!(self.bug, Bug::TextualErasePrefix) {
            let stem = prefix.as_str().trim_end_matches('/');
            for key in self.inner.list().await? {
                if key.as_str().starts_with(stem) {
                    self.inner.erase(&key).await?;
                }
            }
            return Ok(());
        }
        self.inner.erase_prefix(prefix).await
    }
}

#[async_trait]
impl ListableStore for Buggy {
    async fn list_prefix(&self, prefix: &StorePrefix) -> Result<Vec<StoreKey>> {
        let mut keys = self.inner.list_prefix(prefix).await?;
        if matches!(self.bug, Bug::UnsortedList) {
            keys.reverse();
        }
        Ok(keys)
    }

    async fn list_dir(&self, prefix: &StorePrefix) -> Result<ListDir> {
        if matches!(self.bug, Bug::FlatListDir) {
            return Ok(ListDir {
                keys: self.inner.list_prefix(prefix).await?,
                prefixes: vec![],
            });
        }
        self.inner.list_dir(prefix).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_suite_catches_each_bug() {
    let cases = [
        (Bug::ClampsRanges, "expected Error::RangeOutOfBounds"),
        (Bug::MergesRepeatedKeys, "readable: answer"),
        (Bug::UnsortedList, "erase: keys left"),
        (Bug::TextualErasePrefix, "erase: keys left"),
        (Bug::FlatListDir, "list_dir"),
        (Bug::EraseMissingFails, "erase of a missing key failed"),
        (
            Bug::AcceptsOverlaps,
            "overlapping writes must be Error::OverlappingWrites",
        ),
        (Bug::SuffixFromStart, "suffix of readable/zarr.json"),
    ];
    for (bug, expected) in cases {
        let store = Arc::new(Buggy {
            inner: MemoryStore::new(),
            bug,
        });
        let options = testing::SuiteOptions::default().with_large_value_bytes(1 << 20);
        let run = tokio::spawn(async move { testing::run_conformance_with(store, &options).await });
        let err = run.await.expect_err(&format!("the suite missed {bug:?}"));
        let panic = err.into_panic();
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        assert!(
            message.contains(expected),
            "{bug:?}: the suite failed with {message:?}, expected a message containing {expected:?}"
        );
    }
}
