//! Unit tests of the registry on a manual clock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Duration;

use super::*;
use std::sync::Arc;

use ratekeeper::DefaultClock;

use crate::test_util::PermitConfigError;
use crate::{
    ConfigBuilder, CycleConfig, CycleLimiter, EventPublisher, PermitLimiter, RefillConfig,
    RefillLimiter,
};
use crate::{Metrics, PermitEventKind};
use ratekeeper::ManualClock;

type Refills = Registry<RefillLimiter<ManualClock>>;
type Cycles = Registry<CycleLimiter<ManualClock>>;

fn refills(clock: &ManualClock) -> Refills {
    Registry::builder_with_clock(clock.clone()).build().unwrap()
}

fn config(limit: i64) -> RefillConfig {
    crate::compat::ConfigBuilder::new()
        .limit_for_period(limit)
        .limit_refresh_period_nanos(1_000)
        .timeout_nanos(0)
        .build()
        .unwrap()
}

type Log = Arc<Mutex<Vec<(RegistryEventKind, String, u64)>>>;

fn record<L: PermitLimiter + Send + Sync + 'static>(
    events: &EventPublisher<RegistryEvent<L>>,
) -> Log {
    let log: Log = Arc::default();
    let sink = log.clone();
    events.subscribe(move |e: &RegistryEvent<L>| {
        sink.lock()
            .unwrap()
            .push((e.kind(), e.name().to_owned(), e.sequence()))
    });
    log
}

#[test]
fn registry_and_limiters_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<RefillRegistry>();
    check::<CycleRegistry>();
    check::<Refills>();
    check::<RegistryEvent<RefillLimiter>>();
}

#[test]
fn own_defaults_match_an_empty_builder() {
    // The trait's contract for `Config: Default`.
    assert_eq!(
        <RefillLimiter as RegistryLimiter>::validate(&ConfigBuilder::new()),
        Ok(RefillConfig::default())
    );
    assert_eq!(
        <CycleLimiter as RegistryLimiter>::validate(&ConfigBuilder::new()),
        Ok(CycleConfig::default())
    );
    // And `to_builder` round-trips.
    let c = RefillConfig::builder()
        .limit_for_period(3)
        .permit_capacity(7)
        .initial_permits(2)
        .build()
        .unwrap();
    assert_eq!(
        <RefillLimiter as RegistryLimiter>::validate(&RefillLimiter::<DefaultClock>::to_builder(
            &c
        )),
        Ok(c)
    );
}

#[test]
fn same_name_same_limiter_other_name_other_limiter() {
    let clock = ManualClock::new(0);
    let r = refills(&clock);
    let a = r.limiter("a");
    assert!(Arc::ptr_eq(&a, &r.limiter("a")));
    assert!(Arc::ptr_eq(&a, &r.limiter_with_config("a", config(1))));
    assert!(Arc::ptr_eq(
        &a,
        &r.limiter_with("a", || unreachable!("a exists"))
    ));
    let b = r.limiter("b");
    assert!(!Arc::ptr_eq(&a, &b));
    assert_eq!(a.name(), "a");
    assert_eq!(b.name(), "b");
    // Get-or-create never replaces: "a" keeps the default configuration.
    assert_eq!(a.config(), RefillConfig::default());
    assert_eq!(r.len(), 2);
}

#[test]
fn limiters_read_the_registry_clock() {
    let clock = ManualClock::new(0);
    let r = refills(&clock);
    let l = r.limiter_with_config("a", config(10)); // 100 ns per permit
    assert!(l.acquire_permission(10).unwrap());
    assert!(!l.acquire_permission(1).unwrap());
    clock.advance_nanos(300);
    assert_eq!(l.metrics().available_permissions, 3);
    // A limiter created later starts full at the clock's reading then.
    let m = r.limiter_with_config("b", config(10));
    assert_eq!(m.metrics().available_permissions, 10);
}

#[test]
fn missing_default_gives_the_limiters_own_defaults() {
    let r = Cycles::builder_with_clock(ManualClock::new(0))
        .build()
        .unwrap();
    assert_eq!(*r.default_config(), CycleConfig::default());
    assert_eq!(r.limiter("a").config().limit_for_period(), 50);
    let r = RefillRegistry::new();
    assert_eq!(r.limiter("a").config().limit_for_period(), 50);
    let r = CycleRegistry::default();
    assert_eq!(
        r.configuration(DEFAULT_CONFIGURATION),
        Some(CycleConfig::default())
    );
}

