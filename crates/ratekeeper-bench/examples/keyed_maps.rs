//! Keyed maps: the concurrent maps a keyed limiter could keep its
//! per-key states in, measured on one workload, beside the current `Keyed`,
//! governor's keyed limiter, the floor, and a prototype table of our own
//! (module `own`): check throughput and bytes per live key.
//!
//! ```text
//! cargo run --release -p ratekeeper-bench --example keyed_maps
//! cargo run --release -p ratekeeper-bench --example keyed_maps -- \
//!     --threads 1,2 --keys 1000,1000000 --millis 400 --mem-keys 1000000
//! ```
//!
//! One check, the same for every map: read the clock (`DefaultClock`, the
//! one `Keyed` reads), find the `u64` key's state word, and decide on it as
//! the pacer's average mode does (`next = max(state, now) + slice`, granted
//! if `state ≤ now + tolerance`) with a compare-exchange loop. All keys are
//! inserted before the timing; each thread walks `0..keys` by xorshift
//! scaled with a multiply (Lemire), as `keyed_report` does. Maps hash with
//! foldhash unless the row says otherwise. `Keyed` is `pacer:100M,0` built
//! as `keyed_report` builds it (cap twice the keys); governor is its keyed
//! limiter (dashmap) with its default hash (SipHash-1-3), and with foldhash.
//! Our tables are sized from a cap equal to the key count (full: 3/4 of
//! their slots live).
//!
//! Memory: the resident-set growth of a child process that builds one
//! structure holding `--mem-keys` keys, divided by the key count.

#[path = "common/mod.rs"]
mod common;

use common::rss_bytes;
use std::error::Error;
use std::hash::{BuildHasher, RandomState};
use std::num::NonZeroU32;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::sync::ShardedLock;
use governor::{Quota, RateLimiter as Governor};
use hashbrown::HashTable;
use ratekeeper::config::LimiterConfig;
use ratekeeper::keyed::{KeyHasher, Keyed};
use ratekeeper::{Clock, DefaultClock};

/// 100 M permits a second a key: one permit every 10 ns.
const SLICE: u64 = 10;
/// `pacer:100M,0`: no burst beyond the schedule.
const TOLERANCE: u64 = 0;

type Fold = foldhash::fast::RandomState;
type Check = Box<dyn Fn(u64) -> bool + Sync>;

/// Every candidate, in the order of the table.
const ROWS: [&str; 13] = [
    "keyed",
    "governor",
    "governor-fold",
    "papaya",
    "scc-map",
    "scc-index",
    "dashmap-raw",
    "leapfrog",
    "hashbrown-lock",
    "own-128",
    "own-64",
    "own-64-lock",
    "floor",
];

/// The average-mode pacer's decision on one state word: a
/// compare-exchange loop, granted if the key's schedule is not ahead of
/// `now` by more than the tolerance.
#[inline(always)]
fn decide(word: &AtomicU64, now: u64) -> bool {
    // Ordering: Acquire; this decision happens-after the one that last
    // advanced the word.
    let mut seen = word.load(Ordering::Acquire);
    loop {
        if seen > now + TOLERANCE {
            return false;
        }
        let next = seen.max(now) + SLICE;
        // Ordering: AcqRel on success, ordered after the last advance and
        // before the next; Acquire on failure to retry on the fresh value.
        match word.compare_exchange_weak(seen, next, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return true,
            Err(now_seen) => seen = now_seen,
        }
    }
}

/// A prototype table of our own: open addressing over 64-byte buckets,
/// each one cache line holding the fingerprints and states of four keys.
/// See `Table128`'s docs for the protocol.
mod own {
    use std::hash::BuildHasher;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Mutex;

    use portable_atomic::AtomicU128;

    /// A slot never used: a lookup that meets one in a bucket stops there.
    pub const EMPTY: u64 = 0;
    /// A slot whose key was evicted: free for an insert, skipped by lookups.
    pub const TOMB: u64 = 1;
    /// `own-64` only: a slot claimed, its state not yet written.
    pub const RESERVED: u64 = 2;
    /// Slots a bucket holds: 4 × 16 bytes = one 64-byte line.
    const SLOTS: usize = 4;
    /// Buckets a key may live in: its home and the next `WINDOW - 1`. A
    /// lookup stops sooner, at the first bucket with an `EMPTY` slot. At
    /// 3/4 full, linear probing over 4-slot buckets leaves 13 % of keys
    /// past their home bucket and 0.35 % 8 or more buckets past it (the
    /// most: 29–46 buckets at 0.1–1 M keys, simulated): a window of 8
    /// refused keys while the table had room.
    const WINDOW: usize = 64;
    /// Live keys at most per slot: the cap sizes the table at 3/4 full.
    const LOAD_NUM: usize = 3;
    const LOAD_DEN: usize = 4;
    /// Insert stripes (new keys only; lookups and updates take none).
    const STRIPES: usize = 64;

