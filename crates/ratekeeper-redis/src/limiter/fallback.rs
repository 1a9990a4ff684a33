//! The failure policy's local limiter, and the share of the key this
//! process has been using.
//!
//! **When the fallback starts.** The local limiter is built when it takes
//! over (the first failure after the server last answered), never before:
//! a limiter built at start would hold the credit it gathered while nobody
//! used it (a full bucket, a schedule far behind) and spend it at once. It
//! starts owing what the server last said: the Pacer's next slot no sooner
//! than the shared schedule's, the bucket holding this process's share of
//! the permits the shared bucket held then (refilled since at the local
//! rate) or owing its share of the shared bucket's debt. Once the server
//! answers again, the next failure builds a new one.
//!
//! **After an outage.** The permits the local limiter granted are charged
//! to the key with the next request the server answers: counted on it and
//! taken from its backlog (the Pacer's slots behind the clock, the
//! bucket's permits), never pushed ahead of the clock. So a schedule that
//! catches up lost time (a burst ratio above 1, average mode) does not
//! grant the outage again.
//!
//! **The learned share.** Each key counts the permits it has granted (all
//! processes together), and every answer says the count. Over windows of a
//! second, this process's own permits over the key's is its share of the
//! key's use; [`FailurePolicy::LocalLearned`](super::FailurePolicy) keeps
//! that share of the rate while the server fails. Shares learned by every
//! process sharing a key add up to about one, so the processes together
//! keep about the key's rate.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use ratekeeper::config::AnyLimiter;
use ratekeeper::{Clock, ConfigError, DefaultClock, RateLimiter};

use crate::limit::SharedLimit;

/// The smallest share a learned fallback keeps: a process that was granted
/// nothing in the last window still decides at this part of the rate.
pub const MIN_LEARNED_SHARE: f64 = 0.001;

/// How long one window of the learned share runs.
const WINDOW_NANOS: u64 = 1_000_000_000;

/// The local limiter, built when it takes over, and what it starts from.
#[derive(Debug, Default)]
pub(super) struct Fallback {
    /// The limiter deciding now, if one took over since the server last
    /// answered.
    built: Mutex<Option<Arc<AnyLimiter<DefaultClock>>>>,
    /// The server answered since `built` was built (or nothing is): the
    /// next failure builds a new one.
    stale: AtomicBool,
    /// What the server last said, and the share meter.
    seen: Mutex<Seen>,
    /// Permits the local limiter granted that the key has not been
    /// charged with yet.
    charge: AtomicU64,
}

/// What the server's answers on this limiter's own key said.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    /// Whether anything was said yet.
    known: bool,
    /// When (local ns) the last answer came.
    at: u64,
    /// The Pacer: the local time of the schedule's next slot then.
    next: u64,
    /// The bucket: the permits it held then (negative: owed).
    available: i64,
    meter: Meter,
}

/// This process's permits against the key's, over the current window.
#[derive(Debug, Default, Clone, Copy)]
struct Meter {
    started: bool,
    /// When (local ns) the window started.
    start: u64,
    /// Permits the server granted this process, all told.
    own: u64,
    /// `own` and the key's count at the window's start.
    own0: u64,
    key0: u64,
    /// The key's count at the last answer.
    key: u64,
    /// The last whole window's share.
    learned: Option<f64>,
}

impl Meter {
    /// Counts an answer at `now` that granted this process `granted`
    /// permits and said the key's count is `key`.
    fn note(&mut self, now: u64, granted: u64, key: u64) {
        self.own = self.own.wrapping_add(granted);
        if !self.started || key < self.key {
            // The first answer, or the key started again (it expired, or
            // the server lost it): a new window.
            *self = Meter {
                started: true,
                start: now,
                own0: self.own,
                key0: key,
                key,
                ..*self
            };
            return;
        }
        self.key = key;
        if now.saturating_sub(self.start) >= WINDOW_NANOS {
            let all = key - self.key0;
            if all > 0 {
                let mine = self.own.wrapping_sub(self.own0) as f64 / all as f64;
                self.learned = Some(mine.clamp(MIN_LEARNED_SHARE, 1.0));
            }
            self.start = now;
            self.own0 = self.own;
            self.key0 = key;
        }
    }
}

impl Fallback {
    pub(super) fn new() -> Fallback {
        Fallback {
            stale: AtomicBool::new(true),
            ..Fallback::default()
        }
    }

    /// Notes an answer on the limiter's own key at `now`: the Pacer's
    /// schedule `ahead` ns past the server's clock (negative: behind), or
    /// the bucket holding `available` permits; the permits it granted this
    /// process, and the key's count.
    pub(super) fn note(&self, now: u64, said: Said, granted: u64, key: u64) {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.known = true;
        seen.at = now;
        match said {
            Said::Ahead(ahead) => {
                seen.next = now.saturating_add(u64::try_from(ahead).unwrap_or(0));
            }
            Said::Available(n) => seen.available = n,
        }
        seen.meter.note(now, granted, key);
        drop(seen);
        // Ordering: Relaxed; the flag only asks the next failure to build
        // anew, and `built`'s mutex orders the build itself.
        self.stale.store(true, Ordering::Relaxed);
    }

