//! The registry's events: a limiter added, replaced or removed.

use std::fmt;
use std::sync::Arc;

use crate::{EventPublisher, PermitLimiter, SubscriptionId};

/// What changed in a registry: Resilience4j's `RegistryEvent.Type`.
///
/// ```
/// use ratekeeper_resilience4j::RefillLimiter;
/// use ratekeeper_resilience4j::registry::{Registry, RegistryEventKind};
///
/// let registry = Registry::<RefillLimiter>::new();
/// registry.events().subscribe(|e| assert_eq!(e.kind(), RegistryEventKind::Added));
/// registry.limiter("a");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RegistryEventKind {
    /// A limiter was created and added.
    Added,
    /// A limiter was removed.
    Removed,
    /// A limiter was replaced by a new one of the same name.
    Replaced,
}

impl RegistryEventKind {
    /// Resilience4j's name: `ADDED`, `REMOVED` or `REPLACED`.
    ///
    /// ```
    /// use ratekeeper_resilience4j::registry::RegistryEventKind;
    ///
    /// assert_eq!(RegistryEventKind::Replaced.as_str(), "REPLACED");
    /// ```
    pub fn as_str(&self) -> &'static str {
        match self {
            RegistryEventKind::Added => "ADDED",
            RegistryEventKind::Removed => "REMOVED",
            RegistryEventKind::Replaced => "REPLACED",
        }
    }
}

impl fmt::Display for RegistryEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A change of a [`Registry`](super::Registry)'s limiters, delivered to the subscribers of
/// [`Registry::events`](super::Registry::events).
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use ratekeeper_resilience4j::RefillLimiter;
/// use ratekeeper_resilience4j::registry::{Registry, RegistryEventKind};
///
/// let registry = Registry::<RefillLimiter>::new();
/// let log = Arc::new(Mutex::new(Vec::new()));
/// let sink = log.clone();
/// registry.events().subscribe(move |e| {
///     sink.lock().unwrap().push((e.kind(), e.name().to_owned(), e.sequence()))
/// });
/// registry.limiter("a");
/// registry.remove("a");
/// assert_eq!(
///     *log.lock().unwrap(),
///     vec![
///         (RegistryEventKind::Added, "a".to_owned(), 1),
///         (RegistryEventKind::Removed, "a".to_owned(), 2),
///     ]
/// );
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum RegistryEvent<L> {
    /// A limiter was created and added.
    Added {
        /// The new limiter.
        limiter: Arc<L>,
        /// The change's [sequence number](Self::sequence).
        sequence: u64,
    },
    /// A limiter was removed.
    Removed {
        /// The limiter removed (callers holding it may still use it).
        limiter: Arc<L>,
        /// The change's [sequence number](Self::sequence).
        sequence: u64,
    },
    /// A limiter was replaced by a new one of the same name.
    Replaced {
        /// The limiter replaced (callers holding it may still use it).
        old: Arc<L>,
        /// The limiter now registered under the name.
        new: Arc<L>,
        /// The change's [sequence number](Self::sequence).
        sequence: u64,
    },
}

impl<L> Clone for RegistryEvent<L> {
    fn clone(&self) -> Self {
        match self {
            RegistryEvent::Added { limiter, sequence } => RegistryEvent::Added {
                limiter: Arc::clone(limiter),
                sequence: *sequence,
            },
            RegistryEvent::Removed { limiter, sequence } => RegistryEvent::Removed {
                limiter: Arc::clone(limiter),
                sequence: *sequence,
            },
            RegistryEvent::Replaced { old, new, sequence } => RegistryEvent::Replaced {
                old: Arc::clone(old),
                new: Arc::clone(new),
                sequence: *sequence,
            },
        }
    }
}

impl<L> RegistryEvent<L> {
    /// What changed.
    pub fn kind(&self) -> RegistryEventKind {
        match self {
            RegistryEvent::Added { .. } => RegistryEventKind::Added,
            RegistryEvent::Removed { .. } => RegistryEventKind::Removed,
            RegistryEvent::Replaced { .. } => RegistryEventKind::Replaced,
        }
    }

