//! [`Limits`]: a config's descriptor trees, each counted limit on a capped
//! keyed store, and the decision of a [`CheckRequest`].

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use ratekeeper::config::{KindConfig, LimiterConfig};
use ratekeeper::keyed::{Keyed, KeyedError};
use ratekeeper::pacer::Strictness;
use ratekeeper::{Clock, ConfigError, CycleConfig, DefaultClock, Rate, Recovery, RefillConfig};
use ratekeeper_tower::headers::{ratelimit_item, retry_after_secs};
use ratekeeper_tower::Policy;

use crate::check::DescriptorStatus;
use crate::check::{CheckError, CheckRequest, CheckResponse, Code, CurrentLimit, Descriptor};
use crate::config::{
    Algorithm, Config, DescriptorConfig, DomainConfig, LimitConfig, RateLimitConfig,
};

/// The live keys each counted limit may hold unless set otherwise.
pub const DEFAULT_MAX_KEYS_PER_LIMIT: usize = 1_000_000;

/// Every configured domain's limits, ready to decide.
///
/// Each counted limit keeps one state per distinct descriptor value on a
/// capped keyed store: at most [`max_keys`](LimitsBuilder::max_keys) live
/// keys, where a new key is refused ([`Code::OverLimit`]) only when every
/// live one is in debt. A refused request takes nothing.
///
/// # Matching
///
/// As envoyproxy/ratelimit: a descriptor's entries walk its domain's tree
/// from the top, each entry matching a node of its key and value first,
/// then a node whose value ends in `*` and is a prefix of it, then a node
/// of its key alone; the limit is the node the last entry reaches. A
/// descriptor that leaves the tree early, or ends at a node without a
/// limit, has none ([`Code::Ok`], no current limit). The key of a counted
/// state is the descriptor's entries, so a node matched by key alone limits
/// each value separately.
///
/// # Several descriptors
///
/// Each descriptor is decided on its own and the request is over the
/// limit if any is. When a limit without `max_wait` already lacks the hits
/// asked, the whole request is refused before anything is taken; a
/// descriptor admitted while a later one refuses in a race keeps its hits
/// taken, as envoyproxy/ratelimit does.
///
/// ```
/// use ratekeeper_serve::config::Config;
/// use ratekeeper_serve::{CheckRequest, Code, Descriptor, Limits};
///
/// let domain = Config::from_yaml(
///     "domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 2}\n",
///     "api.yaml",
/// )?;
/// let limits = Limits::new(&Config { domains: vec![domain] })?;
/// let ask = CheckRequest::new("api", vec![Descriptor::new([("user", "alice")])]);
/// assert_eq!(limits.check(&ask)?.overall_code, Code::Ok);
/// assert_eq!(limits.check(&ask)?.overall_code, Code::Ok);
/// assert_eq!(limits.check(&ask)?.overall_code, Code::OverLimit);
/// // Each value of `user` has its own limit.
/// let bob = CheckRequest::new("api", vec![Descriptor::new([("user", "bob")])]);
/// assert_eq!(limits.check(&bob)?.overall_code, Code::Ok);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Limits<C = DefaultClock> {
    domains: HashMap<String, Nodes<C>>,
    clock: C,
    max_keys: usize,
}

/// How [`Limits`] are built: the cap on each limit's live keys, the clock.
#[derive(Debug, Clone)]
pub struct LimitsBuilder {
    max_keys: usize,
}

impl Default for LimitsBuilder {
    fn default() -> Self {
        LimitsBuilder {
            max_keys: DEFAULT_MAX_KEYS_PER_LIMIT,
        }
    }
}

/// A limit of the config that could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct LimitsError {
    /// The config file.
    pub file: String,
    /// The line of the limit's descriptor.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// One level of a descriptor tree.
struct Nodes<C> {
    /// By key, then value.
    exact: HashMap<String, HashMap<String, Node<C>>>,
    /// Values ending in `*`: (key, prefix), in the config's order.
    prefixes: Vec<((String, String), Node<C>)>,
    by_key: HashMap<String, Node<C>>,
}

struct Node<C> {
    limit: Option<Arc<Limit<C>>>,
    children: Nodes<C>,
}

/// A node's limit, with the definition that made it (kept across reloads
/// while that definition is unchanged).
struct Limit<C> {
    definition: (LimitConfig, bool),
    shadow: bool,
    counted: Option<Counted<C>>,
}

struct Counted<C> {
    keyed: Keyed<String, C>,
    current: CurrentLimit,
    policy: Policy,
    id: Arc<str>,
    max_wait: Duration,
    /// A refill bucket's nanoseconds per permit, for the retry of a
    /// refusal decided without taking.
    permit_nanos: Option<u64>,
}

