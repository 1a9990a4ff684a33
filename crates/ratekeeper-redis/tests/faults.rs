//! Fault injection under load, each case on a redis-server of its own.
//!
//! Every case runs the same load for [`SPAN`] on the real clock: [`TASKS`]
//! tasks reserve one permit at a time from one limiter at 200/s and sleep
//! to the grant's ready time (what `acquire` does), while this thread
//! applies one fault at [`APPLY_AT`] and clears it at [`CLEAR_AT`]:
//!
//! * `kill`: the server is killed (SIGKILL), then started again (empty:
//!   no key, no scripts);
//! * `pause`: the server is stopped (SIGSTOP), then continued (SIGCONT);
//! * `client-kill`: `CLIENT KILL TYPE normal`, four times 200 ms apart;
//! * `oom`: `CONFIG SET maxmemory 1` under `noeviction` (every write fails
//!   with OOM), then `maxmemory 0`;
//! * `wrong-type`: the key set to a string (`SET key hello`), mid-run or
//!   before the run (`wrong-type-before`), then deleted;
//! * `script-flush`: `SCRIPT FLUSH`, twice 300 ms apart;
//! * `mismatch`: the key deleted and taken by another limiter (another
//!   connection, as another process would) at half the rate, neither
//!   adopting the other's limit, then deleted.
//!
//! Each case asserts its policy's bound on what it admits (see [`bound`]),
//! that the run ends on time and that every decision comes back within
//! the deadline plus a slack, that the fault took effect, and that the
//! server decides again once it is cleared; a key of another type or
//! limit refuses every request while it stands, under every policy. Each
//! case prints one line of figures (quoted in the docs).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::OwnServer;
use ratekeeper::bucket::RefillConfig;
use ratekeeper::{AcquireError, Clock, Rate};
use ratekeeper_redis::{
    Backend, Decision, FailurePolicy, RedisError, RedisLimiter, SharedLimit, Source,
};

/// How long each case's load runs.
const SPAN: Duration = Duration::from_secs(2);
/// When the fault is applied, from the start of the run.
const APPLY_AT: Duration = Duration::from_millis(500);
/// When it is cleared.
const CLEAR_AT: Duration = Duration::from_millis(1200);
/// Tasks calling the limiter at once.
const TASKS: u64 = 4;
/// The shared limit's rate, permits a second.
const RATE: f64 = 200.0;
/// The bucket's capacity and initial permits: its burst.
const CAPACITY: u32 = 20;
/// The backends' per-decision deadline.
const DEADLINE: Duration = Duration::from_millis(50);
/// The deadline of the client-kill cases: room for a reconnect.
const RECONNECT_DEADLINE: Duration = Duration::from_millis(200);
/// The circuit breaker's cool-down (3 failures in a row open it).
const COOLDOWN: Duration = Duration::from_millis(200);
/// What a decision may take beyond the deadline: scheduling on a loaded
/// two-core machine that runs other tests (and builds) at the same time.
const DECISION_SLACK: Duration = Duration::from_millis(200);
/// What the run may take beyond the span and one deadline: the last
/// grant's sleep to its ready time (a few slots), and scheduling.
const WALL_SLACK: Duration = Duration::from_millis(300);
/// Permits a run may admit beyond its rate × span and burst (and the
/// fallback's term), from the way the load is counted:
///
/// * each task holds at most one grant ahead of the clock (it sleeps to
///   its ready time before asking again), so up to [`TASKS`] grants made
///   before the end of the span are ready after it;
/// * when the schedule is lost (a killed server, a deleted key) or a local
///   fallback's schedule meets the server's again, the grants already
///   made ahead of the clock (at most one a task) may be made again;
/// * one first slot each for the server's schedule and the fallback's.
const SLACK_PERMITS: u64 = 2 * TASKS + 2;

/// The shared limit a case keeps.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// A strict Pacer at [`RATE`]: one slot at a time, nothing saved up.
    Pacer,
    /// A refill bucket at [`RATE`], holding [`CAPACITY`] at the start, a
    /// request waiting up to a second.
    Bucket,
}

