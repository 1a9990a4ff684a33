//! Checking one file's YAML tree against the config's shape, by hand, so
//! that every error points at the line of the item at fault.

use std::collections::HashMap;
use std::time::Duration;

use saphyr::{MarkedYaml, ScalarStyle, YamlData, YamlLoader};
use saphyr_parser::Parser;

use super::load::{ConfigErrorKind, ConfigFileError};
use super::{
    Algorithm, DescriptorConfig, DomainConfig, FailurePolicy, LimitConfig, RateLimitConfig, Unit,
};

type Node<'a> = MarkedYaml<'a>;

/// The top level's fields.
const ROOT: &[&str] = &["domain", "descriptors"];
/// A descriptor's fields: envoyproxy/ratelimit's, then ratekeeper's.
const DESCRIPTOR: &[&str] = &[
    "key",
    "value",
    "rate_limit",
    "shadow_mode",
    "descriptors",
    "detailed_metric",
    "value_to_metric",
    "algorithm",
    "burst",
    "max_wait",
    "on_redis_failure",
];
/// envoyproxy/ratelimit's descriptor fields that ratekeeper refuses.
const DESCRIPTOR_REFUSED: &[(&str, &str)] = &[(
    "share_threshold",
    "remove it and give each value its own descriptor",
)];
/// A `rate_limit`'s fields.
const RATE_LIMIT: &[&str] = &["unit", "requests_per_unit", "unlimited", "name"];
/// envoyproxy/ratelimit's `rate_limit` fields that ratekeeper refuses.
const RATE_LIMIT_REFUSED: &[(&str, &str)] = &[(
    "replaces",
    "remove it; every limit that matches a request applies",
)];
/// ratekeeper's additions, which need a counted `rate_limit`.
const ADDITIONS: &[&str] = &["algorithm", "burst", "max_wait", "on_redis_failure"];
const UNITS: &str = "second, minute, hour, day, week, month, year";
/// Nesting deeper than this is surely a mistake (and bounds the recursion).
const MAX_DEPTH: usize = 64;

/// Parses one file's text into its domain and the line of its `domain`.
pub(super) fn parse_domain(
    text: &str,
    source: &str,
) -> Result<(DomainConfig, usize), ConfigFileError> {
    let check = Check { source };
    let docs = check.load(text)?;
    let root = match docs.as_slice() {
        [] => return Err(check.invalid(1, EMPTY)),
        [root] => root,
        [_, second, ..] => {
            return Err(check.error(
                ConfigErrorKind::Syntax,
                line_of(second),
                "a second YAML document (after `---`): a file holds one domain; \
                 put each domain in its own file",
            ))
        }
    };
    check.domain(root)
}

const EMPTY: &str = "the file is empty: write `domain: NAME` and its `descriptors`";

/// The file being checked, for errors.
struct Check<'s> {
    source: &'s str,
}

/// A mapping's fields by name, each with the line of its name.
struct Fields<'n, 'a> {
    entries: Vec<(&'n str, usize, &'n Node<'a>)>,
}

impl<'n, 'a> Fields<'n, 'a> {
    fn get(&self, name: &str) -> Option<(usize, &'n Node<'a>)> {
        self.entries
            .iter()
            .find(|(n, ..)| *n == name)
            .map(|&(_, line, node)| (line, node))
    }
}

/// A `rate_limit` before ratekeeper's additions are applied.
enum BaseLimit {
    Unlimited(Option<String>),
    Counted {
        name: Option<String>,
        unit: Unit,
        requests_per_unit: u32,
    },
}

impl<'s> Check<'s> {
    fn error(
        &self,
        kind: ConfigErrorKind,
        line: usize,
        message: impl Into<String>,
    ) -> ConfigFileError {
        ConfigFileError::new(kind, self.source, line, message)
    }

    fn invalid(&self, line: usize, message: impl Into<String>) -> ConfigFileError {
        self.error(ConfigErrorKind::Invalid, line, message)
    }

