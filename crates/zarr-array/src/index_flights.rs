//! Shard index fetches shared by the reads of one array that wait for them at the same time.
//!
//! Many concurrent reads of inner chunks of one shard (random access, one task per chunk)
//! would each read the shard's index. Here, a read that needs an index joins a fetch of it
//! that is in flight, but only one that *started after the read asked*: a read never gets an
//! index fetched before it began, so it sees every write that completed before it, exactly
//! as if it had fetched alone. A read that finds an older fetch in flight waits for it to end
//! and then starts (or joins) a fresh one, so on a store whose reads wait (an object store) a
//! burst of reads of one shard costs about two index requests instead of one per read. (A
//! `FilesystemStore` read from the page cache completes without yielding: there only reads on
//! different threads at the same moment meet.)
//!
//! Nothing outlives its fetch: an entry is removed when the fetch ends, so this is not a
//! cache and holds no memory between reads. If the fetching read fails or is dropped, the
//! reads that joined it fetch on their own (each gets its own error).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use futures::channel::oneshot;
use zarr_sharding::ShardIndex;
use zarr_store::StoreKey;

/// A shard's index, or `None` for a shard that is not stored.
pub(crate) type Index = Option<Arc<ShardIndex>>;

/// The index fetches in flight for one array (shared by its clones).
#[derive(Default)]
pub(crate) struct IndexFlights {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Orders arrivals and fetch starts.
    next_ticket: u64,
    flights: HashMap<StoreKey, Flight>,
}

impl State {
    fn ticket(&mut self) -> u64 {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        ticket
    }
}

/// What a read does next.
enum Step {
    /// Fetch, as the flight started at `started`.
    Lead { started: u64 },
    /// Wait for a flight to end; `joined`: may use its index.
    Wait {
        outcome: oneshot::Receiver<Option<Index>>,
        joined: bool,
    },
}

/// One fetch in flight.
struct Flight {
    /// The ticket taken when it started: reads that arrived before it may use its result.
    started: u64,
    /// What each waiting read is told when it ends: the index, or `None` if it failed.
    waiters: Vec<oneshot::Sender<Option<Index>>>,
}

impl std::fmt::Debug for IndexFlights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("IndexFlights")
            .field("in_flight", &state.flights.len())
            .finish()
    }
}

impl IndexFlights {
    /// The index of the shard at `key`: from a fetch of it that started after this call, or
    /// from `fetch`, run at most once.
    ///
    /// # Errors
    /// The error of `fetch` when this call ran it.
    pub(crate) async fn fetch<F, Fut, E>(&self, key: &StoreKey, fetch: F) -> Result<Index, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Index, E>>,
    {
        let mut arrival = None;
        loop {
            let step = {
                let mut state = self.lock();
                let arrival = *arrival.get_or_insert_with(|| state.ticket());
                match state.flights.get_mut(key) {
                    Some(flight) => {
                        let (tx, rx) = oneshot::channel();
                        flight.waiters.push(tx);
                        Step::Wait {
                            outcome: rx,
                            joined: arrival < flight.started,
                        }
                    }
                    None => {
                        let started = state.ticket();
                        let flight = Flight {
                            started,
                            waiters: Vec::new(),
                        };
                        state.flights.insert(key.clone(), flight);
                        Step::Lead { started }
                    }
                }
            };
            match step {
                Step::Lead { started } => return self.lead(key, started, fetch).await,
                Step::Wait { outcome, joined } => match outcome.await {
                    Ok(Some(index)) if joined => return Ok(index),
                    // An older fetch ended: start or join a fresh one.
                    Ok(_) | Err(_) if !joined => {}
                    // The fetch this read joined failed or was dropped.
                    Ok(_) | Err(_) => return fetch().await,
                },
            }
        }
    }