impl Kind {
    fn limit(self) -> SharedLimit {
        match self {
            Kind::Pacer => SharedLimit::pacer(Rate::new(RATE).unwrap(), 1.0).unwrap(),
            Kind::Bucket => SharedLimit::Refill(
                RefillConfig::builder()
                    .limit_for_period(1)
                    .limit_refresh_period(Duration::from_secs_f64(1.0 / RATE))
                    .permit_capacity(u64::from(CAPACITY))
                    .initial_permits(u64::from(CAPACITY))
                    .timeout(Duration::from_secs(1))
                    .build()
                    .unwrap(),
            ),
        }
    }

    /// What the limit admits at once beyond its rate: the strict Pacer's
    /// first slot, the bucket's initial permits.
    fn burst(self) -> u64 {
        match self {
            Kind::Pacer => 1,
            Kind::Bucket => u64::from(CAPACITY),
        }
    }

    fn name(self) -> String {
        match self {
            Kind::Pacer => format!("pacer {RATE}/s strict"),
            Kind::Bucket => format!("bucket {RATE}/s capacity {CAPACITY}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Kill,
    Pause,
    ClientKill,
    Oom,
    WrongType,
    WrongTypeBefore,
    ScriptFlush,
    Mismatch,
}

/// How many times the client-kill cases kill the connection, and how far
/// apart.
const CLIENT_KILLS: u32 = 4;
const CLIENT_KILL_EVERY: Duration = Duration::from_millis(200);

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::Kill => "kill",
            Fault::Pause => "pause",
            Fault::ClientKill => "client-kill",
            Fault::Oom => "oom",
            Fault::WrongType => "wrong-type",
            Fault::WrongTypeBefore => "wrong-type-before",
            Fault::ScriptFlush => "script-flush",
            Fault::Mismatch => "mismatch",
        }
    }

    /// A key of another type or limit: no outage, every request refused.
    fn misconfigures(self) -> bool {
        matches!(
            self,
            Fault::WrongType | Fault::WrongTypeBefore | Fault::Mismatch
        )
    }

    fn deadline(self) -> Duration {
        if self == Fault::ClientKill {
            RECONNECT_DEADLINE
        } else {
            DEADLINE
        }
    }

    /// Applies the fault (at `APPLY_AT`, for a `wrong-type-before` before
    /// the run).
    fn apply(self, c: &mut Ctx<'_>) {
        match self {
            Fault::Kill => c.server.kill(),
            Fault::Pause => c.server.signal("STOP"),
            Fault::ClientKill => {
                for n in 0..CLIENT_KILLS {
                    sleep_until(c.t0 + APPLY_AT + CLIENT_KILL_EVERY * n);
                    let killed: u32 = cli(c.server, &["CLIENT", "KILL", "TYPE", "normal"])
                        .parse()
                        .expect("CLIENT KILL answers a count");
                    assert!(killed >= 1, "kill {n} found no client to kill");
                }
            }
            Fault::Oom => {
                assert_eq!(
                    cli(
                        c.server,
                        &["CONFIG", "SET", "maxmemory-policy", "noeviction"]
                    ),
                    "OK"
                );
                assert_eq!(cli(c.server, &["CONFIG", "SET", "maxmemory", "1"]), "OK");
            }
            Fault::WrongType | Fault::WrongTypeBefore => {
                assert_eq!(cli(c.server, &["SET", c.key, "hello"]), "OK");
            }
            Fault::ScriptFlush => {
                assert_eq!(cli(c.server, &["SCRIPT", "FLUSH"]), "OK");
                std::thread::sleep(Duration::from_millis(300));
                assert_eq!(cli(c.server, &["SCRIPT", "FLUSH"]), "OK");
            }
            Fault::Mismatch => {
                let other = c.other.expect("the other limiter");
                // The load may create the key again between the delete and
                // the other limiter's request: then the other meets the
                // mismatch, and tries again.
                for _ in 0..50 {
                    cli(c.server, &["DEL", c.key]);
                    let d = c.rt.block_on(other.reserve(1, Some(Duration::ZERO)));
                    if d.source() == Source::Redis && d.is_granted() {
                        return;
                    }
                }
                panic!("the other limiter never took the key");
            }
        }
    }

