//! `pipe`'s output: standard output, with what was let through but not yet
//! written, and the counts of what was.

use std::io::{self, Write};
use std::sync::Arc;

use super::live::Gauges;

/// Output batched while permits are ready at once is written out at this
/// size at the latest.
pub(super) const MAX_BATCH: usize = 64 * 1024;

/// An item (a line, or a chunk of `--bytes`) this long or longer is written
/// on its own, not copied into the batch: a system call costs about what
/// copying a few KiB does, and an unthrottled `--bytes` copy, whose chunks
/// are whole reads, then copies nothing in user space.
pub(super) const DIRECT_WRITE: usize = 4 * 1024;

/// Standard output, with what was let through but not yet written.
pub(super) struct Output {
    /// Standard output: its file descriptor (handle) itself, where it can
    /// be duplicated, so that a write is one system call, not two through
    /// `Stdout`'s line buffer (which also searches every write for its
    /// last newline); `Stdout` otherwise.
    out: Box<dyn Write>,
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
            out: raw_stdout().unwrap_or_else(|_| Box::new(io::stdout())),
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
        let batch = std::mem::take(&mut self.batch);
        let writes = std::mem::take(&mut self.batch_writes);
        let written = self.write(&batch, writes);
        self.batch = batch;
        self.batch.clear();
        written
    }

    /// Writes `data`, `writes` permit requests' bytes, to standard output
    /// and counts it (the batch must be empty or written first). A closed
    /// output (EPIPE) is remembered, not an error; what was in `data` then
    /// is not counted, and nothing more is written.
    pub(super) fn write(&mut self, data: &[u8], writes: u64) -> anyhow::Result<()> {
        if self.closed || data.is_empty() {
            return Ok(());
        }
        let written = self.out.write_all(data).and_then(|()| self.out.flush());
        if written.is_ok() {
            self.lines += memchr::memchr_iter(b'\n', data).count() as u64;
            self.bytes += data.len() as u64;
            self.writes += writes;
            self.ends_line = data.last() == Some(&b'\n');
            self.gauges.set_written(self.lines(), self.bytes);
        }
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

/// Standard output's file descriptor, duplicated, as a file: writes to it
/// go straight to the descriptor. Nothing else writes to standard output
/// while `pipe` copies.
#[cfg(unix)]
fn raw_stdout() -> io::Result<Box<dyn Write>> {
    use std::os::fd::AsFd;
    let fd = io::stdout().as_fd().try_clone_to_owned()?;
    Ok(Box::new(std::fs::File::from(fd)))
}

/// Standard output's handle, duplicated, as a file (see the Unix one),
/// unless it is a console, which `Stdout` writes to in UTF-16.
#[cfg(windows)]
fn raw_stdout() -> io::Result<Box<dyn Write>> {
    use std::io::IsTerminal;
    use std::os::windows::io::AsHandle;
    if io::stdout().is_terminal() {
        return Err(io::ErrorKind::Unsupported.into());
    }
    let handle = io::stdout().as_handle().try_clone_to_owned()?;
    Ok(Box::new(std::fs::File::from(handle)))
}

/// No descriptor to duplicate: `Stdout` it is.
#[cfg(not(any(unix, windows)))]
fn raw_stdout() -> io::Result<Box<dyn Write>> {
    Err(io::ErrorKind::Unsupported.into())
}