    /// Four keys' `(fingerprint, state)` pairs, each one 128-bit word.
    #[repr(align(64))]
    #[derive(Default)]
    struct Bucket([AtomicU128; SLOTS]);

    /// The table with one 128-bit word a slot: `fingerprint << 64 | state`.
    ///
    /// # Protocol
    ///
    /// - **Fingerprint**: a seeded 64-bit hash of the key, `EMPTY`, `TOMB`
    ///   and `RESERVED` remapped (so two keys share a slot only if their
    ///   64-bit hashes collide; a `u64` key can use a bijective mixer
    ///   instead and never collide).
    /// - **A slot's word changes only by compare-exchange of the whole
    ///   word**, so every decision compares the key's identity and its
    ///   state in one instant: `(fp, s) → (fp, s')` succeeds only if the
    ///   slot still holds *this key* with *this state*. An evicted slot
    ///   (`(TOMB, 0)`) or one reused by another key fails the exchange and
    ///   the caller looks the key up again. If the same key was evicted and
    ///   re-inserted into the same slot with the same state, the exchange
    ///   succeeds, and rightly: the decision was made on the key's current
    ///   state. No ABA can change a decision.
    /// - **Insert** (new keys; under the key's stripe mutex, so two inserts
    ///   of one key cannot land in two slots): look the key up again, then
    ///   claim the first free slot (`EMPTY` or `TOMB`) in probe order by one
    ///   exchange to `(fp, fresh)`: key and state appear together, so no
    ///   reader sees a half-initialised slot, and no `RESERVED` marker is
    ///   needed.
    /// - **Evict** (lock-free): `(fp, s) → (TOMB, 0)` after deciding on `s`
    ///   that the key is fresh or holds only credit: the exchange fails if
    ///   any decision advanced `s` meanwhile, so a key is never dropped on a
    ///   stale reading.
    /// - **Lookup** stops at a bucket holding an `EMPTY` slot: `EMPTY` is
    ///   only ever the first state of a slot, and an insert takes the first
    ///   free slot in probe order, so no key lives past a bucket that has
    ///   one now.
    pub struct Table128<S> {
        /// The buckets, any count (a home bucket is the fingerprint scaled
        /// by a multiply, no modulo). Never reallocated: lock-free readers
        /// need no reclamation.
        buckets: Box<[Bucket]>,
        hasher: S,
        /// Serialises inserts of keys of the same stripe (their home
        /// bucket's); holds nothing.
        stripes: Box<[Mutex<()>]>,
        /// Live keys; `live ≤ cap` is kept by inserts.
        live: AtomicU64,
        cap: u64,
    }

    impl<S: BuildHasher> Table128<S> {
        pub fn with_cap(cap: usize, hasher: S) -> Self {
            let buckets = (cap * LOAD_DEN).div_ceil(LOAD_NUM * SLOTS).max(1);
            Table128 {
                buckets: (0..buckets).map(|_| Bucket::default()).collect(),
                hasher,
                stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
                live: AtomicU64::new(0),
                cap: cap as u64,
            }
        }

        #[inline(always)]
        pub fn fingerprint(&self, key: u64) -> u64 {
            let h = self.hasher.hash_one(key);
            if h <= RESERVED {
                h + 3
            } else {
                h
            }
        }

        #[inline(always)]
        fn home(&self, fp: u64) -> usize {
            ((u128::from(fp) * self.buckets.len() as u128) >> 64) as usize
        }

