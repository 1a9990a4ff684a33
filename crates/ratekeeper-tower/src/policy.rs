//! [`Policy`]: a limit as the draft-11 `RateLimit-Policy` field describes it.

use std::time::Duration;

use ratekeeper::config::{KindConfig, LimiterConfig};

use crate::headers::SF_INTEGER_MAX;
use crate::ConfigError;

/// A named quota: `quota` permits per `window` seconds, of which up to
/// `burst` may go at once; what the `RateLimit-Policy` field announces and
/// what the `RateLimit` field's remaining quota is counted against.
///
/// # What the field announces
///
/// `q` over `w` is the rate the policy was made with, and `q` holds the
/// burst, so that no `RateLimit` member (whose `r` is at most the burst)
/// says a client may have more than the quota: when the burst is larger
/// than the quota given, [`with_burst`](Policy::with_burst) multiplies the
/// quota and the window by the least whole number that makes the quota at
/// least the burst (the rate is unchanged, exactly). The burst itself,
/// which `q` and `w` do not tell, is the vendor parameter `rk-burst`:
///
/// ```
/// use ratekeeper_tower::Policy;
///
/// let policy = Policy::new("api", 100, 60)?.with_burst(10)?;
/// assert_eq!(policy.to_string(), r#""api";q=100;w=60;rk-burst=10"#);
/// // 2 per second with bursts of 5: 6 per 3 s, the shortest window of
/// // whole seconds at that rate whose quota holds 5.
/// let bursty = Policy::from_rate("per-ip", 2.0)?.with_burst(5)?;
/// assert_eq!(bursty.to_string(), r#""per-ip";q=6;w=3;rk-burst=5"#);
/// // 2.5 per second is 5 per 2 s; a burst of 1 by default.
/// assert_eq!(Policy::from_rate("slow", 2.5)?.to_string(), r#""slow";q=5;w=2;rk-burst=1"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    name: String,
    /// The quota as given (with `given_window`, the rate).
    given_quota: u64,
    /// The window as given.
    given_window: u64,
    /// The quota announced: `given_quota` times the least whole factor
    /// that makes it at least `burst`.
    quota: u64,
    /// The window announced: `given_window` times the same factor.
    window: u64,
    burst: u32,
}