    /// Clears the fault (at `CLEAR_AT`).
    fn clear(self, c: &mut Ctx<'_>) {
        match self {
            // Waits until the new server answers.
            Fault::Kill => c.server.restart(),
            Fault::Pause => c.server.signal("CONT"),
            Fault::Oom => assert_eq!(cli(c.server, &["CONFIG", "SET", "maxmemory", "0"]), "OK"),
            Fault::WrongType | Fault::WrongTypeBefore | Fault::Mismatch => {
                assert_eq!(cli(c.server, &["DEL", c.key]), "1");
            }
            Fault::ClientKill | Fault::ScriptFlush => {}
        }
    }
}

/// What a fault acts on.
struct Ctx<'a> {
    server: &'a mut OwnServer,
    key: &'a str,
    rt: &'a tokio::runtime::Runtime,
    /// The other limiter of a mismatch.
    other: Option<&'a RedisLimiter>,
    t0: Instant,
}

/// redis-cli's answer, trimmed.
fn cli(server: &OwnServer, args: &[&str]) -> String {
    server
        .cli(args)
        .unwrap_or_else(|| panic!("redis-cli {args:?} failed"))
        .trim()
        .to_owned()
}

fn sleep_until(t: Instant) {
    std::thread::sleep(t.saturating_duration_since(Instant::now()));
}

fn policy_name(policy: FailurePolicy) -> String {
    match policy {
        FailurePolicy::LocalLearned => "local-learned".into(),
        FailurePolicy::Local { share } => format!("local-{share}"),
        FailurePolicy::Open => "open".into(),
        FailurePolicy::Closed => "closed".into(),
        other => format!("{other:?}"),
    }
}

/// One decision of the load.
struct Rec {
    /// When it was asked for, from the start of the run.
    at: Duration,
    /// How long it took to come back.
    took: Duration,
    source: Source,
    granted: bool,
    /// The decision itself; left out of fail-open grants, which come by
    /// the hundred thousand while the server fails.
    decision: Option<Box<Decision>>,
}

/// One task of the load: reserve one permit at a time and sleep to the
/// grant's ready time (as `acquire` does), until the span has passed; a
/// refusal is asked again after a millisecond.
async fn load(limiter: Arc<RedisLimiter>, t0: Instant) -> Vec<Rec> {
    let max_wait = limiter.limit().max_wait();
    let mut recs = Vec::new();
    while t0.elapsed() < SPAN {
        let asked = Instant::now();
        let d = tokio::time::timeout(Duration::from_secs(5), limiter.reserve(1, max_wait))
            .await
            .expect("a decision took over 5 s");
        let took = asked.elapsed();
        let (source, granted) = (d.source(), d.is_granted());
        let ready = d.result().ok().map(|g| g.ready_nanos());
        recs.push(Rec {
            at: asked - t0,
            took,
            source,
            granted,
            decision: (source != Source::FailOpen).then(|| Box::new(d)),
        });
        match ready {
            Some(ready) => {
                let now = limiter.clock().now_nanos();
                if ready > now {
                    tokio::time::sleep(Duration::from_nanos(ready - now)).await;
                } else {
                    tokio::task::yield_now().await;
                }
            }
            None => tokio::time::sleep(Duration::from_millis(1)).await,
        }
    }
    recs
}

/// Decisions by where they came from.
#[derive(Debug, Default)]
struct Counts {
    decided: [u64; 6],
    admitted: [u64; 6],
}

impl Counts {
    fn of(recs: &[Rec]) -> Counts {
        let mut c = Counts::default();
        for r in recs {
            let i = Source::ALL.iter().position(|&s| s == r.source).unwrap();
            c.decided[i] += 1;
            c.admitted[i] += u64::from(r.granted);
        }
        c
    }

    fn decided(&self, source: Source) -> u64 {
        self.decided[Source::ALL.iter().position(|&s| s == source).unwrap()]
    }

