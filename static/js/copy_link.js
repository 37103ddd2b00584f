// "Copy link" buttons: copy the value of the input named by data-copy and say so. The input
// shows the link too, so it can be copied by hand where the clipboard is not available (a page
// served over plain http to another machine). Delegated: htmx swaps bring new buttons.
(function () {
  "use strict";
  function said(button, text) {
    var status = button.parentElement.querySelector(".copied");
    if (status) status.textContent = text;
  }
  document.addEventListener("click", function (e) {
    var button = e.target.closest ? e.target.closest(".copy-link") : null;
    if (!button) return;
    var input = document.querySelector(button.getAttribute("data-copy"));
    if (!input) return;
    input.select();
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(input.value).then(
        function () { said(button, "Copied."); },
        function () { said(button, "Select the link and copy it (Ctrl+C)."); }
      );
    } else {
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (err) { ok = false; }
      said(button, ok ? "Copied." : "Select the link and copy it (Ctrl+C).");
    }
  });
})();
