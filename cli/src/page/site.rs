//! The report as a small static site: `index.html` lists the runs (MindInsight's training
//! list), one page per run, and `compare.html` compares any two of them with `aclprof
//! diff`'s rows. The comparisons are computed here, one script file per pair under `diff/`,
//! which the compare page loads with a script element: pages opened from disk may load
//! scripts beside them but not fetch files, and one diff engine serves the command line
//! and the site.

use super::{esc, run_page, us, Nav, Written};
use crate::interrupt::Outputs;
use aclprof::analyze;
use aclprof::diff::{self, Section};
use aclprof::error::*;
use aclprof::runstats::RunStats;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Every pair of runs is compared up to this many runs; past it, each run with the one
/// before it and with the first.
const ALL_PAIRS_UP_TO: usize = 30;

/// Rows per section (but the overall one) in a comparison's data.
const DIFF_ROWS: usize = 500;

/// The runs under `path`: itself if it is a result directory or a file; else its entries,
/// each a run: a result directory, a folder holding result directories (a cluster's ranks
/// or repeated starts), a database or a file of records. Result directories directly in
/// `path` whose ranks are all different (torchrun's ranks writing into one folder) are one
/// run together: `path` itself.
pub fn runs_in(path: &Path) -> Result<Vec<PathBuf>> {
    if !path.is_dir() || aclprof::formats::layout::is_prof_dir(path) {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .or_else(|e| err(ACL_ERROR_INVALID_FILE, format!("{}: {e}", path.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            !p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    entries.sort();
    let prof: Vec<&PathBuf> = entries
        .iter()
        .filter(|p| aclprof::formats::layout::is_prof_dir(p))
        .collect();
    if prof.len() >= 2 && prof.len() == entries.len() {
        let mut seen = std::collections::BTreeSet::new();
        let disjoint = prof.iter().all(|d| {
            let r = aclprof::formats::layout::ranks_of(d);
            !r.is_empty() && r.into_iter().all(|k| seen.insert(k))
        });
        if disjoint {
            return Ok(vec![path.to_path_buf()]);
        }
    }
    let runs: Vec<PathBuf> = entries
        .into_iter()
        .filter(|p| {
            if p.is_dir() {
                aclprof::formats::layout::is_prof_dir(p) || analyze::result_dirs(p).is_ok()
            } else {
                is_run_file(p)
            }
        })
        .collect();
    if runs.is_empty() {
        return err(
            ACL_ERROR_INVALID_PARAM,
            format!(
                "{}: no runs in it (result directories, folders of them, databases or \
                 files of records)",
                path.display()
            ),
        );
    }
    Ok(runs)
}

/// A database, or a non-empty file of whole 512-byte records.
fn is_run_file(p: &Path) -> bool {
    let Ok(m) = std::fs::metadata(p) else {
        return false;
    };
    aclprof::formats::layout::is_database(p)
        || (m.len() > 0 && m.len() % aclprof::formats::record::RECORD_SIZE as u64 == 0)
}

/// A page's file name for a run: its name's safe characters, unique in the site.
fn slug(name: &str, taken: &mut std::collections::BTreeSet<String>) -> String {
    let base: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut s = format!("run-{base}");
    let mut n = 2;
    while !taken.insert(s.clone()) {
        s = format!("run-{base}-{n}");
        n += 1;
    }
    s
}

/// The pairs compared: every pair, or past [`ALL_PAIRS_UP_TO`] runs each with its
/// predecessor and the first.
fn pairs(n: usize) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    for j in 1..n {
        if n <= ALL_PAIRS_UP_TO {
            v.extend((0..j).map(|i| (i, j)));
        } else {
            v.push((0, j));
            if j > 1 {
                v.push((j - 1, j));
            }
        }
    }
    v
}

/// One comparison as the compare page reads it: rows per section as
/// [name, base count, new count, base ns, new ns] (null where a run has none), and how many
/// rows each section had before [`DIFF_ROWS`] cut it.
fn diff_data(base: &RunStats, new: &RunStats) -> serde_json::Value {
    let d = diff::diff(base, new);
    let mut out = serde_json::Map::new();
    let mut totals = serde_json::Map::new();
    for s in [Section::Overall, Section::Type, Section::Op, Section::Step] {
        let rows: Vec<&diff::DiffRow> = d.rows.iter().filter(|r| r.section == s).collect();
        totals.insert(s.title().into(), rows.len().into());
        let v: Vec<serde_json::Value> = rows
            .iter()
            .take(if s == Section::Overall {
                usize::MAX
            } else {
                DIFF_ROWS
            })
            .map(|r| serde_json::json!([r.key, r.base_count, r.new_count, r.base_ns, r.new_ns]))
            .collect();
        out.insert(s.title().into(), v.into());
    }
    serde_json::json!({"base": d.base, "new": d.new, "rows": out, "totals": totals})
}

/// The site's list of the files it wrote, so that a rewrite removes what it no longer
/// writes (pages of runs gone, comparisons of pairs gone) and nothing else in the folder.
pub const MANIFEST: &str = ".aclprof-site";

fn write_file(outs: &mut Outputs, p: &Path, text: &str) -> Result<()> {
    outs.write(p, text.as_bytes())
        .or_else(|e| err(ACL_ERROR_INVALID_FILE, format!("{}: {e}", p.display())))
}

/// What an earlier site in `out` wrote and `outs` does not: the earlier manifest's entries,
/// each a plain relative path (anything else in it is ignored, never removed).
fn stale(out: &Path, outs: &Outputs) -> Vec<PathBuf> {
    let Ok(old) = std::fs::read_to_string(out.join(MANIFEST)) else {
        return Vec::new();
    };
    old.lines()
        .map(Path::new)
        .filter(|p| {
            !p.as_os_str().is_empty()
                && p.components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)))
        })
        .map(|p| out.join(p))
        .filter(|p| !outs.has(p))
        .collect()
}

