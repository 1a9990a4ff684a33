//! `--hdr-out FILE`: a run's histograms in HdrHistogram's interval log
//! format, so that existing tools (HistogramLogAnalyzer, `hdr-plot`,
//! wrk2's and nosqlbench's own) can read and plot them.
//!
//! The file holds one interval: the whole run. Each figure the run measures
//! (`wait`, and with service times `service` and `response`) is one tagged
//! histogram line (`Tag=wait,0.000,12.345,…`) of nanosecond values, with a
//! `#[StartTime: …]` header for when the run began, and the value unit
//! stated in a comment. Values are written as recorded (nanoseconds): a
//! reader that expects another unit takes a max-value divisor, as
//! HistogramLogProcessor's `-outputValueUnitRatio` does.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;

/// Writes `histograms` (each with its tag) as one interval of `elapsed`,
/// begun at `started`, to `path`.
///
/// # Errors
///
/// An I/O error creating or writing the file (with its path), or a
/// histogram that does not serialize.
pub fn write(
    path: &Path,
    started: SystemTime,
    elapsed: Duration,
    histograms: &[(&str, &Histogram<u64>)],
) -> anyhow::Result<()> {
    let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = BufWriter::new(file);
    write_to(&mut out, started, elapsed, histograms)
        .and_then(|()| out.flush().map_err(anyhow::Error::from))
        .with_context(|| format!("writing {}", path.display()))
}

/// [`write`] to any writer.
///
/// # Errors
///
/// As [`write`].
pub fn write_to<W: Write>(
    out: &mut W,
    started: SystemTime,
    elapsed: Duration,
    histograms: &[(&str, &Histogram<u64>)],
) -> anyhow::Result<()> {
    let mut serializer = V2DeflateSerializer::new();
    let mut builder = IntervalLogWriterBuilder::new();
    builder
        .add_comment("ratekeeper: one interval, the whole run; values in nanoseconds")
        .with_start_time(started);
    let mut log = builder.begin_log_with(out, &mut serializer)?;
    for (tag, h) in histograms {
        let tag = Tag::new(tag).ok_or_else(|| io::Error::other(format!("bad tag {tag:?}")))?;
        log.write_histogram(h, Duration::ZERO, elapsed, Some(tag))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;

    #[test]
    fn the_log_reads_back_as_the_histograms_written() {
        let mut wait = Histogram::<u64>::new(3).unwrap();
        let mut response = Histogram::<u64>::new(3).unwrap();
        for v in [1_000u64, 2_000, 50_000, 1_000_000] {
            wait.record(v).unwrap();
            response.record(v * 3).unwrap();
        }
        let mut bytes = Vec::new();
        let started = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let hs = [("wait", &wait), ("response", &response)];
        write_to(&mut bytes, started, Duration::from_millis(2500), &hs).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.contains("#[StartTime: 1700000000"), "{text}");
        assert!(text.contains("Tag=wait,0.000,2.500,"), "{text}");

        let mut read = Vec::new();
        for entry in IntervalLogIterator::new(&bytes) {
            if let Ok(LogEntry::Interval(h)) = entry {
                let decoded = base64_decode(h.encoded_histogram());
                let back: Histogram<u64> = Deserializer::new()
                    .deserialize(&mut decoded.as_slice())
                    .unwrap();
                read.push((h.tag().unwrap().as_str().to_owned(), back));
            }
        }
        assert_eq!(read.len(), 2);
        assert_eq!(read[0].0, "wait");
        assert_eq!(read[0].1, wait);
        assert_eq!(read[1].1.max(), response.max());
        assert_eq!(read[1].1.len(), 4);
    }

    /// Standard base64, as the log encodes histograms (no crate needed for a
    /// test).
    fn base64_decode(s: &str) -> Vec<u8> {
        let value = |c: u8| match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            _ => 63,
        };
        let digits: Vec<u8> = s.bytes().filter(|&c| c != b'=').map(value).collect();
        digits
            .chunks(4)
            .flat_map(|c| {
                let n = c.iter().fold(0u32, |n, &d| (n << 6) | u32::from(d)) << (6 * (4 - c.len()));
                let bytes = n.to_be_bytes();
                bytes[1..c.len()].to_vec()
            })
            .collect()
    }
}
