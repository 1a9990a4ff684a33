//! `pipe`'s input: standard input read into one buffer, the wait for more
//! of it, and where the next line (or chunk) ends.
//!
//! On Unix the copy reads standard input itself, on its own thread: a
//! `poll(2)` says whether a read would block, so a wait for input still
//! checks for Ctrl-C (and SIGTERM) every [`POLL`], and a fast copy pays two
//! system calls a block and no hand-off between threads (a reader thread
//! handing blocks over a channel cost three context switches a block, a
//! third of `cat`'s throughput). Elsewhere
//! a reader thread reads in blocks and hands them over.
//!
//! One buffer holds what was read and not yet written; a read appends to
//! it, after moving the unwritten rest (a piece of a line) to the front. It grows only to hold a line longer than a block (so memory
//! is bounded by the longest line, or `--max-line`), and shrinks back once
//! such a line is written.

use std::io::{self, Read};
use std::time::Duration;

use crate::run::interrupt::Interrupt;

/// How much one read asks for: a pipe's whole buffer on Linux.
const READ_BLOCK: usize = 64 * 1024;

/// A buffer grown past this for a long line goes back to [`READ_BLOCK`]
/// once the line is written.
const SHRINK_ABOVE: usize = 16 * READ_BLOCK;

/// How often a wait for input checks for Ctrl-C.
pub(super) const POLL: Duration = Duration::from_millis(20);

/// What a read of standard input gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Input {
    /// Some bytes were appended to the unwritten input.
    Read,
    /// Standard input has ended.
    Eof,
    /// Nothing to read yet (a read would block).
    NotReady,
    /// Ctrl-C (or SIGTERM, SIGHUP) came during the wait.
    Interrupted,
}

/// Standard input, and what was read from it and not yet written.
pub(super) struct InputBuf {
    stdin: Stdin,
    rest: Unwritten,
}

impl InputBuf {
    /// Standard input, not yet read.
    ///
    /// # Errors
    ///
    /// Standard input cannot be duplicated (Unix), or the reader thread
    /// cannot be started (elsewhere).
    pub(super) fn new() -> io::Result<InputBuf> {
        Ok(InputBuf {
            stdin: Stdin::open()?,
            rest: Unwritten::default(),
        })
    }

    /// The input read and not yet written.
    pub(super) fn unwritten(&self) -> &[u8] {
        self.rest.bytes()
    }

    /// Marks the first `n` unwritten bytes as written.
    pub(super) fn consume(&mut self, n: usize) {
        self.rest.consume(n);
    }

    /// Reads what standard input has ready, without waiting.
    pub(super) fn read_ready(&mut self) -> io::Result<Input> {
        if !self.stdin.ready(Duration::ZERO)? {
            return Ok(Input::NotReady);
        }
        self.read()
    }

    /// Waits for input and reads it, checking `interrupt` every [`POLL`].
    pub(super) fn wait_and_read(&mut self, interrupt: &Interrupt) -> io::Result<Input> {
        while !self.stdin.ready(POLL)? {
            if interrupt.is_set() {
                return Ok(Input::Interrupted);
            }
        }
        self.read()
    }

