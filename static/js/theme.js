/* Colour theme: "system" (the browser's prefers-color-scheme), "light" or "dark", chosen in the
   header and kept in localStorage. base.html loads this file in <head>, not deferred, after the
   dark stylesheet's link: the stored choice is applied before the first paint (the CSP allows
   no inline script). Once the page is parsed it keeps the header's select in step.

   Dark mode is static/css/dark.css, linked with media="(prefers-color-scheme: dark)": "dark"
   sets that media to "all", "light" to "not all". <html data-theme> names the choice, and a
   "ta:theme" event on document tells charts to take the new colours. */
(function () {
  "use strict";

  var KEY = "ta-theme";
  var SYSTEM = "(prefers-color-scheme: dark)";

  function apply(theme) {
    document.documentElement.setAttribute("data-theme", theme);
    var link = document.getElementById("dark-css");
    if (link) link.media = theme === "dark" ? "all" : theme === "light" ? "not all" : SYSTEM;
    document.dispatchEvent(new CustomEvent("ta:theme", { detail: { theme: theme } }));
  }

  function stored() {
    var t = null;
    try { t = localStorage.getItem(KEY); } catch (e) { /* storage refused: the system's */ }
    return t === "light" || t === "dark" ? t : "system";
  }

  function current() {
    var t = document.documentElement.getAttribute("data-theme");
    return t === "light" || t === "dark" ? t : "system";
  }

  apply(stored());

  // A page back from the back-forward cache, or a choice made in another tab: take it up.
  function sync() {
    apply(stored());
    var select = document.getElementById("theme-select");
    if (select) select.value = current();
  }
  window.addEventListener("pageshow", function (e) { if (e.persisted) sync(); });
  window.addEventListener("storage", function (e) { if (e.key === KEY) sync(); });

  document.addEventListener("DOMContentLoaded", function () {
    var select = document.getElementById("theme-select");
    if (!select) return;
    select.value = current();
    select.addEventListener("change", function () {
      var t = select.value === "light" || select.value === "dark" ? select.value : "system";
      try {
        if (t === "system") localStorage.removeItem(KEY);
        else localStorage.setItem(KEY, t);
      } catch (e) { /* storage refused (private mode): the choice lasts for this page */ }
      apply(t);
    });
  });

  // The system's own switch (e.g. at dusk) changes the colours while "system" is chosen.
  if (window.matchMedia) {
    var mq = window.matchMedia(SYSTEM);
    var onChange = function () { if (current() === "system") apply("system"); };
    if (mq.addEventListener) mq.addEventListener("change", onChange);
  }
})();
