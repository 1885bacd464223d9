//! The committed headers in include/acl/ must be exactly what cbindgen generates from
//! src/ffi/ (build.rs writes them to OUT_DIR). To accept a change on purpose:
//! `ACLPROF_BLESS=1 cargo test --test header_drift`, then commit include/.

use std::path::Path;

#[test]
fn committed_headers_match_the_source() {
    let generated = Path::new(env!("OUT_DIR")).join("include/acl");
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/acl");
    let bless = std::env::var_os("ACLPROF_BLESS").is_some();
    let mut drift = Vec::new();
    for h in [
        "acl.h",
        "acl_base.h",
        "acl_mdl.h",
        "acl_prof.h",
        "acl_prof_ext.h",
        "acl_rt.h",
    ] {
        let want =
            std::fs::read_to_string(generated.join(h)).expect("build.rs generated the header");
        let have = std::fs::read_to_string(committed.join(h)).unwrap_or_default();
        if want != have {
            if bless {
                std::fs::create_dir_all(&committed).unwrap();
                std::fs::write(committed.join(h), &want).unwrap();
            } else {
                drift.push(h);
            }
        }
    }
    assert!(
        drift.is_empty(),
        "include/acl/{drift:?} differ from what src/ffi/ generates; \
         run `ACLPROF_BLESS=1 cargo test --test header_drift` and commit include/"
    );
}
