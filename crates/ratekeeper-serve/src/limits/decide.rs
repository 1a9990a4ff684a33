//! One descriptor's decision on its limit, in memory or on Redis, and the
//! draft RateLimit fields of a response.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::Duration;

use ratekeeper::keyed::KeyedError;
use ratekeeper::Clock;

use super::store::Store;
use crate::check::{Code, Descriptor, DescriptorStatus, MatchedLimit};
use crate::config::LimitConfig;

/// A node's limit, with the definition that made it (kept across reloads
/// while that definition is unchanged).
pub(super) struct Limit<C> {
    pub(super) definition: (LimitConfig, bool),
    pub(super) shadow: bool,
    pub(super) counted: Option<Counted<C>>,
}

/// A counted limit: its store and what its answers show.
pub(super) struct Counted<C> {
    pub(super) store: Arc<Store<C>>,
    /// The most permits a key holds (a bucket's capacity, a window's
    /// limit); `None` for the Pacer, whose schedule counts no permits.
    pub(super) capacity: Option<u64>,
    /// The store of the limit this one replaced on a reload, while its
    /// keys may still hold what they were granted.
    pub(super) previous: Option<Previous<C>>,
    /// Copies of what the answers show of the limit, one per group of
    /// threads (see [`shown`](Self::shown)).
    pub(super) shown: Box<[MatchedLimit]>,
    pub(super) max_wait: Duration,
    /// A refill bucket's nanoseconds per permit, for the retry of a
    /// refusal decided without taking.
    pub(super) permit_nanos: Option<u64>,
    /// How long a key takes to recover fully from empty.
    pub(super) full_nanos: u64,
}

/// A replaced limit's keys: what each was granted carries over to the new
/// limit at the key's first request after the reload (checkpoint and
/// keep), until `until` (a clock reading), when every old key has
/// recovered.
pub(super) struct Previous<C> {
    pub(super) store: Arc<Store<C>>,
    pub(super) capacity: u64,
    pub(super) until: u64,
    /// Held while a key's grants are carried over, so that two first
    /// requests do not carry them twice.
    pub(super) carrying: Mutex<()>,
}

impl<C> Counted<C> {
    /// The limit as this thread's answers show it: a clone of the copy
    /// for the thread's stripe, so that threads deciding at once count
    /// references on counters of their own rather than all on one.
    pub(super) fn shown(&self) -> MatchedLimit {
        // The count is a power of two: the mask is the remainder.
        self.shown[stripe() & (self.shown.len() - 1)].clone()
    }

    /// The limit's id (its policy's name).
    pub(super) fn id(&self) -> &str {
        self.shown[0].id()
    }
}

/// How many copies a limit keeps of what its answers show: one per
/// thread that may run at once (rounded up to a power of two), at most 64;
/// read once per process.
pub(super) fn stripes() -> usize {
    static STRIPES: LazyLock<usize> = LazyLock::new(|| {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        threads.min(64).next_power_of_two()
    });
    *STRIPES
}

/// This thread's stripe: threads are numbered in the order they first
/// decide.
fn stripe() -> usize {
    // Relaxed: the counter only hands out distinct numbers; nothing else
    // is published through it.
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    STRIPE.with(|s| *s)
}

impl<C: Clock> Counted<C> {
    /// When a key lacking `hits` could take them, from `reset`, its time
    /// until full: a refill bucket holds `hits` that many permits' refills
    /// before it is full; a window's permits come back when it ends.
    fn retry_for(&self, hits: u64, reset: Duration) -> Duration {
        match (self.permit_nanos, self.capacity) {
            (Some(per), Some(capacity)) => {
                let beyond = capacity.saturating_sub(hits).saturating_mul(per);
                reset.saturating_sub(Duration::from_nanos(beyond))
            }
            _ => reset,
        }
    }

