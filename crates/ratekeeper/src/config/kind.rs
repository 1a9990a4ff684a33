//! [`LimiterKind`] and [`Field`]: the kinds, and the table of which kind
//! takes which field (option).

use core::fmt;

/// Which limiter a [`LimiterConfig`](super::LimiterConfig) builds, without its parameters.
///
/// ```
/// use ratekeeper::config::{Field, LimiterKind};
///
/// assert_eq!("Warmup".parse::<LimiterKind>()?, LimiterKind::WarmingUp);
/// let names: Vec<&str> = LimiterKind::ALL.iter().map(|k| k.name()).collect();
/// assert_eq!(names, ["pacer", "pool", "bursty", "warmup", "refill", "cycle"]);
/// assert_eq!(LimiterKind::Pacer.fields(), [Field::Rate, Field::Strictness]);
/// assert!(LimiterKind::Pacer.takes(Field::Shards));
/// assert!(LimiterKind::Cycle.takes(Field::Batch));
/// assert!(!LimiterKind::Cycle.takes(Field::Capacity));
/// assert!(LimiterKind::Pacer.usage().starts_with("pacer:RATE[,STRICTNESS]"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LimiterKind {
    /// [`Pacer`](crate::Pacer), nosqlbench's core rate limiter.
    Pacer,
    /// [`TokenPool`](crate::TokenPool), nosqlbench's hybrid limiter.
    Pool,
    /// [`SmoothBursty`](crate::SmoothBursty), Guava's default.
    Bursty,
    /// [`SmoothWarmingUp`](crate::SmoothWarmingUp), Guava's warming-up limiter.
    WarmingUp,
    /// [`RefillLimiter`](crate::RefillLimiter), Resilience4j's interface on a
    /// token bucket.
    Refill,
    /// [`CycleLimiter`](crate::CycleLimiter), Resilience4j's fixed cycles.
    Cycle,
}

impl LimiterKind {
    /// Every kind, in the order the grammar lists them.
    pub const ALL: [LimiterKind; 6] = [
        LimiterKind::Pacer,
        LimiterKind::Pool,
        LimiterKind::Bursty,
        LimiterKind::WarmingUp,
        LimiterKind::Refill,
        LimiterKind::Cycle,
    ];

    /// The name before the colon of `KIND:ARGS`: `pacer`, `pool`, `bursty`,
    /// `warmup`, `refill` or `cycle`.
    pub const fn name(self) -> &'static str {
        match self {
            LimiterKind::Pacer => "pacer",
            LimiterKind::Pool => "pool",
            LimiterKind::Bursty => "bursty",
            LimiterKind::WarmingUp => "warmup",
            LimiterKind::Refill => "refill",
            LimiterKind::Cycle => "cycle",
        }
    }

    /// The kind's own fields, in their positional order.
    pub const fn fields(self) -> &'static [Field] {
        use Field::*;
        match self {
            LimiterKind::Pacer => &[Rate, Strictness],
            LimiterKind::Pool => &[Rate, Burst, Fill],
            LimiterKind::Bursty => &[Rate, MaxBurst],
            LimiterKind::WarmingUp => &[Rate, Warmup, ColdFactor],
            LimiterKind::Refill => &[Rate, Period, Capacity, Initial, Timeout],
            LimiterKind::Cycle => &[Rate, Period, Timeout],
        }
    }

    /// Whether `field` may be given for this kind: one of its own
    /// [`fields`](Self::fields), or a field every kind takes (`batch`,
    /// `wait`), or `shards` for the pacer.
    pub fn takes(self, field: Field) -> bool {
        field.kinds().contains(&self)
    }

    /// The kind's syntax with an example, for messages.
    pub const fn usage(self) -> &'static str {
        match self {
            LimiterKind::Pacer => "pacer:RATE[,STRICTNESS], e.g. pacer:10,1.5",
            LimiterKind::Pool => "pool:RATE[,BURST][,FILL], e.g. pool:10,1.5,1ms",
            LimiterKind::Bursty => "bursty:RATE[,MAX_BURST], e.g. bursty:10,0.5",
            LimiterKind::WarmingUp => "warmup:RATE,WARMUP[,COLD_FACTOR], e.g. warmup:10,2s,3",
            LimiterKind::Refill => {
                "refill:RATE[,PERIOD][,CAPACITY][,INITIAL][,TIMEOUT], e.g. \
                 refill:100,100ms,capacity=20,timeout=50ms"
            }
            LimiterKind::Cycle => {
                "cycle:RATE[,PERIOD][,TIMEOUT], e.g. cycle:100,100ms,timeout=50ms"
            }
        }
    }
}

