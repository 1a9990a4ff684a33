//! The hard cap on a prefix's live clients
//! ([`RedisLimiterBuilder::max_clients`](super::RedisLimiterBuilder::max_clients)):
//! the key layout, the checks at build, and the capped
//! [`reserve_for`](RedisLimiter::reserve_for).
//!
//! # Implementation details
//!
//! The server keeps, beside each client's key, a registry of the prefix's
//! live clients: a sorted set of their keys scored by when each limit has
//! recovered (whole ms of the server clock, rounded up). The script
//! (`scripts/clients.lua`, run with the limit's own script as a function)
//! drops up to 4 recovered clients on every call, the earliest first, then
//! up to 4 more when a new client finds the registry full, and only then
//! applies the [`Overflow`] policy; it rescores the client after its
//! decision. A recovered client's state equals a new limiter's (a strict
//! schedule caught up, a bucket full whose initial permits are its
//! capacity) or holds only credit (a schedule behind the clock, a bucket
//! holding more than its initial permits): dropping it never admits more.
//! So each call is O(log N) for N live clients, and the registry never
//! holds more than the cap (unless the cap was lowered: then it drains as
//! clients recover, or two at a time under
//! [`Overflow::EvictLeastDebt`]).
//!
//! Every key a call touches shares the prefix's hash tag: the client keys
//! are `{prefix}client`, the registry `rk:clients:{prefix}` and the
//! overflow limit `rk:overflow:{prefix}` (a prefix that holds a hash tag
//! already is kept as it is). No client key can equal the registry or the
//! overflow key: `t + c = X + t` makes `t` a string of `X`'s characters
//! (Lyndon and Schützenberger), and `X` has no braces where `t` has a tag.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ratekeeper::keyed::{check_max_keys, Overflow};
use ratekeeper::{AcquireError, ConfigError, ConfigErrorKind};

use super::{would_wait, Invalid, RedisLimiter, ARGS, REPLY};
use crate::backend::Lua;
use crate::decision::{Admission, Decision, Source};
use crate::error::RedisError;
use crate::limit::Script;

/// What the registry's name starts with, before the tagged prefix.
const REGISTRY: &str = "rk:clients:";
/// What the overflow limit's name starts with, before the tagged prefix.
const OVERFLOW: &str = "rk:overflow:";

/// A capped limiter's clients: the cap, the policy, the keys, and what
/// this process's calls saw.
#[derive(Debug)]
pub(super) struct Clients {
    max: usize,
    overflow: Overflow,
    /// The prefix with a hash tag.
    tagged: String,
    registry: String,
    overflow_key: String,
    live: AtomicU64,
    evicted_recovered: AtomicU64,
    evicted_debt: AtomicU64,
    denied_new: AtomicU64,
    overflowed: AtomicU64,
}

/// What a limiter capped on live clients has seen: the registry's size
/// at the last answer, and what this process's calls did
/// ([`RedisLimiter::client_stats`]). Summed over the processes sharing the
/// prefix, the counters are the server's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ClientStats {
    /// Live clients in the registry at the last answer (every process's;
    /// it may still count a few recovered ones not yet dropped).
    pub live_clients: u64,
    /// The cap on them.
    pub max_clients: u64,
    /// Clients dropped once recovered: nothing admitted more (exact when
    /// their state equals a new one's, else their credit forfeited).
    pub evicted_recovered: u64,
    /// Clients dropped in debt by [`Overflow::EvictLeastDebt`] (forgiven).
    pub evicted_debt: u64,
    /// New clients refused by [`Overflow::DenyNew`]
    /// ([`Admission::DeniedNew`]).
    pub denied_new: u64,
    /// Requests of new clients decided by the shared overflow limit
    /// ([`Overflow::Shared`], [`Admission::Overflowed`]).
    pub overflowed: u64,
}

