//! File-mode export throughput and memory: writes N ops of raw data (4 streams, 2 devices)
//! as a session would, then exports it in a child process and reports ops/s and the
//! child's peak RSS. Linear time and flat memory show as equal ops/s and equal RSS across
//! sizes.
//!
//!   cargo bench --bench export [-- 1000000 10000000]

use aclprof::formats::record::{encode, sign, OpFields, RECORD_SIZE};
use aclprof::transport::StreamFiles;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

fn generate(dir: &Path, ops: u64) {
    let _ = std::fs::remove_dir_all(dir);
    for d in ["host/data", "device_0/data", "device_1/data"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    let session = serde_json::json!({"pid": 4242, "devices": [0, 1], "dataTypeConfig": 3,
                                     "clockMonotonicRaw": 0, "wallClockNs": 1_700_000_000_000_000_000u64});
    std::fs::write(
        dir.join("host/data/aclprof_session.json"),
        session.to_string(),
    )
    .unwrap();
    let types = ["Conv2D", "Relu", "Add", "MatMulV2", "TransData"];
    let mut files: Vec<std::io::BufWriter<std::fs::File>> = (0..4)
        .map(|s| {
            let p = StreamFiles::path(&dir.join(format!("device_{}/data", s % 2)), s);
            std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(p).unwrap())
        })
        .collect();
    let mut rec = [0u8; RECORD_SIZE];
    for i in 0..ops {
        let s = (i % 4) as u32;
        let t = (i / 4) * 3_000;
        rec.fill(0);
        let f = OpFields {
            model_id: 1,
            op_index: i + 1,
            start: t,
            end: t + 1_500 + (i % 7) * 100,
            stream_id: s,
            dev_id: s % 2,
            ..Default::default()
        };
        let name = format!("model/layer{}/op{}", i % 50, i % 125);
        encode(
            &mut rec,
            &f,
            name.as_bytes(),
            types[(i % 5) as usize].as_bytes(),
        );
        sign(&mut rec);
        files[s as usize].write_all(&rec).unwrap();
    }
    for f in &mut files {
        f.flush().unwrap();
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if args.first().map(String::as_str) == Some("child") {
        let s = aclprof::filemode::export::export(Path::new(&args[1])).unwrap();
        println!("{}", s.ops.values().sum::<u64>());
        return;
    }
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return;
    }
    let sizes: Vec<u64> = if args.is_empty() {
        vec![1_000_000, 10_000_000]
    } else {
        args.iter().map(|a| a.parse().unwrap()).collect()
    };
    let dir: PathBuf =
        std::env::temp_dir().join(format!("aclprof-export-bench-{}", std::process::id()));
    for n in sizes {
        generate(&dir, n);
        let t = Instant::now();
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .arg("child")
            .arg(&dir)
            .output()
            .unwrap();
        let secs = t.elapsed().as_secs_f64();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let exported: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert_eq!(exported, n);
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
        let outputs: u64 = std::fs::read_dir(dir.join("mindstudio_profiler_output"))
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum();
        println!(
            "export {n:>9} ops: {secs:7.2} s = {:6.2} M ops/s, peak RSS of the exporting process so far {} MiB, {} MiB written",
            n as f64 / secs / 1e6,
            ru.ru_maxrss / 1024,
            outputs >> 20
        );
    }
    if std::env::var_os("ACLPROF_EXPORT_BENCH_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        println!("kept {}", dir.display());
    }
}
