//! The CLI's own error type: what the user asked for is wrong. It imports
//! nothing from the subcommands, so that every module can use it.

use std::fmt;

/// An error in what the user asked for, found after argument parsing (for
/// example a pacer the library refuses to build): exits with status 2, like
/// clap's own usage errors.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}
