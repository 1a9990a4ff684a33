//! Property tests of what the layer parses and writes: every input a
//! client or a configuration can give is refused with a typed error or
//! handled, never a panic, and every field written parses as RFC 9651
//! structured fields.

mod common;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use http::HeaderValue;
use proptest::prelude::*;
use ratekeeper_tower::headers::{ratelimit_item, retry_after_secs};
use ratekeeper_tower::key::{HeaderKey, KeyError, KeyExtractor, RequestHead, RightmostTrusted};
use ratekeeper_tower::{ConfigError, IpNet, Policy};

/// The largest Integer a structured field may carry (RFC 9651 §3.3.1).
const SF_INTEGER_MAX: u64 = 999_999_999_999_999;

/// Addresses of every kind the layer must tell apart: IPv4, IPv6, and
/// IPv4 written in IPv6 (mapped, NAT64).
fn any_ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        any::<Ipv4Addr>().prop_map(IpAddr::V4),
        any::<Ipv6Addr>().prop_map(IpAddr::V6),
        any::<Ipv4Addr>().prop_map(|a| IpAddr::V6(a.to_ipv6_mapped())),
        any::<Ipv4Addr>().prop_map(|a| {
            IpAddr::V6(Ipv6Addr::from_bits(
                (0x64_ff9b_u128 << 96) | u128::from(a.to_bits()),
            ))
        }),
    ]
}

/// A number: small, up to the largest field Integer, or anywhere in `u64`.
fn count() -> impl Strategy<Value = u64> {
    prop_oneof![1u64..10_000, 1u64..=SF_INTEGER_MAX, any::<u64>()]
}

/// A `Forwarded` element a client could write: parameters whose quoted
/// values hold what a comma-first split would misread.
fn forwarded_element() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        "[a-zA-Z0-9._-]{1,12}",
        any::<Ipv4Addr>().prop_map(|a| a.to_string()),
        r#"([ !#-\[\]-~]|\\["\\]){0,16}"#.prop_map(|q| format!("\"{q}\"")),
        Just(r#""x,for=6.6.6.6;y=""#.to_owned()),
    ];
    // Each parameter at most once per element.
    prop::collection::btree_map("for|by|host|proto|[a-z]{1,3}", value, 0..3).prop_map(|pairs| {
        let pairs: Vec<String> = pairs.iter().map(|(n, v)| format!("{n}={v}")).collect();
        pairs.join(";")
    })
}

