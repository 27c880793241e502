"""The HTML report's inline assets: its style sheet and its one small script.

The script is progressive enhancement: it sorts the task table when a column
header is clicked (or pressed with Enter) and filters it by text and by state;
without it the table reads the same, and every drill-down still opens (they are
`<details>` elements). The report's Content-Security-Policy allows this script
by its hash and nothing else, so no markup an agent managed to put in the page
could run, and nothing may be fetched.
"""

from __future__ import annotations

import base64
import hashlib

CSS = """
:root{--fg:#1d232a;--muted:#5b6673;--line:#d8dee4;--bg:#fff;--red:#c62828;--green:#2e7d32;
--amber:#b26a00;--grey:#8a949e}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg);margin:0 auto;max-width:980px;padding:24px}
header{display:flex;align-items:baseline;gap:16px;border-bottom:2px solid var(--line)}
h1{font-size:22px;margin:0 0 12px}
h2{font-size:17px;margin:28px 0 10px}
h3{font-size:14px;margin:18px 0 6px;color:var(--muted)}
.headline{font-weight:700;letter-spacing:.06em;padding:2px 10px;border-radius:4px;
border:1px solid currentColor;margin:0}
.tone-regressed,.tone-failed{color:var(--red)}
.tone-improved,.tone-passed{color:var(--green)}
.tone-inconclusive{color:var(--amber)}
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}
dt{color:var(--muted)}
dd{margin:0;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:13px;
overflow-wrap:anywhere}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid var(--line);border-radius:6px;padding:8px 12px;min-width:130px}
.card .k{color:var(--muted);font-size:12px}
.card .v{font-size:19px;font-weight:600}
table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid var(--line);padding:6px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}
th{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
tr.tone-unchanged td,tr.tone-new td{color:var(--fg)}
svg.chart{max-width:100%;height:auto;font-size:12px}
svg .axis{stroke:var(--grey);stroke-width:1}
svg .tick{fill:var(--muted);font-size:11px}
svg .label,svg .caption{fill:var(--fg)}
svg .bar-regressed,svg .bar-fail{fill:var(--red)}
svg .bar-improved,svg .bar-pass{fill:var(--green)}
svg .bar-unchanged{fill:var(--grey)}
svg .bar-inconclusive{fill:var(--amber)}
footer{margin-top:32px;color:var(--muted);font-size:12px}
[hidden]{display:none !important}
.controls{display:flex;gap:10px;align-items:center;margin:0 0 8px}
.controls input{flex:1;max-width:320px;padding:4px 8px;font:inherit}
.controls select{padding:4px;font:inherit}
.controls .count{color:var(--muted);font-size:12px}
th.sortable{cursor:pointer;user-select:none}
th[aria-sort=ascending]::after{content:" ▲"}
th[aria-sort=descending]::after{content:" ▼"}
th.reason,td.reason{text-align:left}
tr[data-task-id] td:first-child{white-space:nowrap}
td.reason{font-size:13px;max-width:360px;overflow-wrap:anywhere}
tr.drill td{border-bottom:1px solid var(--line);padding:0 8px 8px;text-align:left}
details>summary{cursor:pointer;color:var(--muted);font-size:13px}
.trial{border-left:3px solid var(--line);margin:10px 0;padding:2px 0 2px 12px}
.trial-failed{border-left-color:var(--red)}
.trial-passed{border-left-color:var(--green)}
.trial h4{margin:4px 0;font-size:14px}
.trial h5{margin:10px 0 4px;font-size:12px;color:var(--muted);text-transform:uppercase}
.trial .reason{margin:2px 0 6px;font-weight:600}
.trial table{font-size:12px}
.trial th,.trial td{text-align:left;vertical-align:top;padding:3px 6px}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px;
white-space:pre-wrap;overflow-wrap:anywhere}
pre{background:#f6f8fa;padding:8px;border-radius:4px;max-height:320px;overflow:auto}
.change-removed td{background:#fdecea}
.change-added td{background:#e8f5e9}
.change-changed td{background:#fff8e1}
.sign{font-weight:700;width:1.5em}
.served{font-weight:700}
.served-fixture .served{color:var(--green)}
.served-live .served{color:var(--amber)}
.served-miss td{background:#fdecea}
.served-miss .served{color:var(--red)}
.miss{border:1px solid var(--red);border-radius:4px;padding:4px 10px;margin:8px 0}
.note{color:var(--muted);font-size:13px}
"""

SCRIPT = """
(function () {
  var table = document.getElementById("task-table");
  var controls = document.getElementById("task-controls");
  if (!table || !controls) return;
  var filter = document.getElementById("task-filter");
  var show = document.getElementById("task-show");
  var count = document.getElementById("task-count");
  var groups = Array.prototype.slice.call(table.tBodies);
  var heads = table.tHead.rows[0].cells;
  function wanted(group) {
    var text = filter.value.trim().toLowerCase();
    if (text && group.getAttribute("data-search").indexOf(text) < 0) return false;
    var state = show.value;
    if (state === "failing") return group.getAttribute("data-passed") === "false";
    if (state === "regressed") return group.getAttribute("data-verdict") === "regressed";
    if (state === "flaky") return group.getAttribute("data-flaky") === "true";
    return true;
  }
  function apply() {
    var shown = 0;
    groups.forEach(function (group) {
      group.hidden = !wanted(group);
      if (!group.hidden) shown += 1;
    });
    count.textContent = shown + " of " + groups.length + " tasks";
  }
  function key(group, column) {
    var cell = group.rows[0].cells[column];
    var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent;
    if (raw.trim() === "") return null;
    var number = Number(raw);
    return isNaN(number) ? raw.toLowerCase() : number;
  }
  function compare(x, y) {
    if (typeof x !== typeof y) { x = String(x); y = String(y); }
    return x < y ? -1 : x > y ? 1 : 0;
  }
  Array.prototype.forEach.call(heads, function (head, column) {
    function sort() {
      var ascending = head.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(heads, function (other) { other.removeAttribute("aria-sort"); });
      head.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      groups.sort(function (a, b) {
        var x = key(a, column), y = key(b, column);
        if (x === null || y === null) return (x === null) - (y === null);
        return ascending ? compare(x, y) : compare(y, x);
      });
      groups.forEach(function (group) { table.appendChild(group); });
    }
    head.classList.add("sortable");
    head.tabIndex = 0;
    head.addEventListener("click", sort);
    head.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(); }
    });
  });
  filter.addEventListener("input", apply);
  show.addEventListener("change", apply);
  controls.hidden = false;
  apply();
})();
"""

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; "
    f"script-src 'sha256-{base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()}'"
)
"""Inline styles, this one script (by its hash), nothing else: no fetch, no other script."""
