//! Machinery shared by the algorithm rooms and owned by none of them
//! (`pub(crate)` only): which cancelled reservations a limiter may take
//! back ([`cancel`]) and the hand-off of those it cannot to the next caller
//! ([`handoff`]). The algorithm folders (`pacer`, `pool`, `smooth`,
//! `refill`) import from here and from the crate's leaf modules, never from
//! one another (`scripts/check-rooms.sh` keeps it so).

pub(crate) mod cancel;
pub(crate) mod handoff;
