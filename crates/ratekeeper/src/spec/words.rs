//! [`Verb`] and [`Scope`]: the words of a rate spec.

use core::fmt;

/// What applying a [`RateSpec`](super::RateSpec) does to a limiter's run state.
///
/// Every verb first applies the spec's rate and burst ratio (creating the
/// limiter if needed). Words are matched ASCII case-insensitively when parsed.
///
/// # Examples
///
/// ```
/// use ratekeeper::Verb;
///
/// assert_eq!("Restart".parse::<Verb>()?, Verb::Restart);
/// assert_eq!(Verb::default(), Verb::Start);
/// assert_eq!(Verb::Configure.to_string(), "configure");
/// assert!("begin".parse::<Verb>().is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Verb {
    /// Apply the parameters without changing the run state: an idle limiter
    /// stays idle and a running one keeps its schedule.
    Configure,
    /// Start metering now (the default). The start time is the origin of the
    /// average rate and of the accumulated wait time.
    #[default]
    Start,
    /// Clear the backlog and the accumulated wait time, as if the limiter were
    /// started afresh now.
    Restart,
    /// Return to idle. The backlog is checkpointed into the total wait time; the
    /// next acquire or start begins a fresh schedule.
    Stop,
}

impl Verb {
    /// Every verb, in declaration order.
    pub const ALL: [Verb; 4] = [Verb::Configure, Verb::Start, Verb::Restart, Verb::Stop];

    /// The word for this verb: `"configure"`, `"start"`, `"restart"` or `"stop"`.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Verb::Configure => "configure",
            Verb::Start => "start",
            Verb::Restart => "restart",
            Verb::Stop => "stop",
        }
    }

    /// The verb named by `word`, ASCII case-insensitively, without trimming.
    pub(super) fn from_word(word: &str) -> Option<Verb> {
        Verb::ALL
            .into_iter()
            .find(|v| word.eq_ignore_ascii_case(v.as_str()))
    }
}

impl fmt::Display for Verb {
    /// The word from [`Verb::as_str`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who shares the limit of a [`RateSpec`](super::RateSpec).
///
/// # Examples
///
/// ```
/// use ratekeeper::Scope;
///
/// assert_eq!("THREAD".parse::<Scope>()?, Scope::Thread);
/// assert_eq!(Scope::default(), Scope::Activity);
/// assert_eq!(Scope::Activity.to_string(), "activity");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Scope {
    /// One limiter shared by all threads of the activity; the rate is the total
    /// (the default).
    #[default]
    Activity,
    /// Every thread gets its own limiter at this rate, so the total is
    /// `rate × threads`.
    Thread,
}

impl Scope {
    /// Every scope, in declaration order.
    pub const ALL: [Scope; 2] = [Scope::Activity, Scope::Thread];

    /// The word for this scope: `"activity"` or `"thread"`.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Scope::Activity => "activity",
            Scope::Thread => "thread",
        }
    }

    /// The scope named by `word`, ASCII case-insensitively, without trimming.
    pub(super) fn from_word(word: &str) -> Option<Scope> {
        Scope::ALL
            .into_iter()
            .find(|s| word.eq_ignore_ascii_case(s.as_str()))
    }
}

impl fmt::Display for Scope {
    /// The word from [`Scope::as_str`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
