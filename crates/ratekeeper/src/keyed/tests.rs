use std::time::Duration;

use proptest::prelude::*;

use super::map::*;
use super::*;
use crate::config::LimiterConfig;
use crate::error::ConfigErrorKind;
use crate::grant::AcquireError;
use crate::RateLimiter;
use crate::{ManualClock, Recovery};

const MS: u64 = 1_000_000;

fn keyed(
    text: &str,
    cap: usize,
    shards: usize,
    overflow: Overflow,
) -> (Keyed<u64, ManualClock>, ManualClock) {
    let clock = ManualClock::new(0);
    let config: LimiterConfig = text.parse().unwrap();
    let k = Keyed::builder()
        .max_keys(cap)
        .shards(shards)
        .overflow(overflow)
        .build_with_clock(&config, clock.clone())
        .unwrap();
    (k, clock)
}

#[test]
fn bad_settings_are_typed_errors() {
    let config: LimiterConfig = "pacer:10".parse().unwrap();
    let kind = |b: KeyedBuilder| {
        b.build_with_clock::<u64, _>(&config, ManualClock::new(0))
            .unwrap_err()
            .kind()
    };
    assert_eq!(kind(Keyed::builder().max_keys(0)), ConfigErrorKind::MaxKeys);
    assert_eq!(
        kind(Keyed::builder().max_keys(MAX_KEYS + 1)),
        ConfigErrorKind::MaxKeys
    );
    assert_eq!(
        kind(Keyed::builder().max_keys(4).shards(5)),
        ConfigErrorKind::Shards
    );
    assert_eq!(kind(Keyed::builder().shards(0)), ConfigErrorKind::Shards);
    assert_eq!(
        kind(Keyed::builder().max_keys(10_000).shards(MAX_SHARDS + 1)),
        ConfigErrorKind::Shards
    );
    // The limits themselves are allowed (a map takes memory as keys come).
    for builder in [
        Keyed::builder().max_keys(MAX_KEYS).shards(1),
        Keyed::builder().max_keys(10_000).shards(MAX_SHARDS),
    ] {
        builder
            .build_with_clock::<u64, _>(&config, ManualClock::new(0))
            .unwrap();
    }
    for text in ["pool:10", "pacer:10,shards=2"] {
        let config: LimiterConfig = text.parse().unwrap();
        let err = Keyed::builder().build_with_clock::<u64, _>(&config, ManualClock::new(0));
        assert_eq!(
            err.unwrap_err().kind(),
            ConfigErrorKind::Unsupported,
            "{text}"
        );
    }
    assert_eq!(
        IpKeyer::with_ipv6_prefix(200).unwrap_err().kind(),
        ConfigErrorKind::IpPrefix
    );
}

#[test]
fn pacer_recovery_by_mode() {
    let clock = ManualClock::new(5 * MS);
    let build = |s: f64| {
        crate::Pacer::builder(crate::Rate::new(1000.0).unwrap())
            .strictness(s)
            .build_with_clock(clock.clone())
            .unwrap()
    };
    for s in [0.0, 0.5, 1.0, 1.1] {
        let p = build(s);
        assert_eq!(p.recovery(), Recovery::Fresh, "{s}");
        p.try_acquire().unwrap();
        assert_eq!(p.recovery(), Recovery::Debt { nanos: MS }, "{s}");
        clock.advance_nanos(MS);
        assert_eq!(p.recovery(), Recovery::Fresh, "{s}: the next slot is now");
        clock.advance_nanos(3 * MS);
        let want = if s == 1.0 {
            Recovery::Fresh
        } else {
            Recovery::Credit
        };
        assert_eq!(p.recovery(), want, "{s}: behind schedule");
        clock.set_nanos(5 * MS);
    }
}

