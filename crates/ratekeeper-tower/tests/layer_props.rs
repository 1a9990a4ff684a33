//! Property tests of the layer's decisions and headers over random request
//! schedules, on paused tokio time: per key, admissions never exceed the
//! bucket's bound; a refusal's `Retry-After` is the wait rounded up to
//! whole seconds (asking again that much later is admitted, a second
//! sooner is not); an
//! admitted response's remaining count says whether the next request at
//! the same instant goes.

mod common;

use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

use http::{Request, Response};
use proptest::prelude::*;
use ratekeeper::keyed::Keyed;
use ratekeeper::tokio::TokioClock;
use ratekeeper_tower::{CoreKeyed, HeaderKey, Policy, RateLimitLayer};
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

/// Sends `steps` (key, ms to wait first) through a layer over
/// `refill:rate,1s,capacity=cap,timeout=0s`, one bucket per key, and
/// returns what each key's requests got, in order.
fn run(rate: u32, cap: u32, steps: &[(u8, u64)]) -> HashMap<u8, Vec<Seen>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let text = format!("refill:{rate},1s,capacity={cap},timeout=0s");
        let keyed = Keyed::builder()
            .build_with_clock(&text.parse().unwrap(), TokioClock::new())
            .unwrap();
        let policy = Policy::from_rate("k", f64::from(rate))
            .unwrap()
            .with_burst(cap)
            .unwrap();
        let layer = RateLimitLayer::builder(CoreKeyed::new(keyed, policy))
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn decisions_and_headers_keep_their_promises(
        rate in prop::sample::select(vec![1u32, 4, 10]),
        burst in 1u32..4,
        steps in prop::collection::vec(
            (0u8..3, prop_oneof![3 => Just(0u64), 3 => 0u64..400, 1 => 0u64..3_000]),
            1..120,
        ),
    ) {
        let cap = rate * burst;
        for (key, seen) in run(rate, cap, &steps) {
            let admitted: Vec<u64> = seen.iter().filter(|s| s.admitted).map(|s| s.at_ms).collect();
            // A bucket of `cap` refilled at `rate` a second: within any
            // span, at most cap + rate × span admissions.
            for (i, &a) in admitted.iter().enumerate() {
                for (j, &b) in admitted.iter().enumerate().skip(i) {
                    let bound = u64::from(cap) + u64::from(rate) * (b - a) / 1000;
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
