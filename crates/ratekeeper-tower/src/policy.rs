//! [`Policy`]: a limit as the draft-11 `RateLimit-Policy` field describes it.

use std::time::Duration;

use crate::headers::SF_INTEGER_MAX;
use crate::ConfigError;

/// A named quota: `quota` permits per `window` seconds, of which up to
/// `burst` may go at once; what the `RateLimit-Policy` field announces and
/// what the `RateLimit` field's remaining quota is counted against.
///
/// The draft's `q`/`w` carry only the rate; the burst goes in the vendor
/// parameter `rk-burst`:
///
/// ```
/// use ratekeeper_tower::Policy;
///
/// let policy = Policy::new("api", 100, 60)?.with_burst(10)?;
/// assert_eq!(policy.to_string(), r#""api";q=100;w=60;rk-burst=10"#);
/// // 2.5 per second is 5 per 2 s; a burst of 1 by default.
/// assert_eq!(Policy::from_rate("slow", 2.5)?.to_string(), r#""slow";q=5;w=2;rk-burst=1"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    name: String,
    quota: u64,
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
            quota,
            window,
            burst: 1,
        })
    }

    /// `rate` permits per second as a whole quota over the shortest whole
    /// window (1 to 3600 s) that carries it to within 0.1 %; rates under
    /// 1/3600 per second, or with no such window, round the quota to the
    /// nearest over one hour (at least 1).
    ///
    /// # Errors
    ///
    /// [`ConfigError::Rate`] for a rate that is not positive and finite, and
    /// those of [`new`](Policy::new) (a rate above 999,999,999,999,999 a
    /// second is [`ConfigError::QuotaTooLarge`]).
    pub fn from_rate(name: impl Into<String>, rate: f64) -> Result<Policy, ConfigError> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(ConfigError::Rate(rate));
        }
        let fits = |w: u64| {
            let q = rate * w as f64;
            q >= 1.0 && ((q - q.round()).abs() <= q * 1e-3)
        };
        let window = (1..=3600).find(|&w| fits(w)).unwrap_or(3600);
        let quota = ((rate * window as f64).round() as u64).max(1);
        Policy::new(name, quota, window)
    }

    /// The same policy with up to `burst` permits at once.
    ///
    /// # Errors
    ///
    /// [`ConfigError::ZeroBurst`] for zero.
    pub fn with_burst(mut self, burst: u32) -> Result<Policy, ConfigError> {
        if burst == 0 {
            return Err(ConfigError::ZeroBurst);
        }
        self.burst = burst;
        Ok(self)
    }

    /// The policy's name (the field item's String value).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Permits per window (`q`).
    pub fn quota(&self) -> u64 {
        self.quota
    }

    /// The window in seconds (`w`).
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
