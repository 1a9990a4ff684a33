//! `POST /v1/check`'s plain form.
//!
//! The request names a domain and either descriptors, each a list of
//! `[key, value]` pairs, or one `key` and `value` (a descriptor of one
//! entry); `permits` (default 1; 0 asks without taking) is taken from each;
//! `max_wait` (`"250ms"`, or seconds as a number) is the longest the caller
//! will wait, at most each limit's own:
//!
//! ```text
//! {"domain": "api", "key": "user", "value": "alice", "permits": 1, "max_wait": "250ms"}
//! {"domain": "api", "descriptors": [[["user", "alice"], ["path", "/upload"]]]}
//! ```
//!
//! The answer comes at once. `allowed` says whether the permits were taken;
//! if so, the caller goes after `wait_secs`. `remaining` is the fewest
//! permits left and `reset_secs` the longest time until a key is as fresh
//! (over the descriptors with a counted limit); a refusal adds
//! `retry_after_secs` when known. `statuses` gives each descriptor's:
//!
//! ```text
//! {"allowed": true, "wait_secs": 0.0, "remaining": 99, "reset_secs": 0.6,
//!  "retry_after_secs": null,
//!  "statuses": [{"limit": "api/user", "allowed": true, "remaining": 99,
//!                "reset_secs": 0.6, "retry_after_secs": null}]}
//! ```

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::check::{CheckRequest, CheckResponse, Code, Descriptor, DescriptorStatus};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    domain: String,
    #[serde(default)]
    descriptors: Option<Vec<Vec<(String, String)>>>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    value: Option<String>,
    #[serde(default)]
    permits: Option<u64>,
    #[serde(default)]
    max_wait: Option<Wait>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Wait {
    Secs(f64),
    Text(String),
}

/// Reads a plain check.
///
/// # Errors
///
/// What is wrong with the body, for a 400.
///
/// ```
/// use std::time::Duration;
/// use ratekeeper_serve::http::plain::parse_request;
///
/// let r = parse_request(br#"{"domain":"api","key":"user","value":"a","max_wait":0.25}"#)?;
/// assert_eq!(r.descriptors[0].entries, [("user".to_owned(), "a".to_owned())]);
/// assert_eq!(r.max_wait, Some(Duration::from_millis(250)));
/// assert!(parse_request(br#"{"domain":"api","key":"user"}"#).is_err());
/// # Ok::<(), String>(())
/// ```
pub fn parse_request(body: &[u8]) -> Result<CheckRequest, String> {
    let r: Request = serde_json::from_slice(body).map_err(|e| format!("not a check: {e}"))?;
    let permits = r.permits.unwrap_or(1);
    let descriptors = match (r.descriptors, r.key, r.value) {
        (Some(d), None, None) => d,
        (None, Some(key), Some(value)) => vec![vec![(key, value)]],
        (None, Some(_), None) => return Err("`key` needs a `value`".into()),
        (None, None, _) => return Err("name `descriptors`, or a `key` and a `value`".into()),
        (Some(_), _, _) => return Err("name `descriptors` or a `key`, not both".into()),
    };
    let max_wait = r.max_wait.map(|w| wait(&w)).transpose()?;
    Ok(CheckRequest {
        domain: r.domain,
        descriptors: descriptors
            .into_iter()
            .map(|entries| Descriptor {
                entries,
                hits_addend: Some(permits),
            })
            .collect(),
        hits_addend: 1,
        max_wait,
    })
}

fn wait(w: &Wait) -> Result<Duration, String> {
    match w {
        Wait::Secs(s) => Duration::try_from_secs_f64(*s)
            .map_err(|_| format!("max_wait {s} is not a number of seconds from 0 up")),
        Wait::Text(t) => humantime::parse_duration(t)
            .map_err(|e| format!("max_wait {t:?} is not a duration such as \"250ms\": {e}")),
    }
}

#[derive(Serialize)]
struct Response {
    allowed: bool,
    wait_secs: f64,
    remaining: Option<u32>,
    reset_secs: Option<f64>,
    retry_after_secs: Option<f64>,
    statuses: Vec<Status>,
}

#[derive(Serialize)]
struct Status {
    limit: Option<String>,
    allowed: bool,
    remaining: Option<u32>,
    reset_secs: Option<f64>,
    retry_after_secs: Option<f64>,
}

/// Writes the answer to a plain check.
pub fn response_body(response: &CheckResponse) -> String {
    let statuses: Vec<Status> = response.statuses.iter().map(status).collect();
    let counted = || statuses.iter().filter(|s| s.limit.is_some());
    let body = Response {
        allowed: response.overall_code == Code::Ok,
        wait_secs: response.wait.as_secs_f64(),
        remaining: counted().filter_map(|s| s.remaining).min(),
        reset_secs: counted()
            .filter_map(|s| s.reset_secs)
            .max_by(f64::total_cmp),
        retry_after_secs: counted()
            .filter_map(|s| s.retry_after_secs)
            .max_by(f64::total_cmp),
        statuses,
    };
    // Plain structs of strings and numbers always serialize.
    serde_json::to_string(&body).unwrap_or_default()
}

fn status(s: &DescriptorStatus) -> Status {
    let counted = s.limit_id().is_some();
    Status {
        limit: s.limit_id().map(str::to_owned),
        allowed: s.code == Code::Ok,
        remaining: counted.then_some(s.limit_remaining),
        reset_secs: counted.then_some(s.duration_until_reset.as_secs_f64()),
        retry_after_secs: s.retry_after.map(|d| d.as_secs_f64()),
    }
}
