//! Property tests of the layer's decisions and headers over random request
//! schedules, on paused tokio time: per key, admissions never exceed the
//! bucket's bound; a refusal's `Retry-After` is the wait rounded up to
//! whole seconds (asking again that much later is admitted, a second
//! sooner is not); an
//! admitted response's remaining count says whether the next request at
//! the same instant goes; no `RateLimit` member reports more than the
//! quota its `RateLimit-Policy` announces.

mod common;

use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

use http::{Request, Response};
use proptest::prelude::*;
use ratekeeper::keyed::Keyed;
use ratekeeper::tokio::TokioClock;
use ratekeeper_tower::{CoreKeyed, HeaderKey, KeyedMap, Policy, RateLimitLayer};
use tower::{Service, ServiceBuilder, ServiceExt};

type Svc = tower::util::BoxCloneService<Request<()>, Response<String>, Infallible>;

/// What one request got: its time (ms), status, and its headers' numbers.
#[derive(Debug, Clone, Copy)]
struct Seen {
    at_ms: u64,
    admitted: bool,
    /// `Retry-After` of a refusal.
    retry_after: Option<u64>,
    /// `r` of the `RateLimit` member.
    remaining: i64,
}

/// Sends `steps` (key, ms to wait first) through a layer over a refill
/// bucket of `permits` per `period_s` seconds holding `cap`, one bucket
/// per key, and returns what each key's requests got, in order.
fn run((permits, period_s): (u32, u32), cap: u32, steps: &[(u8, u64)]) -> HashMap<u8, Vec<Seen>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let rate = f64::from(permits) / f64::from(period_s);
        let text = format!("refill:{rate},{period_s}s,capacity={cap},timeout=0s");
        let limit = CoreKeyed::from_builder_with_clock(
            "k",
            Keyed::builder(),
            &text.parse().unwrap(),
            TokioClock::new(),
        )
        .unwrap();
        let layer = RateLimitLayer::builder(limit)
            .key(HeaderKey::new("x-key").unwrap())
            .headers_on_admitted(true)
            .build()
            .unwrap();
        let hello = tower::service_fn(|_: Request<()>| async {
            Ok::<_, Infallible>(Response::new(String::new()))
        });
        let mut svc = Svc::new(ServiceBuilder::new().layer(layer).service(hello));
        let (start, mut seen) = (tokio::time::Instant::now(), HashMap::<u8, Vec<Seen>>::new());
        for &(key, wait_ms) in steps {
            tokio::time::advance(Duration::from_millis(wait_ms)).await;
            let req = Request::builder()
                .header("x-key", key.to_string())
                .body(())
                .unwrap();
            let r = svc.ready().await.unwrap().call(req).await.unwrap();
            let h = r.headers();
            let members = common::parse_list(h["ratelimit"].to_str().unwrap());
            let retry_after = h
                .get("retry-after")
                .map(|v| v.to_str().unwrap().parse().unwrap());
            seen.entry(key).or_default().push(Seen {
                at_ms: start.elapsed().as_millis() as u64,
                admitted: r.status() == 200,
                retry_after,
                remaining: members[0].1["r"],
            });
            assert!(r.status() == 200 || r.status() == 429, "{}", r.status());
        }
        seen
    })
}

/// Which per-key limit the layer asks, and so how it counts `r`.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// The core map of refill buckets: `r` is the key's available permits.
    Refill,
    /// A map of smooth bursty limiters: `r` is the schedule's lower bound.
    Bursty,
}

/// Sends `steps` (key, ms to wait first) through a layer over `kind` at
/// `permits` per `period_ms` with a burst of `burst`, described by
/// `Policy::from_rate(rate).with_burst(burst)`; returns each response's
/// `r` with the `q` and `w` its `RateLimit-Policy` announced.
fn announced(
    kind: Kind,
    (permits, period_ms): (u32, u32),
    burst: u32,
    steps: &[(u8, u64)],
) -> Vec<(i64, i64, i64)> {
    let rate = f64::from(permits) * 1000.0 / f64::from(period_ms);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let policy = Policy::from_rate("k", rate)
            .unwrap()
            .with_burst(burst)
            .unwrap();
        let key = HeaderKey::new("x-key").unwrap();
        let hello = tower::service_fn(|_: Request<()>| async {
            Ok::<_, Infallible>(Response::new(String::new()))
        });
        let mut svc = match kind {
            Kind::Refill => {
                let text = format!(
                    "refill:{rate},{period_ms}ms,capacity={burst},initial={burst},timeout=0s"
                );
                let limit = CoreKeyed::from_builder_with_clock(
                    "k",
                    Keyed::builder(),
                    &text.parse().unwrap(),
                    TokioClock::new(),
                )
                .unwrap();
                let layer = RateLimitLayer::builder(limit)
                    .key(key)
                    .headers_on_admitted(true)
                    .build()
                    .unwrap();
                Svc::new(ServiceBuilder::new().layer(layer).service(hello))
            }
            Kind::Bursty => {
                let text = format!("bursty:{rate},{}", f64::from(burst) / rate);
                let map = KeyedMap::from_config_with_clock(
                    &text.parse().unwrap(),
                    policy,
                    8,
                    TokioClock::new(),
                )
                .unwrap();
                let layer = RateLimitLayer::builder(map)
                    .key(key)
                    .headers_on_admitted(true)
                    .build()
                    .unwrap();
                Svc::new(ServiceBuilder::new().layer(layer).service(hello))
            }
        };
        let mut seen = Vec::new();
        for &(key, wait_ms) in steps {
            tokio::time::advance(Duration::from_millis(wait_ms)).await;
            let req = Request::builder()
                .header("x-key", key.to_string())
                .body(())
                .unwrap();
            let r = svc.ready().await.unwrap().call(req).await.unwrap();
            let h = r.headers();
            let member = &common::parse_list(h["ratelimit"].to_str().unwrap())[0];
            let policy = &common::parse_list(h["ratelimit-policy"].to_str().unwrap())[0];
            seen.push((member.1["r"], policy.1["q"], policy.1["w"]));
        }
        seen
    })
}

