//! `simulate --client NAME=PATTERN`: several clients, each with its own
//! arrival pattern, merged into one time-ordered list of arrivals; with
//! `--keyed`, each `--limiter` runs once per client through
//! [`Keyed`](ratekeeper::keyed::Keyed). What each client's ops add up to
//! and the keyed map's metrics are part of the report.

use clap::ValueEnum;
use ratekeeper::keyed::{KeyedMetrics, Overflow, MAX_KEYS};
use serde::Serialize;

use super::arrivals::{Arrivals, MAX_ARRIVALS};
use super::model::Op;
use super::summary::exact_summary;
use crate::error::UsageError;
use crate::report::{per_second, WaitSummary};

/// One `--client NAME=PATTERN`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSpec {
    pub(super) name: String,
    pub(super) arrivals: Arrivals,
}

/// `--client NAME=PATTERN`: a name (no `=`, not empty) and a pattern in the
/// `--arrivals` grammar.
pub(super) fn parse_client(s: &str) -> Result<ClientSpec, String> {
    let Some((name, pattern)) = s.split_once('=') else {
        return Err("expected NAME=PATTERN, e.g. 'a=every 50ms for 2s'".to_owned());
    };
    let name = name.trim();
    if name.is_empty() {
        return Err("the client's name is empty; expected NAME=PATTERN".to_owned());
    }
    let arrivals = pattern
        .parse()
        .map_err(|e: super::arrivals::ArrivalsError| format!("client {name}: {e}"))?;
    Ok(ClientSpec {
        name: name.to_owned(),
        arrivals,
    })
}

/// `--max-keys N`: 1 to [`MAX_KEYS`].
pub(super) fn parse_max_keys(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_KEYS).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected the most clients tracked at once, a whole number from 1 to {MAX_KEYS}"
        )),
    }
}

/// `--overflow`: what a full keyed map does with a new client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OverflowArg {
    /// Refuse the new client's ops while every tracked client holds debt.
    Deny,
    /// Untracked clients share one limiter of the same configuration.
    Shared,
    /// Drop the tracked client with the least debt (forgiven) for the new one.
    Evict,
}

impl OverflowArg {
    pub(super) fn policy(self) -> Overflow {
        match self {
            OverflowArg::Deny => Overflow::DenyNew,
            OverflowArg::Shared => Overflow::Shared,
            OverflowArg::Evict => Overflow::EvictLeastDebt,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            OverflowArg::Deny => "deny",
            OverflowArg::Shared => "shared",
            OverflowArg::Evict => "evict",
        }
    }
}

/// The keyed map's settings (`--keyed`, `--max-keys`, `--overflow`); JSON:
/// the top-level `keyed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(super) struct KeyedSpec {
    pub(super) max_keys: usize,
    pub(super) overflow: &'static str,
    #[serde(skip)]
    pub(super) policy: Overflow,
}

/// What the simulation runs: the arrival times in order, and with
/// `--client` the client of each.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Workload {
    /// `--arrivals`, canonical; `None` with `--client`.
    pub(super) pattern: Option<String>,
    pub(super) times: Vec<u64>,
    pub(super) end_ns: u64,
    /// With `--client`: each arrival's client, an index into the clients;
    /// empty without.
    pub(super) owner: Vec<usize>,
}

impl Workload {
    /// The arrivals of one pattern, no clients.
    pub(super) fn single(arrivals: &Arrivals) -> Workload {
        Workload {
            pattern: Some(arrivals.to_string()),
            times: arrivals.times().to_vec(),
            end_ns: arrivals.end_ns(),
            owner: Vec::new(),
        }
    }