impl Clients {
    /// The clients of `prefix` capped at `max` with `overflow`, if `max`
    /// is given.
    ///
    /// # Errors
    ///
    /// [`ConfigErrorKind::MaxKeys`] for a cap of 0 or above [`MAX_KEYS`];
    /// [`ConfigErrorKind::Backend`] for a prefix that cannot take a hash
    /// tag.
    pub(super) fn new(
        prefix: &str,
        max: Option<usize>,
        overflow: Overflow,
    ) -> Result<Option<Clients>, ConfigError> {
        let Some(max) = max else {
            return Ok(None);
        };
        check_max_keys(max)?;
        let tagged = tagged(prefix).ok_or_else(|| {
            ConfigError::new(
                ConfigErrorKind::Backend,
                Invalid(format!(
                    "the prefix {prefix:?} starts with '}}' and holds no hash tag: a capped \
                     prefix needs one (give e.g. \"{{api}}:\" or a prefix without braces)"
                )),
            )
        })?;
        Ok(Some(Clients {
            max,
            overflow,
            registry: format!("{REGISTRY}{tagged}"),
            overflow_key: format!("{OVERFLOW}{tagged}"),
            tagged,
            live: AtomicU64::new(0),
            evicted_recovered: AtomicU64::new(0),
            evicted_debt: AtomicU64::new(0),
            denied_new: AtomicU64::new(0),
            overflowed: AtomicU64::new(0),
        }))
    }

    /// The cap on live clients.
    pub(super) fn max(&self) -> usize {
        self.max
    }

    /// The policy for a full registry.
    pub(super) fn overflow(&self) -> Overflow {
        self.overflow
    }

    fn stats(&self) -> ClientStats {
        // Ordering: Relaxed throughout; a snapshot of statistics.
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ClientStats {
            live_clients: get(&self.live),
            max_clients: self.max as u64,
            evicted_recovered: get(&self.evicted_recovered),
            evicted_debt: get(&self.evicted_debt),
            denied_new: get(&self.denied_new),
            overflowed: get(&self.overflowed),
        }
    }

    /// Counts the cap's part of a reply (`tail`: outcome, live, evicted
    /// recovered, evicted in debt).
    fn count(&self, admission: Admission, tail: &[i64]) {
        let n = |v: i64| u64::try_from(v).unwrap_or(0);
        // Ordering: Relaxed throughout; statistics.
        self.live.store(n(tail[1]), Ordering::Relaxed);
        self.evicted_recovered
            .fetch_add(n(tail[2]), Ordering::Relaxed);
        self.evicted_debt.fetch_add(n(tail[3]), Ordering::Relaxed);
        match admission {
            Admission::DeniedNew => self.denied_new.fetch_add(1, Ordering::Relaxed),
            Admission::Overflowed => self.overflowed.fetch_add(1, Ordering::Relaxed),
            Admission::Tracked | Admission::EvictedDebt => 0,
        };
    }
}

/// `prefix` as it is if it holds a hash tag (a `{`, later a `}`, something
/// between), else in braces; `None` if that holds none either (a prefix
/// that starts with `}`).
fn tagged(prefix: &str) -> Option<String> {
    let has_tag = |s: &str| {
        s.find('{')
            .and_then(|open| s[open + 1..].find('}'))
            .is_some_and(|len| len > 0)
    };
    if has_tag(prefix) {
        return Some(prefix.to_owned());
    }
    let wrapped = format!("{{{prefix}}}");
    has_tag(&wrapped).then_some(wrapped)
}

impl RedisLimiter {
    /// What this limiter's capped clients have seen, if it is capped
    /// ([`max_clients`](super::RedisLimiterBuilder::max_clients)).
    pub fn client_stats(&self) -> Option<ClientStats> {
        self.clients.as_ref().map(Clients::stats)
    }

    /// The cap on live clients, if any.
    pub fn max_clients(&self) -> Option<usize> {
        self.clients.as_ref().map(Clients::max)
    }

    /// The policy for a full registry of clients, if capped.
    pub fn overflow(&self) -> Option<Overflow> {
        self.clients.as_ref().map(Clients::overflow)
    }

    /// The key `client` is kept under: `{prefix}client` if capped, else
    /// `prefixclient` (the layout of [`reserve_for`](Self::reserve_for)).
    pub fn client_key(&self, client: &str) -> String {
        match &self.clients {
            Some(c) => format!("{}{client}", c.tagged),
            None => format!("{}{client}", self.key),
        }
    }

    /// The registry of live clients, if capped.
    pub fn client_registry(&self) -> Option<&str> {
        self.clients.as_ref().map(|c| c.registry.as_str())
    }

