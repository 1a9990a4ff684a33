//! [`SharedLimit`]: what a key on the server limits to, and the arguments
//! its script takes.

use std::time::Duration;

use ratekeeper::bucket::RefillConfig;
use ratekeeper::config::{KindConfig, LimiterConfig};
use ratekeeper::pacer::{Strictness, StrictnessMode};
use ratekeeper::{ConfigError, ConfigErrorKind, Rate};

/// The limit a key keeps on the server: the Pacer's schedule or the refill
/// bucket, with the same parameters and the same arithmetic as the
/// in-memory [`Pacer`](ratekeeper::Pacer) and
/// [`RefillLimiter`](ratekeeper::RefillLimiter).
///
/// ```
/// use ratekeeper_redis::SharedLimit;
///
/// let limit = SharedLimit::from_config(&"pacer:10K,1".parse()?)?;
/// assert_eq!(limit.rate(), 10_000.0);
/// assert!(SharedLimit::from_config(&"pool:10K".parse()?).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum SharedLimit {
    /// The Pacer's schedule: `floor(1e9 / rate)` ns a permit, and a
    /// [`Strictness`].
    Pacer {
        /// The rate.
        rate: Rate,
        /// What happens to time callers did not use.
        strictness: Strictness,
    },
    /// Resilience4j's refill bucket: capacity, initial permits, refill
    /// rate, and the timeout a request waits at most.
    Refill(RefillConfig),
}

impl SharedLimit {
    /// A Pacer's schedule at `rate` with `strictness`.
    ///
    /// # Errors
    ///
    /// A strictness that is NaN, negative or infinite
    /// ([`ConfigErrorKind::Strictness`]), or a rate without a whole
    /// nanosecond slot ([`ConfigErrorKind::Rate`]).
    pub fn pacer(rate: Rate, strictness: f64) -> Result<SharedLimit, ConfigError> {
        let strictness = Strictness::new(strictness)
            .map_err(|e| ConfigError::new(ConfigErrorKind::Strictness, e))?;
        rate.nanos_per_op()
            .map_err(|e| ConfigError::new(ConfigErrorKind::Rate, e))?;
        Ok(SharedLimit::Pacer { rate, strictness })
    }

    /// The limit a [`LimiterConfig`] describes: its `pacer` or `refill`
    /// kind.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Unsupported`] for the other kinds (a token pool,
    /// Guava's limiters and the cycle limiter keep state this backend does
    /// not); the kind's own errors for invalid parameters.
    pub fn from_config(config: &LimiterConfig) -> Result<SharedLimit, ConfigError> {
        config.validate()?;
        match config.kind() {
            // Both already validated: the types, and the rate by `validate`.
            KindConfig::Pacer { rate, strictness } => Ok(SharedLimit::Pacer { rate, strictness }),
            KindConfig::Refill(c) => Ok(SharedLimit::Refill(c)),
            other => Err(ConfigError::new(
                ConfigErrorKind::Unsupported,
                Unsupported(other.limiter_kind().to_string()),
            )),
        }
    }

    /// Permits a second.
    pub fn rate(&self) -> f64 {
        match self {
            SharedLimit::Pacer { rate, .. } => rate.get(),
            SharedLimit::Refill(c) => KindConfig::Refill(*c).rate(),
        }
    }

    /// The longest a request waits before it is refused, unless the caller
    /// gives another: the refill bucket's timeout; `None` (any wait) for
    /// the Pacer.
    pub fn max_wait(&self) -> Option<Duration> {
        match self {
            SharedLimit::Pacer { .. } => None,
            SharedLimit::Refill(c) => Some(c.timeout()),
        }
    }

    /// The same limit at `factor` times the rate (a local fallback's
    /// share), as a [`LimiterConfig`] to build in memory.
    ///
    /// # Errors
    ///
    /// A rate the in-memory limiter cannot keep.
    pub fn scaled_config(&self, factor: f64) -> Result<LimiterConfig, ConfigError> {
        self.scaled_config_holding(factor, None)
    }

