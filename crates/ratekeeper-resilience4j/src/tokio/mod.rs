//! Async Resilience4j acquisition on tokio's timer (feature `tokio`).
//!
//! * [`AsyncPermitLimiter`]: Resilience4j's `acquirePermission`, async, for
//!   [`RefillLimiter`](crate::RefillLimiter) and
//!   [`CycleLimiter`](crate::CycleLimiter), with their events and waiting
//!   gauge.
//! * [`decorate`]: calls that take a permit before their future is created.
//!
//! # Cancel safety
//!
//! Every future here is cancel safe: dropped while it waits, an
//! acquisition ends as [`PendingPermission::cancel`](crate::PendingPermission::cancel)
//! (a `FAILED_ACQUIRE` event, no longer counted as waiting, its reservation
//! given back as far as the limiter allows, as the core's
//! [`RateLimiter::cancel`](ratekeeper::RateLimiter::cancel)); dropped before
//! its first poll, it decided nothing.

pub mod decorate;
mod permit;

pub use permit::{AcquirePermission, AsyncPermitLimiter};
