//! Calls that take a permit first: Resilience4j's `RateLimiter.decorate*`
//! and `execute*`.
//!
//! [`call`] runs one call if a [`PermitLimiter`] grants its permits;
//! [`RateLimited`] turns a closure or function (`Fn`, `FnMut` or `FnOnce`)
//! into one that does so on every call, with a fixed permit count or one
//! computed from the argument, and a drain policy consulted after each call
//! (Resilience4j's `drainPermissionsOnResult`).
//!
//! A call first acquires its permits with
//! [`acquire_permission`](PermitLimiter::acquire_permission): granted at
//! once, it runs; granted after a wait within the limiter's timeout, it
//! blocks the thread until then and runs; refused (the wait would exceed the
//! timeout), it returns [`NotPermitted`] **at once, without running**.
//! Requests that can never be granted (zero permits, more than a refill
//! limiter's capacity) are [`NotPermitted`] too, carrying the
//! [`PermitError`] as their [`permit_error`](NotPermitted::permit_error)
//! and `source()`.
//!
//! ```
//! use std::time::Duration;
//! use ratekeeper::ManualClock;
//! use ratekeeper_resilience4j::decorate::{self, RateLimited};
//! use ratekeeper_resilience4j::{PermitLimiter, RefillConfig, RefillLimiter};
//!
//! let config = RefillConfig::builder()
//!     .limit_for_period(2)
//!     .limit_refresh_period(Duration::from_secs(1))
//!     .timeout(Duration::ZERO)
//!     .build()?;
//! let limiter = RefillLimiter::new_with_clock("backend", config, ManualClock::new(0));
//!
//! // One call.
//! assert_eq!(decorate::call(&limiter, 1, || 6 * 7)?, 42);
//!
//! // A decorated function: every call takes a permit first.
//! let double = RateLimited::new(&limiter).decorate(|x: u32| x * 2);
//! assert_eq!(double(4)?, 8);
//! let refused = double(5).unwrap_err(); // no permit left, timeout 0: not called
//! assert_eq!(refused.to_string(), "RateLimiter 'backend' does not permit further calls");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Resilience4j's decorators here
//!
//! | Resilience4j | here |
//! |---|---|
//! | `waitForPermission(rl, permits)` | [`wait_for_permission`] |
//! | `executeSupplier(permits, s)`, `executeRunnable`, `executeCallable` | [`call`], [`RateLimited::call`] |
//! | `decorateFunction(rl, permits, f)`, `decorateSupplier`, `decorateCallable` | [`RateLimited::decorate`] (`Fn`) |
//! | `decorateConsumer`, `decorateRunnable` (stateful) | [`RateLimited::decorate_mut`] (`FnMut`) |
//! | (one-shot) | [`RateLimited::decorate_once`] (`FnOnce`) |
//! | `decorateFunction(rl, permitsCalculator, f)` | [`RateLimited::permits_with`] |
//! | `drainPermissionsOnResult` + `onResult` / `onError` | [`RateLimited::drain_when`] |
//! | `RequestNotPermitted` | [`NotPermitted`] |
//!
//! Checked variants need nothing special: a function that returns a
//! `Result` is decorated like any other, and its result (`Ok` or `Err`) is
//! what the drain policy sees, as Resilience4j's predicate sees
//! `Either<Throwable, result>`. A panic is not a result: it propagates
//! without consulting the drain policy.
//!
//! Decorating futures (Resilience4j `decorateCompletionStage`,
//! `decorateFuture`) belongs to the async adapters and is not here; the
//! blocking calls of this module must not be used from an async task.

use core::fmt;

use crate::{PermitError, PermitLimiter};

