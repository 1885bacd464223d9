//! The crate's modules import downward only. The layers are data, declared once in
//! `src/layers.md` (which `lib.rs` shows as its documentation and docs/design.md repeats):
//! every `crate::` (or `super::`, or parent-to-child) path outside tests must name a module
//! of its own layer or a lower one, and there is no cycle between modules (a module and its
//! own submodules may use each other).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

mod common;

/// Module path (`transport::lane`) -> the source outside `#[cfg(test)]`. Modules declared
/// only for tests (`#[cfg(test)] mod tests;`, `#[cfg(all(test, loom))] mod loom_models;`)
/// are left out.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let all = all_modules(src);
    let test_only = regex::Regex::new(
        r"#\[cfg\([^\]]*\btest\b[^\]]*\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;",
    )
    .unwrap();
    let mut skip = BTreeSet::new();
    for m in all.keys() {
        for c in test_only.captures_iter(&full_text(src, m)) {
            skip.insert(format!("{m}::{}", &c[1]));
        }
    }
    all.into_iter()
        .filter(|(m, _)| {
            !skip
                .iter()
                .any(|s| m == s || m.starts_with(&format!("{s}::")))
        })
        .collect()
}

/// The whole source of module `m` (tests included).
fn full_text(src: &Path, m: &str) -> String {
    let rel = m.replace("::", "/");
    std::fs::read_to_string(src.join(format!("{rel}.rs")))
        .or_else(|_| std::fs::read_to_string(src.join(format!("{rel}/mod.rs"))))
        .unwrap_or_default()
}

fn all_modules(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p.file_name().unwrap() != "bin" {
                    stack.push(p);
                }
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = p.strip_prefix(src).unwrap().with_extension("");
            let mut m = rel.to_string_lossy().replace('/', "::");
            if m == "lib" || m == "main" {
                continue;
            }
            if let Some(parent) = m.strip_suffix("::mod") {
                m = parent.to_string();
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap().to_string();
            out.insert(m, code);
        }
    }
    out
}

/// Which modules each module uses.
fn imports(mods: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let path = regex::Regex::new(r"crate::([a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)?)").unwrap();
    let sup = regex::Regex::new(r"\bsuper::").unwrap();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, code) in mods {
        let e = g.entry(m.clone()).or_default();
        for c in path.captures_iter(code) {
            let x = &c[1];
            let t = if mods.contains_key(x) {
                x.to_string()
            } else {
                x.split("::").next().unwrap().to_string()
            };
            if mods.contains_key(&t) && &t != m {
                e.insert(t);
            }
        }
        // A parent naming its own submodule (`export::x`, `self::export::x`).
        for child in mods.keys() {
            let Some(name) = child
                .strip_prefix(&format!("{m}::"))
                .filter(|n| !n.contains("::"))
            else {
                continue;
            };
            let re = regex::Regex::new(&format!(
                r"(?:^|[^A-Za-z0-9_:])(?:self::)?{}::",
                regex::escape(name)
            ))
            .unwrap();
            if re.is_match(code) {
                e.insert(child.clone());
            }
        }
        if let Some((parent, _)) = m.rsplit_once("::") {
            if sup.is_match(code) {
                e.insert(parent.to_string());
            }
        }
    }
    g
}

/// The import cycles (strongly connected components of more than one module, other than a
/// module with its own submodules), each sorted.
fn cycles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Tarjan's algorithm, iteratively (no recursion limit to worry about).
    let names: Vec<&String> = g.keys().collect();
    let id: BTreeMap<&String, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let adj: Vec<Vec<usize>> = names
        .iter()
        .map(|n| g[*n].iter().filter_map(|t| id.get(t).copied()).collect())
        .collect();
    let n = names.len();
    let (mut index, mut low, mut on) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut stack, mut next, mut out) = (Vec::new(), 0, Vec::new());
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut i)) = work.last_mut() {
            if *i == 0 {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on[v] = true;
            }
            if let Some(&w) = adj[v].get(*i) {
                *i += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(u, _)) = work.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                let mut c = Vec::new();
                loop {
                    let w = stack.pop().unwrap();
                    on[w] = false;
                    c.push(names[w].clone());
                    if w == v {
                        break;
                    }
                }
                let roots: BTreeSet<&str> =
                    c.iter().map(|m| m.split("::").next().unwrap()).collect();
                if c.len() > 1 && roots.len() > 1 {
                    c.sort();
                    out.push(c);
                }
            }
        }
    }
    out
}

