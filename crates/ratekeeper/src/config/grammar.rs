//! The `KIND:ARGS` grammar: [`FromStr`] and [`Display`](fmt::Display) for
//! [`LimiterConfig`], as `ratekeeper simulate --limiter` has always taken it.

use core::fmt;
use core::str::FromStr;
use std::time::Duration;

use super::{Access, Field, KindConfig, LimiterConfig, LimiterConfigError, LimiterKind};
use crate::bucket::{Fields as BucketFields, DEFAULT_TIMEOUT};
use crate::error::ConfigError;
use crate::pacer::{Strictness, MAX_SHARDS};
use crate::pool::{Filling, PoolError, MAX_FILL_INTERVAL, MIN_FILL_INTERVAL};
use crate::rate::Rate;
use crate::smooth::{DEFAULT_COLD_FACTOR, DEFAULT_MAX_BURST_SECONDS};
use crate::spec::{BurstRatio, RateSpec, SpecErrorKind, DEFAULT_BURST_RATIO};
use crate::wait::WaitPolicy;

/// The kinds, for messages (a test checks it against [`LimiterKind::ALL`]).
pub(super) const KINDS: &str = "pacer, pool, bursty, warmup, refill, cycle";

const STRICTNESS_EXPECTED: &str = "is not a number: expected 0 (average), between 0 and 1 \
     (burst compensation), 1 (strict) or above 1 (burst ratio)";

impl FromStr for LimiterKind {
    type Err = ConfigError;

    /// A [`name`](LimiterKind::name), ASCII case-insensitive.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::Syntax`](crate::ConfigErrorKind::Syntax) naming the
    /// kinds there are.
    fn from_str(s: &str) -> Result<LimiterKind, ConfigError> {
        kind_named(s).map_err(ConfigError::from)
    }
}

/// The kind named `s`, ASCII case-insensitive.
pub(super) fn kind_named(s: &str) -> Result<LimiterKind, LimiterConfigError> {
    let name = s.trim().to_ascii_lowercase();
    LimiterKind::ALL
        .into_iter()
        .find(|k| k.name() == name)
        .ok_or(LimiterConfigError::UnknownKind { name })
}

impl FromStr for LimiterConfig {
    type Err = ConfigError;

    /// Parses `KIND:ARGS` (see the [module docs](super)), reading each
    /// field once into its type, and [validates](LimiterConfig::validate)
    /// the result. O(`s.len()`).
    fn from_str(s: &str) -> Result<LimiterConfig, ConfigError> {
        let (kind, args) = s.trim().split_once(':').ok_or(LimiterConfigError::NoKind)?;
        let kind: LimiterKind = kind.parse()?;
        let config = Fields::parse(kind, args)?.config()?;
        config.validate()?;
        Ok(config)
    }
}

impl TryFrom<String> for LimiterConfig {
    type Error = ConfigError;

    /// [`str::parse`].
    fn try_from(s: String) -> Result<LimiterConfig, ConfigError> {
        s.parse()
    }
}

impl From<LimiterConfig> for String {
    /// [`LimiterConfig`]'s `Display`.
    fn from(config: LimiterConfig) -> String {
        config.to_string()
    }
}

impl fmt::Display for LimiterConfig {
    /// `KIND:ARGS` with every field: the kind's positionally, then
    /// `batch=true` or `shards=N` and `wait=…` unless they are the defaults.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = fmt_duration;
        write!(f, "{}:", self.kind.limiter_kind())?;
        match self.kind {
            KindConfig::Pacer { rate, strictness } => write!(f, "{},{strictness}", rate.get()),
            KindConfig::Pool {
                rate,
                burst_ratio,
                filling,
            } => write!(f, "{},{burst_ratio},{}", rate.get(), fmt_filling(filling)),
            KindConfig::Bursty {
                rate,
                max_burst_seconds,
            } => write!(f, "{},{max_burst_seconds}", rate.get()),
            KindConfig::WarmingUp {
                rate,
                warmup,
                cold_factor,
            } => write!(f, "{},{},{cold_factor}", rate.get(), d(warmup)),
            KindConfig::Refill(c) => write!(
                f,
                "{},{},{},{},{}",
                self.kind.rate(),
                d(c.limit_refresh_period()),
                c.capacity(),
                c.initial_permits(),
                d(c.timeout())
            ),
            KindConfig::Cycle(c) => write!(
                f,
                "{},{},{}",
                self.kind.rate(),
                d(c.limit_refresh_period()),
                d(c.timeout())
            ),
        }?;
        match self.access {
            Access::Exact => {}
            Access::Batched => f.write_str(",batch=true")?,
            Access::Sharded(n) => write!(f, ",shards={n}")?,
        }
        if let Some(spin) = self.wait.precise_spin() {
            write!(f, ",wait=precise:{}", d(spin))?;
        } else if let Some(window) = self.wait.coalesce_window() {
            write!(f, ",wait=coalesce:{}", d(window))?;
        }
        Ok(())
    }
}

