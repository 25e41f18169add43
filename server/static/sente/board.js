// The game page's board: draws, in SVG, the positions the server computed for every move (the JSON
// in #board-data: board size, one string per position with '.', 'b' or 'w' per point, rows from the
// top, the moves and the captures). Buttons, the slider and the keys (arrows, Page Up/Down, Home,
// End) step through the game; the script only draws.
(function () {
  "use strict";
  var holder = document.getElementById("board");
  var source = document.getElementById("board-data");
  if (!holder || !source) return;
  var data = JSON.parse(source.textContent);
  var W = data.x, H = data.y, last = data.moves.length;
  var COLUMNS = "ABCDEFGHJKLMNOPQRSTUVWXYZ";
  var CELL = 10, MARGIN = 14;
  var NS = "http://www.w3.org/2000/svg";
  var slider = document.getElementById("move-slider");
  var info = document.getElementById("move-info");
  var current = last;

  function node(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function px(i) { return MARGIN + i * CELL; }

  function starPoints(n) {
    if (n < 7) return [];
    var edge = n >= 13 ? 3 : 2, pts = [edge, n - 1 - edge];
    if (n % 2 === 1 && n >= 9) pts.splice(1, 0, (n - 1) / 2);
    return pts;
  }

  var width = 2 * MARGIN + (W - 1) * CELL, height = 2 * MARGIN + (H - 1) * CELL;
  var svg = node("svg", { viewBox: "0 0 " + width + " " + height, role: "img", "aria-label": W + "×" + H + " Go board" });
  node("rect", { x: 0, y: 0, width: width, height: height, fill: "#dcb35c", rx: 2 }, svg);
  var grid = node("g", { stroke: "#4a3b1f", "stroke-width": 0.5, "stroke-linecap": "square" }, svg);
  for (var x = 0; x < W; x++) node("line", { x1: px(x), y1: px(0), x2: px(x), y2: px(H - 1) }, grid);
  for (var y = 0; y < H; y++) node("line", { x1: px(0), y1: px(y), x2: px(W - 1), y2: px(y) }, grid);
  var stars = node("g", { fill: "#4a3b1f" }, svg);
  if (W === H) {
    starPoints(W).forEach(function (sx) {
      starPoints(H).forEach(function (sy) { node("circle", { cx: px(sx), cy: px(sy), r: 1.1 }, stars); });
    });
  }
  var labels = node("g", { fill: "#4a3b1f", "font-size": 4.2, "font-family": "system-ui, sans-serif", "text-anchor": "middle" }, svg);
  for (x = 0; x < W; x++) {
    node("text", { x: px(x), y: MARGIN - 7.5 }, labels).textContent = COLUMNS[x];
    node("text", { x: px(x), y: height - MARGIN + 10.5 }, labels).textContent = COLUMNS[x];
  }
  for (y = 0; y < H; y++) {
    node("text", { x: MARGIN - 8.5, y: px(y) + 1.5 }, labels).textContent = String(H - y);
    node("text", { x: width - MARGIN + 8.5, y: px(y) + 1.5 }, labels).textContent = String(H - y);
  }
  var stoneLayer = node("g", {}, svg);
  holder.appendChild(svg);

  function draw(k) {
    current = Math.max(0, Math.min(last, k));
    var position = data.positions[current];
    while (stoneLayer.firstChild) stoneLayer.removeChild(stoneLayer.firstChild);
    var blacks = 0, whites = 0;
    for (var i = 0; i < position.length; i++) {
      var c = position.charAt(i);
      if (c === ".") continue;
      var sx = i % W, sy = (i - sx) / W, black = c === "b";
      if (black) blacks++; else whites++;
      node("circle", {
        cx: px(sx), cy: px(sy), r: CELL * 0.47, "class": "stone " + (black ? "black" : "white"),
        fill: black ? "#1b1b1b" : "#f7f7f2", stroke: black ? "#000" : "#555", "stroke-width": 0.4,
        "data-vertex": COLUMNS[sx] + (H - sy),
      }, stoneLayer);
    }
    var move = current > 0 ? data.moves[current - 1] : null;
    if (move && move.x !== null) {
      var onBlack = position.charAt(move.y * W + move.x) === "b";
      node("circle", { cx: px(move.x), cy: px(move.y), r: CELL * 0.2, fill: "none", "class": "last-move",
                       stroke: onBlack ? "#fff" : "#000", "stroke-width": 0.9 }, stoneLayer);
    }
    holder.setAttribute("data-move", String(current));
    holder.setAttribute("data-black", String(blacks));
    holder.setAttribute("data-white", String(whites));
    if (slider) slider.value = String(current);
    if (info) {
      var caps = data.captures[current] || [0, 0];
      var what = move ? (move.c === "B" ? "black " : "white ") + move.v : "the start";
      info.textContent = "Move " + current + " of " + last + ": " + what + " · captured: " + caps[0] +
        " by black, " + caps[1] + " by white";
    }
  }

  function step(how) {
    if (how === "first") draw(0);
    else if (how === "last") draw(last);
    else draw(current + parseInt(how, 10));
  }

  document.querySelectorAll(".board-controls [data-step]").forEach(function (b) {
    b.addEventListener("click", function () { step(b.getAttribute("data-step")); });
  });
  if (slider) slider.addEventListener("input", function () { draw(parseInt(slider.value, 10)); });
  var KEYS = { ArrowLeft: "-1", ArrowRight: "1", PageUp: "-10", PageDown: "10", Home: "first", End: "last" };
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (t === slider || (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)))) return;
    if (e.altKey || e.ctrlKey || e.metaKey || !(e.key in KEYS)) return;
    e.preventDefault();
    step(KEYS[e.key]);
  });
  draw(last);
})();
