// Drag-and-drop upload with a progress bar. Without JavaScript the form posts normally.
(function () {
  "use strict";
  const form = document.getElementById("upload-form");
  if (!form) return;
  const input = document.getElementById("file");
  const zone = document.getElementById("dropzone");
  const chosen = document.getElementById("chosen");
  const wrap = document.getElementById("progress-wrap");
  const bar = document.getElementById("progress");
  const text = document.getElementById("progress-text");
  const err = document.getElementById("upload-error");
  const submit = document.getElementById("submit");

  function showChosen() {
    const f = input.files[0];
    chosen.textContent = f ? f.name + " (" + (f.size / 1048576).toFixed(2) + " MiB)" : "";
  }
  input.addEventListener("change", showChosen);
  ["dragenter", "dragover"].forEach(function (name) {
    zone.addEventListener(name, function (e) { e.preventDefault(); zone.classList.add("over"); });
  });
  ["dragleave", "drop"].forEach(function (name) {
    zone.addEventListener(name, function (e) { e.preventDefault(); zone.classList.remove("over"); });
  });
  zone.addEventListener("drop", function (e) {
    if (e.dataTransfer && e.dataTransfer.files.length) {
      input.files = e.dataTransfer.files;
      showChosen();
    }
  });
  zone.addEventListener("keydown", function (e) {
    if (e.key === "Enter" || e.key === " ") { e.preventDefault(); input.click(); }
  });

  form.addEventListener("submit", function (e) {
    if (!input.files.length) return;  // let the browser say the field is required
    e.preventDefault();
    err.hidden = true;
    submit.disabled = true;
    wrap.hidden = false;
    const xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.upload.addEventListener("progress", function (ev) {
      if (ev.lengthComputable) {
        const pct = Math.round((ev.loaded / ev.total) * 100);
        bar.value = pct;
        text.textContent = pct + "%";
      }
    });
    xhr.addEventListener("load", function () {
      let body = {};
      try { body = JSON.parse(xhr.responseText); } catch (_) { /* not JSON: shown below */ }
      if (xhr.status < 300 && body.url) {
        window.location.assign(body.url);
        return;
      }
      err.textContent = body.error || ("Upload failed (HTTP " + xhr.status + ").");
      err.hidden = false;
      submit.disabled = false;
    });
    xhr.addEventListener("error", function () {
      err.textContent = "The connection failed during the upload; nothing was stored. Try again.";
      err.hidden = false;
      submit.disabled = false;
    });
    xhr.send(new FormData(form));
  });
})();
