//! The blocking facade: a [`RedisLimiter`] as a [`RateLimiter`], for
//! threads that are not async (the CLI, batching, `acquire()` loops).

use std::sync::Arc;
use std::time::Duration;

use ratekeeper::{AcquireError, Clock, Grant, RateLimiter, WaitPolicy, WaitStats};
use tokio::sync::watch;

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
            closed: Arc::new(watch::Sender::new(false)),
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
///
/// [`close`](Self::close) ends the decisions in flight at once and refuses
/// every later one, for a caller that must stop whatever the server is
/// doing (a signal, a run's end).
#[derive(Debug, Clone)]
pub struct BlockingLimiter {
    runtime: Arc<tokio::runtime::Runtime>,
    limiter: Arc<RedisLimiter>,
    /// Set once by [`close`](Self::close); shared by the clones.
    closed: Arc<watch::Sender<bool>>,
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

    /// [`RedisLimiter::reserve`], blocking: the whole decision, or the
    /// refusal of a [closed](Self::close) limiter.
    pub fn decide(&self, permits: u32, max_wait: Option<Duration>) -> Decision {
        if self.is_closed() {
            return closed();
        }
        let limiter = Arc::clone(&self.limiter);
        let mut close = self.closed.subscribe();
        let decision = async move {
            tokio::select! {
                biased;
                // The sender lives as long as this limiter: an error (it
                // was dropped) leaves the decision to run its course.
                Ok(_) = close.wait_for(|closed| *closed) => closed(),
                d = limiter.reserve(permits, max_wait) => d,
            }
        };
        if tokio::runtime::Handle::try_current().is_err() {
            // Not on a runtime's thread: run the request here, on the
            // backend's runtime (its worker drives the connection).
            return self.runtime.block_on(decision);
        }
        // On a runtime's thread, where block_on would panic: the request
        // runs on the backend's runtime, and this thread waits for it.
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.runtime.spawn(async move {
            let _ = tx.send(decision.await);
        });
        // An error: the runtime is shutting down, no answer will come.
        rx.recv().unwrap_or_else(|_| closed())
    }

    /// Ends every decision in flight on this limiter and its clones, and
    /// refuses every later one: each is [`AcquireError::Unavailable`] at
    /// once (its source [`FailClosed`](crate::Source::FailClosed), with no
    /// [`backend_error`](Decision::backend_error)), whatever the server is
    /// doing and whatever the failure policy. Such a refusal is not a
    /// decision: [`stats`](Self::stats) does not count it. There is no
    /// reopening; build another limiter.
    ///
    /// It is for a caller that must stop now (a signal, a run's end) while
    /// a thread may be blocked in [`decide`](Self::decide) for up to the
    /// backend's deadline (a stalled server). A request already sent may
    /// still be decided on the server after it was ended here: its permits
    /// are then spent unused (the limit errs toward admitting less, never
    /// more). A thread already granted and sleeping to its grant's ready
    /// time ([`RateLimiter::acquire`]) is not woken: stop such waits with
    /// [`RateLimiter::wait_for_or_stop`].
    ///
    /// ```no_run
    /// use ratekeeper::{AcquireError, Rate, RateLimiter};
    /// use ratekeeper_redis::{Backend, BlockingBackend, RedisLimiter, SharedLimit};
    ///
    /// let blocking = BlockingBackend::connect(Backend::builder("redis://127.0.0.1:6379/"))?;
    /// let limit = SharedLimit::pacer(Rate::new(100.0)?, 1.0)?;
    /// let limiter = blocking.limiter(RedisLimiter::builder(blocking.backend(), "jobs", limit).build()?);
    /// let worker = {
    ///     let limiter = limiter.clone();
    ///     std::thread::spawn(move || {
    ///         // Until the limiter is closed, however long the server takes.
    ///         while limiter.reserve(1, None).is_ok() {}
    ///     })
    /// };
    /// std::thread::sleep(std::time::Duration::from_secs(1));
    /// limiter.close();
    /// worker.join().unwrap();
    /// assert!(limiter.is_closed());
    /// assert_eq!(limiter.reserve(1, None), Err(AcquireError::Unavailable));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn close(&self) {
        self.closed.send_replace(true);
    }

    /// Whether [`close`](Self::close) was called, on this limiter or a
    /// clone.
    pub fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }
}

