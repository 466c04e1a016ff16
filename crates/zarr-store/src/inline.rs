//! Letting a store block the calling thread, for one scope.
//!
//! A store whose operations block (such as [`FilesystemStore`](crate::FilesystemStore))
//! normally moves them off the async runtime's worker threads, to Tokio's blocking pool.
//! That hand-off costs two thread wake-ups per operation, which is most of the cost of
//! writing a small file from the page cache's point of view. A caller whose thread may block
//! anyway (a thread outside the runtime's workers, or one inside
//! [`tokio::task::block_in_place`]) can poll a store future inside [`allow_blocking_here`]:
//! a store that honours it then does the operation on that thread, and the poll returns when
//! it is done.
//!
//! This is a hint, not a contract. A store is free to ignore it (an object store's requests
//! wait on the network either way), and an operation that cannot start at once (for lack of
//! a concurrency permit, say) still waits as usual. Only the polls made inside the closure
//! see the permission.

use std::cell::Cell;

thread_local! {
    static ALLOWED: Cell<bool> = const { Cell::new(false) };
}

/// Restores the previous permission when the scope ends, even by a panic.
struct Restore(bool);

impl Drop for Restore {
    fn drop(&mut self) {
        ALLOWED.with(|allowed| allowed.set(self.0));
    }
}

/// Run `f`, letting stores do blocking I/O on this thread for the store futures polled
/// inside it (see the [module docs](self)).
///
/// Only call this where blocking is harmless: never on a Tokio worker thread outside
/// `block_in_place`, where it would stall the runtime's other tasks.
///
/// ```
/// use std::future::Future;
/// use std::task::{Context, Poll, Waker};
/// use zarr_store::{FilesystemStore, StoreKey, WritableStore, inline};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = tokio::runtime::Runtime::new()?;
/// let dir = tempfile::tempdir()?;
/// let store = FilesystemStore::new(dir.path())?;
/// let key = StoreKey::new("a/c/0");
/// // This thread is not one of the runtime's workers, so it may block.
/// let _entered = runtime.enter();
/// let mut set = std::pin::pin!(store.set(&key, "bytes".into()));
/// let mut cx = Context::from_waker(Waker::noop());
/// // The file is written during this one poll, on this thread.
/// let polled = inline::allow_blocking_here(|| set.as_mut().poll(&mut cx));
/// assert!(matches!(polled, Poll::Ready(Ok(()))));
/// assert_eq!(std::fs::read(dir.path().join("a/c/0"))?, b"bytes");
/// # Ok(())
/// # }
/// ```
pub fn allow_blocking_here<R>(f: impl FnOnce() -> R) -> R {
    let _restore = Restore(ALLOWED.with(|allowed| allowed.replace(true)));
    f()
}

/// Whether the current thread is inside [`allow_blocking_here`]: a store that blocks may then
/// do its I/O here rather than hand it to another thread.
pub fn blocking_allowed_here() -> bool {
    ALLOWED.with(Cell::get)
}

/// Run the blocking `f` the way a store should: on this thread if the caller allows it
/// ([`allow_blocking_here`]) or there is no Tokio runtime, otherwise on Tokio's blocking
/// pool, so that it never stalls a runtime worker. For store implementations whose
/// operations are blocking calls (local files, a decoder): inside the hint, the future is
/// ready on its first poll.
///
/// ```
/// use std::future::Future;
/// use std::task::{Context, Poll, Waker};
/// use zarr_store::inline;
///
/// let runtime = tokio::runtime::Runtime::new().unwrap();
/// let _entered = runtime.enter();
/// let mut cx = Context::from_waker(Waker::noop());
/// let mut here = std::pin::pin!(inline::run_blocking(|| 6 * 7));
/// let polled = inline::allow_blocking_here(|| here.as_mut().poll(&mut cx));
/// assert!(matches!(polled, Poll::Ready(Ok(42))));
/// // Outside the hint the work goes to the blocking pool.
/// let pooled = runtime.block_on(inline::run_blocking(|| 6 * 7));
/// assert_eq!(pooled.unwrap(), 42);
/// ```
///
/// # Errors
/// [`Error::TaskFailed`](crate::Error::TaskFailed) if `f` panicked on the blocking pool (a
/// panic on this thread propagates).
pub async fn run_blocking<T, F>(f: F) -> crate::Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if !blocking_allowed_here() => handle
            .spawn_blocking(f)
            .await
            .map_err(crate::Error::TaskFailed),
        _ => Ok(f()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_permission_holds_inside_the_scope_only() {
        assert!(!blocking_allowed_here());
        let inside = allow_blocking_here(|| {
            let nested = allow_blocking_here(blocking_allowed_here);
            (nested, blocking_allowed_here())
        });
        assert_eq!(inside, (true, true));
        assert!(!blocking_allowed_here());
        // Another thread does not see it.
        allow_blocking_here(|| {
            let other = std::thread::spawn(blocking_allowed_here).join().unwrap();
            assert!(!other);
        });
    }

    #[test]
    fn a_panic_inside_the_scope_ends_it() {
        let caught = std::panic::catch_unwind(|| allow_blocking_here(|| panic!("inside")));
        assert!(caught.is_err());
        assert!(!blocking_allowed_here());
    }
}
