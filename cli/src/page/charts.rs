//! The run page's charts, drawn as inline SVG: op types as bars and a pie, the step
//! trace's phases per step, and the data pipeline's section.

use super::*;

pub(super) const COLORS: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// The top types and one "other": (name, share %, total ns, the type to drill into).
pub(super) fn chart_types(r: &Report) -> Vec<(String, f64, u64, Option<String>)> {
    let mut bars: Vec<_> = r
        .rows
        .iter()
        .take(CHART_TYPES)
        .map(|x| (x.key.clone(), x.share, x.total_ns, Some(x.key.clone())))
        .collect();
    if r.rows.len() > CHART_TYPES {
        let rest = &r.rows[CHART_TYPES..];
        bars.push((
            format!("other ({} types)", rest.len()),
            rest.iter().map(|x| x.share).sum(),
            rest.iter().map(|x| x.total_ns).sum(),
            None,
        ));
    }
    bars
}

pub(super) fn data_type(t: &Option<String>) -> String {
    t.as_ref()
        .map(|t| format!(r#" data-type="{}""#, esc(t)))
        .unwrap_or_default()
}

/// Horizontal bars of the top types' share of device time.
pub(super) fn type_bars(r: &Report) -> String {
    let bars = chart_types(r);
    let (row, label, width) = (22.0, 220.0, 460.0);
    let max = bars.iter().map(|b| b.1).fold(0.0, f64::max).max(1e-9);
    let mut s = format!(
        r#"<svg id="type-chart" class="chart" role="img" aria-label="op type shares, bars" width="{}" height="{}">"#,
        label + width + 90.0,
        row * bars.len() as f64 + 4.0
    );
    for (i, (name, share, total, ty)) in bars.iter().enumerate() {
        let y = i as f64 * row;
        let w = (width * share / max).max(1.0);
        let _ = write!(
            s,
            r#"<text x="{x}" y="{ty_}" text-anchor="end">{n}</text><rect class="bar"{dt} x="{bx}" y="{y}" width="{w:.1}" height="{h}" fill="{c}"><title>{n}: {share:.2}% ({t} us)</title></rect><text x="{lx:.1}" y="{ty_}">{share:.1}%</text>"#,
            x = label - 6.0,
            ty_ = y + 15.0,
            n = esc(name),
            dt = data_type(ty),
            bx = label,
            h = row - 4.0,
            c = COLORS[i % COLORS.len()],
            t = us(*total),
            lx = label + w + 4.0,
        );
    }
    s.push_str("</svg>");
    s
}

/// The same shares as a pie, with a legend.
pub(super) fn type_pie(r: &Report) -> String {
    let slices = chart_types(r);
    let (cx, cy, rad) = (150.0, 150.0, 140.0);
    let total: f64 = slices.iter().map(|s| s.1).sum::<f64>().max(1e-9);
    let mut s = format!(
        r#"<svg id="type-pie" class="chart" role="img" aria-label="op type shares, pie" width="700" height="{}" style="display:none">"#,
        (slices.len() as f64 * 18.0 + 10.0).max(310.0)
    );
    let mut a0 = -std::f64::consts::FRAC_PI_2;
    for (i, (name, share, t, ty)) in slices.iter().enumerate() {
        let frac = share / total;
        let a1 = a0 + frac * std::f64::consts::TAU;
        let c = COLORS[i % COLORS.len()];
        let title = format!("{}: {share:.2}% ({} us)", esc(name), us(*t));
        if frac >= 0.9999 {
            let _ = write!(
                s,
                r#"<circle class="slice"{dt} cx="{cx}" cy="{cy}" r="{rad}" fill="{c}"><title>{title}</title></circle>"#,
                dt = data_type(ty)
            );
        } else {
            let (x0, y0) = (cx + rad * a0.cos(), cy + rad * a0.sin());
            let (x1, y1) = (cx + rad * a1.cos(), cy + rad * a1.sin());
            let large = i32::from(frac > 0.5);
            let _ = write!(
                s,
                r#"<path class="slice"{dt} d="M{cx},{cy} L{x0:.2},{y0:.2} A{rad},{rad} 0 {large} 1 {x1:.2},{y1:.2} Z" fill="{c}"><title>{title}</title></path>"#,
                dt = data_type(ty)
            );
        }
        let ly = 14.0 + i as f64 * 18.0;
        let _ = write!(
            s,
            r#"<rect x="320" y="{y:.0}" width="10" height="10" fill="{c}"/><text x="336" y="{ty:.0}">{n} {share:.1}%</text>"#,
            y = ly - 9.0,
            ty = ly,
            n = esc(name)
        );
        a0 = a1;
    }
    s.push_str("</svg>");
    s
}

pub(super) const PHASES: [(&str, &str); 3] = [
    ("#bab0ac", "iteration gap"),
    ("#4e79a7", "FP to BP"),
    ("#f28e2b", "tail"),
];

pub(super) fn phases(st: &StepTime) -> [u64; 3] {
    [st.gap, st.fp_bp, st.tail]
}

/// One stacked bar per step (iteration gap, forward and backward, tail), and the same three
/// as curves across steps, with a marker per step the selector highlights.
pub(super) fn step_charts(steps: &[&StepTime]) -> String {
    if steps.is_empty() {
        return r#"<p class="note">No steps: the run marked none (aclprofGetStepTimestamp) and had no fp_point op (ACL_PROF_TRAINING_TRACE with fp_point set).</p>"#.into();
    }
    let shown = &steps[..steps.len().min(CHART_STEPS)];
    let mut s = String::new();
    // Selector and the selected step's numbers.
    s.push_str(r#"<p><label>Step <select id="step-select">"#);
    for st in shown {
        let _ = write!(s, r#"<option value="{0}">{0}</option>"#, st.id);
    }
    s.push_str(r##"</select></label> <span id="step-detail"></span> <a href="" id="step-ops">this step's ops</a> <a href="#timeline" id="step-tl">on the timeline</a></p>"##);
    step_bars(&mut s, shown);
    step_curves(&mut s, shown);
    let mut legend = String::from(r#"<p class="legend">"#);
    for (c, what) in PHASES {
        let _ = write!(
            legend,
            r#"<span><i style="background:{c}"></i>{what}</span> "#
        );
    }
    legend.push_str("</p>");
    if steps.len() > shown.len() {
        let _ = write!(
            legend,
            r#"<p class="note">The first {} of {} steps.</p>"#,
            shown.len(),
            steps.len()
        );
    }
    s + &legend
}

/// Writes the stacked bars of steps `shown`, one per step.
fn step_bars(s: &mut String, shown: &[&StepTime]) {
    let max = shown
        .iter()
        .map(|s| phases(s).iter().sum::<u64>())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let (bar, gap, height, left) = (18.0, 4.0, 180.0, 90.0);
    let width = left + shown.len() as f64 * (bar + gap) + 20.0;
    let _ = write!(
        s,
        r##"<svg id="step-chart" class="chart" role="img" aria-label="step trace" width="{width:.0}" height="{h:.0}"><text x="4" y="12">{m} us</text><line x1="{left}" y1="{height}" x2="{width:.0}" y2="{height}" stroke="#888"/>"##,
        h = height + 40.0,
        m = us(max as u64),
    );
    for (i, st) in shown.iter().enumerate() {
        let x = left + i as f64 * (bar + gap);
        let mut y = height;
        for (v, (c, what)) in phases(st).iter().zip(PHASES) {
            let h = height * *v as f64 / max;
            y -= h;
            let _ = write!(
                s,
                r#"<rect class="bar" data-step="{id}" x="{x:.1}" y="{y:.1}" width="{bar}" height="{h:.1}" fill="{c}"><title>step {id}: {what} {v} us</title></rect>"#,
                id = st.id,
                v = us(*v),
            );
        }
        let _ = write!(
            s,
            r#"<text x="{tx:.1}" y="{ty:.0}" text-anchor="middle">{id}</text>"#,
            tx = x + bar / 2.0,
            ty = height + 14.0,
            id = st.id
        );
    }
    s.push_str("</svg>");
}

/// Writes the phases of steps `shown` as curves across the steps, with a point per step
/// and a cursor on the selected one.
fn step_curves(s: &mut String, shown: &[&StepTime]) {
    let cmax = shown
        .iter()
        .flat_map(|s| phases(s))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let (cw, ch, cl) = (
        (shown.len() as f64 * 24.0).clamp(300.0, 1000.0),
        160.0,
        90.0,
    );
    let xstep = if shown.len() > 1 {
        (cw - 20.0) / (shown.len() - 1) as f64
    } else {
        0.0
    };
    let px = |i: usize| cl + 10.0 + i as f64 * xstep;
    let py = |v: u64| 10.0 + ch - ch * v as f64 / cmax;
    let _ = write!(
        s,
        r##"<svg id="step-curves" class="chart" role="img" aria-label="step phases across steps" width="{w:.0}" height="{h:.0}"><text x="4" y="14">{m} us</text><line x1="{cl}" y1="{b}" x2="{w:.0}" y2="{b}" stroke="#888"/><line id="step-cursor" x1="{x0:.1}" y1="6" x2="{x0:.1}" y2="{b}" stroke="#e15759" stroke-dasharray="3 3"/>"##,
        w = cl + cw + 20.0,
        h = ch + 40.0,
        m = us(cmax as u64),
        b = 10.0 + ch,
        x0 = px(0),
    );
    for (k, (c, what)) in PHASES.iter().enumerate() {
        let pts: Vec<String> = shown
            .iter()
            .enumerate()
            .map(|(i, st)| format!("{:.1},{:.1}", px(i), py(phases(st)[k])))
            .collect();
        let _ = write!(
            s,
            r#"<polyline class="curve" data-phase="{what}" points="{}" fill="none" stroke="{c}" stroke-width="2"/>"#,
            pts.join(" ")
        );
        for (i, st) in shown.iter().enumerate() {
            let _ = write!(
                s,
                r#"<circle class="point" data-step="{id}" cx="{x:.1}" cy="{y:.1}" r="3" fill="{c}"><title>step {id}: {what} {v} us</title></circle>"#,
                id = st.id,
                x = px(i),
                y = py(phases(st)[k]),
                v = us(phases(st)[k]),
            );
        }
    }
    for (i, st) in shown.iter().enumerate() {
        if shown.len() <= 40 || i % (shown.len() / 20).max(1) == 0 {
            let _ = write!(
                s,
                r#"<text x="{x:.1}" y="{y:.0}" text-anchor="middle">{id}</text>"#,
                x = px(i),
                y = ch + 26.0,
                id = st.id
            );
        }
    }
    s.push_str("</svg>");
}

/// MindInsight's data-preparation view: the pipeline's stages and queues, the stage that
/// holds it back (with the rule and its evidence), and per step the training thread's wait
/// for data and the queues' mean depth, with the steps whose last queue ran empty.
pub(super) fn pipeline_section(r: &RunStats, steps: &[&StepTime]) -> String {
    use aclprof::pipeline::Event;
    let Some(a) = &r.pipeline_analysis else {
        return String::new();
    };
    let mut h = String::from(r#"<section id="dataprep"><h2>Data preparation</h2>"#);
    let _ = write!(
        h,
        r#"<p class="summary">The training thread waited for data <b id="data-wait">{}</b> us in {} waits.</p>"#,
        us(a.wait_ns),
        a.waits
    );
    match &a.bottleneck {
        Some((stage, rule, ev)) => {
            let _ = write!(
                h,
                r#"<p id="bottleneck" class="advice" data-stage="{s}" data-rule="{rule}"><b>Bottleneck: {s}</b> (rule <code>{rule}</code>): {e}.</p>"#,
                s = esc(stage),
                e = esc(ev)
            );
        }
        None => {
            h.push_str(r#"<p id="bottleneck" class="note">No stage holds the pipeline back.</p>"#)
        }
    }
    for (rule, ev) in &a.findings {
        let _ = write!(
            h,
            r#"<p class="finding" data-rule="{rule}">Also (<code>{rule}</code>): {}.</p>"#,
            esc(ev)
        );
    }
    h.push_str(r#"<table id="stage-table"><thead><tr><th>Stage</th><th>Spans</th><th>Busy (us)</th><th>Workers</th><th>Busy</th><th>Queue samples</th><th>Queue fill</th><th>Empty</th><th>Full</th></tr></thead><tbody>"#);
    for st in &a.stages {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td><td>{:.1}%</td></tr>",
            esc(&st.name),
            st.spans,
            us(st.busy_ns),
            st.workers,
            meter(st.utilization, 1.0),
            st.samples,
            meter(st.fill, 1.0),
            100.0 * st.empty,
            100.0 * st.full
        );
    }
    h.push_str("</tbody></table>");
    if steps.is_empty() {
        h.push_str("</section>\n");
        return h;
    }
    // Per step: the wait, and each queue's mean depth over its samples in the step.
    let names: Vec<&str> = a.stages.iter().map(|s| s.name.as_str()).collect();
    let last = names.last().copied();
    let mut empty_steps = 0;
    let mut rows = String::new();
    for st in steps {
        // (A host step may begin before the first op.)
        let (s0, s1) = (st.start, st.end);
        let wait = aclprof::pipeline::wait_in(&r.pipeline, s0, s1);
        let mut depth: Vec<(u64, u64)> = vec![(0, 0); names.len()];
        let mut empty = false;
        for e in &r.pipeline {
            if let Event::Queue {
                stage,
                depth: d,
                ns,
                ..
            } = e
            {
                if *ns >= s0 && *ns < s1 {
                    if let Some(i) = names.iter().position(|n| n == stage) {
                        depth[i].0 += u64::from(*d);
                        depth[i].1 += 1;
                        empty |= Some(stage.as_str()) == last && *d == 0;
                    }
                }
            }
        }
        empty_steps += usize::from(empty);
        let _ = write!(
            rows,
            r#"<tr data-step="{}"{}><td>{}</td><td>{}</td>"#,
            st.id,
            if empty { r#" class="empty-queue""# } else { "" },
            st.id,
            us(wait)
        );
        for (sum, n) in depth {
            if n == 0 {
                rows.push_str("<td>-</td>");
            } else {
                let _ = write!(rows, "<td>{:.1}</td>", sum as f64 / n as f64);
            }
        }
        let _ = write!(rows, "<td>{}</td></tr>", if empty { "yes" } else { "" });
    }
    let _ = write!(
        h,
        r#"<p><b id="empty-steps">{empty_steps}</b> of {} steps had the last queue ({}) empty at some sample.</p><table id="dataprep-steps"><thead><tr><th>Step</th><th>Data wait (us)</th>"#,
        steps.len(),
        esc(last.unwrap_or("-"))
    );
    for n in &names {
        let _ = write!(h, "<th>Queue {} (mean)</th>", esc(n));
    }
    h.push_str("<th>Last queue empty</th></tr></thead><tbody>");
    h.push_str(&rows);
    h.push_str("</tbody></table></section>\n");
    h
}
