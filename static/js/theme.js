/* Colour theme: "system" (the browser's prefers-color-scheme), "light" or "dark", chosen in the
   header and kept in localStorage. base.html's inline script applies the stored choice before
   the first paint; this file keeps the header's select in step and applies a new choice.

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

  function current() {
    var t = document.documentElement.getAttribute("data-theme");
    return t === "light" || t === "dark" ? t : "system";
  }

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
