//! [`Resolution`]: the unit of a smooth limiter's schedule.

use std::time::Duration;

/// How finely a smooth limiter keeps its schedule: the unit of `next_free`
/// and of every cost it charges.
///
/// [`Micros`](Resolution::Micros), the default, is Guava's arithmetic
/// exactly: a reservation of `n` permits costs `(long)(n × 1e6 / rate)`
/// whole microseconds, truncated per call, so above 1 000 000 permits per
/// second a single permit costs nothing and the limiter does not limit.
/// [`Nanos`](Resolution::Nanos) is the same algorithm in whole nanoseconds:
/// a single permit is charged less than 1 ns too little (at most
/// `rate / 1e9` of its cost). [`Resolution::for_rate`] picks one by
/// [`Resolution::MICROS_MAX_RATE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Resolution {
    /// Guava's whole microseconds: the reference mode, and the default.
    #[default]
    Micros,
    /// Whole nanoseconds: for rates above [`Resolution::MICROS_MAX_RATE`].
    Nanos,
}

impl Resolution {
    /// The highest rate, in permits per second, at which
    /// [`Resolution::for_rate`] keeps Guava's whole microseconds: 100 000,
    /// where one permit costs 10 µs and truncation loses under 10 % of it.
    pub const MICROS_MAX_RATE: f64 = 100_000.0;

    /// [`Micros`](Resolution::Micros) at rates up to
    /// [`MICROS_MAX_RATE`](Resolution::MICROS_MAX_RATE) (Guava's arithmetic),
    /// [`Nanos`](Resolution::Nanos) above (and for NaN, which no limiter
    /// accepts anyway).
    pub fn for_rate(permits_per_second: f64) -> Resolution {
        if permits_per_second <= Resolution::MICROS_MAX_RATE {
            Resolution::Micros
        } else {
            Resolution::Nanos
        }
    }

    /// Ticks (units of the schedule) per second.
    pub(super) fn per_second(self) -> f64 {
        match self {
            Resolution::Micros => 1e6,
            Resolution::Nanos => 1e9,
        }
    }

    /// Nanoseconds to ticks, truncating.
    #[inline(always)]
    pub(super) fn ticks(self, nanos: u64) -> u64 {
        match self {
            Resolution::Micros => nanos / 1000,
            Resolution::Nanos => nanos,
        }
    }

    /// Ticks to nanoseconds, saturating.
    #[inline(always)]
    pub(super) fn nanos(self, ticks: u64) -> u64 {
        match self {
            Resolution::Micros => ticks.saturating_mul(1000),
            Resolution::Nanos => ticks,
        }
    }

    /// Ticks as a duration (exact).
    pub(super) fn duration(self, ticks: u64) -> Duration {
        match self {
            Resolution::Micros => Duration::from_micros(ticks),
            Resolution::Nanos => Duration::from_nanos(ticks),
        }
    }

    /// A duration in ticks, truncating and saturating.
    pub(super) fn duration_ticks(self, d: Duration) -> i64 {
        let ticks = match self {
            Resolution::Micros => d.as_micros(),
            Resolution::Nanos => d.as_nanos(),
        };
        i64::try_from(ticks).unwrap_or(i64::MAX)
    }

    /// Whole microseconds in ticks, saturating.
    pub(super) fn micros_ticks(self, micros: i64) -> i64 {
        match self {
            Resolution::Micros => micros,
            Resolution::Nanos => micros.saturating_mul(1000),
        }
    }
}
