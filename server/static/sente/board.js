// The game page's board: draws, in SVG, the positions the server computed for every move (the JSON
// in #board-data: board size, one string per position with '.', 'b' or 'w' per point, rows from the
// top, the moves, the captures, the phase each move was played in (territory scoring's encore), the
// passes for ko, marked with a triangle, and the result by the rules). Buttons, the slider and the keys step through the game: the
// arrows whenever no field has the focus; Page Up/Down, Home and End only while the board or its
// buttons have it (elsewhere they scroll the page). The script only draws.
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
  var phases = data.phases || [];
  var koPass = {};
  (data.ko_passes || []).forEach(function (n) { koPass[n] = true; });
  var PHASES = ["main phase", "encore phase 1", "encore phase 2"];

  function node(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function px(i) { return MARGIN + i * CELL; }

  // the star points as Sabaki and KataGo draw them: the four 3-3 points (4-4 from 13 lines on), the
  // centre on an odd board (not 7x7), and the side stars only beyond 13 lines (so 5 on 9x9 and 13x13,
  // 9 on 19x19)
  function starPoints(w, h) {
    if (Math.min(w, h) < 6) return [];
    var nx = w >= 13 ? 3 : 2, ny = h >= 13 ? 3 : 2, fx = w - 1 - nx, fy = h - 1 - ny;
    var mx = (w - 1) / 2, my = (h - 1) / 2;
    var pts = [[nx, ny], [fx, ny], [nx, fy], [fx, fy]];
    if (w % 2 === 1 && h % 2 === 1 && w !== 7 && h !== 7) pts.push([mx, my]);
    if (w % 2 === 1 && w > 13) pts.push([mx, ny], [mx, fy]);
    if (h % 2 === 1 && h > 13) pts.push([nx, my], [fx, my]);
    return pts;
  }

  var width = 2 * MARGIN + (W - 1) * CELL, height = 2 * MARGIN + (H - 1) * CELL;
  var svg = node("svg", { viewBox: "0 0 " + width + " " + height, role: "img", "aria-label": W + "×" + H + " Go board" });
  node("rect", { x: 0, y: 0, width: width, height: height, fill: "#dcb35c", rx: 2 }, svg);
  var grid = node("g", { stroke: "#4a3b1f", "stroke-width": 0.5, "stroke-linecap": "square" }, svg);
  for (var x = 0; x < W; x++) node("line", { x1: px(x), y1: px(0), x2: px(x), y2: px(H - 1) }, grid);
  for (var y = 0; y < H; y++) node("line", { x1: px(0), y1: px(y), x2: px(W - 1), y2: px(y) }, grid);
  var stars = node("g", { fill: "#4a3b1f" }, svg);
  starPoints(W, H).forEach(function (p) {
    node("circle", { cx: px(p[0]), cy: px(p[1]), r: 1.1, "class": "star", "data-vertex": COLUMNS[p[0]] + (H - p[1]) },
         stars);
  });
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
    var forKo = move !== null && koPass[current] === true;
    if (forKo) {
      // a pass for ko leaves the board as it was: a triangle on its point, as KataGo's records mark it
      var tx = px(move.x), ty = px(move.y), r = CELL * 0.28;
      node("polygon", {
        points: tx + "," + (ty - r) + " " + (tx - r * 0.87) + "," + (ty + r / 2) + " " + (tx + r * 0.87) + "," + (ty + r / 2),
        fill: "none", stroke: "#c0392b", "stroke-width": 0.9, "class": "ko-pass", "data-vertex": move.v,
      }, stoneLayer);
    } else if (move && move.x !== null) {
      var onBlack = position.charAt(move.y * W + move.x) === "b";
      node("circle", { cx: px(move.x), cy: px(move.y), r: CELL * 0.2, fill: "none", "class": "last-move",
                       stroke: onBlack ? "#fff" : "#000", "stroke-width": 0.9 }, stoneLayer);
    }
    var phase = current > 0 ? (phases[current - 1] || 0) : 0;
    holder.setAttribute("data-move", String(current));
    holder.setAttribute("data-phase", String(phase));
    holder.setAttribute("data-black", String(blacks));
    holder.setAttribute("data-white", String(whites));
    if (slider) slider.value = String(current);
    if (info) {
      var caps = data.captures[current] || [0, 0];
      var what = move ? (move.c === "B" ? "black " : "white ") + (forKo ? "passes for ko at " : "") + move.v
                      : "the start";
      var when = data.scoring === "territory" ? " (" + PHASES[phase] + ")" : "";
      var end = current === last && data.result ? " · result " + data.result +
        (data.scoring === "territory" ? " by territory counting" : "") : "";
      info.textContent = "Move " + current + " of " + last + when + ": " + what + " · captured: " + caps[0] +
        " by black, " + caps[1] + " by white" + end;
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
  var ARROWS = { ArrowLeft: true, ArrowRight: true };
  var area = holder.closest(".board-area") || holder;
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (e.altKey || e.ctrlKey || e.metaKey || !(e.key in KEYS)) return;
    if (t === slider || (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)))) return;
    var onBoard = t && t !== document.body && area.contains(t);
    if (!onBoard && !(e.key in ARROWS && (!t || t === document.body || t === document.documentElement))) return;
    e.preventDefault();
    step(KEYS[e.key]);
  });
  holder.addEventListener("click", function () { holder.focus(); });
  draw(last);
})();
