// compute console: live refresh and the creds file picker. Plain JS, no
// build step. A page with <main data-live> re-reads its main section
// (header X-Console-Fragment) whenever the tenant's event stream (/events,
// Server-Sent Events) delivers an event: the page updates without a reload.
(function () {
  "use strict";

  var picker = document.getElementById("creds-file");
  if (picker) {
    picker.addEventListener("change", function () {
      var f = picker.files && picker.files[0];
      if (!f) { return; }
      f.text().then(function (t) { document.querySelector("textarea[name=creds]").value = t; });
    });
  }

  var main = document.querySelector("main[data-live]");
  var live = document.getElementById("live");
  if (!main || !live || !window.EventSource) { return; }

  function state(s, label) { live.dataset.state = s; live.textContent = label; }
  var pending = false;
  function refresh() {
    pending = false;
    fetch(location.href, { headers: { "X-Console-Fragment": "1" }, credentials: "same-origin" })
      .then(function (r) {
        if (r.status === 401) { location.assign("/signin"); return null; }
        return r.ok ? r.text() : null;
      })
      .then(function (html) {
        if (html === null) { return; }
        main.innerHTML = html;
        main.dataset.refreshes = String(Number(main.dataset.refreshes || "0") + 1);
      })
      .catch(function () { state("error", "× live"); });
  }

  var es = new EventSource("/events");
  es.addEventListener("open", function () { state("live", "● live"); });
  es.addEventListener("error", function () {
    state(es.readyState === EventSource.CLOSED ? "off" : "reconnecting", "○ live");
  });
  es.addEventListener("signedout", function () { es.close(); location.assign("/signin"); });
  es.addEventListener("compute", function () {
    // One refresh for a burst of events.
    if (!pending) { pending = true; setTimeout(refresh, 100); }
  });
})();
