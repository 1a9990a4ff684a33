//! Leases: permits (the bucket) or slots of the schedule (the Pacer) taken
//! from the server in one round trip and handed out here, and the
//! coalescing of concurrent requests into one such round trip.
//!
//! A lease is sized from the rate this process has been granted, to cover
//! one lease window (default 1 ms) of it, and never more than one window
//! of the whole limit; concurrent requests that find the lease empty wait
//! for one refill sized for all of them (coalescing: one round trip for
//! many requests).
//!
//! What a lease costs, and its bound:
//!
//! * **Pacer**: leased slots are slots of the shared schedule, each used
//!   at its own time (a grant's scheduled and ready times are its slot's),
//!   so the schedule's rate holds exactly. What a lease changes is the
//!   order of ops across processes, and that a process late to use its
//!   leased slots (descheduled, paused) may use them closer together than
//!   strict mode spaces them: at most one lease of ops, one window of this
//!   process's rate. Slots still unused one window after they were ready
//!   are dropped (time not used, as strict mode would drop it).
//! * **Bucket**: leased permits were taken from the bucket when leased and
//!   are used later, so over any interval this process can admit up to
//!   the permits it held unused at its start beyond what the bucket
//!   allowed then: at most one lease, one window of its rate. Summed over
//!   all processes: at most one window of the whole limit's rate. Leased
//!   permits expire one window after they were taken.
//!
//! Leases are opt-in ([`RedisLimiterBuilder::lease`](crate::RedisLimiterBuilder::lease)).

use std::time::Duration;

use ratekeeper::Grant;

/// Permits (or slots) leased and not yet handed out.
#[derive(Debug)]
pub(crate) struct Lease {
    /// The lease window (ns).
    window: u64,
    /// The most one lease holds (one window of the whole limit).
    max: u32,
    /// The Pacer's slot (ns), 0 for the bucket.
    step: u64,
    left: u32,
    /// Pacer: the next slot's scheduled time and its ready floor (local).
    next_scheduled: u64,
    next_ready: u64,
    /// Past this reading, what is left is dropped.
    expires: u64,
    /// Permits handed out (here or by the server) since `since`.
    count: u64,
    since: u64,
    /// Permits a second this process was granted, last measured.
    rate: f64,
}

/// What the lease says to a request.
#[derive(Debug, PartialEq)]
pub(crate) enum Take {
    /// Granted from the lease.
    Granted(Grant),
    /// The lease's next slot is later than the request may wait (the
    /// server's would be later still): refused, with that wait (ns).
    TooLate(u64),
    /// Nothing (or not enough) left: ask the server.
    Empty,
}

impl Lease {
    /// An empty lease for `window`, slot `step` ns (0: the bucket), at most
    /// `max` a lease, measuring from `now`.
    pub(crate) fn new(window: Duration, step: u64, max: u32, now: u64) -> Lease {
        Lease {
            window: u64::try_from(window.as_nanos()).unwrap_or(u64::MAX),
            max: max.max(1),
            step,
            left: 0,
            next_scheduled: 0,
            next_ready: 0,
            expires: 0,
            count: 0,
            since: now,
            rate: 0.0,
        }
    }

    /// Takes `permits` from the lease at `now`, for a request that may wait
    /// `max_wait` ns (`None`: any wait).
    pub(crate) fn take(&mut self, permits: u32, now: u64, max_wait: Option<u64>) -> Take {
        if self.left < permits || now > self.expires {
            // Too few for this request, or stale: dropped (used by none).
            self.left = 0;
            return Take::Empty;
        }
        if self.step == 0 {
            self.left -= permits;
            self.count += u64::from(permits);
            return Take::Granted(Grant::new(now, now, now, permits));
        }
        // As the Pacer: ready when its slot (and spacing) allows, or now if
        // that has passed.
        let ready = self.next_ready.max(self.next_scheduled).max(now);
        let wait = ready - now;
        if max_wait.is_some_and(|max| wait > max) {
            return Take::TooLate(wait);
        }
        let grant = Grant::new(self.next_scheduled, ready, now, permits);
        self.advance(permits);
        self.count += u64::from(permits);
        Take::Granted(grant)
    }

    /// How many permits to ask the server for at `now`, for a request of
    /// `permits` with `waiting` more requests queued behind it: one window
    /// of the measured rate, at least all of the requests, at most one
    /// window of the limit.
    pub(crate) fn size(&mut self, now: u64, permits: u32, waiting: u32) -> u32 {
        let elapsed = now.saturating_sub(self.since);
        if elapsed >= self.window.saturating_mul(4) && elapsed > 0 {
            self.rate = self.count as f64 * 1e9 / elapsed as f64;
            self.count = 0;
            self.since = now;
        }
        let by_rate = (self.rate * self.window as f64 / 1e9).ceil();
        let wanted = by_rate.min(f64::from(self.max)) as u32;
        wanted
            .max(permits.saturating_add(waiting).min(self.max))
            .max(permits)
    }

