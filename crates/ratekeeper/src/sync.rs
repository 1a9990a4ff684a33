//! The one place that names the atomics: `core`'s normally, loom's under
//! `--cfg loom`, so that the lock-free algorithms can be model-checked without
//! naming loom themselves.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
/// A reader-writer lock: loom's under `--cfg loom`, so models see the
/// keyed map's shard locks.
#[cfg(loom)]
pub(crate) use loom::sync::RwLock;
#[cfg(loom)]
pub(crate) use loom::thread::{
    current as current_thread, park, Builder as ThreadBuilder, JoinHandle, Thread,
};

/// Under loom there is no timed park: the models never time out.
#[cfg(loom)]
pub(crate) fn park_timeout(_: std::time::Duration) {
    park();
}

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
/// A reader-writer lock whose readers take a slot of their own (no shared
/// reader count): crossbeam's `ShardedLock`.
#[cfg(not(loom))]
pub(crate) use crossbeam_utils::sync::ShardedLock as RwLock;
#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;
#[cfg(not(loom))]
pub(crate) use std::thread::{
    current as current_thread, park, park_timeout, Builder as ThreadBuilder, JoinHandle, Thread,
};

/// Locks a mutex, recovering the data if a thread panicked while holding it.
/// The guarded data are plain configuration values that are always left
/// consistent, so a poisoned lock carries no broken invariant.
pub(crate) fn lock<T>(m: &Mutex<T>) -> impl core::ops::DerefMut<Target = T> + '_ {
    #[cfg(not(loom))]
    {
        m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    #[cfg(loom)]
    {
        m.lock().unwrap()
    }
}

/// A 128-bit atomic: `portable_atomic`'s (`cmpxchg16b` on x86_64, LSE/LL-SC on
/// aarch64, a lock elsewhere) normally; a loom mutex under `--cfg loom`, which
/// gives loom's model a sequentially consistent 128-bit cell.
#[cfg(not(loom))]
pub(crate) use portable_atomic::AtomicU128;

/// See the non-loom re-export.
#[cfg(loom)]
#[derive(Debug)]
pub(crate) struct AtomicU128(loom::sync::Mutex<u128>);

#[cfg(loom)]
#[allow(dead_code)]
impl AtomicU128 {
    pub(crate) fn new(v: u128) -> Self {
        AtomicU128(loom::sync::Mutex::new(v))
    }
    pub(crate) fn load(&self, _: Ordering) -> u128 {
        *self.0.lock().unwrap()
    }
    pub(crate) fn store(&self, v: u128, _: Ordering) {
        *self.0.lock().unwrap() = v;
    }
    pub(crate) fn swap(&self, v: u128, _: Ordering) -> u128 {
        core::mem::replace(&mut *self.0.lock().unwrap(), v)
    }
    pub(crate) fn compare_exchange(
        &self,
        current: u128,
        new: u128,
        _: Ordering,
        _: Ordering,
    ) -> Result<u128, u128> {
        let mut g = self.0.lock().unwrap();
        if *g == current {
            *g = new;
            Ok(current)
        } else {
            Err(*g)
        }
    }
    pub(crate) fn compare_exchange_weak(
        &self,
        current: u128,
        new: u128,
        s: Ordering,
        f: Ordering,
    ) -> Result<u128, u128> {
        self.compare_exchange(current, new, s, f)
    }
}

/// A shared, replaceable `Arc<T>`: readers get the current value without
/// touching a shared reference count (`arc_swap::ArcSwap`); writers replace it
/// whole. Under loom, a mutex around an `Arc`.
///
/// Used for a limiter's *core* (its parameters together with its atomic
/// state) when parameters change at runtime: the writer retires the old core
/// by freezing its state word forever and publishes a new core, so a reader
/// still holding the old one can never commit to it (no ABA across a change).
#[derive(Debug)]
pub(crate) struct Swap<T> {
    #[cfg(not(loom))]
    inner: arc_swap::ArcSwap<T>,
    #[cfg(loom)]
    inner: loom::sync::Mutex<std::sync::Arc<T>>,
}

#[allow(dead_code)]
impl<T> Swap<T> {
    pub(crate) fn new(value: T) -> Self {
        Swap {
            #[cfg(not(loom))]
            inner: arc_swap::ArcSwap::from_pointee(value),
            #[cfg(loom)]
            inner: loom::sync::Mutex::new(std::sync::Arc::new(value)),
        }
    }

    /// The current value. Cheap and uncontended: `ArcSwap::load` borrows the
    /// pointer through a thread-local debt slot instead of a reference count.
    #[inline]
    pub(crate) fn load(&self) -> impl core::ops::Deref<Target = T> + '_ {
        #[cfg(not(loom))]
        {
            GuardRef(self.inner.load())
        }
        #[cfg(loom)]
        {
            self.inner.lock().unwrap().clone()
        }
    }

    /// Replaces the value; readers that loaded the old one keep it alive.
    pub(crate) fn store(&self, value: T) {
        #[cfg(not(loom))]
        self.inner.store(std::sync::Arc::new(value));
        #[cfg(loom)]
        {
            *self.inner.lock().unwrap() = std::sync::Arc::new(value);
        }
    }
}

/// `arc_swap`'s guard derefs to the `Arc`; this derefs to the value.
#[cfg(not(loom))]
struct GuardRef<T>(arc_swap::Guard<std::sync::Arc<T>>);

#[cfg(not(loom))]
impl<T> core::ops::Deref for GuardRef<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.0
    }
}