    /// Counts `permits` the local limiter granted, to charge to the key.
    pub(super) fn charge(&self, permits: u32) {
        // Ordering: Relaxed; a count the next server request takes whole.
        self.charge.fetch_add(u64::from(permits), Ordering::Relaxed);
    }

    /// The permits to charge to the key with the next request (none left
    /// to charge after).
    pub(super) fn take_charge(&self) -> u64 {
        // Ordering: Relaxed; see `charge`.
        self.charge.swap(0, Ordering::Relaxed)
    }

    /// `permits` taken for a request that failed: charged with a later one.
    pub(super) fn give_back_charge(&self, permits: u64) {
        // Ordering: Relaxed; see `charge`.
        self.charge.fetch_add(permits, Ordering::Relaxed);
    }

    /// The share of the key's grants this process had over the last whole
    /// window, if one has passed.
    pub(super) fn learned_share(&self) -> Option<f64> {
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.meter.learned
    }

    /// The limiter deciding now: the one built at this outage's first
    /// failure, or a new one at `share` of `limit`'s rate, starting from
    /// what the server last said.
    ///
    /// # Errors
    ///
    /// The in-memory limiter's, if it cannot keep `share` of the rate.
    pub(super) fn limiter(
        &self,
        limit: &SharedLimit,
        share: f64,
        clock: DefaultClock,
    ) -> Result<Arc<AnyLimiter<DefaultClock>>, ConfigError> {
        let mut built = self.built.lock().unwrap_or_else(PoisonError::into_inner);
        // Ordering: Relaxed; see `note`.
        let stale = self.stale.swap(false, Ordering::Relaxed);
        if let (false, Some(limiter)) = (stale, built.as_ref()) {
            return Ok(Arc::clone(limiter));
        }
        let seen = *self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let limiter = Arc::new(start(limit, share, clock, &seen)?);
        *built = Some(Arc::clone(&limiter));
        Ok(limiter)
    }
}

/// What one answer said of the limit's state.
#[derive(Debug, Clone, Copy)]
pub(super) enum Said {
    /// The Pacer: the schedule's next slot, ns past the server's clock.
    Ahead(i64),
    /// The bucket: the permits it holds (negative: owes).
    Available(i64),
}

