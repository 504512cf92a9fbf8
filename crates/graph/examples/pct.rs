use bytewright_graph::pickle::{check_in, NoExtras, Scratch};
use bytewright_graph::Limits;
fn main() {
    let mut scratch = Scratch::default();
    for path in ["/tmp/lg/floats.pkl", "/tmp/lg/prim.pkl"] {
        let data = std::fs::read(path).unwrap();
        let n = 5000;
        let mut best = std::time::Duration::MAX;
        for _ in 0..5 {
            let t = std::time::Instant::now();
            for _ in 0..n {
                let p = check_in(&data, Limits::default(), NoExtras, &mut scratch).unwrap();
                scratch.recycle(std::hint::black_box(p));
            }
            best = best.min(t.elapsed() / n);
        }
        println!("{path}: {:?} per check", best);
    }
}
