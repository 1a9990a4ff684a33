//! The blocking facade: a [`RedisLimiter`] as a [`RateLimiter`], for
//! threads that are not async (the CLI, batching, `acquire()` loops).

use std::sync::Arc;
use std::time::Duration;

use ratekeeper::{AcquireError, Clock, Grant, RateLimiter, WaitPolicy, WaitStats};

use crate::backend::{Backend, BackendBuilder};
use crate::error::RedisError;
use crate::limiter::{DecisionStats, RedisLimiter};
use crate::Decision;

/// A [`Backend`] with a runtime of its own (one worker thread) that drives
/// its connection, for blocking callers.
///
/// ```no_run
/// use ratekeeper::{Rate, RateLimiter};
/// use ratekeeper_redis::{Backend, BlockingBackend, RedisLimiter, SharedLimit};
///
/// let blocking = BlockingBackend::connect(Backend::builder("redis://127.0.0.1:6379/"))?;
/// let limit = SharedLimit::pacer(Rate::new(100.0)?, 1.0)?;
/// let limiter = blocking.limiter(RedisLimiter::builder(blocking.backend(), "jobs", limit).build()?);
/// let grant = limiter.acquire(); // blocks until the shared schedule's slot
/// assert!(grant.ready_nanos() >= grant.scheduled_nanos());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct BlockingBackend {
    runtime: Arc<tokio::runtime::Runtime>,
    backend: Backend,
}

impl BlockingBackend {
    /// Starts the runtime and connects `builder`'s backend on it.
    ///
    /// # Errors
    ///
    /// As [`BackendBuilder::connect`]; [`RedisError::Redis`] (an I/O
    /// error) if the runtime's thread cannot start.
    pub fn connect(builder: BackendBuilder) -> Result<BlockingBackend, RedisError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("ratekeeper-redis")
            .enable_all()
            .build()
            .map_err(|e| RedisError::Redis(e.into()))?;
        let backend = runtime.block_on(builder.connect())?;
        Ok(BlockingBackend {
            runtime: Arc::new(runtime),
            backend,
        })
    }

    /// The backend, to build limiters on.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// `limiter` as a blocking [`RateLimiter`] driven by this runtime.
    pub fn limiter(&self, limiter: RedisLimiter) -> BlockingLimiter {
        BlockingLimiter {
            runtime: Arc::clone(&self.runtime),
            limiter: Arc::new(limiter),
        }
    }
}

/// A [`RedisLimiter`] as a [`RateLimiter`]: `reserve` sends the request on
/// the backend's runtime and blocks the calling thread for the answer (at
/// most the backend's deadline, then the failure policy decides); the
/// waits are the library's own (`acquire` sleeps to the grant's ready
/// time on the local clock, never returning before it). A refusal by the [`Closed`](crate::FailurePolicy::Closed)
/// policy is [`AcquireError::Unavailable`].
///
/// It blocks: call it from threads, not from async tasks (which use
/// [`RedisLimiter`] itself). From inside an async runtime it still works,
/// but holds that runtime's thread for a round trip.
///
/// The core's [`BatchHandle`](ratekeeper::BatchHandle) batches over it as
/// over any limiter (one reservation per lease of permits); give it a
/// `max_lease` of a few round trips
/// ([`with_max_lease`](ratekeeper::BatchHandle::with_max_lease), e.g.
/// 5 ms), since a lease covers the handle's rate over that time.
#[derive(Debug, Clone)]
pub struct BlockingLimiter {
    runtime: Arc<tokio::runtime::Runtime>,
    limiter: Arc<RedisLimiter>,
}

impl BlockingLimiter {
    /// The limiter (its key, limit, statistics).
    pub fn limiter(&self) -> &RedisLimiter {
        &self.limiter
    }

    /// Decisions so far, by source.
    pub fn stats(&self) -> DecisionStats {
        self.limiter.stats()
    }

    /// [`RedisLimiter::reserve`], blocking: the whole decision.
    pub fn decide(&self, permits: u32, max_wait: Option<Duration>) -> Decision {
        if tokio::runtime::Handle::try_current().is_err() {
            // Not on a runtime's thread: run the request here, on the
            // backend's runtime (its worker drives the connection).
            return self
                .runtime
                .block_on(self.limiter.reserve(permits, max_wait));
        }
        // On a runtime's thread, where block_on would panic: the request
        // runs on the backend's runtime, and this thread waits for it.
        let limiter = Arc::clone(&self.limiter);
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.runtime.spawn(async move {
            let _ = tx.send(limiter.reserve(permits, max_wait).await);
        });
        rx.recv().unwrap_or_else(|_| Decision {
            // The runtime is shutting down: no answer will come.
            result: Err(AcquireError::Unavailable),
            source: crate::Source::FailClosed,
            error: None,
            admission: None,
        })
    }
}

impl RateLimiter for BlockingLimiter {
    fn reserve(&self, permits: u32, max_wait: Option<Duration>) -> Result<Grant, AcquireError> {
        self.decide(permits, max_wait).into_result()
    }

    fn clock(&self) -> &dyn Clock {
        self.limiter.clock()
    }

    /// Sleep for every wait, never going early: the default policy's early
    /// bound would let an op go before the server allowed it (other
    /// processes share the limit, so no early release is "made up" here).
    fn wait_policy(&self) -> WaitPolicy {
        WaitPolicy::coalesce(Duration::ZERO)
    }

    /// The backlog the server's schedule had at the last answer (the
    /// Pacer; zero for the bucket). The total is not known to one process:
    /// it is the backlog too.
    fn wait_stats(&self) -> WaitStats {
        let backlog = u64::try_from(-self.limiter.last_backlog().min(0)).unwrap_or(0);
        WaitStats {
            backlog_nanos: backlog,
            total_wait_nanos: backlog,
        }
    }
}
