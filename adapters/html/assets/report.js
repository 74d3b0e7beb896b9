// convlog report: the conversation index (filter, sort) and the resume-health charts.
// User text is only ever set with textContent.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("data").textContent);
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  // ---- the index: filters and sorting
  var rows = data.conversations;
  var tbody = document.querySelector("#conversations tbody");
  var text = document.getElementById("filter-text");
  var selects = { user: document.getElementById("filter-user"),
    agent: document.getElementById("filter-agent"),
    status: document.getElementById("filter-status") };
  Object.keys(selects).forEach(function (field) {
    var values = {};
    rows.forEach(function (r) { if (r[field] !== null) values[r[field]] = true; });
    Object.keys(values).sort().forEach(function (v) {
      var o = el("option", null, v);
      o.value = v;
      selects[field].appendChild(o);
    });
    selects[field].addEventListener("change", draw);
  });
  text.addEventListener("input", draw);
  var sortKey = "last_active", ascending = false;
  document.querySelectorAll("#conversations th[data-sort]").forEach(function (th) {
    th.tabIndex = 0;
    th.addEventListener("click", function () {
      if (sortKey === th.dataset.sort) ascending = !ascending;
      else { sortKey = th.dataset.sort; ascending = true; }
      draw();
    });
  });
  function compare(a, b) {
    var x = a[sortKey], y = b[sortKey];
    if (x === y) return 0;
    if (x === null || x === undefined) return 1;
    if (y === null || y === undefined) return -1;
    var c = x < y ? -1 : 1;
    return ascending ? c : -c;
  }
  function draw() {
    var needle = text.value.toLowerCase();
    var shown = rows.filter(function (r) {
      for (var f in selects) {
        if (selects[f].value && r[f] !== selects[f].value) return false;
      }
      return !needle || r.key.toLowerCase().indexOf(needle) >= 0 ||
        (r.title || "").toLowerCase().indexOf(needle) >= 0;
    }).sort(compare);
    var frag = document.createDocumentFragment();
    shown.forEach(function (r) {
      var tr = el("tr");
      tr.dataset.key = r.key;
      var cell = el("td");
      var a = el("a", null, r.title || r.key);
      a.setAttribute("href", r.href);
      cell.appendChild(a);
      if (r.title) cell.appendChild(el("div", "sub", r.key));
      tr.appendChild(cell);
      [r.user, r.agent, r.status, r.messages].forEach(function (v) {
        tr.appendChild(el("td", null, v === null ? "—" : v));
      });
      tr.appendChild(el("td", "num", r.cost_text));  // convlog.projections.money
      tr.appendChild(el("td", null, r.last_active ? r.last_active.replace("T", " ").slice(0, 16) : "—"));
      frag.appendChild(tr);
    });
    tbody.replaceChildren(frag);
    document.getElementById("shown").textContent = shown.length + " of " + rows.length;
    document.querySelectorAll("#conversations th[data-sort]").forEach(function (th) {
      th.dataset.sorted = th.dataset.sort === sortKey ? (ascending ? "asc" : "desc") : "";
    });
  }
  draw();

  // ---- charts (Chart.js, inlined)
  var palette = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777"];
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  function chart(id, type, labels, datasets, yMax) {
    var options = { scales: { y: { beginAtZero: true } }, plugins: { legend: { display: datasets.length > 1 } } };
    if (yMax !== undefined) options.scales.y.max = yMax;
    return new Chart(document.getElementById(id), { type: type, data: { labels: labels,
      datasets: datasets }, options: options });
  }
  var s = data.success_over_time;
  chart("chart-success", "line", s.days, Object.keys(s.series).map(function (name, i) {
    return { label: name, data: s.series[name], borderColor: palette[i % palette.length],
      backgroundColor: palette[i % palette.length], spanGaps: true };
  }), 1);
  var d = data.per_day;
  chart("chart-fallback", "bar", d.days, [{ label: "fallback rate", data: d.fallback_rate,
    backgroundColor: palette[1] }], 1);
  chart("chart-injected", "bar", d.days, [{ label: "tokens", data: d.injected_tokens_per_fallback,
    backgroundColor: palette[3] }]);
  [["chart-agent", data.cost_by_agent, palette[2]], ["chart-model", data.cost_by_model, palette[4]]]
    .forEach(function (c) {
      chart(c[0], "bar", c[1].map(function (r) { return r.group; }),
        [{ label: "USD", data: c[1].map(function (r) { return r.cost; }), backgroundColor: c[2] }]);
    });
  document.body.dataset.ready = "yes";
})();
