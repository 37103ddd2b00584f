/* Trace page reading aids: events collapsed to one line by default, a turn folds as a whole,
   expand / collapse all, jump to the divergence, links from the steps tree, and the keyboard —
     j / k   next / previous event      n   next divergence row of the side-by-side
     o, Enter   open or close the current event
   Keys are ignored while typing in a field. Works on events "load more" adds later (delegated
   listeners, state read from the DOM). No inline script (CSP). */
(function () {
  "use strict";

  function events() { return Array.prototype.slice.call(document.querySelectorAll("#timeline li.ev:not([hidden])")); }
  function current() {
    var a = document.activeElement;
    return a && a.closest ? a.closest("#timeline li.ev") : null;
  }

  function setOpen(li, open) {
    li.classList.toggle("collapsed", !open);
    var b = li.querySelector(".ev-toggle");
    if (b) b.setAttribute("aria-expanded", open ? "true" : "false");
  }
  function toggle(li) { setOpen(li, li.classList.contains("collapsed")); }

  function focusEvent(li) {
    if (!li) return;
    document.querySelectorAll("#timeline li.ev.current").forEach(function (x) { x.classList.remove("current"); });
    li.classList.add("current");
    li.focus({ preventScroll: true });
    li.scrollIntoView({ block: "nearest" });
  }

  function move(step) {
    var list = events();
    if (!list.length) return;
    var i = list.indexOf(current());
    var next = i < 0 ? (step > 0 ? 0 : list.length - 1) : Math.min(list.length - 1, Math.max(0, i + step));
    focusEvent(list[next]);
  }

  function nextDivergence() {
    var rows = Array.prototype.slice.call(document.querySelectorAll("#sbs .sbs-row:not(.k-same):not(.sbs-cols)"));
    if (!rows.length) return;
    var a = document.activeElement;
    var i = rows.indexOf(a);
    var row = rows[(i + 1) % rows.length];
    row.setAttribute("tabindex", "-1");
    row.focus({ preventScroll: true });
    row.scrollIntoView({ block: "center" });
  }

  function setTurn(turn, open) {
    document.querySelectorAll('#timeline li.ev[data-turn="' + turn + '"]').forEach(function (li) { li.hidden = !open; });
    document.querySelectorAll('#timeline .turn-toggle[data-turn="' + turn + '"]').forEach(function (b) {
      b.setAttribute("aria-expanded", open ? "true" : "false");
    });
  }

  // A link to one event (#ev-12, from the steps, the side-by-side or shared) opens that event,
  // unfolding its turn; a link to a step of the side-by-side (#sbs-ev-12, from the steps) opens
  // the collapsed prefix or tail that holds it.
  function openFromHash() {
    var m = /^#ev-(\d+)$/.exec(window.location.hash);
    var li = m && document.getElementById("ev-" + m[1]);
    if (li && li.classList.contains("ev")) {
      if (li.hidden) setTurn(li.dataset.turn, true);
      setOpen(li, true);
      focusEvent(li);
      return;
    }
    var s = /^#sbs-ev-(\d+)$/.exec(window.location.hash);
    var row = s && document.getElementById("sbs-ev-" + s[1]);
    if (row) {
      for (var d = row.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) d.open = true;
      row.focus({ preventScroll: true });
      row.scrollIntoView({ block: "center" });
    }
  }
  document.addEventListener("DOMContentLoaded", openFromHash);
  window.addEventListener("hashchange", openFromHash);

  document.addEventListener("click", function (e) {
    var t = e.target;
    if (!t.closest) return;
    var b = t.closest(".ev-toggle");
    if (b) { var li = b.closest("li.ev"); toggle(li); focusEvent(li); return; }
    var head = t.closest("#timeline li.ev .ev-head");
    if (head && !t.closest("a, button")) { var li2 = head.closest("li.ev"); toggle(li2); focusEvent(li2); return; }
    var tt = t.closest(".turn-toggle");
    if (tt) { setTurn(tt.dataset.turn, tt.getAttribute("aria-expanded") !== "true"); return; }
    if (t.closest("#expand-all")) { events().forEach(function (li) { setOpen(li, true); }); return; }
    if (t.closest("#collapse-all")) { events().forEach(function (li) { setOpen(li, false); }); return; }
  });

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var tag = (e.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select" || e.target.isContentEditable) return;
    if (e.key === "j") { move(1); e.preventDefault(); }
    else if (e.key === "k") { move(-1); e.preventDefault(); }
    else if (e.key === "n") { nextDivergence(); e.preventDefault(); }
    else if (e.key === "o" || (e.key === "Enter" && e.target.matches && e.target.matches("#timeline li.ev"))) {
      var li = current();
      if (li) { toggle(li); e.preventDefault(); }
    }
  });
})();
