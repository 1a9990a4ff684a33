//! One descriptor's decision on its limit, in memory or on Redis, and the
//! draft RateLimit fields of a response.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ratekeeper::keyed::KeyedError;
use ratekeeper::{Clock, Recovery};
use ratekeeper_tower::headers::{ratelimit_item, retry_after_secs};
use ratekeeper_tower::Policy;

use super::store::Store;
use crate::check::{Code, CurrentLimit, Descriptor, DescriptorStatus};
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
    pub(super) current: CurrentLimit,
    pub(super) policy: Policy,
    pub(super) id: Arc<str>,
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

impl<C: Clock> Counted<C> {
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
        headers: &mut Headers,
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
            match keyed.available(key) {
                Some(a) if a < hits => Err(c
                    .permit_nanos
                    .map(|ns| Duration::from_nanos(ns.saturating_mul(hits - a)))),
                _ => Ok(Duration::ZERO),
            }
        } else {
            let Ok(permits) = u32::try_from(hits) else {
                return Some(self.status(c, key, Outcome::of(Err(None)), headers));
            };
            match keyed.reserve(key, permits, Some(c.max_wait.min(asked_wait))) {
                Ok(grant) => Ok(Duration::from_nanos(grant.delay_nanos())),
                Err(e @ KeyedError::Limiter(_)) => Err(e.retry_after()),
                Err(_) => Err(None),
            }
        };
        Some(self.status(c, key, Outcome::of(outcome), headers))
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
        headers: &mut Headers,
    ) -> (DescriptorStatus, Duration) {
        if let Some(decided) = self.decide_now(key, hits, asked_wait, query_only, headers) {
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
        self.status(c, key, outcome, headers)
    }

    fn status(
        &self,
        c: &Counted<C>,
        key: &String,
        outcome: Outcome,
        headers: &mut Headers,
    ) -> (DescriptorStatus, Duration) {
        let remaining = c.store.available(key).unwrap_or(0);
        let reset = match c.store.recovery(key) {
            Some(Recovery::Debt { nanos }) => Duration::from_nanos(nanos),
            _ => Duration::ZERO,
        };
        let (over, retry_after, wait) = match outcome.result {
            Ok(wait) => (false, None, wait),
            Err(retry) => (true, retry, Duration::ZERO),
        };
        headers.add(&c.policy, remaining, reset, over.then_some(retry_after));
        let status = DescriptorStatus {
            code: if over && !self.shadow {
                Code::OverLimit
            } else {
                Code::Ok
            },
            current_limit: Some(c.current.clone()),
            limit_remaining: u32::try_from(remaining).unwrap_or(u32::MAX),
            duration_until_reset: reset,
            retry_after: if self.shadow { None } else { retry_after },
            shadow_over_limit: over && self.shadow,
            limit_id: Some(Arc::clone(&c.id)),
            store_error: outcome.store_error,
        };
        (status, wait)
    }
}

/// The status of a descriptor no counted limit matched.
pub(super) fn no_limit() -> DescriptorStatus {
    DescriptorStatus {
        code: Code::Ok,
        current_limit: None,
        limit_remaining: 0,
        duration_until_reset: Duration::ZERO,
        retry_after: None,
        shadow_over_limit: false,
        limit_id: None,
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
/// length so that no two descriptors share one.
pub(super) fn entries_key(d: &Descriptor) -> String {
    let mut key = String::new();
    for (k, v) in &d.entries {
        key.push_str(&k.len().to_string());
        key.push(':');
        key.push_str(k);
        key.push_str(&v.len().to_string());
        key.push(':');
        key.push_str(v);
    }
    key
}

/// The draft RateLimit fields of one response, one list member per
/// counted descriptor.
#[derive(Default)]
pub(super) struct Headers {
    policies: Vec<String>,
    limits: Vec<String>,
    retry_after: Option<Duration>,
}

impl Headers {
    fn add(
        &mut self,
        policy: &Policy,
        remaining: u64,
        reset: Duration,
        refused: Option<Option<Duration>>,
    ) {
        let reset_secs = reset.as_secs() + u64::from(reset.subsec_nanos() > 0);
        self.policies.push(policy.to_string());
        self.limits
            .push(ratelimit_item(policy, remaining, reset_secs));
        if let Some(retry) = refused {
            let retry = retry.unwrap_or(reset);
            self.retry_after = Some(self.retry_after.map_or(retry, |r| r.max(retry)));
        }
    }

    pub(super) fn finish(self, overall: Code) -> Vec<(String, String)> {
        if self.limits.is_empty() {
            return Vec::new();
        }
        let mut out = vec![
            ("ratelimit-policy".to_owned(), self.policies.join(", ")),
            ("ratelimit".to_owned(), self.limits.join(", ")),
        ];
        if let (Code::OverLimit, Some(retry)) = (overall, self.retry_after) {
            out.push((
                "retry-after".to_owned(),
                retry_after_secs(retry).to_string(),
            ));
        }
        out
    }
}