    /// Run `fetch` as the flight started at `started`, then tell its waiters.
    async fn lead<F, Fut, E>(&self, key: &StoreKey, started: u64, fetch: F) -> Result<Index, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Index, E>>,
    {
        let mut landing = Landing {
            flights: self,
            key,
            started,
            outcome: None,
        };
        let result = fetch().await;
        landing.outcome = Some(result.as_ref().ok().cloned());
        drop(landing);
        result
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Ends a flight when dropped: with its outcome, or (the fetching read was dropped) with
/// none, which sends the waiters that joined it off to fetch on their own.
struct Landing<'a> {
    flights: &'a IndexFlights,
    key: &'a StoreKey,
    started: u64,
    /// `Some(Some(index))` after a successful fetch, `Some(None)` after a failed one.
    outcome: Option<Option<Index>>,
}

impl Drop for Landing<'_> {
    fn drop(&mut self) {
        let flight = {
            let mut state = self.flights.lock();
            match state.flights.get(self.key) {
                Some(flight) if flight.started == self.started => state.flights.remove(self.key),
                _ => None,
            }
        };
        let Some(flight) = flight else { return };
        let outcome = self.outcome.take().flatten();
        for waiter in flight.waiters {
            // A waiter that has gone away (its read was dropped) needs nothing.
            let _ = waiter.send(outcome.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::sync::Semaphore;

    fn key() -> StoreKey {
        StoreKey::try_new("a/c/0").unwrap()
    }

    fn index() -> ShardIndex {
        ShardIndex::new_empty(&[2]).unwrap()
    }

    /// A fetch that waits for a permit of `gate` (counting its runs in `runs`).
    async fn gated<T>(
        gate: &tokio::sync::Semaphore,
        runs: &AtomicUsize,
        value: Result<Option<ShardIndex>, T>,
    ) -> Result<Index, T> {
        runs.fetch_add(1, Ordering::SeqCst);
        gate.acquire().await.unwrap().forget();
        value.map(|index| index.map(Arc::new))
    }

    #[tokio::test]
    async fn reads_waiting_together_share_one_later_fetch() {
        use futures::poll;
        let flights = IndexFlights::default();
        let key = key();
        let (first_gate, later_gate) = (Semaphore::new(0), Semaphore::new(0));
        let (first_runs, later_runs) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let first = flights.fetch(&key, || gated(&first_gate, &first_runs, Ok::<_, ()>(None)));
        futures::pin_mut!(first);
        assert!(poll!(first.as_mut()).is_pending());
        let mut later: Vec<_> = (0..10)
            .map(|_| {
                Box::pin(flights.fetch(&key, || {
                    gated(&later_gate, &later_runs, Ok::<_, ()>(Some(index())))
                }))
            })
            .collect();
        for read in &mut later {
            assert!(poll!(read.as_mut()).is_pending());
        }
        // The ten arrived while the first fetch was in flight: they may not use it (it
        // started before them, so it could miss a write that completed before they began).
        first_gate.add_permits(1);
        assert!(matches!(first.await, Ok(None)));
        for read in &mut later {
            assert!(poll!(read.as_mut()).is_pending());
        }
        // One of them started a fresh fetch, which the other nine joined.
        assert_eq!(later_runs.load(Ordering::SeqCst), 1);
        later_gate.add_permits(1);
        for read in later {
            assert!(matches!(read.await, Ok(Some(_))));
        }
        assert_eq!(first_runs.load(Ordering::SeqCst), 1);
        assert_eq!(later_runs.load(Ordering::SeqCst), 1);
        assert!(flights.lock().flights.is_empty());
    }

    #[tokio::test]
    async fn a_failed_fetch_sends_the_reads_that_joined_it_off_alone() {
        use futures::poll;
        let flights = IndexFlights::default();
        let key = key();
        let (gate, runs) = (Semaphore::new(0), AtomicUsize::new(0));
        let (failing_runs, alone_runs) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let blocker = flights.fetch(&key, || gated(&gate, &runs, Ok::<_, &str>(None)));
        let failing = flights.fetch(&key, || gated(&gate, &failing_runs, Err("broken")));
        let alone = flights.fetch(&key, || {
            gated(&gate, &alone_runs, Ok::<_, &str>(Some(index())))
        });
        futures::pin_mut!(blocker, failing, alone);
        assert!(poll!(blocker.as_mut()).is_pending());
        assert!(poll!(failing.as_mut()).is_pending());
        assert!(poll!(alone.as_mut()).is_pending());
        gate.add_permits(1);
        assert!(matches!(blocker.await, Ok(None)));
        // Both arrived during the blocker's fetch: the first goes again and leads a fresh
        // fetch, which the second joins.
        assert!(poll!(failing.as_mut()).is_pending());
        assert!(poll!(alone.as_mut()).is_pending());
        assert_eq!(flights.lock().flights[&key].waiters.len(), 1);
        gate.add_permits(1);
        assert_eq!(failing.await.unwrap_err(), "broken");
        // That fetch failed, so the second fetches alone.
        assert_eq!(alone_runs.load(Ordering::SeqCst), 0);
        gate.add_permits(1);
        assert!(matches!(alone.await, Ok(Some(_))));
        assert_eq!(
            (
                failing_runs.load(Ordering::SeqCst),
                alone_runs.load(Ordering::SeqCst)
            ),
            (1, 1)
        );
        assert!(flights.lock().flights.is_empty());
    }

    #[tokio::test]
    async fn a_dropped_fetch_leaves_no_flight_behind() {
        let flights = IndexFlights::default();
        let key = key();
        {
            let pending = flights.fetch(&key, futures::future::pending::<Result<_, ()>>);
            futures::pin_mut!(pending);
            assert!(futures::poll!(pending.as_mut()).is_pending());
            assert_eq!(flights.lock().flights.len(), 1);
        }
        assert!(flights.lock().flights.is_empty());
        let index = flights
            .fetch(&key, || async { Ok::<_, ()>(Some(Arc::new(index()))) })
            .await
            .unwrap();
        assert!(index.is_some());
    }
}
