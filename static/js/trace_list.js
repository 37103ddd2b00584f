// The traces list: "/" puts the cursor in the content search, unless the user is typing
// somewhere already (an input, a select, a text area or an editable element) or holds a
// modifier (Ctrl+/ and the like belong to the browser).
(function () {
  "use strict";
  function typing(el) {
    if (!el) return false;
    var tag = el.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable;
  }
  document.addEventListener("keydown", function (e) {
    if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
    var box = document.getElementById("f-q");
    if (!box) return;
    e.preventDefault();
    box.focus();
    box.select();
  });
})();