/// A rate as permits per period (ms): whole per second or not, and a
/// burst of at least the permits of one period (as a refill bucket
/// needs).
fn rate_and_burst() -> impl Strategy<Value = ((u32, u32), u32)> {
    let period = prop_oneof![Just(1000u32), 100u32..5000];
    (1u32..20, period, 0u32..30)
        .prop_map(|(permits, period, more)| ((permits, period), permits + more))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the rate and the burst, the remaining count a response
    /// reports is within the quota the policy announces, and that quota
    /// over its window is not above the rate.
    #[test]
    fn the_remaining_count_is_within_the_announced_quota(
        kind in prop::sample::select(vec![Kind::Refill, Kind::Bursty]),
        (rate, burst) in rate_and_burst(),
        steps in prop::collection::vec(
            (0u8..2, prop_oneof![4 => Just(0u64), 2 => 0u64..400, 1 => 0u64..5_000]),
            1..60,
        ),
    ) {
        let per_second = f64::from(rate.0) * 1000.0 / f64::from(rate.1);
        for (r, q, w) in announced(kind, rate, burst, &steps) {
            prop_assert!(r <= q && w >= 1, "r={} q={} w={}", r, q, w);
            prop_assert!(q as f64 / w as f64 <= per_second, "q={} w={} rate={}", q, w, per_second);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn decisions_and_headers_keep_their_promises(
        // Permits per period (s): a second's wait or less at 1, 4 and 10
        // a second; up to 2, 4 and 5 s at the slower rates, so a
        // `Retry-After` above 1 is drawn and checked.
        (permits, period_s) in prop::sample::select(vec![(1u32, 1u32), (4, 1), (10, 1), (1, 2), (1, 4), (2, 5)]),
        burst in 1u32..4,
        steps in prop::collection::vec(
            (0u8..3, prop_oneof![3 => Just(0u64), 3 => 0u64..400, 2 => 0u64..3_000, 1 => 0u64..8_000]),
            1..120,
        ),
    ) {
        let cap = permits * burst;
        for (key, seen) in run((permits, period_s), cap, &steps) {
            let admitted: Vec<u64> = seen.iter().filter(|s| s.admitted).map(|s| s.at_ms).collect();
            // A bucket of `cap` refilled by `permits` each `period_s`:
            // within any span, at most cap + permits × span / period
            // admissions.
            for (i, &a) in admitted.iter().enumerate() {
                for (j, &b) in admitted.iter().enumerate().skip(i) {
                    let bound = u64::from(cap) + u64::from(permits) * (b - a) / (1000 * u64::from(period_s));
                    prop_assert!((j - i + 1) as u64 <= bound, "key {}: {:?}", key, admitted);
                }
            }
            for (n, s) in seen.iter().enumerate() {
                if let Some(after) = s.retry_after {
                    prop_assert!(!s.admitted && after >= 1 && s.remaining == 0);
                    // Asked again no sooner than that, with nothing of the
                    // key admitted in between: admitted.
                    // Sooner, by a whole second or more: refused (the
                    // wait is rounded up, never by more than a second).
                    if let Some(next) = seen.get(n + 1) {
                        if next.at_ms >= s.at_ms + after * 1000 {
                            prop_assert!(next.admitted, "key {}: {:?} then {:?}", key, s, next);
                        }
                        if next.at_ms <= s.at_ms + (after - 1) * 1000 {
                            prop_assert!(!next.admitted, "key {}: {:?} then {:?}", key, s, next);
                        }
                    }
                } else {
                    prop_assert!(s.admitted, "a refusal without Retry-After: {:?}", s);
                    prop_assert!(s.remaining >= 0 && s.remaining < i64::from(cap));
                    // The next request of the key at the same instant goes
                    // if and only if a permit remained.
                    if let Some(next) = seen.get(n + 1).filter(|x| x.at_ms == s.at_ms) {
                        prop_assert_eq!(next.admitted, s.remaining >= 1, "key {}: {:?} then {:?}", key, s, next);
                    }
                }
            }
        }
    }
}

/// A refusal of a bucket that refills one permit each 4 s, emptied just
/// now, says to come back in 4 s; back 3 s later it is refused again
/// (now in 1 s), and back when told it is admitted.
#[test]
fn retry_after_counts_the_whole_wait() {
    let steps = [(0, 0), (0, 0), (0, 3_000), (0, 1_000)];
    let seen = &run((1, 4), 1, &steps)[&0];
    let got: Vec<(bool, Option<u64>)> = seen.iter().map(|s| (s.admitted, s.retry_after)).collect();
    assert_eq!(
        got,
        [
            (true, None),
            (false, Some(4)),
            (false, Some(1)),
            (true, None)
        ]
    );
}
