// cross-judge report: draws the charts (vega-embed) and makes the tables of items (the
// disputed ones, those wrong against gold) searchable and sortable. Inlined into every
// report; no network.
(function () {
  "use strict";
  var specs = JSON.parse(document.getElementById("cj-specs").textContent);
  var views = {};
  window.crossJudgeReport = {views: views};
  var pending = Object.keys(specs).map(function (id) {
    var el = document.getElementById(id);
    return vegaEmbed(el, specs[id], {
      renderer: "svg", ast: true,
      actions: {export: true, source: false, compiled: false, editor: false}
    }).then(function (result) {
      views[id] = result.view;
      el.setAttribute("data-rendered", "true");
    }).catch(function (error) {
      el.setAttribute("data-rendered", "error");
      console.error("chart " + id + ": " + error);
    });
  });
  Promise.all(pending).then(function () {
    document.body.setAttribute("data-charts", "ready");
  });

  // Every table of items (the disputed ones, those wrong against gold) sits in a
  // div.items naming its search box and its count of rows shown.
  Array.prototype.slice.call(document.querySelectorAll("div.items")).forEach(function (box) {
    var table = box.querySelector("table");
    var search = document.getElementById(box.getAttribute("data-search"));
    var counter = document.getElementById(box.getAttribute("data-count"));
    if (table && search && counter) { searchable(table, search, counter); }
  });

  function searchable(table, search, counter) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var texts = rows.map(function (row) { return row.textContent.toLowerCase(); });
    search.addEventListener("input", function () {
      var words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
      var shown = 0;
      rows.forEach(function (row, i) {
        var hit = words.every(function (w) { return texts[i].indexOf(w) !== -1; });
        row.hidden = !hit;
        if (hit) { shown += 1; }
      });
      counter.textContent = String(shown);
    });
    var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
    headers.forEach(function (th, column) {
      th.tabIndex = 0;
      function sort() {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        var numeric = th.getAttribute("data-sort") === "num";
        headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var keyed = rows.map(function (row, i) {
          var cell = row.cells[column];
          var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent;
          return {row: row, i: i, key: numeric ? (raw === "" ? null : parseFloat(raw)) : raw};
        });
        keyed.sort(function (a, b) {
          if (a.key === null || a.key === "") { return b.key === null || b.key === "" ? a.i - b.i : 1; }
          if (b.key === null || b.key === "") { return -1; }
          var order = numeric ? a.key - b.key : String(a.key).localeCompare(String(b.key));
          return (ascending ? order : -order) || a.i - b.i;
        });
        keyed.forEach(function (k) { body.appendChild(k.row); });
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(); }
      });
    });
  }
})();
