//! `pipe`'s copy loop: rate changes asked for since the last item, the next
//! line (or chunk) of the input, its permits from the Pacer, and its write;
//! output goes out before every wait.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use ratekeeper::{AcquireError, DefaultClock, Pacer, RateLimiter};

use super::input::{next_item, Input, InputBuf, Next};
use super::live::{Gauges, Screen};
use super::output::{Output, DIRECT_WRITE, MAX_BATCH};
use super::schedule::{Reserved, Schedule};
use crate::run::interrupt::{self, Interrupt};
use crate::shared::SharedLimiter;

/// At most this many items go by without a look at the rate steps asked
/// for (at millions of lines a second, a few microseconds).
const STEP_CHECKS: u32 = 64;

/// Where a write's permits come from: the Pacer in this process, or a
/// limit shared through Redis (`--redis`), whose rate SIGUSR1 and SIGUSR2
/// do not change.
#[derive(Debug, Clone, Copy)]
pub(super) enum Limit<'a> {
    Pacer(&'a Pacer<DefaultClock>),
    Shared(&'a SharedLimiter),
}

/// What a request for a write's permits gave.
pub(super) enum Permit {
    /// Granted, and waited for.
    Granted(Reserved),
    /// Already paid for by the writes before it (`--bytes`: 0 ns owed, see
    /// [`Schedule::reserve`]): it goes at once.
    Paid,
    /// Ctrl-C ended the wait.
    Interrupted,
    /// The limit shared through Redis failed the copy, or cannot be used
    /// (it says why).
    LimitFailed,
}

/// The copy: the input not yet written, the output, and what was measured.
pub(super) struct Copy {
    /// The rate, what each write reserves, and the changes made to it.
    pub(super) schedule: Schedule,
    /// `--max-line`.
    max_line: Option<usize>,
    /// `lines` or `bytes`: what the rate counts.
    unit: &'static str,
    pub(super) output: Output,
    /// The progress line's gauges, and standard error for warnings.
    gauges: Arc<Gauges>,
    screen: Arc<Screen>,
    /// Standard input, and what was read and not yet written.
    input: InputBuf,
    /// Unwritten bytes known to hold no newline.
    scanned: usize,
    /// Whether standard input has ended.
    eof: bool,
    /// The schedule's start: the first input's first slot.
    pub(super) t0: Option<u64>,
    /// Permits taken: lines, or bytes with `--bytes`.
    pub(super) units: u64,
    /// When the last write's permits were granted (ready), and its share
    /// of the schedule in nanoseconds.
    pub(super) last_start: u64,
    pub(super) last_share_ns: u64,
    /// Time spent waiting for permits, and for input after the first.
    pub(super) rate_wait: Duration,
    pub(super) input_wait: Duration,
    /// Whether Ctrl-C ended the copy.
    pub(super) interrupted: bool,
    /// Items until the next look at the rate steps asked for.
    until_look: u32,
}

impl Copy {
    /// A copy on `schedule` (lines, or `--bytes` chunks), lines going out
    /// whole up to `max_line` bytes, counting `unit`s; its totals and rate
    /// go to `gauges`, its warnings to `screen`.
    pub(super) fn new(
        input: InputBuf,
        schedule: Schedule,
        max_line: Option<usize>,
        unit: &'static str,
        gauges: Arc<Gauges>,
        screen: Arc<Screen>,
    ) -> Copy {
        Copy {
            schedule,
            max_line,
            unit,
            output: Output::new(Arc::clone(&gauges)),
            gauges,
            screen,
            input,
            scanned: 0,
            eof: false,
            t0: None,
            units: 0,
            last_start: 0,
            last_share_ns: 0,
            rate_wait: Duration::ZERO,
            input_wait: Duration::ZERO,
            interrupted: false,
            until_look: 0,
        }
    }

    /// Copies standard input through `limit` until it ends,
    /// the output is closed or Ctrl-C, then writes out what was let
    /// through. Rate changes (SIGUSR1, SIGUSR2) apply from the next item.
    pub(super) fn run(&mut self, limit: Limit<'_>, interrupt: &Interrupt) -> anyhow::Result<()> {
        while !self.output.closed {
            self.look_at_rate_steps(limit, interrupt);
            let next = next_item(
                self.input.unwritten(),
                self.scanned,
                self.schedule.chunk(),
                self.max_line,
                self.eof,
            );
            let len = match next {
                Next::Item(len) => len,
                Next::More { scanned } => {
                    self.scanned = scanned;
                    if self.eof || !self.read_more(interrupt)? {
                        break;
                    }
                    continue;
                }
            };
            if interrupt.is_set() {
                self.interrupted = true;
                break;
            }
            let permit = self.permits(limit, len, interrupt)?;
            if let Permit::Interrupted | Permit::LimitFailed = permit {
                break;
            }
            self.write(len, &permit)?;
        }
        self.output.flush()
    }

    /// Takes the rate changes asked for since the last look, after a wait
    /// (for a permit or for input) and otherwise every [`STEP_CHECKS`]
    /// items: a look is an
    /// atomic swap, which would cost more than a line's own work at
    /// millions of lines a second.
    fn look_at_rate_steps(&mut self, limit: Limit<'_>, interrupt: &Interrupt) {
        self.until_look = self.until_look.saturating_sub(1);
        if self.until_look > 0 {
            return;
        }
        self.until_look = STEP_CHECKS;
        let steps = interrupt.take_rate_steps();
        if steps != 0 {
            self.change_rate(limit, steps);
        }
    }

    /// Makes `steps` rate changes (see [`Schedule::step`]) and shows them:
    /// the progress line's rate, and a warning for each one refused.
    fn change_rate(&mut self, limit: Limit<'_>, steps: i32) {
        let notes = match limit {
            Limit::Pacer(pacer) => self.schedule.step(pacer, steps, self.unit),
            Limit::Shared(_) => vec![self.schedule.refuse_steps(steps)],
        };
        for note in notes {
            self.screen.warn(&note);
        }
        self.gauges.set_rate(self.schedule.rate());
    }

    /// Reads more input onto the unwritten rest, or notes the end of the
    /// input; waits for it if none is there, writing out what was let
    /// through first. `false` if Ctrl-C came first.
    fn read_more(&mut self, interrupt: &Interrupt) -> anyhow::Result<bool> {
        let mut read = self.input.read_ready();
        if let Ok(Input::NotReady) = read {
            // Nothing to read now: out with what was let through.
            self.output.flush()?;
            let waited = Instant::now();
            read = self.input.wait_and_read(interrupt);
            if self.t0.is_some() {
                self.input_wait += waited.elapsed();
            }
            // A signal during the wait is seen before the next item.
            self.until_look = 0;
        }
        match read.context("reading standard input")? {
            Input::Read | Input::NotReady => {}
            Input::Eof => self.eof = true,
            Input::Interrupted => {
                self.interrupted = true;
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The permits of the next `len` bytes (a line or a chunk) from
    /// `limit`, waited for (after writing out what was let through, if
    /// there is a wait). The first request starts the schedule.
    fn permits(
        &mut self,
        limit: Limit<'_>,
        len: usize,
        interrupt: &Interrupt,
    ) -> anyhow::Result<Permit> {
        let reserved = match limit {
            Limit::Pacer(pacer) => {
                if self.t0.is_none() {
                    // The schedule starts with the first input.
                    pacer.restart();
                    self.t0 = Some(pacer.next_slot_nanos());
                }
                self.schedule
                    .reserve(pacer, len)
                    .context("the pacer refused a permit")?
            }
            Limit::Shared(shared) => {
                // A shared schedule has no restart: the copy starts now.
                self.t0.get_or_insert_with(|| shared.clock().now_nanos());
                match self.schedule.reserve_shared(shared, len) {
                    Ok(r) => Some(r),
                    // A signal closes the shared limiter: its refusal is
                    // the signal's.
                    Err(_) if interrupt.is_set() => {
                        self.interrupted = true;
                        return Ok(Permit::Interrupted);
                    }
                    Err(AcquireError::Unavailable | AcquireError::Misconfigured) => {
                        return Ok(Permit::LimitFailed)
                    }
                    Err(e) => {
                        return Err(anyhow::Error::new(e)
                            .context("the shared limit (--redis) refused a permit"))
                    }
                }
            }
        };
        let Some(Reserved { grant, share_ns }) = reserved else {
            return Ok(Permit::Paid);
        };
        if grant.delay_nanos() == 0 {
            return Ok(Permit::Granted(Reserved { grant, share_ns }));
        }
        self.output.flush()?;
        let waited = Instant::now();
        let grant = match limit {
            Limit::Pacer(pacer) => interrupt::wait_for_grant(pacer, grant, interrupt),
            Limit::Shared(shared) => interrupt::wait_for_grant(shared, grant, interrupt),
        };
        self.rate_wait += waited.elapsed();
        // A signal during the wait is seen before the next item.
        self.until_look = 0;
        self.interrupted = grant.is_none();
        Ok(match grant {
            Some(grant) => Permit::Granted(Reserved { grant, share_ns }),
            None => Permit::Interrupted,
        })
    }

    /// Lets the next `len` bytes of input (a line or a chunk, whose permits
    /// `permit` holds, if it needed any) through to the output.
    fn write(&mut self, len: usize, permit: &Permit) -> anyhow::Result<()> {
        let item = &self.input.unwritten()[..len];
        if len >= DIRECT_WRITE {
            // Big enough to be worth its own system call: straight out,
            // without a copy (after the batch, to keep the order).
            self.output.flush()?;
            self.output.write(item, 1)?;
        } else {
            self.output.push(item);
        }
        self.input.consume(len);
        self.scanned = 0;
        self.units += if self.schedule.counts_bytes() {
            len as u64
        } else {
            1
        };
        if let Permit::Granted(Reserved { grant, share_ns }) = permit {
            self.last_start = grant.started_nanos().max(grant.ready_nanos());
            self.last_share_ns = *share_ns;
        }
        if self.output.batch.len() >= MAX_BATCH {
            self.output.flush()?;
        }
        Ok(())
    }
}
