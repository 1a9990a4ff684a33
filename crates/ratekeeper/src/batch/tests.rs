use super::*;
use crate::{ManualClock, RefillConfig, RefillLimiter, SmoothBursty};

/// A refill limiter of `limit` permits per ms (capacity `limit`), full,
/// on `clock`.
fn refill(limit: i64, clock: &ManualClock) -> RefillLimiter<ManualClock> {
    let config = crate::bucket::RefillConfig::builder()
        .limit_for_period(limit as u64)
        .limit_refresh_period(Duration::from_millis(1))
        .build()
        .unwrap();
    RefillLimiter::new_with_clock(config, clock.clone())
}

/// The permits a bucket limiter has available now.
trait Available {
    fn available(&self) -> i64;
}

impl Available for RefillLimiter<ManualClock> {
    fn available(&self) -> i64 {
        self.available_permits()
    }
}

impl Available for crate::CycleLimiter<ManualClock> {
    fn available(&self) -> i64 {
        self.available_permits()
    }
}

fn available<L: Available>(limiter: &L) -> i64 {
    limiter.available()
}

#[test]
fn leases_double_while_the_handle_outruns_them_and_conserve_permits() {
    let clock = ManualClock::new(0);
    let limiter = refill(100_000, &clock);
    let handle = BatchHandle::new(&limiter);
    // No time passes: the observed rate is unbounded, so each lease is
    // twice the last: 1, 2, 4, ... 1024, 1024, ...
    for _ in 0..3000 {
        let g = handle.acquire();
        assert_eq!(g.permits(), 1);
        assert_eq!(g.delay_nanos(), 0);
    }
    // Leases 1 + 2 + ... + 1024 = 2047, then 1024 more: 3071 leased.
    let leased = 100_000 - available(&limiter);
    assert_eq!(leased, 3071);
    assert_eq!(handle.leased_permits(), 3071 - 3000);
    assert_eq!(handle.release(), 71);
    assert_eq!(handle.leased_permits(), 0);
}

/// A clock that moves 1 ns on every reading, as a real one does between
/// two readings.
struct Ticking(std::sync::atomic::AtomicU64);

