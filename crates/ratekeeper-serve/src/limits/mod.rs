//! [`Limits`]: a config's descriptor trees, each counted limit on a capped
//! keyed store, and the decision of a [`CheckRequest`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use ratekeeper::keyed::Keyed;
use ratekeeper::{Clock, DefaultClock};
use ratekeeper_tower::Policy;

use crate::check::{CheckError, CheckRequest, CheckResponse, Code, CurrentLimit, MatchedLimit};
use crate::config::{
    Algorithm, Config, DescriptorConfig, DomainConfig, LimitConfig, RateLimitConfig,
};

mod decide;
mod store;
mod tree;

use decide::{entries_key, no_limit, Counted, Limit, Previous};
pub use store::RedisStore;
use store::{limiter_config, Store};
use tree::{HashMap, Node, Nodes};

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
    redis: Option<RedisStore>,
}

/// How [`Limits`] are built: the cap on each limit's live keys, the clock.
#[derive(Debug, Clone)]
pub struct LimitsBuilder {
    max_keys: usize,
    redis: Option<RedisStore>,
}

impl Default for LimitsBuilder {
    fn default() -> Self {
        LimitsBuilder {
            max_keys: DEFAULT_MAX_KEYS_PER_LIMIT,
            redis: None,
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

    /// Keeps every counted limit on Redis instead of in memory, shared by
    /// every replica with the same store and config; such limits are
    /// decided by [`Limits::check_async`].
    pub fn redis(mut self, store: RedisStore) -> Self {
        self.redis = Some(store);
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
            domains: HashMap::default(),
            clock,
            max_keys: self.max_keys,
            redis: self.redis,
        };
        empty.reload(config)
    }
}

impl<C: Clock + Clone + Send + Sync + 'static> Limits<C> {
    /// New limits for `config` on the same clock, cap and store, keeping
    /// the state of every limit whose domain, place in the tree and
    /// definition are unchanged.
    ///
    /// A changed limit in memory is checkpointed and kept: a key's
    /// permits in use under the old limit (its capacity less what the key
    /// holds) are taken from the new one at the key's first request, so a
    /// raised limit admits the difference at once and a lowered one never
    /// hands out again what was granted (a key that used more than the new
    /// capacity owes the rest). A key that has recovered by then starts
    /// as a new one; so does every key of a changed Pacer limit, whose
    /// schedule counts no permits. On Redis the server keeps each key's
    /// permits, at most the new capacity.
    ///
    /// # Errors
    ///
    /// As [`Limits::new`]; `self` is unchanged.
    pub fn reload(&self, config: &Config) -> Result<Limits<C>, LimitsError> {
        let mut domains = HashMap::default();
        for d in &config.domains {
            let old = self.domains.get(&d.domain);
            domains.insert(d.domain.clone(), self.nodes(d, &d.descriptors, old, &[])?);
        }
        Ok(Limits {
            domains,
            clock: self.clock.clone(),
            max_keys: self.max_keys,
            redis: self.redis.clone(),
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
        let replaced = old.and_then(|n| n.limit.as_deref());
        let counted = match config {
            LimitConfig::Unlimited { .. } => None,
            LimitConfig::Limited(rate) => Some(self.counted(domain, d, rate, path, replaced)?),
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
        replaced: Option<&Limit<C>>,
    ) -> Result<Counted<C>, LimitsError> {
        let fail = |message: String| LimitsError {
            file: domain.source.clone(),
            line: d.line,
            message,
        };
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
        let id = printable(&name);
        let policy = Policy::new(id.clone(), u64::from(rate.requests_per_unit), unit_secs)
            .and_then(|p| p.with_burst(burst))
            .map_err(|e| fail(format!("the limit's policy is refused: {e}")))?;
        let store = match &self.redis {
            Some(redis) => Store::Redis(redis.limiter(&domain.domain, &id, rate).map_err(fail)?),
            None => Store::Memory(
                limiter_config(rate)
                    .and_then(|config| {
                        Keyed::builder()
                            .max_keys(self.max_keys)
                            .build_with_clock(&config, self.clock.clone())
                    })
                    .map_err(|e| fail(format!("the limit is refused: {e}")))?,
            ),
        };
        let unit_nanos = u64::try_from(rate.unit.duration().as_nanos()).unwrap_or(u64::MAX);
        let permit_nanos = unit_nanos.div_ceil(u64::from(rate.requests_per_unit));
        let capacity = match rate.algorithm {
            Algorithm::Pacer => None,
            _ => Some(u64::from(burst)),
        };
        let previous = replaced
            .and_then(|l| l.counted.as_ref())
            .and_then(|c| self.previous(c));
        Ok(Counted {
            store: Arc::new(store),
            capacity,
            previous,
            shown: {
                let current = CurrentLimit {
                    name: rate.name.clone(),
                    requests_per_unit: rate.requests_per_unit,
                    unit: rate.unit,
                };
                (0..decide::stripes())
                    .map(|_| MatchedLimit::new(current.clone(), policy.clone()))
                    .collect()
            },
            max_wait: rate.max_wait,
            permit_nanos: (rate.algorithm == Algorithm::Refill).then_some(permit_nanos),
            full_nanos: match rate.algorithm {
                Algorithm::Refill => permit_nanos.saturating_mul(u64::from(burst)),
                _ => unit_nanos,
            },
        })
    }

    /// The replaced limit `c`'s keys, to carry over, while any may still
    /// hold grants: for a limit in memory that counts permits.
    fn previous(&self, c: &Counted<C>) -> Option<Previous<C>> {
        let capacity = c.capacity?;
        if c.store.is_shared() {
            return None;
        }
        // A key recovers fully in its capacity's worth of refills (a
        // bucket) or one window (a cycle): `full_nanos`.
        let until = self.clock.now_nanos().saturating_add(c.full_nanos);
        Some(Previous {
            store: Arc::clone(&c.store),
            capacity,
            until,
            carrying: std::sync::Mutex::new(()),
        })
    }

    /// Decides `request`: each descriptor against the limit it matches,
    /// for limits kept in memory (no waiting, no I/O).
    ///
    /// # Errors
    ///
    /// A [`CheckError`] for a request that fails
    /// [`validate`](CheckRequest::validate) or names no configured domain;
    /// [`CheckError::SharedStore`] when a descriptor matches a limit kept
    /// on Redis (decide those with [`check_async`](Self::check_async)).
    /// Nothing is taken.
    pub fn check(&self, request: &CheckRequest) -> Result<CheckResponse, CheckError> {
        let plan = self.plan(request)?;
        if let Some(shared) = plan
            .matched
            .iter()
            .find_map(|m| m.limit.filter(|l| l.is_shared()))
        {
            let id = shared.counted.as_ref().map(|c| c.id().to_owned());
            return Err(CheckError::SharedStore(id.unwrap_or_default()));
        }
        let mut answer = Answer::for_statuses(plan.matched.len());
        for m in &plan.matched {
            let decided = match m.limit {
                None => Some((no_limit(), Duration::ZERO)),
                Some(l) => l.decide_now(&m.key, m.hits, plan.asked_wait, plan.refuse_all),
            };
            // Every limit is in memory (checked above).
            if let Some((status, wait)) = decided {
                answer.add(status, wait);
            }
        }
        Ok(answer.finish())
    }

    /// [`check`](Self::check) on any store: a limit kept on Redis takes one
    /// round trip (bounded by the backend's deadline, then its failure
    /// policy decides).
    ///
    /// # Errors
    ///
    /// As [`check`](Self::check), but for [`CheckError::SharedStore`].
    pub async fn check_async(&self, request: &CheckRequest) -> Result<CheckResponse, CheckError> {
        let plan = self.plan(request)?;
        let mut answer = Answer::for_statuses(plan.matched.len());
        for m in &plan.matched {
            let (status, wait) = match m.limit {
                None => (no_limit(), Duration::ZERO),
                Some(l) => {
                    l.decide(&m.key, m.hits, plan.asked_wait, plan.refuse_all)
                        .await
                }
            };
            answer.add(status, wait);
        }
        Ok(answer.finish())
    }

    /// Checks `request`, matches each descriptor and decides whether the
    /// request is refused before anything is taken.
    fn plan<'a>(&'a self, request: &'a CheckRequest) -> Result<Plan<'a, C>, CheckError> {
        request.validate()?;
        let tree = self
            .domains
            .get(&request.domain)
            .ok_or_else(|| CheckError::UnknownDomain(request.domain.clone()))?;
        let matched: Vec<_> = request
            .descriptors
            .iter()
            .map(|d| Matched {
                limit: tree.find(d),
                key: entries_key(d),
                hits: request.hits_of(d),
            })
            .collect();
        let asked_wait = request.max_wait.unwrap_or(Duration::MAX);
        // With one counted descriptor its own refusal takes nothing; with
        // several, one that lacks its hits now refuses them all first.
        let counted = || {
            matched
                .iter()
                .filter(|m| m.limit.is_some_and(Limit::counts))
        };
        let refuse_all = counted().count() > 1
            && counted().any(|m| m.limit.is_some_and(|l| l.lacks(&m.key, m.hits, asked_wait)));
        Ok(Plan {
            matched,
            asked_wait,
            refuse_all,
        })
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

/// A request's descriptors, matched.
struct Plan<'a, C> {
    matched: Vec<Matched<'a, C>>,
    asked_wait: Duration,
    refuse_all: bool,
}

struct Matched<'a, C> {
    limit: Option<&'a Limit<C>>,
    key: String,
    hits: u64,
}

/// A response as its statuses come in.
#[derive(Default)]
struct Answer {
    statuses: Vec<crate::check::DescriptorStatus>,
    over: bool,
    wait: Duration,
}

impl Answer {
    /// An answer with room for `n` statuses.
    fn for_statuses(n: usize) -> Answer {
        Answer {
            statuses: Vec::with_capacity(n),
            ..Answer::default()
        }
    }

    fn add(&mut self, status: crate::check::DescriptorStatus, wait: Duration) {
        self.over |= status.code == Code::OverLimit;
        self.wait = self.wait.max(wait);
        self.statuses.push(status);
    }

    fn finish(self) -> CheckResponse {
        let overall_code = if self.over { Code::OverLimit } else { Code::Ok };
        CheckResponse {
            overall_code,
            statuses: self.statuses,
            wait: self.wait,
        }
    }
}

/// `name` with every character a `RateLimit-Policy` name cannot hold
/// replaced by `_`.
fn printable(name: &str) -> String {
    name.chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { '_' })
        .collect()
}