impl Limits {
    /// The settings.
    pub fn builder() -> LimitsBuilder {
        LimitsBuilder::default()
    }

    /// `config`'s limits on the default clock, each holding at most
    /// [`DEFAULT_MAX_KEYS_PER_LIMIT`] keys.
    ///
    /// # Errors
    ///
    /// A [`LimitsError`] for a limit the core refuses to build.
    pub fn new(config: &Config) -> Result<Limits, LimitsError> {
        Limits::builder().build(config)
    }
}

impl LimitsBuilder {
    /// The cap on each limit's live keys (default
    /// [`DEFAULT_MAX_KEYS_PER_LIMIT`]).
    pub fn max_keys(mut self, max_keys: usize) -> Self {
        self.max_keys = max_keys;
        self
    }

    /// `config`'s limits on the default clock.
    ///
    /// # Errors
    ///
    /// As [`Limits::new`].
    pub fn build(self, config: &Config) -> Result<Limits, LimitsError> {
        self.build_with_clock(config, DefaultClock::new())
    }

    /// `config`'s limits on `clock`.
    ///
    /// # Errors
    ///
    /// As [`Limits::new`].
    pub fn build_with_clock<C: Clock + Clone + Send + Sync + 'static>(
        self,
        config: &Config,
        clock: C,
    ) -> Result<Limits<C>, LimitsError> {
        let empty = Limits {
            domains: HashMap::new(),
            clock,
            max_keys: self.max_keys,
        };
        empty.reload(config)
    }
}