/// A local limiter at `share` of `limit`, owing what `seen` says.
///
/// Generic over the clock only so that tests can start it on a manual
/// clock; the fallback starts it on the [`DefaultClock`].
fn start<C: Clock + Clone + 'static>(
    limit: &SharedLimit,
    share: f64,
    clock: C,
    seen: &Seen,
) -> Result<AnyLimiter<C>, ConfigError> {
    let now = clock.now_nanos();
    match *limit {
        SharedLimit::Pacer { rate, .. } => {
            let limiter = limit.scaled_config(share)?.build_with_clock(clock)?;
            // The first slot no sooner than the shared schedule's next: the
            // slots up to it are taken at once.
            let owed = seen.next.saturating_sub(now);
            if seen.known && owed > 0 {
                let op = (1e9 / (rate.get() * share)).max(1.0);
                let slots = (owed as f64 / op).ceil().min(f64::from(u32::MAX)) as u32;
                let _ = limiter.reserve(slots.max(1), None);
            }
            Ok(limiter)
        }
        SharedLimit::Refill(c) => {
            if !seen.known {
                return limit.scaled_config(share)?.build_with_clock(clock);
            }
            // This process's share of what the bucket held, refilled since
            // at the local rate, at most the capacity.
            let npp = c.nanos_per_permit() as f64 / share;
            let since = now.saturating_sub(seen.at) as f64 / npp;
            let held = (seen.available as f64 * share + since).min(c.capacity() as f64);
            let initial = held.max(0.0).floor() as u32;
            let limiter = limit
                .scaled_config_holding(share, Some(initial))?
                .build_with_clock(clock)?;
            if held < 0.0 {
                let owed = (-held).ceil().min(c.capacity() as f64) as u32;
                if owed > 0 {
                    let _ = limiter.reserve(owed, None);
                }
            }
            Ok(limiter)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ratekeeper::bucket::RefillConfig;
    use ratekeeper::{ManualClock, Rate};

    use super::*;

    const MS: u64 = 1_000_000;

    /// An answer that came at `at` (local ns), saying nothing else yet.
    fn said_at(at: u64) -> Seen {
        Seen {
            known: true,
            at,
            ..Seen::default()
        }
    }

    /// A strict Pacer at 100/s: at share 0.5, a local slot every 20 ms.
    fn pacer() -> SharedLimit {
        SharedLimit::pacer(Rate::new(100.0).unwrap(), 1.0).unwrap()
    }

    /// A bucket of 10 permits refilled at 10/s (one per 100 ms), full when
    /// built: at share 0.5, a local permit every 200 ms.
    fn bucket() -> SharedLimit {
        let c = RefillConfig::builder()
            .limit_for_period(10)
            .limit_refresh_period(Duration::from_secs(1))
            .permit_capacity(10)
            .initial_permits(10)
            .timeout(Duration::ZERO)
            .build()
            .unwrap();
        SharedLimit::Refill(c)
    }

    /// The permits `limiter` admits now, one at a time, without waiting.
    fn admitted_now(limiter: &impl RateLimiter) -> u32 {
        let mut n = 0;
        while limiter.try_acquire().is_ok() {
            n += 1;
            assert!(n <= 1_000, "admits without end");
        }
        n
    }

    #[test]
    fn a_pacer_fallback_owing_35_ms_grants_first_at_the_local_slot_after_it() {
        // The shared schedule's next slot is 35 ms away; the local slots
        // (20 ms apart) at 0 and 20 ms come before it and are taken, so
        // the first grant is at 40 ms: never before the shared slot.
        let now = 1_000 * MS;
        let clock = ManualClock::new(now);
        let seen = Seen {
            next: now + 35 * MS,
            ..said_at(now - 5 * MS)
        };
        let local = start(&pacer(), 0.5, clock, &seen).unwrap();
        let first = local.reserve(1, None).unwrap();
        assert_eq!(first.ready_nanos() - now, 40 * MS, "first grant's wait");
    }

    #[test]
    fn a_pacer_fallback_whose_shared_slot_is_due_grants_at_once() {
        // The shared schedule's next slot is now, or behind the clock:
        // nothing is owed, and no slot is taken.
        let now = 1_000 * MS;
        for next in [now, now - 5 * MS] {
            let clock = ManualClock::new(now);
            let seen = Seen {
                next,
                ..said_at(now - 10 * MS)
            };
            let local = start(&pacer(), 0.5, clock, &seen).unwrap();
            let first = local.reserve(1, None).unwrap();
            assert_eq!(first.ready_nanos() - now, 0, "next slot at {next}");
        }
    }

    #[test]
    fn a_bucket_fallback_before_any_answer_starts_as_configured() {
        let clock = ManualClock::new(400 * MS);
        let local = start(&bucket(), 0.5, clock, &Seen::default()).unwrap();
        assert_eq!(admitted_now(&local), 10, "the configured initial permits");
    }

    #[test]
    fn a_bucket_fallback_holds_its_share_refilled_since_at_the_local_rate() {
        // The shared bucket held 6 at 0 ms: this process's half is 3, and
        // 400 ms at one permit per 200 ms adds 2.
        let clock = ManualClock::new(400 * MS);
        let seen = Seen {
            available: 6,
            ..said_at(0)
        };
        let local = start(&bucket(), 0.5, clock, &seen).unwrap();
        assert_eq!(admitted_now(&local), 5);
    }

    #[test]
    fn a_bucket_fallback_owes_its_share_of_the_debt_less_the_refill_since() {
        // The shared bucket owed 4 at 0 ms: this process owes 2, of which
        // the 200 ms since refilled 1. The one still owed refills by
        // 400 ms, the first permit by 600 ms.
        let clock = ManualClock::new(200 * MS);
        let seen = Seen {
            available: -4,
            ..said_at(0)
        };
        let local = start(&bucket(), 0.5, clock, &seen).unwrap();
        let first = local.reserve(1, None).unwrap();
        assert_eq!(first.ready_nanos(), 600 * MS, "first grant's ready time");
    }

    #[test]
    fn the_share_is_this_process_over_the_key_per_window() {
        let mut m = Meter::default();
        m.note(0, 1, 1);
        assert_eq!(m.learned, None, "no window yet");
        // Half a second: 30 more permits, 10 of them ours.
        m.note(500_000_000, 10, 31);
        assert_eq!(m.learned, None);
        // A second after the start: 50 more on the key, 25 ours.
        m.note(1_000_000_000, 15, 51);
        assert_eq!(m.learned, Some(0.5));
        // The next window: ours alone.
        m.note(2_000_000_000, 4, 55);
        assert_eq!(m.learned, Some(1.0));
        // None of the key's grants were ours: the floor.
        m.note(3_000_000_000, 0, 155);
        assert_eq!(m.learned, Some(MIN_LEARNED_SHARE));
        // The key started again: a new window, the last share kept.
        m.note(3_100_000_000, 1, 1);
        assert_eq!((m.start, m.key0), (3_100_000_000, 1));
        assert_eq!(m.learned, Some(MIN_LEARNED_SHARE));
    }

    #[test]
    fn a_refusal_mid_window_neither_restarts_nor_ends_it() {
        let mut m = Meter::default();
        m.note(0, 1, 1);
        // A refusal: the key's count is unchanged. The window goes on.
        m.note(400_000_000, 0, 1);
        assert_eq!((m.start, m.key0), (0, 1));
        m.note(1_000_000_000, 1, 3);
        assert_eq!(m.learned, Some(0.5));
    }

    #[test]
    fn a_window_without_grants_on_the_key_keeps_the_last_share() {
        let mut m = Meter::default();
        m.note(0, 0, 7);
        m.note(1_000_000_000, 3, 10);
        assert_eq!(m.learned, Some(1.0));
        m.note(2_500_000_000, 0, 10);
        assert_eq!(m.learned, Some(1.0));
    }
}
