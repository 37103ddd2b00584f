// The trace page's notes: a refused tag or comment answers 400 or 403 with the notes section
// saying why; htmx leaves 4xx answers unswapped by default, so show this one.
(function () {
  "use strict";
  document.addEventListener("htmx:beforeSwap", function (e) {
    var status = e.detail.xhr ? e.detail.xhr.status : 0;
    var target = e.detail.target;
    if ((status === 400 || status === 403) && target && target.id === "notes") {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
})();