    fn admitted(&self, source: Source) -> u64 {
        self.admitted[Source::ALL.iter().position(|&s| s == source).unwrap()]
    }

    /// Decisions the failure policy made.
    fn by_policy(&self) -> u64 {
        [Source::Local, Source::FailOpen, Source::FailClosed]
            .into_iter()
            .map(|s| self.decided(s))
            .sum()
    }

    /// Admitted by the server or on its word (a lease, the cache).
    fn admitted_by_server(&self) -> u64 {
        [Source::Redis, Source::Lease, Source::Cache]
            .into_iter()
            .map(|s| self.admitted(s))
            .sum()
    }

    /// `redis:300 local:112`, the sources that admitted anything.
    fn admitted_line(&self) -> String {
        let parts: Vec<String> = Source::ALL
            .iter()
            .filter(|&&s| self.admitted(s) > 0)
            .map(|&s| format!("{s}:{}", self.admitted(s)))
            .collect();
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(" ")
        }
    }
}

/// The most a run may admit under `policy`, or `None` for `Open`
/// (unbounded by design while the server fails):
///
/// * every policy: the shared rate × the span, plus the limit's burst,
///   plus [`SLACK_PERMITS`];
/// * the local policies, beyond that: the fallback's `share` of the rate
///   over `outage` (the fallback is built at takeover and owes what the
///   server last said, so it adds at most its own rate while it decides);
/// * `Closed`: nothing beyond (it admits nothing while the server fails).
fn bound(policy: FailurePolicy, kind: Kind, outage: Duration, share: f64) -> Option<u64> {
    let shared = (RATE * SPAN.as_secs_f64()).round() as u64 + kind.burst() + SLACK_PERMITS;
    match policy {
        FailurePolicy::Open => None,
        FailurePolicy::Closed => Some(shared),
        _ => Some(shared + (share * RATE * outage.as_secs_f64()).ceil() as u64),
    }
}

