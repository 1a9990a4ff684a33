//! The simulation: each limiter on a manual clock of its own, the arrivals
//! reserving their permits in time order, and the token pool filled by hand.

use std::collections::hash_map::DefaultHasher;
use std::collections::VecDeque;
use std::hash::BuildHasherDefault;
use std::task::Waker;
use std::time::Duration;

use ratekeeper::config::{AnyLimiter, KindConfig};
use ratekeeper::keyed::{Keyed, KeyedError};
use ratekeeper::pool::{Filling, TokenPool};
use ratekeeper::{AcquireError, Grant, ManualClock, RateLimiter, Readiness};

use super::clients::{KeyedReport, KeyedSpec};
use super::{chain, LimiterSpec};
use crate::error::UsageError;
use crate::limiter;
use crate::report::{duration_nanos, fmt_duration, EffectiveRate};

/// The most fills a simulated token pool may take, so that a pattern with a
/// huge backlog and a short fill interval fails quickly instead of running
/// for minutes.
const MAX_FILLS: u64 = 50_000_000;

/// One limiter's run: its ops in arrival order, its effective rate and,
/// with `--keyed`, its keyed map's metrics.
#[derive(Debug, Clone)]
pub(super) struct Run {
    pub(super) ops: Vec<Op>,
    pub(super) effective: EffectiveRate,
    pub(super) keyed: Option<KeyedReport>,
}

/// What happened to one arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Op {
    pub(super) arrival: u64,
    /// `(scheduled, granted)`, or `None` if refused.
    pub(super) grant: Option<(u64, u64)>,
}

/// Runs `arrivals` (in order) through the limiter `spec` describes; the
/// ops, and the limiter's effective rate (warned about, on standard
/// error, when it is off the target).
pub(super) fn simulate(
    spec: &LimiterSpec,
    arrivals: &[u64],
) -> anyhow::Result<(Vec<Op>, EffectiveRate)> {
    let clock = ManualClock::new(0);
    // The pool is filled here, every fill interval, as its thread would.
    let (config, fill) = match spec.config.kind() {
        KindConfig::Pool {
            rate,
            burst_ratio,
            filling: Filling::Thread(fill),
        } => {
            let manual = KindConfig::Pool {
                rate,
                burst_ratio,
                filling: Filling::Manual,
            };
            (spec.config.with_kind(manual), Some(fill))
        }
        _ => (spec.config, None),
    };
    let built = config
        .build_with_clock(clock.clone())
        .map_err(|e| UsageError(format!("--limiter {}: {}", spec.label, chain(&e))))?;
    let effective = effective_rate(spec, &built);
    let ops = match (&built, fill) {
        (AnyLimiter::Pool(p), Some(fill)) => fill_pool(p, &clock, arrivals, fill),
        _ => reserve_each(&built, &clock, arrivals, spec.config.kind().max_wait()),
    };
    ops.map(|ops| (ops, effective))
        .map_err(|e| e.context(format!("simulating --limiter {}", spec.label)))
}

/// The effective rate of `spec`'s limiter `built`, warned about on
/// standard error when it is off the target.
fn effective_rate(spec: &LimiterSpec, built: &AnyLimiter<ManualClock>) -> EffectiveRate {
    let effective = limiter::effective_rate(&[built.as_ref()], &spec.config, "op");
    effective.warn(
        &format!("--limiter {}", spec.label),
        spec.config.kind().rate(),
        "ops",
    );
    effective
}