    /// Parses the YAML, keeping each scalar as written.
    fn load<'a>(&self, text: &'a str) -> Result<Vec<Node<'a>>, ConfigFileError> {
        let mut loader: YamlLoader<'a, Node<'a>> = YamlLoader::default();
        loader.early_parse(false);
        let mut parser = Parser::new_from_str(text);
        let scanned = parser.load(&mut loader, true);
        let failed = scanned.err().or_else(|| loader.error().cloned());
        if let Some(e) = failed {
            let fix = if e.info().contains("duplicated key") {
                "keep one of the two"
            } else {
                "check the indentation, the `key: value` pairs and the quoting here"
            };
            return Err(self.error(
                ConfigErrorKind::Syntax,
                e.marker().line().clamp(1, last_line(text)),
                format!("invalid YAML: {}: {fix}", e.info()),
            ));
        }
        Ok(loader.into_documents())
    }

    fn domain(&self, root: &Node<'_>) -> Result<(DomainConfig, usize), ConfigFileError> {
        let fields = self.fields(root, "the file", ROOT, &[])?;
        let Some((line, node)) = fields.get("domain") else {
            return Err(self.invalid(
                line_of(root),
                "the file has no `domain`: add `domain: NAME` at the top",
            ));
        };
        let domain = self.required_string(node, "domain", line)?;
        let descriptors = match fields.get("descriptors") {
            Some((_, list)) => self.descriptors(list, 1)?,
            None => Vec::new(),
        };
        let config = DomainConfig {
            domain,
            descriptors,
            source: self.source.to_owned(),
        };
        Ok((config, line))
    }

    /// A mapping's fields, each checked against `allowed` and `refused`.
    fn fields<'n, 'a>(
        &self,
        node: &'n Node<'a>,
        what: &str,
        allowed: &[&str],
        refused: &[(&str, &str)],
    ) -> Result<Fields<'n, 'a>, ConfigFileError> {
        let YamlData::Mapping(map) = &node.data else {
            return Err(self.invalid(
                line_of(node),
                format!(
                    "{what} must be a mapping of fields ({}), not {}",
                    allowed.join(", "),
                    kind_name(node)
                ),
            ));
        };
        let mut entries: Vec<(&'n str, usize, &'n Node<'a>)> = Vec::with_capacity(map.len());
        for (key, value) in map {
            let line = line_of(key);
            let Some(name) = scalar(key) else {
                return Err(self.invalid(
                    line,
                    format!(
                        "a field name must be a word, not {}: write one of {}",
                        kind_name(key),
                        allowed.join(", ")
                    ),
                ));
            };
            if let Some((_, fix)) = refused.iter().find(|(r, _)| *r == name) {
                return Err(self.error(
                    ConfigErrorKind::Unsupported,
                    line,
                    format!("`{name}` is not supported by ratekeeper serve: {fix}"),
                ));
            }
            if !allowed.contains(&name) {
                return Err(self.invalid(
                    line,
                    format!(
                        "unknown field `{name}` in {what}: write one of {}",
                        allowed.join(", ")
                    ),
                ));
            }
            if let Some(&(_, first, _)) = entries.iter().find(|(n, ..)| *n == name) {
                return Err(self.invalid(
                    line,
                    format!("`{name}` is given twice (also on line {first}): keep one"),
                ));
            }
            entries.push((name, line, value));
        }
        Ok(Fields { entries })
    }

    /// A `descriptors` list, with no two siblings alike.
    fn descriptors(
        &self,
        node: &Node<'_>,
        depth: usize,
    ) -> Result<Vec<DescriptorConfig>, ConfigFileError> {
        if is_null(node) {
            return Ok(Vec::new());
        }
        let YamlData::Sequence(items) = &node.data else {
            return Err(self.invalid(
                line_of(node),
                format!(
                    "`descriptors` must be a list (items starting with `- key:`), not {}",
                    kind_name(node)
                ),
            ));
        };
        if depth > MAX_DEPTH {
            return Err(self.invalid(
                line_of(node),
                format!("descriptors nested deeper than {MAX_DEPTH} levels: flatten the tree"),
            ));
        }
        let mut seen: HashMap<(String, Option<String>), usize> = HashMap::new();
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let descriptor = self.descriptor(item, depth)?;
            let id = (descriptor.key.clone(), descriptor.value.clone());
            if let Some(first) = seen.get(&id) {
                return Err(self.duplicate(&descriptor, *first));
            }
            seen.insert(id, descriptor.line);
            out.push(descriptor);
        }
        Ok(out)
    }

    fn duplicate(&self, descriptor: &DescriptorConfig, first: usize) -> ConfigFileError {
        let value = match &descriptor.value {
            Some(value) => format!("value \"{value}\""),
            None => "no value".to_owned(),
        };
        self.error(
            ConfigErrorKind::Duplicate,
            descriptor.line,
            format!(
                "duplicate descriptor: key \"{}\" with {value} is also on line {first}: \
                 merge the two, or give them different values",
                descriptor.key
            ),
        )
    }

    fn descriptor(
        &self,
        node: &Node<'_>,
        depth: usize,
    ) -> Result<DescriptorConfig, ConfigFileError> {
        let fields = self.fields(node, "a descriptor", DESCRIPTOR, DESCRIPTOR_REFUSED)?;
        let Some((line, key)) = fields.get("key") else {
            return Err(self.invalid(line_of(node), "a descriptor needs a `key`: add `key: NAME`"));
        };
        let key = self.required_string(key, "key", line)?;
        let value = match fields.get("value") {
            Some((_, value)) => self.optional_string(value, "value")?,
            None => None,
        };
        let shadow_mode = self.flag(&fields, "shadow_mode")?.unwrap_or(false);
        // Metrics-only in envoyproxy/ratelimit: checked, then ignored.
        self.flag(&fields, "detailed_metric")?;
        self.flag(&fields, "value_to_metric")?;
        let limit = self.limit(&fields)?;
        let descriptors = match fields.get("descriptors") {
            Some((_, list)) => self.descriptors(list, depth + 1)?,
            None => Vec::new(),
        };
        Ok(DescriptorConfig {
            key,
            value,
            limit,
            shadow_mode,
            descriptors,
            line,
        })
    }

    /// The descriptor's `rate_limit` with ratekeeper's additions.
    fn limit(&self, fields: &Fields<'_, '_>) -> Result<Option<LimitConfig>, ConfigFileError> {
        let base = match fields.get("rate_limit") {
            Some((line, node)) if !is_null(node) => Some(self.rate_limit(node, line)?),
            _ => None,
        };
        let (name, unit, requests_per_unit) = match base {
            None => {
                self.no_additions(
                    fields,
                    "needs a counted `rate_limit` on the same descriptor: add \
                     `rate_limit: { unit: second, requests_per_unit: N }` or remove it",
                )?;
                return Ok(None);
            }
            Some(BaseLimit::Unlimited(name)) => {
                self.no_additions(fields, "has no effect with `unlimited: true`: remove it")?;
                return Ok(Some(LimitConfig::Unlimited { name }));
            }
            Some(BaseLimit::Counted {
                name,
                unit,
                requests_per_unit,
            }) => (name, unit, requests_per_unit),
        };
        let algorithm = self.algorithm(fields)?;
        let burst = self.burst(fields, algorithm)?;
        let max_wait = match fields.get("max_wait") {
            Some((line, node)) => self.duration(node, "max_wait", line)?,
            None => Duration::ZERO,
        };
        let on_redis_failure = self.failure_policy(fields)?;
        Ok(Some(LimitConfig::Limited(RateLimitConfig {
            name,
            unit,
            requests_per_unit,
            algorithm,
            burst,
            max_wait,
            on_redis_failure,
        })))
    }
}

