//! The async faces can move between tasks and threads: every future and
//! stream is `Send` (and the reservation `Send + Sync`) when its limiter is
//! shared that way, so `tokio::spawn` accepts them.

use std::sync::Arc;
use std::time::Duration;

use ratekeeper::tokio::{AsyncRateLimiter, Reservation, ThrottleExt};
use ratekeeper::{Pacer, Rate, SmoothBursty, TokenPool};
use ratekeeper_resilience4j::tokio::AsyncPermitLimiter;
use ratekeeper_resilience4j::{CycleLimiter, RefillLimiter};

fn send<T: Send>(t: T) -> T {
    t
}

fn send_sync<T: Send + Sync>(t: T) -> T {
    t
}

#[tokio::test]
async fn futures_streams_and_reservations_are_send() {
    // Real time (the limiters are on their default clocks): fail after a
    // generous bound instead of hanging if a wait never ends.
    tokio::time::timeout(Duration::from_secs(60), async {
        let pacer = Arc::new(Pacer::new(Rate::new(1e6).unwrap()).unwrap());
        let pool = TokenPool::new(Rate::new(1e6).unwrap()).unwrap();
        let bursty = SmoothBursty::new(1e6).unwrap();
        let refill = RefillLimiter::of_defaults("refill");
        let cycle = CycleLimiter::of_defaults("cycle");

        send(pacer.acquire_async()).await;
        send(pool.acquire_n_async(1)).await.unwrap();
        send(bursty.acquire_timeout_async(1, std::time::Duration::ZERO))
            .await
            .unwrap();
        assert!(send(refill.acquire_permission_async(1)).await.unwrap());
        assert!(send(cycle.acquire_permission_async(1)).await.unwrap());
        let r = send_sync(Reservation::new(pacer.clone(), 1, None).unwrap());
        tokio::spawn(r).await.unwrap();
        let items = futures_util::stream::iter([1, 2]).throttled(pacer.clone());
        let n = tokio::spawn(futures_util::StreamExt::count(send(items)))
            .await
            .unwrap();
        assert_eq!(n, 2);
    })
    .await
    .expect("timed out after 60 s");
}