#[test]
fn default_is_reserved() {
    let r = RefillRegistry::new();
    assert_eq!(
        r.add_configuration("default", config(1)),
        Err(RegistryError::ReservedName)
    );
    assert_eq!(
        r.add_configuration_overrides("default", ConfigBuilder::new()),
        Err(RegistryError::ReservedName)
    );
    assert_eq!(
        r.remove_configuration("default"),
        Err(RegistryError::ReservedName)
    );
    // Still the limiter's defaults.
    assert_eq!(r.configuration("default"), Some(RefillConfig::default()));
    assert!(r.configuration_names().is_empty());
    assert_eq!(
        RefillRegistry::builder()
            .configuration_overrides("default", ConfigBuilder::new())
            .build()
            .unwrap_err(),
        RegistryError::ReservedName
    );
    // "default" as a configuration name for a limiter is the default one.
    let l = r.limiter_from_configuration("a", "default").unwrap();
    assert_eq!(l.config(), RefillConfig::default());
}

#[test]
fn unknown_configuration_name_is_an_error_and_creates_nothing() {
    let clock = ManualClock::new(0);
    let r = refills(&clock);
    let log = record(r.events());
    let err = r.limiter_from_configuration("a", "nope").unwrap_err();
    assert_eq!(err, RegistryError::ConfigurationNotFound("nope".into()));
    assert_eq!(err.to_string(), "no configuration named \"nope\"");
    assert!(r.find("a").is_none());
    assert!(log.lock().unwrap().is_empty());
    // Also when the limiter exists.
    r.limiter("a");
    assert!(r.limiter_from_configuration("a", "nope").is_err());
    // A configuration removed is unknown again.
    r.add_configuration("slow", config(1)).unwrap();
    assert_eq!(
        r.limiter_from_configuration("b", "slow").unwrap().config(),
        config(1)
    );
    assert_eq!(r.remove_configuration("slow"), Ok(Some(config(1))));
    assert!(matches!(
        r.limiter_from_configuration("c", "slow"),
        Err(RegistryError::ConfigurationNotFound(n)) if n == "slow"
    ));
    // The limiter built from it keeps it.
    assert_eq!(r.find("b").unwrap().config(), config(1));
}

#[test]
fn overrides_merge_onto_partial_defaults() {
    let r = Refills::builder_with_clock(ManualClock::new(0))
        .defaults(
            ConfigBuilder::new()
                .limit_refresh_period(Duration::from_secs(1))
                .timeout(Duration::ZERO),
        )
        .configuration_overrides("hundred", ConfigBuilder::new().limit_for_period(100))
        .build()
        .unwrap();
    let d = r.default_config();
    assert_eq!((d.limit_for_period(), d.capacity()), (50, 50));
    assert_eq!(d.timeout(), Duration::ZERO);
    // The capacity was left unset in the defaults: it follows the limit.
    let h = r.configuration("hundred").unwrap();
    assert_eq!(
        (h.limit_for_period(), h.capacity(), h.initial_permits()),
        (100, 100, 100)
    );
    assert_eq!(h.nanos_per_permit(), 10_000_000);
    assert_eq!(h.timeout(), Duration::ZERO);

    // With whole defaults every field is set: raising the limit above the
    // default capacity is then refused, with the name and the cause.
    let whole = Refills::builder_with_clock(ManualClock::new(0))
        .default_config(RefillConfig::default())
        .build()
        .unwrap();
    let err = whole
        .add_configuration_overrides("hundred", ConfigBuilder::new().limit_for_period(100))
        .unwrap_err();
    assert_eq!(
        err,
        RegistryError::InvalidConfiguration {
            name: "hundred".into(),
            source: PermitConfigError::CapacityBelowLimit {
                capacity: 50,
                limit: 100
            }
            .into(),
        }
    );
    assert_eq!(err.to_string(), "configuration \"hundred\" is invalid");
    let source = std::error::Error::source(&err).map(|s| s.to_string());
    let cause = PermitConfigError::CapacityBelowLimit {
        capacity: 50,
        limit: 100,
    };
    assert_eq!(source, Some(cause.to_string()));
}

#[test]
fn builder_reports_the_invalid_configuration_by_name() {
    let err = CycleRegistry::builder()
        .configuration_overrides("ok", ConfigBuilder::new().limit_for_period(1))
        .configuration_overrides("capped", ConfigBuilder::new().permit_capacity(5))
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        RegistryError::InvalidConfiguration {
            name: "capped".into(),
            source: PermitConfigError::CapacityNotSupported.into(),
        }
    );
    // A later configuration of the same name wins.
    let r = RefillRegistry::builder()
        .configuration("x", config(1))
        .configuration("x", config(2))
        .build()
        .unwrap();
    assert_eq!(r.configuration("x"), Some(config(2)));
}

