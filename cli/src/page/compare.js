(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var runs = JSON.parse($('runs').textContent);
  var pairs = JSON.parse($('pairs').textContent);
  var base = $('base'), neu = $('new');
  window.ACLPROF_DIFF = window.ACLPROF_DIFF || {};

  function us(ns) { return ns === null ? '-' : (ns / 1000).toFixed(3); }
  function cell(tr, text, cls) {
    var td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
  }
  // Rows [name, base count, new count, base ns, new ns], swapped when the pair's data is
  // the other way round; changes sorted largest first (the overall rows keep their order).
  function rowsOf(data, section, swap) {
    var rows = data.rows[section].map(function (r) {
      var b = swap ? r[4] : r[3], n = swap ? r[3] : r[4];
      var bc = swap ? r[2] : r[1], nc = swap ? r[1] : r[2];
      var d = (n === null ? 0 : n) - (b === null ? 0 : b);
      return {
        name: r[0], bc: bc, nc: nc, b: b, n: n, diff: d,
        ratio: (b !== null && n !== null && b > 0) ? n / b : null,
        status: b === null ? 'added' : n === null ? 'removed' : ''
      };
    });
    if (section !== 'overall') {
      rows.sort(function (x, y) {
        return Math.abs(y.diff) - Math.abs(x.diff) || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0);
      });
    }
    return rows;
  }
  function table(id, rows, total) {
    var t = $(id);
    t.replaceChildren();
    var head = t.createTHead().insertRow();
    ['Name', 'Base count', 'New count', 'Base (us)', 'New (us)', 'Diff (us)', 'Ratio', 'Status']
      .forEach(function (h) { var th = document.createElement('th'); th.textContent = h; head.appendChild(th); });
    var body = t.createTBody();
    rows.forEach(function (r) {
      var tr = body.insertRow();
      tr.dataset.name = r.name;
      var cls = r.diff > 0 ? 'up' : r.diff < 0 ? 'down' : '';
      cell(tr, r.name);
      cell(tr, r.bc === null ? '-' : String(r.bc));
      cell(tr, r.nc === null ? '-' : String(r.nc));
      cell(tr, us(r.b));
      cell(tr, us(r.n));
      cell(tr, (r.diff >= 0 ? '+' : '') + (r.diff / 1000).toFixed(3), cls);
      cell(tr, r.ratio === null ? '-' : r.ratio.toFixed(3), cls);
      cell(tr, r.status, r.status);
    });
    if (total > rows.length) {
      var tr = body.insertRow();
      cell(tr, 'and ' + (total - rows.length) + ' more (aclprof diff lists them all)', 'note');
    }
  }
  function show(data, swap) {
    var name = function (k) { return swap ? (k === 'base' ? data.new : data.base) : data[k]; };
    $('status').textContent = 'Base: ' + name('base') + '. New: ' + name('new') + '.';
    var sections = [['overall', 'overall-table'], ['type', 'type-table'], ['op', 'op-table'], ['step', 'step-table']];
    var top = null;
    sections.forEach(function (s) {
      var rows = rowsOf(data, s[0], swap);
      table(s[1], rows, data.totals[s[0]]);
      if (s[0] === 'type') {
        rows.forEach(function (r) { if (r.diff > 0 && (top === null || r.diff > top.diff)) top = r; });
      }
    });
    var tr = $('top-regression');
    if (top) {
      tr.textContent = 'Largest regression: op type ' + top.name + ', ' + us(top.b) + ' -> ' +
        us(top.n) + ' us (+' + (top.diff / 1000).toFixed(3) + ' us' +
        (top.ratio === null ? ', added' : ', ' + top.ratio.toFixed(3) + '\u00d7') + ')';
      tr.dataset.type = top.name;
    } else {
      tr.textContent = 'No op type is slower in the new run.';
      delete tr.dataset.type;
    }
  }
  function load() {
    var i = Number(base.value), j = Number(neu.value);
    location.replace('#' + i + '-' + j);
    if (i === j) {
      $('status').textContent = 'Choose two different runs.';
      return;
    }
    var lo = Math.min(i, j), hi = Math.max(i, j), k = lo + '-' + hi;
    if (pairs.indexOf(k) < 0) {
      $('status').textContent = 'This pair was not compared when the site was written: run aclprof diff on the two runs.';
      return;
    }
    var swap = i > j;
    if (window.ACLPROF_DIFF[k]) { show(window.ACLPROF_DIFF[k], swap); return; }
    var s = document.createElement('script');
    s.src = 'diff/' + k + '.js';
    s.onload = function () { show(window.ACLPROF_DIFF[k], swap); };
    s.onerror = function () { $('status').textContent = 'diff/' + k + '.js is missing.'; };
    document.body.appendChild(s);
  }
  var m = /^#(\d+)-(\d+)$/.exec(location.hash);
  if (m && Number(m[1]) < runs.length && Number(m[2]) < runs.length) {
    base.value = m[1];
    neu.value = m[2];
  }
  base.addEventListener('change', load);
  neu.addEventListener('change', load);
  $('swap').addEventListener('click', function () {
    var b = base.value; base.value = neu.value; neu.value = b; load();
  });
  load();
})();
