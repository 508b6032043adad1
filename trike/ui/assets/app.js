/* trike ui: the page script. Reads the inlined graph (JSON), draws it with force-graph, answers SPARQL with
   Oxigraph (WebAssembly, inlined, instantiated from bytes). No network: everything is in this file. */
(function () {
  "use strict";
  const T0 = performance.now();
  const $ = (id) => document.getElementById(id);
  const DATA = JSON.parse($("trike-data").textContent);
  const NAMES = DATA.names;
  const N = NAMES.length;
  const PROPS = DATA.props || {};
  const PREDS = DATA.preds;
  const FACTS = DATA.facts;
  const ONTO_PREDS = (DATA.ontology && DATA.ontology.predicates) || {};
  const ONTO_CLASSES = (DATA.ontology && DATA.ontology.classes) || {};
  const MAX_VIEW = DATA.max_view || 3000;
  const SMALL = 150; // at or below this many drawn nodes, labels and arrows show in the overview
  const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#17becf", "#bcbd22", "#8c564b"];

  // ---------- model ----------
  const INDEX = new Map();
  NAMES.forEach((n, i) => INDEX.set(n, i));
  const outF = new Array(N), inF = new Array(N), litF = new Array(N);
  for (let i = 0; i < N; i++) { outF[i] = []; inF[i] = []; }
  const degree = new Uint32Array(N);
  for (let k = 0; k < FACTS.length; k++) {
    const f = FACTS[k];
    outF[f[0]].push(k);
    if (typeof f[2] === "number") {
      inF[f[2]].push(k);
      degree[f[0]]++;
      degree[f[2]]++;
    }
  }
  const propsOf = (i) => PROPS[i] || {};
  function typesOf(i) {
    const t = propsOf(i).type;
    if (t === undefined || t === null) return [];
    return Array.isArray(t) ? t.map(String) : [String(t)];
  }
  const typeCount = new Map();
  for (let i = 0; i < N; i++) for (const t of typesOf(i)) typeCount.set(t, (typeCount.get(t) || 0) + 1);
  const TYPES = [...typeCount.keys()].sort((a, b) => typeCount.get(b) - typeCount.get(a) || a.localeCompare(b));
  const typeColor = new Map();
  TYPES.forEach((t, k) => {
    if (k < PALETTE.length) typeColor.set(t, PALETTE[k]);
    else {
      let h = 0;
      for (const c of t) h = (h * 31 + c.codePointAt(0)) >>> 0;
      typeColor.set(t, "hsl(" + (h % 360) + ",55%,55%)");
    }
  });
  const predCount = new Array(PREDS.length).fill(0);
  for (const f of FACTS) predCount[f[1]]++;

  // ---------- helpers ----------
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    if (attrs) for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const kid of kids) if (kid !== null && kid !== undefined && kid !== false) e.append(kid);
    return e;
  }
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  function fmt(v) {
    if (v === null || v === undefined) return "";
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }
  const isLit = (o) => typeof o !== "number";
  const litText = (o) => fmt(o.v);
  const today = new Date().toISOString().slice(0, 10);
  const cssVar = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  function nodeColor(i) { const t = typesOf(i)[0]; return t ? typeColor.get(t) : COLORS.node; }
  // folds case, width (NFKC) and katakana to hiragana, so "トウキョウ", "とうきょう" and "ﾄｳｷｮｳ" match each other
  function norm(s) {
    s = String(s).normalize("NFKC").toLowerCase();
    let out = "";
    for (const ch of s) {
      const c = ch.codePointAt(0);
      out += c >= 0x30a1 && c <= 0x30f6 ? String.fromCodePoint(c - 0x60) : ch;
    }
    return out;
  }
  function factText(k) {
    const f = FACTS[k];
    const o = isLit(f[2]) ? litText(f[2]) : NAMES[f[2]];
    let s = NAMES[f[0]] + " " + PREDS[f[1]] + " " + o;
    if (f[3]) for (const v of Object.values(f[3])) s += " " + fmt(v);
    return s;
  }

  // ---------- theme ----------
  const COLORS = {};
  function readColors() {
    for (const k of ["bg", "fg", "muted", "accent", "hit", "edge", "edge-focus", "node-default", "halo"]) COLORS[k] = cssVar("--" + k);
    COLORS.node = COLORS["node-default"];
  }
  function setTheme(mode) {
    document.documentElement.dataset.theme = mode;
    try { localStorage.setItem("trike-theme", mode); } catch (e) { /* storage may be off for file:// */ }
    readColors();
    if (fg) fg.backgroundColor(COLORS.bg);
    refreshGraph();
    renderLegend();
  }
  let savedTheme = null;
  try { savedTheme = localStorage.getItem("trike-theme"); } catch (e) { savedTheme = null; }
  if (savedTheme === "light" || savedTheme === "dark") document.documentElement.dataset.theme = savedTheme;
  readColors();
  $("theme").addEventListener("click", () => {
    const dark = cssVar("color-scheme") === "dark";
    setTheme(dark ? "light" : "dark");
  });

  // ---------- state ----------
  const state = { selected: -1, typeFilter: "", predFilter: -1, hops: "all", hits: new Set(), sparqlHits: new Set(), focus: new Set() };
  let view = { nodes: [], ids: new Set(), links: [], truncated: false, total: 0 };
  const gnodes = new Array(N); // force-graph node objects, kept so positions survive view changes
  const gnode = (i) => gnodes[i] || (gnodes[i] = { id: i });
  const glinks = new Map(); // fact index -> link object
  function glink(k) {
    let l = glinks.get(k);
    if (!l) { const f = FACTS[k]; l = { source: gnode(f[0]), target: gnode(f[2]), k: k }; glinks.set(k, l); }
    return l;
  }

  // ---------- the drawn view ----------
  function nodeAllowed(i) { return !state.typeFilter || typesOf(i).includes(state.typeFilter); }
  function factAllowed(k) { return state.predFilter < 0 || FACTS[k][1] === state.predFilter; }
  function computeView() {
    const keep = new Set();
    const sel = state.selected;
    let total;
    if (sel >= 0 && state.hops !== "all") {
      const maxd = Number(state.hops);
      keep.add(sel);
      let frontier = [sel];
      for (let d = 0; d < maxd && frontier.length && keep.size < MAX_VIEW; d++) {
        const next = [];
        for (const i of frontier) {
          for (const k of outF[i].concat(inF[i])) {
            const f = FACTS[k];
            if (isLit(f[2]) || !factAllowed(k)) continue;
            const j = f[0] === i ? f[2] : f[0];
            if (!keep.has(j) && nodeAllowed(j)) {
              keep.add(j); next.push(j);
              if (keep.size >= MAX_VIEW) break;
            }
          }
          if (keep.size >= MAX_VIEW) break;
        }
        frontier = next;
      }
      total = keep.size;
    } else {
      for (let i = 0; i < N; i++) {
        if (!nodeAllowed(i)) continue;
        if (state.predFilter >= 0 && !outF[i].concat(inF[i]).some((k) => !isLit(FACTS[k][2]) && factAllowed(k))) continue;
        keep.add(i);
      }
      if (sel >= 0) keep.add(sel);
      total = keep.size;
      if (keep.size > MAX_VIEW) {
        // overview of a big graph: the best connected nodes, plus what the reader is looking at
        const must = new Set([sel, ...state.hits, ...state.sparqlHits, ...state.focus].filter((i) => i >= 0 && keep.has(i)));
        const rest = [...keep].filter((i) => !must.has(i)).sort((a, b) => degree[b] - degree[a]);
        keep.clear();
        for (const i of must) if (keep.size < MAX_VIEW) keep.add(i);
        for (const i of rest) { if (keep.size >= MAX_VIEW) break; keep.add(i); }
      }
    }
    const links = [];
    for (const i of keep) for (const k of outF[i]) {
      const o = FACTS[k][2];
      if (!isLit(o) && keep.has(o) && factAllowed(k)) links.push(glink(k));
    }
    // parallel facts between the same two nodes get curved apart; loops get a curve so they show
    const pair = new Map();
    for (const l of links) {
      const f = FACTS[l.k];
      const key = f[0] < f[2] ? f[0] + "," + f[2] : f[2] + "," + f[0];
      const n = pair.get(key) || 0;
      pair.set(key, n + 1);
      l.curve = f[0] === f[2] ? 0.6 + 0.2 * n : n === 0 ? 0 : (n % 2 ? 1 : -1) * 0.25 * Math.ceil(n / 2);
    }
    view = { nodes: [...keep].map(gnode), ids: keep, links: links, truncated: keep.size < total, total: total };
    return view;
  }

  function updateFocus() {
    state.focus = new Set();
    const i = state.selected;
    if (i < 0) return;
    state.focus.add(i);
    for (const k of outF[i]) if (!isLit(FACTS[k][2])) state.focus.add(FACTS[k][2]);
    for (const k of inF[i]) state.focus.add(FACTS[k][0]);
  }

  // ---------- graph drawing ----------
  let fg = null;
  let bounds = null;
  let userMoved = false;
  let ticks = 0;
  const radius = (i) => 2.5 + Math.min(9, Math.sqrt(degree[i]) * 1.3);
  const small = () => view.nodes.length <= SMALL;
  const adjacent = (l) => state.selected >= 0 && (l.source.id === state.selected || l.target.id === state.selected);
  const highlighted = (i) => state.hits.has(i) || state.sparqlHits.has(i);
  const anyHighlight = () => state.hits.size > 0 || state.sparqlHits.size > 0;

  function showLabel(i, scale, r) {
    if (i === state.selected || (state.selected >= 0 && state.focus.has(i) && state.focus.size <= 80)) return true;
    if (highlighted(i) && state.hits.size + state.sparqlHits.size <= 40) return true;
    if (small()) return true;
    return scale * r >= 9 || scale >= 2.2;
  }
  function drawNode(node, ctx, scale) {
    const i = node.id;
    const r = radius(i);
    let alpha = 1;
    if (state.selected >= 0 && !state.focus.has(i)) alpha = small() ? 0.3 : 0.18;
    else if (anyHighlight() && !highlighted(i) && !state.focus.has(i)) alpha = 0.3;
    ctx.globalAlpha = alpha;
    ctx.beginPath();
    ctx.arc(node.x, node.y, r, 0, 2 * Math.PI);
    ctx.fillStyle = nodeColor(i);
    ctx.fill();
    if (highlighted(i) || i === state.selected) {
      ctx.lineWidth = (i === state.selected ? 3 : 2) / scale;
      ctx.strokeStyle = i === state.selected ? COLORS.accent : COLORS.hit;
      ctx.beginPath();
      ctx.arc(node.x, node.y, r + 2.5 / scale, 0, 2 * Math.PI);
      ctx.stroke();
    }
    if ((alpha >= 0.3 || small()) && showLabel(i, scale, r)) {
      if (bounds && (node.x < bounds.x0 || node.x > bounds.x1 || node.y < bounds.y0 || node.y > bounds.y1)) { ctx.globalAlpha = 1; return; }
      const size = 12 / scale;
      ctx.font = (i === state.selected ? "600 " : "") + size + "px system-ui, sans-serif";
      ctx.textAlign = "center";
      ctx.textBaseline = "top";
      const label = NAMES[i].length > 40 ? NAMES[i].slice(0, 39) + "…" : NAMES[i];
      ctx.lineWidth = 3 / scale;
      ctx.strokeStyle = COLORS.halo;
      ctx.strokeText(label, node.x, node.y + r + 2 / scale);
      ctx.fillStyle = COLORS.fg;
      ctx.fillText(label, node.x, node.y + r + 2 / scale);
    }
    ctx.globalAlpha = 1;
  }
  function drawLinkLabel(link, ctx, scale) {
    if (!(adjacent(link) || (state.selected < 0 && small() && scale >= 2.5))) return;
    const s = link.source, t = link.target;
    if (s.x === undefined || s === t) return;
    const dx = (t.x - s.x) * scale, dy = (t.y - s.y) * scale;
    if (dx * dx + dy * dy < 3600) return; // shorter than 60 px on screen: no room for a label
    const x = (s.x + t.x) / 2, y = (s.y + t.y) / 2;
    if (bounds && (x < bounds.x0 || x > bounds.x1 || y < bounds.y0 || y > bounds.y1)) return;
    ctx.font = 10 / scale + "px system-ui, sans-serif";
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.lineWidth = 3 / scale;
    ctx.strokeStyle = COLORS.halo;
    const p = PREDS[FACTS[link.k][1]];
    ctx.strokeText(p, x, y);
    ctx.fillStyle = adjacent(link) ? COLORS["edge-focus"] : COLORS.muted;
    ctx.fillText(p, x, y);
  }

  function initGraph() {
    const host = $("graph");
    fg = ForceGraph()(host)
      .width(host.clientWidth).height(host.clientHeight)
      .backgroundColor(COLORS.bg)
      .nodeId("id")
      .nodeLabel((n) => "<b>" + esc(NAMES[n.id]) + "</b>" + (typesOf(n.id).length ? " <i>" + esc(typesOf(n.id).join(", ")) + "</i>" : ""))
      .nodeCanvasObject(drawNode)
      .nodePointerAreaPaint((node, color, ctx) => {
        ctx.fillStyle = color;
        ctx.beginPath();
        ctx.arc(node.x, node.y, radius(node.id) + 2, 0, 2 * Math.PI);
        ctx.fill();
      })
      .linkLabel((l) => { const f = FACTS[l.k]; return esc(NAMES[f[0]]) + " <b>" + esc(PREDS[f[1]]) + "</b> " + esc(NAMES[f[2]]); })
      .linkColor((l) => (adjacent(l) ? COLORS["edge-focus"] : COLORS.edge))
      .linkWidth((l) => (adjacent(l) ? 1.6 : 0.6))
      .linkCurvature((l) => l.curve || 0)
      .linkDirectionalArrowLength((l) => (adjacent(l) || small() ? 4 : 0))
      .linkDirectionalArrowRelPos(0.92)
      .linkCanvasObjectMode(() => "after")
      .linkCanvasObject(drawLinkLabel)
      .onRenderFramePre(() => {
        const w = fg.width(), h = fg.height();
        const a = fg.screen2GraphCoords(0, 0), b = fg.screen2GraphCoords(w, h);
        bounds = { x0: a.x - 50, y0: a.y - 50, x1: b.x + 50, y1: b.y + 50 };
      })
      .onNodeClick((n) => select(n.id, { center: false }))
      .onBackgroundClick(() => { if (state.selected >= 0 && state.hops === "all") clearSelection(); })
      .onEngineTick(() => {
        ticks++;
        if (ticks === 25 && !userMoved) fitView(0);
      })
      .onEngineStop(() => {
        if (!userMoved) fitView(400);
        if (window.trikeUI) window.trikeUI.layoutStops++;
      })
      .minZoom(0.02)
      .cooldownTicks(300)
      .d3AlphaDecay(0.03)
      .d3VelocityDecay(0.35)
      .warmupTicks(0);
    // a weak pull to the middle keeps unconnected parts of the graph in sight
    let gNodes = [];
    const gravity = (alpha) => {
      for (const n of gNodes) { n.vx -= n.x * 0.04 * alpha; n.vy -= n.y * 0.04 * alpha; }
    };
    gravity.initialize = (nodes) => { gNodes = nodes; };
    fg.d3Force("gravity", gravity);
    tuneForces(0);
    new ResizeObserver(() => fg.width(host.clientWidth).height(host.clientHeight)).observe(host);
    host.addEventListener("pointerdown", () => { userMoved = true; });
    host.addEventListener("wheel", () => { userMoved = true; }, { passive: true });
  }
  // small views get room for labels; big ones stay compact so that the overview fits
  function tuneForces(count) {
    const roomy = count <= SMALL;
    fg.d3Force("charge").strength((n) => (roomy ? -260 : -30) - 4 * Math.sqrt(degree[n.id])).distanceMax(roomy ? 1000 : 600);
    fg.d3Force("link").distance(roomy ? 70 : 30);
  }
  function fitView(ms) {
    if (!fg || !view.nodes.length) return;
    const box = fg.getGraphBbox();
    if (!box) return;
    const pad = 60;
    const w = Math.max(1, fg.width() - 2 * pad), h = Math.max(1, fg.height() - 2 * pad);
    const bw = Math.max(1, box.x[1] - box.x[0]), bh = Math.max(1, box.y[1] - box.y[0]);
    const k = Math.max(0.02, Math.min(2.5, w / bw, h / bh));
    fg.centerAt((box.x[0] + box.x[1]) / 2, (box.y[0] + box.y[1]) / 2, ms);
    fg.zoom(k, ms);
  }
  function refreshGraph() {
    if (!fg) return;
    // a redraw without touching the layout (the canvas is paused when the engine is idle)
    fg.linkColor(fg.linkColor());
  }
  function setView(reheat) {
    computeView();
    if (!fg) return;
    tuneForces(view.nodes.length);
    // small views are laid out before their first frame; big ones settle on screen (the page stays usable)
    const n = view.nodes.length;
    fg.warmupTicks(n <= 300 ? 60 : n <= 1000 ? 20 : 0).cooldownTicks(n <= 300 ? 160 : 300);
    ticks = 0;
    fg.graphData({ nodes: view.nodes, links: view.links });
    if (reheat) { userMoved = false; }
    renderViewInfo();
  }
  function renderViewInfo() {
    const shown = view.nodes.length;
    let s = shown.toLocaleString() + " nodes · " + view.links.length.toLocaleString() + " edges drawn";
    if (view.truncated) s += " (best connected " + shown.toLocaleString() + " of " + view.total.toLocaleString() + "; select or search a node to see its neighbourhood)";
    if (state.selected >= 0 && state.hops !== "all") s += " · within " + state.hops + " hop" + (state.hops === "1" ? "" : "s") + " of " + NAMES[state.selected];
    $("view-info").textContent = s;
  }
  function renderLegend() {
    const ul = $("legend");
    ul.replaceChildren();
    const shown = TYPES.slice(0, 12);
    for (const t of shown) ul.append(el("li", null, el("span", { class: "swatch", style: "background:" + typeColor.get(t) }), t + " (" + typeCount.get(t) + ")"));
    if (TYPES.length > shown.length) ul.append(el("li", { class: "muted", text: "+" + (TYPES.length - shown.length) + " more types" }));
    if (!TYPES.length) ul.hidden = true;
  }

  // ---------- selection and detail panel ----------
  function select(i, opts) {
    opts = opts || {};
    if (i < 0 || i >= N) return;
    const prev = state.selected;
    state.selected = i;
    updateFocus();
    const inView = view.ids.has(i);
    if (state.hops !== "all" || !inView || view.truncated) {
      if (!inView && state.hops === "all" && N > MAX_VIEW) { state.hops = "2"; $("hops").value = "2"; }
      setView(false);
    } else refreshGraph();
    renderDetail(i);
    showTab("node");
    try { history.replaceState(null, "", "#node=" + encodeURIComponent(NAMES[i])); } catch (e) { /* some viewers forbid it */ }
    if (fg && opts.center !== false) {
      const n = gnode(i);
      const go = () => { if (n.x !== undefined) { fg.centerAt(n.x, n.y, 500); if (fg.zoom() < 1.5) fg.zoom(2, 500); } };
      if (n.x === undefined) setTimeout(go, 300); else go();
      userMoved = true;
    }
    if (prev !== i) document.dispatchEvent(new CustomEvent("trike:select", { detail: NAMES[i] }));
  }
  function clearSelection() {
    state.selected = -1;
    updateFocus();
    if (state.hops !== "all") setView(true); else refreshGraph();
    $("detail").replaceChildren(el("p", { class: "muted", text: "Click a node in the graph or a search result to see its properties and facts." }));
    try { history.replaceState(null, "", location.pathname + location.search); } catch (e) { /* ignore */ }
  }
  function nodeButton(i) {
    return el("button", { type: "button", class: "linkish", "data-node": NAMES[i], onclick: () => select(i) }, NAMES[i]);
  }
  function literalSpan(o) {
    return el("span", { class: "lit", title: o.t || null }, litText(o));
  }
  function attrsLine(attrs) {
    if (!attrs) return null;
    const parts = [];
    const a = Object.assign({}, attrs);
    if (a.valid_from !== undefined || a.valid_to !== undefined) {
      const from = a.valid_from !== undefined ? fmt(a.valid_from) : "…";
      const to = a.valid_to !== undefined ? fmt(a.valid_to) : "…";
      parts.push(el("span", { title: "validity" }, "valid " + from + " → " + to));
      if (a.valid_to !== undefined && String(fmt(a.valid_to)).slice(0, 10) < today) parts.push(el("span", { class: "badge expired", text: "ended" }));
      delete a.valid_from; delete a.valid_to;
    }
    if (a.prov !== undefined) { parts.push(el("span", { title: "provenance" }, "prov: " + fmt(a.prov))); delete a.prov; }
    if (a.confidence !== undefined) { parts.push(el("span", { title: "confidence" }, "confidence " + fmt(a.confidence))); delete a.confidence; }
    if (a.inferred) { parts.push(el("span", { class: "badge inferred", title: "derived by a rule, not stated" }, "inferred")); delete a.inferred; }
    for (const [k, v] of Object.entries(a)) parts.push(el("span", null, k + ": " + fmt(v)));
    return parts.length ? el("div", { class: "attrs" }, ...parts) : null;
  }
  function predDescription(p) {
    const d = ONTO_PREDS[p];
    if (!d) return null;
    const bits = [];
    if (d.description) bits.push(String(d.description));
    const sig = [];
    if (d.domain) sig.push("domain " + fmt(d.domain));
    if (d.range) sig.push("range " + fmt(d.range));
    if (d.functional) sig.push("functional");
    if (sig.length) bits.push("(" + sig.join(", ") + ")");
    return bits.length ? bits.join(" ") : null;
  }
  function factGroups(list, outgoing) {
    const groups = new Map();
    for (const k of list) {
      const p = FACTS[k][1];
      if (!groups.has(p)) groups.set(p, []);
      groups.get(p).push(k);
    }
    const frag = document.createDocumentFragment();
    for (const [p, ks] of [...groups.entries()].sort((a, b) => PREDS[a[0]].localeCompare(PREDS[b[0]]))) {
      const d = predDescription(PREDS[p]);
      const ul = el("ul", { class: "facts" });
      for (const k of ks.slice(0, 500)) {
        const f = FACTS[k];
        const other = outgoing ? (isLit(f[2]) ? literalSpan(f[2]) : nodeButton(f[2])) : nodeButton(f[0]);
        ul.append(el("li", { "data-fact": k }, other, attrsLine(f[3])));
      }
      if (ks.length > 500) ul.append(el("li", { class: "muted", text: "… and " + (ks.length - 500) + " more" }));
      frag.append(el("div", { class: "pred" },
        el("div", { class: "pred-h", title: d || null }, (outgoing ? "" : "← ") + PREDS[p] + (outgoing ? " →" : "") + " (" + ks.length + ")"),
        d ? el("div", { class: "pred-d", text: d }) : null, ul));
    }
    return frag;
  }
  function renderDetail(i) {
    const box = $("detail");
    const props = propsOf(i);
    const types = typesOf(i);
    const out = [];
    out.push(el("h2", { id: "detail-name" }, NAMES[i]));
    const meta = el("p", { class: "muted" });
    for (const t of types) {
      const c = ONTO_CLASSES[t];
      meta.append(el("span", { class: "badge", title: c && c.description ? String(c.description) : null }, el("span", { class: "swatch", style: "background:" + typeColor.get(t) }), t));
    }
    meta.append(" " + outF[i].length + " out · " + inF[i].length + " in");
    out.push(meta);
    const keys = Object.keys(props).filter((k) => k !== "type");
    if (keys.length) {
      out.push(el("h3", { text: "Properties" }));
      const tb = el("table", { class: "kv" });
      for (const k of keys) tb.append(el("tr", null, el("th", { scope: "row", text: k }), el("td", { class: "lit", text: fmt(props[k]) })));
      out.push(tb);
    }
    out.push(el("h3", { text: "Outgoing facts" }));
    out.push(outF[i].length ? factGroups(outF[i], true) : el("p", { class: "muted", text: "none" }));
    out.push(el("h3", { text: "Incoming facts" }));
    out.push(inF[i].length ? factGroups(inF[i], false) : el("p", { class: "muted", text: "none" }));
    box.replaceChildren(...out);
    box.parentElement.scrollTop = 0;
  }

  // ---------- search ----------
  let HAY = null; // per node: [normalised name, normalised props, normalised facts]
  function buildHay() {
    HAY = new Array(N);
    for (let i = 0; i < N; i++) {
      const p = PROPS[i];
      let ps = "";
      if (p) for (const [k, v] of Object.entries(p)) ps += " " + k + " " + fmt(v);
      let fs = "";
      for (const k of outF[i]) fs += "\n" + factText(k);
      for (const k of inF[i]) fs += "\n" + factText(k);
      HAY[i] = [norm(NAMES[i]), norm(ps), norm(fs)];
    }
  }
  // the original text (not the folded one) of the first property or fact of node i that contains term
  function snippet(i, term, inProps) {
    const lines = [];
    if (inProps) { for (const [k, v] of Object.entries(propsOf(i))) lines.push(k + ": " + fmt(v)); }
    else { for (const k of outF[i]) lines.push(factText(k)); for (const k of inF[i]) lines.push(factText(k)); }
    for (const line of lines) if (norm(line).includes(term)) return line.length > 120 ? line.slice(0, 119) + "…" : line;
    return "";
  }
  function search(q) {
    if (!HAY) buildHay();
    const terms = norm(q).split(/\s+/).filter(Boolean);
    const hits = [];
    if (!terms.length) return hits;
    for (let i = 0; i < N; i++) {
      const h = HAY[i];
      let score = 0, where = "";
      let ok = true;
      for (const t of terms) {
        if (h[0] === t) score += 100;
        else if (h[0].startsWith(t)) score += 80;
        else if (h[0].includes(t)) score += 60;
        else if (h[1].includes(t)) { score += 30; where = where || [t, true]; }
        else if (h[2].includes(t)) { score += 10; where = where || [t, false]; }
        else { ok = false; break; }
      }
      if (ok) hits.push({ i: i, score: score + Math.min(5, Math.log2(1 + degree[i])), where: where });
    }
    hits.sort((a, b) => b.score - a.score || NAMES[a.i].localeCompare(NAMES[b.i]));
    return hits;
  }
  function resultItem(i, where) {
    const types = typesOf(i);
    const open = () => {
      select(i);
      if (window.matchMedia("(max-width: 760px)").matches) $("graph").parentElement.scrollIntoView({ block: "start" });
    };
    return el("li", null, el("button", { type: "button", "data-node": NAMES[i], onclick: open },
      el("span", { class: "name", text: NAMES[i] }),
      types.length ? el("span", { class: "badge" }, el("span", { class: "swatch", style: "background:" + typeColor.get(types[0]) }), types.join(", ")) : null,
      where ? el("span", { class: "snip", text: where }) : null));
  }
  function renderTopNodes() {
    const top = [];
    for (let i = 0; i < N; i++) top.push(i);
    top.sort((a, b) => degree[b] - degree[a] || NAMES[a].localeCompare(NAMES[b]));
    $("results-info").textContent = N ? "Most connected nodes" : "This graph is empty.";
    $("results").replaceChildren(...top.slice(0, 30).map((i) => resultItem(i, degree[i] + " facts")));
  }
  let searchTimer = 0;
  function runSearch() {
    const q = $("search").value.trim();
    const list = $("results");
    list.replaceChildren();
    list.dataset.query = q;
    if (!q) {
      state.hits = new Set();
      renderTopNodes();
      if (view.truncated) setView(false); else refreshGraph();
      return;
    }
    const hits = search(q);
    state.hits = new Set(hits.slice(0, 500).map((h) => h.i));
    $("results-info").textContent = hits.length ? hits.length.toLocaleString() + " match" + (hits.length === 1 ? "" : "es") + (hits.length > 100 ? " (first 100 listed)" : "") : "Nothing found for “" + q + "”.";
    for (const h of hits.slice(0, 100)) list.append(resultItem(h.i, h.where ? snippet(h.i, h.where[0], h.where[1]) : ""));
    const missing = [...state.hits].some((i) => !view.ids.has(i));
    if (missing && state.hops === "all") setView(false); else refreshGraph();
  }
  $("search").addEventListener("input", () => { clearTimeout(searchTimer); searchTimer = setTimeout(runSearch, N > 20000 ? 200 : 80); });
  $("search").addEventListener("keydown", (e) => {
    if (e.key === "Enter") { clearTimeout(searchTimer); runSearch(); const b = $("results").querySelector("button"); if (b) b.click(); }
    else if (e.key === "ArrowDown") { const b = $("results").querySelector("button"); if (b) { e.preventDefault(); b.focus(); } }
  });
  $("results").addEventListener("keydown", (e) => {
    const items = [...$("results").querySelectorAll("button")];
    const at = items.indexOf(document.activeElement);
    if (e.key === "ArrowDown" && at < items.length - 1) { e.preventDefault(); items[at + 1].focus(); }
    if (e.key === "ArrowUp") { e.preventDefault(); if (at > 0) items[at - 1].focus(); else $("search").focus(); }
  });
  document.addEventListener("keydown", (e) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement && document.activeElement.tagName);
    if (e.key === "/" && !typing) { e.preventDefault(); $("search").focus(); }
    else if (e.key === "Escape") {
      if (document.activeElement === $("search") && $("search").value) { $("search").value = ""; runSearch(); }
      else if (state.selected >= 0) clearSelection();
    }
  });

  // ---------- filters ----------
  for (const t of TYPES) $("type-filter").append(el("option", { value: t }, t + " (" + typeCount.get(t) + ")"));
  const predOrder = PREDS.map((p, k) => k).sort((a, b) => PREDS[a].localeCompare(PREDS[b]));
  for (const k of predOrder) $("pred-filter").append(el("option", { value: String(k), title: predDescription(PREDS[k]) || null }, PREDS[k] + " (" + predCount[k] + ")"));
  $("type-filter").addEventListener("change", (e) => { state.typeFilter = e.target.value; setView(true); });
  $("pred-filter").addEventListener("change", (e) => { state.predFilter = e.target.value === "" ? -1 : Number(e.target.value); setView(true); });
  $("hops").addEventListener("change", (e) => { state.hops = e.target.value; setView(true); });
  $("fit").addEventListener("click", () => fitView(400));

  // ---------- tabs ----------
  const TABS = ["node", "sparql", "about"];
  function showTab(name) {
    for (const t of TABS) {
      const on = t === name;
      $("tab-" + t).setAttribute("aria-selected", String(on));
      $("tab-" + t).tabIndex = on ? 0 : -1;
      $("pane-" + t).hidden = !on;
    }
    if (name === "sparql") ensureStore().catch(() => { /* reported in the status line */ });
  }
  for (const t of TABS) $("tab-" + t).addEventListener("click", () => showTab(t));
  $("tab-node").parentElement.addEventListener("keydown", (e) => {
    if (e.key !== "ArrowRight" && e.key !== "ArrowLeft") return;
    const at = TABS.findIndex((t) => $("tab-" + t).getAttribute("aria-selected") === "true");
    const next = TABS[(at + (e.key === "ArrowRight" ? 1 : TABS.length - 1)) % TABS.length];
    showTab(next);
    $("tab-" + next).focus();
  });

  // ---------- SPARQL (Oxigraph compiled to WebAssembly, inlined) ----------
  const RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#", RDFS = "http://www.w3.org/2000/01/rdf-schema#", XSD = "http://www.w3.org/2001/XMLSchema#";
  const TP = "urn:trike:";
  const PREFIXES = "PREFIX t: <" + TP + ">\nPREFIX rdf: <" + RDF + ">\nPREFIX rdfs: <" + RDFS + ">\nPREFIX xsd: <" + XSD + ">\n";
  let storePromise = null;
  async function gunzipBase64(id) {
    const b64 = $(id).textContent.trim();
    let bytes;
    if (typeof Uint8Array.fromBase64 === "function") bytes = Uint8Array.fromBase64(b64);
    else {
      const bin = atob(b64);
      bytes = new Uint8Array(bin.length);
      for (let k = 0; k < bin.length; k++) bytes[k] = bin.charCodeAt(k);
    }
    if (typeof DecompressionStream !== "function") throw new Error("this browser has no DecompressionStream; SPARQL needs a current browser");
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }
  function ensureStore() {
    if (storePromise) return storePromise;
    const status = $("sparql-status");
    status.textContent = "loading the SPARQL engine…";
    storePromise = (async () => {
      const t = performance.now();
      await oxigraph.init({ module_or_path: await gunzipBase64("trike-oxigraph-wasm") });
      const store = new oxigraph.Store();
      const nt = await gunzipBase64("trike-nt");
      if (nt.length) store.load(nt, { format: "application/n-triples" });
      status.textContent = "SPARQL engine ready (" + store.size.toLocaleString() + " triples, " + Math.round(performance.now() - t) + " ms)";
      return store;
    })();
    storePromise.catch((e) => { status.textContent = ""; $("sparql-result").replaceChildren(el("p", { class: "error", text: "Cannot start the SPARQL engine: " + e })); });
    return storePromise;
  }
  function shortIri(v) {
    if (v.startsWith(TP)) return "t:" + v.slice(TP.length);
    if (v.startsWith(RDF)) return "rdf:" + v.slice(RDF.length);
    if (v.startsWith(RDFS)) return "rdfs:" + v.slice(RDFS.length);
    if (v.startsWith(XSD)) return "xsd:" + v.slice(XSD.length);
    return "<" + v + ">";
  }
  function iriNode(v) {
    if (!v.startsWith(TP)) return -1;
    let name;
    try { name = decodeURIComponent(v.slice(TP.length)); } catch (e) { return -1; }
    const i = INDEX.get(name);
    return i === undefined ? -1 : i;
  }
  function termCell(term, found) {
    if (!term) return el("td", { class: "muted" }, "");
    if (term.type === "uri") {
      const i = iriNode(term.value);
      if (i >= 0) { found.add(i); return el("td", null, nodeButton(i)); }
      return el("td", { class: "lit", title: term.value }, shortIri(term.value));
    }
    if (term.type === "bnode") return el("td", { class: "lit muted" }, "_:" + term.value);
    const extra = term["xml:lang"] ? "@" + term["xml:lang"] : term.datatype && term.datatype !== XSD + "string" ? " ^^" + shortIri(term.datatype) : "";
    return el("td", { class: "lit" }, term.value, extra ? el("span", { class: "muted", text: extra }) : null);
  }
  function rdfjsToJson(t) {
    if (t.termType === "NamedNode") return { type: "uri", value: t.value };
    if (t.termType === "BlankNode") return { type: "bnode", value: t.value };
    return { type: "literal", value: t.value, datatype: t.datatype && t.datatype.value, "xml:lang": t.language || undefined };
  }
  const ROW_LIMIT = 1000;
  async function runSparql(q) {
    const box = $("sparql-result"), status = $("sparql-status");
    if ($("pane-sparql").hidden) showTab("sparql");
    box.replaceChildren();
    let store;
    try { store = await ensureStore(); } catch (e) { return { error: String(e) }; }
    const t = performance.now();
    let res, quads = null;
    try {
      res = JSON.parse(store.query(q, { results_format: "json" }));
      if (Array.isArray(res)) quads = store.query(q); // CONSTRUCT / DESCRIBE answer JSON-LD: show triples
    } catch (e) {
      let msg = String(e && e.message ? e.message : e);
      if (/^\s*(PREFIX[^\n]*\n\s*)*(INSERT|DELETE|LOAD|CLEAR|DROP|CREATE|ADD|MOVE|COPY|WITH)\b/i.test(q)) {
        msg = "This page is read-only: SPARQL UPDATE does not run here (use `trike update` on the graph file).\n" + msg;
      }
      box.replaceChildren(el("p", { class: "error", role: "alert", text: msg }));
      status.textContent = "error";
      state.sparqlHits = new Set(); refreshGraph();
      return { error: msg };
    }
    const ms = Math.round(performance.now() - t);
    const found = new Set();
    let out;
    if (quads) {
      res = { head: { vars: ["subject", "predicate", "object"] }, results: { bindings: quads.map((x) => ({ subject: rdfjsToJson(x.subject), predicate: rdfjsToJson(x.predicate), object: rdfjsToJson(x.object) })) } };
    }
    if (typeof res.boolean === "boolean") {
      box.append(el("p", { class: "ask", role: "status" }, el("strong", { text: res.boolean ? "true" : "false" })));
      status.textContent = "ASK answered in " + ms + " ms";
      out = { boolean: res.boolean };
    } else {
      const vars = res.head.vars || [];
      const rows = res.results.bindings;
      const table = el("table", { class: "results-table" });
      table.append(el("thead", null, el("tr", null, ...vars.map((v) => el("th", { scope: "col", text: "?" + v })))));
      const tb = el("tbody");
      for (const b of rows.slice(0, ROW_LIMIT)) tb.append(el("tr", null, ...vars.map((v) => termCell(b[v], found))));
      for (const b of rows.slice(ROW_LIMIT)) for (const v of vars) if (b[v] && b[v].type === "uri") { const i = iriNode(b[v].value); if (i >= 0) found.add(i); }
      table.append(tb);
      box.append(table);
      status.textContent = rows.length.toLocaleString() + " row" + (rows.length === 1 ? "" : "s") + " in " + ms + " ms" + (rows.length > ROW_LIMIT ? " (first " + ROW_LIMIT + " shown)" : "") + (found.size ? " · " + found.size + " node" + (found.size === 1 ? "" : "s") + " highlighted" : "");
      out = { vars: vars, rows: rows.length };
    }
    state.sparqlHits = found;
    const missing = [...found].some((i) => !view.ids.has(i));
    if (missing && state.hops === "all" && state.selected < 0) setView(false); else refreshGraph();
    return out;
  }
  const firstPred = PREDS.length ? PREDS[predOrder[0]] : "p";
  const predIri = (p) => (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(p) ? "t:" + p : "<" + TP + encodeURIComponent(p) + ">");
  const EXAMPLES = [
    ["Facts of one predicate", PREFIXES + "SELECT ?s ?o WHERE {\n  ?s " + predIri(firstPred) + " ?o .\n}\nLIMIT 100"],
    ["Nodes by type", PREFIXES + "SELECT ?type (COUNT(?node) AS ?count) WHERE {\n  ?node rdf:type ?type .\n}\nGROUP BY ?type\nORDER BY DESC(?count)"],
    ["Predicates in use", PREFIXES + "SELECT ?p (COUNT(*) AS ?facts) WHERE {\n  ?s ?p ?o .\n  FILTER(STRSTARTS(STR(?p), STR(t:)))\n}\nGROUP BY ?p\nORDER BY DESC(?facts)"],
    ["Ask whether a fact exists", PREFIXES + "ASK {\n  ?s " + predIri(firstPred) + " ?o .\n}"],
  ];
  for (const [label, q] of EXAMPLES) $("sparql-examples").append(el("option", { value: q }, label));
  $("sparql").value = EXAMPLES[0][1];
  $("sparql-examples").addEventListener("change", (e) => { $("sparql").value = e.target.value; });
  $("sparql-run").addEventListener("click", () => runSparql($("sparql").value));
  $("sparql").addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); runSparql($("sparql").value); } });
  $("sparql").addEventListener("focus", () => { ensureStore().catch(() => { /* reported */ }); }, { once: true });

  // ---------- header, about ----------
  const nLit = FACTS.length - FACTS.reduce((a, f) => a + (isLit(f[2]) ? 0 : 1), 0);
  $("stats").textContent = N.toLocaleString() + " nodes · " + FACTS.length.toLocaleString() + " facts" + (nLit ? " (" + nLit.toLocaleString() + " with literal values)" : "") + " · " + TYPES.length + " types · " + PREDS.length + " predicates";
  (function renderAbout() {
    const dl = el("dl");
    const add = (k, v) => dl.append(el("dt", { text: k }), el("dd", { text: v }));
    add("Graph", DATA.title);
    if (DATA.source) add("Source file", DATA.source);
    add("Content hash", DATA.hash);
    add("Generated by", DATA.generator);
    add("Third-party code in this page", DATA.third_party);
    const onto = Object.keys(ONTO_PREDS).length + " declared predicates, " + Object.keys(ONTO_CLASSES).length + " classes";
    add("Ontology", onto);
    $("about").replaceChildren(dl, el("p", { class: "muted", text: "This page is self-contained: it works offline and sends nothing anywhere. Keyboard: / search, ↓ results, Enter open, Esc clear." }));
  })();

  // ---------- start ----------
  initGraph();
  renderLegend();
  renderTopNodes();
  setView(true);
  let initial = -1;
  const m = /^#node=(.*)$/.exec(location.hash);
  if (m) { try { const i = INDEX.get(decodeURIComponent(m[1])); if (i !== undefined) initial = i; } catch (e) { initial = -1; } }
  const api = {
    ready: false,
    readyMs: 0,
    scriptMs: 0,
    select: (name) => { const i = INDEX.get(name); if (i !== undefined) select(i); return i !== undefined; },
    viewNames: () => view.nodes.map((n) => NAMES[n.id]),
    viewLinks: () => view.links.length,
    selected: () => (state.selected >= 0 ? NAMES[state.selected] : null),
    highlighted: () => [...new Set([...state.hits, ...state.sparqlHits])].map((i) => NAMES[i]),
    screenPosition: (name) => {
      const i = INDEX.get(name);
      if (i === undefined || !gnodes[i] || gnodes[i].x === undefined) return null;
      const p = fg.graph2ScreenCoords(gnodes[i].x, gnodes[i].y);
      const r = $("graph").getBoundingClientRect();
      return { x: r.left + p.x, y: r.top + p.y };
    },
    sparql: (q) => runSparql(q),
    ensureSparql: () => ensureStore().then((s) => s.size),
    layoutStops: 0,
    graph: () => fg,
  };
  window.trikeUI = api;
  requestAnimationFrame(() => requestAnimationFrame(() => {
    if (initial >= 0) select(initial);
    api.ready = true;
    api.readyMs = performance.now(); // since navigation start
    api.scriptMs = performance.now() - T0; // in this script (parse, index, first frame)
    document.documentElement.dataset.ready = "1";
  }));
})();
