//! The install story, as a C or C++ user meets it: scripts/install into a fresh prefix
//! (built against glibc 2.28), then programs built with pkg-config (C and C++), with
//! CMake's find_package (shared and static) and statically with pkg-config, run from
//! there. Also the installed library's glibc floor, SONAME, stripping and debug link.

use std::path::Path;
use std::process::Command;

mod common;
use common::root;

/// The oldest glibc the installed library may need.
const GLIBC_FLOOR: (u32, u32) = (2, 28);

/// Runs `cmd`, panicking with its output if it fails; its stdout.
fn run(cmd: &mut Command) -> String {
    String::from_utf8_lossy(&common::run(cmd).stdout).into_owned()
}

fn sh(script: &str, env: &[(&str, &Path)]) -> String {
    let mut c = Command::new("sh");
    c.args(["-euc", script]).current_dir(root());
    for (k, v) in env {
        c.env(k, v);
    }
    run(&mut c)
}

#[test]
fn install_then_build_with_pkg_config_cmake_and_static() {
    let work = root().join("target/install-test");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let prefix = work.join("prefix");
    run(Command::new(root().join("scripts/install"))
        .args(["--glibc", "2.28", "--prefix"])
        .arg(&prefix)
        .env("CARGO_TARGET_DIR", root().join("target")));
    let lib = prefix.join("lib");
    let so = lib.join(format!("libaclprof.so.{}", env!("CARGO_PKG_VERSION")));

    // The glibc floor: every versioned glibc symbol at most 2.28, and no unversioned
    // undefined function (one would bind to whatever the running glibc has, or fail).
    let dynsyms = run(Command::new("objdump").arg("-T").arg(&so));
    let mut newest = (0, 0);
    for line in dynsyms.lines().filter(|l| l.contains("*UND*")) {
        if let Some(v) = line.split("GLIBC_").nth(1) {
            let v = v.split([' ', ')']).next().unwrap();
            let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap());
            let ver = (parts.next().unwrap(), parts.next().unwrap_or(0));
            newest = newest.max(ver);
        } else {
            let weak = line.split_whitespace().nth(1) == Some("w");
            assert!(
                weak || line.contains("GCC_"),
                "an undefined symbol without a version: {line}"
            );
        }
    }
    assert!(
        newest <= GLIBC_FLOOR && newest >= (2, 2),
        "the library needs glibc {}.{}",
        newest.0,
        newest.1
    );

    let dynamic = run(Command::new("readelf").arg("-d").arg(&so));
    assert!(
        dynamic.contains("Library soname: [libaclprof.so.0]"),
        "{dynamic}"
    );
    let sections = run(Command::new("readelf").arg("-S").arg(&so));
    assert!(
        !sections.contains(".debug_info"),
        "the installed library is stripped"
    );
    assert!(
        sections.contains(".gnu_debuglink"),
        "and points to its debug info"
    );
    let debug = run(Command::new("readelf")
        .arg("-S")
        .arg(lib.join(".debug").join(format!(
            "{}.debug",
            so.file_name().unwrap().to_string_lossy()
        ))));
    assert!(
        debug.contains(".debug_info"),
        "the debug info is kept beside it"
    );
    for name in [
        "libaclprof.so",
        "libaclprof.so.0",
        "libmsprofiler.so",
        "libascendcl.so",
    ] {
        assert!(lib.join(name).exists(), "{name}");
    }
    // The command line is installed beside the library, and runs from there.
    let cli = prefix.join("bin/aclprof");
    let version = run(Command::new(&cli).arg("--version"));
    assert!(version.contains(env!("CARGO_PKG_VERSION")), "{version}");
    let sections = run(Command::new("readelf").arg("-S").arg(&cli));
    assert!(
        !sections.contains(".debug_info"),
        "bin/aclprof is not stripped"
    );

    let model = root().join("models/resnet50.om");
    let env: &[(&str, &Path)] = &[
        ("PREFIX", &prefix),
        ("W", &work),
        ("PKG_CONFIG_PATH", &lib.join("pkgconfig")),
        ("MODEL", &model),
    ];
    // C, with pkg-config and CANN's link line (-lascendcl), run from the prefix.
    let out = sh(
        r#"gcc -std=c99 -Wall -Werror -o "$W/sample" examples/cann_resnet50_sample.c \
               $(pkg-config --cflags --libs aclprof) -lascendcl -lpthread
           readelf -d "$W/sample" | grep -q 'NEEDED.*libaclprof.so.0'
           LD_LIBRARY_PATH="$PREFIX/lib" "$W/sample" "$MODEL" "$W/prof-c" 2"#,
        env,
    );
    assert!(
        out.contains("subscription: 250 ops from 2 executions"),
        "{out}"
    );

    // C++.
    let out = sh(
        r#"g++ -std=c++11 -Wall -Wextra -Werror -o "$W/app" ctests/install/app.cpp \
               $(pkg-config --cflags --libs aclprof) -lpthread
           LD_LIBRARY_PATH="$PREFIX/lib" "$W/app" ctests/data/tiny.json"#,
        env,
    );
    assert_eq!(
        out.trim(),
        format!("aclprof {}: 5 records", env!("CARGO_PKG_VERSION"))
    );

    // Static, with pkg-config: the archive and its private libraries; nothing of ours is
    // loaded at run time.
    let out = sh(
        r#"libdir=$(pkg-config --variable=libdir aclprof)
           gcc -std=c99 -o "$W/sample_static" examples/cann_resnet50_sample.c \
               $(pkg-config --cflags aclprof) "$libdir/libaclprof.a" \
               $(pkg-config --static --libs-only-l aclprof | sed 's/-laclprof//')
           ! readelf -d "$W/sample_static" | grep -q libaclprof
           "$W/sample_static" "$MODEL" "$W/prof-static" 1"#,
        env,
    );
    assert!(
        out.contains("subscription: 125 ops from 1 executions"),
        "{out}"
    );

    // CMake's find_package, shared and static targets (cmake from scripts/tools).
    let tools = run(&mut Command::new(root().join("scripts/tools")));
    let cmake = Path::new(tools.trim()).join("cmake");
    let out = sh(
        r#"$CMAKE -S ctests/install -B "$W/cmake" -DCMAKE_PREFIX_PATH="$PREFIX" >/dev/null
           $CMAKE --build "$W/cmake" >/dev/null
           "$W/cmake/sample_shared" "$MODEL" "$W/prof-cmake" 1
           ! readelf -d "$W/cmake/sample_static" | grep -q libaclprof
           "$W/cmake/sample_static" "$MODEL" "$W/prof-cmake-static" 1"#,
        &[env, &[("CMAKE", cmake.as_path())]].concat(),
    );
    assert_eq!(
        out.matches("subscription: 125 ops from 1 executions")
            .count(),
        2,
        "{out}"
    );
}
