// The association graph as a mind map in plain SVG (no library, no build step, no CDN).
// The centre memory is a box in the middle with its summary inside; the memories one hop away
// stand in a column on each side (one column when the page is too narrow for two), each with
// its label on the outer side, and a memory further out sits below the one that reached it,
// one step further out, joined by an elbow line. So no line can run through a label: lines
// from the centre end where the first column starts, and an elbow runs down the inner side of
// its parent's label. Labels are set at the page's own font size (1 drawing unit = 1 CSS px:
// the drawing is as large as what it holds, never scaled up to the page's width) and wrapped
// by their rendered width, so Japanese, twice as wide as its character count suggests, wraps
// too. Each node is a link to its memory (Tab, Enter); the list below says the same in words.
(function () {
  "use strict";
  var svg = document.getElementById("graph");
  var source = document.getElementById("graph-data");
  if (!svg || !source) return;
  var data = JSON.parse(source.textContent);
  var NS = "http://www.w3.org/2000/svg";
  var LABEL = 270, CENTRE = 230;  // widest line of a label, of the centre's label (px)
  var LINES = 2, CENTRE_LINES = 3;  // lines a label may wrap to before it is shortened
  var RADIUS = 7, SPAN = 64, INDENT = 34, ROW_GAP = 10, PAD = 10, MARGIN = 12;

  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(e);
    return e;
  }

  // Wrapping: the longest start of the text that fits, broken after a space in text with
  // spaces (not in Japanese, which has none between words), never inside a run of Latin
  // letters, digits and signs ("#ops-alerts"), and never before closing punctuation or a
  // small kana (kinsoku, simplified). Then balanced: the narrowest width that needs no more
  // lines, so a label does not end in a lone word or character.
  var measure = el("text", {}, svg);
  var NO_START = "、。，．・ーぁぃぅぇぉっゃゅょゎァィゥェォッャュョヮヵヶ」』）)!?！？:;,.";
  var CJK = /[\u3000-\u9fff\uff00-\uffef]/;
  function width(text, cls) {
    measure.setAttribute("class", cls);
    measure.textContent = text;
    return measure.getComputedTextLength();
  }
  function longestFit(text, max, cls, suffix) {
    var lo = 1, hi = text.length;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (width(text.slice(0, mid) + suffix, cls) <= max) lo = mid; else hi = mid - 1;
    }
    return lo;
  }
  function breakAt(text, cut, spaced) {
    var space = text.lastIndexOf(" ", cut);
    if (spaced && space > cut / 2) return space;
    var at = cut;
    while (at > cut / 2 && /[!-~]/.test(text.charAt(at - 1)) && /[!-~]/.test(text.charAt(at))) at--;
    if (at <= cut / 2) at = cut;
    while (at > 1 && NO_START.indexOf(text.charAt(at)) >= 0) at--;
    return at;
  }
  function greedy(text, max, lines, cls) {
    var out = [], rest = text.trim(), spaced = !CJK.test(text);
    while (rest && out.length < lines) {
      if (width(rest, cls) <= max) { out.push(rest); rest = ""; break; }
      var last = out.length === lines - 1;
      var cut = last ? longestFit(rest, max, cls, "…") : breakAt(rest, longestFit(rest, max, cls, ""), spaced);
      out.push(rest.slice(0, cut).trim() + (last ? "…" : ""));
      rest = rest.slice(cut).trim();
    }
    return out;
  }
  function wrap(text, max, lines, cls) {
    var out = greedy(text, max, lines, cls);
    if (out.length < 2 || out[out.length - 1].slice(-1) === "…") return out;
    var lo = max / out.length, hi = max;
    for (var i = 0; i < 8; i++) {
      var mid = (lo + hi) / 2, tried = greedy(text, mid, lines, cls);
      if (tried.length === out.length && tried[tried.length - 1].slice(-1) !== "…") hi = mid;
      else lo = mid;
    }
    return greedy(text, hi, lines, cls);
  }

  function label(n, parent, cls, max, lines) {
    var text = el("text", { "class": cls }, parent);
    wrap(n.label, max, lines, cls).forEach(function (line, i) {
      var span = el("tspan", { x: 0, dy: i ? "1.3em" : 0 }, text);
      span.textContent = line;
    });
    return text;
  }

  // The tree explore's paths make: each memory under the one that reached it, strongest first.
  var byId = {}, children = {};
  data.nodes.forEach(function (n) { byId[n.id] = n; children[n.id] = []; });
  var centre = data.nodes.filter(function (n) { return n.hops === 0; })[0];
  data.nodes.forEach(function (n) {
    if (n === centre) return;
    var parent = n.hops > 1 && byId[n.parent] ? byId[n.parent] : centre;
    children[parent.id].push(n);
  });
  Object.keys(children).forEach(function (id) {
    children[id].sort(function (a, b) { return (b.activation || 0) - (a.activation || 0); });
  });
  var weight = {};
  data.links.forEach(function (l) { weight[l.source + " " + l.target] = l.weight; });
  function weightOf(a, b) { return weight[a.id + " " + b.id] || weight[b.id + " " + a.id] || 0.1; }

  var base = window.location.pathname.replace(/\/[^/]+\/graph$/, "/");
  var edges = el("g", { "class": "edges" }, svg);
  var nodes = el("g", { "class": "nodes" }, svg);
  function link(n) {
    var a = el("a", { href: base + encodeURIComponent(n.id) }, nodes);
    var title = el("title", {}, a);
    title.textContent = n.label + (n.activation ? " (activation " + n.activation + ")" : "");
    return a;
  }

  // The centre: its label inside a box; lines leave from the box's sides.
  var centreLink = link(centre);
  var box = el("rect", { rx: 6, "class": "centre" }, centreLink);
  var centreText = label(centre, centreLink, "centre-label", CENTRE, CENTRE_LINES);
  centreText.setAttribute("text-anchor", "middle");
  var inner = centreText.getBBox();
  var half = { w: inner.width / 2 + PAD, h: inner.height / 2 + PAD / 2 };
  centreText.setAttribute("transform", "translate(0," + (-inner.y - inner.height / 2) + ")");
  box.setAttribute("x", -half.w); box.setAttribute("y", -half.h);
  box.setAttribute("width", 2 * half.w); box.setAttribute("height", 2 * half.h);

  // Every other memory: a row of its own, the labels measured to size the rows.
  var rows = {};
  data.nodes.forEach(function (n) {
    if (n === centre) return;
    var a = link(n);
    var circle = el("circle", { r: RADIUS, "class": n.tier === "external" ? "external" : "" }, a);
    var text = label(n, a, "", LABEL, LINES);
    var b = text.getBBox();
    rows[n.id] = { circle: circle, text: text, top: b.y, width: b.width,
                   height: Math.max(b.height, 2 * RADIUS) };
  });
  var probe = label({ label: "Mg漢" }, svg, "", LABEL, 1);
  var lineHeight = probe.getBBox().height;  // one line of a label, where its node sits
  probe.remove();

  // The memories one hop away split between the two sides, unless the page is too narrow for
  // two columns: the largest subtrees first, each to the side with fewer rows so far.
  function rowsOf(n) {
    return children[n.id].reduce(function (sum, c) { return sum + rowsOf(c); }, 1);
  }
  function reach(n, depth) {  // how far a subtree reaches past its column, in px
    return children[n.id].reduce(function (most, c) {
      return Math.max(most, reach(c, depth + 1));
    }, depth * INDENT + RADIUS + 6 + rows[n.id].width);
  }
  var first = children[centre.id];
  var wide = first.reduce(function (most, n) { return Math.max(most, reach(n, 0)); }, 0);
  var room = svg.parentNode.clientWidth;
  var twoSides = 2 * (half.w + SPAN + RADIUS + wide + MARGIN) <= room && first.length > 1;
  var sides = [[], []], count = [0, 0];
  first.slice().sort(function (a, b) { return rowsOf(b) - rowsOf(a); }).forEach(function (n) {
    var side = twoSides && count[1] < count[0] ? 1 : 0;
    sides[side].push(n);
    count[side] += rowsOf(n);
  });
  sides.forEach(function (column) {  // within a column, the strongest on top
    column.sort(function (a, b) { return first.indexOf(a) - first.indexOf(b); });
  });

  function place(n, sign, depth, y, parent) {
    var row = rows[n.id];
    var x = sign * (half.w + SPAN + depth * INDENT);
    var cy = y + lineHeight / 2;
    row.circle.setAttribute("cx", x); row.circle.setAttribute("cy", cy);
    row.text.setAttribute("text-anchor", sign > 0 ? "start" : "end");
    row.text.setAttribute("transform", "translate(" + (x + sign * (RADIUS + 6)) + "," +
      (y - row.top) + ")");
    var points = parent
      ? [[parent.x, parent.y + RADIUS], [parent.x, cy], [x - sign * RADIUS, cy]]
      : [[sign * half.w, 0], [x - sign * RADIUS, cy]];
    el("polyline", { points: points.map(function (p) { return p.join(","); }).join(" "),
      "stroke-width": 1 + 3 * Math.min(1, weightOf(parent ? parent.node : centre, n)) }, edges);
    y += row.height + ROW_GAP;
    children[n.id].forEach(function (c) {
      y = place(c, sign, depth + 1, y, { x: x, y: cy, node: n });
    });
    return y;
  }
  sides.forEach(function (column, i) {  // each column centred on the centre's box
    var total = 0;
    (function add(list) {
      list.forEach(function (n) { total += rows[n.id].height + ROW_GAP; add(children[n.id]); });
    })(column);
    var y = -(total - ROW_GAP) / 2;
    column.forEach(function (n) { y = place(n, i === 0 ? 1 : -1, 0, y, null); });
  });
  measure.remove();

  // The drawing's own size, 1 unit to 1 px, plus a margin.
  var all = svg.getBBox();
  var left = Math.floor(all.x - MARGIN), top = Math.floor(all.y - MARGIN);
  var w = Math.ceil(all.x + all.width + MARGIN) - left;
  var h = Math.ceil(all.y + all.height + MARGIN) - top;
  svg.setAttribute("viewBox", [left, top, w, h].join(" "));
  svg.setAttribute("width", w);
  svg.setAttribute("height", h);
  svg.setAttribute("data-ready", String(data.nodes.length));
})();
