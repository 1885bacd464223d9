// The run page's timeline: every track of the run's trace on one canvas, loaded in pieces
// (index.js, then chunk-N.js) from the directory beside the page (docs/design.md, "The
// report's timeline"). Drawing costs about the canvas's width per row, however many slices
// a row holds: where slices are narrower than a pixel, one pixel column is drawn and the
// next slice found by binary search past it.
(function () {
  'use strict';
  var root = document.getElementById('tl');
  if (!root) return;
  var canvas = document.getElementById('tl-canvas');
  var ctx = canvas.getContext('2d');
  var info = document.getElementById('tl-details');
  var status = document.getElementById('tl-status');
  var LABEL_W = 210, RULER_H = 26, ROW_H = 17, COUNTER_H = 34, HEAD_H = 18;
  var X = null;          // the index
  var rows = [];         // per row: pieces, in time order
  var layout = [];       // {y, h, head: text} or {y, h, row}
  var v0 = 0, v1 = 1;    // the view, ns from the timeline's start
  var sel = null;        // {row, piece, i}
  var flow = null;       // the selected task's API call {row, piece, i}
  var found = [], foundAt = -1, foundFor = '';
  var colors = [], dpr = window.devicePixelRatio || 1, pending = false, loaded = 0;
  var api = window.aclprofTimeline = { frameMs: 0 };
  var ruler = { width: 0, labels: [] };

  function load(file) {
    var s = document.createElement('script');
    s.src = root.getAttribute('data-src') + '/' + file;
    s.onerror = function () { status.textContent = 'cannot load ' + s.src; };
    document.body.appendChild(s);
  }
  function bytes(b64) {
    var bin = atob(b64), u = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
    return u.buffer;
  }
  api.index = function (ix) {
    X = ix;
    v0 = 0; v1 = ix.span;
    rows = ix.rows.map(function (r) { return { meta: r, track: ix.tracks[r.t], pieces: [] }; });
    var y = RULER_H, last = null;
    rows.forEach(function (r, k) {
      if (r.track.p + r.track.l !== last) {
        last = r.track.p + r.track.l;
        layout.push({ y: y, h: HEAD_H, head: r.track.p + (r.track.l ? ' (' + r.track.l + ')' : '') });
        y += HEAD_H;
      }
      var h = r.meta.c ? COUNTER_H : ROW_H;
      var first = k === 0 || ix.rows[k - 1].t !== r.meta.t;
      layout.push({ y: y, h: h, row: k, label: first ? r.track.n : '' });
      y += h;
    });
    canvas.style.height = y + 'px';
    resize();
    status.textContent = 'loading ' + ix.chunks + ' pieces';
    if (ix.chunks > 0) load('chunk-0.js'); else done();
  };
  api.chunk = function (k, pieces) {
    pieces.forEach(function (p) {
      var r = rows[p[0]], buf = bytes(p[2]), m = r.meta.pieces[p[1]], n = m[1], flags = m[2];
      if (r.meta.c) {
        r.pieces[p[1]] = { n: n, start: new Float64Array(buf, 0, n), v: new Float64Array(buf, 8 * n, n) };
        return;
      }
      // Durations as u32 (flag 1) or f64; task ids only with flag 2.
      var at = 16 * n, dur = flags & 1 ? new Uint32Array(buf, 8 * n, n) : new Float64Array(buf, 8 * n, n);
      if (flags & 1) at = 12 * n;
      r.pieces[p[1]] = { n: n, start: new Float64Array(buf, 0, n), dur: dur,
                         name: new Uint32Array(buf, at, n), args: new Uint32Array(buf, at + 4 * n, n),
                         task: flags & 2 ? new Uint32Array(buf, at + 8 * n, n) : null };
    });
    loaded = k + 1;
    status.textContent = 'loaded ' + loaded + ' of ' + X.chunks + ' pieces';
    redraw();
    if (loaded < X.chunks) load('chunk-' + loaded + '.js'); else done();
  };
  function done() {
    status.textContent = '';
    root.setAttribute('data-ready', '1');
    redraw();
  }

  function resize() {
    var w = canvas.clientWidth, h = canvas.clientHeight;
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
    redraw();
  }
  function redraw() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; draw(); });
  }
  function color(id) {
    if (!colors[id]) colors[id] = 'hsl(' + ((id * 137.508) % 360).toFixed(1) + ',55%,' + (52 + (id % 3) * 7) + '%)';
    return colors[id];
  }
  // First slice of piece p ending after t (ends rise along a row: its slices do not overlap).
  function firstEndingAfter(p, t) {
    var lo = 0, hi = p.n;
    while (lo < hi) {
      var m = (lo + hi) >> 1;
      if (p.start[m] + (p.dur ? p.dur[m] : 0) > t) hi = m; else lo = m + 1;
    }
    return lo;
  }
  function px(t, k) { return LABEL_W + (t - v0) * k; }

  function drawSlices(r, y, h, k, W) {
    if (r.pieces.length < r.meta.pieces.length || r.meta.pieces.some(function (_, i) { return !r.pieces[i]; })) {
      // Not all here yet: the coarse coverage.
      var cover = r.cover || (r.cover = new Uint8Array(bytes(r.meta.cover)));
      var bw = X.span / X.bins;
      ctx.fillStyle = '#9aa7b5';
      for (var b = 0; b < cover.length; b++) {
        if (!cover[b]) continue;
        var a = px(b * bw, k), z = px((b + 1) * bw, k);
        if (z < LABEL_W || a > W) continue;
        ctx.globalAlpha = 0.25 + 0.75 * cover[b] / 255;
        ctx.fillRect(Math.max(a, LABEL_W), y + 1, Math.max(1, z - Math.max(a, LABEL_W)), h - 2);
      }
      ctx.globalAlpha = 1;
    }
    ctx.font = '11px system-ui,sans-serif';
    ctx.textBaseline = 'middle';
    for (var q = 0; q < r.pieces.length; q++) {
      var p = r.pieces[q];
      if (!p || p.n === 0 || p.start[0] >= v1 || p.start[p.n - 1] + p.dur[p.n - 1] <= v0) continue;
      var i = firstEndingAfter(p, v0);
      while (i < p.n) {
        var s = p.start[i];
        if (s >= v1) break;
        var x0 = px(s, k), x1 = px(s + p.dur[i], k);
        ctx.fillStyle = color(p.name[i]);
        if (x1 - x0 >= 1) {
          var a0 = Math.max(x0, LABEL_W), a1 = Math.min(x1, W);
          ctx.fillRect(a0, y + 1, a1 - a0, h - 2);
          if (a1 - a0 > 30) {
            var text = X.names[p.name[i]], room = Math.floor((a1 - a0 - 6) / 6);
            ctx.fillStyle = '#111';
            ctx.fillText(text.length > room ? text.slice(0, Math.max(room - 1, 1)) + '\u2026' : text, a0 + 3, y + h / 2);
          }
          i++;
        } else {
          // Narrower than a pixel: this column once, then the first slice past it.
          var col = Math.floor(x0);
          ctx.fillRect(col, y + 1, 1, h - 2);
          var j = firstEndingAfter(p, v0 + (col + 1 - LABEL_W) / k);
          i = j > i ? j : i + 1;
        }
      }
    }
  }
  function drawCounter(r, y, h, k, W) {
    var max = r.meta.max || 1;
    ctx.fillStyle = 'rgba(78,121,167,0.55)';
    ctx.strokeStyle = '#4e79a7';
    for (var q = 0; q < r.pieces.length; q++) {
      var p = r.pieces[q];
      if (!p || p.n === 0) continue;
      // The sample in force at v0, then each one in view (the highest per pixel column).
      var lo = 0, hi = p.n;
      while (lo < hi) { var m = (lo + hi) >> 1; if (p.start[m] <= v0) lo = m + 1; else hi = m; }
      var i = Math.max(lo - 1, 0), lastX = -1, lastV = 0;
      for (; i < p.n; i++) {
        var x = Math.max(Math.floor(px(p.start[i], k)), LABEL_W);
        if (x > W) break;
        var next = i + 1 < p.n ? Math.min(Math.floor(px(p.start[i + 1], k)), W) : Math.min(Math.floor(px(X.span, k)), W);
        var v = p.v[i] / max * (h - 4);
        if (x === lastX) v = Math.max(v, lastV);
        ctx.fillRect(x, y + h - 2 - v, Math.max(next - x, 1), v);
        lastX = x; lastV = v;
      }
    }
    ctx.fillStyle = '#555';
    ctx.font = '10px system-ui,sans-serif';
    ctx.textBaseline = 'top';
    ctx.fillText(String(+max.toPrecision(4)), LABEL_W + 3, y + 1);
  }
  function tickStep(span) {
    var raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p;
    return (m < 2 ? 2 : m < 5 ? 5 : 10) * p;
  }
  function fmtNs(ns) {
    if (Math.abs(ns) >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
    if (Math.abs(ns) >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
    if (Math.abs(ns) >= 1e3) return (ns / 1e3).toFixed(3) + ' us';
    return ns.toFixed(0) + ' ns';
  }
  function rowY(row) {
    for (var i = 0; i < layout.length; i++) if (layout[i].row === row) return layout[i];
    return null;
  }
  function draw() {
    if (!X) return;
    var t0 = performance.now();
    var W = canvas.width / dpr, H = canvas.height / dpr;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, W, H);
    var k = (W - LABEL_W) / (v1 - v0);
    // Rows in view of the page's scroll only.
    var top = -canvas.getBoundingClientRect().top, bottom = top + window.innerHeight;
    layout.forEach(function (e) {
      if (e.y + e.h < top || e.y > bottom) return;
      if (e.head !== undefined) {
        ctx.fillStyle = '#eef1f5';
        ctx.fillRect(0, e.y, W, e.h);
        ctx.fillStyle = '#222';
        ctx.font = 'bold 11px system-ui,sans-serif';
        ctx.textBaseline = 'middle';
        ctx.fillText(e.head, 4, e.y + e.h / 2);
        return;
      }
      var r = rows[e.row];
      if (r.meta.c) drawCounter(r, e.y, e.h, k, W); else drawSlices(r, e.y, e.h, k, W);
    });
    // The selection, and the flow from its API call.
    if (sel) outline(sel, k, '#000');
    if (sel && flow) {
      var a = rowY(flow.row), b = rowY(sel.row);
      var fp = rows[flow.row].pieces[flow.piece], sp = rows[sel.row].pieces[sel.piece];
      outline(flow, k, '#c0392b');
      if (a && b) {
        var ax = Math.min(Math.max(px(fp.start[flow.i], k), LABEL_W), W), ay = a.y + a.h / 2;
        var bx = Math.min(Math.max(px(sp.start[sel.i], k), LABEL_W), W), by = b.y + b.h / 2;
        ctx.strokeStyle = '#c0392b';
        ctx.lineWidth = 1.5;
        ctx.beginPath();
        ctx.moveTo(ax, ay);
        ctx.bezierCurveTo(ax + 30, ay, bx - 30, by, bx, by);
        ctx.stroke();
        ctx.fillStyle = '#c0392b';
        ctx.beginPath();
        ctx.moveTo(bx, by); ctx.lineTo(bx - 7, by - 4); ctx.lineTo(bx - 7, by + 4);
        ctx.fill();
        ctx.lineWidth = 1;
      }
    }
    // Labels, over anything drawn left of the time axis, and the ruler.
    ctx.fillStyle = '#fafafa';
    ctx.fillRect(0, RULER_H, LABEL_W, H);
    ctx.font = '11px system-ui,sans-serif';
    ctx.textBaseline = 'middle';
    layout.forEach(function (e) {
      if (e.y + e.h < top || e.y > bottom) return;
      if (e.head !== undefined) {
        ctx.fillStyle = '#eef1f5'; ctx.fillRect(0, e.y, LABEL_W, e.h);
        ctx.fillStyle = '#222'; ctx.font = 'bold 11px system-ui,sans-serif';
        ctx.fillText(e.head, 4, e.y + e.h / 2);
        ctx.font = '11px system-ui,sans-serif';
      } else if (e.label) {
        ctx.fillStyle = '#333'; ctx.fillText(e.label, 14, e.y + e.h / 2);
      }
    });
    var rt = Math.max(top, 0);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, rt, W, RULER_H);
    ctx.strokeStyle = '#999';
    ctx.fillStyle = '#333';
    ctx.textBaseline = 'top';
    var step = tickStep(v1 - v0);
    ruler = { width: W, labels: [] };
    for (var t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      var x = px(t, k), label = fmtNs(t), lw = ctx.measureText(label).width;
      ctx.beginPath(); ctx.moveTo(x, rt + 14); ctx.lineTo(x, rt + RULER_H); ctx.stroke();
      // Right of its tick, or left of it where the right edge would cut it.
      var lx = x + 2 + lw <= W ? x + 2 : x - 2 - lw;
      ctx.fillText(label, lx, rt + 2);
      ruler.labels.push([lx, lx + lw]);
    }
    ctx.fillText(fmtNs(v1 - v0) + ' in view', 4, rt + 2);
    api.frameMs = performance.now() - t0;
  }
  function outline(ref, k, c) {
    var e = rowY(ref.row), p = rows[ref.row].pieces[ref.piece];
    if (!e || !p) return;
    var x0 = px(p.start[ref.i], k), x1 = Math.max(px(p.start[ref.i] + p.dur[ref.i], k), x0 + 2);
    ctx.strokeStyle = c;
    ctx.lineWidth = 2;
    ctx.strokeRect(x0, e.y + 0.5, x1 - x0, e.h - 1);
    ctx.lineWidth = 1;
  }

  // Details of a slice, and its API call (a device task's: the call on the host in progress
  // when the task began, else the last one begun before it).
  // The index marks device tracks 'd' and host API tracks 'a', and the trace (rank) of each.
  function isDevice(r) { return r.track.k === 'd'; }
  function apiOf(ref) {
    var r = rows[ref.row];
    if (!isDevice(r)) return null;
    var t = r.pieces[ref.piece].start[ref.i], best = null, bestKey = -Infinity;
    rows.forEach(function (c, ci) {
      if (c.track.k !== 'a' || c.track.t !== r.track.t) return;
      c.pieces.forEach(function (p, pi) {
        if (!p || p.n === 0) return;
        var lo = 0, hi = p.n;
        while (lo < hi) { var m = (lo + hi) >> 1; if (p.start[m] <= t) lo = m + 1; else hi = m; }
        if (lo === 0) return;
        var i = lo - 1, s = p.start[i], inside = s + p.dur[i] >= t;
        // Calls in progress first, then the latest begun; the outermost of equals.
        var key = (inside ? 1e18 : 0) + s - ci * 1e-3;
        if (key > bestKey) { bestKey = key; best = { row: ci, piece: pi, i: i }; }
      });
    });
    return best;
  }
  function select(ref, focus) {
    sel = ref;
    flow = ref ? apiOf(ref) : null;
    info.replaceChildren();
    if (!ref) { redraw(); return; }
    var r = rows[ref.row], p = r.pieces[ref.piece], i = ref.i;
    var h = document.createElement('h3');
    h.textContent = X.names[p.name[i]];
    info.appendChild(h);
    var t = document.createElement('table');
    t.id = 'tl-args';
    function line(k, v) {
      var tr = document.createElement('tr'), a = document.createElement('th'), b = document.createElement('td');
      a.textContent = k; b.textContent = v;
      tr.appendChild(a); tr.appendChild(b); t.appendChild(tr);
      return b;
    }
    line('Track', r.track.p + (r.track.l ? ' (' + r.track.l + ')' : '') + ' / ' + r.track.n);
    line('Start', fmtNs(p.start[i]) + ' from the timeline\'s start' +
         (isDevice(r) ? '; ' + ((p.start[i] - X.firstTask) / 1000).toFixed(3) + ' us from the first op' : ''));
    line('Duration', (p.dur[i] / 1000).toFixed(3) + ' us');
    JSON.parse(X.args[p.args[i]]).forEach(function (kv) { line(kv[0], String(kv[1])); });
    if (p.task && p.task[i] !== 0xffffffff) line('Task Id', String(p.task[i]));
    if (flow) {
      var fp = rows[flow.row].pieces[flow.piece];
      var cell = line('API call', '');
      var a = document.createElement('a');
      a.href = '#timeline';
      a.id = 'tl-api';
      a.textContent = X.names[fp.name[flow.i]] + ' on ' + rows[flow.row].track.n;
      var f = flow;
      a.addEventListener('click', function (ev) { ev.preventDefault(); select(f, true); });
      cell.appendChild(a);
    }
    info.appendChild(t);
    if (focus) show(p.start[i], p.dur[i]);
    redraw();
  }
  function show(s, d) {
    var span = v1 - v0;
    if (d * 3 > span) span = d * 3;
    else if (d * 20 < span) span = Math.max(d * 20, 2000);
    var mid = s + d / 2;
    v0 = mid - span / 2; v1 = mid + span / 2;
    clamp();
  }
  function clamp() {
    var span = Math.min(Math.max(v1 - v0, 100), X.span * 1.2);
    if (v0 < -X.span * 0.1) v0 = -X.span * 0.1;
    v1 = v0 + span;
    if (v1 > X.span * 1.1) { v1 = X.span * 1.1; v0 = v1 - span; }
    redraw();
  }
  function hit(x, y) {
    var W = canvas.width / dpr, k = (W - LABEL_W) / (v1 - v0);
    if (x < LABEL_W) return null;
    var t = v0 + (x - LABEL_W) / k, tol = 3 / k;
    for (var e = 0; e < layout.length; e++) {
      var L = layout[e];
      if (L.row === undefined || y < L.y || y >= L.y + L.h || rows[L.row].meta.c) continue;
      var r = rows[L.row];
      for (var q = 0; q < r.pieces.length; q++) {
        var p = r.pieces[q];
        if (!p) continue;
        var i = firstEndingAfter(p, t - tol);
        if (i < p.n && p.start[i] <= t + tol) return { row: L.row, piece: q, i: i };
      }
    }
    return null;
  }

  // Search: names holding the text, every match in time order; next and previous select.
  function search(text) {
    text = text.trim().toLowerCase();
    if (text === foundFor) return;
    foundFor = text; found = []; foundAt = -1;
    if (text) {
      var ids = new Uint8Array(X.names.length);
      X.names.forEach(function (n, i) { if (n.toLowerCase().indexOf(text) >= 0) ids[i] = 1; });
      rows.forEach(function (r, ri) {
        r.pieces.forEach(function (p, pi) {
          if (!p || !p.name) return;
          for (var i = 0; i < p.n; i++) if (ids[p.name[i]]) found.push({ row: ri, piece: pi, i: i, t: p.start[i] });
        });
      });
      found.sort(function (a, b) { return a.t - b.t || a.row - b.row; });
    }
  }
  function step(by) {
    search(document.getElementById('tl-search').value);
    var out = document.getElementById('tl-found');
    if (!found.length) { out.textContent = foundFor ? 'no slice matches' : ''; return; }
    foundAt = (foundAt + by + found.length) % found.length;
    out.textContent = (foundAt + 1) + ' of ' + found.length;
    select(found[foundAt], true);
  }

  // Zoom around x (a canvas position) by factor f (<1 zooms in).
  function zoom(f, x) {
    var W = canvas.width / dpr, at = v0 + (x - LABEL_W) / (W - LABEL_W) * (v1 - v0);
    v0 = at - (at - v0) * f; v1 = at + (v1 - at) * f;
    clamp();
  }
  function pan(frac) {
    var d = (v1 - v0) * frac;
    v0 += d; v1 += d;
    clamp();
  }
  var mouseX = null, drag = null;
  canvas.addEventListener('mousemove', function (e) {
    var b = canvas.getBoundingClientRect();
    mouseX = e.clientX - b.left;
    if (drag) {
      var W = canvas.width / dpr, d = (drag.x - mouseX) / (W - LABEL_W) * (drag.v1 - drag.v0);
      v0 = drag.v0 + d; v1 = drag.v1 + d;
      drag.moved = drag.moved || Math.abs(drag.x - mouseX) > 3;
      clamp();
    }
  });
  canvas.addEventListener('mousedown', function (e) {
    canvas.focus();
    drag = { x: e.clientX - canvas.getBoundingClientRect().left, v0: v0, v1: v1, moved: false };
  });
  window.addEventListener('mouseup', function (e) {
    if (drag && !drag.moved) {
      var b = canvas.getBoundingClientRect();
      select(hit(e.clientX - b.left, e.clientY - b.top), false);
    }
    drag = null;
  });
  canvas.addEventListener('wheel', function (e) {
    if (!e.ctrlKey && !e.shiftKey) return;
    e.preventDefault();
    if (e.ctrlKey) zoom(e.deltaY > 0 ? 1.25 : 0.8, mouseX === null ? canvas.width / dpr / 2 : mouseX);
    else pan((e.deltaY || e.deltaX) > 0 ? 0.1 : -0.1);
  }, { passive: false });
  canvas.addEventListener('keydown', function (e) {
    var x = mouseX === null ? (LABEL_W + canvas.width / dpr) / 2 : mouseX;
    var k = e.key.toLowerCase();
    if (k === 'w') zoom(0.8, x);
    else if (k === 's') zoom(1.25, x);
    else if (k === 'a') pan(-0.1);
    else if (k === 'd') pan(0.1);
    else if (k === 'escape') select(null);
    else return;
    e.preventDefault();
  });
  document.getElementById('tl-next').addEventListener('click', function () { step(1); });
  document.getElementById('tl-prev').addEventListener('click', function () { step(-1); });
  document.getElementById('tl-search').addEventListener('keydown', function (e) {
    if (e.key === 'Enter') { e.preventDefault(); step(e.shiftKey ? -1 : 1); }
  });
  document.getElementById('tl-reset').addEventListener('click', function () { v0 = 0; v1 = X.span; clamp(); });
  window.addEventListener('resize', resize);
  window.addEventListener('scroll', redraw);

  // For the rest of the page: an op of the tables (its name and start in us from the run's
  // first op), or a span of time from the first op.
  api.showOp = function (name, startUs) {
    if (!X) return false;
    var t = X.firstTask + startUs * 1000, best = null, bestD = Infinity;
    var id = X.names.indexOf(name);
    rows.forEach(function (r, ri) {
      if (!isDevice(r)) return;
      r.pieces.forEach(function (p, pi) {
        if (!p) return;
        var i = firstEndingAfter(p, t - 1);
        for (var j = Math.max(i - 1, 0); j < Math.min(i + 2, p.n); j++) {
          var d = Math.abs(p.start[j] - t);
          if ((id < 0 || p.name[j] === id) && d < bestD) { bestD = d; best = { row: ri, piece: pi, i: j }; }
        }
      });
    });
    root.scrollIntoView();
    if (best) select(best, true);
    return best !== null;
  };
  api.showSpan = function (fromUs, toUs) {
    if (!X) return;
    var a = X.firstTask + fromUs * 1000, b = X.firstTask + toUs * 1000, pad = (b - a) * 0.05;
    v0 = a - pad; v1 = b + pad;
    clamp();
    root.scrollIntoView();
  };
  // For tests and the bench: the view, a selection by search, and the time to draw a frame.
  api.view = function () { return [v0, v1]; };
  // The ruler's labels as last drawn: [left, right] of each, and the canvas's width.
  api.ruler = function () { return ruler; };
  api.firstTask = function () { return X.firstTask; };
  api.setView = function (a, b) { v0 = a; v1 = b; clamp(); draw(); };
  api.selected = function () { return sel ? { name: X.names[rows[sel.row].pieces[sel.piece].name[sel.i]], row: sel.row, api: flow !== null } : null; };
  api.pixelOf = function (t) { var W = canvas.width / dpr; return LABEL_W + (t - v0) * (W - LABEL_W) / (v1 - v0); };
  api.timeFrame = function () { draw(); return api.frameMs; };
  api.tracks = function () {
    var n = {};
    rows.forEach(function (r) {
      var k = r.track.p + '\u0000' + r.track.n;
      n[k] = (n[k] || 0) + r.meta.n;
    });
    return n;
  };
  // Where the selected slice and its API call are drawn (CSS pixels of the canvas), and the
  // colour its name is filled with.
  api.geometry = function () {
    if (!sel) return null;
    var W = canvas.width / dpr, k = (W - LABEL_W) / (v1 - v0);
    var p = rows[sel.row].pieces[sel.piece], e = rowY(sel.row);
    ctx.fillStyle = color(p.name[sel.i]);
    var g = { x0: px(p.start[sel.i], k), x1: px(p.start[sel.i] + p.dur[sel.i], k), y: e.y, h: e.h,
              start: p.start[sel.i], dur: p.dur[sel.i], fill: ctx.fillStyle };
    if (flow) {
      var fe = rowY(flow.row), fp = rows[flow.row].pieces[flow.piece];
      g.api = { x0: px(fp.start[flow.i], k), y: fe.y, h: fe.h };
    }
    return g;
  };
  api.pixel = function (x, y) {
    var d = ctx.getImageData(Math.floor(x * dpr), Math.floor(y * dpr), 1, 1).data;
    return '#' + [d[0], d[1], d[2]].map(function (v) { return (v < 16 ? '0' : '') + v.toString(16); }).join('');
  };
  // After the page's own load: the tables and charts come first.
  if (document.readyState === 'complete') load('index.js');
  else window.addEventListener('load', function () { load('index.js'); });
})();