impl Check<'_> {
    /// Refuses ratekeeper's additions on a descriptor without a counted limit.
    fn no_additions(&self, fields: &Fields<'_, '_>, why: &str) -> Result<(), ConfigFileError> {
        match fields.entries.iter().find(|(n, ..)| ADDITIONS.contains(n)) {
            Some(&(addition, line, _)) => Err(self.invalid(line, format!("`{addition}` {why}"))),
            None => Ok(()),
        }
    }

    /// A `rate_limit` mapping: unlimited, or a unit and a count.
    fn rate_limit(&self, node: &Node<'_>, line: usize) -> Result<BaseLimit, ConfigFileError> {
        let fields = self.fields(node, "`rate_limit`", RATE_LIMIT, RATE_LIMIT_REFUSED)?;
        let unlimited = self.flag(&fields, "unlimited")?.unwrap_or(false);
        let name = match fields.get("name") {
            Some((_, name)) => self.optional_string(name, "name")?,
            None => None,
        };
        let unit = fields.get("unit");
        let count = fields.get("requests_per_unit");
        if unlimited {
            if let Some((at, field)) = [(unit, "unit"), (count, "requests_per_unit")]
                .into_iter()
                .find_map(|(f, name)| f.map(|(at, _)| (at, name)))
            {
                return Err(self.invalid(
                    at,
                    format!(
                        "`{field}` with `unlimited: true`: remove `unit` and \
                         `requests_per_unit`, or remove `unlimited`"
                    ),
                ));
            }
            return Ok(BaseLimit::Unlimited(name));
        }
        let Some((unit_line, unit)) = unit else {
            return Err(self.invalid(
                line,
                format!("`rate_limit` has no `unit`: add `unit:` with one of {UNITS}, or `unlimited: true`"),
            ));
        };
        let Some((count_line, count)) = count else {
            return Err(self.invalid(
                line,
                "`rate_limit` has no `requests_per_unit`: add `requests_per_unit: N` \
                 (at least 1), or write `unlimited: true` instead",
            ));
        };
        Ok(BaseLimit::Counted {
            name,
            unit: self.unit(unit, unit_line)?,
            requests_per_unit: self.count(count, "requests_per_unit", count_line)?,
        })
    }

    fn unit(&self, node: &Node<'_>, line: usize) -> Result<Unit, ConfigFileError> {
        let text = self.required_string(node, "unit", line)?;
        let unit = match text.to_ascii_lowercase().as_str() {
            "second" => Unit::Second,
            "minute" => Unit::Minute,
            "hour" => Unit::Hour,
            "day" => Unit::Day,
            "week" => Unit::Week,
            "month" => Unit::Month,
            "year" => Unit::Year,
            _ => {
                return Err(self.invalid(
                    line_of(node),
                    format!("unit \"{text}\" is not a unit: write one of {UNITS}"),
                ))
            }
        };
        Ok(unit)
    }

    fn algorithm(&self, fields: &Fields<'_, '_>) -> Result<Algorithm, ConfigFileError> {
        let Some((line, node)) = fields.get("algorithm") else {
            return Ok(Algorithm::default());
        };
        let text = self.required_string(node, "algorithm", line)?;
        match text.to_ascii_lowercase().as_str() {
            "refill" => Ok(Algorithm::Refill),
            "cycle" => Ok(Algorithm::Cycle),
            "pacer" => Ok(Algorithm::Pacer),
            _ => Err(self.invalid(
                line_of(node),
                format!("algorithm \"{text}\" is not an algorithm: write refill, cycle or pacer"),
            )),
        }
    }

    fn burst(
        &self,
        fields: &Fields<'_, '_>,
        algorithm: Algorithm,
    ) -> Result<Option<u32>, ConfigFileError> {
        let Some((line, node)) = fields.get("burst") else {
            return Ok(None);
        };
        if algorithm != Algorithm::Refill {
            return Err(self.invalid(
                line,
                "`burst` is only for `algorithm: refill`: remove `burst`, or write \
                 `algorithm: refill`",
            ));
        }
        self.count(node, "burst", line).map(Some)
    }

    fn failure_policy(
        &self,
        fields: &Fields<'_, '_>,
    ) -> Result<Option<FailurePolicy>, ConfigFileError> {
        let Some((line, node)) = fields.get("on_redis_failure") else {
            return Ok(None);
        };
        let text = self.required_string(node, "on_redis_failure", line)?;
        match text.to_ascii_lowercase().as_str() {
            "allow" | "open" => Ok(Some(FailurePolicy::Allow)),
            "deny" | "closed" => Ok(Some(FailurePolicy::Deny)),
            "local" => Ok(Some(FailurePolicy::Local)),
            _ => Err(self.invalid(
                line_of(node),
                format!("on_redis_failure \"{text}\" is not a policy: write allow, deny or local"),
            )),
        }
    }
}

