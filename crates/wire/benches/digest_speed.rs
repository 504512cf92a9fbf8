//! Quick throughput check of every named checksum/digest on 1 MiB (not a test; prints MB/s).
//!
//! Run: `cargo bench -p bytewright-wire --bench digest_speed`. Compare CRC-32 with
//! `python3 -c 'import zlib,timeit; d=bytes(1<<20); print(min(timeit.repeat(lambda: zlib.crc32(d), number=200, repeat=5))/200)'`.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// CPU time this thread has run (Linux `schedstat`, nanoseconds), so that other load on a
/// shared machine does not count; falls back to wall time elsewhere.
fn cpu_now(wall: Instant) -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map(Duration::from_nanos)
        .unwrap_or_else(|| wall.elapsed())
}

use bytewright_wire::digest::Algo;

fn main() {
    let data = vec![0u8; 1 << 20];
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    println!("{:<14} {:>10} {:>12}", "algorithm", "MB/s", "us per MiB");
    for name in Algo::names() {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let algo = Algo::from_name(name).unwrap();
        // Best of 5 rounds of ~100 ms wall time each, CPU time per 1 MiB digest.
        let mut best = Duration::MAX;
        for _ in 0..5 {
            let mut iters = 0u32;
            let wall = Instant::now();
            let start = cpu_now(wall);
            while wall.elapsed() < Duration::from_millis(100) {
                black_box(algo.digest(black_box(&data)));
                iters += 1;
            }
            best = best.min((cpu_now(wall) - start) / iters);
        }
        let secs = best.as_secs_f64();
        println!(
            "{:<14} {:>10.0} {:>12.1}",
            name,
            data.len() as f64 / secs / 1e6,
            secs * 1e6
        );
    }
}
