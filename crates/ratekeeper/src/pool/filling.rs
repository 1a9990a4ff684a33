//! [`Filling`]: where a token pool's tokens come from, and
//! `TokenPoolError`, what a pool refuses beyond its sizes.

use std::fmt;
use std::time::Duration;

use crate::error::{ConfigError, ConfigErrorKind, ConfigReason};

/// The interval of [`Filling::Thread`] unless set: 1 ms, nosqlbench's design
/// value.
pub const DEFAULT_FILL_INTERVAL: Duration = Duration::from_millis(1);

/// The shortest fill interval a [`TokenPool`](super::TokenPool) accepts: 1 µs.
pub const MIN_FILL_INTERVAL: Duration = Duration::from_micros(1);

/// The longest fill interval a [`TokenPool`](super::TokenPool) accepts: 1 s.
pub const MAX_FILL_INTERVAL: Duration = Duration::from_secs(1);

/// Where a [`TokenPool`](super::TokenPool)'s tokens come from.
///
/// Whatever the source, tokens are elapsed time *measured* on the pool's
/// clock since the previous fill, never a fixed step, so the long-run rate is
/// exact however irregular the fills are (see
/// [The refill step](crate::pool#the-refill-step)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Filling {
    /// Callers refill the pool themselves, from the time elapsed since the
    /// last fill, whenever it runs short; a caller that must wait while no one
    /// else is refilling sleeps until its tokens are due and refills then
    /// (nosqlbench's "callers act as fillers" remedy). No thread at all. The
    /// default: see [Choosing the filling](crate::pool#choosing-the-filling).
    #[default]
    Inline,
    /// A background thread refills the pool every interval, as nosqlbench's
    /// `TokenFiller` did ([`DEFAULT_FILL_INTERVAL`] is its 1 ms). The thread
    /// runs while the pool is started; stopping or dropping the pool stops and
    /// joins it at once. It sleeps in real time, so use it with a real clock.
    ///
    /// While the pool is idle (its active pool full and nobody waiting) the
    /// thread parks and costs no CPU: an idle pool costs one parked thread.
    /// The first take, or a caller that must wait, wakes it, and no token is
    /// lost meanwhile: see [Idle pools](crate::pool#idle-pools).
    Thread(Duration),
    /// Tokens come only from [`TokenPool::refill`](super::TokenPool::refill): for deterministic tests
    /// and for callers that drive the pool from their own loop.
    Manual,
}

impl Filling {
    /// [`Filling::Thread`] with the [`DEFAULT_FILL_INTERVAL`].
    pub const fn thread() -> Filling {
        Filling::Thread(DEFAULT_FILL_INTERVAL)
    }
}

impl fmt::Display for Filling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Filling::Inline => f.write_str("inline"),
            Filling::Thread(i) => write!(f, "thread every {i:?}"),
            Filling::Manual => f.write_str("manual"),
        }
    }
}

/// What a [`TokenPool`](super::TokenPool) refuses beyond its rate and burst ratio: a fill
/// interval out of range (inside a [`ConfigError`] of kind
/// [`Filling`](ConfigErrorKind::Filling)) and a hand refill of a pool that
/// fills itself.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub(crate) enum TokenPoolError {
    /// A [`Filling::Thread`] interval outside [`MIN_FILL_INTERVAL`] ..=
    /// [`MAX_FILL_INTERVAL`].
    #[error("fill interval must be between 1 µs and 1 s, got {0:?}")]
    FillInterval(Duration),
    /// [`TokenPool::refill`](super::TokenPool::refill) on a pool that fills itself: the same time would
    /// be added twice.
    #[error("refill() needs Filling::Manual; this pool fills itself")]
    NotManual,
}

impl From<TokenPoolError> for ConfigError {
    fn from(e: TokenPoolError) -> Self {
        let reason = match e {
            TokenPoolError::FillInterval(_) => ConfigReason::FillInterval,
            TokenPoolError::NotManual => ConfigReason::NotManual,
        };
        ConfigError::because(ConfigErrorKind::Filling, reason, e)
    }
}
