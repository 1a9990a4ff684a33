//! `Limits` on a manual clock: matching, counting, refusals that take
//! nothing, shadow mode, hits, several descriptors, headers and reloads.

use std::time::Duration;

use ratekeeper::ManualClock;
use ratekeeper_serve::config::{
    Algorithm, Config, DescriptorConfig, DomainConfig, LimitConfig, RateLimitConfig, Unit,
};
use ratekeeper_serve::{CheckError, CheckRequest, CheckResponse, Code, Descriptor, Limits};

const SEC: u64 = 1_000_000_000;

fn rate(n: u32, unit: Unit) -> RateLimitConfig {
    RateLimitConfig::new(n, unit)
}

fn node(key: &str, value: Option<&str>, limit: Option<LimitConfig>) -> DescriptorConfig {
    DescriptorConfig {
        value: value.map(Into::into),
        limit,
        ..DescriptorConfig::new(key)
    }
}

fn limited(r: RateLimitConfig) -> Option<LimitConfig> {
    Some(r.into())
}

fn config(descriptors: Vec<DescriptorConfig>) -> Config {
    Config {
        domains: vec![DomainConfig {
            domain: "d".into(),
            descriptors,
            source: "d.yaml".into(),
        }],
    }
}

fn build(c: &Config) -> (Limits<ManualClock>, ManualClock) {
    let clock = ManualClock::new(0);
    let limits = Limits::builder()
        .build_with_clock(c, clock.clone())
        .unwrap();
    (limits, clock)
}

fn ask(entries: &[(&str, &str)]) -> CheckRequest {
    CheckRequest::new("d", vec![Descriptor::new(entries.iter().copied())])
}

fn code(limits: &Limits<ManualClock>, entries: &[(&str, &str)]) -> Code {
    limits.check(&ask(entries)).unwrap().overall_code
}

fn header(r: &CheckResponse, name: &str) -> Option<String> {
    r.response_headers()
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v)
}

#[test]
fn a_key_without_a_value_limits_each_value_on_its_own() {
    let (limits, _) = build(&config(vec![node(
        "user",
        None,
        limited(rate(2, Unit::Second)),
    )]));
    assert_eq!(code(&limits, &[("user", "a")]), Code::Ok);
    assert_eq!(code(&limits, &[("user", "a")]), Code::Ok);
    assert_eq!(code(&limits, &[("user", "a")]), Code::OverLimit);
    assert_eq!(code(&limits, &[("user", "b")]), Code::Ok);
    assert_eq!(limits.live_keys(), 2);
}

#[test]
fn the_refill_bucket_refills_evenly_and_refusals_take_nothing() {
    let (limits, clock) = build(&config(vec![node(
        "k",
        None,
        limited(rate(2, Unit::Second)),
    )]));
    let k = [("k", "v")];
    assert_eq!(code(&limits, &k), Code::Ok);
    assert_eq!(code(&limits, &k), Code::Ok);
    for _ in 0..5 {
        assert_eq!(code(&limits, &k), Code::OverLimit);
    }
    // One permit per half second, whatever the refusals before.
    clock.advance(Duration::from_nanos(SEC / 2));
    assert_eq!(code(&limits, &k), Code::Ok);
    assert_eq!(code(&limits, &k), Code::OverLimit);
}

