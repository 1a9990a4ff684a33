//! The Pacer's specialised paths (the average-mode `fetch_add`, the dual
//! timelines, the bounded compare-exchange forms, each with its own clock
//! read) against the general decision over a compact state that the keyed
//! limiter runs (`src/pacer/decision.rs`): on a manual clock, one key of a
//! [`Keyed`] built from the same configuration must grant exactly what the
//! [`Pacer`] grants, and refuse exactly what it refuses, on any sequence of
//! clock moves and reservations. The bounded retry loops
//! (`decision::take_bounded`, `decision::dual_bounded`) run on both sides,
//! so this checks what each side passes them; a bug inside a loop shared by
//! both sides (an off-by-one on the maximum wait) is left to the unit tests
//! in `src/pacer/tests.rs`.

use std::time::Duration;

use proptest::prelude::*;
use ratekeeper::config::LimiterConfig;
use ratekeeper::keyed::{Keyed, KeyedError};
use ratekeeper::{AcquireError, Grant, ManualClock, Pacer, Rate, RateLimiter};

#[derive(Debug, Clone)]
enum Step {
    /// Time spent outside the limiter, in tenths of a slot.
    Advance(u64),
    /// A reservation of `permits`, waiting at most `max` tenths of a slot.
    Reserve { permits: u32, max: Option<u64> },
}

fn strictness() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(0.5),
        Just(0.25),
        (0.01f64..1.0),
        Just(1.0),
        Just(1.1),
        (1.0f64..4.0),
    ]
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        2 => (0u64..40).prop_map(Step::Advance),
        3 => (1u32..4, prop::option::weighted(0.5, 0u64..30))
            .prop_map(|(permits, max)| Step::Reserve { permits, max }),
    ];
    prop::collection::vec(step, 1..80)
}

/// What a vector could name of a decision: the grant's times and size, or
/// the refusal.
type Outcome = Result<(u64, u64, u64, u32), AcquireError>;

fn outcome(g: Result<Grant, AcquireError>, scheduled: bool) -> Outcome {
    g.map(|g| {
        // A keyed strict limiter keeps one word and reports its next start
        // as the scheduled time; the Pacer reports its ideal timeline.
        let s = if scheduled { g.scheduled_nanos() } else { 0 };
        (s, g.ready_nanos(), g.started_nanos(), g.permits())
    })
}

fn run(rate: f64, strictness: f64, steps: &[Step]) -> Result<(), TestCaseError> {
    let clock = ManualClock::new(0);
    let pacer = Pacer::builder(Rate::new(rate).unwrap())
        .strictness(strictness)
        .build_with_clock(clock.clone())
        .unwrap();
    let config: LimiterConfig = format!("pacer:{rate},{strictness}").parse().unwrap();
    let keyed: Keyed<u8, ManualClock> = Keyed::builder()
        .build_with_clock(&config, clock.clone())
        .unwrap();
    let tenth = (pacer.nanos_per_op() / 10).max(1);
    // A key spaced by a burst slice no shorter than the op slice (strict
    // mode, or a burst ratio just above 1 whose slice rounds to the op's)
    // is kept by the one-word spacing rule, whose schedule is its next start.
    let burst = (1e9 / (rate * strictness)) as u64;
    let scheduled = !(strictness >= 1.0 && burst >= pacer.nanos_per_op());
    // The key is first seen when the pacer is built, so both start at 0.
    let first = [Step::Reserve {
        permits: 1,
        max: None,
    }];
    for (i, step) in first.iter().chain(steps).enumerate() {
        match *step {
            Step::Advance(t) => clock.advance_nanos(t * tenth),
            Step::Reserve { permits, max } => {
                let max = max.map(|m| Duration::from_nanos(m * tenth));
                let general = keyed.reserve(&0, permits, max).map_err(|e| match e {
                    KeyedError::Limiter(e) => e,
                    e => panic!("keyed refused a tracked key: {e}"),
                });
                let special = pacer.reserve(permits, max);
                prop_assert_eq!(
                    outcome(special, scheduled),
                    outcome(general, scheduled),
                    "step {} ({:?})",
                    i,
                    step
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn the_pacer_grants_what_the_general_decision_grants(
        rate in prop_oneof![Just(1000.0), Just(3.5), (1.0f64..1e7)],
        strictness in strictness(),
        steps in steps(),
    ) {
        run(rate, strictness, &steps)?;
    }
}
