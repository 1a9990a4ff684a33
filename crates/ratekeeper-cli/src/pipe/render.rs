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
        writeln!(f, "elapsed         {}", fmt_nanos(self.elapsed_ns))?;
        writeln!(f, "waited for rate {}", fmt_nanos(self.rate_wait_ns))?;
        writeln!(f, "waited for input {}", fmt_nanos(self.input_wait_ns))?;
        if self.output_closed {
            writeln!(f, "output closed   by its reader: the copy stopped there")?;
        }
        if self.interrupted {
            writeln!(f, "interrupted     by Ctrl-C: the copy stopped there")?;
        }
        Ok(())
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
        write!(f, "rate changes    {}", self.rate_changes)?;
        if self.rate_changes_refused > 0 {
            write!(
                f,
                " ({} refused: beyond the Pacer's range)",
                self.rate_changes_refused
            )?;
        }
        writeln!(f)
    }
}
