//! Events: a publisher that costs one atomic load when nobody listens.

use core::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::sync::{lock, Swap};

/// A subscriber: its id and its callback.
struct Subscriber<E> {
    id: u64,
    callback: Arc<dyn Fn(&E) + Send + Sync>,
}

impl<E> Clone for Subscriber<E> {
    fn clone(&self) -> Self {
        Subscriber {
            id: self.id,
            callback: Arc::clone(&self.callback),
        }
    }
}

/// Identifies one subscription, to end it with
/// [`EventPublisher::unsubscribe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubscriptionId(u64);

/// Delivers events of type `E` to subscribers, synchronously, on the thread
/// that published them.
///
/// Publishing is meant for hot paths: [`publish_with`](Self::publish_with)
/// takes a closure that builds the event, and calls it only when someone has
/// subscribed. With no subscribers a publish is one relaxed atomic load.
///
/// Subscribers are called in subscription order, outside any lock (they may
/// subscribe, unsubscribe or use the limiter themselves). A subscriber that
/// panics propagates the panic to the publishing call; limiters publish after
/// their state change is complete, so the limiter stays consistent.
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use ratekeeper_resilience4j::EventPublisher;
///
/// let publisher = EventPublisher::<u32>::new();
/// publisher.publish_with(|| unreachable!("nobody listens: never built"));
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// let id = publisher.subscribe(move |e: &u32| sink.lock().unwrap().push(*e));
/// publisher.publish_with(|| 7);
/// assert!(publisher.unsubscribe(id));
/// publisher.publish_with(|| 8);
/// assert_eq!(*seen.lock().unwrap(), vec![7]);
/// ```
pub struct EventPublisher<E> {
    /// Number of subscribers: the only thing a publish reads when it is 0.
    /// Written under `edit`.
    count: AtomicU64,
    /// The subscribers, replaced whole under `edit`; read without a lock.
    subscribers: Swap<Vec<Subscriber<E>>>,
    /// Serializes subscribe/unsubscribe; holds the next subscription id.
    edit: Mutex<u64>,
}

impl<E> Default for EventPublisher<E> {
    fn default() -> Self {
        EventPublisher::new()
    }
}

impl<E> EventPublisher<E> {
    /// A publisher with no subscribers.
    pub fn new() -> EventPublisher<E> {
        EventPublisher {
            count: AtomicU64::new(0),
            subscribers: Swap::new(Vec::new()),
            edit: Mutex::new(0),
        }
    }

    /// Calls `callback` with every event published from now on, until
    /// [`unsubscribe`](Self::unsubscribe)d.
    pub fn subscribe(&self, callback: impl Fn(&E) + Send + Sync + 'static) -> SubscriptionId {
        let mut next = lock(&self.edit);
        let id = *next;
        *next += 1;
        let mut subs: Vec<Subscriber<E>> = self.subscribers.load().as_ref().clone();
        subs.push(Subscriber {
            id,
            callback: Arc::new(callback),
        });
        let n = subs.len() as u64;
        self.subscribers.store(subs);
        // Ordering: Relaxed. The count is a hint that lets a publish skip the
        // list; the list itself is published by the `Swap` store above. A
        // publish that happens-after this subscribe (same thread, or through
        // any synchronization) sees at least this count by coherence.
        self.count.store(n, Ordering::Relaxed);
        SubscriptionId(id)
    }

    /// Ends a subscription; returns false if it had already ended.
    pub fn unsubscribe(&self, id: SubscriptionId) -> bool {
        let _guard = lock(&self.edit);
        let mut subs: Vec<Subscriber<E>> = self.subscribers.load().as_ref().clone();
        let before = subs.len();
        subs.retain(|s| s.id != id.0);
        if subs.len() == before {
            return false;
        }
        let n = subs.len() as u64;
        self.subscribers.store(subs);
        // Ordering: Relaxed; see `subscribe`.
        self.count.store(n, Ordering::Relaxed);
        true
    }

    /// How many subscriptions are active.
    pub fn subscriber_count(&self) -> usize {
        // Ordering: Relaxed; a gauge.
        self.count.load(Ordering::Relaxed) as usize
    }

    /// Whether anyone subscribed: what a publish checks first.
    #[inline]
    pub fn has_subscribers(&self) -> bool {
        // Ordering: Relaxed; see `subscribe`.
        self.count.load(Ordering::Relaxed) != 0
    }

    /// Builds an event with `make` and delivers it to every subscriber, if
    /// there is any; otherwise does nothing (and never calls `make`).
    #[inline]
    pub fn publish_with(&self, make: impl FnOnce() -> E) {
        if self.has_subscribers() {
            self.deliver(make());
        }
    }

    #[cold]
    #[inline(never)]
    fn deliver(&self, event: E) {
        let subs = self.subscribers.load();
        for s in subs.iter() {
            (s.callback)(&event);
        }
    }
}