/// Runs `arrivals` (in order, the client of each in `owner`) through a
/// [`Keyed`] map of `spec`'s limiter, one per client, on one manual clock;
/// the ops, the effective rate of one client's limiter and the map's
/// metrics. One shard, so that the cap on clients is exact, and a fixed
/// hasher, so that runs repeat.
///
/// # Errors
///
/// A [`UsageError`] for a limiter `Keyed` refuses (a token pool, a sharded
/// pacer).
pub(super) fn simulate_keyed(
    spec: &LimiterSpec,
    keyed: KeyedSpec,
    arrivals: &[u64],
    owner: &[usize],
) -> anyhow::Result<(Vec<Op>, EffectiveRate, KeyedReport)> {
    let refused = |why: String| UsageError(format!("--limiter {} with --keyed: {why}", spec.label));
    if matches!(spec.config.kind(), KindConfig::Pool { .. }) {
        // Its filler thread is modelled by hand, one pool at a time.
        return Err(
            refused("simulate models one token pool, not one per client".to_owned()).into(),
        );
    }
    let clock = ManualClock::new(0);
    let config = spec.config;
    let map: Keyed<usize, _, _> = Keyed::builder()
        .max_keys(keyed.max_keys)
        .shards(1)
        .overflow(keyed.policy)
        .build_with_hasher(
            &config,
            clock.clone(),
            BuildHasherDefault::<DefaultHasher>::default(),
        )
        .map_err(|e| refused(chain(&e)))?;
    let built = config
        .build_with_clock(clock.clone())
        .map_err(|e| refused(chain(&e)))?;
    let effective = effective_rate(spec, &built);
    let max_wait = config.kind().max_wait();
    let ops = arrivals
        .iter()
        .zip(owner)
        .map(|(&t, client)| {
            clock.set_nanos(t);
            let grant = match map.reserve(client, 1, max_wait) {
                Ok(g) => Some((g.scheduled_nanos(), g.ready_nanos().max(t))),
                Err(KeyedError::Full) => None,
                Err(KeyedError::Limiter(AcquireError::WouldWait { .. })) if max_wait.is_some() => {
                    None
                }
                Err(e) => return Err(anyhow::Error::new(e).context("a single permit refused")),
            };
            Ok(Op { arrival: t, grant })
        })
        .collect::<anyhow::Result<Vec<Op>>>()
        .map_err(|e| e.context(format!("simulating --limiter {} --keyed", spec.label)))?;
    Ok((ops, effective, map.metrics().into()))
}

/// One reservation per arrival, at its time; a reservation refused because
/// its wait would exceed `max_wait` is a refused op.
pub(super) fn reserve_each<L: RateLimiter>(
    limiter: &L,
    clock: &ManualClock,
    arrivals: &[u64],
    max_wait: Option<Duration>,
) -> anyhow::Result<Vec<Op>> {
    arrivals
        .iter()
        .map(|&t| {
            clock.set_nanos(t);
            match limiter.reserve(1, max_wait) {
                Ok(g) => Ok(Op {
                    arrival: t,
                    grant: Some((g.scheduled_nanos(), g.ready_nanos().max(t))),
                }),
                Err(AcquireError::WouldWait { .. }) if max_wait.is_some() => Ok(Op {
                    arrival: t,
                    grant: None,
                }),
                Err(e) => Err(anyhow::Error::new(e).context("the limiter refused a single permit")),
            }
        })
        .collect()
}