    /// The capped `reserve_for`: one round trip that keeps the registry
    /// and decides.
    pub(super) async fn reserve_capped(
        &self,
        clients: &Clients,
        client: &str,
        permits: u32,
        max_wait: Option<Duration>,
    ) -> Decision {
        let args = match self.args(permits, max_wait) {
            Ok(args) => args,
            Err(e) => return self.refusal(e),
        };
        let policy = match clients.overflow {
            Overflow::Shared => 1,
            Overflow::EvictLeastDebt => 2,
            _ => 0,
        };
        let mut argv = [0; ARGS + 2];
        argv[..ARGS].copy_from_slice(&args);
        argv[ARGS] = clients.max as i64;
        argv[ARGS + 1] = policy;
        let lua = match self.script {
            Script::Pacer { .. } => Lua::CappedPacer,
            Script::Refill { .. } => Lua::CappedRefill,
        };
        let key = format!("{}{client}", clients.tagged);
        let keys = [key.as_str(), &clients.registry, &clients.overflow_key];
        let reply = match self.backend.eval_keys(lua, &keys, &argv).await {
            Ok(reply) => reply,
            Err(e) => return self.on_failure(e, permits, max_wait),
        };
        let Some(admission) = Admission::from_reply(reply[REPLY]) else {
            let e = RedisError::BadReply(format!("an admission of {}", reply[REPLY]));
            return self.on_failure(e, permits, max_wait);
        };
        clients.count(admission, &reply[REPLY..]);
        let mut decision = if admission == Admission::DeniedNew {
            let retry = u64::try_from(reply[REPLY + 4]).unwrap_or(0);
            self.refusal(would_wait(retry, max_wait))
        } else {
            self.translate(&reply[..REPLY], permits, max_wait)
        };
        decision.admission = Some(admission);
        decision
    }

    /// The server's refusal `e`, decided here (nothing to ask it).
    fn refusal(&self, e: AcquireError) -> Decision {
        Decision {
            result: Err(e),
            source: Source::Redis,
            error: None,
            admission: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratekeeper::keyed::MAX_KEYS;

    #[test]
    fn prefixes_get_one_hash_tag() {
        assert_eq!(tagged("api:per-ip:").as_deref(), Some("{api:per-ip:}"));
        // A tag of the user's own is kept: they chose the slot.
        assert_eq!(tagged("api:{ip}:").as_deref(), Some("api:{ip}:"));
        // No closing brace, or an empty tag: wrapped.
        assert_eq!(tagged("a{b:").as_deref(), Some("{a{b:}"));
        assert_eq!(tagged("a{}b").as_deref(), Some("{a{}b}"));
        // Wrapped, the tag would be empty: refused.
        assert_eq!(tagged("}x"), None);
        assert!(Clients::new("}x", Some(5), Overflow::DenyNew).is_err());
    }

    #[test]
    fn caps_are_checked() {
        let kind = |max| {
            Clients::new("p:", Some(max), Overflow::DenyNew)
                .err()
                .map(|e| e.kind())
        };
        assert_eq!(kind(0), Some(ConfigErrorKind::MaxKeys));
        assert_eq!(kind(MAX_KEYS + 1), Some(ConfigErrorKind::MaxKeys));
        assert_eq!(kind(1), None);
        assert_eq!(kind(MAX_KEYS), None);
        assert!(Clients::new("p:", None, Overflow::Shared)
            .unwrap()
            .is_none());
    }

    #[test]
    fn client_keys_share_the_registrys_slot_and_never_name_it() {
        for prefix in ["api:", "a{b}c", "x{", "{"] {
            let c = Clients::new(prefix, Some(1), Overflow::DenyNew)
                .unwrap()
                .unwrap();
            let slot_tag = |s: &str| {
                let open = s.find('{').unwrap();
                let len = s[open + 1..].find('}').unwrap();
                s[open + 1..open + 1 + len].to_owned()
            };
            let tag = slot_tag(&c.tagged);
            assert!(!tag.is_empty());
            for client in ["", "1.2.3.4", "}{", &c.registry, "rk:clients:"] {
                let key = format!("{}{client}", c.tagged);
                assert_eq!(slot_tag(&key), tag, "{key}");
                assert_ne!(key, c.registry);
                assert_ne!(key, c.overflow_key);
            }
            assert_eq!(slot_tag(&c.registry), tag);
            assert_eq!(slot_tag(&c.overflow_key), tag);
        }
    }
}