        /// The slot holding `fp` and its word, if any.
        #[inline(always)]
        pub fn find(&self, fp: u64) -> Option<(&AtomicU128, u128)> {
            let n = self.buckets.len();
            let mut b = self.home(fp);
            for _ in 0..WINDOW {
                let mut empty = false;
                for slot in &self.buckets[b].0 {
                    // Ordering: Acquire; a slot published by an insert's
                    // exchange is read with its state.
                    let word = slot.load(Ordering::Acquire);
                    let f = (word >> 64) as u64;
                    if f == fp {
                        return Some((slot, word));
                    }
                    empty |= f == EMPTY;
                }
                if empty {
                    return None;
                }
                b = if b + 1 == n { 0 } else { b + 1 };
            }
            None
        }

        /// The average-mode decision for `key` now, inserting it fresh if
        /// new; `false` if refused or the key's window has no room.
        #[inline(always)]
        pub fn check(&self, key: u64, now: u64) -> bool {
            let fp = self.fingerprint(key);
            loop {
                let Some((slot, mut word)) = self.find(fp) else {
                    match self.insert(fp, now) {
                        Some(granted) => return granted,
                        None => continue,
                    }
                };
                loop {
                    let seen = word as u64;
                    if seen > now + super::TOLERANCE {
                        return false;
                    }
                    let next = (u128::from(fp) << 64) | u128::from(seen.max(now) + super::SLICE);
                    // Ordering: AcqRel on success, after the decision that
                    // last advanced this key; Acquire on failure to retry.
                    match slot.compare_exchange_weak(
                        word,
                        next,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => return true,
                        Err(w) if (w >> 64) as u64 == fp => word = w,
                        // Evicted or reused: look the key up again.
                        Err(_) => break,
                    }
                }
            }
        }

        /// A new key: `Some(decision)` on its fresh state, `None` if it
        /// turned out present (decide on it), `Some(false)` if no room.
        #[cold]
        fn insert(&self, fp: u64, now: u64) -> Option<bool> {
            let home = self.home(fp);
            let stripe = home * STRIPES / self.buckets.len();
            let _held = self.stripes[stripe]
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if self.find(fp).is_some() {
                return None;
            }
            // Ordering: Relaxed; a gauge, its bound kept by the stripes'
            // exchanges (a prototype: the cap's exactness across stripes
            // needs a fetch_add reservation, not this check).
            if self.live.load(Ordering::Relaxed) >= self.cap {
                return Some(false);
            }
            // The fresh state decided on at once: granted.
            let word = (u128::from(fp) << 64) | u128::from(now + super::SLICE);
            let n = self.buckets.len();
            let mut b = home;
            for _ in 0..WINDOW {
                for slot in &self.buckets[b].0 {
                    // Ordering: Acquire; the slot's latest word.
                    let cur = slot.load(Ordering::Acquire);
                    let f = (cur >> 64) as u64;
                    if f != EMPTY && f != TOMB {
                        continue;
                    }
                    // Ordering: AcqRel; publishes key and state together
                    // (Release) after the lookup above (Acquire).
                    if slot
                        .compare_exchange(cur, word, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        // Ordering: Relaxed; a gauge.
                        self.live.fetch_add(1, Ordering::Relaxed);
                        return Some(true);
                    }
                }
                b = if b + 1 == n { 0 } else { b + 1 };
            }
            Some(false)
        }

        /// Drops `key` if `recovered` says its state may go: exact, the
        /// state decided on is the state removed. `true` if dropped.
        pub fn evict_if(&self, key: u64, recovered: impl Fn(u64) -> bool) -> bool {
            let fp = self.fingerprint(key);
            while let Some((slot, word)) = self.find(fp) {
                if !recovered(word as u64) {
                    return false;
                }
                // Ordering: AcqRel; after the decision that set the state
                // judged (Acquire), and the tombstone seen by inserts that
                // reuse the slot (Release).
                if slot
                    .compare_exchange(
                        word,
                        u128::from(TOMB) << 64,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    )
                    .is_ok()
                {
                    // Ordering: Relaxed; a gauge.
                    self.live.fetch_sub(1, Ordering::Relaxed);
                    return true;
                }
            }
            false
        }

        pub fn live(&self) -> u64 {
            // Ordering: Relaxed; a gauge.
            self.live.load(Ordering::Relaxed)
        }
    }

    /// One slot of `Table64`: a fingerprint and a state, separate words.
    #[derive(Default)]
    struct Slot64 {
        /// `EMPTY`, `RESERVED` (claimed, state being written), or a key's
        /// fingerprint, published with Release after `state`.
        fp: AtomicU64,
        state: AtomicU64,
    }

