//! Reading and checking config files (see the [module docs](super)).

use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::parse::parse_domain;
use super::{Config, DomainConfig};

/// A config file or folder that could not be used: which file, which line,
/// and what to write instead.
///
/// It displays as `FILE:LINE: MESSAGE`, or `FILE: MESSAGE` when no line
/// applies (a file or folder that could not be read; the I/O error is its
/// [`source`](std::error::Error::source)).
///
/// # Examples
///
/// ```
/// use ratekeeper_serve::config::{Config, ConfigErrorKind};
///
/// let yaml = "domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: minutes, requests_per_unit: 5 }\n";
/// let err = Config::from_yaml(yaml, "api.yaml").unwrap_err();
/// assert_eq!(err.file(), "api.yaml");
/// assert_eq!(err.line(), 4);
/// assert_eq!(err.kind(), ConfigErrorKind::Invalid);
/// assert!(err.message().contains("write one of second, minute"));
/// ```
#[derive(Debug, thiserror::Error)]
#[error("{file}{}: {message}", At(*.line))]
pub struct ConfigFileError {
    file: String,
    line: usize,
    message: String,
    kind: ConfigErrorKind,
    #[source]
    source: Option<io::Error>,
}

/// What kind of problem a [`ConfigFileError`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    /// A file or folder could not be read; the line is 0.
    Io,
    /// The text is not valid YAML (or holds more than one document).
    Syntax,
    /// Valid YAML whose content is not a valid config: a missing, unknown or
    /// ill-typed field, or a value out of range.
    Invalid,
    /// A field of envoyproxy/ratelimit's that `ratekeeper serve` refuses.
    Unsupported,
    /// A domain defined by two files, or two sibling descriptors with the
    /// same key and value.
    Duplicate,
}

/// Displays `:LINE` for a line, nothing for line 0.
struct At(usize);

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => Ok(()),
            line => write!(f, ":{line}"),
        }
    }
}

impl ConfigFileError {
    pub(super) fn new(
        kind: ConfigErrorKind,
        file: &str,
        line: usize,
        message: impl Into<String>,
    ) -> Self {
        ConfigFileError {
            file: file.to_owned(),
            line,
            message: message.into(),
            kind,
            source: None,
        }
    }

    fn io(path: &Path, message: &str, source: io::Error) -> Self {
        let mut err = Self::new(ConfigErrorKind::Io, &path.display().to_string(), 0, message);
        err.source = Some(source);
        err
    }

    /// The file (or folder) at fault, as it was named to the loader.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The 1-based line of the offending item; 0 when the file or folder
    /// could not be read at all.
    pub fn line(&self) -> usize {
        self.line
    }

    /// What is wrong and what to write instead, without the file and line.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The kind of problem.
    pub fn kind(&self) -> ConfigErrorKind {
        self.kind
    }
}

