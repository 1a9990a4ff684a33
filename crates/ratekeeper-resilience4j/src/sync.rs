//! The few synchronisation helpers the crate shares: a poison-tolerant
//! lock and an atomically replaced value.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Locks `m`, taking the value over if a holder panicked (every critical
/// section here leaves its data consistent before it can panic).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A value replaced as a whole while readers keep using the one they
/// loaded (an `ArcSwap`).
#[derive(Debug)]
pub(crate) struct Swap<T>(arc_swap::ArcSwap<T>);

impl<T> Swap<T> {
    pub(crate) fn new(value: T) -> Self {
        Swap(arc_swap::ArcSwap::from_pointee(value))
    }

    /// The current value. Cheap and uncontended: `ArcSwap::load` borrows the
    /// pointer through a thread-local debt slot instead of a reference count.
    #[inline]
    pub(crate) fn load(&self) -> arc_swap::Guard<Arc<T>> {
        self.0.load()
    }

    /// Replaces the value; readers that loaded the old one keep it alive.
    pub(crate) fn store(&self, value: T) {
        self.0.store(Arc::new(value));
    }
}