impl fmt::Display for LimiterKind {
    /// The [`name`](LimiterKind::name).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A field of the `KIND:ARGS` grammar, which is also an option of the
/// command line: the table of which kind takes which option.
///
/// ```
/// use ratekeeper::config::{Field, LimiterKind};
///
/// assert_eq!(Field::ColdFactor.name(), "cold_factor");
/// assert!(Field::ALL.iter().any(|f| f.name() == "capacity"));
/// assert_eq!(Field::Timeout.kinds(), [LimiterKind::Refill, LimiterKind::Cycle]);
/// assert_eq!(Field::Shards.kinds(), [LimiterKind::Pacer]);
/// assert_eq!(Field::Wait.kinds(), LimiterKind::ALL);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// Operations per second (every kind).
    Rate,
    /// The pacer's strictness.
    Strictness,
    /// The pool's burst ratio.
    Burst,
    /// How the pool is filled.
    Fill,
    /// Seconds of permits SmoothBursty stores while idle.
    MaxBurst,
    /// SmoothWarmingUp's warm-up period.
    Warmup,
    /// SmoothWarmingUp's cold factor.
    ColdFactor,
    /// Resilience4j's refresh period.
    Period,
    /// The refill limiter's bucket size.
    Capacity,
    /// The refill limiter's permits at creation.
    Initial,
    /// How long a Resilience4j limiter lets an acquire wait.
    Timeout,
    /// Whether each thread goes through a batching handle (every kind).
    Batch,
    /// How many shards the pacer is split into.
    Shards,
    /// The wait policy (every kind).
    Wait,
}

impl Field {
    /// Every field, in the order declared.
    pub const ALL: [Field; 14] = [
        Field::Rate,
        Field::Strictness,
        Field::Burst,
        Field::Fill,
        Field::MaxBurst,
        Field::Warmup,
        Field::ColdFactor,
        Field::Period,
        Field::Capacity,
        Field::Initial,
        Field::Timeout,
        Field::Batch,
        Field::Shards,
        Field::Wait,
    ];

    /// Its name in `NAME=VALUE`.
    pub const fn name(self) -> &'static str {
        match self {
            Field::Rate => "rate",
            Field::Strictness => "strictness",
            Field::Burst => "burst",
            Field::Fill => "fill",
            Field::MaxBurst => "max_burst",
            Field::Warmup => "warmup",
            Field::ColdFactor => "cold_factor",
            Field::Period => "period",
            Field::Capacity => "capacity",
            Field::Initial => "initial",
            Field::Timeout => "timeout",
            Field::Batch => "batch",
            Field::Shards => "shards",
            Field::Wait => "wait",
        }
    }

    /// The kinds that take it.
    pub const fn kinds(self) -> &'static [LimiterKind] {
        use LimiterKind::*;
        match self {
            Field::Rate | Field::Batch | Field::Wait => &LimiterKind::ALL,
            Field::Strictness | Field::Shards => &[Pacer],
            Field::Burst | Field::Fill => &[Pool],
            Field::MaxBurst => &[Bursty],
            Field::Warmup | Field::ColdFactor => &[WarmingUp],
            Field::Period | Field::Timeout => &[Refill, Cycle],
            Field::Capacity | Field::Initial => &[Refill],
        }
    }
}

impl fmt::Display for Field {
    /// The [`name`](Field::name).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
