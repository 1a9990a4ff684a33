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

/// The one line that says what to write instead of what clap refused, for
/// the mistakes people make most; `None` leaves clap's own error.
///
/// * a flag of another subcommand (`exec --batch`): whose flag it is, and
///   this one's counterpart if it has one (`--threads`, `--concurrency`);
/// * words before `exec`'s `--` (`exec --rate 5 curl URL`): the command
///   line with the command after `--`.
///
/// `cli` is the whole command line's definition, `argv` the arguments as
/// given (the program's name first).
pub fn clap_hint(err: &clap::Error, cli: &clap::Command, argv: &[String]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if err.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(given)) = err.get(ContextKind::InvalidArg) else {
        return None;
    };
    let at = argv.iter().position(|a| cli.find_subcommand(a).is_some())?;
    let sub = cli.find_subcommand(&argv[at])?;
    match given.strip_prefix("--") {
        Some(long) => other_subcommands_flag(cli, sub, long.split('=').next().unwrap_or(long)),
        None if sub.get_name() == "exec" && !given.starts_with('-') => {
            command_before_dashes(sub, &argv[at + 1..], given)
        }
        None => None,
    }
}

/// The counterparts of flags that say the same in different subcommands.
const COUNTERPARTS: [(&str, &str, &str); 2] = [
    ("threads", "exec", "--concurrency N, the runs at once"),
    ("concurrency", "pace", "--threads N, the worker threads"),
];

/// `--long`, which `sub` does not take: whose flag it is.
fn other_subcommands_flag(cli: &clap::Command, sub: &clap::Command, long: &str) -> Option<String> {
    let owners: Vec<&str> = cli
        .get_subcommands()
        .filter(|s| s.get_name() != sub.get_name())
        .filter(|s| s.get_arguments().any(|a| a.get_long() == Some(long)))
        .map(clap::Command::get_name)
        .collect();
    if owners.is_empty() {
        return None;
    }
    let name = sub.get_name();
    let counterpart = COUNTERPARTS
        .iter()
        .find(|(flag, s, _)| *flag == long && *s == name)
        .map(|(_, _, what)| format!("; {name}'s is {what}"))
        .unwrap_or_default();
    Some(format!(
        "--{long} is a flag of {} only, not of {name}{counterpart} (see ratekeeper {name} --help)",
        owners.join(" and ")
    ))
}

/// `exec`'s arguments `args` (after `exec`), where clap met the word
/// `first` before `--`: the same line with the command after `--`.
fn command_before_dashes(exec: &clap::Command, args: &[String], first: &str) -> Option<String> {
    // Skip the values of the flags that take one, so that a value equal to
    // the word is not taken for it.
    let takes_value = |word: &str| {
        exec.get_arguments().any(|a| {
            let named = match word.strip_prefix("--") {
                Some(long) => a.get_long() == Some(long),
                None => word.len() == 2 && a.get_short() == word[1..].chars().next(),
            };
            named && a.get_action().takes_values()
        })
    };
    let mut i = 0;
    let at = loop {
        let word = args.get(i)?;
        if word == "--" {
            return None;
        }
        if word == first {
            break i;
        }
        i += if takes_value(word) { 2 } else { 1 };
    };
    Some(format!(
        "put the command to run after --: ratekeeper exec {} -- {}",
        shell_words(&args[..at]),
        shell_words(&args[at..])
    ))
}

/// `words` as a shell would take them: a word with anything but
/// `[A-Za-z0-9_./:=@%+,-]` in single quotes.
pub(crate) fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_./:=@%+,-".contains(c));
            if plain {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
