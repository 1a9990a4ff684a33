//! The limiter flags `pace` and `exec` share ([`LimiterArgs`]), `pace`'s
//! access flags ([`AccessArgs`]), and the library's [`LimiterConfig`] they
//! give. Each default is the library's constant; which flag belongs to
//! which limiter is the library's [`Field::kinds`] table.

use std::time::Duration;

use clap::{Args, ValueEnum};
use ratekeeper::bucket::{limit_for_rate, whole_period, DEFAULT_TIMEOUT};
use ratekeeper::config::{self, Access, Field, KindConfig, LimiterConfig, LimiterKind};
use ratekeeper::pacer::Strictness;
use ratekeeper::pool::{Filling, DEFAULT_FILL_INTERVAL};
use ratekeeper::smooth::{DEFAULT_COLD_FACTOR, DEFAULT_MAX_BURST_SECONDS};
use ratekeeper::{ConfigError, ConfigReason, RateSpec, Scope, WaitPolicy};
use ratekeeper_resilience4j::ConfigBuilder;

use super::{
    parse_cold_factor, parse_duration, parse_max_burst, parse_permits, parse_shards,
    parse_strictness, parse_timeout, parse_warmup,
};
use crate::error::UsageError;

/// The help heading of Resilience4j's limiters' options.
const R4J: &str = "Resilience4j options (refill, cycle)";

/// How long `--precise` spins before each op's ready time (after sleeping
/// until then): longer than a sleep's typical overshoot.
pub const PRECISE_SPIN: Duration = Duration::from_micros(150);

/// Which rate limiter (`--limiter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    /// ratekeeper's Pacer, a virtual schedule (--strictness and --precise apply)
    Pacer,
    /// nosqlbench's token-pool limiter; the spec's burst ratio is the pool's
    /// (--fill and --fill-interval apply)
    Pool,
    /// Guava's SmoothBursty, RateLimiter.create(rate) (--max-burst applies)
    Bursty,
    /// Guava's SmoothWarmingUp, RateLimiter.create(rate, warmupPeriod)
    /// (--warmup, required, and --cold-factor apply)
    Warmup,
    /// Resilience4j's interface on a token bucket, RefillLimiter
    /// (--refresh-period, --timeout, --capacity and --initial-permits apply)
    Refill,
    /// Resilience4j's default fixed-cycle AtomicRateLimiter, CycleLimiter
    /// (--refresh-period and --timeout apply)
    Cycle,
}

impl KindArg {
    /// The library's kind (whose name is this value's).
    pub fn kind(self) -> LimiterKind {
        match self {
            KindArg::Pacer => LimiterKind::Pacer,
            KindArg::Pool => LimiterKind::Pool,
            KindArg::Bursty => LimiterKind::Bursty,
            KindArg::Warmup => LimiterKind::WarmingUp,
            KindArg::Refill => LimiterKind::Refill,
            KindArg::Cycle => LimiterKind::Cycle,
        }
    }
}

/// `--limiter KIND`: clap's parser of the names, and for simulate's
/// `KIND:ARGS` form (`refill:1000,100ms`) one line that says which flags
/// give the same limiter.
#[derive(Debug, Clone, Copy)]
pub struct KindParser;

impl clap::builder::TypedValueParser for KindParser {
    type Value = KindArg;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<KindArg, clap::Error> {
        let simulates = value.to_str().and_then(|s| {
            let (name, args) = s.split_once(':')?;
            let kind = KindArg::from_str(name.trim(), true).ok()?;
            Some(simulates_form(kind, args))
        });
        match simulates {
            Some(hint) => Err(clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                format!("{hint}\n"),
            )),
            None => clap::builder::EnumValueParser::<KindArg>::new().parse_ref(cmd, arg, value),
        }
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            KindArg::value_variants()
                .iter()
                .filter_map(ValueEnum::to_possible_value),
        ))
    }
}

/// What to write instead of `--limiter KIND:ARGS`: this command's flags
/// for each field of the library's grammar (positional in the kind's
/// order, or `NAME=VALUE`), or where a field has no flag, the flags'
/// names.
fn simulates_form(kind: KindArg, args: &str) -> String {
    let name = kind.kind().name();
    let lead = format!(
        "--limiter takes the limiter's name alone; KIND:ARGS is simulate's form: write \
         --limiter {name}"
    );
    match flags_for(kind.kind(), args) {
        Some(flags) => format!("{lead} {flags}"),
        None => format!(
            "{lead} and give its rate and options as flags (--rate and the {name} options \
             in --help)"
        ),
    }
}

