//! The one place that names the atomics: `core`'s normally, loom's under
//! `--cfg loom`, so that the lock-free algorithms can be model-checked without
//! naming loom themselves.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
#[cfg(loom)]
pub(crate) use loom::thread::{current as current_thread, park, Thread};

/// Under loom there is no timed park: the models never time out.
#[cfg(loom)]
pub(crate) fn park_timeout(_: std::time::Duration) {
    park();
}

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;
#[cfg(not(loom))]
pub(crate) use std::thread::{current as current_thread, park, park_timeout, Thread};

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