#[test]
fn events_for_added_removed_and_replaced() {
    let clock = ManualClock::new(0);
    let r = refills(&clock);
    let log = record(r.events());
    let a = r.limiter("a");
    r.limiter("a"); // exists: no event
    r.limiter_with_config("b", config(2));
    let replaced = r.replace("a", config(3)).unwrap();
    assert!(Arc::ptr_eq(&replaced, &a));
    assert!(r.replace("zzz", config(3)).is_none()); // absent: no event
    assert!(r.remove("b").is_some());
    assert!(r.remove("b").is_none()); // absent: no event
    use RegistryEventKind::*;
    assert_eq!(
        *log.lock().unwrap(),
        vec![
            (Added, "a".into(), 1),
            (Added, "b".into(), 2),
            (Replaced, "a".into(), 3),
            (Removed, "b".into(), 4),
        ]
    );
    assert_eq!(r.find("a").unwrap().config(), config(3));
    assert!(r.find("zzz").is_none());
}

#[test]
fn filtered_subscriptions_see_their_kind_only() {
    let r = RefillRegistry::new();
    let added = Arc::new(AtomicUsize::new(0));
    let removed = Arc::new(AtomicUsize::new(0));
    let replaced = Arc::new(Mutex::new(Vec::new()));
    let (a, b, c) = (added.clone(), removed.clone(), replaced.clone());
    let id = r.events().on_added(move |_| {
        a.fetch_add(1, Ordering::Relaxed);
    });
    r.events().on_removed(move |_| {
        b.fetch_add(1, Ordering::Relaxed);
    });
    r.events().on_replaced(move |old, new| {
        c.lock().unwrap().push((
            old.config().limit_for_period(),
            new.config().limit_for_period(),
        ))
    });
    r.limiter("x");
    r.replace("x", config(9));
    r.remove("x");
    assert!(r.events().unsubscribe(id));
    r.limiter("y");
    assert_eq!(added.load(Ordering::Relaxed), 1);
    assert_eq!(removed.load(Ordering::Relaxed), 1);
    assert_eq!(*replaced.lock().unwrap(), [(50, 9)]);
}

#[test]
fn subscribers_may_use_the_registry() {
    // Events are published with no lock held.
    let r = Arc::new(RefillRegistry::new());
    let weak = Arc::downgrade(&r);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    r.events().on_added(move |l| {
        if let Some(r) = weak.upgrade() {
            sink.lock()
                .unwrap()
                .push((r.len(), r.find(l.name()).is_some()));
            if l.name() == "a" {
                r.limiter("b"); // nested creation from a subscriber
            }
        }
    });
    r.limiter("a");
    assert_eq!(*seen.lock().unwrap(), [(1, true), (2, true)]);
}

#[test]
fn replaced_and_removed_limiters_stay_usable_by_their_holders() {
    let clock = ManualClock::new(0);
    let r = refills(&clock);
    let old = r.limiter_with_config("a", config(1));
    assert!(old.acquire_permission(1).unwrap());
    r.replace("a", config(1));
    let new = r.limiter("a");
    assert!(!Arc::ptr_eq(&old, &new));
    // The new one starts afresh, the old one keeps its state.
    assert!(new.acquire_permission(1).unwrap());
    assert!(!old.acquire_permission(1).unwrap());
    let removed = r.remove("a").unwrap();
    assert!(Arc::ptr_eq(&removed, &new));
    assert_eq!(removed.metrics().available_permissions, 0);
    assert!(r.is_empty());
}