fn request(name: &str, values: &[String]) -> Option<http::Request<()>> {
    let mut b = http::Request::builder();
    for v in values {
        b = b.header(name, HeaderValue::from_str(v).ok()?);
    }
    b.body(()).ok()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A policy that builds announces itself as a one-member List whose
    /// String and Integers are the policy's own.
    #[test]
    fn a_policy_field_is_a_structured_list(
        name in "[ -~]{0,40}", quota in count(), window in count(), burst in 1u32..,
    ) {
        let Ok(policy) = Policy::new(name.clone(), quota, window) else { return Ok(()) };
        let text = policy.to_string();
        prop_assert_eq!(
            &common::parse_list(&text)[0].1,
            &[("q", quota as i64), ("w", window as i64), ("rk-burst", 1)]
                .map(|(k, v)| (k.to_owned(), v))
                .into(),
        );
        // A burst the field could not carry is refused (see below).
        let Ok(policy) = policy.with_burst(burst) else { return Ok(()) };
        let text = policy.to_string();
        prop_assert!(HeaderValue::from_str(&text).is_ok(), "{text:?}");
        let list = common::parse_list(&text);
        prop_assert_eq!(list.len(), 1);
        let (parsed, params) = &list[0];
        prop_assert_eq!(parsed, &name);
        prop_assert_eq!(params["q"] as u64, policy.quota());
        prop_assert_eq!(params["w"] as u64, policy.window());
        prop_assert_eq!(params["rk-burst"] as u64, u64::from(burst));
    }

    /// A burst is within the announced quota, at the rate the policy was
    /// made with: the quota becomes the least multiple of the given one
    /// that holds the burst, the window grows by the same factor, or the
    /// burst is refused when the field could not carry them. Checked
    /// against what those numbers must satisfy, not the division that
    /// finds them.
    #[test]
    fn the_announced_quota_holds_the_burst(quota in count(), window in count(), burst in 1u32..) {
        let Ok(policy) = Policy::new("p", quota, window) else { return Ok(()) };
        let (q, w, burst) = (u128::from(quota), u128::from(window), u128::from(burst as u64));
        let max = u128::from(SF_INTEGER_MAX);
        match policy.clone().with_burst(burst as u32) {
            Ok(b) => {
                let (bq, bw) = (u128::from(b.quota()), u128::from(b.window()));
                // A multiple of the quota, the window scaled alike: the
                // same rate.
                prop_assert!(bq % q == 0 && bw == w * (bq / q), "{}/{} -> {}/{}", q, w, bq, bw);
                // Holds the burst, and no smaller multiple does.
                prop_assert!(bq >= burst && bq < burst + q, "{} -> {} for {}", q, bq, burst);
                prop_assert!(bq.max(bw) <= max);
                prop_assert_eq!(b.interval_nanos(), policy.interval_nanos());
                prop_assert_eq!(u128::from(b.burst()), burst);
            }
            Err(e) => {
                prop_assert!(matches!(e, ConfigError::QuotaTooLarge { .. }), "{:?}", e);
                // Scaling was needed, and the least factor that holds the
                // burst, under burst / quota + 1, put the quota or the
                // window above the largest Integer.
                prop_assert!(q < burst);
                prop_assert!(q.max(w) * (burst + q) > max * q, "{}/{} for {}", q, w, burst);
            }
        }
    }

    /// A permit's time is the window over the quota in nanoseconds,
    /// rounded down, at least 1 and saturated: the largest whole `n` with
    /// `n × quota <= window × 1e9`.
    #[test]
    fn a_permit_is_worth_its_share_of_the_window(quota in count(), window in count()) {
        let Ok(policy) = Policy::new("p", quota, window) else { return Ok(()) };
        let n = u128::from(policy.interval_nanos());
        let (q, total) = (u128::from(quota), u128::from(window) * 1_000_000_000);
        if n == u128::from(u64::MAX) {
            prop_assert!(n * q <= total);
        } else if n == 1 {
            prop_assert!(2 * q > total);
        } else {
            prop_assert!(n * q <= total && (n + 1) * q > total, "{} ns for {}/{}", n, quota, window);
        }
    }
    /// Any rate is a policy whose field parses, or a typed error; the
    /// policy's rate is never above it, and within 0.1 % of it but for
    /// rates that no window up to an hour carries.
    #[test]
    fn any_rate_is_a_valid_policy_or_refused(
        rate in prop_oneof![
            any::<f64>(),
            1e-9f64..1e-3,
            1e-3f64..1.0,
            1.0f64..1e6,
            (1u32..1000, 1u32..1000).prop_map(|(n, d)| f64::from(n) / f64::from(d)),
        ],
    ) {
        if let Ok(policy) = Policy::from_rate("r", rate) {
            let list = common::parse_list(&policy.to_string());
            let (q, w) = (list[0].1["q"], list[0].1["w"]);
            prop_assert!(q >= 1 && w >= 1);
            prop_assert!(q as f64 / w as f64 <= rate, "q={} w={} rate={}", q, w, rate);
            // Exactly 0.1 % under counts as within (275/333 a second is
            // 33 per 40 s): a rounding's slack below that.
            if w < 3600 && rate >= 1.0 / 3600.0 {
                let least = rate * (1.0 - 1e-3) * (1.0 - 1e-12);
                prop_assert!(q as f64 / w as f64 >= least, "q={} w={} rate={}", q, w, rate);
            }
        }
    }

    /// `RateLimit` members parse whatever the numbers, clamped to the
    /// largest Integer a field carries.
    #[test]
    fn a_ratelimit_member_parses(remaining in any::<u64>(), reset in any::<u64>()) {
        let policy = Policy::new("p", 10, 1).unwrap();
        let list = common::parse_list(&ratelimit_item(&policy, remaining, reset));
        prop_assert_eq!(list[0].1["r"] as u64, remaining.min(SF_INTEGER_MAX));
        prop_assert_eq!(list[0].1["t"] as u64, reset.min(SF_INTEGER_MAX));
    }

    /// `Retry-After` is whole seconds, at least 1, never before the wait
    /// ends and less than a second after it.
    #[test]
    fn retry_after_rounds_up(secs in 0u64..=SF_INTEGER_MAX, nanos in 0u32..1_000_000_000) {
        let wait = Duration::new(secs, nanos);
        let after = retry_after_secs(wait);
        prop_assert!(after >= 1);
        prop_assert!(Duration::from_secs(after) >= wait);
        prop_assert!(after == 1 || Duration::from_secs(after - 1) < wait);
    }

    /// Any text as a trusted network: a network or a typed error.
    #[test]
    fn any_text_is_a_network_or_refused(text in "[0-9a-fA-F:./ %\\[\\]]{0,48}|.{0,48}") {
        let _ = text.parse::<IpNet>();
    }

    /// A network prints as text that parses back to it, and holds the
    /// address it was made from (an IPv4-mapped address counts as IPv4, so
    /// only an IPv6 network of under 96 bits, which is not an IPv4 one,
    /// does not hold it).
    #[test]
    fn a_network_prints_as_it_parses(ip in any_ip(), prefix in 0u8..=128) {
        let Ok(net) = IpNet::new(ip, prefix) else {
            prop_assert!(ip.is_ipv4() && prefix > 32);
            return Ok(());
        };
        prop_assert_eq!(net.to_string().parse::<IpNet>(), Ok(net), "{}", net);
        prop_assert_eq!(format!("{ip}/{prefix}").parse::<IpNet>(), Ok(net));
        let mapped = matches!(ip, IpAddr::V6(a) if a.to_ipv4_mapped().is_some());
        prop_assert!(net.contains(ip) || (mapped && prefix < 96), "{} in {}", ip, net);
    }

    /// Any header name: an extractor or a typed error.
    #[test]
    fn any_header_name_is_a_key_or_refused(name in ".{0,24}") {
        let _ = HeaderKey::new(&name);
    }

    /// Whatever a client writes in front of its address, the key is the
    /// right-most hop the trusted proxies did not add, even when they quote
    /// text of the client's into their own elements. In `Forwarded`,
    /// text that is not a list of elements (RFC 7239) makes the whole
    /// field a malformed key, never another address: the client cannot
    /// move where the proxies' elements begin.
    #[test]
    fn the_rightmost_untrusted_hop_is_the_key(
        written in prop::collection::vec("[ -~]{0,24}", 0..4),
        elements in prop::collection::vec(forwarded_element(), 0..4),
        client in any::<Ipv4Addr>().prop_filter("outside 10/8", |a| a.octets()[0] != 10),
        proxies in prop::collection::vec(any::<[u8; 3]>(), 0..4),
    ) {
        let proxies: Vec<String> =
            proxies.iter().map(|[a, b, c]| format!("10.{a}.{b}.{c}")).collect();
        let xff = RightmostTrusted::x_forwarded_for(["10.0.0.0/8"]).unwrap();
        let fwd = RightmostTrusted::forwarded(["10.0.0.0/8"]).unwrap();
        let mut chain = written.clone();
        chain.push(client.to_string());
        chain.extend(proxies.iter().cloned());
        if let Some(r) = request("x-forwarded-for", &[chain.join(", ")]) {
            prop_assert_eq!(xff.extract(&RequestHead::of(&r)), Ok(IpAddr::V4(client)));
        }
        // The first proxy quotes what the client sent as its Host (escaping
        // quotes and backslashes) into its own element.
        let host: String = written
            .concat()
            .chars()
            .flat_map(|c| (c == '"' || c == '\\').then_some('\\').into_iter().chain([c]))
            .collect();
        let first = format!("for={client};proto=https;host=\"{host}\"");
        let ours: Vec<String> = std::iter::once(first)
            .chain(proxies.iter().map(|p| format!("for=\"{p}:443\"")))
            .collect();
        // Elements the client wrote: the key is its address.
        let field = [elements, ours.clone()].concat().join(", ");
        if let Some(r) = request("forwarded", &[field]) {
            prop_assert_eq!(fwd.extract(&RequestHead::of(&r)), Ok(IpAddr::V4(client)));
        }
        // Any text: its address, or no key.
        let field = [written, ours].concat().join(", ");
        if let Some(r) = request("forwarded", &[field]) {
            let key = fwd.extract(&RequestHead::of(&r));
            prop_assert!(
                key == Ok(IpAddr::V4(client)) || key == Err(KeyError::Malformed),
                "{:?}", key
            );
        }
    }

    /// Any header values at all: a key or a typed error.
    #[test]
    fn any_forwarding_header_is_a_key_or_an_error(
        values in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..3),
        prefix in 0u8..=128,
    ) {
        let xff = RightmostTrusted::x_forwarded_for(["10.0.0.0/8", "::1"]).unwrap();
        let fwd = RightmostTrusted::forwarded(["10.0.0.0/8"]).unwrap().ipv6_prefix(prefix).unwrap();
        for name in ["x-forwarded-for", "forwarded"] {
            let mut b = http::Request::builder();
            for v in &values {
                if let Ok(v) = HeaderValue::from_bytes(v) {
                    b = b.header(name, v);
                }
            }
            let r = b.body(()).unwrap();
            let _ = (xff.extract(&RequestHead::of(&r)), fwd.extract(&RequestHead::of(&r)));
        }
    }
}

