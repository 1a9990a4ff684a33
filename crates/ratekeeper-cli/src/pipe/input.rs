//! `pipe`'s input: a reader thread that reads standard input in blocks, the
//! wait for its next block, and where the next line (or chunk) ends.

use std::io::{self, Read};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use anyhow::Context;

use crate::run::interrupt::Interrupt;

/// How much the reader thread reads at a time.
const READ_BLOCK: usize = 64 * 1024;

/// Blocks the reader may be ahead of the writer.
const READ_AHEAD: usize = 4;

/// How often a wait for input checks for Ctrl-C.
pub(super) const POLL: Duration = Duration::from_millis(20);

/// Starts the thread that reads standard input into a channel of at most
/// [`READ_AHEAD`] blocks, and returns the channel's receiving end.
pub(super) fn spawn_reader() -> anyhow::Result<Receiver<io::Result<Vec<u8>>>> {
    let (tx, blocks) = mpsc::sync_channel(READ_AHEAD);
    std::thread::Builder::new()
        .name("stdin".to_owned())
        .spawn(move || read_input(tx))
        .context("starting the thread that reads standard input")?;
    Ok(blocks)
}

/// Reads standard input in blocks into `blocks` until end of file, an
/// error, or the receiver hangs up.
fn read_input(blocks: mpsc::SyncSender<io::Result<Vec<u8>>>) {
    let stdin = io::stdin();
    let mut stdin = stdin.lock();
    loop {
        let mut buf = vec![0; READ_BLOCK];
        match stdin.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                buf.truncate(n);
                if blocks.send(Ok(buf)).is_err() {
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
pub(super) fn wait_for_input(
    blocks: &Receiver<io::Result<Vec<u8>>>,
    interrupt: &Interrupt,
) -> anyhow::Result<Input> {
    loop {
        match blocks.recv_timeout(POLL) {
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