/// `args` of the `KIND:ARGS` grammar for `kind` as flags, if each field
/// has one.
fn flags_for(kind: LimiterKind, args: &str) -> Option<String> {
    let mut rate: Option<String> = None;
    let mut burst: Option<String> = None;
    let mut flags: Vec<String> = Vec::new();
    for (i, text) in args.split(',').map(str::trim).enumerate() {
        let (field, value) = match text.split_once('=') {
            Some((key, value)) => (
                *Field::ALL
                    .iter()
                    .find(|f| f.name() == key.trim().to_ascii_lowercase())?,
                value.trim(),
            ),
            None => (*kind.fields().get(i)?, text),
        };
        if value.is_empty() || value.contains(char::is_whitespace) {
            return None;
        }
        let flag = match field {
            Field::Rate => {
                rate = Some(value.to_owned());
                continue;
            }
            Field::Burst => {
                burst = Some(value.to_owned());
                continue;
            }
            Field::Fill if value.eq_ignore_ascii_case("inline") => "--fill inline".to_owned(),
            Field::Fill if value.starts_with(|c: char| c.is_ascii_digit()) => {
                format!("--fill thread --fill-interval {value}")
            }
            Field::Batch if value == "true" => "--batch".to_owned(),
            Field::Strictness => format!("--strictness {value}"),
            Field::MaxBurst => format!("--max-burst {value}"),
            Field::Warmup => format!("--warmup {value}"),
            Field::ColdFactor => format!("--cold-factor {value}"),
            Field::Period => format!("--refresh-period {value}"),
            Field::Capacity => format!("--capacity {value}"),
            Field::Initial => format!("--initial-permits {value}"),
            Field::Timeout => format!("--timeout {value}"),
            Field::Shards => format!("--shards {value}"),
            _ => return None,
        };
        flags.push(flag);
    }
    let rate = match (rate?, burst) {
        (rate, Some(burst)) => format!("--rate {rate},{burst}"),
        (rate, None) => format!("--rate {rate}"),
    };
    flags.insert(0, rate);
    Some(flags.join(" "))
}

/// Where a token pool's tokens come from (`--fill`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FillKind {
    /// callers refill the pool from the clock when it runs short (no thread)
    Inline,
    /// a filler thread refills the pool every --fill-interval
    Thread,
}

/// The limiter and its options.
#[derive(Debug, Clone, Args)]
pub struct LimiterArgs {
    /// The rate limiter: the Pacer, nosqlbench's token pool, Guava's
    /// SmoothBursty or SmoothWarmingUp, or Resilience4j's refill or cycle
    /// limiter.
    #[arg(long = "limiter", value_name = "KIND", value_parser = KindParser, default_value = "pacer", help_heading = "Limiter")]
    pub kind: KindArg,

    /// Pacer only: override the spec's burst ratio: 0 average, 0<S<1 burst
    /// compensation, 1 strict, >1 burst ratio. Refused with the other
    /// limiters.
    #[arg(long, value_name = "S", value_parser = parse_strictness, allow_negative_numbers = true, help_heading = "Pacer options", hide_short_help = true)]
    pub strictness: Option<Strictness>,

    /// Pacer only: sleep, then spin the last 150µs before each op's slot, so
    /// no op goes early (costs CPU). Default: the library's default wait
    /// policy (an op goes early only when sleeping to it is impossible, by at
    /// most half a slot and at most the measured sleep resolution, about
    /// 100µs; at high rates a sleep ends up to a grouping delay late, so that
    /// one sleep lets a group of ops go, and their waits say so). Refused
    /// with the other limiters.
    #[arg(long, help_heading = "Pacer options", hide_short_help = true)]
    pub precise: bool,

