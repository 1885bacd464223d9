//! The crate's modules import downward only: no cycle of `crate::` (or `super::`) paths
//! between modules outside their tests. A module and its own submodules may use each
//! other. The layers are drawn in docs/design.md ("Layers").

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

mod common;

/// Module path (`transport::lane`) -> the source outside `#[cfg(test)]`.
fn modules(src: &Path) -> BTreeMap<String, String> {
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

#[test]
fn no_import_cycles_between_modules() {
    let mods = modules(&common::root().join("src"));
    assert!(mods.contains_key("transport::lane") && mods.contains_key("report"));
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
