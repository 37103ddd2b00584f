/* Trace page: draws the plotly charts whose figures the server put in json_script tags.
   No inline script and no eval (CSP): each chart is a <div class="plot" data-figure="ID">,
   its figure the JSON in <script type="application/json" id="ID">. Charts are drawn on load
   and again whenever htmx swaps in a new audit section (policy or run tabs, back button). */
(function () {
  "use strict";

  function draw(root) {
    if (typeof window.Plotly === "undefined") return;
    var plots = (root || document).querySelectorAll(".plot[data-figure]");
    plots.forEach(function (el) {
      if (el.dataset.drawn === "1") return;
      var src = document.getElementById(el.dataset.figure);
      if (!src) return;
      var fig;
      try { fig = JSON.parse(src.textContent); } catch (e) { return; }
      el.dataset.drawn = "1";
      window.Plotly.newPlot(el, fig.data || [], fig.layout || {}, {
        responsive: true, displaylogo: false, modeBarButtonsToRemove: ["sendDataToCloud"]
      });
    });
  }

  function redrawAll() {
    // A history snapshot keeps the SVG but not plotly's state: draw afresh.
    document.querySelectorAll(".plot[data-figure]").forEach(function (el) {
      el.dataset.drawn = "";
      if (window.Plotly) window.Plotly.purge(el);
      el.textContent = "";
    });
    draw(document);
  }

  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  document.addEventListener("htmx:afterSettle", function (evt) { draw(evt.target); });
  document.addEventListener("htmx:historyRestore", redrawAll);
  // htmx saves the page for the back button; a plotly chart is redrawn on restore.
  document.addEventListener("htmx:beforeHistorySave", function () {
    document.querySelectorAll(".plot[data-figure]").forEach(function (el) {
      if (window.Plotly) window.Plotly.purge(el);
      el.textContent = "";
      el.dataset.drawn = "";
    });
  });
  // After the history snapshot is taken the live page still needs its charts.
  document.addEventListener("htmx:pushedIntoHistory", function () { draw(document); });

  // Keyboard: a folded event's "Show all" moves focus into the content it loaded.
  document.addEventListener("htmx:afterSwap", function (evt) {
    var t = evt.detail && evt.detail.target;
    if (t && t.classList && t.classList.contains("ev-body")) {
      t.setAttribute("tabindex", "-1");
      t.focus({ preventScroll: true });
    }
  });
})();