    /// Token pool only: where its tokens come from [default: inline].
    #[arg(
        long,
        value_enum,
        value_name = "HOW",
        help_heading = "Token pool options",
        hide_short_help = true
    )]
    pub fill: Option<FillKind>,

    /// Token pool with --fill thread only: how often the filler thread
    /// refills, from 1µs to 1s, e.g. 1ms, 100us [default: 1ms].
    #[arg(long, value_name = "DUR", value_parser = parse_duration, help_heading = "Token pool options", hide_short_help = true)]
    pub fill_interval: Option<Duration>,

    /// SmoothBursty only: how many seconds of permits idle time may store,
    /// to be granted at once (a number, at least 0) [default: 1].
    #[arg(long, value_name = "SECONDS", value_parser = parse_max_burst, allow_negative_numbers = true, help_heading = "SmoothBursty options", hide_short_help = true)]
    pub max_burst: Option<f64>,

    /// SmoothWarmingUp only, and required with it: the warm-up period, e.g.
    /// 2s, 500ms; 0s means no warm-up. A limiter idle this long is cold.
    #[arg(long, value_name = "DUR", value_parser = parse_warmup, help_heading = "SmoothWarmingUp options", hide_short_help = true)]
    pub warmup: Option<Duration>,

    /// SmoothWarmingUp only: how many times the stable interval a cold
    /// limiter spaces its permits (at least 1) [default: 3].
    #[arg(long, value_name = "F", value_parser = parse_cold_factor, allow_negative_numbers = true, help_heading = "SmoothWarmingUp options", hide_short_help = true)]
    pub cold_factor: Option<f64>,

    /// Resilience4j's limiters (refill, cycle) only: the refresh period, e.g.
    /// 1s, 100ms; the limit for period is rate x this, which must be a whole
    /// number of permits, at least 1 [default: 1s].
    #[arg(long, value_name = "DUR", value_parser = parse_duration, help_heading = R4J, hide_short_help = true)]
    pub refresh_period: Option<Duration>,

    /// Resilience4j's limiters (refill, cycle) only: how long an acquire may
    /// wait for its permit, e.g. 10ms; 0s refuses any wait. A refused acquire
    /// is counted, not an op [default: 5s].
    #[arg(long, value_name = "DUR", value_parser = parse_timeout, help_heading = R4J, hide_short_help = true)]
    pub timeout: Option<Duration>,

    /// RefillLimiter only: the most permits the bucket stores, the burst (at
    /// least the limit for period) [default: the limit for period].
    #[arg(long, value_name = "N", value_parser = parse_permits, allow_negative_numbers = true, help_heading = R4J, hide_short_help = true)]
    pub capacity: Option<i64>,

    /// RefillLimiter only: the permits in the bucket when it is built (0 to
    /// the capacity) [default: the limit for period].
    #[arg(long, value_name = "N", value_parser = parse_permits, allow_negative_numbers = true, help_heading = R4J, hide_short_help = true)]
    pub initial_permits: Option<i64>,
}

/// How `pace`'s worker threads reach the limiter they share.
#[derive(Debug, Clone, Args)]
pub struct AccessArgs {
    /// Give each worker a batching handle on the limiter, which leases a
    /// block of it at once and hands it out locally: far less contention at
    /// high rates, at the cost of the lease slack. The Pacer's handle
    /// (Pacer::handle) leases up to 100µs of the schedule and needs strictness
    /// below 1 (average or burst compensation); the other limiters' handle
    /// (BatchHandle) leases up to 1024 permits. Refused with --shards.
    #[arg(long, conflicts_with = "shards", help_heading = "Limiter")]
    pub batch: bool,

    /// Pacer only: split the shared pacer into N shards of rate/N, one per
    /// worker round-robin, each worker taking other shards' due slots when
    /// its own would make it wait (1 to 1024). Strict and burst spacing then
    /// holds within a shard only.
    #[arg(long, value_name = "N", value_parser = parse_shards, allow_negative_numbers = true, help_heading = "Pacer options", hide_short_help = true)]
    pub shards: Option<usize>,
}

impl AccessArgs {
    /// The access these flags ask for.
    pub fn access(&self) -> Access {
        match self.shards {
            Some(n) => Access::Sharded(n),
            None if self.batch => Access::Batched,
            None => Access::Exact,
        }
    }
}

impl LimiterArgs {
    /// The limiter kind.
    pub fn kind(&self) -> LimiterKind {
        self.kind.kind()
    }