use crate::error::fmt_duration;

fn fmt_filling(filling: Filling) -> String {
    match filling {
        Filling::Inline => "inline".to_owned(),
        Filling::Thread(interval) => fmt_duration(interval),
        Filling::Manual => "manual".to_owned(),
    }
}

/// The fields of a `KIND:ARGS`, each value with the field it gives.
struct Fields<'a> {
    kind: LimiterKind,
    values: Vec<(Field, &'a str)>,
}

impl<'a> Fields<'a> {
    /// Splits `args` into fields: positional ones in the kind's order, then
    /// named ones; each at most once.
    fn parse(kind: LimiterKind, args: &'a str) -> Result<Fields<'a>, LimiterConfigError> {
        let mut values: Vec<(Field, &str)> = Vec::new();
        let mut named = false;
        for text in args.split(',') {
            let text = text.trim();
            if text.is_empty() {
                let args = args.to_owned();
                return Err(LimiterConfigError::EmptyField { kind, args });
            }
            let (field, value) = if let Some((name, value)) = text.split_once('=') {
                named = true;
                (named_field(kind, name)?, value.trim())
            } else if named {
                let value = text.to_owned();
                return Err(LimiterConfigError::PositionalAfterNamed { kind, value });
            } else {
                let field = kind.fields().get(values.len()).copied().ok_or_else(|| {
                    let value = text.to_owned();
                    LimiterConfigError::TooManyFields { kind, value }
                })?;
                (field, text)
            };
            if values.iter().any(|(f, _)| *f == field) {
                let args = args.to_owned();
                return Err(LimiterConfigError::RepeatedField { field, args });
            }
            values.push((field, value));
        }
        Ok(Fields { kind, values })
    }

    fn get(&self, field: Field) -> Option<&'a str> {
        self.values
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, v)| *v)
    }

    /// The configuration the fields give. Each field's text is read once,
    /// into its type; the checks that need several values come at
    /// validation. A pool's burst ratio is checked after the other fields,
    /// as the pool's sizes are.
    fn config(&self) -> Result<LimiterConfig, ConfigError> {
        let kind = self.kind;
        let missing = |field| LimiterConfigError::MissingField { kind, field };
        let rate = rate(self.get(Field::Rate).ok_or(missing(Field::Rate))?)?;
        let get_number = |field, default, problem| match self.get(field) {
            None => Ok(default),
            Some(v) => number(field, v, problem),
        };
        let mut pool_burst = None;
        let kind_config = match kind {
            LimiterKind::Pacer => KindConfig::Pacer {
                rate,
                strictness: match self.get(Field::Strictness) {
                    None => Strictness::DEFAULT,
                    Some(v) => strictness(v)?,
                },
            },
            LimiterKind::Pool => {
                pool_burst = Some(get_number(
                    Field::Burst,
                    DEFAULT_BURST_RATIO,
                    "is not a number: expected at least 1, such as 1.1",
                )?);
                KindConfig::Pool {
                    rate,
                    // Checked, and set, below.
                    burst_ratio: BurstRatio::DEFAULT,
                    filling: self
                        .get(Field::Fill)
                        .map_or(Ok(Filling::thread()), filling)?,
                }
            }
            LimiterKind::Bursty => KindConfig::Bursty {
                rate,
                max_burst_seconds: get_number(
                    Field::MaxBurst,
                    DEFAULT_MAX_BURST_SECONDS,
                    "is not a number: expected a number of seconds, at least 0, such as 1 or 0.5",
                )?,
            },
            LimiterKind::WarmingUp => {
                let warmup = self.get(Field::Warmup).ok_or(missing(Field::Warmup))?;
                let cold_factor = get_number(
                    Field::ColdFactor,
                    DEFAULT_COLD_FACTOR,
                    "is not a number: expected at least 1, such as 3",
                )?;
                if cold_factor.is_infinite() {
                    return Err(invalid(
                        Field::ColdFactor,
                        self.get(Field::ColdFactor).unwrap_or_default(),
                        "is infinite: the cold factor must be finite",
                    )
                    .into());
                }
                KindConfig::WarmingUp {
                    rate,
                    warmup: duration(Field::Warmup, warmup, true)?,
                    cold_factor,
                }
            }
            LimiterKind::Refill | LimiterKind::Cycle => self.resilience4j(rate)?,
        };
        let access = self.access()?;
        let wait = self
            .get(Field::Wait)
            .map_or(Ok(WaitPolicy::default()), wait)?;
        let kind_config = match (kind_config, pool_burst) {
            (KindConfig::Pool { rate, filling, .. }, Some(burst)) => KindConfig::Pool {
                rate,
                burst_ratio: burst_ratio(burst)?,
                filling,
            },
            (kind_config, _) => kind_config,
        };
        Ok(LimiterConfig {
            kind: kind_config,
            access,
            wait,
        })
    }

    /// A refill or cycle limiter at `rate`.
    fn resilience4j(&self, rate: Rate) -> Result<KindConfig, ConfigError> {
        let get_duration = |field, zero_ok, default| match self.get(field) {
            None => Ok(default),
            Some(v) => duration(field, v, zero_ok),
        };
        let period = get_duration(Field::Period, false, super::DEFAULT_REFRESH_PERIOD)?;
        let limit = crate::bucket::limit_for_rate(rate, period)?;
        let mut builder = BucketFields::new()
            .limit_for_period(limit)
            .limit_refresh_period(period)
            .timeout(get_duration(Field::Timeout, true, DEFAULT_TIMEOUT)?);
        if self.kind == LimiterKind::Cycle {
            return Ok(KindConfig::Cycle(builder.build_cycle()?));
        }
        if let Some(v) = self.get(Field::Capacity) {
            builder = builder.permit_capacity(permits(Field::Capacity, v)?);
        }
        if let Some(v) = self.get(Field::Initial) {
            builder = builder.initial_permits(permits(Field::Initial, v)?);
        }
        Ok(KindConfig::Refill(builder.build()?))
    }

    /// `batch=true` or `shards=N`.
    fn access(&self) -> Result<Access, LimiterConfigError> {
        let batch = match self.get(Field::Batch) {
            None => false,
            Some(v) => v
                .parse::<bool>()
                .map_err(|_| invalid(Field::Batch, v, "is not true or false"))?,
        };
        let shards = self.get(Field::Shards).map(shards).transpose()?;
        match (batch, shards) {
            (true, Some(_)) => Err(LimiterConfigError::BatchAndShards),
            (_, Some(n)) => Ok(Access::Sharded(n)),
            (true, None) => Ok(Access::Batched),
            (false, None) => Ok(Access::Exact),
        }
    }
}