/// `src/layers.md`'s table: each layer's modules, top first.
fn layers(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .skip(2)
        .filter(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            cells[2]
                .split(',')
                .map(|m| m.trim().trim_matches('`').to_string())
                .filter(|m| !m.is_empty())
                .collect()
        })
        .collect()
}

/// The layer (0: top) of `module`: its own if the table names it, else its nearest named
/// ancestor's.
fn layer_of(layers: &[Vec<String>], module: &str) -> Option<usize> {
    let mut m = module;
    loop {
        if let Some(i) = layers.iter().position(|l| l.iter().any(|x| x == m)) {
            return Some(i);
        }
        m = m.rsplit_once("::")?.0;
    }
}

/// Every import that goes up a layer: (importer, imported).
fn upward(layers: &[Vec<String>], g: &BTreeMap<String, BTreeSet<String>>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (m, targets) in g {
        let Some(lm) = layer_of(layers, m) else {
            continue;
        };
        for t in targets {
            if layer_of(layers, t).is_some_and(|lt| lt < lm) {
                out.push((m.clone(), t.clone()));
            }
        }
    }
    out
}

#[test]
fn every_import_goes_down_the_declared_layers() {
    let root = common::root();
    let table = std::fs::read_to_string(root.join("src/layers.md")).unwrap();
    let layers = layers(&table);
    let mods = modules(&root.join("src"));
    // Every module of the crate has a layer; every module the table names exists.
    let tops: BTreeSet<&str> = mods.keys().map(|m| m.split("::").next().unwrap()).collect();
    let unplaced: Vec<&&str> = tops
        .iter()
        .filter(|m| layer_of(&layers, m).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules src/layers.md does not place: {unplaced:?}"
    );
    let named: Vec<&String> = layers.iter().flatten().collect();
    let missing: Vec<&&String> = named
        .iter()
        .filter(|m| !mods.contains_key(m.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "src/layers.md names modules that do not exist: {missing:?}"
    );
    let up = upward(&layers, &imports(&mods));
    assert!(
        up.is_empty(),
        "imports that go up a layer (src/layers.md, docs/design.md \"Layers\"): {up:?}"
    );
    // lib.rs shows the table as its documentation, and design.md repeats it.
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    assert!(lib.contains("#![doc = include_str!(\"layers.md\")]"));
    let design = std::fs::read_to_string(root.join("docs/design.md")).unwrap();
    assert!(
        design.contains(&table),
        "docs/design.md (\"Layers\") must show src/layers.md's table as it is"
    );
}

/// The check finds an import that goes up, through a path and through a submodule that
/// inherits its parent's layer, and lets one go down or stay in its layer.
#[test]
fn the_check_finds_an_upward_import() {
    let table = "| layer | modules | what |\n|---|---|---|\n| top | `a`, `b::c` | x |\n| low | `b`, `d` | y |\n";
    let layers = layers(table);
    assert_eq!(layers, vec![vec!["a", "b::c"], vec!["b", "d"]]);
    let m = |v: &[(&str, &str)]| -> BTreeMap<String, String> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    let ok = m(&[
        ("a", "use crate::b::X; use crate::d;"),
        ("b", "use crate::d::Y;"),
        ("b::c", "use crate::a::Z;"),
        ("d", ""),
        ("d::e", "use crate::b::W;"),
    ]);
    assert!(upward(&layers, &imports(&ok)).is_empty());
    let bad = m(&[
        ("a", ""),
        ("b", ""),
        ("b::c", ""),
        ("d", "fn f() { crate::a::g() }"),
        ("d::e", "use crate::b::c::V;"),
    ]);
    assert_eq!(
        upward(&layers, &imports(&bad)),
        vec![
            ("d".to_string(), "a".to_string()),
            ("d::e".to_string(), "b::c".to_string())
        ]
    );
}

#[test]
fn no_import_cycles_between_modules() {
    let mods = modules(&common::root().join("src"));
    assert!(mods.contains_key("transport::lane") && mods.contains_key("hotpath"));
    let found = cycles(&imports(&mods));
    assert!(
        found.is_empty(),
        "modules that import each other (docs/design.md, \"Layers\"): {found:?}"
    );
}

/// The check sees a cycle when there is one: through a `crate::` path, a `super::` and a
/// parent naming its child; and a module with its own submodules is not one.
#[test]
fn the_check_finds_a_cycle() {
    let m = |v: &[(&str, &str)]| -> BTreeMap<String, String> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    let three = m(&[
        ("a", "use crate::b::X;"),
        ("b", "fn f() { crate::c::g() }"),
        ("c", "/// see [`crate::a`]"),
        ("d", "use crate::a;"),
    ]);
    assert_eq!(cycles(&imports(&three)), vec![vec!["a", "b", "c"]]);
    let family = m(&[("t", "mod l; use l::Y;"), ("t::l", "use super::Z;")]);
    assert!(cycles(&imports(&family)).is_empty());
    let through_child = m(&[
        ("t", "mod l; use l::Y;"),
        ("t::l", "use super::Z; use crate::u::W;"),
        ("u", "use crate::t::V;"),
    ]);
    assert_eq!(
        cycles(&imports(&through_child)),
        vec![vec!["t", "t::l", "u"]]
    );
    let tests_only = m(&[("a", "use crate::b;"), ("b", "#[cfg(test)] use crate::a;")]);
    let mods: BTreeMap<String, String> = tests_only
        .into_iter()
        .map(|(k, v)| (k, v.split("#[cfg(test)]").next().unwrap().to_string()))
        .collect();
    assert!(cycles(&imports(&mods)).is_empty());
}

/// The lock statics of `src` that are not declared through `fork::global!` (so the fork
/// handler would not hold them): (module, name). A lock static is any `static` whose type
/// holds a `Mutex`, an `RwLock` or a handle `Table`.
fn unregistered_locks(mods: &BTreeMap<String, String>) -> Vec<(String, String)> {
    // Only in the loom model builds, which never fork and are never loaded by a host.
    const EXEMPT: [(&str, &str); 1] = [("transport::flusher", "LOOM_DUE")];
    let mut found = Vec::new();
    for (m, text) in mods {
        if m == "fork" {
            continue; // the registry itself
        }
        // The spans of `global! { ... }` blocks.
        let mut inside = vec![false; text.len()];
        for (at, _) in text.match_indices("global! {") {
            let mut depth = 0;
            for (i, c) in text[at..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            inside[at..at + i].iter_mut().for_each(|b| *b = true);
                            break;
                        }
                    }
                    _ => {}
                }
            }
        }
        for (at, _) in text.match_indices("static ") {
            let rest = &text[at + "static ".len()..];
            let rest = rest.strip_prefix("ref ").unwrap_or(rest);
            let Some((name, ty)) = rest.split_once(':') else {
                continue;
            };
            let name = name.trim();
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
            {
                continue;
            }
            let ty = ty.split('=').next().unwrap_or("");
            let lock = ["Mutex", "RwLock", "Table<"].iter().any(|k| ty.contains(k));
            if lock && !inside[at] && !EXEMPT.contains(&(m.as_str(), name)) {
                found.push((m.clone(), name.to_string()));
            }
        }
    }
    found
}

