/* Trace page: draws the plotly charts whose figures the server put in json_script tags.
   No inline script and no eval (CSP): each chart is a <div class="plot" data-figure="ID">,
   its figure the JSON in <script type="application/json" id="ID">. Charts are drawn on load
   and again whenever htmx swaps in a new audit section (policy or run tabs, back button).

   htmx runs with allowScriptTags: false, so it strips every <script> — json_script data
   included — from the HTML it swaps in. The figures are therefore read from the response
   text first (DOMParser builds an inert document: nothing in it runs) and kept here by id. */
(function () {
  "use strict";

  var figures = {};

  function stash(html) {
    if (typeof html !== "string" || html.indexOf("application/json") < 0) return;
    var doc = new DOMParser().parseFromString(html, "text/html");
    doc.querySelectorAll('script[type="application/json"][id]').forEach(function (s) {
      figures[s.id] = s.textContent;
    });
  }

  function draw(root) {
    if (typeof window.Plotly === "undefined") return;
    (root || document).querySelectorAll(".plot[data-figure]").forEach(function (el) {
      if (el.dataset.drawn === "1") return;
      var id = el.dataset.figure;
      var src = document.getElementById(id);
      if (src) figures[id] = src.textContent;
      if (!(id in figures)) return;
      var fig;
      try { fig = JSON.parse(figures[id]); } catch (e) { return; }
      el.dataset.drawn = "1";
      window.Plotly.newPlot(el, fig.data || [], fig.layout || {}, {
        responsive: true, displaylogo: false
      });
    });
  }

  function clear(el) {
    if (window.Plotly) window.Plotly.purge(el);
    el.textContent = "";
    el.dataset.drawn = "";
  }

  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  document.addEventListener("htmx:beforeSwap", function (evt) { stash(evt.detail.serverResponse); });
  document.addEventListener("htmx:historyCacheMissLoad", function (evt) {
    stash(evt.detail.serverResponse);
  });
  // After an outerHTML swap the event target is the detached old element: look at the page.
  document.addEventListener("htmx:afterSettle", function () { draw(document); });
  // The back button restores a saved copy of the page: save it without plotly's live SVG and
  // draw the charts again once it is back.
  document.addEventListener("htmx:beforeHistorySave", function () {
    document.querySelectorAll(".plot[data-figure]").forEach(clear);
  });
  document.addEventListener("htmx:historyRestore", function () {
    document.querySelectorAll(".plot[data-figure]").forEach(clear);
    draw(document);
  });

  // Keyboard: a folded event's "Show all" moves focus into the content it loaded.
  document.addEventListener("htmx:afterSwap", function (evt) {
    var t = evt.detail && evt.detail.target;
    if (t && t.classList && t.classList.contains("ev-body")) {
      t.setAttribute("tabindex", "-1");
      t.focus({ preventScroll: true });
    }
  });
})();
