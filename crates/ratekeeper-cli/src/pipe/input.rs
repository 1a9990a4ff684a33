//! `pipe`'s input: a reader thread that reads standard input in blocks, the
//! wait for its next block, and where the next line (or chunk) ends.
//!
//! Blocks the copy is done with go back to the reader to be read into
//! again ([`Blocks::recycle`]), so that a fast copy does not allocate and
//! zero a new 64 KiB buffer for every read.

use std::io::{self, Read};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use anyhow::Context;

use crate::run::interrupt::Interrupt;

/// How much the reader thread reads at a time.
const READ_BLOCK: usize = 64 * 1024;

/// Blocks the reader may be ahead of the writer.
const READ_AHEAD: usize = 4;

/// How often a wait for input checks for Ctrl-C.
pub(super) const POLL: Duration = Duration::from_millis(20);

/// The reader thread's blocks of standard input, and the way back for
/// spent ones.
pub(super) struct Blocks {
    /// Blocks read (at most [`READ_AHEAD`] ahead), or the error that ended
    /// the reading; disconnected at end of file.
    pub(super) rx: Receiver<io::Result<Vec<u8>>>,
    spent: Sender<Vec<u8>>,
}

impl Blocks {
    /// Hands `buf` back to the reader to read into again, if it is about a
    /// block's size (a buffer that grew to hold a long line is dropped).
    pub(super) fn recycle(&self, buf: Vec<u8>) {
        if (READ_BLOCK..=2 * READ_BLOCK).contains(&buf.capacity()) {
            // The reader is gone at end of file: the buffer is dropped.
            let _ = self.spent.send(buf);
        }
    }
}

/// Starts the thread that reads standard input into a channel of at most
/// [`READ_AHEAD`] blocks, and returns its [`Blocks`].
pub(super) fn spawn_reader() -> anyhow::Result<Blocks> {
    let (tx, rx) = mpsc::sync_channel(READ_AHEAD);
    let (spent, reuse) = mpsc::channel();
    std::thread::Builder::new()
        .name("stdin".to_owned())
        .spawn(move || read_input(&tx, &reuse))
        .context("starting the thread that reads standard input")?;
    Ok(Blocks { rx, spent })
}

/// Reads standard input in blocks into `blocks` until end of file, an
/// error, or the receiver hangs up; reads into the buffers `reuse` hands
/// back where there are some.
fn read_input(blocks: &mpsc::SyncSender<io::Result<Vec<u8>>>, reuse: &Receiver<Vec<u8>>) {
    let stdin = io::stdin();
    let mut stdin = stdin.lock();
    let mut buf = Vec::new();
    loop {
        if buf.capacity() < READ_BLOCK {
            buf = reuse.try_recv().unwrap_or_default();
        }
        // A spent buffer keeps its length: only the part past it is zeroed.
        buf.resize(READ_BLOCK, 0);
        match stdin.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                buf.truncate(n);
                if blocks.send(Ok(std::mem::take(&mut buf))).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                let _ = blocks.send(Err(e));
                return;
            }
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

/// What a wait for input gave.
pub(super) enum Input {
    Block(Vec<u8>),
    Eof,
    Interrupted,
}

/// Waits for the next block of input, checking for Ctrl-C meanwhile.
pub(super) fn wait_for_input(blocks: &Blocks, interrupt: &Interrupt) -> anyhow::Result<Input> {
    loop {
        match blocks.rx.recv_timeout(POLL) {
            Ok(block) => return Ok(Input::Block(block.context("reading standard input")?)),
            Err(RecvTimeoutError::Disconnected) => return Ok(Input::Eof),
            Err(RecvTimeoutError::Timeout) => {
                if interrupt.is_set() {
                    return Ok(Input::Interrupted);
                }
            }
        }
    }
}
