//! The methods [`SmoothBursty`] and [`SmoothWarmingUp`] share, written
//! once over [`Smooth`](super::limiter::Smooth).

use core::fmt;
use std::time::Duration;

use super::resolution::Resolution;
use super::{SmoothBursty, SmoothWarmingUp};
use crate::clock::Clock;
use crate::error::ConfigError;
use crate::limiter::{AcquireError, Grant, RateLimiter, Recovery, WaitStats};
use crate::wait::WaitPolicy;

macro_rules! smooth_limiter {
    ($name:ident) => {
        impl<C: Clock> $name<C> {
            /// Changes the rate (Guava's `setRate`). Time before now is
            /// accounted at the old rate; stored permits are rescaled to the
            /// same fraction of the new maximum; a wait already reserved is
            /// still owed. Takes the change mutex; one allocation.
            ///
            /// # Errors
            ///
            /// [`ConfigErrorKind::Rate`](crate::ConfigErrorKind::Rate)
            /// ([`RateNotPositive`](crate::ConfigReason::RateNotPositive)) unless
            /// `permits_per_second > 0`; nothing changes.
            pub fn set_rate(&self, permits_per_second: f64) -> Result<(), ConfigError> {
                Ok(self.core.set_rate(permits_per_second)?)
            }

            /// The rate, Guava's `getRate()`: `1e6 / stable interval`, which
            /// may differ from the rate set in the last bits (7.0 reads back
            /// as 6.999999999999999).
            pub fn rate(&self) -> f64 {
                self.core.rate()
            }

            /// The rate one-permit calls actually get once no stored permits
            /// are left: each call is charged its cost truncated to whole
            /// units of the [`Resolution`], so `1e6 / floor(1e6 / rate)` in
            /// [`Resolution::Micros`] and `1e9 / floor(1e9 / rate)` in
            /// [`Resolution::Nanos`]. Never below [`rate`](Self::rate).
            ///
            /// **`f64::INFINITY` means no limit**: where one permit costs
            /// less than one unit it is charged 0 and one-permit calls are
            /// never throttled. A call for `n` permits is charged
            /// `floor(n × interval)` at once, so larger calls lose less.
            pub fn effective_rate(&self) -> f64 {
                self.core.effective_rate()
            }

            /// Permits stored now (unused capacity carried forward), as of
            /// the last reservation or rate change.
            pub fn stored_permits(&self) -> f64 {
                self.core.stored_permits()
            }

            /// The clock this limiter reads.
            pub fn clock_ref(&self) -> &C {
                &self.core.clock
            }

            /// The per-key rule of this (fresh) limiter's configuration.
            pub(crate) fn keyed_rule(&self) -> super::rule::SmoothRule {
                self.core.keyed_rule()
            }
        }

        impl<C: Clock> RateLimiter for $name<C> {
            /// Guava's reservation: waits only for earlier requests' debt and
            /// charges this request's permits to the next caller. With a
            /// maximum wait, Guava's `tryAcquire`: refused without any change
            /// when the wait would exceed it. Lock-free; one clock read and
            /// one compare-exchange per attempt.
            // Always inlined, as the Pacer's: only then does the grant come
            // back in registers.
            #[inline(always)]
            fn reserve(
                &self,
                permits: u32,
                max_wait: Option<Duration>,
            ) -> Result<Grant, AcquireError> {
                self.core.reserve(permits, max_wait)
            }

            fn clock(&self) -> &dyn Clock {
                &self.core.clock
            }

            /// The backlog is how far `next_free` is ahead of now: what the
            /// next caller would wait. Guava keeps no other wait total.
            fn wait_stats(&self) -> WaitStats {
                self.core.wait_stats()
            }

            fn wait_policy(&self) -> WaitPolicy {
                self.core.policy
            }

            /// In debt while a reservation is owed; otherwise fresh if it
            /// stores what a new limiter of its rate does (bursty: nothing;
            /// warming up: its maximum, cold), and credit if not.
            fn recovery(&self) -> Recovery {
                self.core.recovery()
            }

            /// Gives back the latest reservation, exactly; see
            /// [Cancelling a reservation](super#cancelling-a-reservation).
            fn cancel(&self, grant: &Grant) -> bool {
                self.core.give_back(grant)
            }
        }

        impl<C> fmt::Debug for $name<C> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let st = self.core.snapshot();
                let next_free = match st.res {
                    Resolution::Micros => "next_free_micros",
                    Resolution::Nanos => "next_free_nanos",
                };
                f.debug_struct(stringify!($name))
                    .field("rate", &(st.res.per_second() / st.stable_interval))
                    .field("stored_permits", &st.stored_permits)
                    .field("max_permits", &st.max_permits)
                    .field(next_free, &st.next_free)
                    .finish_non_exhaustive()
            }
        }
    };
}

smooth_limiter!(SmoothBursty);
smooth_limiter!(SmoothWarmingUp);
