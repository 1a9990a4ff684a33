//! The service's Prometheus metrics: decisions by domain, limit and result;
//! refused requests by reason; reloads by outcome; live keys.

use std::fmt;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::check::{CheckError, CheckResponse, Code, DescriptorStatus};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabels {
    domain: String,
    descriptor: String,
    result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DomainLabels {
    domain: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    reason: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReloadLabels {
    result: &'static str,
}

/// The counters; cheap to update from every handler.
pub(crate) struct Metrics {
    registry: Registry,
    decisions: Family<DecisionLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    reloads: Family<ReloadLabels, Counter>,
    store_errors: Family<DomainLabels, Counter>,
    live_keys: Gauge,
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    pub(crate) fn new() -> Metrics {
        let mut registry = Registry::with_prefix("ratekeeper");
        let decisions = Family::<DecisionLabels, Counter>::default();
        registry.register(
            "decisions",
            "Descriptors decided, by domain, limit (descriptor) and result",
            decisions.clone(),
        );
        let errors = Family::<ErrorLabels, Counter>::default();
        registry.register(
            "request_errors",
            "Requests refused as malformed or naming an unknown domain, by reason",
            errors.clone(),
        );
        let reloads = Family::<ReloadLabels, Counter>::default();
        registry.register(
            "reloads",
            "Config reloads, by result (ok, or error: the old config stays)",
            reloads.clone(),
        );
        let store_errors = Family::<DomainLabels, Counter>::default();
        registry.register(
            "store_errors",
            "Descriptors decided by their failure policy because Redis failed, by domain",
            store_errors.clone(),
        );
        let live_keys = Gauge::default();
        registry.register(
            "live_keys",
            "Keys tracked in this process by every counted limit (none for limits on Redis)",
            live_keys.clone(),
        );
        Metrics {
            registry,
            decisions,
            errors,
            reloads,
            store_errors,
            live_keys,
        }
    }

    /// Counts each descriptor's result.
    pub(crate) fn decided(&self, domain: &str, response: &CheckResponse) {
        for status in &response.statuses {
            let labels = DecisionLabels {
                domain: domain.to_owned(),
                descriptor: status.limit_id().unwrap_or("").to_owned(),
                result: result(status),
            };
            self.decisions.get_or_create(&labels).inc();
            if status.store_error {
                let domain = domain.to_owned();
                self.store_errors
                    .get_or_create(&DomainLabels { domain })
                    .inc();
            }
        }
    }

    pub(crate) fn refused(&self, error: &CheckError) {
        let reason = match error {
            CheckError::UnknownDomain(_) => "unknown_domain",
            _ => "invalid_argument",
        };
        self.errors.get_or_create(&ErrorLabels { reason }).inc();
    }

    pub(crate) fn reloaded(&self, ok: bool) {
        let result = if ok { "ok" } else { "error" };
        self.reloads.get_or_create(&ReloadLabels { result }).inc();
    }

    /// The text exposition, with the live keys read now.
    pub(crate) fn encode(&self, live_keys: u64) -> String {
        self.live_keys
            .set(i64::try_from(live_keys).unwrap_or(i64::MAX));
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

fn result(status: &DescriptorStatus) -> &'static str {
    match (status.code, status.limit_id().is_some()) {
        (Code::OverLimit, _) => "over_limit",
        (Code::Ok, _) if status.shadow_over_limit => "shadow_over_limit",
        (Code::Ok, true) => "ok",
        (Code::Ok, false) if status.limit.is_none() && status.limit_remaining == u32::MAX => {
            "unlimited"
        }
        (Code::Ok, false) => "no_limit",
    }
}
