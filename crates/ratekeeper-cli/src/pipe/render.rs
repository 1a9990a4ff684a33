//! `pipe`'s text report.

use std::fmt;

use super::summary::PipeReport;
use crate::report::{fmt_count, fmt_effective, fmt_nanos, fmt_unit_rate};

impl fmt::Display for PipeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "spec            {}", self.spec)?;
        writeln!(
            f,
            "strictness      {} ({})",
            self.strictness,
            self.strictness_mode.replace('_', " ")
        )?;
        writeln!(
            f,
            "target rate     {}",
            fmt_unit_rate(self.target_rate, self.unit)
        )?;
        writeln!(
            f,
            "effective rate  {}",
            fmt_effective(
                self.effective_rate,
                self.effective_note.as_deref(),
                self.unit
            )
        )?;
        self.fmt_changes(f)?;
        writeln!(
            f,
            "achieved rate   {}",
            fmt_unit_rate(self.achieved_rate, self.unit)
        )?;
        writeln!(f, "lines           {}", fmt_count(self.lines))?;
        writeln!(f, "bytes           {}", fmt_count(self.bytes))?;
        writeln!(f, "writes          {}", fmt_count(self.writes))?;
        writeln!(
            f,
            "rate span       {} (from the first input to the end of the last write's slot: \
             the span the achieved rate is over)",
            fmt_nanos(self.rate_span_ns)
        )?;
        writeln!(
            f,
            "rate wait       {} (waiting for permits)",
            fmt_nanos(self.rate_wait_ns)
        )?;
        writeln!(
            f,
            "input wait      {} (waiting for standard input, after the first input)",
            fmt_nanos(self.input_wait_ns)
        )?;
        if self.output_closed {
            writeln!(f, "output closed   by its reader: the copy stopped there")?;
        }
        if self.interrupted {
            writeln!(f, "interrupted     by Ctrl-C: the copy stopped there")?;
        }
        match &self.redis {
            Some(redis) => redis.fmt_lines(f),
            None => Ok(()),
        }
    }
}

impl PipeReport {
    /// The rate at the end and the changes SIGUSR1/SIGUSR2 made to it.
    fn fmt_changes(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "final rate      {}",
            fmt_unit_rate(self.final_rate, self.unit)
        )?;
        write!(f, "rate changes    {}", fmt_count(self.rate_changes))?;
        if self.rate_changes_refused > 0 {
            write!(
                f,
                " ({} refused: beyond the Pacer's range)",
                fmt_count(self.rate_changes_refused)
            )?;
        }
        writeln!(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words after `label` on the first line of `text` starting with it.
    fn fields(text: &str, label: &str) -> Vec<String> {
        text.lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label:?} line in:\n{text}"))[label.len()..]
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }

    /// One report, rendered both ways: every figure of the text is the
    /// JSON's, with its unit and its thousands grouped.
    #[test]
    fn text_and_json_reports_say_the_same() {
        let report = PipeReport {
            schema: crate::report::SCHEMA,
            spec: "1048576,1.1,start,activity".to_owned(),
            unit: "bytes",
            strictness: 1.0,
            strictness_mode: "strict",
            target_rate: 1_048_576.0,
            final_rate: 2_097_152.0,
            rate_changes: 1_234,
            rate_changes_refused: 1_001,
            effective_rate: Some(1_048_576.0),
            effective_note: None,
            lines: 1_000_000,
            bytes: 12_345_678,
            writes: 2_345,
            rate_span_ns: 11_773_700_000,
            achieved_rate: 1_048_576.25,
            rate_wait_ns: 9_876_543_210,
            input_wait_ns: 1_500_000,
            output_closed: false,
            interrupted: false,
            redis: None,
        };
        let text = report.to_string();
        let json = serde_json::to_value(&report).unwrap();
        let num = |key: &str| json[key].as_f64().unwrap_or_else(|| panic!("{key}"));
        let rate = |key: &str| vec![fmt_rate_words(num(key)), "bytes/s".to_owned()];
        assert_eq!(fields(&text, "target rate"), rate("target_rate"));
        assert_eq!(fields(&text, "effective rate"), rate("effective_rate"));
        assert_eq!(fields(&text, "final rate"), rate("final_rate"));
        assert_eq!(fields(&text, "achieved rate"), ["1,048,576.2", "bytes/s"]);
        assert_eq!(
            fields(&text, "rate changes").join(" "),
            "1,234 (1,001 refused: beyond the Pacer's range)"
        );
        for (label, key, shown) in [
            ("lines", "lines", "1,000,000"),
            ("bytes", "bytes", "12,345,678"),
            ("writes", "writes", "2,345"),
        ] {
            assert_eq!(fields(&text, label), [shown]);
            assert_eq!(shown.replace(',', ""), num(key).to_string());
        }
        for (label, key, shown) in [
            ("rate span", "rate_span_ns", "11.8s"),
            ("rate wait", "rate_wait_ns", "9.88s"),
            ("input wait", "input_wait_ns", "1.50ms"),
        ] {
            assert_eq!(fields(&text, label)[0], shown, "{text}");
            assert_eq!(fmt_nanos(num(key) as u64), shown);
        }
        assert_eq!(fields(&text, "strictness"), ["1", "(strict)"]);
        assert_eq!(fields(&text, "spec"), [json["spec"].as_str().unwrap()]);
    }

    /// The number of a rate as the text prints it.
    fn fmt_rate_words(rate: f64) -> String {
        fmt_unit_rate(rate, "bytes")
            .trim_end_matches(" bytes/s")
            .to_owned()
    }
}
