//! The simulator's model-description parsers (JSON, CSV tables, Chrome traces) on arbitrary
//! text: an error or a model, never a crash, and the durations and waits of every model
//! they accept (and the spread of their start times) fit the clock.
//! Run: `scripts/fuzz` (or `cargo fuzz run model_descriptions`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for m in [
        aclprof::sim::parse_json(Path::new("fuzz.json"), text),
        aclprof::sim::parse_csv(Path::new("op_summary_fuzz.csv"), text),
        aclprof::sim::parse_text(Path::new("fuzz"), text),
    ]
    .into_iter()
    .flatten()
    {
        for op in &m.ops {
            let offset = op.offset_ns.unwrap_or(0);
            assert!(op.duration_ns < 1 << 60 && op.wait_ns < 1 << 60 && offset < 1 << 60);
        }
    }
});