    #[repr(align(64))]
    #[derive(Default)]
    struct Bucket64([Slot64; SLOTS]);

    /// The same table with 64-bit words: decisions exchange the state
    /// alone. Exact only while no slot is ever reused (no eviction), or
    /// with evictions under a lock readers also take: a reader between
    /// finding the fingerprint and its exchange could otherwise decide on
    /// another key's equal state (ABA). Measured to price the 128-bit word.
    pub struct Table64<S> {
        buckets: Box<[Bucket64]>,
        hasher: S,
    }

    impl<S: BuildHasher> Table64<S> {
        pub fn with_cap(cap: usize, hasher: S) -> Self {
            let buckets = (cap * LOAD_DEN).div_ceil(LOAD_NUM * SLOTS).max(1);
            Table64 {
                buckets: (0..buckets).map(|_| Bucket64::default()).collect(),
                hasher,
            }
        }

        #[inline(always)]
        pub fn fingerprint(&self, key: u64) -> u64 {
            let h = self.hasher.hash_one(key);
            if h <= RESERVED {
                h + 3
            } else {
                h
            }
        }

        #[inline(always)]
        fn home(&self, fp: u64) -> usize {
            ((u128::from(fp) * self.buckets.len() as u128) >> 64) as usize
        }

        #[inline(always)]
        pub fn get(&self, key: u64) -> Option<&AtomicU64> {
            self.get_fp(self.fingerprint(key))
        }

        /// The state of the key whose fingerprint is `fp`, if present.
        #[inline(always)]
        pub fn get_fp(&self, fp: u64) -> Option<&AtomicU64> {
            let n = self.buckets.len();
            let mut b = self.home(fp);
            for _ in 0..WINDOW {
                let mut empty = false;
                for slot in &self.buckets[b].0 {
                    // Ordering: Acquire; pairs with the Release publishing
                    // the fingerprint after the state was written.
                    let f = slot.fp.load(Ordering::Acquire);
                    if f == fp {
                        return Some(&slot.state);
                    }
                    empty |= f == EMPTY;
                }
                if empty {
                    return None;
                }
                b = if b + 1 == n { 0 } else { b + 1 };
            }
            None
        }

        /// Inserts `key` (absent; single-threaded prefill in this program).
        pub fn insert(&self, key: u64, state: u64) -> bool {
            let fp = self.fingerprint(key);
            let n = self.buckets.len();
            let mut b = self.home(fp);
            for _ in 0..WINDOW {
                for slot in &self.buckets[b].0 {
                    // Ordering: AcqRel; claims the slot for this insert
                    // alone before its state is written.
                    if slot
                        .fp
                        .compare_exchange(EMPTY, RESERVED, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                    {
                        // Ordering: Relaxed; published by the Release below.
                        slot.state.store(state, Ordering::Relaxed);
                        // Ordering: Release; a reader that sees the
                        // fingerprint sees the state.
                        slot.fp.store(fp, Ordering::Release);
                        return true;
                    }
                }
                b = if b + 1 == n { 0 } else { b + 1 };
            }
            false
        }
    }
}

struct Args {
    threads: Vec<usize>,
    keys: Vec<u64>,
    millis: u64,
    mem_keys: u64,
    rounds: usize,
    rows: Vec<String>,
    child: Option<String>,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let list = |s: &str| -> Result<Vec<u64>, Box<dyn Error>> {
        s.split(',').map(|v| Ok(v.trim().parse::<u64>()?)).collect()
    };
    let mut args = Args {
        threads: vec![1, 2],
        keys: vec![1000, 1_000_000],
        millis: 400,
        mem_keys: 1_000_000,
        rounds: 3,
        rows: ROWS.map(str::to_owned).to_vec(),
        child: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--threads" => args.threads = list(&value)?.into_iter().map(|t| t as usize).collect(),
            "--keys" => args.keys = list(&value)?,
            "--millis" => args.millis = value.parse()?,
            "--mem-keys" => args.mem_keys = value.parse()?,
            "--rounds" => args.rounds = value.parse()?,
            "--rows" => args.rows = value.split(',').map(str::to_owned).collect(),
            "--child-mem" => args.child = Some(value),
            _ => return Err(format!("unknown flag {flag}").into()),
        }
    }
    Ok(args)
}