/// Runs one case: the load on `kind` under `policy`, with `fault` applied
/// and cleared meanwhile, and checks it.
fn case(fault: Fault, policy: FailurePolicy, kind: Kind) {
    let name = format!("{}-{}", fault.name(), policy_name(policy));
    let Some(mut server) = OwnServer::start(&name) else {
        return;
    };
    let rt = common::runtime();
    let deadline = fault.deadline();
    let key = common::key(&name);
    let connect = |url: String| async move {
        Backend::builder(url)
            .deadline(deadline)
            .breaker(3, COOLDOWN)
            .connect()
            .await
            .expect("connect")
    };
    let backend = rt.block_on(connect(server.url()));
    let limiter = Arc::new(
        RedisLimiter::builder(&backend, key.clone(), kind.limit())
            .failure_policy(policy)
            .build()
            .unwrap(),
    );
    // The other process of a mismatch: its own connection, half the rate,
    // its key kept for a minute once idle.
    let other = (fault == Fault::Mismatch).then(|| {
        let backend = rt.block_on(connect(server.url()));
        let half = SharedLimit::pacer(Rate::new(RATE / 2.0).unwrap(), 1.0).unwrap();
        RedisLimiter::builder(&backend, key.clone(), half)
            .idle_ttl(Duration::from_secs(60))
            .build()
            .unwrap()
    });
    let share_now = || match policy {
        FailurePolicy::Local { share } => share,
        _ => limiter.learned_share().unwrap_or(1.0),
    };

    let t0 = Instant::now();
    let mut ctx = Ctx {
        server: &mut server,
        key: &key,
        rt: &rt,
        other: other.as_ref(),
        t0,
    };
    let before = fault == Fault::WrongTypeBefore;
    if before {
        fault.apply(&mut ctx);
    }
    let t0 = Instant::now();
    ctx.t0 = t0;
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| rt.spawn(load(Arc::clone(&limiter), t0)))
        .collect();

    let (applied, apply_done) = if before {
        (Duration::ZERO, Duration::ZERO)
    } else {
        sleep_until(t0 + APPLY_AT);
        let applied = t0.elapsed();
        fault.apply(&mut ctx);
        (applied, t0.elapsed())
    };
    let share_at_fault = share_now();
    sleep_until(t0 + CLEAR_AT);
    let clear_start = t0.elapsed();
    fault.clear(&mut ctx);
    let cleared = t0.elapsed();
    let share = share_at_fault.max(share_now());

    let recs: Vec<Rec> = rt.block_on(async {
        tokio::time::timeout(SPAN + Duration::from_secs(10), async {
            let mut all = Vec::new();
            for task in tasks {
                all.extend(task.await.expect("a load task failed"));
            }
            all
        })
        .await
        .expect("the load hung")
    });
    let wall = t0.elapsed();

    let counts = Counts::of(&recs);
    let admitted: u64 = counts.admitted.iter().sum();
    let refused = recs.len() as u64 - admitted;
    // The policy may decide from the fault until the server answers again
    // after it is cleared: at most the cool-down of an open breaker and
    // one deadline later. A key of another type or limit is no outage.
    let outage = if fault.misconfigures() {
        Duration::ZERO
    } else {
        cleared.saturating_sub(applied) + COOLDOWN + deadline
    };
    let bound = bound(policy, kind, outage, share);
    let slowest = recs.iter().map(|r| r.took).max().unwrap_or_default();
    eprintln!(
        "fault={} policy={} admitted={admitted} bound={} wall={:.2}s \
         ({}; admitted by {}; refused {refused}; policy decided {}; \
         outage allowance {:.2}s at share {share:.2}; slowest decision {}ms)",
        fault.name(),
        policy_name(policy),
        bound.map_or_else(|| "none".to_owned(), |b| b.to_string()),
        wall.as_secs_f64(),
        kind.name(),
        counts.admitted_line(),
        counts.by_policy(),
        outage.as_secs_f64(),
        slowest.as_millis(),
    );

    // On time: the run, and every decision.
    assert!(
        wall <= SPAN + deadline + WALL_SLACK,
        "the run took {wall:?} (span {SPAN:?}, deadline {deadline:?})"
    );
    let late: Vec<_> = recs
        .iter()
        .filter(|r| r.took > deadline + DECISION_SLACK)
        .map(|r| (r.at, r.took, r.source))
        .collect();
    assert!(
        late.is_empty(),
        "{} decisions past {deadline:?} + {DECISION_SLACK:?} (asked at, took, source): {:?}",
        late.len(),
        &late[..late.len().min(10)]
    );

    // The fault took effect.
    match fault {
        Fault::Kill | Fault::Pause | Fault::Oom => assert!(
            counts.by_policy() > 0,
            "the policy never decided: {counts:?}"
        ),
        Fault::ScriptFlush => assert!(
            backend.stats().reloads >= 1,
            "no reload: {:?}",
            backend.stats()
        ),
        // Checked as each kill counts the clients it killed.
        Fault::ClientKill => {}
        // Checked below: decisions were made while it stood.
        Fault::WrongType | Fault::WrongTypeBefore | Fault::Mismatch => {}
    }

    // The server decides again once the fault is cleared.
    assert!(
        recs.iter()
            .any(|r| r.at >= cleared && r.source == Source::Redis && r.granted),
        "no grant from the server after the fault was cleared at {cleared:?}: {counts:?}"
    );

    // A killed connection that reconnects within the deadline leaves
    // nothing to the policy.
    if fault == Fault::ClientKill {
        assert_eq!(
            counts.by_policy(),
            0,
            "decisions fell to the policy: {counts:?}; {:?}",
            recs.iter()
                .find(|r| r
                    .decision
                    .as_ref()
                    .is_some_and(|d| d.backend_error().is_some()))
                .and_then(|r| r.decision.as_deref())
        );
    }

    // A key of another type or limit: nothing admitted while it stands,
    // under any policy; the server says why.
    if fault.misconfigures() {
        let during: Vec<&Rec> = recs
            .iter()
            .filter(|r| r.at >= apply_done && r.at + r.took <= clear_start)
            .collect();
        assert!(
            during.len() > 10,
            "only {} decisions while the fault stood",
            during.len()
        );
        for r in &during {
            assert!(
                !r.granted,
                "admitted while the key was wrong: {:?}",
                r.source
            );
            let d = r.decision.as_deref().expect("kept");
            assert_eq!(d.source(), Source::Redis, "{d:?}");
            assert_eq!(
                d.result().unwrap_err(),
                AcquireError::Misconfigured,
                "{d:?}"
            );
            match (fault, d.backend_error()) {
                (Fault::Mismatch, Some(RedisError::LimitMismatch { key: k, .. }))
                | (
                    Fault::WrongType | Fault::WrongTypeBefore,
                    Some(RedisError::WrongType { key: k, .. }),
                ) => assert_eq!(k, &key),
                (_, other) => panic!("not the {} error: {other:?}", fault.name()),
            }
        }
        let error = limiter.config_error();
        assert!(
            match fault {
                Fault::Mismatch => matches!(error, Some(RedisError::LimitMismatch { .. })),
                _ => matches!(error, Some(RedisError::WrongType { .. })),
            },
            "config_error: {error:?}"
        );
    }

    // The policy's bound.
    if policy == FailurePolicy::Closed {
        assert_eq!(
            admitted - counts.admitted_by_server(),
            0,
            "admitted while the server failed: {counts:?}"
        );
    }
    if let Some(bound) = bound {
        assert!(
            admitted <= bound,
            "admitted {admitted} > {bound} ({})",
            counts.admitted_line()
        );
    }
    drop(rt);
}