impl Clock for Ticking {
    fn now_nanos(&self) -> u64 {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
    fn sleep_nanos(&self, nanos: u64) {
        self.0
            .fetch_add(nanos, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn every_grant_from_a_lease_reads_the_clock_once_and_starts_then() {
    let clock = Ticking(std::sync::atomic::AtomicU64::new(0));
    let config = RefillConfig::builder()
        .limit_for_period(100_000)
        .limit_refresh_period(Duration::from_millis(1))
        .build()
        .unwrap();
    let limiter = RefillLimiter::new_with_clock(config, clock);
    let handle = BatchHandle::new(&limiter);
    let mut reads = 0;
    for _ in 0..2000 {
        let before = limiter.clock().now_nanos();
        let g = handle.reserve(1, None).unwrap();
        assert_eq!(g.delay_nanos(), 0, "{g:?}");
        assert!(g.started_nanos() > before, "a stale start: {g:?}");
        reads += limiter.clock().now_nanos() - before - 1;
    }
    // One reading per grant, and one more (the limiter's) per lease:
    // 11 leases (1, 2, 4, ... 1024).
    assert_eq!(reads, 2000 + 11);
}

#[test]
fn a_stall_outside_the_handle_is_in_the_next_grants_wait() {
    let clock = ManualClock::new(0);
    let limiter = refill(1_000_000, &clock);
    let handle = BatchHandle::new(&limiter);
    for _ in 0..100 {
        handle.acquire();
        clock.advance_nanos(10);
    }
    assert!(handle.leased_permits() > 0, "the next grant is local");
    clock.advance_nanos(13_700_000); // the caller stalls
    let g = handle.acquire();
    assert_eq!(g.started_nanos(), clock.now_nanos());
    assert!(g.wait_nanos() >= 13_700_000, "{g:?}");
}

#[test]
fn the_lease_follows_the_observed_rate() {
    let clock = ManualClock::new(0);
    let limiter = refill(1_000_000, &clock);
    let handle = BatchHandle::new(&limiter).with_max_lease(Duration::from_micros(100));
    // One grant per µs: about 100 grants per 100 µs of the handle's time.
    let mut sizes = Vec::new();
    let mut held = 0;
    for _ in 0..3000 {
        clock.advance_nanos(1_000);
        handle.acquire();
        let now_held = handle.leased_permits();
        if now_held > held || (held == 0 && now_held == 0) {
            sizes.push(now_held + 1); // a new lease, less this grant
        }
        held = now_held;
    }
    // Doubling from 1 up to the observed 100, then about 100 each.
    assert_eq!(&sizes[..7], &[1, 2, 4, 8, 16, 32, 64]);
    for &s in &sizes[8..] {
        assert!((95..=105).contains(&s), "lease sizes {sizes:?}");
    }
}

#[test]
fn bounded_requests_lease_only_what_is_ready_and_refusals_change_nothing() {
    let clock = ManualClock::new(0);
    let limiter = refill(4, &clock); // 4 per ms, capacity 4
    let handle = BatchHandle::new(&limiter);
    // Grow the wanted lease past what the bucket holds.
    for _ in 0..4 {
        handle.try_acquire().unwrap();
    }
    assert_eq!(available(&limiter), 0);
    let err = handle.try_acquire().unwrap_err();
    assert!(matches!(err, AcquireError::WouldWait { .. }), "{err:?}");
    assert_eq!(available(&limiter), 0);
    assert_eq!(handle.leased_permits(), 0);
    // A bounded request that may wait does not lease what is not ready:
    // it waits on the exact path.
    let g = handle.reserve(1, Some(Duration::from_millis(10))).unwrap();
    assert_eq!(g.delay_nanos(), 250_000);
    assert_eq!(handle.leased_permits(), 0);
    handle.wait_for(g);
    // 250 µs later one permit is back: the bounded request takes it.
    clock.advance_nanos(250_000);
    let g = handle.try_acquire().unwrap();
    assert_eq!(g.delay_nanos(), 0);
    assert_eq!(available(&limiter), 0);
}

#[test]
fn a_bounded_request_takes_the_ready_permit_rather_than_wait_for_a_lease() {
    let clock = ManualClock::new(0);
    let limiter = refill(4, &clock); // 4 per ms, capacity 4
    let handle = BatchHandle::new(&limiter);
    // Leases of 1 and 2: three permits out, one left in the bucket.
    for _ in 0..3 {
        handle.acquire();
    }
    assert_eq!((available(&limiter), handle.leased_permits()), (1, 0));
    // The next lease would be 4, three of them 750 µs away. A request
    // that may wait 10 ms leases only what is ready: the one permit,
    // at once.
    let g = handle.reserve(1, Some(Duration::from_millis(10))).unwrap();
    assert_eq!(g.delay_nanos(), 0);
    assert_eq!((available(&limiter), handle.leased_permits()), (0, 0));
}

#[test]
fn a_lease_larger_than_the_limiter_grants_is_capped() {
    let clock = ManualClock::new(0);
    let config = RefillConfig::builder()
        .limit_for_period(8)
        .limit_refresh_period(Duration::from_micros(1))
        .build()
        .unwrap();
    let limiter = RefillLimiter::new_with_clock(config, clock.clone());
    let handle = BatchHandle::new(&limiter);
    let mut granted = 0;
    for _ in 0..100 {
        clock.advance_nanos(1_000);
        granted += handle.acquire().permits();
    }
    assert_eq!(granted, 100);
    assert!(handle.leased_permits() < 8);
    assert_eq!(handle.cap.get(), 8);
    // A request over the limiter's maximum is refused as by the limiter.
    assert!(matches!(
        handle.acquire_n(9),
        Err(AcquireError::InsufficientCapacity { .. })
    ));
}

#[test]
fn grants_from_a_waiting_lease_are_never_ready_before_it() {
    let clock = ManualClock::new(0);
    let limiter = SmoothBursty::builder(1000.0)
        .max_burst_seconds(0.0)
        .build_with_clock(clock.clone())
        .unwrap();
    let handle = BatchHandle::new(&limiter);
    // Leases 1, 2, 4: Guava charges each to the next reservation.
    let a = handle.reserve(1, None).unwrap(); // lease of 1, at 0
    let b = handle.reserve(1, None).unwrap(); // lease of 2, at 1 ms
    let c = handle.reserve(1, None).unwrap(); // from the lease of 2
    let d = handle.reserve(1, None).unwrap(); // lease of 4, at 3 ms
    assert_eq!(a.ready_nanos(), 0);
    assert_eq!(b.ready_nanos(), 1_000_000);
    assert_eq!(c.ready_nanos(), 1_000_000);
    assert_eq!(d.ready_nanos(), 3_000_000);
    assert_eq!(handle.leased_permits(), 3);
    // Waiting for a local grant waits for the lease's time.
    let c = handle.wait_for(c);
    assert_eq!(clock.now_nanos(), 1_000_000);
    assert_eq!(c.started_nanos(), 1_000_000);
    // A bounded request from the lease is refused before its time, and
    // takes nothing.
    let e = handle.try_acquire().unwrap_err();
    assert_eq!(e.retry_after(), Some(Duration::from_millis(2)));
    assert_eq!(handle.leased_permits(), 3);
    let d = handle.wait_for(d);
    assert_eq!(d.started_nanos(), 3_000_000);
    // Now the rest of the lease goes at once, without a clock read.
    for _ in 0..3 {
        let g = handle.try_acquire().unwrap();
        assert_eq!((g.ready_nanos(), g.delay_nanos()), (3_000_000, 0));
    }
}

#[test]
fn cancelling_a_fresh_leases_only_grant_gives_the_lease_back() {
    let clock = ManualClock::new(0);
    let limiter = refill(4, &clock);
    let handle = BatchHandle::new(&limiter).with_max_lease(Duration::from_secs(1));
    handle.acquire(); // lease 1
    handle.acquire(); // lease 2
    handle.acquire();
    assert_eq!(available(&limiter), 1);
    // The next lease, of 4, waits for 3 more permits.
    let g = handle.reserve(1, None).unwrap();
    assert_eq!(g.delay_nanos(), 750_000);
    assert_eq!(handle.leased_permits(), 3);
    assert!(handle.cancel(&g));
    assert_eq!(handle.leased_permits(), 0);
    assert_eq!(available(&limiter), 1);
    assert!(!handle.cancel(&g), "given back once");

    // Once a lease was granted from, its grants cannot go back.
    let clock = ManualClock::new(0);
    let limiter = refill(4, &clock);
    let handle = BatchHandle::new(&limiter).with_max_lease(Duration::from_secs(1));
    for _ in 0..3 {
        handle.acquire();
    }
    let g = handle.reserve(1, None).unwrap();
    let h = handle.reserve(1, None).unwrap();
    assert_eq!((g.ready_nanos(), h.ready_nanos()), (750_000, 750_000));
    assert!(!handle.cancel(&h));
    assert!(!handle.cancel(&g));
    assert_eq!(handle.leased_permits(), 2);
}

#[test]
fn requests_larger_than_the_rest_of_the_lease_take_the_exact_path() {
    let clock = ManualClock::new(0);
    let limiter = refill(1000, &clock);
    let handle = BatchHandle::new(&limiter);
    handle.acquire(); // lease 1
    handle.acquire(); // lease 2: one left
    assert_eq!(handle.leased_permits(), 1);
    let before = available(&limiter);
    let g = handle.acquire_n(5).unwrap();
    assert_eq!(g.permits(), 5);
    assert_eq!(available(&limiter), before - 5);
    assert_eq!(handle.leased_permits(), 1, "the lease is kept");
    assert_eq!(handle.reserve(0, None), Err(AcquireError::ZeroPermits));
}

#[test]
fn a_zero_max_lease_is_the_exact_path() {
    let clock = ManualClock::new(0);
    let limiter = refill(1000, &clock);
    let handle = BatchHandle::new(&limiter).with_max_lease(Duration::ZERO);
    for i in 1..=50 {
        clock.advance_nanos(10);
        handle.acquire();
        assert_eq!(handle.leased_permits(), 0);
        assert_eq!(available(&limiter), 1000 - i);
    }
}

#[test]
fn a_pool_lease_waits_for_its_tokens_then_readies_the_rest() {
    use crate::pool::Filling;
    use crate::{Rate, TokenPool};
    // 5000 permits at 1e6/s from a pool: the time the exact path takes,
    // and the time through a handle.
    let run = |batched: bool| {
        let clock = ManualClock::new(0);
        let pool = TokenPool::builder(Rate::new(1e6).unwrap())
            .filling(Filling::Inline)
            .build_with_clock(clock.clone())
            .unwrap();
        let handle = BatchHandle::new(&pool).with_max_lease(if batched {
            DEFAULT_MAX_LEASE
        } else {
            Duration::ZERO
        });
        let mut last = 0;
        for _ in 0..5000 {
            let g = handle.acquire();
            assert!(g.started_nanos() >= last, "grants go in order");
            last = g.started_nanos();
        }
        clock.now_nanos()
    };
    let (exact, batched) = (run(false), run(true));
    assert_eq!(exact, 4_999_000);
    // A lease is ready when its last token is: the last lease ends at
    // most one lease (100 µs of the handle's grants) after the exact
    // path's last grant.
    assert!(
        (exact..=exact + 100_000).contains(&batched),
        "exact {exact} ns, batched {batched} ns"
    );
}

/// What a [`FakeLimiter`] was asked.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Call {
    Reserve(u32, Option<Duration>),
    Cancel(Grant),
    Poll(Grant),
    WaitFor(Grant),
    WaitTurn,
}

/// A limiter that logs every call a handle makes on it, for what a
/// handle asks of its limiter. Each grant is due at `due` (at once when
/// its reading is past it); a grant that waits carries a fresh ticket
/// when `tickets` is set, as a pool's claim does, and is ready `early`
/// ns before its estimate, as a pool's tokens may be. Its readings are
/// `ahead` ns ahead of the clock (another core's). It grants at most
/// `max` permits at once, and gives back whatever it is asked to.
#[derive(Debug)]
struct FakeLimiter {
    clock: ManualClock,
    due: Cell<u64>,
    tickets: Cell<bool>,
    early: u64,
    ahead: u64,
    max: u32,
    issued: Cell<u32>,
    log: std::cell::RefCell<Vec<Call>>,
}

impl FakeLimiter {
    fn new(clock: &ManualClock) -> FakeLimiter {
        FakeLimiter {
            clock: clock.clone(),
            due: Cell::new(0),
            tickets: Cell::new(false),
            early: 0,
            ahead: 0,
            max: u32::MAX,
            issued: Cell::new(0),
            log: std::cell::RefCell::new(Vec::new()),
        }
    }

    fn now(&self) -> u64 {
        self.clock.now_nanos() + self.ahead
    }

    /// When a waiting grant's wait ends: `early` before its estimate.
    fn fills_at(&self, grant: &Grant) -> u64 {
        grant.ready_nanos().saturating_sub(self.early)
    }

    /// The calls logged since the last look.
    fn calls(&self) -> Vec<Call> {
        self.log.take()
    }
}

impl RateLimiter for FakeLimiter {
    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
        self.log.borrow_mut().push(Call::Reserve(permits, max_wait));
        if permits > self.max {
            return Err(AcquireError::InsufficientCapacity {
                requested: permits,
                max: self.max,
            });
        }
        let now = self.now();
        let ready = self.due.get().max(now);
        if let Some(max) = max_wait.filter(|&max| ready - now > saturating_nanos(max)) {
            return Err(AcquireError::WouldWait {
                wait: Duration::from_nanos(ready - now),
                max_wait: max,
            });
        }
        let grant = Grant::new(ready, ready, now, permits);
        if ready > now && self.tickets.get() {
            self.issued.set(self.issued.get() + 1);
            return Ok(grant.with_claim(self.issued.get()));
        }
        Ok(grant)
    }

    fn clock(&self) -> &dyn Clock {
        &self.clock
    }

    fn wait_stats(&self) -> WaitStats {
        WaitStats::default()
    }

    fn cancel(&self, grant: &Grant) -> bool {
        self.log.borrow_mut().push(Call::Cancel(*grant));
        true
    }

    fn wait_turn(&self) {
        self.log.borrow_mut().push(Call::WaitTurn);
    }

    /// A ticket waits for its fill; other grants for their ready time.
    fn poll_grant(&self, grant: &Grant, now: u64, _: &Waker) -> Readiness {
        self.log.borrow_mut().push(Call::Poll(*grant));
        match grant.claim() {
            Some(_) if self.now() >= self.fills_at(grant) => Readiness::Go,
            Some(_) => Readiness::Pending(None),
            None if grant.ready_nanos() <= now => Readiness::Go,
            None => Readiness::SleepUntil(grant.ready_nanos()),
        }
    }

    fn wait_for(&self, grant: Grant) -> Grant {
        self.log.borrow_mut().push(Call::WaitFor(grant));
        let at = self.fills_at(&grant);
        self.clock.set_nanos(at.saturating_sub(self.ahead));
        grant.started_at(self.now().max(at))
    }
}

#[test]
fn a_request_the_limiter_can_never_grant_is_asked_of_it_once() {
    let clock = ManualClock::new(0);
    let limiter = FakeLimiter {
        max: 8,
        ..FakeLimiter::new(&clock)
    };
    let handle = BatchHandle::new(&limiter);
    let err = handle.acquire_n(9).unwrap_err();
    assert_eq!(
        err,
        AcquireError::InsufficientCapacity {
            requested: 9,
            max: 8
        }
    );
    assert_eq!(limiter.calls(), [Call::WaitTurn, Call::Reserve(9, None)]);
}

#[test]
fn after_a_refused_lease_the_next_is_half_as_large() {
    let clock = ManualClock::new(0);
    let limiter = refill(8, &clock); // 8 per ms, capacity 8
    let handle = BatchHandle::new(&limiter).with_max_lease(Duration::from_secs(1));
    // Leases of 1, 2 and 4: one permit left in the bucket.
    for _ in 0..7 {
        handle.try_acquire().unwrap();
    }
    assert_eq!((available(&limiter), handle.leased_permits()), (1, 0));
    // The lease of 8 is refused; the request takes the last permit.
    handle.try_acquire().unwrap();
    assert_eq!((available(&limiter), handle.leased_permits()), (0, 0));
    // From a full bucket, the next lease is half the refused one.
    clock.advance_nanos(1_000_000);
    handle.try_acquire().unwrap();
    assert_eq!(handle.leased_permits(), 4 - 1);
}

#[test]
fn readings_of_the_limiter_ahead_of_the_handles_clock_are_the_present() {
    let clock = ManualClock::new(0);
    let limiter = FakeLimiter {
        ahead: 500,
        ..FakeLimiter::new(&clock)
    };
    let handle = BatchHandle::new(&limiter);
    handle.acquire(); // a lease of 1, decided at the limiter's 500 ns
    handle.try_acquire().unwrap(); // a lease of 2, ready at once

    // The lease was ready when the limiter decided it: so is the rest
    // of it, though the clock reads 0.
    let g = handle.try_acquire().unwrap();
    assert_eq!((g.ready_nanos(), g.started_nanos()), (500, 500));
    // A lease that waits: its first grant's wait ends at the limiter's
    // 1 µs, when the clock reads 500 ns.
    limiter.due.set(1_000);
    let g = handle.reserve(1, None).unwrap(); // a lease of 4
    let g = handle.wait_for(g);
    assert_eq!((g.started_nanos(), clock.now_nanos()), (1_000, 500));
    let h = handle.try_acquire().unwrap();
    assert_eq!((h.ready_nanos(), h.started_nanos()), (1_000, 1_000));
}

/// The grants a limiter was asked to give back.
fn cancels(limiter: &FakeLimiter) -> Vec<Grant> {
    let calls = limiter.calls().into_iter();
    calls
        .filter_map(|c| match c {
            Call::Cancel(g) => Some(g),
            _ => None,
        })
        .collect()
}

#[test]
fn a_lease_goes_back_only_from_its_only_grant_while_it_waits() {
    let clock = ManualClock::new(0);
    let limiter = FakeLimiter::new(&clock); // no tickets
    let handle = BatchHandle::new(&limiter);
    handle.acquire(); // a lease of 1

    // A lease ready at once: no grant of it goes back, and the limiter
    // is not asked.
    let g = handle.reserve(1, None).unwrap(); // a lease of 2
    assert!(!handle.cancel(&g));
    let h = handle.reserve(1, None).unwrap();
    assert!(!handle.cancel(&h));
    assert_eq!(handle.leased_permits(), 0);
    assert_eq!(cancels(&limiter), []);
    // A lease that waits: its only grant gives it back whole.
    limiter.due.set(1_000);
    let g = handle.reserve(1, None).unwrap(); // a lease of 4
    assert_eq!(handle.leased_permits(), 3);
    assert!(handle.cancel(&g));
    assert_eq!(handle.leased_permits(), 0);
    assert_eq!(cancels(&limiter), [Grant::new(1_000, 1_000, 0, 4)]);
}

/// A handle on `limiter` (its grants given tickets) after leases of 1
/// and 2 ready at once, then a lease of 4 due at 1 µs: the handle and
/// that lease's first two grants.
fn a_waiting_lease_of_four(limiter: &FakeLimiter) -> (BatchHandle<&FakeLimiter>, Grant, Grant) {
    limiter.tickets.set(true);
    let handle = BatchHandle::new(limiter);
    for _ in 0..3 {
        handle.acquire();
    }
    limiter.due.set(1_000);
    let g = handle.reserve(1, None).unwrap();
    let h = handle.reserve(1, None).unwrap();
    (handle, g, h)
}

#[test]
fn grants_from_a_lease_others_were_granted_from_never_go_back() {
    let clock = ManualClock::new(0);
    let limiter = FakeLimiter {
        early: 400,
        ..FakeLimiter::new(&clock)
    };
    let (handle, g, h) = a_waiting_lease_of_four(&limiter);
    // The limiter gives back whatever it is asked to: none of the
    // lease's other grants may reach it, before or after the lease is
    // lowered. The lease's wait ends 400 ns early: the rest of it is ready then.
    let g = handle.wait_for(g);
    assert_eq!(g.started_nanos(), 600);
    let k = handle.reserve(1, None).unwrap();
    assert_eq!(
        (h.ready_nanos(), k.ready_nanos(), k.delay_nanos()),
        (1_000, 600, 0)
    );
    assert!(!handle.cancel(&h));
    assert!(!handle.cancel(&k));
    assert_eq!(handle.leased_permits(), 1);
    assert_eq!(cancels(&limiter), []);
}

#[test]
fn a_grant_from_the_exact_path_goes_back_even_when_due_with_the_lease() {
    use crate::{CycleConfig, CycleLimiter};
    let clock = ManualClock::new(0);
    let config = CycleConfig::builder()
        .limit_for_period(8)
        .limit_refresh_period(Duration::from_millis(1))
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let limiter = CycleLimiter::new_with_clock(config, clock.clone());
    limiter.reserve(8, None).unwrap(); // this cycle's permits
    let handle = BatchHandle::new(&limiter);
    let lease = handle.reserve(1, None).unwrap(); // a lease of 1
    handle.reserve(1, None).unwrap(); // a lease of 2
    assert_eq!(handle.leased_permits(), 1);
    // More than the lease holds: the exact path, in the same cycle.
    let g = handle.reserve(2, None).unwrap();
    assert_eq!(
        (g.scheduled_nanos(), g.ready_nanos()),
        (lease.scheduled_nanos(), lease.ready_nanos())
    );
    let before = available(&limiter);
    assert!(handle.cancel(&g));
    assert_eq!(available(&limiter), before + 2);
    assert_eq!(handle.leased_permits(), 1);
}

#[test]
fn async_waits_ask_the_limiter_only_about_a_leases_first_grant() {
    let clock = ManualClock::new(0);
    let limiter = FakeLimiter {
        early: 400,
        ..FakeLimiter::new(&clock)
    };
    let (handle, g, h) = a_waiting_lease_of_four(&limiter);
    limiter.calls();
    let waker = Waker::noop();
    // The lease's other grants sleep until its time.
    assert_eq!(
        handle.poll_grant(&h, 0, waker),
        Readiness::SleepUntil(1_000)
    );
    assert_eq!(handle.poll_grant(&h, 1_000, waker), Readiness::Go);
    assert_eq!(limiter.calls(), []);
    // The first asks the limiter about the lease, whose ticket waits for
    // its fill; until then the rest of the lease waits too.
    assert_eq!(handle.poll_grant(&g, 0, waker), Readiness::Pending(None));
    let lease = Grant::new(1_000, 1_000, 0, 4).with_claim(1);
    assert_eq!(limiter.calls(), [Call::Poll(lease)]);
    let e = handle.try_acquire().unwrap_err();
    assert_eq!(e.retry_after(), Some(Duration::from_nanos(1_000)));
    // The fill comes 400 ns early: the rest of the lease is ready then.
    clock.advance_nanos(600);
    assert_eq!(handle.poll_grant(&g, 600, waker), Readiness::Go);
    let k = handle.try_acquire().unwrap();
    assert_eq!((k.ready_nanos(), k.delay_nanos()), (600, 0));
}

#[test]
fn acquire_waits_its_turn_at_the_limiter_only_before_a_lease() {
    let clock = ManualClock::new(0);
    let limiter = FakeLimiter::new(&clock);
    let handle = BatchHandle::new(&limiter);
    handle.acquire(); // a lease of 1
    handle.acquire(); // a lease of 2
    handle.acquire(); // from the lease
    assert_eq!(
        limiter.calls(),
        [
            Call::WaitTurn,
            Call::Reserve(1, None),
            Call::WaitTurn,
            Call::Reserve(2, None)
        ]
    );
}

#[test]
fn the_handle_reports_its_limiters_wait_stats_and_policy() {
    let clock = ManualClock::new(0);
    let policy = WaitPolicy::precise(Duration::from_micros(5));
    let limiter = refill(4, &clock).with_wait_policy(policy);
    let handle = BatchHandle::new(&limiter);
    for _ in 0..3 {
        handle.acquire(); // leases of 1 and 2
    }
    handle.reserve(1, None).unwrap(); // a lease of 4, 750 µs ahead
    assert_eq!(limiter.wait_stats().backlog_nanos, 750_000);
    assert_eq!(handle.wait_stats(), limiter.wait_stats());
    assert_eq!(handle.wait_policy(), policy);
}

#[test]
fn the_debug_output_shows_the_lease() {
    let clock = ManualClock::new(0);
    let limiter = refill(1000, &clock);
    let handle = BatchHandle::new(&limiter);
    handle.acquire(); // a lease of 1
    handle.acquire(); // a lease of 2
    let debug = format!("{handle:?}");
    assert!(
        debug.starts_with("BatchHandle { limiter: RefillLimiter"),
        "{debug:?}"
    );
    assert!(
        debug.ends_with("leased_permits: 1, lease_size: 2, max_lease_nanos: 100000, .. }"),
        "{debug:?}"
    );
}
