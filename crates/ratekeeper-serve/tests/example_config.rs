//! The example config the README points at loads, and decides as its
//! comments say.

use std::path::Path;
use std::time::Duration;

use ratekeeper::ManualClock;
use ratekeeper_serve::config::Config;
use ratekeeper_serve::{CheckRequest, Code, Descriptor, Limits};

fn limits() -> (Limits<ManualClock>, ManualClock) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/limits.yaml");
    let config = Config::load(&path).unwrap();
    let clock = ManualClock::new(0);
    let limits = Limits::builder()
        .build_with_clock(&config, clock.clone())
        .unwrap();
    (limits, clock)
}

fn admitted(limits: &Limits<ManualClock>, entries: &[(&str, &str)], n: usize) -> usize {
    let ask = CheckRequest::new("api", vec![Descriptor::new(entries.iter().copied())]);
    (0..n)
        .filter(|_| limits.check(&ask).unwrap().overall_code == Code::Ok)
        .count()
}

#[test]
fn the_example_decides_as_its_comments_say() {
    let (limits, clock) = limits();
    assert_eq!(admitted(&limits, &[("client_id", "a")], 150), 100);
    assert_eq!(admitted(&limits, &[("path", "/upload")], 20), 5);
    let upload_by = [("path", "/upload"), ("client_id", "a")];
    assert_eq!(admitted(&limits, &upload_by, 20), 2);
    assert_eq!(admitted(&limits, &[("partner", "p")], 10_001), 10_000);
    assert_eq!(
        admitted(&limits, &[("country", "nl")], 2_000),
        2_000,
        "shadow"
    );
    assert_eq!(admitted(&limits, &[("path", "/healthz")], 2_000), 2_000);
    // One every 0.6 s for a client; one every 2 s for the report job, held
    // up to 1 s.
    clock.advance(Duration::from_millis(600));
    assert_eq!(admitted(&limits, &[("client_id", "a")], 5), 1);
    let job = CheckRequest::new("api", vec![Descriptor::new([("job", "report")])]);
    let waits: Vec<_> = (0..3)
        .map(|_| limits.check(&job).unwrap())
        .map(|r| (r.overall_code, r.wait))
        .collect();
    assert_eq!(
        waits,
        [
            (Code::Ok, Duration::ZERO),
            (Code::OverLimit, Duration::ZERO),
            (Code::OverLimit, Duration::ZERO)
        ]
    );
    clock.advance(Duration::from_millis(1_000));
    let held = limits.check(&job).unwrap();
    assert_eq!(
        (held.overall_code, held.wait),
        (Code::Ok, Duration::from_millis(1_000))
    );
}
