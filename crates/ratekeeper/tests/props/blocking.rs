//! Blocking waits drive the completion protocol (issue 17, item 1): a
//! limiter that only implements `reserve` and `poll_grant` (as a limiter in
//! another crate would) gets a blocking `acquire` that waits for whatever
//! `poll_grant` waits for: time ([`Readiness::SleepUntil`]), a wake
//! ([`Readiness::Pending`]`(None)`), or its own action at a time
//! (`Pending(Some(at))`, on the limiter's clock).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::time::Duration;

use ratekeeper::{
    AcquireError, Clock, Grant, ManualClock, RateLimiter, Readiness, Ticket, WaitStats,
};

use crate::common;

/// Grants one permit ready 1 ms after the call, held (`Pending`) until
/// `open` is set; then the stored waker is woken.
#[derive(Debug)]
struct Gate {
    clock: ManualClock,
    open: AtomicBool,
    waker: Mutex<Option<Waker>>,
    asks: AtomicU32,
    /// Answer `Pending(Some(now + this))` instead of `Pending(None)`.
    act_after: Option<u64>,
}

impl Gate {
    fn new(clock: ManualClock, act_after: Option<u64>) -> Gate {
        Gate {
            clock,
            open: AtomicBool::new(false),
            waker: Mutex::new(None),
            asks: AtomicU32::new(0),
            act_after,
        }
    }

    fn open(&self) {
        self.open.store(true, Ordering::SeqCst);
        if let Some(w) = self.waker.lock().unwrap().take() {
            w.wake();
        }
    }
}

impl RateLimiter for Gate {
    fn reserve(&self, permits: u32, _: Option<Duration>) -> Result<Grant, AcquireError> {
        let now = self.clock.now_nanos();
        let ticket = Ticket::new(7.try_into().unwrap());
        Ok(Grant::new(now, now + 1_000_000, now, permits).with_ticket(ticket))
    }

    fn clock(&self) -> &dyn Clock {
        &self.clock
    }

    fn wait_stats(&self) -> WaitStats {
        WaitStats::default()
    }

    fn poll_grant(&self, grant: &Grant, now: u64, waker: &Waker) -> Readiness {
        assert_eq!(grant.ticket().map(|t| t.get().get()), Some(7));
        self.asks.fetch_add(1, Ordering::SeqCst);
        if self.open.load(Ordering::SeqCst) {
            return Readiness::Go;
        }
        *self.waker.lock().unwrap() = Some(waker.clone());
        match self.act_after {
            Some(d) => {
                if now >= d {
                    // The waiter acted at `d`: that opens the gate.
                    self.open.store(true, Ordering::SeqCst);
                    return Readiness::Go;
                }
                Readiness::Pending(Some(d))
            }
            None => Readiness::Pending(None),
        }
    }
}

#[test]
fn a_blocking_acquire_waits_for_the_wake_of_a_pending_grant() {
    common::within(Duration::from_secs(60), || {
        let gate = Arc::new(Gate::new(ManualClock::new(0), None));
        let opener = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                // Opens only once the waiter has asked (and so is waiting).
                while gate.asks.load(Ordering::SeqCst) == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
                std::thread::sleep(Duration::from_millis(50));
                gate.open();
            })
        };
        let g = gate.acquire();
        assert!(
            gate.open.load(Ordering::SeqCst),
            "went before the gate opened"
        );
        assert_eq!(g.permits(), 1);
        opener.join().unwrap();
    });
}

#[test]
fn a_pending_grant_with_a_time_is_acted_on_at_that_time_on_the_limiters_clock() {
    common::within(Duration::from_secs(60), || {
        let clock = ManualClock::new(0);
        let gate = Gate::new(clock.clone(), Some(5_000_000));
        let g = gate.acquire();
        // The manual clock moves only when slept on: the wait slept to 5 ms.
        assert_eq!(clock.now_nanos(), 5_000_000);
        assert_eq!(g.started_nanos(), 5_000_000);
        assert!(gate.asks.load(Ordering::SeqCst) >= 2);
    });
}

/// A stop that moves a manual clock when slept on, and stops after
/// `sleeps` sleeps (never if `None`).
struct ManualStop {
    clock: ManualClock,
    sleeps: Option<std::cell::Cell<u32>>,
}

impl ratekeeper::wait::Stop for ManualStop {
    fn is_stopped(&self) -> bool {
        self.sleeps.as_ref().is_some_and(|n| n.get() == 0)
    }
    fn sleep(&self, nanos: u64) -> bool {
        self.clock.advance_nanos(nanos);
        if let Some(n) = &self.sleeps {
            n.set(n.get().saturating_sub(1));
        }
        self.is_stopped()
    }
}

#[test]
fn a_stoppable_wait_on_an_inline_pool_fills_it_and_goes() {
    use ratekeeper::pool::{Filling, TokenPool};
    use ratekeeper::Rate;
    common::within(Duration::from_secs(60), || {
        let clock = ManualClock::new(0);
        let pool = TokenPool::builder(Rate::new(1.0).unwrap())
            .filling(Filling::Inline)
            .build_with_clock(clock.clone())
            .unwrap();
        pool.acquire(); // the pre-filled op
        let claim = pool.reserve(1, None).unwrap();
        assert!(claim.delay_nanos() > 500_000_000, "{claim:?}");
        let stop = ManualStop {
            clock: clock.clone(),
            sleeps: None,
        };
        // The waiter sleeps on the stop, asks again, and the ask fills.
        let done = pool.wait_for_or_stop(claim, &stop).expect("not stopped");
        assert!(
            done.started_nanos() >= 1_000_000_000 - 20_000_000,
            "{done:?}"
        );
        assert!(done.started_nanos() <= 1_100_000_000, "{done:?}");
        assert_eq!(pool.waiters(), 0);
    });
}

#[test]
fn a_stopped_wait_withdraws_the_pool_claim() {
    use ratekeeper::pool::{Filling, TokenPool};
    use ratekeeper::Rate;
    common::within(Duration::from_secs(60), || {
        let clock = ManualClock::new(0);
        let pool = TokenPool::builder(Rate::new(1.0).unwrap())
            .filling(Filling::Manual)
            .build_with_clock(clock.clone())
            .unwrap();
        pool.acquire();
        let claim = pool.reserve(1, None).unwrap();
        assert_eq!(pool.waiters(), 1);
        let stop = ManualStop {
            clock: clock.clone(),
            sleeps: Some(std::cell::Cell::new(1)),
        };
        assert_eq!(pool.wait_for_or_stop(claim, &stop), None);
        assert_eq!(pool.waiters(), 0, "the claim was withdrawn");
    });
}
