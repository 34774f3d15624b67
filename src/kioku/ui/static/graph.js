// The association graph: a small force layout in plain SVG (no library, no build step).
// Reads the nodes and links the server embedded as JSON; each node is a link to its memory,
// so Tab moves through them and Enter opens one. The list below the figure says the same.
(function () {
  "use strict";
  var svg = document.getElementById("graph");
  var source = document.getElementById("graph-data");
  if (!svg || !source) return;
  var data = JSON.parse(source.textContent);
  var W = 800, H = 500, NS = "http://www.w3.org/2000/svg";
  var nodes = data.nodes.map(function (n, i) {
    // Start on a circle, first neighbour up and to the right: labels then rarely collide.
    var angle = -Math.PI / 3 + (2 * Math.PI * i) / Math.max(1, data.nodes.length - 1);
    var r = n.hops === 0 ? 0 : 60 + 70 * n.hops;
    return Object.assign({}, n, { x: W / 2 + r * Math.cos(angle), y: H / 2 + r * Math.sin(angle), vx: 0, vy: 0 });
  });
  var byId = {};
  nodes.forEach(function (n) { byId[n.id] = n; });
  var links = data.links.filter(function (l) { return byId[l.source] && byId[l.target]; });

  // A few hundred steps of repulsion (every pair), springs (links) and a pull to the centre.
  for (var step = 0; step < 300; step++) {
    var cooling = 1 - step / 300;
    for (var i = 0; i < nodes.length; i++) {
      for (var j = i + 1; j < nodes.length; j++) {
        var a = nodes[i], b = nodes[j];
        var dx = a.x - b.x, dy = a.y - b.y, d2 = dx * dx + dy * dy + 0.01;
        var f = 4000 / d2, d = Math.sqrt(d2);
        a.vx += (f * dx) / d; a.vy += (f * dy) / d; b.vx -= (f * dx) / d; b.vy -= (f * dy) / d;
      }
    }
    links.forEach(function (l) {
      var s = byId[l.source], t = byId[l.target];
      var dx = t.x - s.x, dy = t.y - s.y, d = Math.sqrt(dx * dx + dy * dy) + 0.01;
      var rest = 200 - 60 * Math.min(1, l.weight), f = (d - rest) * 0.05;
      s.vx += (f * dx) / d; s.vy += (f * dy) / d; t.vx -= (f * dx) / d; t.vy -= (f * dy) / d;
    });
    nodes.forEach(function (n) {
      n.vx += (W / 2 - n.x) * 0.01; n.vy += (H / 2 - n.y) * 0.01;
      if (n.hops === 0) { n.x = W / 2; n.y = H / 2; n.vx = n.vy = 0; return; }
      n.x += Math.max(-20, Math.min(20, n.vx * cooling));
      n.y += Math.max(-20, Math.min(20, n.vy * cooling));
      n.x = Math.max(30, Math.min(W - 30, n.x)); n.y = Math.max(30, Math.min(H - 30, n.y));
      n.vx *= 0.5; n.vy *= 0.5;
    });
  }

  function el(name, attrs) {
    var e = document.createElementNS(NS, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    return e;
  }
  links.forEach(function (l) {
    var s = byId[l.source], t = byId[l.target];
    svg.appendChild(el("line", { x1: s.x, y1: s.y, x2: t.x, y2: t.y,
      "stroke-width": 1 + 4 * Math.min(1, l.weight) }));
  });
  var base = window.location.pathname.replace(/\/[^/]+\/graph$/, "/");
  nodes.forEach(function (n) {
    var link = el("a", { href: base + encodeURIComponent(n.id) });
    var title = el("title", {});
    title.textContent = n.label + (n.activation ? " (activation " + n.activation + ")" : "");
    link.appendChild(title);
    var cls = n.hops === 0 ? "centre" : (n.tier === "external" ? "external" : "");
    link.appendChild(el("circle", { cx: n.x, cy: n.y, r: n.hops === 0 ? 12 : 8, "class": cls }));
    var text = el("text", { x: n.x, y: n.y + (n.hops === 0 ? 28 : 22), "text-anchor": "middle" });
    text.textContent = n.label.length > 28 ? n.label.slice(0, 27) + "…" : n.label;
    link.appendChild(text);
    svg.appendChild(link);
  });
  svg.setAttribute("data-ready", String(nodes.length));
})();