#[test]
fn refill_recovery() {
    let clock = ManualClock::new(0);
    let full = |initial: i64| {
        let c: LimiterConfig = format!("refill:5,1s,capacity=5,initial={initial}")
            .parse()
            .unwrap();
        c.build_with_clock(clock.clone()).unwrap()
    };
    let (a, b) = (full(5), full(2));
    assert_eq!(
        (a.recovery(), b.recovery()),
        (Recovery::Fresh, Recovery::Fresh)
    );
    a.try_acquire_n(2).unwrap();
    b.try_acquire().unwrap();
    assert_eq!(a.recovery(), Recovery::Debt { nanos: 400 * MS });
    assert_eq!(b.recovery(), Recovery::Debt { nanos: 200 * MS });
    clock.advance_nanos(200 * MS);
    assert_eq!(b.recovery(), Recovery::Fresh);
    clock.advance_nanos(200 * MS);
    assert_eq!(a.recovery(), Recovery::Fresh, "full again");
    assert_eq!(
        b.recovery(),
        Recovery::Credit,
        "more than its 2 initial permits"
    );
}

#[test]
fn smooth_recovery() {
    let clock = ManualClock::new(0);
    let build = |text: &str| {
        let c: LimiterConfig = text.parse().unwrap();
        c.build_with_clock(clock.clone()).unwrap()
    };
    // Bursty, 10/s, a second of burst: starts with nothing stored.
    let b = build("bursty:10,1");
    assert_eq!(b.recovery(), Recovery::Fresh);
    b.try_acquire().unwrap();
    assert_eq!(b.recovery(), Recovery::Debt { nanos: 100 * MS });
    clock.advance_nanos(100 * MS);
    assert_eq!(b.recovery(), Recovery::Fresh, "paid, nothing stored");
    clock.advance_nanos(MS);
    assert_eq!(
        b.recovery(),
        Recovery::Credit,
        "a hundredth of a permit stored"
    );
    // Warming up: starts cold (its maximum stored); a used one is warmer
    // until it has cooled down again.
    let w = build("warmup:10,1s");
    assert_eq!(w.recovery(), Recovery::Fresh);
    w.try_acquire().unwrap();
    // The first permit from cold costs (300 + 260) / 2 = 280 ms.
    assert_eq!(w.recovery(), Recovery::Debt { nanos: 280 * MS });
    clock.advance_nanos(280 * MS);
    assert_eq!(w.recovery(), Recovery::Credit, "9 of 10 stored: warmer");
    clock.advance_nanos(100 * MS); // cools by one permit per 100 ms
    assert_eq!(w.recovery(), Recovery::Fresh, "cold again");
}

#[test]
fn cycle_recovery() {
    let clock = ManualClock::new(0);
    // 2 permits a 100 ms cycle.
    let c: LimiterConfig = "cycle:20,100ms".parse().unwrap();
    let c = c.build_with_clock(clock.clone()).unwrap();
    assert_eq!(c.recovery(), Recovery::Fresh);
    c.try_acquire().unwrap();
    clock.advance_nanos(30 * MS);
    assert_eq!(
        c.recovery(),
        Recovery::Debt { nanos: 70 * MS },
        "until the next cycle"
    );
    c.reserve(3, None).unwrap(); // 1 left, 3 taken: 2 owed to the next cycle
    assert_eq!(
        c.recovery(),
        Recovery::Debt { nanos: 170 * MS },
        "two cycles on"
    );
    clock.advance_nanos(170 * MS);
    assert_eq!(c.recovery(), Recovery::Fresh);
}

#[test]
fn fresh_keys_are_evicted_for_free_and_debt_is_kept() {
    let (k, clock) = keyed("pacer:10,1.0", 4, 1, Overflow::DenyNew);
    for key in 0..4 {
        k.try_acquire(&key).unwrap();
    }
    assert_eq!(
        k.try_acquire(&9),
        Err(KeyedError::Full),
        "every key holds 100 ms of debt"
    );
    assert_eq!(k.metrics().denied_new, 1);
    clock.advance(Duration::from_millis(100));
    k.try_acquire(&9).unwrap();
    let m = k.metrics();
    assert_eq!((m.live_keys, m.evicted_fresh, m.evicted_credit), (1, 4, 0));
}