/// A call was not run: its limiter refused the permits (Resilience4j's
/// `RequestNotPermitted`), or they can never be granted as asked.
///
/// # Examples
///
/// ```
/// use ratekeeper_resilience4j::decorate::NotPermitted;
/// use ratekeeper_resilience4j::PermitError;
///
/// let e = NotPermitted::new("testName");
/// assert_eq!(e.to_string(), "RateLimiter 'testName' does not permit further calls");
/// assert_eq!(e.limiter_name(), "testName");
/// assert_eq!(e.permit_error(), None); // refused now: a later call may succeed
///
/// let e = NotPermitted::invalid("testName", PermitError::InvalidPermits);
/// assert_eq!(e.to_string(), "RateLimiter 'testName' can never grant the permits asked for");
/// assert_eq!(e.permit_error(), Some(PermitError::InvalidPermits));
/// // The cause is the `source()`, not repeated in the message.
/// let source = std::error::Error::source(&e).map(|s| s.to_string());
/// assert_eq!(source, Some(PermitError::InvalidPermits.to_string()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotPermitted {
    limiter_name: Box<str>,
    /// `None`: refused by the timeout. `Some`: never grantable.
    cause: Option<PermitError>,
}

impl NotPermitted {
    /// The limiter named `limiter_name` refused the permits: their wait
    /// would exceed its timeout.
    pub fn new(limiter_name: impl Into<String>) -> NotPermitted {
        NotPermitted {
            limiter_name: limiter_name.into().into_boxed_str(),
            cause: None,
        }
    }

    /// The limiter named `limiter_name` can never grant the permits asked
    /// for, as `cause` says.
    pub fn invalid(limiter_name: impl Into<String>, cause: PermitError) -> NotPermitted {
        NotPermitted {
            limiter_name: limiter_name.into().into_boxed_str(),
            cause: Some(cause),
        }
    }

    /// The name of the limiter that did not permit the call (Resilience4j
    /// `getCausingRateLimiterName()`).
    pub fn limiter_name(&self) -> &str {
        &self.limiter_name
    }

    /// Why the permits can never be granted (zero permits, more than the
    /// capacity), or `None` if they were refused only because the wait
    /// would exceed the timeout, so that a later call may succeed.
    pub fn permit_error(&self) -> Option<PermitError> {
        self.cause
    }
}

impl fmt::Display for NotPermitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.cause {
            None => write!(
                f,
                "RateLimiter '{}' does not permit further calls",
                self.limiter_name
            ),
            Some(_) => write!(
                f,
                "RateLimiter '{}' can never grant the permits asked for",
                self.limiter_name
            ),
        }
    }
}

impl std::error::Error for NotPermitted {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause
            .as_ref()
            .map(|c| c as &(dyn std::error::Error + 'static))
    }
}

/// Acquires `permits` from `limiter`, blocking until they may go
/// (Resilience4j `waitForPermission`).
///
/// # Errors
///
/// [`NotPermitted`] if the limiter refuses them (at once, nothing reserved)
/// or can never grant them.
///
/// # Examples
///
/// ```
/// use ratekeeper::ManualClock;
/// use ratekeeper_resilience4j::decorate::wait_for_permission;
/// use ratekeeper_resilience4j::{PermitError, RefillConfig, RefillLimiter};
///
/// let limiter = RefillLimiter::new_with_clock("api", RefillConfig::default(), ManualClock::new(0));
/// assert!(wait_for_permission(&limiter, 50).is_ok());
/// let err = wait_for_permission(&limiter, 51).unwrap_err();
/// assert_eq!(
///     err.permit_error(),
///     Some(PermitError::ExceedsCapacity { requested: 51, capacity: 50 })
/// );
/// ```
pub fn wait_for_permission<L: PermitLimiter + ?Sized>(
    limiter: &L,
    permits: u32,
) -> Result<(), NotPermitted> {
    match limiter.acquire_permission(permits) {
        Ok(true) => Ok(()),
        Ok(false) => Err(NotPermitted::new(limiter.name())),
        Err(e) => Err(NotPermitted::invalid(limiter.name(), e)),
    }
}

/// Runs `f` once `limiter` grants `permits` (Resilience4j
/// `executeSupplier(permits, s)`); `f` is not run if it does not.
///
/// # Errors
///
/// [`NotPermitted`] as [`wait_for_permission`]; `f` was not called.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use ratekeeper::ManualClock;
/// use ratekeeper_resilience4j::decorate;
/// use ratekeeper_resilience4j::{CycleConfig, CycleLimiter};
///
/// let config = CycleConfig::builder().limit_for_period(1).timeout(Duration::ZERO).build()?;
/// let limiter = CycleLimiter::new_with_clock("api", config, ManualClock::new(0));
/// let mut calls = 0;
/// assert_eq!(decorate::call(&limiter, 1, || { calls += 1; "done" })?, "done");
/// assert!(decorate::call(&limiter, 1, || { calls += 1; "done" }).is_err());
/// assert_eq!(calls, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn call<L: PermitLimiter + ?Sized, T>(
    limiter: &L,
    permits: u32,
    f: impl FnOnce() -> T,
) -> Result<T, NotPermitted> {
    wait_for_permission(limiter, permits)?;
    Ok(f())
}

