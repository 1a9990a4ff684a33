//! The `Forwarded` field (RFC 7239) parsed by its grammar: each element's
//! `for=` value, left to right, and the address a `for=` node names.
//!
//! # Implementation details
//!
//! The grammar, with RFC 7230's list rule and its optional whitespace
//! (OWS) around the separators:
//!
//! ```text
//! Forwarded         = 1#forwarded-element
//! forwarded-element = [ forwarded-pair ] *( ";" [ forwarded-pair ] )
//! forwarded-pair    = token "=" value
//! value             = token / quoted-string
//! ```
//!
//! Each field line is a list of its own, read in one pass from its left:
//! a comma ends an element only outside a quoted string, so where the
//! elements a trusted proxy appended begin is known only once everything
//! left of them has been read. That is why a line the grammar rejects
//! anywhere is rejected whole: no element of it can be located for sure.
//! An empty list element (nothing but whitespace between two commas) is
//! not an element; one that has only semicolons is, without a `for`.

use std::borrow::Cow;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A field line that the grammar rejects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rejected;

/// One element's `for=` value, unquoted and unescaped; `None` for an
/// element without one.
pub(crate) type ForValue<'a> = Option<Cow<'a, [u8]>>;

/// The `for=` values of the elements of every line of the field, in order.
///
/// # Errors
///
/// [`Rejected`] when any line is not a `Forwarded` list: a byte outside
/// a token or a quoted string where one is needed, an unterminated quoted
/// string, a name without `=` and a value, whitespace around `=`, or a
/// parameter given twice in one element (RFC 7239 §4).
pub(crate) fn for_values<'a, I>(lines: I) -> Result<Vec<ForValue<'a>>, Rejected>
where
    I: IntoIterator<Item = &'a [u8]>,
{
    let mut out = Vec::new();
    for line in lines {
        parse_line(line, &mut out)?;
    }
    Ok(out)
}

/// RFC 7230 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// RFC 7230 `qdtext`, and what a `quoted-pair` may escape, but for the
/// quote and the backslash themselves: HTAB, SP, VCHAR, obs-text.
fn is_quotable(b: u8) -> bool {
    b == b'\t' || (b >= 0x20 && b != 0x7f)
}

/// Reads one line left to right.
struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    /// `1*tchar`, or `None` (nothing read) when there is none here.
    fn token(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        while self.peek().is_some_and(is_tchar) {
            self.i += 1;
        }
        (self.i > start).then(|| &self.s[start..self.i])
    }

    /// A `quoted-string` starting at its opening quote: what is between
    /// the quotes, escapes left in.
    fn quoted(&mut self) -> Result<&'a [u8], Rejected> {
        self.i += 1;
        let start = self.i;
        loop {
            match self.peek().ok_or(Rejected)? {
                b'"' => {
                    self.i += 1;
                    return Ok(&self.s[start..self.i - 1]);
                }
                b'\\' => match self.s.get(self.i + 1) {
                    Some(&e) if is_quotable(e) => self.i += 2,
                    _ => return Err(Rejected),
                },
                b if is_quotable(b) => self.i += 1,
                _ => return Err(Rejected),
            }
        }
    }
}

/// What a quoted string's content stands for: each `\x` is `x`.
fn unescape(raw: &[u8]) -> Cow<'_, [u8]> {
    if !raw.contains(&b'\\') {
        return Cow::Borrowed(raw);
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut bytes = raw.iter();
    while let Some(&b) = bytes.next() {
        // The content was checked: a backslash is always followed by the
        // byte it escapes.
        out.push(if b == b'\\' {
            bytes.next().copied().unwrap_or(b)
        } else {
            b
        });
    }
    Cow::Owned(out)
}

/// Case-insensitive order of parameter names.
fn name_order(a: &&[u8], b: &&[u8]) -> std::cmp::Ordering {
    a.iter()
        .map(u8::to_ascii_lowercase)
        .cmp(b.iter().map(u8::to_ascii_lowercase))
}

