/* Trace and run pages: draw the plotly charts whose figures the server put in json_script tags.
   No inline script and no eval (CSP): each chart is a <div class="plot" data-figure="ID">,
   its figure the JSON in <script type="application/json" id="ID">. Charts are drawn on load
   and again whenever htmx swaps in a new audit section (policy or run tabs, back button).

   htmx runs with allowScriptTags: false, so it strips every <script> — json_script data
   included — from the HTML it swaps in. The figures are therefore read from the response
   text first (DOMParser builds an inert document: nothing in it runs) and kept here by id.

   plotly (5 MB) is fetched only once a page has a chart to draw: its URL is the data-plotly
   attribute of this script's tag. Charts take the theme's colours from the page's CSS —
   transparent backgrounds, the text and line colours of app.css or dark.css — and take them
   again when the theme changes (the "ta:theme" event of static/js/theme.js). */
(function () {
  "use strict";

  var figures = {};
  var self = document.currentScript;
  var plotlySrc = self ? self.getAttribute("data-plotly") : null;
  var plotlyLoading = false;

  function withPlotly(then) {
    if (window.Plotly) { then(); return; }
    if (plotlyLoading || !plotlySrc) return;
    plotlyLoading = true;
    var s = document.createElement("script");
    s.src = plotlySrc;
    s.onload = function () { then(); };
    s.onerror = function () { plotlyLoading = false; };
    document.head.appendChild(s);
  }

  function colours() {
    var cs = getComputedStyle(document.body);
    var way = [];
    for (var i = 1; i <= 6; i++) {
      var v = cs.getPropertyValue("--chart-" + i).trim();
      if (v) way.push(v);
    }
    return {
      fg: cs.color,
      line: cs.getPropertyValue("--line").trim() || "#dfe3ea",
      muted: cs.getPropertyValue("--muted").trim() || "#667085",
      colorway: way
    };
  }

  // The layout in the theme: transparent backgrounds, the page's text colour, its grid and
  // axis lines, the theme's series colours (--chart-1…6, each readable on this theme's
  // background) as plotly's colorway, and any var(--…) in shapes and annotations resolved.
  function themed(layout) {
    var c = colours();
    var out = resolved(Object.assign({}, layout));
    out.paper_bgcolor = "rgba(0,0,0,0)";
    out.plot_bgcolor = "rgba(0,0,0,0)";
    if (c.colorway.length) out.colorway = c.colorway;
    if (out.legend) out.legend = Object.assign({}, out.legend, { font: { color: c.fg } });
    out.font = Object.assign({}, layout.font || {}, { color: c.fg });
    Object.keys(out).forEach(function (k) {
      if (/^[xy]axis\d*$/.test(k)) {
        out[k] = Object.assign({}, out[k], { gridcolor: c.line, linecolor: c.muted, zerolinecolor: c.muted });
      }
    });
    ["xaxis", "yaxis"].forEach(function (k) {
      if (!(k in out)) out[k] = { gridcolor: c.line, linecolor: c.muted, zerolinecolor: c.muted };
    });
    return out;
  }

  // A figure's data may name the theme's colours as CSS variables ("var(--ok)"): resolved
  // from the page's CSS when drawn and again when the theme changes.
  function resolved(value) {
    if (typeof value === "string") {
      var m = /^var\((--[a-z0-9-]+)\)$/.exec(value);
      if (!m) return value;
      return getComputedStyle(document.body).getPropertyValue(m[1]).trim() || "#888";
    }
    if (Array.isArray(value)) return value.map(resolved);
    if (value && typeof value === "object") {
      var out = {};
      Object.keys(value).forEach(function (k) { out[k] = resolved(value[k]); });
      return out;
    }
    return value;
  }

  function pending(root) {
    return [].slice.call((root || document).querySelectorAll(".plot[data-figure]")).filter(function (el) {
      var id = el.dataset.figure;
      return el.dataset.drawn !== "1" && (id in figures || document.getElementById(id));
    });
  }

  function stash(html) {
    if (typeof html !== "string" || html.indexOf("application/json") < 0) return;
    var doc = new DOMParser().parseFromString(html, "text/html");
    doc.querySelectorAll('script[type="application/json"][id]').forEach(function (s) {
      figures[s.id] = s.textContent;
    });
  }

  function draw(root) {
    if (pending(root).length === 0) return;
    if (typeof window.Plotly === "undefined") { withPlotly(function () { draw(root); }); return; }
    (root || document).querySelectorAll(".plot[data-figure]").forEach(function (el) {
      if (el.dataset.drawn === "1") return;
      var id = el.dataset.figure;
      var src = document.getElementById(id);
      if (src) figures[id] = src.textContent;
      if (!(id in figures)) return;
      var fig;
      try { fig = JSON.parse(figures[id]); } catch (e) { return; }
      el.dataset.drawn = "1";
      // kept to draw again in the other theme's colours (its colorway and var(--…) colours)
      el.taFigure = fig;
      // A figure of a given height keeps it when plotly resizes the chart to its box.
      if (fig.layout && fig.layout.height) el.style.height = fig.layout.height + "px";
      window.Plotly.newPlot(el, resolved(fig.data || []), themed(fig.layout || {}), {
        responsive: true, displaylogo: false
      });
    });
  }

  function retheme() {
    if (!window.Plotly) return;
    var c = colours();
    document.querySelectorAll('.plot[data-drawn="1"]').forEach(function (el) {
      if (!el.layout) return;
      if (el.taFigure) {
        window.Plotly.react(el, resolved(el.taFigure.data || []), themed(el.taFigure.layout || {}));
        return;
      }
      var update = { "font.color": c.fg };
      Object.keys(el.layout).forEach(function (k) {
        if (/^[xy]axis\d*$/.test(k)) {
          update[k + ".gridcolor"] = c.line;
          update[k + ".linecolor"] = c.muted;
          update[k + ".zerolinecolor"] = c.muted;
        }
      });
      window.Plotly.relayout(el, update);
    });
  }

  function clear(el) {
    if (window.Plotly) window.Plotly.purge(el);
    el.taFigure = null;
    el.textContent = "";
    el.dataset.drawn = "";
  }

  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  document.addEventListener("ta:theme", retheme);
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