/// `name`'s structure holding keys `0..keys` (our tables sized from a cap
/// of `cap_factor × keys`), and its check.
fn build(name: &str, keys: u64, cap_factor: u64) -> Result<Check, Box<dyn Error>> {
    let clock = DefaultClock::new();
    let start = clock.now_nanos();
    let n = usize::try_from(keys)?;
    let cap = usize::try_from(keys.max(64) * cap_factor)?;
    let quota = Quota::per_second(NonZeroU32::new(100_000_000).expect("non-zero"));
    Ok(match name {
        "keyed" => {
            let config: LimiterConfig = "pacer:100M,0".parse()?;
            let k: Keyed<u64, DefaultClock, KeyHasher> = Keyed::builder()
                .max_keys(usize::try_from(keys.max(64) * 2)?)
                .build_with_hasher(&config, clock, KeyHasher::default())?;
            (0..keys).for_each(|key| drop(k.try_acquire(&key)));
            Box::new(move |key| k.try_acquire(&key).is_ok())
        }
        "governor" => {
            let g = Governor::<u64, _, _, _>::dashmap_with_hasher(quota, RandomState::new());
            (0..keys).for_each(|key| drop(g.check_key(&key)));
            Box::new(move |key| g.check_key(&key).is_ok())
        }
        "governor-fold" => {
            let g = Governor::<u64, _, _, _>::dashmap_with_hasher(quota, Fold::default());
            (0..keys).for_each(|key| drop(g.check_key(&key)));
            Box::new(move |key| g.check_key(&key).is_ok())
        }
        "papaya" => {
            let m = papaya::HashMap::with_capacity_and_hasher(n, Fold::default());
            {
                let pinned = m.pin();
                for key in 0..keys {
                    let _ = pinned.insert(key, AtomicU64::new(start));
                }
            }
            Box::new(move |key| {
                let now = clock.now_nanos();
                m.pin().get(&key).is_some_and(|w| decide(w, now))
            })
        }
        "scc-map" => {
            let m = scc::HashMap::with_capacity_and_hasher(n, Fold::default());
            (0..keys).for_each(|key| drop(m.insert_sync(key, AtomicU64::new(start))));
            Box::new(move |key| {
                let now = clock.now_nanos();
                m.read_sync(&key, |_, w| decide(w, now)).unwrap_or(false)
            })
        }
        "scc-index" => {
            let m = scc::HashIndex::with_capacity_and_hasher(n, Fold::default());
            (0..keys).for_each(|key| drop(m.insert_sync(key, AtomicU64::new(start))));
            Box::new(move |key| {
                let now = clock.now_nanos();
                m.peek_with(&key, |_, w| decide(w, now)).unwrap_or(false)
            })
        }
        "dashmap-raw" => {
            let m = dashmap::DashMap::with_capacity_and_hasher(n, Fold::default());
            for key in 0..keys {
                let _ = m.insert(key, AtomicU64::new(start));
            }
            Box::new(move |key: u64| {
                let now = clock.now_nanos();
                let hash = m.hash_usize(&key);
                let shard = m.shards()[m.determine_shard(hash)].read();
                shard
                    .get(hash as u64, |(k, _)| *k == key)
                    .is_some_and(|(_, w)| decide(w.get(), now))
            })
        }
        "leapfrog" => {
            let m =
                leapfrog::LeapMap::<u64, u64, foldhash::fast::FixedState>::with_capacity_and_hasher(
                    n.max(8).next_power_of_two(),
                    foldhash::fast::FixedState::default(),
                );
            for key in 0..keys {
                let _ = m.insert(key, start);
            }
            // leapfrog exchanges the value in its own loop (`update`), which
            // always writes: the decision is made on the value it replaced.
            Box::new(move |key| {
                let now = clock.now_nanos();
                m.get_mut(&key)
                    .and_then(|mut r| r.update(|v| *v = (*v).max(now) + SLICE))
                    .is_some_and(|old| old <= now + TOLERANCE)
            })
        }
        "hashbrown-lock" => {
            let hasher = Fold::default();
            let mut tables: Vec<HashTable<(u64, AtomicU64)>> =
                (0..64).map(|_| HashTable::new()).collect();
            let shard_of = |hash: u64| ((u128::from(hash) * 64) >> 64) as usize;
            for key in 0..keys {
                let hash = hasher.hash_one(key);
                tables[shard_of(hash)]
                    .insert_unique(hash, (key, AtomicU64::new(start)), |e| hasher.hash_one(e.0));
            }
            let shards: Vec<ShardedLock<HashTable<(u64, AtomicU64)>>> =
                tables.into_iter().map(ShardedLock::new).collect();
            Box::new(move |key| {
                let now = clock.now_nanos();
                let hash = hasher.hash_one(key);
                let shard = shards[shard_of(hash)].read().expect("lock");
                shard
                    .find(hash, |e| e.0 == key)
                    .is_some_and(|e| decide(&e.1, now))
            })
        }
        "own-128" => {
            let t = own::Table128::with_cap(cap, Fold::default());
            for key in 0..keys {
                t.check(key, start);
            }
            assert_eq!(t.live(), keys, "own-128 lost keys in prefill");
            Box::new(move |key| t.check(key, clock.now_nanos()))
        }
        "own-64" => {
            let t = own::Table64::with_cap(cap, Fold::default());
            for key in 0..keys {
                assert!(t.insert(key, start), "own-64: window full");
            }
            Box::new(move |key| {
                let now = clock.now_nanos();
                t.get(key).is_some_and(|w| decide(w, now))
            })
        }
        "own-64-lock" => {
            // The protocol proposed for the library: 64 shards, each a
            // `Table64` behind a `ShardedLock`. A check holds its shard's
            // read lock (its thread's slot of it) from the lookup through
            // its exchange on the state; inserts claim a free slot by an
            // exchange under the read lock too; eviction, tombstone
            // clean-up and growth take the write lock. So a slot a reader
            // found keeps its key until the reader's exchange is done: no
            // ABA, with 64-bit words. (The prefill below inserts under the
            // read lock as the library would.)
            // Each shard's share of the cap with room for the spread of a
            // binomial draw (three standard deviations, and 8).
            let hasher = Fold::default();
            let share = cap / 64;
            let share = share + 3 * share.isqrt() + 8;
            let shards: Vec<ShardedLock<own::Table64<Fold>>> = (0..64)
                .map(|_| ShardedLock::new(own::Table64::with_cap(share, hasher.clone())))
                .collect();
            // The shard from six middle bits of the fingerprint (the home
            // bucket takes its high bits; foldhash's lowest bits were too
            // regular over sequential keys: a shard overflowed).
            let shard_of = |fp: u64| ((fp >> 26) & 63) as usize;
            for key in 0..keys {
                let fp = shards[0].read().expect("lock").fingerprint(key);
                let shard = shards[shard_of(fp)].read().expect("lock");
                assert!(shard.insert(key, start), "own-64-lock: window full");
            }
            Box::new(move |key| {
                let now = clock.now_nanos();
                let fp = hasher.hash_one(key);
                let fp = if fp <= own::RESERVED { fp + 3 } else { fp };
                let shard = shards[shard_of(fp)].read().expect("lock");
                shard.get_fp(fp).is_some_and(|w| decide(w, now))
            })
        }
        "floor" => {
            let array: Vec<(u64, AtomicU64)> =
                (0..keys).map(|k| (k, AtomicU64::new(start))).collect();
            Box::new(move |key| {
                let now = clock.now_nanos();
                decide(&array[key as usize].1, now)
            })
        }
        other => return Err(format!("unknown row {other} ({})", ROWS.join(", ")).into()),
    })
}