    /// The configuration these flags give at `spec`'s rate, its threads
    /// reaching it by `access`: its options checked, then what the values'
    /// types leave open by the library's [`LimiterConfig::validate`] (no
    /// limiter is built).
    ///
    /// # Errors
    ///
    /// A [`UsageError`] for an option the limiter does not take or a value
    /// the library refuses (with the library's error as its cause).
    pub fn config(&self, spec: &RateSpec, access: Access) -> anyhow::Result<LimiterConfig> {
        self.check(spec, access)?;
        let wait = if self.precise {
            WaitPolicy::precise(PRECISE_SPIN)
        } else {
            WaitPolicy::default()
        };
        let config = LimiterConfig::new(self.kind_config(spec)?)
            .with_access(access)
            .with_wait_policy(wait);
        config.validate().map_err(|e| self.refused(spec, e))?;
        Ok(config)
    }

    /// The kind's parameters: these flags, the spec's rate and burst
    /// ratio, and the library's defaults.
    fn kind_config(&self, spec: &RateSpec) -> anyhow::Result<KindConfig> {
        let rate = spec.rate();
        Ok(match self.kind {
            KindArg::Pacer => KindConfig::Pacer {
                rate,
                strictness: self.strictness(spec),
            },
            KindArg::Pool => KindConfig::Pool {
                rate,
                burst_ratio: spec.burst(),
                filling: match self.fill {
                    None | Some(FillKind::Inline) => Filling::Inline,
                    Some(FillKind::Thread) => {
                        Filling::Thread(self.fill_interval.unwrap_or(DEFAULT_FILL_INTERVAL))
                    }
                },
            },
            KindArg::Bursty => KindConfig::Bursty {
                rate,
                max_burst_seconds: self.max_burst.unwrap_or(DEFAULT_MAX_BURST_SECONDS),
            },
            KindArg::Warmup => KindConfig::WarmingUp {
                rate,
                // `check` refuses --limiter warmup without --warmup.
                warmup: self.warmup.unwrap_or_default(),
                cold_factor: self.cold_factor.unwrap_or(DEFAULT_COLD_FACTOR),
            },
            KindArg::Refill | KindArg::Cycle => {
                let period = self.refresh_period();
                let limit = limit_for_rate(rate, period).map_err(|e| self.refused(spec, e))?;
                let mut builder = ConfigBuilder::new()
                    .limit_for_period(limit)
                    .limit_refresh_period(period)
                    .timeout(self.timeout.unwrap_or(DEFAULT_TIMEOUT));
                if self.kind == KindArg::Cycle {
                    let cycle = builder.build_cycle();
                    return Ok(KindConfig::Cycle(cycle.map_err(|e| self.refused(spec, e))?));
                }
                if let Some(c) = self.capacity {
                    builder = builder.permit_capacity(c);
                }
                if let Some(i) = self.initial_permits {
                    builder = builder.initial_permits(i);
                }
                KindConfig::Refill(builder.build().map_err(|e| self.refused(spec, e))?)
            }
        })
    }

    /// `--refresh-period`, or the default period.
    fn refresh_period(&self) -> Duration {
        self.refresh_period
            .unwrap_or(config::DEFAULT_REFRESH_PERIOD)
    }

    /// The Pacer's strictness: `--strictness`, or the spec's burst ratio.
    fn strictness(&self, spec: &RateSpec) -> Strictness {
        self.strictness.unwrap_or_else(|| spec.burst().into())
    }

    /// The library's refusal of the configuration, as a usage error; a
    /// limit for period that is not whole, in the flags' terms.
    fn refused(&self, spec: &RateSpec, e: ConfigError) -> anyhow::Error {
        if e.reason() == ConfigReason::NotWholePermits {
            let rate = spec.rate();
            let period = self.refresh_period();
            let permits = rate.get() * period.as_secs_f64();
            let suggestion = whole_period(rate)
                .map(|p| format!(" (e.g. --refresh-period {})", humantime::format_duration(p)))
                .unwrap_or_default();
            return UsageError(format!(
                "--rate {rate} with --refresh-period {} gives {permits} permits per period; \
                 the limit for period (rate x refresh period) must be a whole number of \
                 permits from 1 to {}: choose a refresh period that holds a whole number of \
                 permits at this rate{suggestion}",
                humantime::format_duration(period),
                i64::MAX
            ))
            .into();
        }
        anyhow::Error::new(e).context(UsageError(format!(
            "cannot build --limiter {} at rate spec \"{spec}\"",
            self.kind().name()
        )))
    }

