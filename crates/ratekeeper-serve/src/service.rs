//! [`Service`]: the limits in force, shared by every protocol's handlers,
//! swapped whole on a reload.

use std::sync::{Arc, PoisonError, RwLock};

use crate::check::{CheckError, CheckRequest, CheckResponse};
use crate::config::Config;
use crate::limits::{Limits, LimitsError};
use crate::metrics::Metrics;

/// The limits in force and what every handler does with a request: decide,
/// then hold an admitted request whose limit allows a wait until it is due.
///
/// Cloning is cheap and shares the limits.
///
/// ```
/// use ratekeeper_serve::config::Config;
/// use ratekeeper_serve::{CheckRequest, Code, Descriptor, Limits, Service};
///
/// # tokio_test_block_on(async {
/// let domain = Config::from_yaml(
///     "domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: second, requests_per_unit: 1}\n",
///     "api.yaml",
/// )?;
/// let service = Service::new(Limits::new(&Config { domains: vec![domain] })?);
/// let ask = CheckRequest::new("api", vec![Descriptor::new([("user", "alice")])]);
/// assert_eq!(service.check(&ask).await?.overall_code, Code::Ok);
/// assert_eq!(service.check(&ask).await?.overall_code, Code::OverLimit);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(f)
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Service {
    limits: Arc<RwLock<Arc<Limits>>>,
    metrics: Arc<Metrics>,
}

impl Service {
    /// A service deciding on `limits`.
    pub fn new(limits: Limits) -> Service {
        Service {
            limits: Arc::new(RwLock::new(Arc::new(limits))),
            metrics: Arc::new(Metrics::new()),
        }
    }

    /// The limits in force now.
    pub fn limits(&self) -> Arc<Limits> {
        // A poisoned lock still holds a whole `Arc`: nothing is half written.
        Arc::clone(&self.limits.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Decides `request` on the limits in force, then waits out an
    /// admission's hold (see [`CheckResponse::wait`]).
    ///
    /// # Errors
    ///
    /// As [`Limits::check_async`].
    pub async fn check(&self, request: &CheckRequest) -> Result<CheckResponse, CheckError> {
        let response = self.decide(request).await?;
        if !response.wait.is_zero() {
            tokio::time::sleep(response.wait).await;
        }
        Ok(response)
    }

    /// Decides `request` on the limits in force and counts the result,
    /// without holding: an admission's [`wait`](CheckResponse::wait) is
    /// the caller's to wait out.
    ///
    /// # Errors
    ///
    /// As [`Limits::check_async`].
    pub async fn decide(&self, request: &CheckRequest) -> Result<CheckResponse, CheckError> {
        let limits = self.limits();
        match limits.check_async(request).await {
            Ok(response) => {
                self.metrics.decided(&request.domain, &response);
                Ok(response)
            }
            Err(e) => {
                tracing::debug!(domain = %request.domain, error = %e, "request refused");
                self.metrics.refused(&e);
                Err(e)
            }
        }
    }

    /// The metrics in Prometheus' text format: decisions by domain,
    /// descriptor (the limit's id) and result; refused requests by reason;
    /// reloads by result; live keys.
    pub fn metrics_text(&self) -> String {
        self.metrics.encode(self.limits().live_keys())
    }

    /// Counts a reload that failed before it reached
    /// [`reload`](Self::reload) (a config file that could not be read).
    pub fn reload_failed(&self) {
        self.metrics.reloaded(false);
    }

    /// Puts `config` in force, keeping the state of every unchanged limit
    /// (see [`Limits::reload`]); on an error the limits in force stay.
    ///
    /// # Errors
    ///
    /// As [`Limits::reload`].
    pub fn reload(&self, config: &Config) -> Result<(), LimitsError> {
        // Built outside the lock, under which only the pointer is swapped;
        // two reloads at once may both build, and the later swap wins.
        let next = match self.limits().reload(config) {
            Ok(limits) => Arc::new(limits),
            Err(e) => {
                self.metrics.reloaded(false);
                return Err(e);
            }
        };
        *self.limits.write().unwrap_or_else(PoisonError::into_inner) = next;
        self.metrics.reloaded(true);
        Ok(())
    }
}