#[test]
fn an_over_limit_status_says_the_limit_the_remaining_and_when_to_retry() {
    let mut r = rate(2, Unit::Second);
    r.name = Some("per-user".into());
    let (limits, _) = build(&config(vec![node("k", None, limited(r))]));
    let first = limits.check(&ask(&[("k", "v")])).unwrap();
    let s = &first.statuses[0];
    assert_eq!(s.limit_remaining, 1);
    assert_eq!(s.current_limit().unwrap().requests_per_unit, 2);
    assert_eq!(s.current_limit().unwrap().unit, Unit::Second);
    assert_eq!(s.duration_until_reset, Duration::from_millis(500));
    assert_eq!(
        header(&first, "ratelimit").as_deref(),
        Some(r#""per-user";r=1;t=1"#)
    );
    assert_eq!(
        header(&first, "ratelimit-policy").as_deref(),
        Some(r#""per-user";q=2;w=1;rk-burst=2"#)
    );
    assert_eq!(header(&first, "retry-after"), None);
    limits.check(&ask(&[("k", "v")])).unwrap();
    let refused = limits.check(&ask(&[("k", "v")])).unwrap();
    let s = &refused.statuses[0];
    assert_eq!(s.code, Code::OverLimit);
    assert_eq!(s.limit_remaining, 0);
    assert_eq!(s.duration_until_reset, Duration::from_secs(1));
    assert_eq!(s.retry_after, Some(Duration::from_millis(500)));
    assert_eq!(header(&refused, "retry-after").as_deref(), Some("1"));
}

#[test]
fn threads_deciding_at_once_get_copies_of_their_own_of_the_limit_shown() {
    let (limits, _) = build(&config(vec![node(
        "k",
        None,
        limited(rate(9, Unit::Second)),
    )]));
    let shown = |value: &'static str| {
        let limits = &limits;
        std::thread::scope(|s| {
            s.spawn(move || {
                let r = limits.check(&ask(&[("k", value)])).unwrap();
                r.statuses[0].limit.clone().unwrap()
            })
            .join()
            .unwrap()
        })
    };
    let (a, b) = (shown("a"), shown("b"));
    assert_eq!(a, b, "copies of one limit");
    assert_eq!(a.id(), "d/k");
    let copies = std::thread::available_parallelism().map_or(1, |n| n.get().min(64));
    // Two threads in turn take consecutive stripes: distinct copies unless
    // there is only one.
    assert_eq!(
        std::ptr::eq(a.policy(), b.policy()),
        copies == 1,
        "one copy per stripe ({copies} stripes)"
    );
}

#[test]
fn nested_descriptors_match_the_node_the_last_entry_reaches() {
    let mut users = node("database", Some("users"), limited(rate(1, Unit::Minute)));
    users.descriptors = vec![node("table", None, limited(rate(3, Unit::Minute)))];
    let (limits, _) = build(&config(vec![users, node("database", None, None)]));
    // The outer limit, then the inner one (3 per table value).
    assert_eq!(code(&limits, &[("database", "users")]), Code::Ok);
    assert_eq!(code(&limits, &[("database", "users")]), Code::OverLimit);
    let inner = [("database", "users"), ("table", "t")];
    for _ in 0..3 {
        assert_eq!(code(&limits, &inner), Code::Ok);
    }
    assert_eq!(code(&limits, &inner), Code::OverLimit);
    // A node without a limit, and entries that leave the tree: no limit.
    for entries in [
        &[("database", "other")][..],
        &[("database", "users"), ("column", "c")][..],
        &[("unknown", "x")][..],
    ] {
        let r = limits.check(&ask(entries)).unwrap();
        assert_eq!(r.overall_code, Code::Ok);
        assert_eq!(r.statuses[0].current_limit(), None);
        assert!(r.response_headers().is_empty());
    }
}

#[test]
fn an_exact_value_wins_over_a_prefix_and_a_prefix_over_the_key() {
    let (limits, _) = build(&config(vec![
        node("path", None, limited(rate(3, Unit::Hour))),
        node("path", Some("/api/*"), limited(rate(2, Unit::Hour))),
        node("path", Some("/api/login"), limited(rate(1, Unit::Hour))),
    ]));
    let allowed = |path: &str| {
        (0..5)
            .take_while(|_| code(&limits, &[("path", path)]) == Code::Ok)
            .count()
    };
    assert_eq!(allowed("/api/login"), 1);
    assert_eq!(allowed("/api/users"), 2);
    assert_eq!(allowed("/api/orders"), 2, "each value its own state");
    assert_eq!(allowed("/other"), 3);
}

#[test]
fn unlimited_admits_everything_and_counts_nothing() {
    let unlimited = Some(LimitConfig::Unlimited { name: None });
    let (limits, _) = build(&config(vec![node("k", None, unlimited)]));
    for _ in 0..100 {
        let r = limits.check(&ask(&[("k", "v")])).unwrap();
        assert_eq!(r.overall_code, Code::Ok);
        assert_eq!(r.statuses[0].limit_remaining, u32::MAX);
    }
    assert_eq!(limits.live_keys(), 0);
}

#[test]
fn shadow_mode_reports_but_never_refuses() {
    let mut n = node("k", None, limited(rate(1, Unit::Minute)));
    n.shadow_mode = true;
    let (limits, _) = build(&config(vec![n]));
    let first = limits.check(&ask(&[("k", "v")])).unwrap();
    assert!(!first.statuses[0].shadow_over_limit, "within the limit");
    let r = limits.check(&ask(&[("k", "v")])).unwrap();
    assert_eq!(r.overall_code, Code::Ok);
    assert_eq!(r.statuses[0].code, Code::Ok);
    assert!(r.statuses[0].shadow_over_limit);
    assert_eq!(r.statuses[0].retry_after, None);
    assert_eq!(header(&r, "retry-after"), None);
}

#[test]
fn hits_are_the_descriptors_own_else_the_requests_and_zero_asks() {
    let (limits, _) = build(&config(vec![node(
        "k",
        None,
        limited(rate(10, Unit::Minute)),
    )]));
    let mut req = ask(&[("k", "v")]);
    req.hits_addend = 4;
    assert_eq!(limits.check(&req).unwrap().statuses[0].limit_remaining, 6);
    req.descriptors[0].hits_addend = Some(0);
    let asked = limits.check(&req).unwrap();
    assert_eq!(asked.overall_code, Code::Ok);
    assert_eq!(
        asked.statuses[0].limit_remaining, 6,
        "zero hits take nothing"
    );
    // More than the bucket holds, or than a u32: refused, nothing taken.
    for hits in [11, u64::from(u32::MAX), u64::from(u32::MAX) + 1, u64::MAX] {
        req.descriptors[0].hits_addend = Some(hits);
        let r = limits.check(&req).unwrap();
        assert_eq!(r.overall_code, Code::OverLimit, "{hits} hits");
        assert_eq!(r.statuses[0].limit_remaining, 6);
    }
    req.hits_addend = 0;
    req.descriptors[0].hits_addend = None;
    assert_eq!(limits.check(&req).unwrap().statuses[0].limit_remaining, 5);
}

#[test]
fn a_request_refused_by_one_descriptor_takes_nothing_from_the_others() {
    let (limits, _) = build(&config(vec![
        node("a", None, limited(rate(5, Unit::Minute))),
        node("b", None, limited(rate(1, Unit::Minute))),
    ]));
    let both = CheckRequest::new(
        "d",
        vec![Descriptor::new([("a", "x")]), Descriptor::new([("b", "y")])],
    );
    assert_eq!(limits.check(&both).unwrap().overall_code, Code::Ok);
    for _ in 0..3 {
        let r = limits.check(&both).unwrap();
        assert_eq!(r.overall_code, Code::OverLimit);
        assert_eq!(r.statuses[0].code, Code::Ok);
        assert_eq!(r.statuses[1].code, Code::OverLimit);
        assert_eq!(r.statuses[0].limit_remaining, 4, "a's hits not taken");
        assert_eq!(r.statuses[1].retry_after, Some(Duration::from_secs(60)));
    }
}

#[test]
fn fixed_windows_allow_a_boundary_burst_and_the_refill_bucket_does_not() {
    let mut cycle = rate(10, Unit::Second);
    cycle.algorithm = Algorithm::Cycle;
    let (limits, clock) = build(&config(vec![
        node("cycle", None, limited(cycle)),
        node("refill", None, limited(rate(10, Unit::Second))),
    ]));
    let admitted = |entries: &[(&str, &str)]| {
        (0..30)
            .filter(|_| code(&limits, entries) == Code::Ok)
            .count()
    };
    clock.advance(Duration::from_millis(999));
    let late = (admitted(&[("cycle", "c")]), admitted(&[("refill", "r")]));
    clock.advance(Duration::from_millis(2));
    let early = (admitted(&[("cycle", "c")]), admitted(&[("refill", "r")]));
    // 20 in 2 ms across the window's edge; the bucket refilled 2 ms' worth.
    assert_eq!((late.0, early.0), (10, 10));
    assert_eq!((late.1, early.1), (10, 0));
}

#[test]
fn a_held_request_is_admitted_with_its_wait() {
    let mut pacer = rate(10, Unit::Second);
    pacer.algorithm = Algorithm::Pacer;
    pacer.max_wait = Duration::from_millis(250);
    let (limits, _) = build(&config(vec![node("k", None, limited(pacer))]));
    let waits: Vec<_> = (0..4)
        .map(|_| limits.check(&ask(&[("k", "v")])).unwrap())
        .map(|r| (r.overall_code, r.wait))
        .collect();
    let ms = Duration::from_millis;
    assert_eq!(
        waits,
        [
            (Code::Ok, ms(0)),
            (Code::Ok, ms(100)),
            (Code::Ok, ms(200)),
            (Code::OverLimit, ms(0))
        ]
    );
}

#[test]
fn bad_requests_are_refused_before_anything_is_taken() {
    let (limits, _) = build(&config(vec![node(
        "k",
        None,
        limited(rate(1, Unit::Second)),
    )]));
    let mut unknown = ask(&[("k", "v")]);
    unknown.domain = "nope".into();
    assert_eq!(
        limits.check(&unknown),
        Err(CheckError::UnknownDomain("nope".into()))
    );
    let none = CheckRequest::new("d", vec![]);
    assert_eq!(limits.check(&none), Err(CheckError::NoDescriptors));
    let empty = CheckRequest::new("d", vec![Descriptor::new(Vec::<(String, String)>::new())]);
    assert!(matches!(
        limits.check(&empty),
        Err(CheckError::NoEntries { descriptor: 0 })
    ));
    let many: Vec<_> = (0..10_000)
        .map(|i| (format!("k{i}"), "v".to_owned()))
        .collect();
    let wide = CheckRequest::new("d", vec![Descriptor::new(many)]);
    assert!(matches!(
        limits.check(&wide),
        Err(CheckError::TooManyEntries {
            entries: 10_000,
            ..
        })
    ));
    let huge = ask(&[("k", &"x".repeat(1 << 20))]);
    assert!(matches!(
        limits.check(&huge),
        Err(CheckError::TooLong {
            bytes: 1_048_576,
            ..
        })
    ));
    assert_eq!(limits.live_keys(), 0);
    assert_eq!(code(&limits, &[("k", "v")]), Code::Ok);
}

#[test]
fn a_reload_keeps_unchanged_limits_and_a_new_key_starts_fresh() {
    let before = config(vec![
        node("same", None, limited(rate(1, Unit::Minute))),
        node("changed", None, limited(rate(1, Unit::Minute))),
    ]);
    let (limits, _) = build(&before);
    assert_eq!(code(&limits, &[("same", "v")]), Code::Ok);
    assert_eq!(code(&limits, &[("changed", "v")]), Code::Ok);
    let after = config(vec![
        node("same", None, limited(rate(1, Unit::Minute))),
        node("changed", None, limited(rate(2, Unit::Minute))),
    ]);
    let reloaded = limits.reload(&after).unwrap();
    assert_eq!(code(&reloaded, &[("same", "v")]), Code::OverLimit);
    assert_eq!(code(&reloaded, &[("changed", "w")]), Code::Ok);
    assert_eq!(code(&reloaded, &[("changed", "w")]), Code::Ok);
    assert_eq!(code(&reloaded, &[("changed", "w")]), Code::OverLimit);
}

/// Limits of `n` a minute for `k`, before and after a reload.
fn per_minute(n: u32) -> Config {
    config(vec![node("k", None, limited(rate(n, Unit::Minute)))])
}

fn taken(limits: &Limits<ManualClock>, n: usize) -> usize {
    (0..n)
        .filter(|_| code(limits, &[("k", "v")]) == Code::Ok)
        .count()
}

#[test]
fn a_raised_limit_admits_the_difference_at_once() {
    let (limits, _) = build(&per_minute(2));
    assert_eq!(taken(&limits, 5), 2);
    let raised = limits.reload(&per_minute(5)).unwrap();
    assert_eq!(taken(&raised, 10), 3, "5 less the 2 granted");
}

#[test]
fn a_lowered_limit_never_hands_out_again_what_was_granted() {
    let (limits, clock) = build(&per_minute(5));
    assert_eq!(taken(&limits, 4), 4);
    let lowered = limits.reload(&per_minute(2)).unwrap();
    // 4 granted against a bucket of 2: empty, and 2 permits (60 s at the
    // new rate) owed before the next one comes, 30 s later.
    assert_eq!(taken(&lowered, 3), 0);
    clock.advance(Duration::from_secs(89));
    assert_eq!(taken(&lowered, 1), 0);
    clock.advance(Duration::from_secs(1));
    assert_eq!(taken(&lowered, 3), 1);
    // A key that had used 1 of 5 keeps 1 of the new 2.
    let (limits, _) = build(&per_minute(5));
    assert_eq!(taken(&limits, 1), 1);
    let lowered = limits.reload(&per_minute(2)).unwrap();
    assert_eq!(taken(&lowered, 3), 1);
}

#[test]
fn a_key_recovered_before_its_first_request_after_a_reload_starts_fresh() {
    let (limits, clock) = build(&per_minute(2));
    assert_eq!(taken(&limits, 2), 2);
    let lowered = limits.reload(&per_minute(1)).unwrap();
    // The old bucket of 2 at 2 a minute is full again after 60 s: by then
    // nothing is carried over, and the key starts as a new one.
    clock.advance(Duration::from_secs(60));
    assert_eq!(taken(&lowered, 3), 1);
}

#[test]
fn a_burst_below_the_rate_refills_at_the_rate() {
    let mut r = rate(100, Unit::Minute);
    r.burst = Some(10);
    let mut odd = rate(7, Unit::Second);
    odd.burst = Some(2);
    let (limits, clock) = build(&config(vec![
        node("a", None, limited(r)),
        node("b", None, limited(odd)),
    ]));
    let admitted = |k: &str| {
        (0..20)
            .filter(|_| code(&limits, &[(k, "v")]) == Code::Ok)
            .count()
    };
    assert_eq!((admitted("a"), admitted("b")), (10, 2));
    // 0.6 s is one permit of 100 per minute; 1/7 s (rounded to the
    // nanosecond) one of 7 per second.
    clock.advance(Duration::from_millis(600));
    assert_eq!((admitted("a"), admitted("b")), (1, 2));
    clock.advance(Duration::from_nanos(142_857_142));
    assert_eq!(admitted("b"), 0);
    clock.advance(Duration::from_nanos(1));
    assert_eq!(admitted("b"), 1);
}

#[test]
fn a_caller_may_shorten_a_limits_wait_but_never_lengthen_it() {
    let mut pacer = rate(10, Unit::Second);
    pacer.algorithm = Algorithm::Pacer;
    pacer.max_wait = Duration::from_millis(150);
    let (limits, _) = build(&config(vec![node("k", None, limited(pacer))]));
    let with = |max: Option<u64>| {
        let mut req = ask(&[("k", "v")]);
        req.max_wait = max.map(Duration::from_millis);
        let r = limits.check(&req).unwrap();
        (r.overall_code, r.wait.as_millis())
    };
    assert_eq!(with(Some(0)), (Code::Ok, 0));
    assert_eq!(with(Some(50)), (Code::OverLimit, 0));
    assert_eq!(with(Some(10_000)), (Code::Ok, 100));
    assert_eq!(
        with(Some(10_000)),
        (Code::OverLimit, 0),
        "200 ms > the limit's 150"
    );
    assert_eq!(with(None), (Code::OverLimit, 0));
}

#[test]
fn reloads_under_load_lose_no_state() {
    use std::sync::Arc;
    let c = config(vec![
        node("k", None, limited(rate(100, Unit::Day))),
        node("other", None, limited(rate(1, Unit::Day))),
    ]);
    // The default clock: one permit comes back every 864 s.
    let service = ratekeeper_serve::Service::new(Limits::new(&c).unwrap());
    let admitted = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let (service, admitted) = (service.clone(), Arc::clone(&admitted));
                tokio::spawn(async move {
                    for _ in 0..100 {
                        let r = service.check(&ask(&[("k", "v")])).await.unwrap();
                        if r.overall_code == Code::Ok {
                            admitted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        // The same limit for `k` each time; `other` changes, and starts fresh.
        for i in 0..50 {
            let mut next = c.clone();
            if let Some(LimitConfig::Limited(r)) = &mut next.domains[0].descriptors[1].limit {
                r.requests_per_unit = 1 + i % 2;
            }
            service.reload(&next).unwrap();
            tokio::task::yield_now().await;
        }
        for w in workers {
            w.await.unwrap();
        }
    });
    // 400 asks of a limit of 100 a day: exactly 100 admitted, whatever the
    // reloads in between.
    assert_eq!(admitted.load(std::sync::atomic::Ordering::Relaxed), 100);
}

#[test]
fn a_request_refused_before_taking_says_when_its_hits_come_back() {
    let unlimited = Some(LimitConfig::Unlimited { name: None });
    let mut window = rate(3, Unit::Minute);
    window.algorithm = Algorithm::Cycle;
    let (limits, clock) = build(&config(vec![
        node("a", None, limited(rate(2, Unit::Minute))),
        node("w", None, limited(window)),
        node("free", None, unlimited),
    ]));
    let both = |other: &str| {
        CheckRequest::new(
            "d",
            vec![
                Descriptor::new([("a", "x")]),
                Descriptor::new([(other, "y")]),
            ],
        )
    };
    assert_eq!(limits.check(&both("free")).unwrap().overall_code, Code::Ok);
    assert_eq!(limits.check(&both("free")).unwrap().overall_code, Code::Ok);
    clock.advance(Duration::from_secs(20));
    // `a` lacks its permit: the next one is 10 s away (one every 30 s).
    let refused = limits.check(&both("free")).unwrap();
    assert_eq!(
        refused.statuses[0].retry_after,
        Some(Duration::from_secs(10))
    );
    // Beside another counted limit, refused before anything is taken: the
    // same wait, and the window's permit is not taken.
    let refused = limits.check(&both("w")).unwrap();
    assert_eq!(
        refused.statuses[0].retry_after,
        Some(Duration::from_secs(10))
    );
    assert_eq!(refused.statuses[1].limit_remaining, 3);
}

#[test]
fn only_a_limit_that_would_refuse_now_refuses_a_request_before_taking() {
    let mut shadow = node("shadow", None, limited(rate(1, Unit::Minute)));
    shadow.shadow_mode = true;
    let mut held = rate(1, Unit::Second);
    held.max_wait = Duration::from_secs(5);
    let (limits, _) = build(&config(vec![
        shadow,
        node("held", None, limited(held)),
        node("other", None, limited(rate(10, Unit::Minute))),
    ]));
    let with = |first: &str| {
        let r = CheckRequest::new(
            "d",
            vec![
                Descriptor::new([(first, "x")]),
                Descriptor::new([("other", "y")]),
            ],
        );
        limits.check(&r).unwrap()
    };
    assert_eq!(with("shadow").overall_code, Code::Ok);
    assert_eq!(with("held").overall_code, Code::Ok);
    // The shadow limit is over, and never refuses: `other` is taken.
    let r = with("shadow");
    assert!(r.statuses[0].shadow_over_limit);
    assert_eq!(
        (r.overall_code, r.statuses[1].limit_remaining),
        (Code::Ok, 7)
    );
    // The held limit lacks its permit now, but may wait for it: admitted,
    // held 1 s, and `other` is taken.
    let r = with("held");
    assert_eq!((r.overall_code, r.wait), (Code::Ok, Duration::from_secs(1)));
    assert_eq!(r.statuses[1].limit_remaining, 6);
}

#[test]
fn a_descriptor_holding_exactly_its_hits_is_not_over_when_another_refuses() {
    let (limits, _) = build(&config(vec![
        node("a", None, limited(rate(1, Unit::Minute))),
        node("b", None, limited(rate(1, Unit::Minute))),
    ]));
    assert_eq!(code(&limits, &[("a", "x")]), Code::Ok);
    let both = CheckRequest::new(
        "d",
        vec![Descriptor::new([("a", "x")]), Descriptor::new([("b", "y")])],
    );
    let r = limits.check(&both).unwrap();
    assert_eq!(r.overall_code, Code::OverLimit);
    assert_eq!(
        (r.statuses[0].code, r.statuses[1].code),
        (Code::OverLimit, Code::Ok)
    );
    assert_eq!(r.statuses[1].limit_remaining, 1, "b's permit not taken");
}

#[test]
fn a_reload_keeps_the_state_of_prefix_and_nested_limits() {
    let mut api = node("path", Some("/api/*"), limited(rate(1, Unit::Hour)));
    api.descriptors = vec![node("user", None, limited(rate(1, Unit::Hour)))];
    let c = config(vec![
        node("path", Some("/app/*"), limited(rate(5, Unit::Hour))),
        api,
    ]);
    let (limits, _) = build(&c);
    let nested = [("path", "/api/x"), ("user", "u")];
    assert_eq!(code(&limits, &[("path", "/api/x")]), Code::Ok);
    assert_eq!(code(&limits, &nested), Code::Ok);
    let reloaded = limits.reload(&c).unwrap();
    assert_eq!(code(&reloaded, &[("path", "/api/x")]), Code::OverLimit);
    assert_eq!(code(&reloaded, &nested), Code::OverLimit);
    // The prefix node's key and its child's, counted through the tree.
    assert_eq!(reloaded.live_keys(), 2);
}

#[test]
fn each_limit_keeps_at_most_max_keys_and_refuses_a_new_key_when_all_owe() {
    // A cap of one key: one shard, so where a key hashes cannot matter
    // (with more, each shard holds its share of the cap).
    let c = config(vec![node("k", None, limited(rate(1, Unit::Hour)))]);
    let limits = Limits::builder()
        .max_keys(1)
        .build_with_clock(&c, ManualClock::new(0))
        .unwrap();
    assert_eq!(code(&limits, &[("k", "a")]), Code::Ok);
    // The key owes time: a second is refused rather than tracked.
    assert_eq!(code(&limits, &[("k", "b")]), Code::OverLimit);
    assert_eq!(limits.live_keys(), 1);
}

#[test]
fn a_pacer_limit_announces_a_burst_of_one() {
    let mut pacer = rate(30, Unit::Minute);
    pacer.algorithm = Algorithm::Pacer;
    let (limits, _) = build(&config(vec![node("k", None, limited(pacer))]));
    let r = limits.check(&ask(&[("k", "v")])).unwrap();
    assert_eq!(
        header(&r, "ratelimit-policy").as_deref(),
        Some(r#""d/k";q=30;w=60;rk-burst=1"#)
    );
}