/// The token pool, filled every `fill` from time 0 as by a filler thread on
/// a perfect timer. An arrival that finds too few tokens queues a claim; it
/// is granted at the fill that completes it: after each fill the queued
/// grants are asked, oldest first, whether they may go
/// ([`RateLimiter::poll_grant`], the protocol every waiter drives; the pool
/// serves claims first come, first served).
pub(super) fn fill_pool(
    pool: &TokenPool<ManualClock>,
    clock: &ManualClock,
    arrivals: &[u64],
    fill: Duration,
) -> anyhow::Result<Vec<Op>> {
    let fill = duration_nanos(fill);
    // Fills are simulated one by one only while ops are queued, and each
    // then hands the queue at least min(fill, max_active) tokens: refuse at
    // once a pattern that could need too many.
    let per_fill = fill.min(pool.pools().max_active()).max(1);
    let owed = (arrivals.len() as u128) * u128::from(pool.nanos_per_op());
    if owed / u128::from(per_fill) + arrivals.len() as u128 > u128::from(MAX_FILLS) {
        return Err(too_many_fills(fill));
    }
    let mut ops: Vec<Op> = arrivals
        .iter()
        .map(|&t| Op {
            arrival: t,
            grant: None,
        })
        .collect();
    let mut filler = Filler {
        pool,
        clock,
        fill,
        last_fill: 0,
        fills: 0,
        queued: VecDeque::new(),
    };
    for (i, &t) in arrivals.iter().enumerate() {
        filler.fill_until(Some(t), &mut ops)?;
        clock.set_nanos(t);
        let before = pool.waiters();
        let g = pool
            .reserve(1, None)
            .map_err(|e| anyhow::Error::new(e).context("the pool refused a single permit"))?;
        if pool.waiters() > before {
            filler.queued.push_back((i, g));
        } else {
            ops[i].grant = Some((g.scheduled_nanos(), g.ready_nanos().max(t)));
        }
    }
    filler.fill_until(None, &mut ops)?;
    Ok(ops)
}

/// The error for a pattern whose pool would take more than [`MAX_FILLS`]
/// fills of `fill` ns.
fn too_many_fills(fill: u64) -> anyhow::Error {
    anyhow::Error::new(UsageError(format!(
        "the pool would need more than {MAX_FILLS} fills of {} to serve this pattern; use a \
         longer fill interval or fewer arrivals",
        fmt_duration(fill)
    )))
}

/// [`fill_pool`]'s filler thread: fills the pool every `fill` ns of the
/// manual clock and lets the queued claims go at the fill that completes
/// them.
struct Filler<'a> {
    pool: &'a TokenPool<ManualClock>,
    clock: &'a ManualClock,
    /// The fill interval, in nanoseconds.
    fill: u64,
    /// When the pool was last filled.
    last_fill: u64,
    /// Fills so far, at most [`MAX_FILLS`].
    fills: u64,
    /// Queued claims, oldest first: (op index, grant).
    queued: VecDeque<(usize, Grant)>,
}

impl Filler<'_> {
    /// Fills due up to `until` (all of them if `until` is None, until no
    /// claim is left).
    fn fill_until(&mut self, until: Option<u64>, ops: &mut [Op]) -> anyhow::Result<()> {
        loop {
            let next = self.last_fill.saturating_add(self.fill);
            match until {
                Some(u) if next > u => return Ok(()),
                None if self.queued.is_empty() => return Ok(()),
                _ => {}
            }
            self.fills += 1;
            if self.fills > MAX_FILLS {
                return Err(too_many_fills(self.fill));
            }
            if self.queued.is_empty() {
                self.skip_idle(until.unwrap_or(next))?;
            } else {
                self.fill_once(next, ops)?;
            }
        }
    }

    /// Nobody waits: one fill for the ticks up to `until` leaves the pools
    /// as those ticks one by one would (the pool's jitter normalisation;
    /// checked by a test), so skip through idle time at once.
    fn skip_idle(&mut self, until: u64) -> anyhow::Result<()> {
        let last = self.last_fill;
        let to = last + (until - last) / self.fill * self.fill;
        self.clock.set_nanos(to);
        self.pool.refill(to - last)?;
        self.last_fill = to;
        Ok(())
    }

    /// The fill at `at`, and the queued claims it completes.
    fn fill_once(&mut self, at: u64, ops: &mut [Op]) -> anyhow::Result<()> {
        self.clock.set_nanos(at);
        self.pool.refill(self.fill)?;
        while let Some(&(i, g)) = self.queued.front() {
            if self.pool.poll_grant(&g, at, Waker::noop()) != Readiness::Go {
                break;
            }
            ops[i].grant = Some((g.scheduled_nanos(), at));
            self.queued.pop_front();
        }
        self.last_fill = at;
        Ok(())
    }
}
