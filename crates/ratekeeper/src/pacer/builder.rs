//! [`PacerBuilder`]: a pacer's settings, validated when it is built.

use crossbeam_utils::CachePadded;

use super::decision::SCHEDULE_LIMIT;
use super::limiter::Control;
use super::params::{mode_word, slices, tag, Params, IDLE, TAGGED};
use super::strictness::Strictness;
use super::Pacer;
use crate::clock::{Clock, DefaultClock};
use crate::error::ConfigError;
use crate::internal::cancel::CancelWindow;
use crate::internal::handoff::Handoff;
use crate::rate::Rate;
use crate::spec::{RateSpec, Verb};
use crate::sync::{AtomicU64, Mutex};
use crate::wait::room::Room;
use crate::wait::WaitPolicy;

/// Configures a [`Pacer`]. Setters take any value; [`build`](Self::build)
/// validates them.
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::{Pacer, Rate, WaitPolicy};
///
/// let pacer = Pacer::builder(Rate::new(250.0)?)
///     .strictness(0.0)                // average: backlog may go at once
///     .cached_clock(false)            // read the clock on every acquire
///     .wait_policy(WaitPolicy::precise(Duration::from_micros(150)))
///     .build()?;
/// assert_eq!(pacer.strictness().get(), 0.0);
///
/// let err = Pacer::builder(Rate::new(2e9)?).build().unwrap_err();
/// assert!(err.to_string().contains("rate"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct PacerBuilder {
    pub(super) rate: Rate,
    pub(super) strictness: f64,
    pub(super) verb: Verb,
    pub(super) cached_clock: bool,
    pub(super) policy: WaitPolicy,
}

impl PacerBuilder {
    /// The strictness (default 1.1, the default burst ratio); see [`Strictness`].
    pub fn strictness(mut self, strictness: f64) -> Self {
        self.strictness = strictness;
        self
    }

    /// The rate in operations per second.
    pub fn rate(mut self, rate: Rate) -> Self {
        self.rate = rate;
        self
    }

    /// Start state: [`Verb::Start`] (default) and [`Verb::Restart`] start the
    /// schedule at build; [`Verb::Configure`] and [`Verb::Stop`] leave it idle
    /// until the first acquire or [`Pacer::start`].
    pub fn verb(mut self, verb: Verb) -> Self {
        self.verb = verb;
        self
    }

    /// Opt-in (default `false`): in average and compensation modes, callers
    /// already behind schedule skip the clock read, as the reference's
    /// "calling-overhead compensation" does. Their **reported wait is then a
    /// lower bound** (it can miss a stall outside the limiter), and every
    /// clock read also writes a second shared cache line. Use it only where
    /// waits are not reported and one clock read per grant matters.
    pub fn cached_clock(mut self, enabled: bool) -> Self {
        self.cached_clock = enabled;
        self
    }

    /// How blocking acquires wait (default: [`WaitPolicy::default`], sized
    /// for the pacer's slot; see [`wait`](crate::wait)).
    pub fn wait_policy(mut self, policy: WaitPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Builds a pacer on the default real clock.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Rate`](crate::ConfigErrorKind::Rate) for a rate the
    /// schedule cannot keep (see [`Rate::nanos_per_op`](crate::Rate::nanos_per_op));
    /// [`ConfigErrorKind::Strictness`](crate::ConfigErrorKind::Strictness) for
    /// an invalid strictness.
    pub fn build(self) -> Result<Pacer, ConfigError> {
        self.build_with_clock(DefaultClock::new())
    }

    /// Builds a pacer on `clock`.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build).
    pub fn build_with_clock<C: Clock>(self, clock: C) -> Result<Pacer<C>, ConfigError> {
        let origin = clock.now_nanos();
        self.build_with_origin(clock, origin)
    }

    /// Builds a pacer on `clock` whose timeline counts from the reading
    /// `origin` (the shards of a `ShardedPacer` share one).
    pub(crate) fn build_with_origin<C: Clock>(
        self,
        clock: C,
        origin: u64,
    ) -> Result<Pacer<C>, ConfigError> {
        let strictness = Strictness::new(self.strictness)?;
        let (op_nanos, burst_nanos) = slices(self.rate, strictness)?;
        let now = clock.now_nanos().saturating_sub(origin);
        let idle = matches!(self.verb, Verb::Configure | Verb::Stop);
        let mode = mode_word(strictness, self.cached_clock, burst_nanos)
            | if idle { IDLE } else { 0 }
            | TAGGED;
        Ok(Pacer {
            ideal: AtomicU64::new(now),
            actual: AtomicU64::new(now),
            lag: AtomicU64::new(0),
            last_seen: CachePadded::new(AtomicU64::new(now)),
            params: CachePadded::new(Params {
                op_nanos: AtomicU64::new(op_nanos),
                burst_nanos: AtomicU64::new(burst_nanos),
                mode: AtomicU64::new(mode),
                origin,
                // The last reading, u64::MAX, may hold a slot.
                limit: SCHEDULE_LIMIT.min((u64::MAX - origin).saturating_add(1)),
            }),
            accumulated: AtomicU64::new(0),
            control: Mutex::new(Control {
                rate: self.rate,
                strictness,
                window: CancelWindow::new(now),
            }),
            handoff: Handoff::new(tag(mode)),
            room: Room::new(),
            clock,
            policy: self.policy,
        })
    }
}

impl Pacer {
    /// A builder for a pacer at `rate`, strictness 1.1, started at build time.
    pub fn builder(rate: Rate) -> PacerBuilder {
        PacerBuilder {
            rate,
            strictness: Strictness::DEFAULT.get(),
            verb: Verb::Start,
            cached_clock: false,
            policy: WaitPolicy::default(),
        }
    }

    /// A builder from a spec: rate, burst ratio as strictness, verb as start
    /// state; validated by [`build`](PacerBuilder::build).
    pub fn from_spec(spec: &RateSpec) -> PacerBuilder {
        Pacer::builder(spec.rate())
            .strictness(spec.burst_ratio())
            .verb(spec.verb())
    }

    /// A started pacer at `rate`, default strictness, on the real clock.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Rate`](crate::ConfigErrorKind::Rate) as for
    /// [`PacerBuilder::build`].
    pub fn new(rate: Rate) -> Result<Pacer, ConfigError> {
        Pacer::builder(rate).build()
    }
}
