//! Envoy's `RateLimitRequest` and `RateLimitResponse` in protobuf's JSON
//! mapping, as envoyproxy/ratelimit's `/json` reads and writes them.
//!
//! Requests take the JSON names (`hitsAddend`) or the proto names
//! (`hits_addend`), integers as numbers or strings, and refuse unknown
//! fields, as protobuf's JSON parser does. A descriptor's `limit` override
//! is refused: limits come from the config. Responses use the JSON names,
//! leave out fields at their default (zero, empty), write enums by name and
//! durations as seconds (`"1.500s"`), as protobuf's JSON printer does:
//!
//! ```
//! use ratekeeper_serve::http::proto_json::parse_request;
//!
//! let r = parse_request(br#"{"domain":"api","descriptors":[{"entries":[{"key":"user","value":"a"}]}],"hits_addend":"2"}"#)?;
//! assert_eq!((r.domain.as_str(), r.hits_addend), ("api", 2));
//! assert!(parse_request(b"not json").is_err());
//! # Ok::<(), String>(())
//! ```

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::check::{CheckRequest, CheckResponse, Code, Descriptor, DescriptorStatus};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    #[serde(default)]
    domain: String,
    #[serde(default)]
    descriptors: Vec<RequestDescriptor>,
    #[serde(default, rename = "hitsAddend", alias = "hits_addend")]
    hits_addend: Option<Integer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestDescriptor {
    #[serde(default)]
    entries: Vec<Entry>,
    #[serde(default)]
    limit: Option<serde_json::Value>,
    #[serde(default, rename = "hitsAddend", alias = "hits_addend")]
    hits_addend: Option<Integer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    #[serde(default)]
    key: String,
    #[serde(default)]
    value: String,
}

/// A protobuf JSON integer: a number or a decimal string.
#[derive(Deserialize)]
#[serde(untagged)]
enum Integer {
    Number(u64),
    Text(String),
}

impl Integer {
    fn get(&self, field: &str) -> Result<u64, String> {
        match self {
            Integer::Number(n) => Ok(*n),
            Integer::Text(t) => t
                .parse()
                .map_err(|_| format!("{field} {t:?} is not an unsigned integer")),
        }
    }
}

/// Reads a `RateLimitRequest`.
///
/// # Errors
///
/// What is wrong with the body, for a 400.
pub fn parse_request(body: &[u8]) -> Result<CheckRequest, String> {
    let request: Request =
        serde_json::from_slice(body).map_err(|e| format!("not a RateLimitRequest: {e}"))?;
    let hits_addend = match &request.hits_addend {
        None => 0,
        Some(h) => {
            let h = h.get("hitsAddend")?;
            u32::try_from(h).map_err(|_| format!("hitsAddend {h} is above a uint32"))?
        }
    };
    let mut descriptors = Vec::with_capacity(request.descriptors.len());
    for (i, d) in request.descriptors.into_iter().enumerate() {
        if d.limit.is_some() {
            return Err(format!(
                "descriptor {i} has a limit override: limits come from the config, \
                 leave `limit` out"
            ));
        }
        let hits_addend = match &d.hits_addend {
            None => None,
            Some(h) => Some(h.get("hitsAddend")?),
        };
        descriptors.push(Descriptor {
            entries: d.entries.into_iter().map(|e| (e.key, e.value)).collect(),
            hits_addend,
        });
    }
    Ok(CheckRequest {
        domain: request.domain,
        descriptors,
        hits_addend,
        max_wait: None,
    })
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    overall_code: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    statuses: Vec<Status>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    response_headers_to_add: Vec<Header>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    code: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    current_limit: Option<Limit>,
    #[serde(skip_serializing_if = "is_zero")]
    limit_remaining: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_until_reset: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Limit {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    requests_per_unit: u32,
    unit: &'static str,
}

#[derive(Serialize)]
struct Header {
    key: String,
    value: String,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Writes a `RateLimitResponse`.
pub fn response_body(response: &CheckResponse) -> String {
    let body = Response {
        overall_code: code_name(response.overall_code),
        statuses: response.statuses.iter().map(status).collect(),
        response_headers_to_add: response
            .response_headers()
            .into_iter()
            .map(|(key, value)| Header { key, value })
            .collect(),
    };
    // Plain structs of strings and integers always serialize.
    serde_json::to_string(&body).unwrap_or_default()
}

fn status(s: &DescriptorStatus) -> Status {
    Status {
        code: code_name(s.code),
        current_limit: s.current_limit().map(|l| Limit {
            name: l.name.clone(),
            requests_per_unit: l.requests_per_unit,
            unit: l.unit.as_proto_name(),
        }),
        limit_remaining: s.limit_remaining,
        duration_until_reset: (!s.duration_until_reset.is_zero())
            .then(|| proto_duration(s.duration_until_reset)),
    }
}

fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::OverLimit => "OVER_LIMIT",
    }
}

/// A `google.protobuf.Duration` in JSON: seconds with 0, 3, 6 or 9
/// fractional digits and an `s`.
///
/// ```
/// use std::time::Duration;
/// use ratekeeper_serve::http::proto_json::proto_duration;
///
/// assert_eq!(proto_duration(Duration::from_secs(3)), "3s");
/// assert_eq!(proto_duration(Duration::from_millis(1500)), "1.500s");
/// assert_eq!(proto_duration(Duration::from_micros(1)), "0.000001s");
/// assert_eq!(proto_duration(Duration::from_nanos(7)), "0.000000007s");
/// ```
pub fn proto_duration(d: Duration) -> String {
    let (secs, nanos) = (d.as_secs(), d.subsec_nanos());
    if nanos == 0 {
        format!("{secs}s")
    } else if nanos % 1_000_000 == 0 {
        format!("{secs}.{:03}s", nanos / 1_000_000)
    } else if nanos % 1_000 == 0 {
        format!("{secs}.{:06}s", nanos / 1_000)
    } else {
        format!("{secs}.{nanos:09}s")
    }
}
