//! Async acquires (feature `tokio`): tasks on a tokio runtime share one
//! Pacer and await their permits on tokio's timer, so no thread blocks.
//!
//! Run with `cargo run -p ratekeeper --features tokio --example async`
//! (about 0.3 s).

use std::sync::Arc;
use std::time::Duration;

// `AsyncRateLimiter` adds `acquire_async` and friends to every limiter.
use ratekeeper::tokio::AsyncRateLimiter;
use ratekeeper::{Pacer, Rate};
use tokio::time::Instant;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 50 permits per second (one every 20 ms), shared through an `Arc`.
    let pacer = Arc::new(Pacer::new(Rate::new(50.0)?)?);
    let start = Instant::now();

    // Three tasks take four permits each: twelve permits, 20 ms apart, in
    // whatever order the tasks ask.
    let mut tasks = Vec::new();
    for task in 0..3 {
        let pacer = Arc::clone(&pacer);
        tasks.push(tokio::spawn(async move {
            for _ in 0..4 {
                // Sleeps on tokio's timer until this permit's slot.
                pacer.acquire_async().await;
                println!("task {task} at {:3} ms", start.elapsed().as_millis());
            }
        }));
    }
    for task in tasks {
        task.await?;
    }

    // With a timeout: refused at once, reserving nothing, when the permit
    // would come later than that. The next slot is under 20 ms away here.
    for timeout in [Duration::from_millis(5), Duration::from_millis(50)] {
        let asked = Instant::now();
        match pacer.acquire_timeout_async(1, timeout).await {
            Ok(_) => println!("within {timeout:?}: a permit after {:?}", asked.elapsed()),
            Err(e) => println!("within {timeout:?}: refused ({e})"),
        }
    }
    Ok(())
}
