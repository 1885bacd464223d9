//! `aclprof analyze --aggregate-by rank` over a synthetic cluster (512 ranks of 10 000 ops
//! each by default: 5.1 M records, 2.6 GB), then `--aggregate-by type` over one record file
//! (ONE_FILE_OPS, default 10 M records, 4.9 GB), each on one thread and on every core,
//! alternating, in a child process (the `aclprof` command) so that its peak RSS is its own.
//! Reports the median of each, their ratio, and the peak RSS.
//!
//!   cargo bench --bench ranks [-- RANKS OPS_PER_RANK ROUNDS ONE_FILE_OPS]
//!
//! The cluster is kept in target/bench-ranks-RANKSxOPS (delete it to make it again); read
//! from the page cache after the first round, so the figures are the analysis, not the disk.

use aclprof::formats::record::{encode, sign, OpFields, RECORD_SIZE};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Writes `ops` records to `path`, on `streams` streams, each op `extra_ns` longer than the
/// pattern (a slower rank).
fn write_records(path: &Path, ops: u64, extra_ns: u64, streams: u64) {
    let types = ["Conv2D", "Relu", "Add", "MatMulV2", "TransData"];
    let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let mut rec = [0u8; RECORD_SIZE];
    for i in 0..ops {
        rec.fill(0);
        let fields = OpFields {
            model_id: 1,
            op_index: i + 1,
            start: i * 3_000,
            end: i * 3_000 + 1_500 + (i % 7) * 100 + extra_ns,
            stream_id: (i % streams) as u32,
            ..Default::default()
        };
        let name = format!("model/layer{}/op{}", i % 50, i % 125);
        encode(
            &mut rec,
            &fields,
            name.as_bytes(),
            types[(i % 5) as usize].as_bytes(),
        );
        sign(&mut rec);
        w.write_all(&rec).unwrap();
    }
    w.flush().unwrap();
}

/// One record file of `ops` records on 4 streams, as a subscription writes it.
fn generate_file(path: &Path, ops: u64) {
    if path.exists() {
        return;
    }
    let tmp = path.with_extension("tmp");
    write_records(&tmp, ops, 0, 4);
    std::fs::rename(tmp, path).unwrap();
}

fn generate(root: &Path, ranks: u32, ops: u64) {
    let done = root.join(".complete");
    if done.exists() {
        return;
    }
    let _ = std::fs::remove_dir_all(root);
    for r in 0..ranks {
        // One result directory per rank, one device each, as a cluster's ranks write them.
        let dev = root.join(format!("PROF_{r:06}_bench/device_0"));
        std::fs::create_dir_all(dev.join("data")).unwrap();
        std::fs::write(dev.join("info.json.0"), format!("{{\"rank_id\": {r}}}")).unwrap();
        write_records(&dev.join("data/aclprof_ops.stream_0.bin"), ops, r as u64, 1);
    }
    std::fs::write(done, b"").unwrap();
}

/// Runs the analysis on `threads` threads; returns seconds and the JSON's op count.
fn run(root: &Path, threads: usize) -> (f64, u64) {
    let by = if root.is_file() { "type" } else { "rank" };
    let t = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_aclprof"))
        .args([
            "analyze",
            "--aggregate-by",
            by,
            "-t",
            "0",
            "--format",
            "json",
        ])
        .arg("--threads")
        .arg(threads.to_string())
        .arg(root)
        .output()
        .unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    (secs, v["ops"].as_u64().unwrap())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return;
    }
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .map(|a| a.parse().unwrap())
        .collect();
    let ranks = args.first().copied().unwrap_or(512) as u32;
    let ops = args.get(1).copied().unwrap_or(10_000);
    let rounds = args.get(2).copied().unwrap_or(3);
    let one_file = args.get(3).copied().unwrap_or(10_000_000);
    let root: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join(format!("bench-ranks-{ranks}x{ops}"));
    generate(&root, ranks, ops);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (a, b) = compare(&root, ranks as u64 * ops, rounds, cores);
    let total = ranks as f64 * ops as f64;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    println!(
        "analyze --aggregate-by rank, {ranks} ranks x {ops} ops: 1 thread {a:.3} s ({:.2} M ops/s), \
         {cores} threads {b:.3} s ({:.2} M ops/s): {:.2}x; peak RSS {} MiB (one rank's records: {} MiB, the cluster's: {} MiB)",
        total / a / 1e6,
        total / b / 1e6,
        a / b,
        ru.ru_maxrss / 1024,
        (ops * RECORD_SIZE as u64) >> 20,
        (ranks as u64 * ops * RECORD_SIZE as u64) >> 20,
    );
    if one_file > 0 {
        let file = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join(format!("bench-one-file-{one_file}.bin"));
        generate_file(&file, one_file);
        let (a, b) = compare(&file, one_file, rounds, cores);
        let total = one_file as f64;
        println!(
            "analyze --aggregate-by type, one file of {one_file} ops ({} MiB): 1 thread {a:.3} s ({:.2} M ops/s), \
             {cores} threads {b:.3} s ({:.2} M ops/s): {:.2}x",
            (one_file * RECORD_SIZE as u64) >> 20,
            total / a / 1e6,
            total / b / 1e6,
            a / b,
        );
    }
}

/// Medians of one thread and of `cores` threads, alternating, after a run that warms the
/// page cache.
fn compare(path: &Path, want: u64, rounds: u64, cores: usize) -> (f64, f64) {
    run(path, cores);
    let (mut one, mut all) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (s, n) = run(path, 1);
        assert_eq!(n, want);
        one.push(s);
        let (s, n) = run(path, cores);
        assert_eq!(n, want);
        all.push(s);
    }
    (median(&mut one), median(&mut all))
}