/// How many permits a call takes: ratekeeper's [`PermitCount`] (a fixed
/// `u32`, or a closure of the argument).
pub use ratekeeper::PermitCount;

/// Whether a call's output drains the limiter: [`NeverDrain`], or a closure
/// `Fn(&T) -> bool` (Resilience4j's `drainPermissionsOnResult`).
///
/// # Examples
///
/// ```
/// use ratekeeper_resilience4j::decorate::{DrainPolicy, NeverDrain};
///
/// let too_many = |r: &Result<u32, u16>| matches!(r, Err(429));
/// assert!(too_many.should_drain(&Err(429)));
/// assert!(!too_many.should_drain(&Ok(200)));
/// assert!(!DrainPolicy::<Result<u32, u16>>::should_drain(&NeverDrain, &Err(429)));
/// ```
pub trait DrainPolicy<T: ?Sized> {
    /// Whether `output` should drain the limiter's permits.
    fn should_drain(&self, output: &T) -> bool;
}

/// The drain policy that never drains: the default of [`RateLimited`].
///
/// ```
/// use ratekeeper_resilience4j::decorate::{DrainPolicy, NeverDrain};
///
/// assert!(!NeverDrain.should_drain(&"any output"));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NeverDrain;

impl<T: ?Sized> DrainPolicy<T> for NeverDrain {
    fn should_drain(&self, _: &T) -> bool {
        false
    }
}

impl<T: ?Sized, F: Fn(&T) -> bool> DrainPolicy<T> for F {
    fn should_drain(&self, output: &T) -> bool {
        self(output)
    }
}

/// A limiter with the permits each call takes and when a call's output
/// drains it: the decorator of [`call`](Self::call)s and of functions
/// ([`decorate`](Self::decorate), [`decorate_mut`](Self::decorate_mut),
/// [`decorate_once`](Self::decorate_once)).
///
/// `L` is any [`PermitLimiter`]: a limiter by value, `&L` or `Arc<L>`.
/// `P` is the permit count ([`PermitCount`]: 1 unless set), `D` the drain
/// policy ([`DrainPolicy`]: [`NeverDrain`] unless set).
///
/// # Examples
///
/// A backend client that takes one permit per item of a batch and closes
/// the period when the backend answers 429 (Too Many Requests):
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use ratekeeper::ManualClock;
/// use ratekeeper_resilience4j::decorate::RateLimited;
/// use ratekeeper_resilience4j::{PermitLimiter, RefillConfig, RefillLimiter};
///
/// let config = RefillConfig::builder()
///     .limit_for_period(10)
///     .limit_refresh_period(Duration::from_secs(1))
///     .timeout(Duration::ZERO)
///     .build()?;
/// let limiter = Arc::new(RefillLimiter::new_with_clock("backend", config, ManualClock::new(0)));
///
/// let send = RateLimited::new(limiter.clone())
///     .permits_with(|batch: &Vec<u32>| batch.len() as u32)
///     .drain_when(|status: &Result<(), u16>| matches!(status, Err(429)))
///     .decorate(|batch: Vec<u32>| if batch.contains(&0) { Err(429) } else { Ok(()) });
///
/// assert_eq!(send(vec![1, 2, 3])?, Ok(())); // 3 permits
/// assert_eq!(limiter.metrics().available_permissions, 7);
/// assert_eq!(send(vec![0])?, Err(429)); // the backend refused: drained
/// assert_eq!(limiter.metrics().available_permissions, 0);
/// assert!(send(vec![4]).is_err()); // not called
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RateLimited<L, P = u32, D = NeverDrain> {
    limiter: L,
    permits: P,
    drain: D,
}