impl Check<'_> {
    /// A non-empty string; `line` is the field name's, for a missing value.
    fn required_string(
        &self,
        node: &Node<'_>,
        field: &str,
        line: usize,
    ) -> Result<String, ConfigFileError> {
        match self.optional_string(node, field)? {
            Some(text) if !text.is_empty() => Ok(text),
            _ => Err(self.invalid(
                line,
                format!("`{field}` is empty: write a value after `{field}:`"),
            )),
        }
    }

    /// A string, or `None` for a null; numbers and booleans are taken as
    /// written, as envoyproxy/ratelimit does.
    fn optional_string(
        &self,
        node: &Node<'_>,
        field: &str,
    ) -> Result<Option<String>, ConfigFileError> {
        if is_null(node) {
            return Ok(None);
        }
        match scalar(node) {
            Some(text) => Ok(Some(text.to_owned())),
            None => Err(self.invalid(
                line_of(node),
                format!(
                    "`{field}` must be a single value, not {}: write `{field}: TEXT` \
                     (quote it if it has `:` or `#`)",
                    kind_name(node)
                ),
            )),
        }
    }

    /// An optional boolean field.
    fn flag(&self, fields: &Fields<'_, '_>, field: &str) -> Result<Option<bool>, ConfigFileError> {
        let Some((_, node)) = fields.get(field) else {
            return Ok(None);
        };
        if is_null(node) {
            return Ok(None);
        }
        match scalar(node) {
            Some("true" | "True" | "TRUE") => Ok(Some(true)),
            Some("false" | "False" | "FALSE") => Ok(Some(false)),
            _ => Err(self.invalid(
                line_of(node),
                format!(
                    "`{field}` must be true or false: write `{field}: true` or `{field}: false`"
                ),
            )),
        }
    }

    /// A whole number from 1 to `u32::MAX`.
    fn count(&self, node: &Node<'_>, field: &str, line: usize) -> Result<u32, ConfigFileError> {
        let text = match scalar(node) {
            Some(text) if !is_null(node) => text,
            _ => {
                return Err(self.invalid(
                    line,
                    format!("`{field}` needs a whole number: write `{field}: N` with N at least 1"),
                ))
            }
        };
        match text.trim().parse::<u64>() {
            Ok(0) => Err(self.invalid(
                line_of(node),
                format!("`{field}` is 0: write at least 1 (ratekeeper has no limit that refuses everything)"),
            )),
            Ok(n) => u32::try_from(n).map_err(|_| {
                self.invalid(
                    line_of(node),
                    format!("`{field}` {n} is too large: write at most {}", u32::MAX),
                )
            }),
            Err(_) => Err(self.invalid(
                line_of(node),
                format!("`{field}` \"{text}\" is not a whole number: write a number from 1 to {}", u32::MAX),
            )),
        }
    }

    /// A humantime duration (`50ms`, `1s`), or `0`.
    fn duration(
        &self,
        node: &Node<'_>,
        field: &str,
        line: usize,
    ) -> Result<Duration, ConfigFileError> {
        let text = self.required_string(node, field, line)?;
        if text.trim() == "0" {
            return Ok(Duration::ZERO);
        }
        humantime::parse_duration(&text).map_err(|e| {
            self.invalid(
                line_of(node),
                format!("`{field}` \"{text}\" is not a duration ({e}): write a number and a unit, like 50ms or 2s"),
            )
        })
    }
}