    /// [`scaled_config`](Self::scaled_config), a bucket holding `initial`
    /// permits when it starts instead of its own initial permits (at most
    /// its capacity).
    pub(crate) fn scaled_config_holding(
        &self,
        factor: f64,
        initial: Option<u32>,
    ) -> Result<LimiterConfig, ConfigError> {
        let kind = match *self {
            SharedLimit::Pacer { rate, strictness } => KindConfig::Pacer {
                rate: Rate::new(rate.get() * factor)
                    .map_err(|e| ConfigError::new(ConfigErrorKind::Rate, e))?,
                strictness,
            },
            SharedLimit::Refill(c) => {
                // The same capacity and timeout, the refill period stretched.
                let period = c.limit_refresh_period().as_secs_f64() / factor;
                let period = Duration::try_from_secs_f64(period)
                    .map_err(|e| ConfigError::new(ConfigErrorKind::RefreshPeriod, e))?;
                KindConfig::Refill(
                    RefillConfig::builder()
                        .limit_for_period(u64::from(clamp_u32(c.limit_for_period())))
                        .limit_refresh_period(period)
                        .timeout(c.timeout())
                        .permit_capacity(u64::from(clamp_u32(c.capacity())))
                        .initial_permits(u64::from(
                            initial
                                .unwrap_or(clamp_u32(c.initial_permits()))
                                .min(clamp_u32(c.capacity())),
                        ))
                        .build()?,
                )
            }
        };
        Ok(LimiterConfig::new(kind))
    }

    /// The largest number of permits one request may take: every request
    /// fits a schedule; a bucket holds at most its capacity.
    pub fn max_permits(&self) -> u32 {
        match self {
            SharedLimit::Pacer { .. } => u32::MAX,
            SharedLimit::Refill(c) => clamp_u32(c.capacity()),
        }
    }

    /// The script arguments before the per-request ones (see the scripts).
    pub(crate) fn script(&self) -> Script {
        match *self {
            SharedLimit::Pacer { rate, strictness } => {
                let op = rate.nanos_per_op().unwrap_or(1);
                let (kind, burst, shift) = match strictness.mode() {
                    StrictnessMode::Average => (0, 0, 0),
                    StrictnessMode::Compensate { shift } => (1, 0, shift),
                    StrictnessMode::Strict => (2, op, 0),
                    // (long)(1e9 / (rate × burst)), as the in-memory Pacer.
                    StrictnessMode::Burst(b) => (2, (1e9 / (rate.get() * b)) as u64, 0),
                };
                // A burst slice of 0 ns has no spacing to keep: the plain
                // accumulator, as in memory.
                let kind = if kind == 2 && burst == 0 { 0 } else { kind };
                Script::Pacer {
                    kind,
                    op,
                    burst,
                    shift,
                }
            }
            SharedLimit::Refill(c) => Script::Refill {
                npp: c.nanos_per_permit(),
                capacity: c.capacity() as u64,
                initial: c.initial_permits() as u64,
            },
        }
    }
}

/// The fixed arguments of a limit's script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Script {
    Pacer {
        kind: u8,
        op: u64,
        burst: u64,
        shift: u32,
    },
    Refill {
        npp: u64,
        capacity: u64,
        initial: u64,
    },
}

impl Script {
    /// The limit a key keeps, from the words a script names it by in a
    /// `RKLIMIT` error: `pacer KIND NS_PER_PERMIT BURST_SLICE SHIFT` or
    /// `refill NS_PER_PERMIT CAPACITY INITIAL`.
    pub(crate) fn parse_stored(words: &str) -> Option<Script> {
        let mut it = words.split_ascii_whitespace();
        let kind = it.next()?;
        let mut num = || it.next()?.parse::<u64>().ok();
        let script = match kind {
            "pacer" => Script::Pacer {
                kind: u8::try_from(num()?).ok()?,
                op: num()?,
                burst: num()?,
                shift: u32::try_from(num()?).ok()?,
            },
            "refill" => Script::Refill {
                npp: num()?,
                capacity: num()?,
                initial: num()?,
            },
            _ => return None,
        };
        Some(script)
    }
}

/// The limit in words, for errors that name two of them.
impl std::fmt::Display for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Permits a second for `ns` a permit, to three decimals.
        let rate = |ns: u64| (1e12 / ns.max(1) as f64).round() / 1000.0;
        match *self {
            Script::Pacer {
                kind,
                op,
                burst,
                shift,
            } => {
                let mode = match kind {
                    0 => "average".to_owned(),
                    1 => format!("burst compensation, shift {shift}"),
                    _ if burst == op => "strict".to_owned(),
                    _ => format!(
                        "burst ratio {}",
                        (op as f64 / burst.max(1) as f64 * 1000.0).round() / 1000.0
                    ),
                };
                write!(f, "a pacer of {}/s ({mode})", rate(op))
            }
            Script::Refill {
                npp,
                capacity,
                initial,
            } => write!(
                f,
                "a refill bucket of {}/s, capacity {capacity}, {initial} initial permits",
                rate(npp)
            ),
        }
    }
}

fn clamp_u32(v: i64) -> u32 {
    u32::try_from(v.max(0)).unwrap_or(u32::MAX)
}

/// A limiter kind this backend does not keep.
#[derive(Debug)]
struct Unsupported(String);

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a {} limit cannot be shared on Redis: use pacer or refill",
            self.0
        )
    }
}

impl std::error::Error for Unsupported {}