    /// Refuses options the chosen limiter does not take, a burst ratio given
    /// to a Guava or Resilience4j limiter, and `--limiter warmup` without
    /// `--warmup`.
    fn check(&self, spec: &RateSpec, access: Access) -> Result<(), UsageError> {
        self.check_own(spec, access)?;
        self.check_owners(access)?;
        self.check_burst(spec)?;
        if self.kind == KindArg::Warmup && self.warmup.is_none() {
            return Err(UsageError(
                "--limiter warmup needs --warmup DUR, the warm-up period (e.g. --warmup 2s), as \
                 Guava's RateLimiter.create(rate, warmupPeriod) does; --warmup 0s means no \
                 warm-up"
                    .to_owned(),
            ));
        }
        Ok(())
    }

    /// The messages that say more than "belongs to another limiter".
    fn check_own(&self, spec: &RateSpec, access: Access) -> Result<(), UsageError> {
        let refuse = |msg: &str| Err(UsageError(msg.to_owned()));
        match self.kind {
            KindArg::Pacer => {
                let strictness = self.strictness(spec);
                if access == Access::Batched && strictness.get() >= 1.0 {
                    return Err(UsageError(format!(
                        "--batch needs a strictness below 1 (average or burst compensation), \
                         not {strictness}: in strict and burst-ratio modes every op is spaced \
                         against every other on the pacer's shared timeline, so a handle could \
                         only take the exact path; add --strictness 0 (average) or a value \
                         between 0 and 1 (burst compensation); the other limiters take --batch \
                         at any setting"
                    )));
                }
                if matches!(access, Access::Sharded(_)) && spec.scope() == Scope::Thread {
                    return refuse(
                        "--shards splits the one pacer the workers share; with the thread scope \
                         every worker already has a pacer of its own (drop \",thread\" from the \
                         spec, or --shards)",
                    );
                }
                if self.fill.is_some() {
                    return refuse("--fill is a token pool option; add --limiter pool to use it");
                }
                if self.fill_interval.is_some() {
                    return refuse(
                        "--fill-interval is a token pool option; add --limiter pool --fill \
                         thread to use it",
                    );
                }
            }
            KindArg::Pool => {
                if self.strictness.is_some() {
                    return refuse(
                        "--strictness is a Pacer option and cannot be used with --limiter pool; \
                         the pool's burst ratio is the rate spec's (e.g. --rate 10k,1.5)",
                    );
                }
                if self.precise {
                    return refuse(
                        "--precise is a Pacer option (its wait policy) and cannot be used with \
                         --limiter pool, whose waiting callers sleep until a fill gives them \
                         tokens",
                    );
                }
                if self.fill_interval.is_some() && self.fill != Some(FillKind::Thread) {
                    return refuse(
                        "--fill-interval needs --fill thread (with the default --fill inline, \
                         callers refill the pool themselves and there is no interval)",
                    );
                }
            }
            KindArg::Cycle => {
                for (flag, given) in [
                    ("--capacity", self.capacity.is_some()),
                    ("--initial-permits", self.initial_permits.is_some()),
                ] {
                    if given {
                        return Err(UsageError(format!(
                            "{flag} is a RefillLimiter option and cannot be used with --limiter \
                             cycle: a cycle starts with its limit for period (rate x refresh \
                             period) and unused permits do not carry over; add --limiter \
                             refill to use it"
                        )));
                    }
                }
            }
            KindArg::Bursty | KindArg::Warmup | KindArg::Refill => {}
        }
        Ok(())
    }