impl<L: PermitLimiter> RateLimited<L> {
    /// Calls guarded by `limiter`, one permit each, never draining.
    ///
    /// ```
    /// use ratekeeper::ManualClock;
    /// use ratekeeper_resilience4j::decorate::RateLimited;
    /// use ratekeeper_resilience4j::{PermitLimiter, RefillConfig, RefillLimiter};
    ///
    /// let limiter = RefillLimiter::new_with_clock("api", RefillConfig::default(), ManualClock::new(0));
    /// let guarded = RateLimited::new(&limiter);
    /// assert_eq!(guarded.call(|| 1)?, 1);
    /// assert_eq!(limiter.metrics().available_permissions, 49);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(limiter: L) -> RateLimited<L> {
        RateLimited {
            limiter,
            permits: 1,
            drain: NeverDrain,
        }
    }
}

impl<L, P, D> RateLimited<L, P, D> {
    /// Every call takes `permits`.
    ///
    /// ```
    /// use ratekeeper::ManualClock;
    /// use ratekeeper_resilience4j::decorate::RateLimited;
    /// use ratekeeper_resilience4j::{PermitError, PermitLimiter, RefillConfig, RefillLimiter};
    ///
    /// let limiter = RefillLimiter::new_with_clock("api", RefillConfig::default(), ManualClock::new(0));
    /// RateLimited::new(&limiter).permits(5).call(|| ())?;
    /// assert_eq!(limiter.metrics().available_permissions, 45);
    ///
    /// // Zero permits is an error, not a panic; the call is not run.
    /// let err = RateLimited::new(&limiter).permits(0).call(|| unreachable!()).unwrap_err();
    /// assert_eq!(err.permit_error(), Some(PermitError::InvalidPermits));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn permits(self, permits: u32) -> RateLimited<L, u32, D> {
        RateLimited {
            limiter: self.limiter,
            permits,
            drain: self.drain,
        }
    }

    /// Every call takes the permits `calculate` computes from its argument
    /// (Resilience4j's `permitsCalculator`), before the call. The closure's
    /// argument type must be written out (`|arg: &A| ...`).
    ///
    /// ```
    /// use ratekeeper::ManualClock;
    /// use ratekeeper_resilience4j::decorate::RateLimited;
    /// use ratekeeper_resilience4j::{PermitLimiter, RefillConfig, RefillLimiter};
    ///
    /// let limiter = RefillLimiter::new_with_clock("api", RefillConfig::default(), ManualClock::new(0));
    /// let upload = RateLimited::new(&limiter)
    ///     .permits_with(|bytes: &&[u8]| bytes.len() as u32)
    ///     .decorate(|bytes: &[u8]| bytes.len());
    /// assert_eq!(upload(b"hello")?, 5);
    /// assert_eq!(limiter.metrics().available_permissions, 45);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn permits_with<F>(self, calculate: F) -> RateLimited<L, F, D> {
        RateLimited {
            limiter: self.limiter,
            permits: calculate,
            drain: self.drain,
        }
    }

    /// After every call, drains the limiter's permits
    /// ([`PermitLimiter::drain_permissions`]) if `drain_when(&output)` is
    /// true: Resilience4j's `drainPermissionsOnResult`, consulted by
    /// `onResult` / `onError` (see [`PermitLimiter::on_result`]). The
    /// closure's argument type must be written out (`|out: &T| ...`).
    ///
    /// ```
    /// use ratekeeper::ManualClock;
    /// use ratekeeper_resilience4j::decorate::RateLimited;
    /// use ratekeeper_resilience4j::{PermitLimiter, RefillConfig, RefillLimiter};
    ///
    /// let limiter = RefillLimiter::new_with_clock("api", RefillConfig::default(), ManualClock::new(0));
    /// let guarded = RateLimited::new(&limiter).drain_when(|r: &Result<u8, String>| r.is_err());
    /// guarded.call(|| Ok(1))?;
    /// assert_eq!(limiter.metrics().available_permissions, 49);
    /// guarded.call(|| Err("quota exceeded".to_owned()))?;
    /// assert_eq!(limiter.metrics().available_permissions, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn drain_when<F>(self, drain_when: F) -> RateLimited<L, P, F> {
        RateLimited {
            limiter: self.limiter,
            permits: self.permits,
            drain: drain_when,
        }
    }

    /// The limiter.
    ///
    /// ```
    /// use ratekeeper_resilience4j::decorate::RateLimited;
    /// use ratekeeper_resilience4j::{PermitLimiter, RefillLimiter};
    ///
    /// let guarded = RateLimited::new(RefillLimiter::of_defaults("api"));
    /// assert_eq!(guarded.limiter().name(), "api");
    /// ```
    pub fn limiter(&self) -> &L {
        &self.limiter
    }
}

