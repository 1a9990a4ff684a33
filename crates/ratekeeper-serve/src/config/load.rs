//! Reading and checking config files (see the [module docs](super)).

/// A config file or folder that could not be used: which file, which line,
/// and what to write instead.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct ConfigFileError {
    file: String,
    line: usize,
    message: String,
}