/// Appends the `for=` value of each element of `line` to `out`.
fn parse_line<'a>(line: &'a [u8], out: &mut Vec<ForValue<'a>>) -> Result<(), Rejected> {
    let mut c = Cursor { s: line, i: 0 };
    let mut names: Vec<&'a [u8]> = Vec::new();
    loop {
        // One element: [ pair ] *( OWS ";" OWS [ pair ] ).
        c.skip_ows();
        let mut element = false;
        let mut for_value = None;
        names.clear();
        loop {
            if let Some(name) = c.token() {
                element = true;
                if c.peek() != Some(b'=') {
                    return Err(Rejected);
                }
                c.i += 1;
                let value = if c.peek() == Some(b'"') {
                    unescape(c.quoted()?)
                } else {
                    Cow::Borrowed(c.token().ok_or(Rejected)?)
                };
                if name.eq_ignore_ascii_case(b"for") {
                    for_value = Some(value);
                }
                names.push(name);
                c.skip_ows();
            }
            if c.peek() != Some(b';') {
                break;
            }
            element = true;
            c.i += 1;
            c.skip_ows();
        }
        // Each parameter at most once per element (RFC 7239 §4); sorted,
        // so that an element of many parameters costs no more than its
        // length times its logarithm.
        if names.len() > 1 {
            names.sort_unstable_by(name_order);
            if names.windows(2).any(|w| name_order(&w[0], &w[1]).is_eq()) {
                return Err(Rejected);
            }
        }
        if element {
            out.push(for_value);
        }
        match c.peek() {
            None => return Ok(()),
            Some(b',') => c.i += 1,
            Some(_) => return Err(Rejected),
        }
    }
}

/// The address a `for=` node names (RFC 7239 §6): an IPv4 address, or an
/// IPv6 address in brackets, either with an optional port (digits, or an
/// obfuscated `_port`); `None` for `unknown`, an obfuscated `_name`, or
/// anything else.
pub(crate) fn node_ip(node: &[u8]) -> Option<IpAddr> {
    let node = std::str::from_utf8(node).ok()?;
    let (ip, port) = if let Some(rest) = node.strip_prefix('[') {
        let (addr, port) = rest.split_once(']')?;
        (IpAddr::V6(addr.parse::<Ipv6Addr>().ok()?), port)
    } else {
        let end = node.find(':').unwrap_or(node.len());
        (
            IpAddr::V4(node[..end].parse::<Ipv4Addr>().ok()?),
            &node[end..],
        )
    };
    port_ok(port).then_some(ip)
}