/// The field `name` (case-insensitive, `-` for `_`) if `kind` takes it.
fn named_field(kind: LimiterKind, name: &str) -> Result<Field, LimiterConfigError> {
    let name = name.trim().to_ascii_lowercase().replace('-', "_");
    Field::ALL
        .into_iter()
        .find(|f| f.name() == name && kind.takes(*f))
        .ok_or(LimiterConfigError::UnknownField { kind, name })
}

fn invalid(field: Field, value: &str, problem: &'static str) -> LimiterConfigError {
    LimiterConfigError::InvalidValue {
        field,
        value: value.to_owned(),
        problem,
    }
}

/// A rate-spec number of operations per second that a nanosecond schedule
/// can keep.
fn rate(v: &str) -> Result<Rate, LimiterConfigError> {
    if v.contains(':') {
        return Err(invalid(
            Field::Rate,
            v,
            "is not a number such as 10, 2.5k or 1M",
        ));
    }
    let spec: RateSpec = v
        .parse()
        .map_err(|source| LimiterConfigError::InvalidRate {
            value: v.to_owned(),
            source,
        })?;
    spec.rate()
        .slice()
        .map_err(|source| LimiterConfigError::RateOutOfRange {
            value: v.to_owned(),
            source,
        })?;
    Ok(spec.rate())
}