impl<C: Clock + Clone + Send + Sync + 'static> Limits<C> {
    /// New limits for `config` on the same clock and cap, keeping the state
    /// of every limit whose domain, place in the tree and definition are
    /// unchanged; a changed or new limit starts fresh.
    ///
    /// # Errors
    ///
    /// As [`Limits::new`]; `self` is unchanged.
    pub fn reload(&self, config: &Config) -> Result<Limits<C>, LimitsError> {
        let mut domains = HashMap::new();
        for d in &config.domains {
            let old = self.domains.get(&d.domain);
            domains.insert(d.domain.clone(), self.nodes(d, &d.descriptors, old, &[])?);
        }
        Ok(Limits {
            domains,
            clock: self.clock.clone(),
            max_keys: self.max_keys,
        })
    }

    fn nodes(
        &self,
        domain: &DomainConfig,
        descriptors: &[DescriptorConfig],
        old: Option<&Nodes<C>>,
        path: &[&str],
    ) -> Result<Nodes<C>, LimitsError> {
        let mut nodes = Nodes::default();
        for d in descriptors {
            let value = d.value.clone();
            let old_node = old.and_then(|o| o.get_exact(&d.key, value.as_deref()));
            let mut here = path.to_vec();
            here.push(&d.key);
            let limit = match &d.limit {
                Some(l) => Some(self.limit(domain, d, l, old_node, &here)?),
                None => None,
            };
            let children =
                self.nodes(domain, &d.descriptors, old_node.map(|n| &n.children), &here)?;
            let node = Node { limit, children };
            match value {
                Some(v) if v.ends_with('*') => {
                    let prefix = v.trim_end_matches('*').to_owned();
                    nodes.prefixes.push(((d.key.clone(), prefix), node));
                }
                Some(v) => {
                    nodes
                        .exact
                        .entry(d.key.clone())
                        .or_default()
                        .insert(v, node);
                }
                None => {
                    nodes.by_key.insert(d.key.clone(), node);
                }
            }
        }
        Ok(nodes)
    }

    fn limit(
        &self,
        domain: &DomainConfig,
        d: &DescriptorConfig,
        config: &LimitConfig,
        old: Option<&Node<C>>,
        path: &[&str],
    ) -> Result<Arc<Limit<C>>, LimitsError> {
        let definition = (config.clone(), d.shadow_mode);
        if let Some(kept) = old.and_then(|n| n.limit.as_ref()) {
            if kept.definition == definition {
                return Ok(Arc::clone(kept));
            }
        }
        let counted = match config {
            LimitConfig::Unlimited { .. } => None,
            LimitConfig::Limited(rate) => Some(self.counted(domain, d, rate, path)?),
        };
        Ok(Arc::new(Limit {
            definition,
            shadow: d.shadow_mode,
            counted,
        }))
    }

    fn counted(
        &self,
        domain: &DomainConfig,
        d: &DescriptorConfig,
        rate: &RateLimitConfig,
        path: &[&str],
    ) -> Result<Counted<C>, LimitsError> {
        let fail = |message: String| LimitsError {
            file: domain.source.clone(),
            line: d.line,
            message,
        };
        let keyed = limiter_config(rate)
            .and_then(|config| {
                Keyed::builder()
                    .max_keys(self.max_keys)
                    .build_with_clock(&config, self.clock.clone())
            })
            .map_err(|e| fail(format!("the limit is refused: {e}")))?;
        let name = rate
            .name
            .clone()
            .unwrap_or_else(|| format!("{}/{}", domain.domain, path.join("/")));
        let unit_secs = rate.unit.duration().as_secs();
        let burst = match rate.algorithm {
            Algorithm::Refill => rate.burst.unwrap_or(rate.requests_per_unit),
            Algorithm::Cycle => rate.requests_per_unit,
            Algorithm::Pacer => 1,
        };
        let id: Arc<str> = printable(&name).into();
        let policy = Policy::new(id.to_string(), u64::from(rate.requests_per_unit), unit_secs)
            .and_then(|p| p.with_burst(burst))
            .map_err(|e| fail(format!("the limit's policy is refused: {e}")))?;
        Ok(Counted {
            keyed,
            current: CurrentLimit {
                name: rate.name.clone(),
                requests_per_unit: rate.requests_per_unit,
                unit: rate.unit,
            },
            policy,
            id,
            max_wait: rate.max_wait,
            permit_nanos: (rate.algorithm == Algorithm::Refill).then(|| {
                let unit = rate.unit.duration().as_nanos() as u64;
                unit.div_ceil(u64::from(rate.requests_per_unit))
            }),
        })
    }

    /// Decides `request`: each descriptor against the limit it matches.
    ///
    /// # Errors
    ///
    /// A [`CheckError`] for a request that fails
    /// [`validate`](CheckRequest::validate) or names no configured domain;
    /// nothing is taken.
    pub fn check(&self, request: &CheckRequest) -> Result<CheckResponse, CheckError> {
        request.validate()?;
        let tree = self
            .domains
            .get(&request.domain)
            .ok_or_else(|| CheckError::UnknownDomain(request.domain.clone()))?;
        let matched: Vec<_> = request
            .descriptors
            .iter()
            .map(|d| (d, tree.find(d), entries_key(d), request.hits_of(d)))
            .collect();
        let asked_wait = request.max_wait.unwrap_or(Duration::MAX);
        // With one counted descriptor its own refusal takes nothing; with
        // several, one that lacks its hits now refuses them all first.
        let counted = matched.iter().filter(|m| m.1.is_some_and(Limit::counts));
        let refuse_all = counted.clone().count() > 1
            && counted.clone().any(|(_, limit, key, hits)| {
                limit.is_some_and(|l| l.lacks(key, *hits, asked_wait))
            });
        let mut response = CheckResponse {
            overall_code: Code::Ok,
            statuses: Vec::with_capacity(matched.len()),
            response_headers: Vec::new(),
            wait: Duration::ZERO,
        };
        let mut headers = Headers::default();
        for (_, limit, key, hits) in &matched {
            let (status, wait) = match limit {
                None => (no_limit(), Duration::ZERO),
                Some(l) => l.decide(key, *hits, asked_wait, refuse_all, &mut headers),
            };
            if status.code == Code::OverLimit {
                response.overall_code = Code::OverLimit;
            }
            response.wait = response.wait.max(wait);
            response.statuses.push(status);
        }
        response.response_headers = headers.finish(response.overall_code);
        Ok(response)
    }

    /// The domains configured, in no order.
    pub fn domains(&self) -> impl Iterator<Item = &str> {
        self.domains.keys().map(String::as_str)
    }

    /// Live keys summed over every counted limit.
    pub fn live_keys(&self) -> u64 {
        self.domains.values().map(Nodes::live_keys).sum()
    }
}

impl<C> fmt::Debug for Limits<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limits")
            .field("domains", &self.domains.keys().collect::<Vec<_>>())
            .field("max_keys", &self.max_keys)
            .finish_non_exhaustive()
    }
}

impl<C> Default for Nodes<C> {
    fn default() -> Self {
        Nodes {
            exact: HashMap::new(),
            prefixes: Vec::new(),
            by_key: HashMap::new(),
        }
    }
}

