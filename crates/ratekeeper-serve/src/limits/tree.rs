//! A domain's descriptor tree and envoyproxy/ratelimit's matching.

use std::sync::Arc;

use ratekeeper::Clock;

use super::decide::Limit;
use crate::check::Descriptor;

/// The tree's maps: a request's keys and values are looked up on every
/// check, on the keyed store's fast seeded hash rather than std's SipHash.
/// Only the config inserts, so a caller's strings cannot crowd a map.
pub(super) type HashMap<K, V> = std::collections::HashMap<K, V, ratekeeper::keyed::KeyHasher>;

/// One level of a descriptor tree.
pub(super) struct Nodes<C> {
    /// By key, then value.
    pub(super) exact: HashMap<String, HashMap<String, Node<C>>>,
    /// Values ending in `*`: (key, prefix), in the config's order.
    pub(super) prefixes: Vec<((String, String), Node<C>)>,
    pub(super) by_key: HashMap<String, Node<C>>,
}

pub(super) struct Node<C> {
    pub(super) limit: Option<Arc<Limit<C>>>,
    pub(super) children: Nodes<C>,
}

impl<C> Default for Nodes<C> {
    fn default() -> Self {
        Nodes {
            exact: HashMap::default(),
            prefixes: Vec::new(),
            by_key: HashMap::default(),
        }
    }
}

impl<C: Clock> Nodes<C> {
    /// The node configured with exactly this key and value (`None`: key
    /// only; a value ending in `*`: that prefix).
    pub(super) fn get_exact(&self, key: &str, value: Option<&str>) -> Option<&Node<C>> {
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
    pub(super) fn find(&self, d: &Descriptor) -> Option<&Limit<C>> {
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

    pub(super) fn live_keys(&self) -> u64 {
        let nodes = self
            .exact
            .values()
            .flat_map(HashMap::values)
            .chain(self.by_key.values())
            .chain(self.prefixes.iter().map(|(_, n)| n));
        nodes
            .map(|n| {
                let own = n.limit.as_ref().map_or(0, |l| l.live_keys());
                own + n.children.live_keys()
            })
            .sum()
    }
}
