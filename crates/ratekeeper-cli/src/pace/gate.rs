//! The gate `pace`'s workers wait at until the run starts, and the stop
//! rule it hands them.

use std::sync::{Condvar, Mutex, PoisonError};

/// When the workers stop.
#[derive(Debug, Clone, Copy)]
pub(super) enum Stop {
    /// Run until the shared clock passes this reading.
    Deadline(u64),
    /// Run until the shared countdown is used up.
    Count,
}

/// What the gate hands the workers when the run starts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Go {
    pub(super) stop: Stop,
    /// The run's start on the shared clock.
    pub(super) t0: u64,
    /// With --plot: the width of the time buckets ops are aggregated into.
    pub(super) bucket: Option<u64>,
}

/// The gate the workers wait at: `None` until the run starts; then the stop
/// rule and start, or `Err` if the run was called off before it started.
pub(super) type Gate = (Mutex<Option<Result<Go, ()>>>, Condvar);

pub(super) fn open_gate(gate: &Gate, value: Result<Go, ()>) {
    let (lock, cvar) = gate;
    *lock.lock().unwrap_or_else(PoisonError::into_inner) = Some(value);
    cvar.notify_all();
}

pub(super) fn wait_at_gate(gate: &Gate) -> Result<Go, ()> {
    let (lock, cvar) = gate;
    let mut state = lock.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        if let Some(v) = *state {
            return v;
        }
        state = cvar.wait(state).unwrap_or_else(PoisonError::into_inner);
    }
}