/// Every global lock takes part in the fork protocol: it is declared with `fork::global!`,
/// which registers it (docs/design.md, "Fork").
#[test]
fn every_lock_static_is_registered_for_fork() {
    let src = common::root().join("src");
    let found = unregistered_locks(&modules(&src));
    assert!(
        found.is_empty(),
        "lock statics outside fork::global! (a forked child could hang on them): {found:?}"
    );
}

#[test]
fn the_check_finds_an_unregistered_lock() {
    let m = |v: &[(&str, &str)]| -> BTreeMap<String, String> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    let mods = m(&[
        ("a", "static A: std::sync::Mutex<u32> = std::sync::Mutex::new(0);"),
        ("b", "global! {\n    /// doc\n    static B: Mutex<u32> = Mutex::new(Rank::Core, 0);\n}"),
        ("c", "pub static C: Table<u8> = Table::new(Rank::Configs);\nstatic N: AtomicU32 = AtomicU32::new(0);"),
        ("d", "fn f() { static D: RwLock<()> = RwLock::new(()); }"),
    ]);
    assert_eq!(
        unregistered_locks(&mods),
        vec![
            ("a".to_string(), "A".to_string()),
            ("c".to_string(), "C".to_string()),
            ("d".to_string(), "D".to_string())
        ]
    );
}