impl<L: PermitLimiter, P, D> RateLimited<L, P, D> {
    /// Runs `f(arg)` once the limiter grants the permits for `arg`, then
    /// consults the drain policy with its output.
    ///
    /// # Errors
    ///
    /// [`NotPermitted`] if the limiter refuses the permits or can never
    /// grant them; `f` was not called.
    ///
    /// ```
    /// use ratekeeper::ManualClock;
    /// use ratekeeper_resilience4j::decorate::RateLimited;
    /// use ratekeeper_resilience4j::{PermitLimiter, RefillConfig, RefillLimiter};
    ///
    /// let limiter = RefillLimiter::new_with_clock("api", RefillConfig::default(), ManualClock::new(0));
    /// let guarded = RateLimited::new(&limiter).permits_with(|n: &u32| *n);
    /// assert_eq!(guarded.call_with(20, |n| n + 1)?, 21);
    /// assert_eq!(limiter.metrics().available_permissions, 30);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn call_with<A, T>(&self, arg: A, f: impl FnOnce(A) -> T) -> Result<T, NotPermitted>
    where
        P: PermitCount<A>,
        D: DrainPolicy<T>,
    {
        wait_for_permission(&self.limiter, self.permits.permits_for(&arg))?;
        let output = f(arg);
        if self.drain.should_drain(&output) {
            self.limiter.drain_permissions();
        }
        Ok(output)
    }

    /// Runs `f()` once the limiter grants the permits, then consults the
    /// drain policy with its output (Resilience4j `executeSupplier`).
    ///
    /// # Errors
    ///
    /// As [`call_with`](Self::call_with).
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper::ManualClock;
    /// use ratekeeper_resilience4j::decorate::RateLimited;
    /// use ratekeeper_resilience4j::{CycleConfig, CycleLimiter};
    ///
    /// let config = CycleConfig::builder().limit_for_period(2).timeout(Duration::ZERO).build()?;
    /// let limiter = CycleLimiter::new_with_clock("api", config, ManualClock::new(0));
    /// let guarded = RateLimited::new(&limiter).permits(2);
    /// assert_eq!(guarded.call(|| "ok")?, "ok");
    /// assert_eq!(guarded.call(|| "ok").unwrap_err().limiter_name(), "api");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn call<T>(&self, f: impl FnOnce() -> T) -> Result<T, NotPermitted>
    where
        P: PermitCount<()>,
        D: DrainPolicy<T>,
    {
        self.call_with((), |()| f())
    }