/// Writes the site for the runs under `path` into directory `out`.
pub fn write(path: &Path, out: &Path, progress: &mut dyn FnMut(u64, u64)) -> Result<Written> {
    let runs = runs_in(path)?;
    std::fs::create_dir_all(out.join("diff"))
        .or_else(|e| err(ACL_ERROR_INVALID_FILE, format!("{}: {e}", out.display())))?;
    let mut stats = Vec::with_capacity(runs.len());
    for r in &runs {
        stats.push(RunStats::with_progress(r, progress)?);
    }
    let mut taken = std::collections::BTreeSet::new();
    let slugs: Vec<String> = stats.iter().map(|s| slug(&s.name, &mut taken)).collect();
    let mut w = Written {
        runs: runs.len(),
        ..Default::default()
    };
    let mut advice_counts = Vec::with_capacity(runs.len());
    let mut outs = Outputs::default();
    for (i, s) in stats.iter().enumerate() {
        let nav = Nav {
            index: Some("index.html".into()),
            compare: (runs.len() > 1)
                .then(|| format!("compare.html#{}-{}", i, if i == 0 { 1 } else { 0 })),
            cluster: None,
        };
        let (html, pw) = run_page(s, out, &slugs[i], &nav, &mut outs)?;
        write_file(&mut outs, &out.join(format!("{}.html", slugs[i])), &html)?;
        advice_counts.push(pw.advice);
        w.advice += pw.advice;
        w.pages += 1 + pw.rank_pages;
        w.ops += pw.ops;
        w.table_ops += pw.table_ops;
        w.types = w.types.max(pw.types);
        w.steps += pw.steps;
        w.timeline_slices += pw.timeline_slices;
        w.timeline_tracks += pw.timeline_tracks;
        w.bytes += html.len();
    }
    let pairs = pairs(runs.len());
    for &(i, j) in &pairs {
        let js = format!(
            "window.ACLPROF_DIFF = window.ACLPROF_DIFF || {{}};\nwindow.ACLPROF_DIFF[\"{i}-{j}\"] = {};\n",
            diff_data(&stats[i], &stats[j])
        );
        write_file(
            &mut outs,
            &out.join("diff").join(format!("{i}-{j}.js")),
            &js,
        )?;
        w.bytes += js.len();
    }
    let index = index_page(&stats, &slugs, &advice_counts);
    let compare = compare_page(&stats, &slugs, &pairs);
    write_file(&mut outs, &out.join("compare.html"), &compare)?;
    write_file(&mut outs, &out.join("index.html"), &index)?;
    w.pages += 2;
    w.bytes += index.len() + compare.len();
    let stale = stale(out, &outs);
    let list: String = outs
        .targets()
        .filter_map(|t| t.strip_prefix(out).ok())
        .map(|t| format!("{}\n", t.display()))
        .collect();
    write_file(&mut outs, &out.join(MANIFEST), &list)?;
    outs.commit(&stale)
        .or_else(|e| err(ACL_ERROR_INVALID_FILE, e.to_string()))?;
    Ok(w)
}

fn head(title: &str) -> String {
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{t}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{css}</style></head><body>
"#,
        t = esc(title),
        css = super::CSS
    )
}

fn run_options(stats: &[RunStats], selected: usize) -> String {
    let mut s = String::new();
    for (i, r) in stats.iter().enumerate() {
        let _ = write!(
            s,
            r#"<option value="{i}"{sel}>{n} ({w})</option>"#,
            sel = if i == selected { " selected" } else { "" },
            n = esc(&r.name),
            w = esc(&r.when)
        );
    }
    s
}