/// Nothing, or `":" node-port`: `1*5DIGIT`, or `"_" 1*(ALPHA / DIGIT /
/// "." / "_" / "-")`.
fn port_ok(port: &str) -> bool {
    let Some(port) = port.strip_prefix(':') else {
        return port.is_empty();
    };
    if let Some(obf) = port.strip_prefix('_') {
        !obf.is_empty()
            && obf
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    } else {
        (1..=5).contains(&port.len()) && port.bytes().all(|b| b.is_ascii_digit())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    fn parse(lines: &[&str]) -> Result<Vec<Option<String>>, Rejected> {
        let values = for_values(lines.iter().map(|l| l.as_bytes()))?;
        Ok(values
            .into_iter()
            .map(|v| v.map(|v| String::from_utf8(v.into_owned()).unwrap()))
            .collect())
    }

    fn fors(values: &[Option<&str>]) -> Result<Vec<Option<String>>, Rejected> {
        Ok(values.iter().map(|v| v.map(str::to_owned)).collect())
    }

    #[test]
    fn lists_of_elements_as_the_grammar_reads_them() {
        let rfc = "for=192.0.2.43, for=198.51.100.17;by=203.0.113.60;proto=http;host=example.com";
        assert_eq!(
            parse(&[rfc]),
            fors(&[Some("192.0.2.43"), Some("198.51.100.17")])
        );
        // Commas, semicolons, equals signs and escapes inside quotes are
        // the value's; parameter names are case-insensitive.
        assert_eq!(
            parse(&[r#"for=203.0.113.9;host="evil.example,for=6.6.6.6;x=""#]),
            fors(&[Some("203.0.113.9")])
        );
        assert_eq!(
            parse(&[r#"For="[2001:db8::17]:4711";host="a\"b\\c;d=e", FOR="\1\.2.3.4""#]),
            fors(&[Some("[2001:db8::17]:4711"), Some("1.2.3.4")])
        );
        // OWS around commas and semicolons; empty list elements are not
        // elements; an element of semicolons only is one, without `for`.
        assert_eq!(
            parse(&[" , for=a ;\tproto=https ; , ,;, for=b;", "", "for=c"]),
            fors(&[Some("a"), None, Some("b"), Some("c")])
        );
        // Each line is a list of its own, in order.
        assert_eq!(
            parse(&["for=a, proto=http", "for=b"]),
            fors(&[Some("a"), None, Some("b")])
        );
        for bad in [
            r#"for="203.0.113.9"#, // unterminated
            r#"for="a\"#,          // escape at the end
            "for=a;for=b",         // `for` twice in one element
            "for=a;FOR=b",         // names are case-insensitive
            "for=a;x=1;X=2",       // any parameter twice
            "for = a",             // whitespace around `=`
            "for=",                // no value
            "=a",                  // no name
            "for",                 // no `=`
            "for=[2001:db8::1]",   // `[`, `:` are not token characters
            "for=192.0.2.1:80",    // a port needs quotes
            "for=a b",             // two tokens
            r#"for="a"b"#,         // a token after a quoted string
            r#"host="x", "y""#,    // a quoted string as an element
            "for=a\u{7f}",         // DEL
        ] {
            assert_eq!(parse(&[bad]), Err(Rejected), "{bad:?}");
            // A bad line rejects the whole field, wherever it is.
            assert_eq!(parse(&["for=192.0.2.1", bad]), Err(Rejected), "{bad:?}");
            assert_eq!(parse(&[bad, "for=192.0.2.1"]), Err(Rejected), "{bad:?}");
        }
        // Control bytes and obs-text: only HTAB in whitespace, obs-text
        // (0x80-0xFF) only inside quotes.
        assert_eq!(for_values([&b"for=a,\x00"[..]]), Err(Rejected));
        assert_eq!(for_values([&b"for=\xe9"[..]]), Err(Rejected));
        assert_eq!(
            for_values([&b"host=\"\xe9\", for=\"\\\xe9\""[..]]),
            Ok(vec![None, Some(Cow::Owned(vec![0xe9]))])
        );
    }

    #[test]
    fn nodes_name_addresses_or_nothing() {
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        for (node, want) in [
            ("192.0.2.43", ip("192.0.2.43")),
            ("192.0.2.43:47011", ip("192.0.2.43")),
            ("192.0.2.43:_x-1.y", ip("192.0.2.43")),
            ("[2001:db8:cafe::17]", ip("2001:db8:cafe::17")),
            ("[2001:db8:cafe::17]:4711", ip("2001:db8:cafe::17")),
            ("[::ffff:192.0.2.1]:80", ip("::ffff:192.0.2.1")),
            ("unknown", None),
            ("_hidden", None),
            ("[_hidden]", None),
            ("2001:db8::17", None), // IPv6 without brackets
            ("[2001:db8::17]junk", None),
            ("[2001:db8::17]:", None),
            ("192.0.2.43:", None),
            ("192.0.2.43:123456", None),
            ("192.0.2.43:_", None),
            ("192.0.2.43:a", None),
            ("192.0.2.043", None),
            ("[192.0.2.43]", None),
            ("", None),
        ] {
            assert_eq!(node_ip(node.as_bytes()), want, "{node:?}");
        }
        assert_eq!(node_ip(b"\xff"), None);
    }

    /// The reference: the grammar as a state machine, one byte at a time,
    /// with nothing shared with the parser under test.
    #[derive(Debug, Clone, Copy)]
    enum St {
        /// Before an element (after a comma, or at the line's start).
        Start,
        /// After a semicolon.
        PairStart,
        Name,
        /// After `=`.
        ValueStart,
        Token,
        Quoted,
        Escape,
        /// After a value, before `;`, `,` or the end.
        AfterValue,
    }

    type Fors = Vec<Option<Vec<u8>>>;

    #[derive(Default)]
    struct Reference {
        out: Fors,
        name: Vec<u8>,
        value: Vec<u8>,
        names: Vec<Vec<u8>>,
        for_value: Option<Vec<u8>>,
    }

    impl Reference {
        /// Ends a pair; `None` if its name was already in the element.
        fn pair(&mut self) -> Option<()> {
            let name = std::mem::take(&mut self.name).to_ascii_lowercase();
            let value = std::mem::take(&mut self.value);
            if self.names.contains(&name) {
                return None;
            }
            if name == b"for" {
                self.for_value = Some(value);
            }
            self.names.push(name);
            Some(())
        }

        fn element(&mut self) {
            self.names.clear();
            let for_value = self.for_value.take();
            self.out.push(for_value);
        }
    }

    fn tchar(b: u8) -> bool {
        matches!(b,
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9'
            | b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+'
            | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~')
    }

    fn reference(lines: &[Vec<u8>]) -> Option<Fors> {
        let mut r = Reference::default();
        for line in lines {
            let mut st = St::Start;
            for &b in line {
                let ows = b == b' ' || b == b'\t';
                let text = b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80;
                st = match st {
                    St::Start | St::PairStart if ows => st,
                    St::Start if b == b',' => St::Start,
                    St::Start | St::PairStart if b == b';' => St::PairStart,
                    St::PairStart if b == b',' => {
                        r.element();
                        St::Start
                    }
                    St::Start | St::PairStart | St::Name if tchar(b) => {
                        r.name.push(b);
                        St::Name
                    }
                    St::Name if b == b'=' => St::ValueStart,
                    St::ValueStart if b == b'"' => St::Quoted,
                    St::ValueStart | St::Token if tchar(b) => {
                        r.value.push(b);
                        St::Token
                    }
                    St::Token if ows => {
                        r.pair()?;
                        St::AfterValue
                    }
                    St::Token if b == b';' => {
                        r.pair()?;
                        St::PairStart
                    }
                    St::Token if b == b',' => {
                        r.pair()?;
                        r.element();
                        St::Start
                    }
                    St::Quoted if b == b'"' => {
                        r.pair()?;
                        St::AfterValue
                    }
                    St::Quoted if b == b'\\' => St::Escape,
                    St::Quoted | St::Escape if text => {
                        r.value.push(b);
                        St::Quoted
                    }
                    St::AfterValue if ows => St::AfterValue,
                    St::AfterValue if b == b';' => St::PairStart,
                    St::AfterValue if b == b',' => {
                        r.element();
                        St::Start
                    }
                    _ => return None,
                };
            }
            match st {
                St::Start => {}
                St::PairStart | St::AfterValue => r.element(),
                St::Token => {
                    r.pair()?;
                    r.element();
                }
                St::Name | St::ValueStart | St::Quoted | St::Escape => return None,
            }
        }
        Some(r.out)
    }

    fn bytes(s: &'static str) -> BoxedStrategy<Vec<u8>> {
        Just(s.as_bytes().to_vec()).boxed()
    }

    fn regex(re: &'static str) -> BoxedStrategy<Vec<u8>> {
        proptest::string::string_regex(re)
            .unwrap()
            .prop_map(String::into_bytes)
            .boxed()
    }

    fn name() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            2 => bytes("for"),
            1 => bytes("For"),
            1 => bytes("FOR"),
            2 => bytes("by"),
            2 => bytes("host"),
            2 => bytes("proto"),
            3 => regex("[a-zA-Z0-9!#$%&'*+.^_`|~-]{1,4}"),
        ]
    }

    /// What goes between the quotes: mostly well-formed, with the
    /// characters that a comma-first split gets wrong.
    fn quoted_piece() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            6 => bytes(","),
            3 => bytes(";"),
            2 => bytes("="),
            2 => bytes(r#"\""#),
            2 => bytes(r"\\"),
            1 => bytes(r"\a"),
            2 => bytes(" "),
            1 => bytes("\t"),
            2 => bytes("for=6.6.6.6"),
            2 => bytes("[2001:db8::1]:80"),
            1 => Just(vec![0xe9]).boxed(),
            1 => Just(vec![b'\\', 0xe9]).boxed(),
            4 => regex("[a-zA-Z0-9.:_-]{1,6}"),
            // Now and then an unescaped quote or backslash, or anything.
            1 => regex("[ -~]{1,3}"),
        ]
    }

    fn value() -> impl Strategy<Value = Vec<u8>> {
        let quoted = prop::collection::vec(quoted_piece(), 0..6).prop_map(|pieces| {
            let mut v = vec![b'"'];
            v.extend(pieces.concat());
            v.push(b'"');
            v
        });
        prop_oneof![
            4 => quoted,
            2 => any::<[u8; 4]>().prop_map(|[a, b, c, d]| format!("{a}.{b}.{c}.{d}").into_bytes()),
            3 => regex("[a-zA-Z0-9._~-]{1,8}"),
            // Not a token: a port needs quotes.
            1 => regex("[0-9.]{1,8}:[0-9]{1,5}"),
            1 => bytes("unknown"),
            1 => bytes("_hidden"),
        ]
    }

    fn joined(
        parts: impl Strategy<Value = Vec<Vec<u8>>>,
        seps: &'static [&'static str],
    ) -> impl Strategy<Value = Vec<u8>> {
        let n = 8;
        (parts, prop::collection::vec(0..seps.len(), n)).prop_map(move |(parts, which)| {
            let mut out = Vec::new();
            for (i, part) in parts.into_iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(seps[which[i % n]].as_bytes());
                }
                out.extend(part);
            }
            out
        })
    }

    fn element() -> impl Strategy<Value = Vec<u8>> {
        let pair = prop_oneof![
            8 => (name(), value()).prop_map(|(n, v)| [n, b"=".to_vec(), v].concat()),
            1 => Just(Vec::new()), // an empty pair: `;;`
        ];
        joined(
            prop::collection::vec(pair, 0..3),
            &[";", "; ", " ;", "\t;\t"],
        )
    }

    fn line() -> impl Strategy<Value = Vec<u8>> {
        let list = joined(
            prop::collection::vec(element(), 0..5),
            &[",", ", ", " ,", " , ", ",,", ", ,"],
        );
        (list, prop::sample::select(vec!["", " ", "\t"]))
            .prop_map(|(l, ows)| [ows.as_bytes(), &l, ows.as_bytes()].concat())
    }

    /// A few bytes changed: inserted or deleted, from those that matter
    /// to the grammar and some that never belong.
    fn garbled(line: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
        let byte = prop::sample::select(b"\",;= \t\\[]:a\x00\x7f\x80\xff".to_vec());
        prop::collection::vec((any::<prop::sample::Index>(), prop::option::of(byte)), 1..3)
            .prop_map(move |edits| {
                let mut l = line.clone();
                for (at, insert) in edits {
                    match insert {
                        Some(b) => l.insert(at.index(l.len() + 1), b),
                        None if !l.is_empty() => {
                            l.remove(at.index(l.len()));
                        }
                        None => {}
                    }
                }
                l
            })
    }

    fn field() -> impl Strategy<Value = Vec<Vec<u8>>> {
        let any_line = prop_oneof![
            12 => line(),
            3 => line().prop_flat_map(garbled),
            1 => prop::collection::vec(any::<u8>(), 0..24),
        ];
        prop::collection::vec(any_line, 1..3)
    }

    fn ours(lines: &[Vec<u8>]) -> Option<Fors> {
        let values = for_values(lines.iter().map(Vec::as_slice)).ok()?;
        Some(values.into_iter().map(|v| v.map(Cow::into_owned)).collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// The parser and the reference accept the same fields and read
        /// the same `for` values from them; no field makes either panic.
        #[test]
        fn the_parser_agrees_with_the_reference(lines in field()) {
            prop_assert_eq!(ours(&lines), reference(&lines), "{:?}",
                lines.iter().map(|l| String::from_utf8_lossy(l)).collect::<Vec<_>>());
        }
    }

    /// The generator is not vacuous: it makes fields both accepted and
    /// rejected, accepted ones with commas inside quotes and with `for`
    /// values, and rejected ones that only a few changed bytes broke.
    #[test]
    fn the_generated_fields_cover_both_answers() {
        let mut runner = TestRunner::deterministic();
        let (mut accepted, mut rejected, mut quoted_comma, mut with_for) = (0, 0, 0, 0);
        for _ in 0..2000 {
            let lines = field().new_tree(&mut runner).unwrap().current();
            match reference(&lines) {
                Some(fors) => {
                    accepted += 1;
                    with_for += usize::from(fors.iter().any(Option::is_some));
                    let has_quoted_comma = lines.iter().any(|l| {
                        l.split(|&b| b == b'"')
                            .skip(1)
                            .step_by(2)
                            .any(|q| q.contains(&b','))
                    });
                    quoted_comma += usize::from(has_quoted_comma);
                }
                None => rejected += 1,
            }
        }
        assert!(
            accepted > 600 && rejected > 400,
            "{accepted} accepted, {rejected} rejected"
        );
        assert!(
            quoted_comma > 150 && with_for > 250,
            "{quoted_comma}, {with_for}"
        );
    }
}