    /// Fills the lease from the server's grant of `leased` permits (which
    /// starts at `grant`'s times) and hands `permits` of them to the
    /// request; `now` is the local reading at the answer.
    pub(crate) fn fill(&mut self, grant: &Grant, leased: u32, permits: u32, now: u64) -> Grant {
        self.count += u64::from(permits);
        if self.step == 0 {
            self.left = leased - permits;
            self.expires = now.saturating_add(self.window);
            return Grant::new(grant.scheduled_nanos(), grant.ready_nanos(), now, permits);
        }
        self.left = leased;
        self.next_scheduled = grant.scheduled_nanos();
        self.next_ready = grant.ready_nanos();
        self.advance(permits);
        // Slots unused one window after they were ready are dropped.
        let last_ready = self
            .next_ready
            .saturating_add(u64::from(self.left.saturating_sub(1)).saturating_mul(self.step));
        self.expires = last_ready.saturating_add(self.window);
        Grant::new(grant.scheduled_nanos(), grant.ready_nanos(), now, permits)
    }

    /// Notes `permits` granted by the server outside the lease (for the
    /// rate the lease is sized from).
    pub(crate) fn count(&mut self, permits: u32) {
        self.count += u64::from(permits);
    }

    fn advance(&mut self, permits: u32) {
        let span = u64::from(permits).saturating_mul(self.step);
        self.next_scheduled = self.next_scheduled.saturating_add(span);
        self.next_ready = self.next_ready.saturating_add(span);
        self.left -= permits;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_pacer_lease_hands_out_the_block_slot_by_slot() {
        // A 10 µs slot; the server granted 5 slots from 1 ms (ready 1 ms).
        let mut l = Lease::new(Duration::from_millis(1), 10_000, 100, 0);
        let block = Grant::new(MS, MS, MS, 5);
        let first = l.fill(&block, 5, 2, MS);
        assert_eq!((first.scheduled_nanos(), first.permits()), (MS, 2));
        let Take::Granted(g) = l.take(1, MS, None) else {
            panic!("leased")
        };
        assert_eq!(g.scheduled_nanos(), MS + 20_000);
        assert_eq!(g.ready_nanos(), MS + 20_000, "waits for its own slot");
        // A bounded request refused by the lease: its slot is 30 µs away.
        assert_eq!(l.take(1, MS, Some(10_000)), Take::TooLate(30_000));
        let Take::Granted(g) = l.take(2, MS + 40_000, Some(0)) else {
            panic!("leased")
        };
        assert_eq!(
            (g.scheduled_nanos(), g.ready_nanos()),
            (MS + 30_000, MS + 40_000)
        );
        assert_eq!(l.take(1, MS + 40_000, None), Take::Empty, "all handed out");
    }

    #[test]
    fn stale_slots_and_expired_permits_are_dropped() {
        let mut l = Lease::new(Duration::from_millis(1), 10_000, 100, 0);
        l.fill(&Grant::new(0, 0, 0, 3), 3, 1, 0);
        // The last slot was ready at 20 µs: dropped a window after.
        assert_eq!(l.take(1, 20_000 + MS + 1, None), Take::Empty);
        let mut b = Lease::new(Duration::from_millis(1), 0, 100, 0);
        b.fill(&Grant::new(0, 0, 0, 4), 4, 1, 0);
        assert!(matches!(b.take(1, MS, None), Take::Granted(_)));
        assert_eq!(b.take(1, MS + 1, None), Take::Empty, "expired");
    }

    #[test]
    fn the_size_follows_the_rate_and_the_queue_within_the_cap() {
        let mut l = Lease::new(Duration::from_millis(1), 0, 50, 0);
        assert_eq!(l.size(0, 1, 0), 1, "no rate known: the request alone");
        assert_eq!(l.size(0, 1, 9), 10, "coalesced with those waiting");
        assert_eq!(l.size(0, 1, 99), 50, "never past the cap");
        // 40 permits in 4 ms: 10 000 a second, 10 a window.
        l.count(40);
        assert_eq!(l.size(4 * MS, 1, 0), 10);
        assert_eq!(l.size(4 * MS, 20, 0), 20, "at least the request");
    }
}