    /// The limiter the event is about: the one added, removed, or the new
    /// one of a replacement.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use ratekeeper_resilience4j::RefillLimiter;
    /// use ratekeeper_resilience4j::RefillConfig;
    /// use ratekeeper_resilience4j::registry::Registry;
    ///
    /// let registry = Registry::<RefillLimiter>::new();
    /// let last = Arc::new(Mutex::new(None));
    /// let sink = last.clone();
    /// registry.events().subscribe(move |e| *sink.lock().unwrap() = Some(e.limiter().clone()));
    /// registry.limiter("a");
    /// registry.replace("a", RefillConfig::default());
    /// let new = registry.find("a").unwrap();
    /// assert!(Arc::ptr_eq(last.lock().unwrap().as_ref().unwrap(), &new));
    /// ```
    pub fn limiter(&self) -> &Arc<L> {
        match self {
            RegistryEvent::Added { limiter, .. } | RegistryEvent::Removed { limiter, .. } => {
                limiter
            }
            RegistryEvent::Replaced { new, .. } => new,
        }
    }

    /// The registry's count of changes when this one was made: 1 for the
    /// first limiter added, one more for every later addition, removal or
    /// replacement. Subscribers that see events from several threads can
    /// order them by it.
    pub fn sequence(&self) -> u64 {
        match self {
            RegistryEvent::Added { sequence, .. }
            | RegistryEvent::Removed { sequence, .. }
            | RegistryEvent::Replaced { sequence, .. } => *sequence,
        }
    }
}

impl<L: PermitLimiter> RegistryEvent<L> {
    /// The name of the limiter the event is about.
    pub fn name(&self) -> &str {
        self.limiter().name()
    }
}

/// Filtered subscriptions to a registry's events, as Resilience4j's
/// `onEntryAdded`, `onEntryRemoved` and `onEntryReplaced`.
impl<L> EventPublisher<RegistryEvent<L>> {
    /// Calls `callback` with every limiter added.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use ratekeeper_resilience4j::PermitLimiter;
    /// use ratekeeper_resilience4j::registry::Registry;
    /// use ratekeeper_resilience4j::CycleLimiter;
    ///
    /// let registry = Registry::<CycleLimiter>::new();
    /// let added = Arc::new(Mutex::new(Vec::new()));
    /// let sink = added.clone();
    /// registry.events().on_added(move |l| sink.lock().unwrap().push(l.name().to_owned()));
    /// registry.limiter("a");
    /// registry.limiter("a"); // exists: not added again
    /// registry.remove("a");
    /// assert_eq!(*added.lock().unwrap(), ["a"]);
    /// ```
    pub fn on_added(&self, callback: impl Fn(&Arc<L>) + Send + Sync + 'static) -> SubscriptionId {
        self.subscribe(move |e: &RegistryEvent<L>| {
            if let RegistryEvent::Added { limiter, .. } = e {
                callback(limiter)
            }
        })
    }

    /// Calls `callback` with every limiter removed.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use ratekeeper_resilience4j::registry::Registry;
    /// use ratekeeper_resilience4j::CycleLimiter;
    ///
    /// let registry = Registry::<CycleLimiter>::new();
    /// let removed = Arc::new(AtomicUsize::new(0));
    /// let count = removed.clone();
    /// registry.events().on_removed(move |_| {
    ///     count.fetch_add(1, Ordering::Relaxed);
    /// });
    /// registry.limiter("a");
    /// registry.remove("a");
    /// registry.remove("a"); // gone: nothing removed
    /// assert_eq!(removed.load(Ordering::Relaxed), 1);
    /// ```
    pub fn on_removed(&self, callback: impl Fn(&Arc<L>) + Send + Sync + 'static) -> SubscriptionId {
        self.subscribe(move |e: &RegistryEvent<L>| {
            if let RegistryEvent::Removed { limiter, .. } = e {
                callback(limiter)
            }
        })
    }

    /// Calls `callback` with the old and the new limiter of every
    /// replacement.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use ratekeeper_resilience4j::{CycleConfig, PermitLimiter};
    /// use ratekeeper_resilience4j::registry::Registry;
    /// use ratekeeper_resilience4j::CycleLimiter;
    ///
    /// let registry = Registry::<CycleLimiter>::new();
    /// let limits = Arc::new(Mutex::new(Vec::new()));
    /// let sink = limits.clone();
    /// registry.events().on_replaced(move |old, new| {
    ///     let limit = |l: &CycleLimiter| l.config_view().limit_for_period;
    ///     sink.lock().unwrap().push((limit(old), limit(new)));
    /// });
    /// registry.limiter("a");
    /// registry.replace("a", CycleConfig::builder().limit_for_period(7).build()?);
    /// assert_eq!(*limits.lock().unwrap(), [(50, 7)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_replaced(
        &self,
        callback: impl Fn(&Arc<L>, &Arc<L>) + Send + Sync + 'static,
    ) -> SubscriptionId {
        self.subscribe(move |e: &RegistryEvent<L>| {
            if let RegistryEvent::Replaced { old, new, .. } = e {
                callback(old, new)
            }
        })
    }
}
