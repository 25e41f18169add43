// The front page's live numbers: every 15 seconds (while the page is visible) the numbers are read
// again from the small JSON endpoint named by #live[data-url] and put into the [data-live] elements.
(function () {
  "use strict";
  var box = document.getElementById("live");
  if (!box || !window.fetch) return;
  var url = box.getAttribute("data-url");
  var every = 15000;

  function num(v) {
    return v === null || v === undefined ? "–" : Number(v).toLocaleString("en-US");
  }
  // "1234 ± 56": the ± is z95 standard errors (the server's 95% interval, sent with the numbers)
  function elo(v, se, z95) {
    if (v === null || v === undefined) return "–";
    return se === null || se === undefined ? Math.round(v) + "" : Math.round(v) + " ± " + Math.round(z95 * se);
  }
  function show(data) {
    document.querySelectorAll("[data-live]").forEach(function (el) {
      var key = el.getAttribute("data-live");
      if (!(key in data)) return;
      var value = data[key];
      if (key === "network_elo") el.textContent = elo(value, data.network_elo_se, data.z95);
      else if (el.getAttribute("data-format") === "time") el.textContent = new Date(value).toLocaleTimeString();
      else if (typeof value === "number") el.textContent = num(value);
      else el.textContent = value === null ? "–" : value;
      if (el.hasAttribute("data-live-link") && value) {
        el.setAttribute("href", el.getAttribute("href").replace(/[^/]+\/$/, encodeURIComponent(value) + "/"));
      }
    });
  }
  function poll() {
    if (document.hidden) return;
    fetch(url, { headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) { if (data) show(data); })
      .catch(function () { /* the next poll tries again */ });
  }
  document.querySelectorAll('[data-format="time"]').forEach(function (el) {
    var t = new Date(el.textContent);
    if (!isNaN(t)) el.textContent = t.toLocaleTimeString();
  });
  setInterval(poll, every);
  document.addEventListener("visibilitychange", function () { if (!document.hidden) poll(); });
})();