const LOCAL_HALF: FailurePolicy = FailurePolicy::Local { share: 0.5 };

#[test]
fn kill_and_restart_under_local_learned() {
    case(Fault::Kill, FailurePolicy::LocalLearned, Kind::Pacer);
}

#[test]
fn kill_and_restart_under_closed() {
    case(Fault::Kill, FailurePolicy::Closed, Kind::Pacer);
}

#[test]
fn kill_and_restart_under_open() {
    case(Fault::Kill, FailurePolicy::Open, Kind::Pacer);
}

#[test]
fn kill_and_restart_of_a_bucket_under_a_local_half_share() {
    case(Fault::Kill, LOCAL_HALF, Kind::Bucket);
}

#[test]
fn pause_under_local_learned() {
    case(Fault::Pause, FailurePolicy::LocalLearned, Kind::Pacer);
}

#[test]
fn pause_under_closed() {
    case(Fault::Pause, FailurePolicy::Closed, Kind::Pacer);
}

#[test]
fn pause_under_open() {
    case(Fault::Pause, FailurePolicy::Open, Kind::Pacer);
}

#[test]
fn client_kill_under_local_learned() {
    case(Fault::ClientKill, FailurePolicy::LocalLearned, Kind::Pacer);
}

#[test]
fn client_kill_under_closed() {
    case(Fault::ClientKill, FailurePolicy::Closed, Kind::Pacer);
}

#[test]
fn maxmemory_under_local_learned() {
    case(Fault::Oom, FailurePolicy::LocalLearned, Kind::Pacer);
}

#[test]
fn maxmemory_of_a_bucket_under_a_local_half_share() {
    case(Fault::Oom, LOCAL_HALF, Kind::Bucket);
}

#[test]
fn wrong_type_mid_run_under_local_learned() {
    case(Fault::WrongType, FailurePolicy::LocalLearned, Kind::Pacer);
}

#[test]
fn wrong_type_mid_run_under_open() {
    case(Fault::WrongType, FailurePolicy::Open, Kind::Pacer);
}

#[test]
fn wrong_type_before_the_run_under_closed() {
    case(Fault::WrongTypeBefore, FailurePolicy::Closed, Kind::Pacer);
}

#[test]
fn script_flush_under_local_learned() {
    case(Fault::ScriptFlush, FailurePolicy::LocalLearned, Kind::Pacer);
}

#[test]
fn mismatched_limit_under_local_learned() {
    case(Fault::Mismatch, FailurePolicy::LocalLearned, Kind::Pacer);
}

#[test]
fn mismatched_limit_under_open() {
    case(Fault::Mismatch, FailurePolicy::Open, Kind::Pacer);
}