    /// Every limiter's own options, refused with the others: the library's
    /// table of which kind takes which field.
    fn check_owners(&self, access: Access) -> Result<(), UsageError> {
        let kind = self.kind();
        let options: [(&str, bool, &[LimiterKind]); 12] = [
            (
                "--strictness",
                self.strictness.is_some(),
                Field::Strictness.kinds(),
            ),
            // The library takes a wait policy for every kind; the flag is
            // the Pacer's.
            ("--precise", self.precise, &[LimiterKind::Pacer]),
            (
                "--shards",
                matches!(access, Access::Sharded(_)),
                Field::Shards.kinds(),
            ),
            ("--fill", self.fill.is_some(), Field::Fill.kinds()),
            (
                "--fill-interval",
                self.fill_interval.is_some(),
                Field::Fill.kinds(),
            ),
            (
                "--max-burst",
                self.max_burst.is_some(),
                Field::MaxBurst.kinds(),
            ),
            ("--warmup", self.warmup.is_some(), Field::Warmup.kinds()),
            (
                "--cold-factor",
                self.cold_factor.is_some(),
                Field::ColdFactor.kinds(),
            ),
            (
                "--refresh-period",
                self.refresh_period.is_some(),
                Field::Period.kinds(),
            ),
            ("--timeout", self.timeout.is_some(), Field::Timeout.kinds()),
            (
                "--capacity",
                self.capacity.is_some(),
                Field::Capacity.kinds(),
            ),
            (
                "--initial-permits",
                self.initial_permits.is_some(),
                Field::Initial.kinds(),
            ),
        ];
        for (flag, given, owners) in options {
            if given && !owners.contains(&kind) {
                let owner_title = match owners {
                    [LimiterKind::Pacer] => "a Pacer",
                    [LimiterKind::Pool] => "a token pool",
                    [LimiterKind::Bursty] => "a SmoothBursty",
                    [LimiterKind::WarmingUp] => "a SmoothWarmingUp",
                    [LimiterKind::Refill] => "a RefillLimiter",
                    _ => "a Resilience4j limiter (refill, cycle)",
                };
                let add = owners
                    .iter()
                    .map(|o| format!("--limiter {}", o.name()))
                    .collect::<Vec<_>>()
                    .join(" or ");
                return Err(UsageError(format!(
                    "{flag} is {owner_title} option and cannot be used with --limiter {}; add \
                     {add} to use it",
                    kind.name(),
                )));
            }
        }
        Ok(())
    }

