// The Elo chart: every network of the run as a point with a 95% error bar, against the data rows it
// was trained on or against time (UTC, on the axis as in the hover text), and each rated anchor (GNU
// Go at a level) as a dashed line at its Elo. Drawn with uPlot (served
// from this site); drag to zoom, double-click to zoom out, hover for a network, click a point to open
// its page. The controls work before the data has arrived: the chart is drawn as they say once it has.
(function () {
  "use strict";
  var el = document.getElementById("elo-chart");
  if (!el || !window.uPlot || !window.fetch) return;

  var COLORS = { main: "#2b5d8a", candidate: "#d08a00", rejected: "#c0392b", bar: "rgba(43,93,138,0.45)" };
  var height = parseInt(el.getAttribute("data-height") || "400", 10);
  var hover = document.getElementById("elo-hover");
  var axis = "rows";
  var showRejected = true;
  var net = null; // the columns from the server
  var anchors = []; // [{name, elo, se, games}] with a rating
  var z95; // standard errors in a 95% interval: the server sends it with the data
  var order = []; // network indexes in x order
  var plot = null;

  function fmtRows(v) {
    var a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toFixed(a >= 1e10 ? 0 : 1) + "G";
    if (a >= 1e6) return (v / 1e6).toFixed(a >= 1e7 ? 0 : 1) + "M";
    if (a >= 1e3) return (v / 1e3).toFixed(a >= 1e4 ? 0 : 1) + "k";
    return String(Math.round(v));
  }
  function group(i) {
    var s = net.state[i];
    if (s === "rejected") return "rejected";
    if (s === "candidate" || s === "rating") return "candidate";
    return "main";
  }
  // a time (seconds) in UTC: "2026-01-14 09:30"
  function utc(seconds) {
    return new Date(seconds * 1000).toISOString().slice(0, 16).replace("T", " ");
  }
  // the time axis's labels, in UTC: the day, and the hour when the ticks are less than a day apart
  function timeTicks(u, splits, axisIdx, space, incr) {
    el.setAttribute("data-x-ticks", splits.join(","));
    return splits.map(function (v) {
      if (v === null || v === undefined) return "";
      var text = utc(v);
      return incr >= 86400 ? text.slice(5, 10) : text.slice(5);
    });
  }
  function describe(i) {
    var e = net.elo[i] === null ? "no rating yet" : "Elo " + Math.round(net.elo[i]) +
      (net.se[i] === null ? "" : " ± " + Math.round(z95 * net.se[i]));
    return net.name[i] + " (" + net.state[i] + (net.released[i] ? ", released" : "") + "): " + e + ", " +
      Number(net.rows[i]).toLocaleString("en-US") + " data rows, " + utc(net.time[i]) + " UTC";
  }

  function build() {
    var xs = axis === "rows" ? net.rows : net.time;
    order = net.name.map(function (_, i) { return i; });
    order.sort(function (a, b) { return xs[a] - xs[b] || net.time[a] - net.time[b]; });
    var x = [], main = [], cand = [], rej = [];
    order.forEach(function (i) {
      x.push(xs[i]);
      var g = group(i);
      main.push(g === "main" ? net.elo[i] : null);
      cand.push(g === "candidate" ? net.elo[i] : null);
      rej.push(g === "rejected" && showRejected ? net.elo[i] : null);
    });
    return [x, main, cand, rej];
  }

  // The y range of the networks in view, error bars included.
  function yRange(u) {
    var lo = Infinity, hi = -Infinity, xmin = u.scales.x.min, xmax = u.scales.x.max;
    for (var k = 0; k < order.length; k++) {
      var xv = u.data[0][k];
      if (xmin != null && (xv < xmin || xv > xmax)) continue;
      for (var s = 1; s < u.data.length; s++) {
        var y = u.data[s][k];
        if (y === null || y === undefined) continue;
        var se = net.se[order[k]] || 0;
        lo = Math.min(lo, y - z95 * se);
        hi = Math.max(hi, y + z95 * se);
      }
    }
    anchors.forEach(function (a) { lo = Math.min(lo, a.elo); hi = Math.max(hi, a.elo); });
    if (lo === Infinity) return [-100, 100];
    var pad = Math.max(10, (hi - lo) * 0.06);
    return [lo - pad, hi + pad];
  }

  // the whole x range gets a margin, so that the first and last points are not on the frame; a zoomed
  // range (dragged across) is kept as it is. uPlot asks this for every new scale, setScale's too.
  function xRange(u, min, max) {
    var x = u.data && u.data[0];
    if (x && x.length && (min > x[0] || max < x[x.length - 1])) return [min, max];
    var pad = (max - min) * 0.02 || 1;
    return [min - pad, max + pad];
  }

  function drawBars(u) {
    var ctx = u.ctx, b = u.bbox;
    ctx.save();
    ctx.beginPath();
    ctx.rect(b.left, b.top, b.width, b.height);
    ctx.clip();
    ctx.lineWidth = Math.max(1, devicePixelRatio);
    var cap = 3 * devicePixelRatio;
    for (var s = 1; s < u.data.length; s++) {
      if (!u.series[s].show) continue;
      ctx.strokeStyle = u.series[s]._barColor;
      ctx.beginPath();
      for (var k = 0; k < order.length; k++) {
        var y = u.data[s][k], se = net.se[order[k]];
        if (y === null || y === undefined || se === null || se === undefined || se === 0) continue;
        var px = u.valToPos(u.data[0][k], "x", true);
        if (px < b.left || px > b.left + b.width) continue;
        var top = u.valToPos(y + z95 * se, "y", true), bottom = u.valToPos(y - z95 * se, "y", true);
        ctx.moveTo(px, top); ctx.lineTo(px, bottom);
        ctx.moveTo(px - cap, top); ctx.lineTo(px + cap, top);
        ctx.moveTo(px - cap, bottom); ctx.lineTo(px + cap, bottom);
      }
      ctx.stroke();
    }
    ctx.restore();
  }

  function drawAnchors(u) {
    if (!anchors.length) return;
    var ctx = u.ctx, b = u.bbox, dpr = devicePixelRatio;
    ctx.save();
    ctx.beginPath();
    ctx.rect(b.left, b.top, b.width, b.height);
    ctx.clip();
    ctx.strokeStyle = "#6b6b6b";
    ctx.fillStyle = "#4a4a4a";
    ctx.lineWidth = dpr;
    ctx.setLineDash([6 * dpr, 4 * dpr]);
    ctx.font = Math.round(11 * dpr) + "px sans-serif";
    ctx.textAlign = "left"; // uPlot leaves its axes' alignment set
    ctx.textBaseline = "bottom";
    anchors.forEach(function (a) {
      var y = u.valToPos(a.elo, "y", true);
      ctx.beginPath();
      ctx.moveTo(b.left, y);
      ctx.lineTo(b.left + b.width, y);
      ctx.stroke();
      ctx.fillText(a.name + " (" + Math.round(a.elo) + ")", b.left + 6 * dpr, y - 4 * dpr);
    });
    ctx.restore();
  }

  function onCursor(u) {
    var k = u.cursor.idx;
    if (k === null || k === undefined || !hover) return;
    hover.textContent = describe(order[k]);
  }

  // the x and y ranges in view, for whoever reads the page (and its tests)
  function onScale(u, key) {
    if (key !== "x" && key !== "y") return;
    el.setAttribute("data-" + key + "-min", String(u.scales[key].min));
    el.setAttribute("data-" + key + "-max", String(u.scales[key].max));
  }

  function options(width) {
    var time = axis === "time";
    var points = function (color) { return { show: true, size: 6, stroke: color, fill: color }; };
    var series = [
      { label: time ? "time (UTC)" : "data rows", value: function (u, v) { return v === null ? "–" : time ? utc(v) : fmtRows(v); } },
      { label: "accepted", stroke: COLORS.main, width: 1.5, spanGaps: true, points: points(COLORS.main), _barColor: COLORS.bar },
      { label: "candidates", stroke: COLORS.candidate, paths: function () { return null; }, points: points(COLORS.candidate), _barColor: "rgba(208,138,0,0.5)" },
      { label: "rejected", stroke: COLORS.rejected, paths: function () { return null; }, points: points(COLORS.rejected), _barColor: "rgba(192,57,43,0.45)" },
    ];
    series.slice(1).forEach(function (s) { s.value = function (u, v) { return v === null || v === undefined ? "–" : Math.round(v); }; });
    return {
      width: width, height: height,
      // uPlot places time ticks in this time zone: UTC, as the labels and the hover text say
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"); },
      scales: { x: { time: time, range: xRange }, y: { range: yRange } },
      series: series,
      axes: [
        time ? { label: "time (UTC)", values: timeTicks } : { label: "data rows", values: function (u, vals) { return vals.map(fmtRows); } },
        { label: "Elo", size: 56 },
      ],
      cursor: { drag: { x: true, y: false, setScale: true }, points: { size: 9 } },
      hooks: { draw: [drawBars, drawAnchors], setCursor: [onCursor], setScale: [onScale] },
    };
  }

  function render() {
    if (!net || !net.name || !net.name.length) return; // no data yet (or none): the controls only set the state
    if (plot) plot.destroy();
    el.innerHTML = "";
    plot = new uPlot(options(el.clientWidth || 600), build(), el);
    el.setAttribute("data-points", String(order.length));
    el.setAttribute("data-anchors", anchors.map(function (a) { return a.name; }).join(","));
    el.setAttribute("data-axis", axis);
    el.setAttribute("data-ready", "1");
  }

  function resetZoom() {
    if (!plot) return;
    var x = plot.data[0];
    if (!x.length) return;
    plot.setScale("x", { min: x[0], max: x[x.length - 1] }); // xRange adds the margin
  }

  // click (without dragging) on a point: open the network's page
  var downAt = null;
  el.addEventListener("mousedown", function (e) { downAt = [e.clientX, e.clientY]; });
  el.addEventListener("click", function (e) {
    if (!plot || !downAt || Math.abs(e.clientX - downAt[0]) + Math.abs(e.clientY - downAt[1]) > 3) return;
    if (!e.target.closest || !e.target.closest(".u-over")) return;
    var k = plot.cursor.idx, link = el.getAttribute("data-link");
    if (k === null || k === undefined || !link) return;
    var i = order[k], y = plot.valToPos(net.elo[i] === null ? 0 : net.elo[i], "y");
    var rect = plot.over.getBoundingClientRect();
    if (net.elo[i] !== null && Math.abs(e.clientY - rect.top - y) < 12) {
      window.location.href = link + encodeURIComponent(net.name[i]) + "/";
    }
  });

  document.querySelectorAll("button[data-axis]").forEach(function (b) {
    b.addEventListener("click", function () {
      axis = b.getAttribute("data-axis");
      document.querySelectorAll("button[data-axis]").forEach(function (o) {
        var on = o === b;
        o.classList.toggle("active", on);
        o.setAttribute("aria-pressed", on ? "true" : "false");
      });
      render();
    });
  });
  var rejectedBox = document.querySelector('[data-option="rejected"]');
  if (rejectedBox) rejectedBox.addEventListener("change", function () { showRejected = rejectedBox.checked; render(); });
  var reset = document.querySelector('[data-action="reset"]');
  if (reset) reset.addEventListener("click", resetZoom);

  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () { if (plot) plot.setSize({ width: el.clientWidth, height: height }); }, 150);
  });

  fetch(el.getAttribute("data-src"), { headers: { Accept: "application/json" } })
    .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
    .then(function (data) {
      net = data.networks;
      z95 = data.z95;
      anchors = (data.anchors || []).filter(function (a) { return a.elo !== null; });
      if (!net || !net.name || !net.name.length) { el.textContent = "No networks yet."; el.setAttribute("data-ready", "1"); return; }
      render();
    })
    .catch(function (e) { el.textContent = "The chart's data could not be loaded (" + e.message + ")."; });
})();