fn index_page(stats: &[RunStats], slugs: &[String], advice: &[usize]) -> String {
    let mut h = head("aclprof: runs");
    let _ = write!(
        h,
        r#"<h1>Runs</h1><p class="summary"><b id="run-count">{}</b> runs. Made by aclprof {}.</p>
<table id="run-table" class="sortable"><thead><tr><th data-k="0">Run</th><th data-k="1">Recorded</th><th data-k="2">Ops</th><th data-k="3">Device time, E2E (us)</th><th data-k="4">Op time (us)</th><th data-k="5">Ranks</th><th data-k="6">Steps</th><th data-k="7">Op types</th><th data-k="8">Top type</th><th data-k="9">Suggestions</th></tr></thead><tbody>"#,
        stats.len(),
        env!("CARGO_PKG_VERSION")
    );
    for (i, r) in stats.iter().enumerate() {
        let steps: std::collections::BTreeSet<u64> = r.steps.iter().map(|s| s.id).collect();
        let top = r
            .types
            .rows
            .first()
            .map_or(String::new(), |t| format!("{} ({:.1}%)", t.key, t.share));
        let _ = write!(
            h,
            r#"<tr data-run="{i}"><td><a href="{slug}.html">{n}</a></td><td>{when}</td><td>{ops}</td><td>{e2e}</td><td>{ot}</td><td>{ranks}</td><td>{steps}</td><td>{types}</td><td>{top}</td><td>{adv}</td></tr>"#,
            slug = esc(&slugs[i]),
            n = esc(&r.name),
            when = esc(&r.when),
            ops = r.ops(),
            e2e = us(r.e2e()),
            ot = us(r.types.total_ns),
            ranks = r.ranks(),
            steps = steps.len(),
            types = r.types.rows.len(),
            top = esc(&top),
            adv = advice[i],
        );
    }
    h.push_str("</tbody></table>");
    if stats.len() > 1 {
        let _ = write!(
            h,
            r#"<h2>Compare two runs</h2><form id="compare-form" action="compare.html"><label>Base <select id="base">{}</select></label> <label>New <select id="new">{}</select></label> <button type="submit">Compare</button></form>"#,
            run_options(stats, 0),
            run_options(stats, 1)
        );
    }
    let _ = writeln!(h, "<script>{INDEX_JS}</script></body></html>");
    h
}

fn compare_page(stats: &[RunStats], slugs: &[String], pairs: &[(usize, usize)]) -> String {
    let mut h = head("aclprof: compare runs");
    let runs: Vec<serde_json::Value> = stats
        .iter()
        .zip(slugs)
        .map(|(r, s)| serde_json::json!({"name": r.name, "when": r.when, "page": format!("{s}.html")}))
        .collect();
    let pairs: Vec<String> = pairs.iter().map(|(i, j)| format!("{i}-{j}")).collect();
    let _ = write!(
        h,
        r#"<nav><a href="index.html">&larr; all runs</a></nav>
<h1>Compare two runs</h1>
<p><label>Base <select id="base">{b}</select></label> <label>New <select id="new">{n}</select></label> <button id="swap">swap</button></p>
<p id="status" class="note"></p>
<p id="top-regression"></p>
<section id="overall"><h2>Overall: device time, summed over devices</h2><table id="overall-table"></table></section>
<section id="types"><h2>Op types</h2><table id="type-table"></table></section>
<section id="ops"><h2>Ops, matched by name</h2><table id="op-table"></table></section>
<section id="steps"><h2>Steps, by their slowest device</h2><table id="step-table"></table></section>
{runs}{pairs}
<script>{js}</script></body></html>
"#,
        b = run_options(stats, 0),
        n = run_options(stats, 1.min(stats.len() - 1)),
        runs = super::json_script("runs", &runs.into()),
        pairs = super::json_script("pairs", &pairs.into()),
        js = COMPARE_JS,
    );
    h
}

/// Sorting the run table, and the compare form's target.
const INDEX_JS: &str = include_str!("index.js");

/// Loads a comparison's data and draws its tables.
const COMPARE_JS: &str = include_str!("compare.js");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_lists() {
        assert_eq!(pairs(3), [(0, 1), (0, 2), (1, 2)]);
        assert_eq!(pairs(ALL_PAIRS_UP_TO).len(), 435);
        let many = pairs(40);
        assert_eq!(many.len(), 39 + 38);
        assert!(many.contains(&(0, 39)) && many.contains(&(38, 39)));
    }

    #[test]
    fn slugs_are_safe_and_unique() {
        let mut t = Default::default();
        assert_eq!(slug("PROF_1 a/b", &mut t), "run-PROF_1_a_b");
        assert_eq!(slug("PROF_1 a/b", &mut t), "run-PROF_1_a_b-2");
    }
}