/// A cheap pseudo-random walk over `0..keys`: xorshift, scaled into the
/// range by a multiply (Lemire's reduction), as in keyed_report.
#[inline]
fn next_key(state: &mut u64, keys: u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    ((u128::from(*state) * u128::from(keys)) >> 64) as u64
}

/// Checks a second (granted or not) of `check` from `threads` threads.
fn throughput(threads: usize, keys: u64, millis: u64, check: &(dyn Fn(u64) -> bool + Sync)) -> f64 {
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let done: u64 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let stop = &stop;
                s.spawn(move || {
                    let mut state = 0x9E37_79B9_7F4A_7C15_u64 ^ (t as u64 + 1);
                    let (mut n, mut granted) = (0u64, 0u64);
                    // Ordering: Relaxed; a stop flag, no data rides on it.
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..1024 {
                            granted += u64::from(check(next_key(&mut state, keys)));
                        }
                        n += 1024;
                    }
                    std::hint::black_box(granted);
                    n
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(millis));
        // Ordering: Relaxed; see the load.
        stop.store(true, Ordering::Relaxed);
        workers.into_iter().map(|w| w.join().expect("worker")).sum()
    });
    done as f64 / start.elapsed().as_secs_f64()
}

/// In a child process: the resident growth per key of one structure.
fn child_mem(which: &str, keys: u64) -> Result<(), Box<dyn Error>> {
    let (name, factor) = match which.strip_suffix("@2x") {
        Some(name) => (name, 2),
        None => (which, 1),
    };
    let before = rss_bytes();
    let kept = build(name, keys, factor)?;
    let after = rss_bytes();
    println!("{}", (after - before) as f64 / keys as f64);
    drop(kept);
    Ok(())
}