    /// The clients' arrivals merged in time order (at one instant, in the
    /// order the clients were given).
    ///
    /// # Errors
    ///
    /// A [`UsageError`] for a name given twice, or more than
    /// [`MAX_ARRIVALS`] arrivals in all.
    pub(super) fn merge(clients: &[ClientSpec]) -> Result<Workload, UsageError> {
        for (i, c) in clients.iter().enumerate() {
            if clients[..i].iter().any(|d| d.name == c.name) {
                return Err(UsageError(format!(
                    "--client {}={}: the client {} is given twice; give each --client its own \
                     name",
                    c.name, c.arrivals, c.name
                )));
            }
        }
        let total: u64 = clients
            .iter()
            .map(|c| c.arrivals.times().len() as u64)
            .sum();
        if total > MAX_ARRIVALS {
            return Err(UsageError(format!(
                "the --client patterns give {total} arrivals in all; at most {MAX_ARRIVALS}"
            )));
        }
        let mut tagged: Vec<(u64, usize)> = clients
            .iter()
            .enumerate()
            .flat_map(|(i, c)| c.arrivals.times().iter().map(move |&t| (t, i)))
            .collect();
        // Stable: at one instant, the clients in the order given.
        tagged.sort_by_key(|&(t, _)| t);
        Ok(Workload {
            pattern: None,
            times: tagged.iter().map(|&(t, _)| t).collect(),
            end_ns: clients
                .iter()
                .map(|c| c.arrivals.end_ns())
                .max()
                .unwrap_or(0),
            owner: tagged.iter().map(|&(_, i)| i).collect(),
        })
    }
}

/// One client in the report's top level (JSON: an element of `clients`).
#[derive(Debug, Clone, Serialize)]
pub(super) struct ClientInfo {
    pub(super) client: String,
    pub(super) pattern: String,
    pub(super) arrivals: u64,
}

impl ClientInfo {
    pub(super) fn of(c: &ClientSpec) -> ClientInfo {
        ClientInfo {
            client: c.name.clone(),
            pattern: c.arrivals.to_string(),
            arrivals: c.arrivals.times().len() as u64,
        }
    }
}

/// One client's ops through one limiter (JSON: an element of a limiter's
/// `clients`).
#[derive(Debug, Clone, Serialize)]
pub(super) struct ClientReport {
    pub(super) client: String,
    pub(super) arrivals: u64,
    pub(super) ops: u64,
    pub(super) refused: u64,
    pub(super) first_grant_ns: Option<u64>,
    pub(super) last_grant_ns: Option<u64>,
    pub(super) achieved_rate: f64,
    pub(super) wait_ns: WaitSummary,
}

/// Each client's share of `ops` (in the order of `owner`), its achieved
/// rate counting one interval of `interval_ns` past its last grant.
pub(super) fn client_reports(
    clients: &[ClientSpec],
    owner: &[usize],
    ops: &[Op],
    interval_ns: f64,
) -> Vec<ClientReport> {
    clients
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mine = || ops.iter().zip(owner).filter(move |(_, &o)| o == i);
            let granted: Vec<u64> = mine().filter_map(|(op, _)| op.grant.map(|g| g.1)).collect();
            let mut waits: Vec<u64> = mine()
                .filter_map(|(op, _)| op.grant.map(|(_, g)| g - op.arrival))
                .collect();
            let (first, last) = (granted.iter().min().copied(), granted.iter().max().copied());
            let elapsed = match (first, last) {
                (Some(f), Some(l)) => (l - f).saturating_add(interval_ns.round() as u64),
                _ => 0,
            };
            let arrivals = mine().count() as u64;
            ClientReport {
                client: c.name.clone(),
                arrivals,
                ops: granted.len() as u64,
                refused: arrivals - granted.len() as u64,
                first_grant_ns: first,
                last_grant_ns: last,
                achieved_rate: per_second(granted.len() as u64, elapsed),
                wait_ns: exact_summary(&mut waits),
            }
        })
        .collect()
}

/// A keyed map's metrics after a run (JSON: a limiter's `keyed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(super) struct KeyedReport {
    pub(super) live_keys: u64,
    pub(super) max_keys: u64,
    pub(super) evicted_fresh: u64,
    pub(super) evicted_credit: u64,
    pub(super) evicted_debt: u64,
    pub(super) denied_new: u64,
    pub(super) overflowed: u64,
}

impl From<KeyedMetrics> for KeyedReport {
    fn from(m: KeyedMetrics) -> Self {
        KeyedReport {
            live_keys: m.live_keys,
            max_keys: m.max_keys,
            evicted_fresh: m.evicted_fresh,
            evicted_credit: m.evicted_credit,
            evicted_debt: m.evicted_debt,
            denied_new: m.denied_new,
            overflowed: m.overflowed,
        }
    }
}