/// The refusal of a closed limiter (or of a runtime shutting down).
fn closed() -> Decision {
    Decision {
        result: Err(AcquireError::Unavailable),
        source: crate::Source::FailClosed,
        error: None,
        admission: None,
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

#[cfg(test)]
mod tests {
    use std::process::{Child, Command, Stdio};
    use std::time::Instant;

    use ratekeeper::Rate;

    use super::*;
    use crate::{Backend, SharedLimit, Source};

    /// Reports the running test as skipped past the harness's capture (it
    /// takes only `print!`/`eprint!`), so `cargo test` shows it beside the
    /// "ok", and in `RATEKEEPER_SKIP_LOG` where scripts/test-all.sh sets it.
    fn skipped(why: &str) {
        use std::io::Write;
        let thread = std::thread::current();
        let line = format!(
            "skipped: ratekeeper-redis --lib {}: {why}\n",
            thread.name().unwrap_or("?")
        );
        let _ = std::io::stderr().write_all(line.as_bytes());
        if let Some(path) = std::env::var_os("RATEKEEPER_SKIP_LOG") {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path);
            let _ = file.and_then(|mut f| f.write_all(line.as_bytes()));
        }
    }

    /// A redis-server of this test's own (it is stopped with SIGSTOP),
    /// resumed and killed when dropped.
    struct Server {
        port: u16,
        child: Child,
    }

    impl Server {
        /// `None` where redis-server is not installed (skipped; a failure
        /// under CI).
        fn start() -> Option<Server> {
            if Command::new("redis-server")
                .arg("--version")
                .output()
                .is_err()
            {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "redis-server is not installed under CI"
                );
                skipped("redis-server is not installed");
                return None;
            }
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start redis-server");
            let server = Server { port, child };
            let t = Instant::now();
            while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
                assert!(t.elapsed() < Duration::from_secs(10), "no redis-server");
                std::thread::sleep(Duration::from_millis(20));
            }
            Some(server)
        }

        fn signal(&self, signal: &str) {
            let ok = Command::new("kill")
                .args([&format!("-{signal}"), &self.child.id().to_string()])
                .status()
                .unwrap();
            assert!(ok.success());
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = Command::new("kill")
                .args(["-CONT", &self.child.id().to_string()])
                .status();
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// A blocking limiter on `server` whose decisions may take 30 s.
    fn limiter(server: &Server) -> BlockingLimiter {
        let url = format!("redis://127.0.0.1:{}/", server.port);
        let builder = Backend::builder(url.as_str()).deadline(Duration::from_secs(30));
        let blocking = BlockingBackend::connect(builder).expect("connect");
        let limit = SharedLimit::pacer(Rate::new(1000.0).unwrap(), 1.0).unwrap();
        let limiter = RedisLimiter::builder(blocking.backend(), "rk-blocking-close", limit)
            .build()
            .unwrap();
        blocking.limiter(limiter)
    }

    #[test]
    fn close_ends_a_stalled_decision_at_once_and_refuses_later_ones() {
        let Some(server) = Server::start() else {
            return;
        };
        let limiter = limiter(&server);
        assert!(limiter.decide(1, None).is_granted());
        assert_eq!(limiter.stats().total(), 1);
        server.signal("STOP");
        let (stalled, on_runtime) = (limiter.clone(), limiter.clone());
        let t = Instant::now();
        let plain = std::thread::spawn(move || stalled.decide(1, None));
        // From a runtime's thread too (the path that cannot block_on).
        let nested = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            rt.block_on(async { on_runtime.decide(1, None) })
        });
        std::thread::sleep(Duration::from_millis(300));
        assert!(!plain.is_finished() && !nested.is_finished(), "stalled");
        let closer = limiter.clone();
        closer.close();
        for d in [plain.join().unwrap(), nested.join().unwrap()] {
            assert_eq!(d.result(), Err(AcquireError::Unavailable));
            assert_eq!(d.source(), Source::FailClosed);
            assert!(d.backend_error().is_none());
        }
        // At once, not at the 30 s deadline.
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        assert!(limiter.is_closed() && closer.is_closed());
        // Later decisions are refused without asking, and nothing counts.
        server.signal("CONT");
        let t = Instant::now();
        assert_eq!(limiter.reserve(1, None), Err(AcquireError::Unavailable));
        assert!(t.elapsed() < Duration::from_secs(1));
        assert_eq!(limiter.stats().total(), 1, "{:?}", limiter.stats());
    }

    #[test]
    fn an_open_limiter_decides_as_before() {
        let Some(server) = Server::start() else {
            return;
        };
        let limiter = limiter(&server);
        assert!(!limiter.is_closed());
        for _ in 0..3 {
            let d = limiter.decide(1, None);
            assert!(d.is_granted(), "{d:?}");
            assert_eq!(d.source(), Source::Redis);
        }
        assert_eq!(limiter.stats().from(Source::Redis), 3);
    }
}
