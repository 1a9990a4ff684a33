//! `pipe`'s output: standard output, with what was let through but not yet
//! written, and the counts of what was.

use std::io::{self, Write};
use std::sync::Arc;

use super::live::Gauges;

/// Output batched while permits are ready at once is written out at this
/// size at the latest.
pub(super) const MAX_BATCH: usize = 64 * 1024;

/// Standard output, with what was let through but not yet written.
pub(super) struct Output {
    pub(super) out: io::Stdout,
    pub(super) batch: Vec<u8>,
    /// Permit requests (writes) in the batch.
    pub(super) batch_writes: u64,
    pub(super) closed: bool,
    /// What was written.
    pub(super) lines: u64,
    pub(super) bytes: u64,
    pub(super) writes: u64,
    /// Whether the last byte written was a newline (or nothing was written).
    pub(super) ends_line: bool,
    /// The totals, for the progress line.
    gauges: Arc<Gauges>,
}

impl Output {
    /// Standard output, whose totals are also kept in `gauges`.
    pub(super) fn new(gauges: Arc<Gauges>) -> Output {
        Output {
            out: io::stdout(),
            batch: Vec::with_capacity(MAX_BATCH),
            batch_writes: 0,
            closed: false,
            lines: 0,
            bytes: 0,
            writes: 0,
            ends_line: true,
            gauges,
        }
    }

    /// Adds one permit request's bytes to the batch.
    pub(super) fn push(&mut self, item: &[u8]) {
        self.batch.extend_from_slice(item);
        self.batch_writes += 1;
    }

    /// Writes out the batch and counts it. A closed output (EPIPE) is
    /// remembered, not an error; what was in the batch then is not counted.
    pub(super) fn flush(&mut self) -> anyhow::Result<()> {
        if self.closed || self.batch.is_empty() {
            self.batch.clear();
            self.batch_writes = 0;
            return Ok(());
        }
        let mut out = self.out.lock();
        let written = out.write_all(&self.batch).and_then(|()| out.flush());
        drop(out);
        if written.is_ok() {
            self.lines += memchr::memchr_iter(b'\n', &self.batch).count() as u64;
            self.bytes += self.batch.len() as u64;
            self.writes += self.batch_writes;
            self.ends_line = self.batch.last() == Some(&b'\n');
            self.gauges.set_written(self.lines(), self.bytes);
        }
        self.batch.clear();
        self.batch_writes = 0;
        match written {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            Err(e) => Err(anyhow::Error::new(e).context("writing to standard output")),
        }
    }

    /// Lines written; a last line without a newline counts.
    pub(super) fn lines(&self) -> u64 {
        self.lines + u64::from(!self.ends_line)
    }
}
