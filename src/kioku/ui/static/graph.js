// The association graph: a radial layout in plain SVG (no library, no build step, no CDN).
// The centre memory sits in the middle, each hop on its own ring, each node near the node
// that reached it. Labels are measured as rendered (so Japanese text, twice as wide as its
// character count suggests, is measured too), set outward from the centre, shortened past a
// width, and moved apart until none overlaps; the viewBox then fits the drawing, so it fills
// the page's width. Each node is a link to its memory (Tab, Enter); the list below says the
// same in words.
(function () {
  "use strict";
  var svg = document.getElementById("graph");
  var source = document.getElementById("graph-data");
  if (!svg || !source) return;
  var data = JSON.parse(source.textContent);
  var NS = "http://www.w3.org/2000/svg";
  var RING = 170, MAX_LABEL = 230, GAP = 3;

  var byId = {};
  data.nodes.forEach(function (n) { byId[n.id] = n; });
  var centre = data.nodes.filter(function (n) { return n.hops === 0; })[0];
  centre.x = 0; centre.y = 0; centre.angle = 0;
  // The first ring shares the circle evenly; a node further out sits at the angle of the
  // node that reached it, beside its siblings, so a branch reads outward and links rarely cross.
  var maxHops = Math.max.apply(null, data.nodes.map(function (n) { return n.hops; }));
  for (var hop = 1; hop <= maxHops; hop++) {
    var ring = data.nodes.filter(function (n) { return n.hops === hop; });
    ring.sort(function (a, b) { return (b.activation || 0) - (a.activation || 0); });
    var siblings = {};
    ring.forEach(function (n) {
      var parent = hop === 1 ? centre : (byId[n.parent] || centre);
      (siblings[parent.id] = siblings[parent.id] || []).push(n);
    });
    var step = Math.min(0.5, (2 * Math.PI) / Math.max(1, ring.length));
    ring.forEach(function (n, i) {
      if (hop === 1) {
        n.angle = -Math.PI / 2 + (2 * Math.PI * (i + 0.5)) / ring.length;
      } else {
        var parent = byId[n.parent] || centre, group = siblings[parent.id];
        n.angle = parent.angle + (group.indexOf(n) - (group.length - 1) / 2) * step;
      }
      n.x = RING * hop * Math.cos(n.angle);
      n.y = RING * hop * Math.sin(n.angle);
    });
  }
  var links = data.links.filter(function (l) { return byId[l.source] && byId[l.target]; });

  function el(name, attrs) {
    var e = document.createElementNS(NS, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    return e;
  }
  var edges = el("g", { "class": "edges" });
  svg.appendChild(edges);
  links.forEach(function (l) {
    var s = byId[l.source], t = byId[l.target];
    edges.appendChild(el("line", { x1: s.x, y1: s.y, x2: t.x, y2: t.y,
      "stroke-width": 1 + 4 * Math.min(1, l.weight) }));
  });
  var base = window.location.pathname.replace(/\/[^/]+\/graph$/, "/");
  var labels = [];
  data.nodes.forEach(function (n) {
    var link = el("a", { href: base + encodeURIComponent(n.id) });
    var title = el("title", {});
    title.textContent = n.label + (n.activation ? " (activation " + n.activation + ")" : "");
    link.appendChild(title);
    var cls = n.hops === 0 ? "centre" : (n.tier === "external" ? "external" : "");
    var radius = n.hops === 0 ? 12 : 8;
    link.appendChild(el("circle", { cx: n.x, cy: n.y, r: radius, "class": cls }));
    var right = n.hops === 0 || Math.cos(n.angle) >= 0;
    var text = n.hops === 0
      ? el("text", { x: n.x, y: n.y + 30, "text-anchor": "middle", "class": "centre-label" })
      : el("text", { x: n.x + (right ? 1 : -1) * (radius + 6), y: n.y + 4,
                     "text-anchor": right ? "start" : "end" });
    text.textContent = n.label;
    link.appendChild(text);
    svg.appendChild(link);
    // Shorten by the rendered width, not the character count.
    var label = n.label;
    while (text.getComputedTextLength() > MAX_LABEL && label.length > 4) {
      label = label.slice(0, -1);
      text.textContent = label + "…";
    }
    labels.push(text);
  });

  // Move labels apart: whenever two boxes overlap, the lower one goes down (and the upper
  // one up) by half the overlap; a few rounds settle every pair.
  function box(t) {
    var b = t.getBBox();
    return { x: b.x, y: b.y, w: b.width, h: b.height };
  }
  for (var round = 0; round < 60; round++) {
    var moved = false;
    for (var i = 0; i < labels.length; i++) {
      for (var j = i + 1; j < labels.length; j++) {
        var a = box(labels[i]), b = box(labels[j]);
        var overlapX = Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x);
        var overlapY = Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y);
        if (overlapX > 0 && overlapY > -GAP) {
          var shift = (overlapY + GAP) / 2 + 0.5;
          var upper = a.y <= b.y ? labels[i] : labels[j], lower = upper === labels[i] ? labels[j] : labels[i];
          upper.setAttribute("y", Number(upper.getAttribute("y")) - shift);
          lower.setAttribute("y", Number(lower.getAttribute("y")) + shift);
          moved = true;
        }
      }
    }
    if (!moved) break;
  }

  // Fit the drawing: the viewBox is what was drawn plus a margin; the SVG takes the full width.
  var all = svg.getBBox(), margin = 16;
  svg.setAttribute("viewBox", [all.x - margin, all.y - margin, all.width + 2 * margin,
    all.height + 2 * margin].join(" "));
  svg.removeAttribute("width");
  svg.removeAttribute("height");
  svg.setAttribute("data-ready", String(data.nodes.length));
})();