#[test]
fn overflow_policies() {
    let (k, _) = keyed("pacer:10,1.0", 2, 1, Overflow::Shared);
    k.try_acquire(&1).unwrap();
    k.try_acquire(&2).unwrap();
    k.try_acquire(&3).unwrap(); // the shared limiter's first permit
    let refused = k.try_acquire(&4).unwrap_err();
    assert!(matches!(
        refused,
        KeyedError::Limiter(AcquireError::WouldWait { .. })
    ));
    // The shared limiter's next slot is 100 ms on.
    assert_eq!(refused.retry_after(), Some(Duration::from_millis(100)));
    assert_eq!(KeyedError::Full.retry_after(), None);
    assert_eq!(k.metrics().overflowed, 2);
    assert_eq!(k.metrics().live_keys, 2);

    let (k, clock) = keyed("pacer:10,1.0", 2, 1, Overflow::EvictLeastDebt);
    k.reserve(&1, 3, None).unwrap(); // 300 ms of debt
    k.try_acquire(&2).unwrap(); // 100 ms
    clock.advance(Duration::from_millis(50));
    k.try_acquire(&3).unwrap();
    assert_eq!(k.metrics().evicted_debt, 1);
    assert!(!k.contains(&2), "the least indebted went");
    assert!(k.contains(&1));
}

#[test]
fn the_shared_overflow_limit_starts_at_its_first_use() {
    // Average mode keeps a backlog: a shared limit started when the map
    // was built would hand an hour of it to the first untracked keys.
    let (k, clock) = keyed("pacer:10,0", 1, 1, Overflow::Shared);
    clock.advance(Duration::from_secs(3600));
    k.reserve(&1, 50, None).unwrap(); // the only room, 5 s in debt
    let granted = (2..12).filter(|key| k.try_acquire(key).is_ok()).count();
    assert_eq!(granted, 1, "one permit now, the next in 100 ms");
    assert_eq!(k.metrics().overflowed, 10);
}

#[test]
fn refused_requests_take_no_room() {
    let (k, _) = keyed("pacer:10,1.0", 2, 1, Overflow::DenyNew);
    assert!(k.try_acquire_n(&1, 0).is_err());
    assert_eq!(k.metrics().live_keys, 0);
}

/// 1 M unique keys, 1000 a millisecond, each holding 10 ms of debt after
/// its grant: about 10 000 in debt at any time. A steady client asks every
/// millisecond for its 100 a second.
fn flood(cap: usize, overflow: Overflow) -> (u64, KeyedMetrics) {
    let (k, clock) = keyed("pacer:100,1.0", cap, 16, overflow);
    let steady = u64::MAX;
    let mut granted = 0u64;
    for i in 0..1_000_000u64 {
        let _ = k.try_acquire(&i);
        if i % 1000 == 0 {
            granted += u64::from(k.try_acquire(&steady).is_ok());
            clock.advance_nanos(MS);
        }
        if i % 4096 == 0 {
            assert!(k.metrics().live_keys <= cap as u64);
        }
    }
    (granted, k.metrics())
}

