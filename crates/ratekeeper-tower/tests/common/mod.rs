//! Helpers shared by the test binaries: the header checks, through sfv,
//! and a client request that spoofs `X-Forwarded-For`.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;

/// One List member: its String value and its Integer parameters.
pub type Member = (String, BTreeMap<String, i64>);

/// Parses `value` as an RFC 9651 List of String items with Integer
/// parameters (what draft-11's two fields are); panics on anything else.
pub fn parse_list(value: &str) -> Vec<Member> {
    let list: sfv::List = sfv::Parser::new(value)
        .parse()
        .unwrap_or_else(|e| panic!("{value:?} is not a structured List: {e}"));
    list.into_iter()
        .map(|entry| match entry {
            sfv::ListEntry::Item(item) => {
                let name = item
                    .bare_item
                    .as_string()
                    .unwrap_or_else(|| panic!("{value:?}: member is not a String"))
                    .as_str()
                    .to_owned();
                let params = item
                    .params
                    .iter()
                    .map(|(k, v)| {
                        let n = v
                            .as_integer()
                            .unwrap_or_else(|| panic!("{value:?}: {k:?} not an Integer"));
                        (k.as_str().to_owned(), i64::from(n))
                    })
                    .collect();
                (name, params)
            }
            sfv::ListEntry::InnerList(_) => panic!("{value:?}: inner list"),
        })
        .collect()
}

/// Checks a 429's headers: `Retry-After` whole seconds ≥ 1, and the draft-11
/// fields naming `policy` with `r=0` and `t == Retry-After`. Returns
/// Retry-After.
pub fn check_refusal(headers: &http::HeaderMap, policy: &str) -> u64 {
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(retry >= 1, "Retry-After {retry}");
    let rl = parse_list(headers["ratelimit"].to_str().unwrap());
    let ours = rl.iter().find(|(n, _)| n == policy).expect("our policy");
    assert_eq!(ours.1["r"], 0);
    assert_eq!(ours.1["t"] as u64, retry);
    let pol = parse_list(headers["ratelimit-policy"].to_str().unwrap());
    let p = pol.iter().find(|(n, _)| n == policy).expect("our policy");
    assert!(p.1["q"] >= 1 && p.1["w"] >= 1);
    retry
}

/// Checks a 429's body: an RFC 9457 problem (`application/problem+json`)
/// whose status is 429 and whose detail names `policy` and the retry time
/// in `Retry-After`'s seconds. Returns the problem.
pub fn check_problem(headers: &http::HeaderMap, body: &[u8], policy: &str) -> serde_json::Value {
    assert_eq!(headers["content-type"], "application/problem+json");
    let retry = headers["retry-after"].to_str().unwrap();
    let problem: serde_json::Value = serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("{:?} is not JSON: {e}", String::from_utf8_lossy(body)));
    assert_eq!(problem["status"], 429, "{problem}");
    assert_eq!(problem["title"], "Too Many Requests", "{problem}");
    assert!(problem["type"].is_string(), "{problem}");
    let detail = problem["detail"].as_str().expect("a detail");
    assert!(detail.contains(&format!("{retry} s")), "{detail}");
    assert!(detail.contains(policy), "{detail}");
    assert_eq!(
        problem["retry_after"].as_u64(),
        Some(retry.parse().unwrap())
    );
    problem
}

/// GETs `/` from the server at `addr` with a left-most `X-Forwarded-For`
/// of 203.0.113.9 (a spoof a key read from the connection must ignore);
/// the response's head and whole body.
pub async fn get_spoofed(
    client: &Client<HttpConnector, Empty<Bytes>>,
    addr: SocketAddr,
) -> (http::response::Parts, Bytes) {
    let req = http::Request::get(format!("http://{addr}/"))
        .header("x-forwarded-for", "203.0.113.9")
        .body(Empty::new())
        .unwrap();
    let (parts, body) = client.request(req).await.unwrap().into_parts();
    (parts, body.collect().await.unwrap().to_bytes())
}

/// The Redis server of `REDIS_URL`, or `None` (the test is skipped,
/// reported by [`skipped`]) where there is none. Under CI (`CI` set) a
/// missing server fails the test, so that the Redis tests cannot
/// silently stop running.
pub fn redis_url() -> Option<String> {
    match std::env::var("REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("REDIS_URL is not set under CI: run the tests through scripts/with-redis.sh")
        }
        _ => {
            skipped("no REDIS_URL (run through scripts/with-redis.sh)");
            None
        }
    }
}

/// Reports that the running test skips, for `why`, where the skip cannot
/// pass for a success: a line on the process's stderr written past the
/// test harness's capture (which takes only `print!`/`eprint!`), so that
/// `cargo test` shows it next to the test's "ok" whether the test passes
/// or not; and, where `RATEKEEPER_SKIP_LOG` names a file (scripts/
/// test-all.sh sets it), the same line appended there, for the summary
/// the script prints at its end.
pub fn skipped(why: &str) {
    use std::io::Write;
    let thread = std::thread::current();
    let line = format!(
        "skipped: {} --test {} {}: {why}\n",
        env!("CARGO_PKG_NAME"),
        env!("CARGO_CRATE_NAME"),
        thread.name().unwrap_or("?")
    );
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(path) = std::env::var_os("RATEKEEPER_SKIP_LOG") {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path);
        // One write per line, so that test binaries running at once do not
        // interleave within a line.
        let _ = file.and_then(|mut f| f.write_all(line.as_bytes()));
    }
}

/// A key prefix of its own for one test run.
pub fn unique_prefix(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("rk-tower-test:{name}:{}:{nanos}:", std::process::id())
}

/// A client whose connections come from `ip` (any 127/8 address is this
/// host's loopback).
pub fn client_from(ip: &str) -> Client<HttpConnector, Empty<Bytes>> {
    let mut connector = HttpConnector::new();
    connector.set_local_address(Some(ip.parse().unwrap()));
    Client::builder(hyper_util::rt::TokioExecutor::new()).build(connector)
}