    /// `f` as a function that takes its permits first on every call
    /// (Resilience4j `decorateFunction`). For a function of no argument,
    /// decorate `|()| ...` and call it with `()`. The decorated function
    /// is `Send` and `Sync` if the limiter, the policies and `f` are, so it
    /// can be shared by threads.
    ///
    /// # Errors
    ///
    /// The decorated function returns [`NotPermitted`] as
    /// [`call_with`](Self::call_with), without calling `f`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper::ManualClock;
    /// use ratekeeper_resilience4j::decorate::RateLimited;
    /// use ratekeeper_resilience4j::{CycleConfig, CycleLimiter};
    ///
    /// let config = CycleConfig::builder().limit_for_period(3).timeout(Duration::ZERO).build()?;
    /// let limiter = CycleLimiter::new_with_clock("api", config, ManualClock::new(0));
    /// let square = RateLimited::new(&limiter).decorate(|x: u64| x * x);
    /// let results: Vec<_> = (1..=4).map(|x| square(x).ok()).collect();
    /// assert_eq!(results, [Some(1), Some(4), Some(9), None]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn decorate<A, T>(self, f: impl Fn(A) -> T) -> impl Fn(A) -> Result<T, NotPermitted>
    where
        P: PermitCount<A>,
        D: DrainPolicy<T>,
    {
        move |arg| self.call_with(arg, &f)
    }

    /// `f`, a function with state, as one that takes its permits first on
    /// every call (Resilience4j `decorateConsumer`, `decorateRunnable`).
    ///
    /// # Errors
    ///
    /// The decorated function returns [`NotPermitted`] as
    /// [`call_with`](Self::call_with), without calling `f`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ratekeeper::ManualClock;
    /// use ratekeeper_resilience4j::decorate::RateLimited;
    /// use ratekeeper_resilience4j::{CycleConfig, CycleLimiter};
    ///
    /// let config = CycleConfig::builder().limit_for_period(2).timeout(Duration::ZERO).build()?;
    /// let limiter = CycleLimiter::new_with_clock("api", config, ManualClock::new(0));
    /// let mut log = Vec::new();
    /// let mut push = RateLimited::new(&limiter).decorate_mut(|line: &str| log.push(line.to_owned()));
    /// for line in ["a", "b", "c"] {
    ///     let _ = push(line);
    /// }
    /// drop(push);
    /// assert_eq!(log, ["a", "b"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn decorate_mut<A, T>(
        self,
        mut f: impl FnMut(A) -> T,
    ) -> impl FnMut(A) -> Result<T, NotPermitted>
    where
        P: PermitCount<A>,
        D: DrainPolicy<T>,
    {
        move |arg| self.call_with(arg, &mut f)
    }

    /// `f`, a function that can run once, as one that takes its permits
    /// first.
    ///
    /// # Errors
    ///
    /// The decorated function returns [`NotPermitted`] as
    /// [`call_with`](Self::call_with), without calling `f`.
    ///
    /// ```
    /// use ratekeeper::ManualClock;
    /// use ratekeeper_resilience4j::decorate::RateLimited;
    /// use ratekeeper_resilience4j::{RefillConfig, RefillLimiter};
    ///
    /// let limiter = RefillLimiter::new_with_clock("api", RefillConfig::default(), ManualClock::new(0));
    /// let report = String::from("done");
    /// let send = RateLimited::new(&limiter).decorate_once(move |suffix: &str| report + suffix);
    /// assert_eq!(send("!")?, "done!");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn decorate_once<A, T>(
        self,
        f: impl FnOnce(A) -> T,
    ) -> impl FnOnce(A) -> Result<T, NotPermitted>
    where
        P: PermitCount<A>,
        D: DrainPolicy<T>,
    {
        move |arg| self.call_with(arg, f)
    }
}

impl<L: PermitLimiter, P, D> fmt::Debug for RateLimited<L, P, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimited")
            .field("limiter", &self.limiter.name())
            .field("permits", &core::any::type_name::<P>())
            .field("drain", &core::any::type_name::<D>())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