    /// Carries `key`'s permits in use under the replaced limit (its
    /// capacity less what it has now) into this limit, as grants taken at
    /// once (debt where they exceed the new capacity): a raised limit
    /// admits the difference at once, a lowered one never hands out again
    /// what was granted. Does nothing once the key is tracked here.
    fn carry_over(&self, keyed: &ratekeeper::keyed::Keyed<String, C>, key: &String) {
        let (Some(prev), Some(capacity)) = (&self.previous, self.capacity) else {
            return;
        };
        if keyed.contains(key) || keyed.clock().now_nanos() >= prev.until {
            return;
        }
        let Store::Memory(old) = &*prev.store else {
            return;
        };
        let Some(available) = old.available(key).filter(|_| old.contains(key)) else {
            return;
        };
        let _carrying = prev.carrying.lock().unwrap_or_else(PoisonError::into_inner);
        if keyed.contains(key) {
            return;
        }
        let mut used = prev.capacity.saturating_sub(available);
        // In pieces the bucket can hold; the first empties it, so a request
        // between two pieces is never given what was granted.
        while used > 0 && capacity > 0 {
            let piece = used.min(capacity).min(u64::from(u32::MAX));
            let _ = keyed.reserve(key, piece as u32, None);
            used -= piece;
        }
    }
}

/// What deciding one descriptor came to: the wait before an admission is
/// due, or a refusal with the wait a retry needs, if known; and whether
/// the shared store failed (its failure policy then decided).
struct Outcome {
    result: Result<Duration, Option<Duration>>,
    store_error: bool,
}

impl Outcome {
    fn of(result: Result<Duration, Option<Duration>>) -> Outcome {
        Outcome {
            result,
            store_error: false,
        }
    }
}

impl<C: Clock> Limit<C> {
    pub(super) fn counts(&self) -> bool {
        self.counted.is_some()
    }

    /// Whether the limit is kept on a shared store (decided asynchronously).
    pub(super) fn is_shared(&self) -> bool {
        self.counted.as_ref().is_some_and(|c| c.store.is_shared())
    }

    pub(super) fn live_keys(&self) -> u64 {
        self.counted.as_ref().map_or(0, |c| c.store.live_keys())
    }

    /// Whether this limit refuses `hits` for `key` now without waiting
    /// (and so the whole request is refused before anything is taken);
    /// `false` where the store cannot tell without taking (Redis).
    pub(super) fn lacks(&self, key: &String, hits: u64, asked_wait: Duration) -> bool {
        let Some(c) = &self.counted else {
            return false;
        };
        if self.shadow || hits == 0 || !c.max_wait.min(asked_wait).is_zero() {
            return false;
        }
        c.store.available(key).is_some_and(|a| a < hits)
    }

    /// One descriptor's status and wait, on a limit kept in memory (`None`
    /// for one on a shared store); takes `hits` unless `query_only` or the
    /// limit refuses.
    pub(super) fn decide_now(
        &self,
        key: &String,
        hits: u64,
        asked_wait: Duration,
        query_only: bool,
    ) -> Option<(DescriptorStatus, Duration)> {
        let Some(c) = &self.counted else {
            return Some((unlimited(), Duration::ZERO));
        };
        let Store::Memory(keyed) = &*c.store else {
            return None;
        };
        c.carry_over(keyed, key);
        let outcome = if hits == 0 {
            Ok(Duration::ZERO)
        } else if query_only {
            match c.store.snapshot(key) {
                (Some(a), reset) if a < hits => Err(Some(c.retry_for(hits, reset))),
                _ => Ok(Duration::ZERO),
            }
        } else {
            let Ok(permits) = u32::try_from(hits) else {
                return Some(self.status(c, key, Outcome::of(Err(None))));
            };
            match keyed.reserve(key, permits, Some(c.max_wait.min(asked_wait))) {
                Ok(grant) => Ok(Duration::from_nanos(grant.delay_nanos())),
                Err(e @ KeyedError::Limiter(_)) => Err(e.retry_after()),
                Err(_) => Err(None),
            }
        };
        Some(self.status(c, key, Outcome::of(outcome)))
    }