impl<C: Clock> Nodes<C> {
    /// The node configured with exactly this key and value (`None`: key
    /// only; a value ending in `*`: that prefix).
    fn get_exact(&self, key: &str, value: Option<&str>) -> Option<&Node<C>> {
        match value {
            None => self.by_key.get(key),
            Some(v) if v.ends_with('*') => {
                let prefix = v.trim_end_matches('*');
                self.prefixes
                    .iter()
                    .find(|((k, p), _)| k == key && p == prefix)
                    .map(|(_, n)| n)
            }
            Some(v) => self.exact.get(key)?.get(v),
        }
    }

    /// The node an entry reaches at this level.
    fn step(&self, key: &str, value: &str) -> Option<&Node<C>> {
        if let Some(n) = self.exact.get(key).and_then(|values| values.get(value)) {
            return Some(n);
        }
        let prefixed = self
            .prefixes
            .iter()
            .find(|((k, p), _)| k == key && value.starts_with(p.as_str()));
        if let Some((_, n)) = prefixed {
            return Some(n);
        }
        self.by_key.get(key)
    }

    /// The limit `d`'s entries reach, if any.
    fn find(&self, d: &Descriptor) -> Option<&Limit<C>> {
        let mut level = self;
        let last = d.entries.len() - 1;
        for (i, (key, value)) in d.entries.iter().enumerate() {
            let node = level.step(key, value)?;
            if i == last {
                return node.limit.as_deref();
            }
            level = &node.children;
        }
        None
    }

    fn live_keys(&self) -> u64 {
        let nodes = self
            .exact
            .values()
            .flat_map(HashMap::values)
            .chain(self.by_key.values())
            .chain(self.prefixes.iter().map(|(_, n)| n));
        nodes
            .map(|n| {
                let own = n
                    .limit
                    .as_ref()
                    .and_then(|l| l.counted.as_ref())
                    .map_or(0, |c| c.keyed.metrics().live_keys);
                own + n.children.live_keys()
            })
            .sum()
    }
}

impl<C: Clock> Limit<C> {
    fn counts(&self) -> bool {
        self.counted.is_some()
    }

    /// Whether this limit refuses `hits` for `key` now without waiting
    /// (and so the whole request is refused before anything is taken).
    fn lacks(&self, key: &String, hits: u64, asked_wait: Duration) -> bool {
        let Some(c) = &self.counted else {
            return false;
        };
        if self.shadow || hits == 0 || !c.max_wait.min(asked_wait).is_zero() {
            return false;
        }
        c.keyed.available(key).is_some_and(|a| a < hits)
    }

    /// One descriptor's status and wait; takes `hits` unless `query_only`
    /// or the limit refuses.
    fn decide(
        &self,
        key: &String,
        hits: u64,
        asked_wait: Duration,
        query_only: bool,
        headers: &mut Headers,
    ) -> (DescriptorStatus, Duration) {
        let Some(c) = &self.counted else {
            let mut status = no_limit();
            status.limit_remaining = u32::MAX;
            return (status, Duration::ZERO);
        };
        let outcome = if hits == 0 {
            Ok(Duration::ZERO)
        } else if query_only {
            match c.keyed.available(key) {
                Some(a) if a < hits => Err(c
                    .permit_nanos
                    .map(|ns| Duration::from_nanos(ns.saturating_mul(hits - a)))),
                _ => Ok(Duration::ZERO),
            }
        } else {
            take(c, key, hits, c.max_wait.min(asked_wait))
        };
        let remaining = c.keyed.available(key).unwrap_or(0);
        let reset = match c.keyed.recovery(key) {
            Some(Recovery::Debt { nanos }) => Duration::from_nanos(nanos),
            _ => Duration::ZERO,
        };
        let (over, retry_after, wait) = match outcome {
            Ok(wait) => (false, None, wait),
            Err(retry) => (true, retry, Duration::ZERO),
        };
        headers.add(&c.policy, remaining, reset, over.then_some(retry_after));
        let status = DescriptorStatus {
            code: if over && !self.shadow {
                Code::OverLimit
            } else {
                Code::Ok
            },
            current_limit: Some(c.current.clone()),
            limit_remaining: u32::try_from(remaining).unwrap_or(u32::MAX),
            duration_until_reset: reset,
            retry_after: if self.shadow { None } else { retry_after },
            shadow_over_limit: over && self.shadow,
            limit_id: Some(Arc::clone(&c.id)),
        };
        (status, wait)
    }
}

/// Takes `hits` for `key`: the wait before they are due, or a refusal
/// with the wait a retry needs, if known.
fn take<C: Clock>(
    c: &Counted<C>,
    key: &String,
    hits: u64,
    max_wait: Duration,
) -> Result<Duration, Option<Duration>> {
    let Ok(permits) = u32::try_from(hits) else {
        return Err(None);
    };
    match c.keyed.reserve(key, permits, Some(max_wait)) {
        Ok(grant) => Ok(Duration::from_nanos(grant.delay_nanos())),
        Err(e @ KeyedError::Limiter(_)) => Err(e.retry_after()),
        Err(_) => Err(None),
    }
}

