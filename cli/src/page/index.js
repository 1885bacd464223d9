(function () {
  'use strict';
  var table = document.getElementById('run-table');
  var key = -1, desc = false;
  table.querySelectorAll('th').forEach(function (th) {
    th.addEventListener('click', function () {
      var k = Number(th.dataset.k);
      desc = k === key ? !desc : k >= 2;
      key = k;
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[k].textContent, y = b.cells[k].textContent;
        var nx = Number(x), ny = Number(y);
        var c = (!isNaN(nx) && !isNaN(ny) && x !== '' && y !== '') ? nx - ny : x.localeCompare(y);
        return desc ? -c : c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
      table.querySelectorAll('th').forEach(function (o) { o.className = ''; });
      th.className = 'sorted ' + (desc ? 'desc' : 'asc');
    });
  });
  var form = document.getElementById('compare-form');
  if (form) {
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      location.href = 'compare.html#' + document.getElementById('base').value + '-' +
        document.getElementById('new').value;
    });
  }
})();