/// Exact cases of the policy arithmetic, worked by hand.
#[test]
fn policy_arithmetic_by_hand() {
    let qw = |q, w, burst| {
        Policy::new("p", q, w)
            .unwrap()
            .with_burst(burst)
            .map(|p| (p.quota(), p.window()))
    };
    assert_eq!(qw(10, 1, 1), Ok((10, 1)));
    assert_eq!(qw(10, 1, 10), Ok((10, 1)));
    assert_eq!(qw(10, 1, 11), Ok((20, 2)));
    assert_eq!(qw(3, 2, 7), Ok((9, 6)));
    assert_eq!(qw(1, 7, 5), Ok((5, 35)));
    assert_eq!(qw(SF_INTEGER_MAX, 1, 1), Ok((SF_INTEGER_MAX, 1)));
    assert_eq!(qw(1, SF_INTEGER_MAX, 1), Ok((1, SF_INTEGER_MAX)));
    assert!(matches!(
        qw(1, SF_INTEGER_MAX, 2),
        Err(ConfigError::QuotaTooLarge { .. })
    ));
    let rate = |rate| Policy::from_rate("p", rate).map(|p| (p.quota(), p.window()));
    assert_eq!(rate(275.0 / 333.0), Ok((33, 40)));
    // One ulp under 3/13: 13 × rate rounds up to 3, which would announce
    // a rate above the one given; the next window that fits is 77 per 334 s.
    let under = f64::from_bits((3.0f64 / 13.0).to_bits() - 1);
    assert_eq!(rate(under), Ok((77, 334)));
    // Under one an hour: one over the shortest window not above the rate.
    assert_eq!(rate(1.0 / 7200.0), Ok((1, 7200)));
    assert_eq!(rate(1.0 / 7200.5), Ok((1, 7201)));
    // One ulp under 1/4097: its inverse rounds to 4097, whose 1/4097 is
    // above the rate, so the window is 4098.
    let under = f64::from_bits((1.0f64 / 4097.0).to_bits() - 1);
    assert_eq!(rate(under), Ok((1, 4098)));
    // The longest window a field carries, and one past it.
    assert_eq!(rate(1.0 / SF_INTEGER_MAX as f64), Ok((1, SF_INTEGER_MAX)));
    assert_eq!(
        rate(1e-15),
        Err(ConfigError::QuotaTooLarge {
            quota: 1,
            window: u64::MAX
        })
    );
    // The largest rate a field carries is announced as it is; one above
    // it is refused before any quota is computed.
    assert_eq!(rate(SF_INTEGER_MAX as f64), Ok((SF_INTEGER_MAX, 1)));
    assert_eq!(
        rate(1e15),
        Err(ConfigError::QuotaTooLarge {
            quota: u64::MAX,
            window: 1
        })
    );
    let nanos = |q, w| Policy::new("p", q, w).unwrap().interval_nanos();
    assert_eq!(nanos(10, 1), 100_000_000);
    assert_eq!(nanos(3, 1), 333_333_333);
    assert_eq!(nanos(2, 3), 1_500_000_000);
    assert_eq!(nanos(SF_INTEGER_MAX, 1), 1);
    assert_eq!(nanos(1, SF_INTEGER_MAX), u64::MAX);
}

#[test]
fn refill_time_is_the_burst_times_the_interval() {
    let p = |q, w, burst| Policy::new("p", q, w).unwrap().with_burst(burst).unwrap();
    assert_eq!(p(10, 1, 5).refill_time(), Duration::from_millis(500));
    assert_eq!(p(3, 1, 1).refill_time(), Duration::from_nanos(333_333_333));
    assert_eq!(p(1, 2, 3).refill_time(), Duration::from_secs(6));
}