fn duration(field: Field, v: &str, zero_ok: bool) -> Result<Duration, LimiterConfigError> {
    match humantime::parse_duration(v) {
        Ok(d) if d.is_zero() && !zero_ok => Err(invalid(
            field,
            v,
            "is zero: the duration must be greater than zero",
        )),
        Ok(d) => Ok(d),
        Err(_) => Err(invalid(
            field,
            v,
            "is not a duration: expected a number and a unit, e.g. 50ms, 2s or 1m30s",
        )),
    }
}

fn number(field: Field, v: &str, problem: &'static str) -> Result<f64, LimiterConfigError> {
    v.parse::<f64>().map_err(|_| invalid(field, v, problem))
}

fn permits(field: Field, v: &str) -> Result<i64, LimiterConfigError> {
    v.parse::<i64>().map_err(|_| {
        invalid(
            field,
            v,
            "is not a whole number of permits: expected e.g. 20",
        )
    })
}

fn strictness(v: &str) -> Result<Strictness, LimiterConfigError> {
    let s: f64 = v
        .parse()
        .map_err(|_| invalid(Field::Strictness, v, STRICTNESS_EXPECTED))?;
    Strictness::checked(s).map_err(|source| LimiterConfigError::InvalidStrictness {
        value: v.to_owned(),
        source,
    })
}

/// A pool's burst ratio, refused as the pool refuses it.
fn burst_ratio(v: f64) -> Result<BurstRatio, PoolError> {
    BurstRatio::new(v).map_err(|e| match e.kind() {
        SpecErrorKind::BurstNotFinite => PoolError::BurstNotFinite(v),
        _ => PoolError::BurstBelowOne(v),
    })
}

/// A pool's `fill`: `inline`, `manual`, or a filler thread's interval.
fn filling(v: &str) -> Result<Filling, LimiterConfigError> {
    match v.to_ascii_lowercase().as_str() {
        "inline" => return Ok(Filling::Inline),
        "manual" => return Ok(Filling::Manual),
        _ => {}
    }
    let interval = duration(Field::Fill, v, false)?;
    if !(MIN_FILL_INTERVAL..=MAX_FILL_INTERVAL).contains(&interval) {
        return Err(invalid(
            Field::Fill,
            v,
            "is out of range: the fill interval must be between 1us and 1s",
        ));
    }
    Ok(Filling::Thread(interval))
}

fn shards(v: &str) -> Result<usize, LimiterConfigError> {
    match v.parse::<usize>() {
        Ok(n) if (1..=MAX_SHARDS).contains(&n) => Ok(n),
        _ => Err(invalid(
            Field::Shards,
            v,
            "is not a shard count: expected a whole number from 1 to 1024",
        )),
    }
}

/// `precise:DUR`, `coalesce:DUR` or `default`.
fn wait(v: &str) -> Result<WaitPolicy, LimiterConfigError> {
    const PROBLEM: &str = "is not a wait policy: expected default, precise:DUR (sleep, then spin \
                           DUR) or coalesce:DUR (let waits within DUR go together)";
    if v.eq_ignore_ascii_case("default") {
        return Ok(WaitPolicy::default());
    }
    let (how, d) = v
        .split_once(':')
        .ok_or_else(|| invalid(Field::Wait, v, PROBLEM))?;
    let d = humantime::parse_duration(d.trim()).map_err(|_| invalid(Field::Wait, v, PROBLEM))?;
    match how.trim().to_ascii_lowercase().as_str() {
        "precise" => Ok(WaitPolicy::precise(d)),
        "coalesce" => Ok(WaitPolicy::coalesce(d)),
        _ => Err(invalid(Field::Wait, v, PROBLEM)),
    }
}
