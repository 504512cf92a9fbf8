//! Quick throughput check of every named checksum/digest on 1 MiB (not a test; prints MB/s).
//!
//! Run: `cargo bench -p bytewright-wire --bench digest_speed`. Compare CRC-32 with
//! `python3 -c 'import zlib,timeit; d=bytes(1<<20); print(min(timeit.repeat(lambda: zlib.crc32(d), number=200, repeat=5))/200)'`.

use std::hint::black_box;
use std::time::{Duration, Instant};

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
        // Best of 5 rounds, each at least ~100 ms of repeated 1 MiB digests.
        let mut best = Duration::MAX;
        for _ in 0..5 {
            let mut iters = 0u32;
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(100) {
                black_box(algo.digest(black_box(&data)));
                iters += 1;
            }
            best = best.min(start.elapsed() / iters);
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
