/* Keyboard-first annotation (templates/auditor/annotate.html). No inline script (CSP):
   one keydown listener on the document, so it keeps working after htmx swaps the panel.
   Keys: the ones beside each choice (data-keys), f fatal, Enter submit, s skip, u undo,
   c comment, ? help. Everything also works with the mouse and without JavaScript. */
(function () {
  "use strict";

  function $(id) { return document.getElementById(id); }

  function typing(el) {
    return el && (el.tagName === "TEXTAREA" || el.tagName === "SELECT" ||
      (el.tagName === "INPUT" && !["radio", "checkbox", "button", "submit"].includes(el.type)));
  }

  function toggleHelp() {
    var dlg = $("help");
    if (!dlg) return;
    if (dlg.open) dlg.close(); else dlg.showModal();
  }

  function choose(key) {
    var form = $("verdict-form");
    if (!form) return false;
    var inputs = form.querySelectorAll("input[name=label][data-keys]");
    for (var i = 0; i < inputs.length; i++) {
      var keys = inputs[i].getAttribute("data-keys").toLowerCase().split(" ");
      if (keys.indexOf(key) !== -1) {
        inputs[i].checked = true;
        inputs[i].focus();
        return true;
      }
    }
    return false;
  }

  function click(id) {
    var el = $(id);
    if (el && !el.disabled) { el.click(); return true; }
    return false;
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    var t = e.target;
    var dlg = $("help");
    if (dlg && dlg.open) {
      if (e.key === "?") { e.preventDefault(); dlg.close(); }
      return; // Escape closes the dialog natively
    }
    if (typing(t)) {
      if (e.key === "Escape") { t.blur(); e.preventDefault(); }
      return;
    }
    if (e.key === "?") { e.preventDefault(); toggleHelp(); return; }
    if (e.key === "Enter") {
      if (t && (t.tagName === "BUTTON" || t.tagName === "A" || t.tagName === "SUMMARY")) return;
      var form = $("verdict-form");
      if (!form) return;
      e.preventDefault();
      if (form.reportValidity()) form.requestSubmit($("submit-verdict"));
      return;
    }
    var key = e.key.length === 1 ? e.key.toLowerCase() : "";
    if (!key) return;
    if (choose(key)) { e.preventDefault(); return; }
    var handled = false;
    if (key === "f") {
      var fatal = $("fatal");
      if (fatal) { fatal.checked = !fatal.checked; handled = true; }
    } else if (key === "s") {
      handled = click("skip-button");
    } else if (key === "u") {
      handled = click("undo-button");
    } else if (key === "c") {
      var c = $("comment");
      if (c) { c.focus(); handled = true; }
    }
    if (handled) e.preventDefault();
  });

  document.addEventListener("click", function (e) {
    if (e.target && e.target.closest && e.target.closest("#help-button")) toggleHelp();
  });

  // After htmx brings the next item, put focus on its heading so screen readers announce it
  // and the page scrolls back to the top.
  document.addEventListener("htmx:afterSwap", function (e) {
    var h = $("item-heading");
    if (h) { h.focus({ preventScroll: true }); window.scrollTo(0, 0); }
  });
})();
