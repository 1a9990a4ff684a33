//! A [`BatchHandle`] over a Resilience4j limiter: the leases it asks for,
//! seen through the limiter's events.

use std::time::Duration;

use ratekeeper::{BatchHandle, ManualClock, RateLimiter};
use ratekeeper_resilience4j::{ConfigBuilder, PermitLimiter, RefillLimiter};

/// A refill limiter of `limit` permits per ms (capacity `limit`), full,
/// on `clock`.
fn refill(limit: i64, clock: &ManualClock) -> RefillLimiter<ManualClock> {
    let config = ConfigBuilder::new()
        .limit_for_period(limit)
        .limit_refresh_period(Duration::from_millis(1))
        .build()
        .unwrap();
    RefillLimiter::new_with_clock("t", config, clock.clone())
}

#[test]
fn a_bounded_request_fails_once_in_the_events_when_its_lease_is_one_permit() {
    use std::sync::{Arc, Mutex};
    let clock = ManualClock::new(0);
    let limiter = refill(2, &clock); // 2 per ms, capacity 2
    let failed = Arc::new(Mutex::new(Vec::new()));
    let f = Arc::clone(&failed);
    limiter
        .events()
        .on_failure(move |e| f.lock().unwrap().push(e.permits()));
    let handle = BatchHandle::new(&limiter).with_max_lease(Duration::from_secs(1));
    handle.try_acquire().unwrap(); // lease 1
    handle.try_acquire().unwrap(); // lease 2 refused (1 left): exact
    assert_eq!(*failed.lock().unwrap(), [2]);
    // The lease was halved to 1 and does not grow while refused: the
    // request is its own lease, refused once.
    assert!(handle.try_acquire().is_err());
    assert!(handle.try_acquire().is_err());
    assert_eq!(*failed.lock().unwrap(), [2, 1, 1]);
    // Once a lease is granted, leases grow again.
    clock.advance_nanos(1_000_000);
    handle.try_acquire().unwrap(); // lease 1 (the request)
    clock.advance_nanos(1_000_000);
    handle.try_acquire().unwrap(); // lease 2, from a full bucket
    assert_eq!(*failed.lock().unwrap(), [2, 1, 1]);
    assert_eq!(handle.leased_permits(), 1);
}