    /// Guava's and Resilience4j's limiters take only the spec's rate.
    fn check_burst(&self, spec: &RateSpec) -> Result<(), UsageError> {
        let burst = spec.burst_ratio();
        if self.kind == KindArg::Pacer
            || self.kind == KindArg::Pool
            || burst == RateSpec::DEFAULT_BURST_RATIO
        {
            return Ok(());
        }
        let (family, hint) = match self.kind {
            KindArg::Bursty => (
                "Guava's",
                "; the burst it stores while idle is --max-burst SECONDS",
            ),
            KindArg::Refill => (
                "Resilience4j's",
                "; the burst the bucket stores is --capacity N",
            ),
            KindArg::Cycle => (
                "Resilience4j's",
                "; a cycle's burst is its limit for period, rate x --refresh-period",
            ),
            _ => ("Guava's", ""),
        };
        Err(UsageError(format!(
            "the rate spec's burst ratio {burst} has no meaning for --limiter {}: {family} \
             limiters take only a rate; give the rate alone (e.g. --rate {}){hint}",
            self.kind().name(),
            spec.rate().get()
        )))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::Parser;
    use ratekeeper::config::{Access, KindConfig, LimiterConfig};
    use ratekeeper::pool::Filling;

    use super::*;

    #[test]
    fn simulates_form_becomes_flags() {
        let flags = |kind, args| flags_for(kind, args);
        assert_eq!(
            flags(LimiterKind::Refill, "100, 100ms,capacity=20,timeout=50ms").as_deref(),
            Some("--rate 100 --refresh-period 100ms --capacity 20 --timeout 50ms")
        );
        assert_eq!(
            flags(LimiterKind::Pacer, "10,0.5,shards=2").as_deref(),
            Some("--rate 10 --strictness 0.5 --shards 2")
        );
        assert_eq!(
            flags(LimiterKind::Pool, "10,fill=inline,burst=2").as_deref(),
            Some("--rate 10,2 --fill inline")
        );
        // No flag for it, too many fields, no rate, a name of no field.
        for (kind, args) in [
            (LimiterKind::Pacer, "10,wait=precise:1ms"),
            (LimiterKind::Pacer, "10,1,2"),
            (LimiterKind::Bursty, "max_burst=2"),
            (LimiterKind::Cycle, "10,speed=3"),
            (LimiterKind::Cycle, ""),
        ] {
            assert_eq!(flags(kind, args), None, "{kind}:{args}");
        }
        let hint = simulates_form(KindArg::Warmup, "10,wait=x");
        assert!(hint.contains("write --limiter warmup and give"), "{hint}");
    }

    #[derive(Debug, Parser)]
    struct Flags {
        #[command(flatten)]
        limiter: LimiterArgs,
        #[command(flatten)]
        access: AccessArgs,
    }

    /// The configuration `flags` give at `rate`, or the message.
    fn config(flags: &[&str], rate: &str) -> Result<LimiterConfig, String> {
        let f = Flags::try_parse_from(std::iter::once("t").chain(flags.iter().copied()))
            .map_err(|e| e.to_string())?;
        let spec = rate
            .parse()
            .map_err(|e: ratekeeper::SpecError| e.to_string())?;
        f.limiter
            .config(&spec, f.access.access())
            .map_err(|e| format!("{e:#}"))
    }

    #[test]
    fn kind_names_are_the_library_s() {
        for kind in KindArg::value_variants() {
            let name = kind.to_possible_value().map(|v| v.get_name().to_owned());
            assert_eq!(name.as_deref(), Some(kind.kind().name()));
        }
    }

    #[test]
    fn flags_give_the_library_s_configuration() {
        let c = config(&["--strictness", "0", "--batch", "--precise"], "1M").unwrap();
        assert_eq!(
            c.to_string(),
            "pacer:1000000,0,batch=true,wait=precise:150us"
        );
        let c = config(&[], "10k,1.5,thread").unwrap();
        assert_eq!(c.to_string(), "pacer:10000,1.5");
        let c = config(&["--limiter", "pool", "--fill", "thread"], "10k,1.5").unwrap();
        assert_eq!(
            c.kind(),
            KindConfig::Pool {
                rate: ratekeeper::Rate::new(1e4).unwrap(),
                burst_ratio: ratekeeper::BurstRatio::new(1.5).unwrap(),
                filling: Filling::thread(),
            }
        );
        let c = config(&["--limiter", "pool"], "10k").unwrap();
        assert_eq!(c.to_string(), "pool:10000,1.1,inline");
        let refill = [
            "--limiter",
            "refill",
            "--refresh-period",
            "100ms",
            "--capacity",
            "200",
        ];
        let c = config(&refill, "1000").unwrap();
        assert_eq!(c.to_string(), "refill:1000,100ms,200,100,5s");
        assert_eq!(c.kind().max_wait(), Some(Duration::from_secs(5)));
        let c = config(&["--limiter", "warmup", "--warmup", "2s"], "10").unwrap();
        assert_eq!(c.to_string(), "warmup:10,2s,3");
        let c = config(&["--shards", "2"], "1M").unwrap();
        assert_eq!(c.access(), Access::Sharded(2));
    }

    #[test]
    fn a_limit_for_period_that_is_not_whole_is_refused_in_the_flags_terms() {
        let refused = |rate: &str, period: &str| {
            config(&["--limiter", "cycle", "--refresh-period", period], rate).unwrap_err()
        };
        let e = refused("1000", "1500us");
        assert!(
            e.contains("--rate 1000 with --refresh-period 1ms 500us"),
            "{e}"
        );
        assert!(e.contains("1.5 permits per period"), "{e}");
        assert!(e.contains("(e.g. --refresh-period 1ms)"), "{e}");
        assert!(refused("0.5", "1s").contains("(e.g. --refresh-period 10s)"));
        assert!(refused("1000", "100us").contains("0.1 permits per period"));
        // No suggestion where no round period holds a whole number.
        let e = refused("0.333333", "1s");
        assert!(!e.contains("e.g."), "{e}");
        // 0.1 x 10 s is 1.0000000000000002 in floating point: still 1.
        assert!(config(&["--limiter", "cycle", "--refresh-period", "10s"], "0.1").is_ok());
    }

    #[test]
    fn options_of_other_limiters_are_refused() {
        let e = config(&["--limiter", "bursty", "--capacity", "3"], "10").unwrap_err();
        assert!(e.contains("--capacity is a RefillLimiter option"), "{e}");
        let e = config(&["--limiter", "pool", "--timeout", "1s"], "10").unwrap_err();
        assert!(e.contains("--limiter refill or --limiter cycle"), "{e}");
        let e = config(&["--limiter", "refill", "--shards", "2"], "10").unwrap_err();
        assert!(e.contains("--shards is a Pacer option"), "{e}");
        let e = config(&["--batch"], "1M").unwrap_err();
        assert!(e.contains("--batch needs a strictness below 1"), "{e}");
        let e = config(
            &[
                "--limiter",
                "warmup",
                "--warmup",
                "1s",
                "--cold-factor",
                "0.5",
            ],
            "10",
        )
        .unwrap_err();
        assert!(
            e.contains("cannot build --limiter warmup at rate spec"),
            "{e}"
        );
        assert!(
            e.contains("cold factor must be finite and at least 1.0, got 0.5"),
            "{e}"
        );
    }
}