fn no_limit() -> DescriptorStatus {
    DescriptorStatus {
        code: Code::Ok,
        current_limit: None,
        limit_remaining: 0,
        duration_until_reset: Duration::ZERO,
        retry_after: None,
        shadow_over_limit: false,
        limit_id: None,
    }
}

/// The key of a descriptor's state: its entries, each part prefixed by its
/// length so that no two descriptors share one.
fn entries_key(d: &Descriptor) -> String {
    let mut key = String::new();
    for (k, v) in &d.entries {
        key.push_str(&k.len().to_string());
        key.push(':');
        key.push_str(k);
        key.push_str(&v.len().to_string());
        key.push(':');
        key.push_str(v);
    }
    key
}

/// The core's limiter for a rate limit.
fn limiter_config(rate: &RateLimitConfig) -> Result<LimiterConfig, ConfigError> {
    let n = u64::from(rate.requests_per_unit);
    let unit = rate.unit.duration();
    let kind = match rate.algorithm {
        Algorithm::Refill => {
            let burst = rate.burst.map_or(n, u64::from);
            let (limit, period) = refill_period(n, unit, burst);
            KindConfig::Refill(
                RefillConfig::builder()
                    .limit_for_period(limit)
                    .limit_refresh_period(period)
                    .permit_capacity(burst)
                    .initial_permits(burst)
                    .build()?,
            )
        }
        Algorithm::Cycle => KindConfig::Cycle(
            CycleConfig::builder()
                .limit_for_period(n)
                .limit_refresh_period(unit)
                .build()?,
        ),
        Algorithm::Pacer => {
            let rate = Rate::new(n as f64 / unit.as_secs_f64())?;
            KindConfig::Pacer {
                rate,
                strictness: Strictness::new(1.0)?,
            }
        }
    };
    Ok(LimiterConfig::new(kind))
}

/// A refill bucket's (limit, period) for `n` per `unit` with a capacity of
/// `burst`: the bucket refills evenly whatever the period, but its limit
/// may not exceed its capacity. `n` per `unit` when the burst holds it;
/// else the largest limit up to the burst whose period is a whole number
/// of nanoseconds (the rate exact); else one permit per `unit / n`,
/// rounded to the nanosecond.
fn refill_period(n: u64, unit: Duration, burst: u64) -> (u64, Duration) {
    if burst >= n {
        return (n, unit);
    }
    let unit_ns = unit.as_nanos() as u64;
    let exact = n / gcd(n, unit_ns);
    if exact <= burst {
        let limit = exact * (burst / exact);
        return (
            limit,
            Duration::from_nanos(unit_ns / n * limit + unit_ns % n * limit / n),
        );
    }
    (1, Duration::from_nanos((unit_ns + n / 2) / n))
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `name` with every character a `RateLimit-Policy` name cannot hold
/// replaced by `_`.
fn printable(name: &str) -> String {
    name.chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { '_' })
        .collect()
}

/// The draft RateLimit fields of one response, one list member per
/// counted descriptor.
#[derive(Default)]
struct Headers {
    policies: Vec<String>,
    limits: Vec<String>,
    retry_after: Option<Duration>,
}

impl Headers {
    fn add(
        &mut self,
        policy: &Policy,
        remaining: u64,
        reset: Duration,
        refused: Option<Option<Duration>>,
    ) {
        let reset_secs = reset.as_secs() + u64::from(reset.subsec_nanos() > 0);
        self.policies.push(policy.to_string());
        self.limits
            .push(ratelimit_item(policy, remaining, reset_secs));
        if let Some(retry) = refused {
            let retry = retry.unwrap_or(reset);
            self.retry_after = Some(self.retry_after.map_or(retry, |r| r.max(retry)));
        }
    }

    fn finish(self, overall: Code) -> Vec<(String, String)> {
        if self.limits.is_empty() {
            return Vec::new();
        }
        let mut out = vec![
            ("ratelimit-policy".to_owned(), self.policies.join(", ")),
            ("ratelimit".to_owned(), self.limits.join(", ")),
        ];
        if let (Code::OverLimit, Some(retry)) = (overall, self.retry_after) {
            out.push((
                "retry-after".to_owned(),
                retry_after_secs(retry).to_string(),
            ));
        }
        out
    }
}