#[test]
fn a_million_key_flood_stays_under_the_cap_and_a_steady_key_keeps_its_limit() {
    for overflow in [
        Overflow::DenyNew,
        Overflow::Shared,
        Overflow::EvictLeastDebt,
    ] {
        if overflow == Overflow::DenyNew {
            // Room for the flood's indebted keys (so no policy acts): the
            // steady key's limit is exact, a grant every 10 ms over 1000 ms.
            let (granted, m) = flood(20_000, overflow);
            assert_eq!(granted, 100);
            assert!(m.live_keys <= 20_000 && m.evicted_fresh > 900_000, "{m:?}");
            assert_eq!((m.evicted_debt, m.denied_new, m.overflowed), (0, 0, 0));
        }
        // Half the room: never above the limit; the flood's cost is the
        // policy's (denied new keys, a shared limiter, forgiven debt).
        let (granted, m) = flood(5_000, overflow);
        assert!(m.live_keys <= 5_000, "{m:?}");
        if overflow == Overflow::EvictLeastDebt {
            // The steady key's debt is forgiven too, and counted.
            assert!(m.evicted_debt > 0, "{m:?}");
        } else {
            assert!(granted <= 100, "{overflow:?}: {granted}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any script of requests over few keys: the cap holds, a key is
    /// dropped only when fresh or by the policy, and each key's grants
    /// stay within its limit.
    #[test]
    fn invariants(
        cap in 1usize..6,
        policy in 0..3u8,
        steps in prop::collection::vec((0u64..12, 0u64..40), 1..300),
    ) {
        let overflow = [Overflow::DenyNew, Overflow::Shared, Overflow::EvictLeastDebt][policy as usize];
        let (k, clock) = keyed("pacer:100,1.0", cap, 1, overflow);
        // Each key's last grant on its own limiter, while the key has not
        // been evicted in debt since.
        let mut last: std::collections::HashMap<u64, u64> = Default::default();
        for (key, advance_ms) in steps {
            clock.advance_nanos(advance_ms * MS / 4);
            let before = k.metrics();
            let tracked = k.contains(&key);
            let res = k.try_acquire(&key);
            let m = k.metrics();
            prop_assert!(m.live_keys <= cap as u64);
            if overflow != Overflow::EvictLeastDebt {
                prop_assert_eq!(m.evicted_debt, 0);
            }
            if m.evicted_debt != before.evicted_debt {
                // A key evicted in debt starts afresh: forget its last
                // grant. (Keys swept as fresh or credit are kept here:
                // they had paid.)
                last.retain(|k2, _| k.contains(k2));
            }
            if res.is_ok() && (tracked || m.overflowed == before.overflowed) {
                // A grant on the key's own limiter: 10 ms after its last
                // one, unless the key was evicted in debt in between (a
                // key swept as fresh or credit had paid its debt).
                let now = clock.now_nanos();
                if let Some(prev) = last.insert(key, now) {
                    prop_assert!(
                        now - prev >= 10 * MS,
                        "key {} granted {} ns after its last grant",
                        key,
                        now - prev
                    );
                }
            }
        }
    }
}

/// What the compact state decides, against a limiter of the same
/// configuration built when the key is first seen.
fn same_decisions(text: &str, steps: &[(u64, u32, Option<u64>)]) -> Result<(), TestCaseError> {
    // A start on every period's grid (whole microseconds, 2 ms cycles):
    // a key counts them from the clock's origin, a limiter from its
    // creation.
    decisions_from(8 * MS, text, steps)
}

/// [`same_decisions`] with the clock starting at `start`.
fn decisions_from(
    start: u64,
    text: &str,
    steps: &[(u64, u32, Option<u64>)],
) -> Result<(), TestCaseError> {
    let clock = ManualClock::new(start);
    let config: LimiterConfig = text.parse().unwrap();
    let keyed = Keyed::builder()
        .build_with_clock::<u8, _>(&config, clock.clone())
        .unwrap();
    let limiter = config.build_with_clock(clock.clone()).unwrap();
    // A strict pacer's key reports its next start as the slot, the
    // in-memory pacer its ideal timeline: compare ready times there.
    let strict = text.ends_with(",1.0");
    let smooth = text.starts_with("bursty") || text.starts_with("warmup");
    // A smooth key that owed nothing at the last step: it grants any
    // request at once.
    let mut owed_nothing = false;
    for &(advance_us, permits, max_us) in steps {
        let max = max_us.map(Duration::from_micros);
        let want = limiter.reserve(permits, max);
        let got = keyed.reserve(&0, permits, max);
        if owed_nothing && permits > 0 {
            prop_assert!(
                matches!(&want, Ok(w) if w.ready_nanos() <= w.started_nanos()),
                "{}: recovered, yet {:?}",
                text,
                want
            );
        }
        match (want, got) {
            (Ok(w), Ok(g)) => {
                prop_assert_eq!(
                    w.ready_nanos(),
                    g.ready_nanos(),
                    "{} {:?}",
                    text,
                    (advance_us, permits, max_us)
                );
                if !strict {
                    prop_assert_eq!(w.scheduled_nanos(), g.scheduled_nanos());
                }
                prop_assert_eq!(
                    (w.started_nanos(), w.permits()),
                    (g.started_nanos(), g.permits())
                );
            }
            (Err(w), Err(g)) => prop_assert_eq!(KeyedError::Limiter(w), g),
            (w, g) => prop_assert!(false, "{}: {:?} against {:?}", text, w, g),
        }
        let recovery = keyed.recovery(&0).unwrap_or(Recovery::Fresh);
        prop_assert_eq!(limiter.recovery(), recovery, "{}", text);
        // The smooth limiter and its key read recovery with the same
        // arithmetic: hold it to the decisions. A debt is the wait a try
        // is refused for (a refusal changes nothing); no debt, and the
        // next request goes at once.
        owed_nothing = false;
        if smooth {
            match recovery {
                Recovery::Debt { nanos } => match limiter.reserve(1, Some(Duration::ZERO)) {
                    // (A debt saturates at u64::MAX ns, 584 years.)
                    Err(AcquireError::WouldWait { wait, .. }) => prop_assert_eq!(
                        wait.as_nanos().min(u128::from(u64::MAX)),
                        u128::from(nanos),
                        "{}",
                        text
                    ),
                    other => prop_assert!(false, "{}: {} ns owed, yet {:?}", text, nanos, other),
                },
                _ => owed_nothing = true,
            }
        }
        clock.advance_nanos(advance_us * 1000);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Each limit's compact per-key state decides as the limiter does:
    /// the same grants, ready times, refusals and recovery.
    #[test]
    fn compact_state_decides_as_the_limiter(
        which in 0usize..13,
        steps in prop::collection::vec(
            (0u64..4_000, 1u32..4, prop::option::of(prop::sample::select(vec![0u64, 500, 1_000, 5_000]))),
            1..200,
        ),
    ) {
        let text = [
            "pacer:1000,0",
            "pacer:1000,0.5",
            "pacer:1000,1.0",
            "pacer:1000,1.5",
            "pacer:1000,3",
            "refill:5000,1ms,capacity=5",
            "refill:100,10ms,capacity=3,initial=1",
            "refill:1000,1ms,capacity=4,initial=0",
            "bursty:1000,0.005",
            "warmup:1000,10ms",
            "warmup:1000,10ms,3",
            "cycle:1000,1ms",
            "cycle:2000,2ms,timeout=0s",
        ][which];
        same_decisions(text, &steps)?;
    }
}

use crate::Clock;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// At the edges (rates from one an hour to a billion a second, zero
    /// and huge permit counts, any wait, clock jumps of up to centuries):
    /// no panic, and the key decides as the limiter does.
    #[test]
    fn edges_decide_as_the_limiter(
        which in 0usize..10,
        rate in prop::sample::select(vec!["0.0003", "1", "1000", "1M", "1G"]),
        steps in prop::collection::vec(
            (
                // Microseconds: up to 2^50 (36 years) at once.
                prop_oneof![0u64..1_000, Just(1u64 << 30), Just(1u64 << 50)],
                prop_oneof![0u32..4, Just(1_000_000u32), Just(u32::MAX)],
                prop::option::of(prop_oneof![Just(0u64), Just(1), Just(u64::MAX / 1000)]),
            ),
            1..40,
        ),
    ) {
        let text = [
            "pacer:{r},0",
            "pacer:{r},0.5",
            "pacer:{r},1.0",
            "pacer:{r},3",
            "refill:{r},1s,capacity=1000000000,initial=0",
            "bursty:{r},1000",
            "warmup:{r},1h,10",
            "cycle:{r},1s",
            "refill:{r},1ms",
            "bursty:{r},0",
        ][which]
            .replace("{r}", rate);
        let Ok(config) = text.parse::<LimiterConfig>() else { return Ok(()) };
        if config.build_with_clock(ManualClock::new(0)).is_err() {
            return Ok(());
        }
        // The key is kept from its first grant, when the limiter it is
        // compared with is built; a request no wait could grant (zero
        // permits, above the capacity) keeps no key, while the limiter,
        // built, idles (and an average-mode pacer gathers credit).
        // A smooth schedule saturates i64::MAX µs (292,000 years) ahead, a
        // key's counted from the clock's origin and the limiter's from its
        // creation (documented): they saturate an hour apart here, so keep
        // the smooth kinds' schedules short of it.
        let smooth = text.starts_with("bursty") || text.starts_with("warmup");
        let permits: f64 = steps.iter().map(|s| f64::from(s.1)).sum::<f64>() + 1.0;
        let rate: f64 = rate.trim_end_matches(['M', 'G']).parse().unwrap_or(1.0);
        if smooth && permits * 10.0 * 1e6 / rate > (1u64 << 62) as f64 {
            return Ok(());
        }
        let mut steps = steps;
        steps.insert(0, (0, 1, None));
        // An hour in: on the grid of every period here (1 ms, 1 s cycles).
        decisions_from(3_600_000 * MS, &text, &steps)?;
    }
}

/// A key in debt, by however little, is never dropped to make room: under
/// [`Overflow::DenyNew`] with room for one key, a new key is refused while
/// the key there owes 1 ns, 1 µs or 1 ms, and tracked once it has paid.
/// What it owes is read from a refused try, not from its recovery.
#[test]
fn a_key_in_debt_is_never_swept() {
    for text in [
        "pacer:100,1.0",
        "pacer:100,0",
        "refill:100,10ms,capacity=1",
        "bursty:100,1",
        "warmup:100,100ms",
        "cycle:100,10ms",
    ] {
        for owed in [1, 1_000, MS] {
            let wait_of = |k: &Keyed<u64, ManualClock>| match k.reserve(&0, 1, Some(Duration::ZERO))
            {
                Err(KeyedError::Limiter(AcquireError::WouldWait { wait, .. })) => {
                    wait.as_nanos() as u64
                }
                other => panic!("{text}, {owed} ns owed: {other:?}"),
            };
            let (k, clock) = keyed(text, 1, 1, Overflow::DenyNew);
            clock.advance_nanos(100 * MS);
            k.try_acquire(&0).unwrap();
            let debt = wait_of(&k);
            assert!(debt > MS, "{text}: {debt} ns");
            clock.advance_nanos(debt - owed);
            assert_eq!(
                k.try_acquire(&1),
                Err(KeyedError::Full),
                "{text}: {owed} ns owed"
            );
            assert!(k.contains(&0), "{text}: {owed} ns owed");
            // Still owed (the smooth limiters count whole microseconds).
            let left = wait_of(&k);
            assert!(
                (owed..=owed.max(1_000)).contains(&left),
                "{text}: {owed} ns owed, {left} ns to wait"
            );
            // Paid: the sweep drops the key for the new one.
            clock.advance_nanos(owed + 1_000);
            k.try_acquire(&1).unwrap();
            assert!(!k.contains(&0), "{text}: {owed} ns owed");
        }
    }
}

#[test]
fn default_shards_are_four_a_cpu_to_a_power_of_two_at_most_the_max() {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    let shards = default_shards();
    assert!(shards.is_power_of_two(), "{shards}");
    assert!(shards <= DEFAULT_SHARDS_MAX, "{shards}");
    // At least four a CPU, and under twice that, unless capped.
    let wanted = cpus * 4;
    assert!(
        shards == DEFAULT_SHARDS_MAX || (wanted..2 * wanted).contains(&shards),
        "{shards} shards for {cpus} CPUs"
    );
}

#[test]
fn ip_keys_are_ipv4_or_the_ipv6_network_of_the_prefix() {
    use std::net::{IpAddr, Ipv6Addr};
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    let keyer = IpKeyer::default();
    assert_eq!(keyer.ipv6_prefix(), 64);
    // IPv4, and IPv4 arriving mapped or through NAT64, key as the IPv4.
    for addr in ["192.0.2.7", "::ffff:192.0.2.7", "64:ff9b::192.0.2.7"] {
        assert_eq!(keyer.key(ip(addr)), IpKey::V4("192.0.2.7".parse().unwrap()));
    }
    // Any other IPv6: the network of the prefix, its other bits cleared.
    let key = keyer.key(ip("2001:db8:1:2:3:4:5:6"));
    assert_eq!(key, IpKey::V6("2001:db8:1:2::".parse().unwrap()));
    assert_eq!(key.to_string(), "2001:db8:1:2::");
    assert_eq!(
        IpKey::V4("192.0.2.7".parse().unwrap()).to_string(),
        "192.0.2.7"
    );
    // Every prefix from 0 to 128 keeps exactly its top bits.
    let all = Ipv6Addr::from_bits(u128::MAX);
    for prefix in 0..=128u32 {
        let keyer = IpKeyer::with_ipv6_prefix(prefix).unwrap();
        assert_eq!(keyer.ipv6_prefix(), prefix);
        let IpKey::V6(net) = keyer.key(IpAddr::V6(all)) else {
            panic!("/{prefix}: not an IPv6 key");
        };
        let bits = net.to_bits();
        assert_eq!(
            (bits.leading_ones(), bits.count_ones()),
            (prefix, prefix),
            "/{prefix}: {net}"
        );
    }
    assert!(IpKeyer::with_ipv6_prefix(129).is_err());
}

#[test]
fn available_counts_a_buckets_permits_and_none_for_a_schedule() {
    let (k, _) = keyed("refill:5,1s,capacity=5", 7, 1, Overflow::DenyNew);
    assert_eq!(k.max_keys(), 7);
    // A key not tracked yet could take a fresh bucket's permits.
    assert_eq!(k.available(&1), Some(5));
    k.reserve(&1, 2, None).unwrap();
    assert_eq!(k.available(&1), Some(3));
    let (k, _) = keyed("pacer:10,1.0", 7, 1, Overflow::DenyNew);
    k.try_acquire(&1).unwrap();
    assert_eq!((k.available(&1), k.available(&2)), (None, None));
    let shown = format!("{k:?}");
    assert!(
        shown.starts_with("Keyed {")
            && shown.contains("max_keys: 7")
            && shown.contains("shards: 1"),
        "{shown}"
    );
}

/// A clock that moves `step` ns on at every reading.
#[derive(Clone)]
struct Ticking {
    now: std::sync::Arc<std::sync::atomic::AtomicU64>,
    step: u64,
}

impl crate::Clock for Ticking {
    fn now_nanos(&self) -> u64 {
        self.now
            .fetch_add(self.step, std::sync::atomic::Ordering::Relaxed)
            + self.step
    }
}

#[test]
fn a_refusal_decides_again_on_a_later_reading() {
    let config: LimiterConfig = "pacer:10,1.0".parse().unwrap();
    let clock = Ticking {
        now: std::sync::Arc::default(),
        step: 70 * MS,
    };
    let k = Keyed::builder()
        .build_with_clock::<u64, _>(&config, clock)
        .unwrap();
    // The next slot is 100 ms after the first grant. The next request
    // reads the clock 70 ms after it (refused), then again 140 ms after:
    // granted on that reading.
    let first = k.try_acquire(&1).unwrap();
    let next = k.try_acquire(&1).unwrap();
    assert_eq!(next.scheduled_nanos(), first.started_nanos() + 100 * MS);
    assert_eq!(next.started_nanos(), first.started_nanos() + 140 * MS);
}

#[test]
fn a_full_shard_sweeps_again_the_moment_its_first_debt_ends() {
    let (k, clock) = keyed("pacer:10,1.0", 2, 1, Overflow::DenyNew);
    clock.advance(Duration::from_millis(1));
    k.try_acquire(&1).unwrap();
    k.try_acquire(&2).unwrap();
    // Both keys owe until 101 ms: refused until then, and not later.
    assert_eq!(k.try_acquire(&3), Err(KeyedError::Full));
    clock.advance(Duration::from_millis(99));
    assert_eq!(k.try_acquire(&3), Err(KeyedError::Full));
    clock.advance(Duration::from_millis(1));
    k.try_acquire(&3).unwrap();
    assert_eq!(k.metrics().evicted_fresh, 2);
}

#[test]
fn a_sweep_counts_keys_dropped_with_credit() {
    // Average strictness: a key left behind its schedule holds credit.
    let (k, clock) = keyed("pacer:10,0.0", 2, 1, Overflow::DenyNew);
    clock.advance(Duration::from_millis(1));
    k.try_acquire(&1).unwrap();
    k.try_acquire(&2).unwrap();
    clock.advance(Duration::from_millis(200));
    assert_eq!(k.recovery(&1), Some(Recovery::Credit));
    k.try_acquire(&3).unwrap();
    let m = k.metrics();
    assert_eq!((m.evicted_fresh, m.evicted_credit), (0, 2));
}

#[test]
fn a_key_recovered_between_sweeps_is_evicted_before_one_in_debt() {
    let (k, clock) = keyed("pacer:10,1.0", 2, 1, Overflow::EvictLeastDebt);
    clock.advance(Duration::from_millis(1));
    k.reserve(&1, 3, None).unwrap(); // owes until 301 ms
    k.reserve(&2, 3, None).unwrap();
    // A sweep at 1 ms finds both in debt (the next one due at 301 ms);
    // one is evicted for key 3, which owes until 101 ms.
    k.try_acquire(&3).unwrap();
    let kept = if k.contains(&1) { 1 } else { 2 };
    // At 150 ms no sweep is due yet, but key 3 has recovered: it goes
    // first, not the key still in debt.
    clock.advance(Duration::from_millis(149));
    assert_eq!(k.recovery(&3), Some(Recovery::Fresh));
    k.try_acquire(&4).unwrap();
    assert!(k.contains(&kept) && !k.contains(&3));
}

#[test]
fn a_ranking_names_a_sixteenth_of_the_keys_at_least_one() {
    let (k, clock) = keyed("pacer:10,1.0", 2, 1, Overflow::EvictLeastDebt);
    clock.advance(Duration::from_millis(1));
    k.reserve(&1, 2, None).unwrap(); // owes 200 ms
    k.reserve(&2, 1, None).unwrap(); // owes 100 ms
    k.try_acquire(&3).unwrap(); // evicts 2, the least in debt; owes 100 ms
    assert!(k.contains(&1) && !k.contains(&2));
    // That ranking named one key (a sixteenth of two, at least one), so
    // the next eviction ranks again: key 3 owes less than key 1 and goes.
    k.try_acquire(&4).unwrap();
    assert!(k.contains(&1) && !k.contains(&3));
    assert_eq!(k.metrics().evicted_debt, 2);
}

/// A strict pacer's key first seen late in the clock's life starts its
/// schedule then: its first grant is scheduled at that reading and waits 0,
/// as a strict Pacer built then would.
#[test]
fn a_strict_key_first_seen_late_is_scheduled_then() {
    let (k, clock) = keyed("pacer:10,1.0", 10, 1, Overflow::DenyNew);
    clock.advance_nanos(5_000_000_000);
    let g = k.try_acquire(&7).unwrap();
    assert_eq!(g.scheduled_nanos(), 5_000_000_000);
    assert_eq!(g.wait_nanos(), 0);
}