fn mem_per_key(which: &str, keys: u64) -> Result<f64, Box<dyn Error>> {
    let out = Command::new(std::env::current_exe()?)
        .args(["--child-mem", which, "--mem-keys", &keys.to_string()])
        .output()?;
    let text = String::from_utf8(out.stdout)?;
    text.trim().parse().map_err(|e| {
        format!(
            "{which}: {e} in {text:?} ({})",
            String::from_utf8_lossy(&out.stderr)
        )
        .into()
    })
}

/// `1000` as `1K`, `1000000` as `1M`.
fn count(n: u64) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}K", n / 1_000),
        n => n.to_string(),
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// The eviction protocol of `own-128`, checked once before the timing:
/// an exchange begun on a key's slot fails once the key is evicted and
/// the slot reused.
fn self_check() {
    let t = own::Table128::with_cap(64, Fold::default());
    assert!(t.check(7, 100));
    assert!(t.evict_if(7, |state| state <= 1_000));
    assert!(!t.evict_if(7, |_| true), "already gone");
    assert_eq!(t.live(), 0);
    assert!(t.check(7, 200), "re-inserted fresh");
    assert!(!t.evict_if(7, |state| state <= 100), "in debt: kept");
    assert_eq!(t.live(), 1);
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    if let Some(which) = &args.child {
        return child_mem(which, args.mem_keys);
    }
    self_check();
    println!("load average before: {}", loadavg());
    println!(
        "\nbytes per live key ({} keys, resident-set growth; our tables at the cap, \
         and @2x: a cap twice the keys):",
        args.mem_keys
    );
    let mut mem_rows: Vec<String> = args.rows.clone();
    for own in ["own-128", "own-64", "own-64-lock"] {
        if args.rows.iter().any(|r| r == own) {
            mem_rows.push(format!("{own}@2x"));
        }
    }
    for row in &mem_rows {
        println!("  {row:<16} {:>8.1}", mem_per_key(row, args.mem_keys)?);
    }
    println!(
        "\ncheck throughput, M checks/s (median of {} rounds of {} ms, rows interleaved; \
         one run on a shared, noisy machine):",
        args.rounds, args.millis
    );
    let header: String = args
        .keys
        .iter()
        .flat_map(|&k| {
            args.threads
                .iter()
                .map(move |t| format!("{:>12}", format!("{}/{t}t", count(k))))
        })
        .collect();
    println!("{:<16}{header}", "map (keys/threads)");
    // Every structure of a key count built first, then the rows measured
    // in turn, round after round, so a noisy spell spreads over all rows;
    // the median of the rounds.
    let mut rates: Vec<Vec<Vec<f64>>> = vec![Vec::new(); args.rows.len()];
    for &keys in &args.keys {
        let checks = args
            .rows
            .iter()
            .map(|row| build(row, keys, 1))
            .collect::<Result<Vec<_>, _>>()?;
        for rate in &mut rates {
            rate.extend(args.threads.iter().map(|_| Vec::new()));
        }
        let first = rates[0].len() - args.threads.len();
        for _ in 0..args.rounds {
            for (row, check) in checks.iter().enumerate() {
                for (i, &threads) in args.threads.iter().enumerate() {
                    let rate = throughput(threads, keys, args.millis, &**check);
                    rates[row][first + i].push(rate / 1e6);
                }
            }
        }
    }
    for (row, cells) in args.rows.iter().zip(&rates) {
        let mut line = format!("{row:<16}");
        for cell in cells {
            let mut sorted = cell.clone();
            sorted.sort_by(f64::total_cmp);
            line.push_str(&format!("{:>12.2}", sorted[sorted.len() / 2]));
        }
        println!("{line}");
    }
    println!("\nload average after: {}", loadavg());
    Ok(())
}
