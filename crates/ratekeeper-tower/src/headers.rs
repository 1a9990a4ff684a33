//! The response headers, serialized by hand: draft-ietf-httpapi-ratelimit-headers-11's
//! `RateLimit` and `RateLimit-Policy` (RFC 9651 structured-field Lists) and
//! `Retry-After` (delay-seconds).
//!
//! Every value written here is a String of printable ASCII (checked when
//! the [`Policy`] is made) or a non-negative Integer, so the
//! output is always a valid field value.

use std::fmt::{self, Write as _};
use std::time::Duration;

use http::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};

use crate::Policy;

/// `RateLimit`: the available quota and effective window of named policies.
pub static RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
/// `RateLimit-Policy`: the quota policies.
pub static RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");

/// The largest Integer a structured field may carry (RFC 9651 §3.3.1).
pub(crate) const SF_INTEGER_MAX: u64 = 999_999_999_999_999;

/// Writes `s` as a structured-field String: quoted, with `"` and `\`
/// escaped. The caller has checked that it is printable ASCII.
pub(crate) fn write_sf_string(f: &mut impl fmt::Write, s: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in s.chars() {
        if c == '"' || c == '\\' {
            f.write_char('\\')?;
        }
        f.write_char(c)?;
    }
    f.write_char('"')
}

/// Whole seconds, rounded up: a `Retry-After` of a 90 ms wait is 1, never 0
/// (tower_governor's `x-ratelimit-after: 0`), and is at least 1 even for
/// a zero wait, since a refused client must not retry at once.
///
/// ```
/// use std::time::Duration;
/// use ratekeeper_tower::headers::retry_after_secs;
///
/// assert_eq!(retry_after_secs(Duration::from_millis(90)), 1);
/// assert_eq!(retry_after_secs(Duration::ZERO), 1);
/// assert_eq!(retry_after_secs(Duration::from_millis(1001)), 2);
/// assert_eq!(retry_after_secs(Duration::from_secs(3)), 3);
/// ```
pub fn retry_after_secs(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.clamp(1, SF_INTEGER_MAX)
}

/// One `RateLimit` list member: `"name";r=R;t=T`.
///
/// ```
/// use ratekeeper_tower::headers::ratelimit_item;
/// use ratekeeper_tower::Policy;
///
/// let policy = Policy::new("default", 100, 60)?;
/// assert_eq!(ratelimit_item(&policy, 50, 30), r#""default";r=50;t=30"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn ratelimit_item(policy: &Policy, remaining: u64, reset_secs: u64) -> String {
    let mut s = String::with_capacity(policy.name().len() + 24);
    // Writing to a String cannot fail.
    let _ = write_sf_string(&mut s, policy.name());
    let _ = write!(
        s,
        ";r={};t={}",
        remaining.min(SF_INTEGER_MAX),
        reset_secs.min(SF_INTEGER_MAX)
    );
    s
}

/// Adds `item` to the List field `name`: appended to a value already
/// there (an inner layer's policy), so that several named policies share
/// one field instead of one clobbering the other.
pub(crate) fn append_list(headers: &mut HeaderMap, name: &HeaderName, item: &str) {
    let value = match headers.get(name).map(HeaderValue::to_str) {
        Some(Ok(old)) if !old.trim().is_empty() => format!("{old}, {item}"),
        _ => item.to_owned(),
    };
    // Every item written is printable ASCII, and so is a to_str'd value.
    if let Ok(v) = HeaderValue::from_str(&value) {
        headers.insert(name.clone(), v);
    }
}

/// The media type of a refusal's body (RFC 9457).
pub(crate) const PROBLEM_JSON: &str = "application/problem+json";

/// A refusal's body: an RFC 9457 problem details object with the status,
/// and the policy and the seconds to wait in the detail and in the
/// `retry_after` extension member:
///
/// ```text
/// {"type":"about:blank","title":"Too Many Requests","status":429,
///  "detail":"Too many requests under the policy \"per-ip\": retry in 1 s.","retry_after":1}
/// ```
pub(crate) fn problem_json(policy: &Policy, retry_after_secs: u64) -> String {
    // The name is printable ASCII: with `"` and `\` escaped, it is a JSON
    // string's content.
    let name = policy.name().replace('\\', "\\\\").replace('"', "\\\"");
    format!(
        "{{\"type\":\"about:blank\",\"title\":\"Too Many Requests\",\"status\":429,\
         \"detail\":\"Too many requests under the policy \\\"{name}\\\": retry in \
         {retry_after_secs} s.\",\"retry_after\":{retry_after_secs}}}"
    )
}

/// Writes a refusal's or an admission's fields.
pub(crate) fn write(
    headers: &mut HeaderMap,
    policy: &Policy,
    policy_value: &HeaderValue,
    remaining: u64,
    reset_secs: u64,
    retry_after: Option<u64>,
) {
    if headers.contains_key(&RATELIMIT_POLICY) {
        // Several named policies in one field; `policy_value` is ours alone.
        if let Ok(ours) = policy_value.to_str() {
            append_list(headers, &RATELIMIT_POLICY, ours);
        }
    } else {
        headers.insert(RATELIMIT_POLICY.clone(), policy_value.clone());
    }
    append_list(
        headers,
        &RATELIMIT,
        &ratelimit_item(policy, remaining, reset_secs),
    );
    if let Some(secs) = retry_after {
        headers.insert(RETRY_AFTER, HeaderValue::from(secs));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_item_joins_the_items_there_and_replaces_a_blank_value() {
        let name = HeaderName::from_static("ratelimit-policy");
        let mut headers = HeaderMap::new();
        append_list(&mut headers, &name, "\"a\";q=1;w=1");
        append_list(&mut headers, &name, "\"b\";q=2;w=1");
        assert_eq!(headers[&name], "\"a\";q=1;w=1, \"b\";q=2;w=1");
        // A value of blanks only holds no item: it is replaced, never
        // left as an empty list member before the new one.
        for blank in ["", "  "] {
            headers.insert(name.clone(), HeaderValue::from_static(blank));
            append_list(&mut headers, &name, "\"c\";q=3;w=1");
            assert_eq!(headers[&name], "\"c\";q=3;w=1", "after {blank:?}");
        }
    }
}
