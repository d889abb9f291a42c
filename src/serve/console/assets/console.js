// lt console: the only script. While a page says data-live="1" (the first
// page of sessions, the approvals, a session still running), its #live
// part is fetched again every two seconds and swapped in, until the page
// fetched says it is no longer live. Nothing else runs here.
(function () {
  "use strict";
  function refresh() {
    if (document.body.dataset.live !== "1") return;
    fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (text) {
        if (text === null) return;
        var doc = new DOMParser().parseFromString(text, "text/html");
        var fresh = doc.getElementById("live");
        var here = document.getElementById("live");
        if (fresh && here) {
          // Keep the rows a reader opened open.
          var open = {};
          here.querySelectorAll("details[open] summary").forEach(function (s) { open[s.textContent] = true; });
          here.replaceWith(fresh);
          fresh.querySelectorAll("details summary").forEach(function (s) {
            if (open[s.textContent]) s.parentElement.open = true;
          });
        }
        document.body.dataset.live = doc.body ? doc.body.dataset.live : "0";
      })
      .catch(function () {})
      .then(function () { setTimeout(refresh, 2000); });
  }
  document.addEventListener("DOMContentLoaded", function () { setTimeout(refresh, 2000); });
})();