impl<E> fmt::Debug for EventPublisher<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventPublisher")
            .field("subscribers", &self.subscriber_count())
            .finish()
    }
}

/// What happened: Resilience4j's `RateLimiterEvent.Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PermitEventKind {
    /// Permits were granted: an acquire that returned true, or a reservation
    /// (now or after a wait).
    SuccessfulAcquire,
    /// Permits were refused: an acquire that returned false (including one
    /// abandoned while waiting), or a refused reservation.
    FailedAcquire,
    /// Stored permits were drained; the event's permits are how many.
    Drained,
}

impl PermitEventKind {
    /// Resilience4j's name: `SUCCESSFUL_ACQUIRE`, `FAILED_ACQUIRE` or
    /// `DRAINED`.
    pub fn as_str(&self) -> &'static str {
        match self {
            PermitEventKind::SuccessfulAcquire => "SUCCESSFUL_ACQUIRE",
            PermitEventKind::FailedAcquire => "FAILED_ACQUIRE",
            PermitEventKind::Drained => "DRAINED",
        }
    }
}

impl fmt::Display for PermitEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An event of a [`PermitLimiter`](super::PermitLimiter): Resilience4j's
/// `RateLimiterEvent`.
///
/// Built only when someone subscribed (see [`EventPublisher`]).
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use ratekeeper::ManualClock;
/// use ratekeeper_resilience4j::{PermitEventKind, PermitLimiter, RefillConfig, RefillLimiter};
///
/// let limiter = RefillLimiter::new_with_clock("api", RefillConfig::default(), ManualClock::new(0));
/// let log = Arc::new(Mutex::new(Vec::new()));
/// let sink = log.clone();
/// limiter.events().subscribe(move |e| sink.lock().unwrap().push((e.kind(), e.permits())));
/// limiter.drain_permissions();
/// assert_eq!(*log.lock().unwrap(), vec![(PermitEventKind::Drained, 50)]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermitEvent {
    limiter_name: Arc<str>,
    kind: PermitEventKind,
    permits: u64,
    clock_nanos: u64,
    created_at: SystemTime,
}

impl PermitEvent {
    /// An event, stamped with the wall-clock time now.
    pub fn new(
        limiter_name: Arc<str>,
        kind: PermitEventKind,
        permits: u64,
        clock_nanos: u64,
    ) -> PermitEvent {
        PermitEvent {
            limiter_name,
            kind,
            permits,
            clock_nanos,
            created_at: SystemTime::now(),
        }
    }

    /// The name of the limiter that published it.
    pub fn limiter_name(&self) -> &str {
        &self.limiter_name
    }

    /// What happened.
    pub fn kind(&self) -> PermitEventKind {
        self.kind
    }

    /// Permits asked for (acquire events) or drained (drain events).
    pub fn permits(&self) -> u64 {
        self.permits
    }

    /// The limiter's clock when the event was published, in nanoseconds.
    pub fn clock_nanos(&self) -> u64 {
        self.clock_nanos
    }

    /// Wall-clock time when the event was built (Resilience4j's
    /// `getCreationTime`).
    pub fn created_at(&self) -> SystemTime {
        self.created_at
    }
}

/// Filtered subscriptions, as Resilience4j's `EventPublisher` (which has no
/// `onDrained`; here there is one).
impl EventPublisher<PermitEvent> {
    /// Calls `callback` with every event ([`subscribe`](Self::subscribe)).
    pub fn on_event(
        &self,
        callback: impl Fn(&PermitEvent) + Send + Sync + 'static,
    ) -> SubscriptionId {
        self.subscribe(callback)
    }

    /// Calls `callback` with [`PermitEventKind::SuccessfulAcquire`] events.
    pub fn on_success(
        &self,
        callback: impl Fn(&PermitEvent) + Send + Sync + 'static,
    ) -> SubscriptionId {
        self.on_kind(PermitEventKind::SuccessfulAcquire, callback)
    }

    /// Calls `callback` with [`PermitEventKind::FailedAcquire`] events.
    pub fn on_failure(
        &self,
        callback: impl Fn(&PermitEvent) + Send + Sync + 'static,
    ) -> SubscriptionId {
        self.on_kind(PermitEventKind::FailedAcquire, callback)
    }

    /// Calls `callback` with [`PermitEventKind::Drained`] events.
    pub fn on_drained(
        &self,
        callback: impl Fn(&PermitEvent) + Send + Sync + 'static,
    ) -> SubscriptionId {
        self.on_kind(PermitEventKind::Drained, callback)
    }

    fn on_kind(
        &self,
        kind: PermitEventKind,
        callback: impl Fn(&PermitEvent) + Send + Sync + 'static,
    ) -> SubscriptionId {
        self.subscribe(move |e: &PermitEvent| {
            if e.kind == kind {
                callback(e)
            }
        })
    }
}