impl Config {
    /// Reads a config file, or every `*.yaml` and `*.yml` file of a folder.
    ///
    /// Each file holds one domain. A folder's files are read in the order of
    /// their names; its subfolders and hidden files (names starting with
    /// `.`) are skipped. A path naming a file is read whatever its name.
    ///
    /// # Errors
    ///
    /// A [`ConfigFileError`] for the first problem found: a path that cannot
    /// be read ([`ConfigErrorKind::Io`]), a folder without a YAML file, an
    /// invalid file (see [`Config::from_yaml`]), or a domain defined by two
    /// files ([`ConfigErrorKind::Duplicate`], naming both).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::path::Path;
    /// use ratekeeper_serve::config::Config;
    ///
    /// let config = Config::load(Path::new("/etc/ratelimit/config"))?;
    /// for domain in &config.domains {
    ///     println!("{} from {}", domain.domain, domain.source);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load(path: &Path) -> Result<Config, ConfigFileError> {
        let meta = fs::metadata(path)
            .map_err(|e| ConfigFileError::io(path, "cannot read this path", e))?;
        let files = if meta.is_dir() {
            yaml_files(path)?
        } else {
            vec![path.to_path_buf()]
        };
        let mut domains: Vec<DomainConfig> = Vec::with_capacity(files.len());
        // Domain name -> (index in `domains`, line of its `domain`).
        let mut seen: HashMap<String, (usize, usize)> = HashMap::new();
        for file in files {
            let text = read_text(&file)?;
            let (domain, line) = parse_domain(&text, &file.display().to_string())?;
            if let Some(&(first, first_line)) = seen.get(&domain.domain) {
                return Err(duplicate_domain(&domain, line, &domains[first], first_line));
            }
            seen.insert(domain.domain.clone(), (domains.len(), line));
            domains.push(domain);
        }
        Ok(Config { domains })
    }

    /// Reads one file's text: one domain and its descriptors.
    ///
    /// `source` names the text in errors and becomes the domain's
    /// [`source`](DomainConfig::source), usually the file's path.
    ///
    /// # Errors
    ///
    /// A [`ConfigFileError`] with `source` as its file, the line of the
    /// offending item, and a message saying what to write instead: invalid
    /// YAML ([`ConfigErrorKind::Syntax`]), a missing, unknown or ill-typed
    /// field ([`ConfigErrorKind::Invalid`]), a field ratekeeper refuses
    /// ([`ConfigErrorKind::Unsupported`]), or two sibling descriptors with the
    /// same key and value ([`ConfigErrorKind::Duplicate`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper_serve::config::{Config, LimitConfig, Unit};
    ///
    /// let yaml = "\
    /// domain: api
    /// descriptors:
    ///   - key: user
    ///     rate_limit: { unit: MINUTE, requests_per_unit: 100 }
    ///     max_wait: 50ms
    /// ";
    /// let domain = Config::from_yaml(yaml, "api.yaml")?;
    /// assert_eq!(domain.domain, "api");
    /// let user = &domain.descriptors[0];
    /// assert_eq!(user.line, 3);
    /// let Some(LimitConfig::Limited(limit)) = &user.limit else { panic!() };
    /// assert_eq!(limit.unit, Unit::Minute);
    /// assert_eq!(limit.max_wait, Duration::from_millis(50));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_yaml(text: &str, source: &str) -> Result<DomainConfig, ConfigFileError> {
        parse_domain(text, source).map(|(domain, _)| domain)
    }
}

/// The folder's `*.yaml` and `*.yml` files, sorted by name.
fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>, ConfigFileError> {
    let unreadable = |e| ConfigFileError::io(dir, "cannot list this folder", e);
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).map_err(unreadable)? {
        let path = entry.map_err(unreadable)?.path();
        let hidden = path
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with('.'));
        let yaml = path
            .extension()
            .is_some_and(|ext| ext == "yaml" || ext == "yml");
        // `is_file` follows symlinks, as Kubernetes mounts ConfigMaps.
        if yaml && !hidden && path.is_file() {
            files.push(path);
        }
    }
    if files.is_empty() {
        return Err(ConfigFileError::new(
            ConfigErrorKind::Invalid,
            &dir.display().to_string(),
            0,
            "the folder has no *.yaml or *.yml file: add one file per domain",
        ));
    }
    files.sort();
    Ok(files)
}

fn read_text(file: &Path) -> Result<String, ConfigFileError> {
    fs::read_to_string(file).map_err(|e| {
        let message = if e.kind() == io::ErrorKind::InvalidData {
            "the file is not UTF-8 text: save it as UTF-8"
        } else {
            "cannot read this file"
        };
        ConfigFileError::io(file, message, e)
    })
}

fn duplicate_domain(
    domain: &DomainConfig,
    line: usize,
    first: &DomainConfig,
    first_line: usize,
) -> ConfigFileError {
    ConfigFileError::new(
        ConfigErrorKind::Duplicate,
        &domain.source,
        line,
        format!(
            "domain \"{}\" is already defined in {}:{}: give each file its own \
             domain, or merge the two files",
            domain.domain, first.source, first_line
        ),
    )
}
