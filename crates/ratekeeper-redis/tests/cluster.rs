//! The cluster client (feature `cluster`) against a real 3-primary Redis
//! Cluster on loopback: limiters on keys in different slots decide on
//! their slots' primaries, and a `SCRIPT FLUSH` on every node is recovered
//! from by one reload.

#![cfg(feature = "cluster")]

mod common;

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use ratekeeper::keyed::Overflow;
use ratekeeper::Rate;
use ratekeeper_redis::{Admission, Backend, FailurePolicy, RedisLimiter, SharedLimit, Source};

/// Three cluster-enabled servers joined into one cluster; killed on drop.
struct Cluster {
    ports: Vec<u16>,
    children: Vec<Child>,
    dir: std::path::PathBuf,
}

impl Cluster {
    fn start() -> Option<Cluster> {
        // Skips (or fails under CI) without redis-server.
        let server = common::OwnServer::start("cluster-probe")?;
        drop(server);
        // One folder per cluster: tests in this binary run side by side,
        // and each cluster's drop removes its own folder.
        static CLUSTERS: AtomicU32 = AtomicU32::new(0);
        let n = CLUSTERS.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("rk-cluster-{}-{n}", std::process::id()));
        let mut cluster = Cluster {
            ports: Vec::new(),
            children: Vec::new(),
            dir,
        };
        for _ in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let node = cluster.dir.join(port.to_string());
            std::fs::create_dir_all(&node).unwrap();
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args([
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                ])
                .args(["--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(&node)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start redis-server");
            cluster.ports.push(port);
            cluster.children.push(child);
        }
        for &port in &cluster.ports {
            cluster.wait_for(port, "ping", "PONG");
        }
        let nodes: Vec<String> = cluster
            .ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&nodes)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli --cluster create");
        assert!(
            created.status.success(),
            "{}",
            String::from_utf8_lossy(&created.stdout)
        );
        for &port in &cluster.ports {
            cluster.wait_for(port, "cluster info", "cluster_state:ok");
        }
        Some(cluster)
    }

    /// Waits until `redis-cli -p port COMMAND` prints `expected`.
    fn wait_for(&self, port: u16, command: &str, expected: &str) {
        let start = Instant::now();
        loop {
            let out = Command::new("redis-cli")
                .args(["-p", &port.to_string()])
                .args(command.split(' '))
                .output()
                .expect("redis-cli");
            if String::from_utf8_lossy(&out.stdout).contains(expected) {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{command} on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn urls(&self) -> Vec<String> {
        self.ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}/"))
            .collect()
    }

    fn flush_scripts(&self) {
        for &port in &self.ports {
            let ok = Command::new("redis-cli")
                .args(["-p", &port.to_string(), "script", "flush"])
                .status()
                .unwrap();
            assert!(ok.success());
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn limiters_on_a_cluster_decide_on_their_slots_primaries() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let rt = common::runtime();
    rt.block_on(async {
        let backend = Backend::cluster_builder(cluster.urls())
            .deadline(Duration::from_secs(2))
            .connect()
            .await
            .expect("connect to the cluster");
        // Keys whose slots fall on different primaries (16 names spread
        // over the 16384 slots).
        let limit = SharedLimit::pacer(Rate::new(10.0).unwrap(), 1.0).unwrap();
        let limiters: Vec<_> = (0..16)
            .map(|i| {
                RedisLimiter::builder(&backend, format!("{}:{i}", common::key("cluster")), limit)
                    .failure_policy(FailurePolicy::Closed)
                    .build()
                    .unwrap()
            })
            .collect();
        for l in &limiters {
            // One slot in 100 ms: the first goes at once, the second is
            // due a slot later, and a third that may not wait is refused.
            let first = l.reserve(1, Some(Duration::ZERO)).await;
            assert_eq!(first.source(), Source::Redis, "{:?}", first.backend_error());
            assert!(first.is_granted());
            let second = l.reserve(1, None).await.result().unwrap();
            assert!(second.ready_nanos() > second.started_nanos() + 50_000_000);
            assert!(!l.reserve(1, Some(Duration::ZERO)).await.is_granted());
        }
        // Scripts flushed on every node: one reload brings them back.
        cluster.flush_scripts();
        let reloads = backend.stats().reloads;
        for l in &limiters {
            let d = l.reserve(1, None).await;
            assert_eq!(d.source(), Source::Redis, "{:?}", d.backend_error());
        }
        assert!(
            backend.stats().reloads - reloads <= 3,
            "{:?}",
            backend.stats()
        );
    });
}

#[test]
fn capped_prefixes_keep_their_keys_in_one_slot_on_a_cluster() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let rt = common::runtime();
    rt.block_on(async {
        let backend = Backend::cluster_builder(cluster.urls())
            .deadline(Duration::from_secs(2))
            .connect()
            .await
            .expect("connect to the cluster");
        // One slot in 10 s: every client owes time after its grant.
        let limit = SharedLimit::pacer(Rate::new(0.1).unwrap(), 1.0).unwrap();
        // Prefixes spread over the slots; each capped prefix is one slot
        // (its hash tag), so its script touches keys of one node only.
        for i in 0..8 {
            for overflow in [
                Overflow::DenyNew,
                Overflow::Shared,
                Overflow::EvictLeastDebt,
            ] {
                let prefix = format!("{}:{i}:{overflow:?}:", common::key("capped"));
                let l = RedisLimiter::builder(&backend, prefix, limit)
                    .failure_policy(FailurePolicy::Closed)
                    .max_clients(3)
                    .overflow(overflow)
                    .build()
                    .unwrap();
                for c in 0..6 {
                    let d = l
                        .reserve_for(&format!("client-{c}"), 1, Some(Duration::ZERO))
                        .await;
                    // A CROSSSLOT error would be the failure policy's.
                    assert_eq!(d.source(), Source::Redis, "{:?}", d.backend_error());
                    let expected = match (c < 3, overflow) {
                        (true, _) => Admission::Tracked,
                        (false, Overflow::DenyNew) => Admission::DeniedNew,
                        (false, Overflow::Shared) => Admission::Overflowed,
                        (false, _) => Admission::EvictedDebt,
                    };
                    assert_eq!(d.admission(), Some(expected));
                }
                assert_eq!(l.client_stats().unwrap().live_clients, 3);
            }
        }
    });
}
