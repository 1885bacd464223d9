(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var all = JSON.parse($('op-data').textContent);
  // Steps: [id, start, end, gap, fp_bp, tail, computing, free], times in us from the first op.
  var steps = JSON.parse($('step-data').textContent);
  var body = document.querySelector('#op-table tbody');
  var search = $('search');
  var PAGE = 100, key = 6, desc = true, page = 0, rows = all;
  var typeFilter = null, stepFilter = null;

  // Search: every term (split on spaces) must match the name or the type as a substring;
  // when no op matches so, fuzzily: the term's characters in order, each one continuing
  // the previous match or starting a word (after a non-alphanumeric, at a lower-to-upper
  // case change, or where digits begin), so "l1b2conv" finds "layer1/block2/conv1".
  function wordStart(s, i) {
    if (i === 0) return true;
    var p = s.charAt(i - 1), c = s.charAt(i);
    if (!/[A-Za-z0-9]/.test(p)) return true;
    if (/[a-z]/.test(p) && /[A-Z]/.test(c)) return true;
    return /[A-Za-z]/.test(p) && /[0-9]/.test(c);
  }
  function fuzzy(term, s) {
    var low = s.toLowerCase();
    if (low.indexOf(term) >= 0) return true;
    // Quick reject: the characters must at least appear in order.
    for (var i = 0, j = 0; i < term.length; i++, j++) {
      j = low.indexOf(term.charAt(i), j);
      if (j < 0) return false;
    }
    // ok[j]: term[0..i] can end with term[i] at j.
    var prev = null, cur;
    for (i = 0; i < term.length; i++) {
      cur = new Uint8Array(low.length);
      var c = term.charAt(i), any = false, seen = false;
      for (j = 0; j < low.length; j++) {
        if (low.charAt(j) === c) {
          if (i === 0 ? wordStart(s, j)
                      : (prev[j - 1] === 1 || (seen && wordStart(s, j)))) {
            cur[j] = 1; any = true;
          }
        }
        if (prev && prev[j]) seen = true;
      }
      if (!any) return false;
      prev = cur;
    }
    return true;
  }
  function exact(term, s) { return s.toLowerCase().indexOf(term) >= 0; }
  // Columns: name, type, device, stream, model, start, duration, and, when the ops carried
  // them, input shapes, output shapes, FLOPs, memory.
  var COLS = document.querySelectorAll('#op-table thead th').length;
  function matches(terms, r, match) {
    for (var i = 0; i < terms.length; i++) {
      if (!match(terms[i], r[0]) && !match(terms[i], r[1]) &&
          !(COLS > 7 && r[7] && match(terms[i], r[7]))) return false;
    }
    return true;
  }
  function stepOf(id) {
    for (var i = 0; i < steps.length; i++) if (String(steps[i][0]) === String(id)) return steps[i];
    return null;
  }
  function fmt(v, k) {
    if (v === null || v === undefined) return '';
    return k === 5 || k === 6 ? v.toFixed(3) : String(v);
  }
  function chips() {
    var f = $('filters');
    f.replaceChildren();
    function chip(text, clear) {
      var s = document.createElement('span');
      s.className = 'chip';
      s.textContent = text + ' ';
      var b = document.createElement('button');
      b.textContent = '\u00d7';
      b.title = 'clear';
      b.addEventListener('click', clear);
      s.appendChild(b);
      f.appendChild(s);
    }
    if (typeFilter !== null) chip('type: ' + typeFilter, function () { setType(null); });
    if (stepFilter !== null) chip('step: ' + stepFilter[0], function () { stepFilter = null; apply(); });
  }
  function apply() {
    var terms = search.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    var filtered = all.filter(function (r) {
      if (typeFilter !== null && r[1] !== typeFilter) return false;
      return stepFilter === null || (r[5] >= stepFilter[1] && r[5] < stepFilter[2]);
    });
    rows = terms.length === 0 ? filtered : filtered.filter(function (r) { return matches(terms, r, exact); });
    if (rows.length === 0 && terms.length) {
      rows = filtered.filter(function (r) { return matches(terms, r, fuzzy); });
    }
    rows.sort(function (a, b) {
      // Unknown values (null) sort below every known one.
      var x = a[key] === null ? -Infinity : a[key], y = b[key] === null ? -Infinity : b[key];
      var c = x < y ? -1 : x > y ? 1 : 0;
      return desc ? -c : c;
    });
    page = 0;
    chips();
    draw();
  }
  function draw() {
    var pages = Math.max(1, Math.ceil(rows.length / PAGE));
    page = Math.min(Math.max(page, 0), pages - 1);
    var frag = document.createDocumentFragment();
    rows.slice(page * PAGE, (page + 1) * PAGE).forEach(function (r) {
      var tr = document.createElement('tr');
      for (var k = 0; k < COLS; k++) {
        var td = document.createElement('td');
        if (k === 0 && window.aclprofTimeline) {
          // The op's name takes the timeline to it.
          var a = document.createElement('a');
          a.href = '#timeline';
          a.className = 'to-tl';
          a.textContent = r[0];
          a.addEventListener('click', function (ev) {
            ev.preventDefault();
            window.aclprofTimeline.showOp(this[0], this[5]);
          }.bind(r));
          td.appendChild(a);
        } else {
          td.textContent = fmt(r[k], k);
        }
        tr.appendChild(td);
      }
      frag.appendChild(tr);
    });
    body.replaceChildren(frag);
    $('count').textContent = rows.length + ' of ' + all.length + ' ops match';
    $('page').textContent = 'page ' + (page + 1) + ' of ' + pages;
    $('prev').disabled = page === 0;
    $('next').disabled = page >= pages - 1;
  }
  function setType(t) {
    typeFilter = t;
    document.querySelectorAll('#type-table tr[data-type]').forEach(function (tr) {
      tr.classList.toggle('hl', tr.dataset.type === t);
    });
    apply();
  }
  function selectStep(id) {
    var st = stepOf(id);
    if (!st) return;
    var sel = $('step-select');
    if (sel) sel.value = String(st[0]);
    document.querySelectorAll('#steps [data-step]').forEach(function (e) {
      e.classList.toggle('hl', e.dataset.step === String(st[0]));
    });
    var pt = document.querySelector('#step-curves circle[data-step="' + st[0] + '"]');
    var cur = $('step-cursor');
    if (pt && cur) {
      cur.setAttribute('x1', pt.getAttribute('cx'));
      cur.setAttribute('x2', pt.getAttribute('cx'));
    }
    $('step-detail').textContent = 'iteration gap ' + st[3].toFixed(3) + ' us, FP to BP ' +
      st[4].toFixed(3) + ' us, tail ' + st[5].toFixed(3) + ' us; computing ' +
      st[6].toFixed(3) + ' us, free ' + st[7].toFixed(3) + ' us; from ' + st[1].toFixed(3) +
      ' to ' + st[2].toFixed(3) + ' us';
    $('step-ops').href = '#ops-step=' + st[0];
    $('step-tl').style.display = window.aclprofTimeline ? '' : 'none';
    $('step-tl').onclick = function (ev) {
      ev.preventDefault();
      if (window.aclprofTimeline) window.aclprofTimeline.showSpan(st[1], st[2]);
    };
  }
  function route() {
    var h = location.hash, m;
    if ((m = /^#type=(.*)$/.exec(h))) {
      setType(decodeURIComponent(m[1]));
      $('ops').scrollIntoView();
    } else if ((m = /^#step=(.*)$/.exec(h))) {
      selectStep(decodeURIComponent(m[1]));
      $('steps').scrollIntoView();
    } else if ((m = /^#ops-step=(.*)$/.exec(h))) {
      stepFilter = stepOf(decodeURIComponent(m[1]));
      apply();
      $('ops').scrollIntoView();
    } else if ((m = /^#rank-(.*)$/.exec(h))) {
      document.querySelectorAll('#rank-table tr').forEach(function (tr) {
        tr.classList.toggle('hl', tr.id === 'rank-' + m[1]);
      });
    } else if ((m = /[#&]q=([^&]*)/.exec(h))) {
      search.value = decodeURIComponent(m[1]);
      apply();
    }
  }

  document.querySelectorAll('#op-table th').forEach(function (th) {
    th.addEventListener('click', function () {
      var k = Number(th.dataset.k);
      desc = k === key ? !desc : k >= 2;
      key = k;
      document.querySelectorAll('#op-table th').forEach(function (o) { o.className = ''; });
      th.className = 'sorted ' + (desc ? 'desc' : 'asc');
      apply();
    });
  });
  search.addEventListener('input', apply);
  $('prev').addEventListener('click', function () { page--; draw(); });
  $('next').addEventListener('click', function () { page++; draw(); });
  document.querySelectorAll('#type-chart [data-type], #type-pie [data-type], #type-table tr[data-type]')
    .forEach(function (e) {
      e.addEventListener('click', function (ev) {
        ev.preventDefault();
        location.hash = '#type=' + encodeURIComponent(e.dataset.type);
      });
    });
  function chart(which) {
    $('type-chart').style.display = which === 'bar' ? '' : 'none';
    $('type-pie').style.display = which === 'pie' ? '' : 'none';
    $('show-bar').className = which === 'bar' ? 'on' : '';
    $('show-pie').className = which === 'pie' ? 'on' : '';
  }
  $('show-bar').addEventListener('click', function () { chart('bar'); });
  $('show-pie').addEventListener('click', function () { chart('pie'); });
  var sel = $('step-select');
  if (sel) sel.addEventListener('change', function () { selectStep(sel.value); });
  document.querySelectorAll('#steps [data-step]').forEach(function (e) {
    e.addEventListener('click', function () { selectStep(e.dataset.step); });
  });
  window.addEventListener('hashchange', route);
  apply();
  if (steps.length) selectStep(steps[0][0]);
  route();
})();

// The Memory section's table of memory per op: click a column to sort, type to search.
(function () {
  var table = document.getElementById('memory-ops');
  if (!table) return;
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var key = 4, desc = true;
  function cell(r, k) {
    var t = r.cells[k].textContent;
    var n = parseFloat(t);
    return k === 1 || isNaN(n) ? t.toLowerCase() : n;
  }
  function draw() {
    var q = document.getElementById('memory-search').value.trim().toLowerCase();
    rows.sort(function (a, b) {
      var x = cell(a, key), y = cell(b, key);
      return (x < y ? -1 : x > y ? 1 : 0) * (desc ? -1 : 1);
    });
    rows.forEach(function (r) {
      r.style.display = !q || r.cells[1].textContent.toLowerCase().indexOf(q) >= 0 ? '' : 'none';
      body.appendChild(r);
    });
  }
  table.querySelectorAll('th[data-k]').forEach(function (th) {
    th.addEventListener('click', function () {
      var k = +th.dataset.k;
      desc = k === key ? !desc : true;
      key = k;
      table.querySelectorAll('th').forEach(function (o) { o.className = ''; });
      th.className = 'sorted ' + (desc ? 'desc' : 'asc');
      draw();
    });
  });
  document.getElementById('memory-search').addEventListener('input', draw);
  draw();
})();

// The cluster view: which step the bars show; a heat map cell shows its step.
(function () {
  var sel = document.getElementById('cluster-step');
  if (!sel) return;
  function show(step) {
    sel.value = step;
    document.querySelectorAll('#cluster-bars g[data-step]').forEach(function (g) {
      g.style.display = g.getAttribute('data-step') === step ? '' : 'none';
    });
  }
  sel.addEventListener('change', function () { show(sel.value); });
  document.querySelectorAll('#cluster-heat rect[data-step]').forEach(function (r) {
    r.addEventListener('click', function () {
      var s = r.getAttribute('data-step');
      if (sel.querySelector('option[value="' + s + '"]')) show(s);
    });
  });
})();