impl Policy {
    /// `quota` permits per `window` seconds, a burst of 1.
    ///
    /// # Errors
    ///
    /// [`ConfigError::PolicyName`] for a name that is not printable ASCII,
    /// [`ConfigError::ZeroQuota`] for a zero quota or window,
    /// [`ConfigError::QuotaTooLarge`] for one above 999,999,999,999,999
    /// (the largest Integer the `RateLimit-Policy` field can carry).
    pub fn new(name: impl Into<String>, quota: u64, window: u64) -> Result<Policy, ConfigError> {
        let name = name.into();
        if !name.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
            return Err(ConfigError::PolicyName(name));
        }
        if quota == 0 || window == 0 {
            return Err(ConfigError::ZeroQuota { quota, window });
        }
        if quota > SF_INTEGER_MAX || window > SF_INTEGER_MAX {
            return Err(ConfigError::QuotaTooLarge { quota, window });
        }
        Ok(Policy {
            name,
            given_quota: quota,
            given_window: window,
            quota,
            window,
            burst: 1,
        })
    }

    /// `rate` permits per second as a whole quota over a whole window,
    /// never above the rate: the shortest window (1 to 3600 s) whose quota,
    /// `rate × window` rounded down, is within 0.1 % of it; with no such
    /// window, the quota rounded down over one hour; for a rate under one
    /// an hour, 1 over the shortest window that is not above it.
    ///
    /// ```
    /// use ratekeeper_tower::Policy;
    ///
    /// let quota_window = |rate| Policy::from_rate("p", rate).map(|p| (p.quota(), p.window()));
    /// assert_eq!(quota_window(10.0)?, (10, 1));
    /// assert_eq!(quota_window(0.4)?, (2, 5));
    /// assert_eq!(quota_window(1000.0 / 230.0)?, (100, 23)); // never 87 per 20 s
    /// assert_eq!(quota_window(1.0 / 7200.0)?, (1, 7200)); // never 1 per hour
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigError::Rate`] for a rate that is not positive and finite, and
    /// [`ConfigError::QuotaTooLarge`] for one whose quota or window the
    /// field cannot carry (above 999,999,999,999,999 a second, or under
    /// one in 999,999,999,999,999 seconds).
    pub fn from_rate(name: impl Into<String>, rate: f64) -> Result<Policy, ConfigError> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(ConfigError::Rate(rate));
        }
        let max = SF_INTEGER_MAX as f64;
        if rate > max {
            return Err(ConfigError::QuotaTooLarge {
                quota: u64::MAX,
                window: 1,
            });
        }
        // The largest whole quota over `w` seconds not above the rate. The
        // quotas chosen are at most `max`, below 2^53, where every whole
        // number is exact.
        let quota = |w: u64| {
            let w = w as f64;
            let q = (rate * w).floor();
            // `rate × w` may have rounded up to a whole number.
            if q / w > rate {
                q - 1.0
            } else {
                q
            }
        };
        let fits = |w: u64| {
            let q = quota(w);
            q >= 1.0 && q >= rate * w as f64 * (1.0 - 1e-3)
        };
        if let Some(w) = (1..=3600).find(|&w| fits(w)) {
            return Policy::new(name, quota(w) as u64, w);
        }
        if quota(3600) >= 1.0 {
            return Policy::new(name, quota(3600) as u64, 3600);
        }
        let mut window = (1.0 / rate).ceil();
        if 1.0 / window > rate {
            window += 1.0;
        }
        if !window.is_finite() || window > max {
            return Err(ConfigError::QuotaTooLarge {
                quota: 1,
                window: u64::MAX,
            });
        }
        Policy::new(name, 1, window as u64)
    }

    /// The same policy with up to `burst` permits at once, announced over
    /// a window long enough for its quota to hold them: the quota and the
    /// window given ([`new`](Policy::new), [`from_rate`](Policy::from_rate))
    /// times `ceil(burst / quota)`, or as given when the quota already
    /// holds the burst. The rate, `quota / window`, is unchanged.
    ///
    /// ```
    /// use ratekeeper_tower::Policy;
    ///
    /// let p = Policy::new("p", 4, 2)?;
    /// let quota_window = |b| p.clone().with_burst(b).map(|p| (p.quota(), p.window()));
    /// assert_eq!(quota_window(4)?, (4, 2));
    /// assert_eq!(quota_window(5)?, (8, 4));
    /// assert_eq!(quota_window(9)?, (12, 6));
    /// // From the quota given, whatever burst came before.
    /// assert_eq!(p.with_burst(9)?.with_burst(1)?.quota(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigError::ZeroBurst`] for zero; [`ConfigError::QuotaTooLarge`]
    /// when the quota or window so multiplied is above 999,999,999,999,999
    /// (the largest Integer the field can carry).
    pub fn with_burst(mut self, burst: u32) -> Result<Policy, ConfigError> {
        if burst == 0 {
            return Err(ConfigError::ZeroBurst);
        }
        let factor = u64::from(burst).div_ceil(self.given_quota);
        let quota = self.given_quota.saturating_mul(factor);
        let window = self.given_window.saturating_mul(factor);
        if quota > SF_INTEGER_MAX || window > SF_INTEGER_MAX {
            return Err(ConfigError::QuotaTooLarge { quota, window });
        }
        self.quota = quota;
        self.window = window;
        self.burst = burst;
        Ok(self)
    }

    /// The policy a limiter of `config` keeps, so that it is written once:
    /// its rate ([`KindConfig::rate`], as [`from_rate`](Policy::from_rate)
    /// announces it) and the most permits it grants at once after a long
    /// idle period, as the burst ([`with_burst`](Policy::with_burst)):
    ///
    /// | kind | burst |
    /// |---|---|
    /// | `refill` | its capacity |
    /// | `bursty` | `floor(rate × max_burst_seconds) + 1`: the permits stored, and one more on the schedule |
    /// | `pacer` of strictness 1 or more, `warmup` | 1 |
    ///
    /// ```
    /// use ratekeeper_tower::Policy;
    ///
    /// let policy = |config: &str| -> Result<Policy, Box<dyn std::error::Error>> {
    ///     Ok(Policy::from_config("p", &config.parse()?)?)
    /// };
    /// assert_eq!(policy("refill:2,1s,capacity=5")?.to_string(), r#""p";q=6;w=3;rk-burst=5"#);
    /// assert_eq!(policy("bursty:10,0.5")?.burst(), 6);
    /// assert_eq!(policy("pacer:100,1")?.burst(), 1);
    /// assert!(policy("pacer:100,0").is_err()); // catches up on its whole backlog
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ConfigError::UnannouncedBurst`] for a kind whose burst depends on
    /// its history (a pacer of strictness under 1 catches up on its
    /// backlog, a token pool and a cycle limiter release a period's permits
    /// together); as [`from_rate`](Policy::from_rate) and
    /// [`with_burst`](Policy::with_burst) otherwise.
    ///
    /// [`KindConfig::rate`]: ratekeeper::config::KindConfig::rate
    pub fn from_config(
        name: impl Into<String>,
        config: &LimiterConfig,
    ) -> Result<Policy, ConfigError> {
        let kind = config.kind();
        let burst = match kind {
            KindConfig::Refill(c) => u32::try_from(c.capacity()).unwrap_or(u32::MAX),
            KindConfig::Bursty {
                rate,
                max_burst_seconds,
            } => {
                // Saturating: a burst past u32 is refused by the field's
                // limit below, or clamped by the limiter's own.
                let stored = (rate.get() * max_burst_seconds).floor();
                (stored as u32).saturating_add(1)
            }
            KindConfig::Pacer { strictness, .. } if strictness.get() >= 1.0 => 1,
            KindConfig::WarmingUp { .. } => 1,
            other => return Err(ConfigError::UnannouncedBurst(other.limiter_kind().name())),
        };
        Policy::from_rate(name, kind.rate())?.with_burst(burst)
    }

    /// The policy's name (the field item's String value).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Permits per window as announced (`q`): at least the burst.
    pub fn quota(&self) -> u64 {
        self.quota
    }

    /// The window in seconds as announced (`w`).
    pub fn window(&self) -> u64 {
        self.window
    }

    /// Permits that may go at once (`rk-burst`).
    pub fn burst(&self) -> u32 {
        self.burst
    }

    /// The time one permit is worth: `window / quota`, in nanoseconds (at
    /// least 1, at most `u64::MAX`).
    pub fn interval_nanos(&self) -> u64 {
        let nanos = u128::from(self.window) * 1_000_000_000 / u128::from(self.quota);
        u64::try_from(nanos).unwrap_or(u64::MAX).max(1)
    }

    /// The time a full burst takes to come back: `burst × window / quota`.
    pub fn refill_time(&self) -> Duration {
        Duration::from_nanos(self.interval_nanos().saturating_mul(u64::from(self.burst)))
    }
}

/// The policy as one `RateLimit-Policy` list member.
impl std::fmt::Display for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        crate::headers::write_sf_string(f, &self.name)?;
        write!(
            f,
            ";q={};w={};rk-burst={}",
            self.quota, self.window, self.burst
        )
    }
}