    /// [`decide_now`](Self::decide_now) on any store: a limit on Redis
    /// takes one round trip (or its failure policy decides); it cannot
    /// tell its remaining permits, shown as 0.
    pub(super) async fn decide(
        &self,
        key: &String,
        hits: u64,
        asked_wait: Duration,
        query_only: bool,
    ) -> (DescriptorStatus, Duration) {
        if let Some(decided) = self.decide_now(key, hits, asked_wait, query_only) {
            return decided;
        }
        let Some(c) = &self.counted else {
            return (unlimited(), Duration::ZERO);
        };
        let outcome = match (&*c.store, u32::try_from(hits)) {
            (_, Ok(0)) => Outcome::of(Ok(Duration::ZERO)),
            (Store::Redis(limiter), Ok(permits)) => {
                let wait = c.max_wait.min(asked_wait);
                let decision = limiter.reserve_for(key, permits, Some(wait)).await;
                Outcome {
                    store_error: decision.backend_error().is_some(),
                    result: match decision.result() {
                        Ok(grant) => Ok(Duration::from_nanos(grant.delay_nanos())),
                        Err(e) => Err(e.retry_after()),
                    },
                }
            }
            _ => Outcome::of(Err(None)),
        };
        self.status(c, key, outcome)
    }

    fn status(
        &self,
        c: &Counted<C>,
        key: &String,
        outcome: Outcome,
    ) -> (DescriptorStatus, Duration) {
        let (remaining, reset) = c.store.snapshot(key);
        let remaining = remaining.unwrap_or(0);
        let (over, retry_after, wait) = match outcome.result {
            Ok(wait) => (false, None, wait),
            Err(retry) => (true, retry, Duration::ZERO),
        };
        let status = DescriptorStatus {
            code: if over && !self.shadow {
                Code::OverLimit
            } else {
                Code::Ok
            },
            limit: Some(c.shown()),
            limit_remaining: u32::try_from(remaining).unwrap_or(u32::MAX),
            duration_until_reset: reset,
            retry_after: if self.shadow { None } else { retry_after },
            shadow_over_limit: over && self.shadow,
            store_error: outcome.store_error,
        };
        (status, wait)
    }
}

/// The status of a descriptor no counted limit matched.
pub(super) fn no_limit() -> DescriptorStatus {
    DescriptorStatus {
        code: Code::Ok,
        limit: None,
        limit_remaining: 0,
        duration_until_reset: Duration::ZERO,
        retry_after: None,
        shadow_over_limit: false,
        store_error: false,
    }
}

/// The status of an unlimited one.
fn unlimited() -> DescriptorStatus {
    DescriptorStatus {
        limit_remaining: u32::MAX,
        ..no_limit()
    }
}

/// The key of a descriptor's state: its entries, each part prefixed by its
/// length so that no two descriptors share one (`4:user3:ann` for
/// `user=ann`).
pub(super) fn entries_key(d: &Descriptor) -> String {
    let text: usize = d.entries.iter().map(|(k, v)| k.len() + v.len() + 8).sum();
    let mut key = String::with_capacity(text);
    for (k, v) in &d.entries {
        for part in [k, v] {
            push_decimal(&mut key, part.len());
            key.push(':');
            key.push_str(part);
        }
    }
    key
}

/// Appends `n` in decimal (without `fmt`'s machinery: this is on every
/// check).
fn push_decimal(out: &mut String, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::entries_key;
    use crate::check::Descriptor;

    fn descriptor(entries: &[(&str, &str)]) -> Descriptor {
        Descriptor {
            entries: entries
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            hits_addend: None,
        }
    }

    #[test]
    fn a_key_is_each_part_behind_its_length() {
        assert_eq!(entries_key(&descriptor(&[("user", "ann")])), "4:user3:ann");
        let long = "v".repeat(1234);
        assert_eq!(
            entries_key(&descriptor(&[("a", ""), ("path", &long)])),
            format!("1:a0:4:path1234:{long}")
        );
    }

    proptest! {
        /// The same text as `format!` writes, so keys already in a shared
        /// store keep their names.
        #[test]
        fn a_key_is_what_format_writes(entries in proptest::collection::vec((".{0,12}", ".{0,120}"), 1..4)) {
            let d = Descriptor { entries: entries.clone(), hits_addend: None };
            let expected: String = entries
                .iter()
                .map(|(k, v)| format!("{}:{k}{}:{v}", k.len(), v.len()))
                .collect();
            prop_assert_eq!(entries_key(&d), expected);
        }
    }
}