#[test]
fn snapshot_is_sorted_and_detached() {
    let r = RefillRegistry::new();
    for name in ["c", "a", "b"] {
        r.limiter(name);
    }
    let snapshot = r.limiters();
    r.remove("b");
    r.limiter("d");
    let names: Vec<&str> = snapshot.iter().map(|l| l.name()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    let now: Vec<String> = r.limiters().iter().map(|l| l.name().to_owned()).collect();
    assert_eq!(now, ["a", "c", "d"]);
    let debug = format!("{r:?}");
    assert!(debug.contains("[\"a\", \"c\", \"d\"]"), "{debug}");
}

#[test]
fn racing_get_or_create_creates_one_limiter_and_calls_the_supplier_once() {
    crate::test_util::within(|| {
        const THREADS: usize = 8;
        const ROUNDS: usize = 50;
        let clock = ManualClock::new(0);
        let r = refills(&clock);
        let log = record(r.events());
        let calls = AtomicUsize::new(0);
        for round in 0..ROUNDS {
            let name = format!("n{round}");
            let barrier = Barrier::new(THREADS);
            let got: Vec<Arc<RefillLimiter<ManualClock>>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..THREADS)
                    .map(|i| {
                        let (r, name, barrier, calls) = (&r, &name, &barrier, &calls);
                        s.spawn(move || {
                            barrier.wait();
                            match i % 3 {
                                0 => r.limiter_with(name, || {
                                    calls.fetch_add(1, Ordering::SeqCst);
                                    // Widen the race window.
                                    std::thread::yield_now();
                                    config(5)
                                }),
                                1 => r.limiter_with_config(name, config(6)),
                                _ => r.limiter(name),
                            }
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert!(got.iter().all(|l| Arc::ptr_eq(l, &got[0])), "round {round}");
            assert!(Arc::ptr_eq(&got[0], &r.find(&name).unwrap()));
        }
        // One limiter and one event per name; the supplier ran exactly once
        // for each name one of its threads created (the only limiters with
        // limit 5), and never for the others.
        assert_eq!(r.len(), ROUNDS);
        let by_supplier = r
            .limiters()
            .iter()
            .filter(|l| l.config() == config(5))
            .count();
        assert_eq!(calls.load(Ordering::SeqCst), by_supplier);
        let log = log.lock().unwrap();
        assert_eq!(log.len(), ROUNDS);
        assert!(log.iter().all(|(k, _, _)| *k == RegistryEventKind::Added));
        let mut seqs: Vec<u64> = log.iter().map(|e| e.2).collect();
        seqs.sort_unstable();
        assert_eq!(seqs, (1..=ROUNDS as u64).collect::<Vec<_>>());
    });
}

#[test]
fn racing_suppliers_for_one_name_run_once() {
    crate::test_util::within(|| {
        // Every thread offers a supplier: exactly one of them runs.
        const THREADS: usize = 8;
        let r = RefillRegistry::new();
        let calls = AtomicUsize::new(0);
        let barrier = Barrier::new(THREADS);
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    barrier.wait();
                    r.limiter_with("shared", || {
                        calls.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(1));
                        RefillConfig::default()
                    })
                });
            }
        });
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(r.len(), 1);
    });
}

#[test]
fn racing_remove_and_create_keep_the_events_consistent() {
    crate::test_util::within(|| {
        // Adds and removes of one name from many threads: the sequence
        // numbers order the events into a valid history (alternating, starting
        // with an add), and the final state matches the last event.
        const THREADS: usize = 4;
        const OPS: usize = 200;
        let r = RefillRegistry::new();
        let log = record(r.events());
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let r = &r;
                s.spawn(move || {
                    for i in 0..OPS {
                        if (i + t) % 2 == 0 {
                            r.limiter("x");
                        } else {
                            r.remove("x");
                        }
                    }
                });
            }
        });
        let mut log = log.lock().unwrap().clone();
        log.sort_by_key(|e| e.2);
        for (i, (kind, _, seq)) in log.iter().enumerate() {
            assert_eq!(*seq, i as u64 + 1);
            let expected = if i % 2 == 0 {
                RegistryEventKind::Added
            } else {
                RegistryEventKind::Removed
            };
            assert_eq!(*kind, expected, "event {i}");
        }
        assert_eq!(r.find("x").is_some(), log.len() % 2 == 1);
    });
}

#[test]
fn panicking_supplier_adds_nothing_and_leaves_the_registry_usable() {
    let r = RefillRegistry::new();
    let log = record(r.events());
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        r.limiter_with("a", || panic!("no configuration today"))
    }));
    assert!(result.is_err());
    assert!(r.find("a").is_none());
    assert!(log.lock().unwrap().is_empty());
    assert_eq!(r.limiter("a").name(), "a");
    assert_eq!(log.lock().unwrap().len(), 1);
}

#[test]
fn cycle_registry_builds_cycle_limiters() {
    let clock = ManualClock::new(0);
    let r = Cycles::builder_with_clock(clock.clone())
        .defaults(
            ConfigBuilder::new()
                .limit_for_period(2)
                .limit_refresh_period_nanos(1_000)
                .timeout_nanos(0),
        )
        .build()
        .unwrap();
    let l = r.limiter("jobs");
    assert!(l.acquire_permission(2).unwrap());
    assert!(!l.acquire_permission(1).unwrap());
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    l.events()
        .subscribe(move |e| sink.lock().unwrap().push(e.kind()));
    clock.advance_nanos(1_000);
    assert!(r.limiter("jobs").acquire_permission(1).unwrap());
    assert_eq!(
        *events.lock().unwrap(),
        [PermitEventKind::SuccessfulAcquire]
    );
    let m: Metrics = l.metrics();
    assert_eq!((m.available_permissions, m.cycle), (1, Some(1)));
}