/// The 1-based line a node starts on.
fn line_of(node: &Node<'_>) -> usize {
    node.span.start.line().max(1)
}

/// The number of the text's last line, where the scanner's end-of-input
/// errors are pointed (it may count one past it).
fn last_line(text: &str) -> usize {
    let lone_cr = text.matches('\r').count() - text.matches("\r\n").count();
    1 + text.matches('\n').count() + lone_cr
}

/// A scalar's text as written, or `None` for anything else.
fn scalar<'n>(node: &'n Node<'_>) -> Option<&'n str> {
    match &node.data {
        YamlData::Representation(text, ..) => Some(text),
        _ => None,
    }
}

/// An unquoted `~`, `null` or nothing at all.
fn is_null(node: &Node<'_>) -> bool {
    matches!(&node.data, YamlData::Representation(text, ScalarStyle::Plain, _)
        if matches!(&**text, "" | "~" | "null" | "Null" | "NULL"))
}

/// What a node is, for errors.
fn kind_name(node: &Node<'_>) -> &'static str {
    match &node.data {
        YamlData::Mapping(_) => "a mapping",
        YamlData::Sequence(_) => "a list",
        _ if is_null(node) => "nothing",
        YamlData::Representation(..) | YamlData::Value(_) => "a single value",
        YamlData::Tagged(..) => "a tagged value",
        YamlData::Alias(_) | YamlData::BadValue => "an invalid value",
    }
}