    /// One read of standard input (which will not block) onto the end of
    /// the unwritten input.
    fn read(&mut self) -> io::Result<Input> {
        loop {
            match self.stdin.read(self.rest.room()) {
                Ok(0) => return Ok(Input::Eof),
                Ok(n) => {
                    self.rest.filled(n);
                    return Ok(Input::Read);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// A buffer of input read and not yet written: bytes `pos..end` of `buf`,
/// which is zeroed once up to its length.
#[derive(Debug, Default)]
struct Unwritten {
    buf: Vec<u8>,
    pos: usize,
    end: usize,
}

impl Unwritten {
    fn bytes(&self) -> &[u8] {
        &self.buf[self.pos..self.end]
    }

    fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.end - self.pos);
        self.pos += n;
    }

    /// Room for at least a block after the unwritten bytes: they move to
    /// the front, and the buffer (two blocks) grows only if they (a line
    /// longer than a block) leave less than a block; a buffer grown for a long line shrinks back once
    /// the line is written.
    fn room(&mut self) -> &mut [u8] {
        if self.pos == self.end {
            (self.pos, self.end) = (0, 0);
            if self.buf.len() > SHRINK_ABOVE {
                self.buf = Vec::new();
            }
        }
        if self.buf.len() - self.end < READ_BLOCK && self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            (self.pos, self.end) = (0, self.end - self.pos);
        }
        if self.buf.len() - self.end < READ_BLOCK {
            // Two blocks at first: the rest of one read then moves to the
            // front rather than growing the buffer.
            self.buf
                .resize((self.end + READ_BLOCK).max(2 * READ_BLOCK), 0);
        }
        &mut self.buf[self.end..]
    }

    /// Notes that `n` bytes were read into [`room`](Self::room).
    fn filled(&mut self, n: usize) {
        debug_assert!(self.end + n <= self.buf.len());
        self.end += n;
    }
}

/// Standard input's descriptor, duplicated, read directly after a `poll`.
#[cfg(unix)]
struct Stdin(std::fs::File);

#[cfg(unix)]
impl Stdin {
    fn open() -> io::Result<Stdin> {
        use std::os::fd::AsFd;
        Ok(Stdin(io::stdin().as_fd().try_clone_to_owned()?.into()))
    }

    /// Whether a read would not block (input, end of file or an error to
    /// report), waiting up to `timeout` for it; `false` on a signal.
    fn ready(&self, timeout: Duration) -> io::Result<bool> {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        let timeout = Timespec::try_from(timeout).map_err(io::Error::other)?;
        let mut fds = [PollFd::new(&self.0, PollFlags::IN)];
        match poll(&mut fds, Some(&timeout)) {
            Ok(n) => Ok(n > 0),
            Err(rustix::io::Errno::INTR) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

/// A thread reading standard input in blocks, handed over a channel.
#[cfg(not(unix))]
struct Stdin {
    blocks: std::sync::mpsc::Receiver<io::Result<Vec<u8>>>,
    /// A block received by `ready` and not yet read.
    held: Option<io::Result<Vec<u8>>>,
    ended: bool,
}

#[cfg(not(unix))]
impl Stdin {
    fn open() -> io::Result<Stdin> {
        let (tx, blocks) = std::sync::mpsc::sync_channel(4);
        std::thread::Builder::new()
            .name("stdin".to_owned())
            .spawn(move || read_blocks(&tx))?;
        Ok(Stdin {
            blocks,
            held: None,
            ended: false,
        })
    }

    /// Whether a block (or the end) has come, waiting up to `timeout`.
    fn ready(&mut self, timeout: Duration) -> io::Result<bool> {
        use std::sync::mpsc::RecvTimeoutError;
        if self.held.is_some() || self.ended {
            return Ok(true);
        }
        match self.blocks.recv_timeout(timeout) {
            Ok(block) => self.held = Some(block),
            Err(RecvTimeoutError::Disconnected) => self.ended = true,
            Err(RecvTimeoutError::Timeout) => return Ok(false),
        }
        Ok(true)
    }

    /// The held block (whole: `buf` is at least a block long), or 0 at the
    /// end.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.held.take() {
            Some(block) => {
                let block = block?;
                buf[..block.len()].copy_from_slice(&block);
                Ok(block.len())
            }
            None => Ok(0),
        }
    }
}

/// Reads standard input in blocks into `blocks` until end of file, an
/// error, or the receiver hangs up.
#[cfg(not(unix))]
fn read_blocks(blocks: &std::sync::mpsc::SyncSender<io::Result<Vec<u8>>>) {
    let mut stdin = io::stdin().lock();
    loop {
        let mut buf = vec![0; READ_BLOCK];
        let sent = match stdin.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                buf.truncate(n);
                blocks.send(Ok(buf))
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = blocks.send(Err(e));
                return;
            }
        };
        if sent.is_err() {
            return;
        }
    }
}

/// What comes next in the buffer of unwritten input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// A unit of this many bytes: a line, a piece of a line at the
    /// `--max-line` cap, or a chunk of `--bytes`.
    Item(usize),
    /// No whole unit yet; the first `scanned` bytes hold no newline, so the
    /// next search starts after them (each byte is searched once: linear
    /// time however long the line).
    More { scanned: usize },
}

/// What the next unit of `input` is. `scanned`: bytes at its start already
/// known to hold no newline; `chunk`: `--bytes` mode's chunk size;
/// `max_line`: the longest unit a line may be before it goes out in
/// pieces; `eof`: no more input will come.
pub(super) fn next_item(
    input: &[u8],
    scanned: usize,
    chunk: Option<usize>,
    max_line: Option<usize>,
    eof: bool,
) -> Next {
    if let Some(chunk) = chunk {
        return match input.len() {
            0 => Next::More { scanned: 0 },
            n => Next::Item(n.min(chunk)),
        };
    }
    let cap = max_line.unwrap_or(usize::MAX);
    let end = input.len().min(cap);
    let from = scanned.min(end);
    match memchr::memchr(b'\n', &input[from..end]) {
        Some(i) => Next::Item(from + i + 1),
        // A line at the cap goes out as it is, the rest after it.
        None if end == cap => Next::Item(cap),
        // A last line without a newline.
        None if eof && end > 0 => Next::Item(end),
        None => Next::More { scanned: end },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `data` into `rest` as a read of standard input would.
    fn read(rest: &mut Unwritten, data: &[u8]) {
        let room = rest.room();
        assert!(room.len() >= READ_BLOCK.min(data.len()));
        room[..data.len()].copy_from_slice(data);
        rest.filled(data.len());
    }

    #[test]
    fn a_read_appends_after_the_unwritten_rest() {
        let mut rest = Unwritten::default();
        read(&mut rest, b"one\ntw");
        rest.consume(4);
        read(&mut rest, b"o\n");
        assert_eq!(rest.bytes(), b"two\n");
        assert_eq!(rest.buf.len(), 2 * READ_BLOCK, "no growth for short lines");
    }

    #[test]
    fn the_rest_moves_to_the_front_when_a_block_would_not_fit() {
        let mut rest = Unwritten::default();
        let block = vec![b'x'; READ_BLOCK];
        read(&mut rest, &block);
        read(&mut rest, b"ab");
        rest.consume(READ_BLOCK - 1);
        read(&mut rest, b"yz");
        assert_eq!(rest.pos, 0);
        assert_eq!(rest.bytes(), b"xabyz");
        assert_eq!(rest.buf.len(), 2 * READ_BLOCK);
    }

    #[test]
    fn memory_follows_the_longest_line_and_goes_back() {
        let mut rest = Unwritten::default();
        let block = vec![b'x'; READ_BLOCK];
        // A line of 20 blocks without a newline: linear growth, one block
        // of room past it at most.
        for _ in 0..20 {
            read(&mut rest, &block);
        }
        assert_eq!(rest.bytes().len(), 20 * READ_BLOCK);
        assert!(rest.buf.len() <= 21 * READ_BLOCK, "{}", rest.buf.len());
        rest.consume(20 * READ_BLOCK);
        read(&mut rest, b"\n");
        assert_eq!(rest.bytes(), b"\n");
        assert_eq!(rest.buf.len(), 2 * READ_BLOCK, "shrunk back once written");
    }
}
