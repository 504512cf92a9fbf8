"""The browser view: one self-contained HTML page (inline CSS and JS, no network).

The hex view is on the left, the collapsible field tree on the right. Selecting or
hovering a field highlights its bytes; hovering or clicking a byte highlights the innermost
field that holds it and opens the tree down to it; the arrow keys move the selection as in
Wireshark's packet details. Failed fields and the bytes not decoded are red. The page carries its data as JSON (nodes with the texts the terminal view shows)
and the bytes as base64; rows of the hex view are drawn as they scroll into view, and tree
nodes as they are opened, so large captures stay responsive.
"""

from __future__ import annotations

from bytewright._explain import Explained
from bytewright._explain._text import annotation, bit_pattern, show_value

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = ["page"]


def _label(node: Any) -> str:
    if node.parent is None:
        return str(node.type_name or node.kind)
    if isinstance(node.name, int):
        return f"[{node.name}]"
    if node.name is None:
        return "(rest)" if "rest" in node.marks else "(padding)"
    return str(node.name)


def payload(ex: Explained) -> dict[str, Any]:
    """What the page's script reads: the nodes (parents first), the bytes and the failure."""
    import base64

    index: dict[int, int] = {}
    nodes: list[dict[str, Any]] = []
    for node in ex.walk():
        index[id(node)] = len(nodes)
        nodes.append(
            {
                "p": None if node.parent is None else index[id(node.parent)],
                "n": _label(node),
                "path": node.path,
                "k": node.kind,
                "s": node.start,
                "e": node.end,
                "v": show_value(node, 120),
                "a": annotation(node),
                "m": sorted(node.marks),
                "bits": bit_pattern(node) if node.bits is not None else None,
                "t": node.type_name,
                "err": None if node.error is None else str(node.error),
            }
        )
    error = None
    if ex.error is not None:
        error = {
            "type": type(ex.error).__name__,
            "message": str(ex.error),
            "offset": getattr(ex.error, "offset", None),
            "needed": ex.needed,
        }
    return {
        "title": ex.title,
        "size": len(ex.data),
        "data": base64.b64encode(ex.data).decode("ascii"),
        "nodes": nodes,
        "error": error,
    }


def page(ex: Explained, *, title: str | None = None) -> str:
    """The whole page as text."""
    import html
    import json

    data = json.dumps(payload(ex), separators=(",", ":")).replace("</", "<\\/")
    name = html.escape(title or ex.title)
    return (
        _PAGE.replace("@TITLE@", name)
        .replace("@CSS@", _CSS)
        .replace("@JS@", _JS)
        .replace("@DATA@", data)
    )


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@TITLE@ · bytewright explain</title>
<style>@CSS@</style>
</head>
<body>
<header>
  <h1>@TITLE@</h1>
  <span id="status"></span>
</header>
<main>
  <section id="hexpane" aria-label="bytes">
    <div id="hexscroll"><div id="hexspace"><div id="hexrows"></div></div></div>
  </section>
  <section id="treepane" aria-label="fields">
    <div id="tree" role="tree"></div>
    <div id="detail"></div>
  </section>
</main>
<script type="application/json" id="bw-data">@DATA@</script>
<script>@JS@</script>
</body>
</html>
"""

_CSS = """
:root { --bg:#fbfbfa; --fg:#1d2327; --dim:#8a9399; --line:#e2e5e7; --sel:#ffd54a;
  --hov:#fff1b8; --fail:#d32f2f; --failbg:#fde0e0; --mono: ui-monospace, "DejaVu Sans Mono",
  Menlo, Consolas, monospace; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.4 system-ui, sans-serif; color:var(--fg); background:var(--bg);
  height:100vh; display:flex; flex-direction:column; }
header { display:flex; gap:1em; align-items:baseline; padding:.5em 1em;
  border-bottom:1px solid var(--line); }
header h1 { font-size:1.1em; margin:0; }
#status.ok { color:#2e7d32; } #status.fail { color:var(--fail); font-weight:600; }
main { flex:1; display:flex; min-height:0; }
#hexpane { flex:0 0 auto; border-right:1px solid var(--line); display:flex; }
#hexscroll { overflow-y:auto; height:100%; padding:0 .8em; }
#hexspace { position:relative; font:13px/18px var(--mono); width:80ch; }
#hexrows { position:absolute; left:0; right:0; }
.row { font:13px/18px var(--mono); height:18px; white-space:pre; }
.off { color:var(--dim); margin-right:1em; }
.b, .c { cursor:pointer; }
.b { padding:0 .18em; }
.asc { margin-left:1em; }
.c0{color:#00838f}.c1{color:#8e24aa}.c2{color:#2e7d32}.c3{color:#b26a00}
.c4{color:#1565c0}.c5{color:#00695c}.c6{color:#ad1457}
.pad { color:var(--dim); }
.fail { color:var(--fail); background:var(--failbg); }
.hov { background:var(--hov); }
.sel { background:var(--sel); color:#000; }
#treepane { flex:1; display:flex; flex-direction:column; min-width:0; }
#tree { flex:1; overflow:auto; padding:.4em .6em; font:13px/1.5 var(--mono); }
.node > .line { display:flex; gap:.6em; white-space:nowrap; cursor:pointer; padding:0 .3em;
  border-radius:3px; }
.node > .line:hover, .node > .line.hov { background:var(--hov); }
.node > .line.sel { background:var(--sel); }
.node > .kids { margin-left:1.2em; border-left:1px dotted var(--line); padding-left:.3em; }
.tw { width:1em; display:inline-block; color:var(--dim); text-align:center; }
.nm { font-weight:600; }
.kd, .at { color:var(--dim); }
.vl { color:#0d47a1; }
.nt { color:var(--dim); font-style:italic; }
.node.failed > .line .nm, .node.failed > .line .vl { color:var(--fail); }
.node.dim > .line { color:var(--dim); }
.more { color:var(--dim); cursor:pointer; padding-left:1.5em; }
#detail { border-top:1px solid var(--line); padding:.5em .8em; font:13px/1.5 var(--mono);
  max-height:35%; overflow:auto; white-space:pre-wrap; word-break:break-all; }
#detail .err { color:var(--fail); font-weight:600; }
"""

_JS = r"""
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("bw-data").textContent);
  const bin = atob(D.data);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const N = D.nodes;
  const kids = N.map(() => []);
  N.forEach((n, i) => { if (n.p !== null) kids[n.p].push(i); });
  const PER = 16, RH = 18;
  const size = bytes.length;
  const endOf = (n) => (n.e === null ? size : n.e);
  // The innermost node holding each byte (children come after their parents), and the
  // color of the leaf that holds it.
  const owner = new Int32Array(size).fill(-1);
  const color = new Int8Array(size).fill(-1);
  let leaf = 0;
  N.forEach((n, i) => {
    const e = endOf(n);
    for (let b = n.s; b < e && b < size; b++) owner[b] = i;
    if (kids[i].length === 0 && e > n.s) {
      const c = n.m.includes("padding") ? 7 : leaf++ % 7;
      for (let b = n.s; b < e && b < size; b++) if (color[b] < 0 || n.bits === null) color[b] = c;
    }
  });
  const failed = (n) => n.m.includes("failed") || n.m.includes("rest");
  const failByte = new Uint8Array(size);
  N.forEach((n) => { if (failed(n) && kids[N.indexOf(n)].length === 0) {
    for (let b = n.s; b < endOf(n) && b < size; b++) failByte[b] = 1; } });

  let sel = -1, hov = -1;
  const rangeOf = (i) => (i < 0 ? [0, 0] : [N[i].s, Math.min(endOf(N[i]), size)]);

  // ---- hex view: rows drawn as they scroll into view ----
  const scroll = document.getElementById("hexscroll");
  const space = document.getElementById("hexspace");
  const rows = document.getElementById("hexrows");
  const nrows = Math.max(1, Math.ceil(size / PER));
  space.style.height = nrows * RH + "px";
  const hex2 = (v) => v.toString(16).padStart(2, "0");
  function byteClass(b) {
    let c = failByte[b] ? "fail" : color[b] === 7 ? "pad" : color[b] >= 0 ? "c" + color[b] : "";
    const [ss, se] = rangeOf(sel), [hs, he] = rangeOf(hov);
    if (b >= ss && b < se) c += " sel"; else if (b >= hs && b < he) c += " hov";
    return c;
  }
  let drawn = "";
  function drawHex() {
    const first = Math.max(0, Math.floor(scroll.scrollTop / RH) - 20);
    const last = Math.min(nrows, first + Math.ceil(scroll.clientHeight / RH) + 40);
    // The rows in view are drawn already: only their styles may change.
    if (drawn === first + ":" + last) { restyle(); return; }
    drawn = first + ":" + last;
    rows.style.top = first * RH + "px";
    const out = [];
    for (let r = first; r < last; r++) {
      const o = r * PER;
      let h = '<div class="row"><span class="off">' + o.toString(16).padStart(8, "0") + "</span>";
      let a = '<span class="asc">';
      for (let b = o; b < o + PER; b++) {
        if (b >= size) { h += '<span class="b pad">  </span>'; continue; }
        const cls = byteClass(b);
        h += '<span class="b ' + cls + '" data-o="' + b + '">' + hex2(bytes[b]) + "</span>";
        const ch = bytes[b] >= 0x20 && bytes[b] < 0x7f ? String.fromCharCode(bytes[b]) : ".";
        const esc = ch === "<" ? "&lt;" : ch === "&" ? "&amp;" : ch === ">" ? "&gt;" : ch;
        a += '<span class="c ' + cls + '" data-o="' + b + '">' + esc + "</span>";
      }
      out.push(h + a + "</span></div>");
    }
    rows.innerHTML = out.join("");
  }
  // Hover and selection restyle the drawn bytes in place (the elements stay).
  function restyle() {
    for (const e of rows.querySelectorAll("[data-o]")) {
      const base = e.classList.contains("b") ? "b " : "c ";
      e.className = base + byteClass(Number(e.dataset.o));
    }
  }
  scroll.addEventListener("scroll", drawHex);
  window.addEventListener("resize", drawHex);
  function showBytes(i) {
    if (i < 0) return;
    const top = Math.floor(N[i].s / PER) * RH;
    if (top < scroll.scrollTop || top > scroll.scrollTop + scroll.clientHeight - RH * 2)
      scroll.scrollTop = Math.max(0, top - RH * 3);
  }
  const byteAt = (ev) => {
    const t = ev.target.closest("[data-o]");
    return t ? Number(t.dataset.o) : -1;
  };
  rows.addEventListener("mouseover", (ev) => { const b = byteAt(ev); if (b >= 0) hover(owner[b]); });
  rows.addEventListener("mouseleave", () => hover(-1));
  rows.addEventListener("click", (ev) => { const b = byteAt(ev); if (b >= 0 && owner[b] >= 0) select(owner[b], true); });

  // ---- the tree: nodes drawn when opened ----
  const tree = document.getElementById("tree");
  const el = new Array(N.length);
  const CHUNK = 200;
  function esc(s) { return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]); }
  function make(i) {
    const n = N[i];
    const d = document.createElement("div");
    d.className = "node" + (failed(n) ? " failed" : "") +
      (n.m.includes("padding") || n.m.includes("absent") ? " dim" : "");
    d.setAttribute("role", "treeitem");
    d.dataset.i = i;
    d.dataset.path = n.path;
    const size = n.e === null ? "?" : n.e - n.s;
    const tw = kids[i].length ? "▸" : "";
    d.innerHTML = '<div class="line"><span class="tw">' + tw + '</span><span class="nm">' +
      esc(n.n) + '</span><span class="at">@' + n.s + "+" + size + '</span><span class="kd">' +
      esc(n.k) + '</span><span class="vl">' + esc(n.v) +
      '</span><span class="nt">' + esc(n.a) + "</span></div>";
    el[i] = d;
    return d;
  }
  function open(i) {
    const d = el[i];
    if (!d || d.dataset.open === "1" || !kids[i].length) return;
    d.dataset.open = "1";
    d.querySelector(".tw").textContent = "▾";
    const box = document.createElement("div");
    box.className = "kids";
    d.appendChild(box);
    more(i, box, 0);
  }
  function more(i, box, from) {
    const list = kids[i];
    const to = Math.min(list.length, from + CHUNK);
    for (let k = from; k < to; k++) box.appendChild(make(list[k]));
    if (to < list.length) {
      const m = document.createElement("div");
      m.className = "more";
      m.textContent = "… " + (list.length - to) + " more (show " + Math.min(CHUNK, list.length - to) + ")";
      m.onclick = (ev) => { ev.stopPropagation(); m.remove(); more(i, box, to); };
      box.appendChild(m);
    }
  }
  function close(i) {
    const d = el[i];
    if (!d || d.dataset.open !== "1") return;
    d.dataset.open = "0";
    d.querySelector(".tw").textContent = "▸";
    d.querySelector(".kids").remove();
  }
  function reveal(i) {
    const chain = [];
    for (let k = i; k !== null; k = N[k].p) chain.push(k);
    chain.reverse();
    for (const k of chain) {
      if (!el[k]) {
        // Drawn by its parent: open the chunks up to it.
        const p = N[k].p, box = el[p].querySelector(".kids");
        let m;
        while (!el[k] && (m = box.querySelector(":scope > .more"))) m.click();
      }
      if (k !== i) open(k);
    }
  }
  tree.addEventListener("click", (ev) => {
    const line = ev.target.closest(".line");
    if (!line) return;
    const i = Number(line.parentNode.dataset.i);
    if (ev.target.classList.contains("tw")) {
      el[i].dataset.open === "1" ? close(i) : open(i);
      return;
    }
    select(i, false);
  });
  tree.addEventListener("mouseover", (ev) => {
    const line = ev.target.closest(".line");
    if (line) hover(Number(line.parentNode.dataset.i));
  });
  tree.addEventListener("mouseleave", () => hover(-1));
  tree.addEventListener("dblclick", (ev) => {
    const line = ev.target.closest(".line");
    if (line) { const i = Number(line.parentNode.dataset.i); el[i].dataset.open === "1" ? close(i) : open(i); }
  });

  // ---- selection and hover, shared by both views ----
  const detail = document.getElementById("detail");
  function hover(i) {
    if (i === hov) return;
    if (hov >= 0 && el[hov]) el[hov].firstChild.classList.remove("hov");
    hov = i;
    if (hov >= 0 && el[hov]) el[hov].firstChild.classList.add("hov");
    restyle();
  }
  function select(i, fromBytes) {
    if (sel >= 0 && el[sel]) el[sel].firstChild.classList.remove("sel");
    sel = i;
    if (i < 0) { restyle(); detail.textContent = ""; return; }
    reveal(i);
    el[i].firstChild.classList.add("sel");
    if (fromBytes) el[i].scrollIntoView({ block: "nearest" });
    showBytes(i);
    restyle();
    const n = N[i];
    const [s, e] = rangeOf(i);
    let raw = "";
    for (let b = s; b < Math.min(e, s + 256); b++) raw += hex2(bytes[b]) + " ";
    if (e - s > 256) raw += "…";
    detail.innerHTML = "<b>" + esc(n.path || "(message)") + "</b>  " + esc(n.k) +
      "\noffset " + n.s + " (0x" + n.s.toString(16) + "), " +
      (n.e === null ? "size unknown (decoding failed inside)" : "size " + (n.e - n.s) + " bytes") +
      (n.bits ? "\nbits " + esc(n.bits) : "") +
      (n.v ? "\nvalue " + esc(n.v) : "") + (n.a ? "\n" + esc(n.a) : "") +
      (n.err ? '\n<span class="err">' + esc(n.err) + "</span>" : "") + "\nbytes " + raw;
    // The details may have taken room from the tree: keep the selected line in view.
    el[i].firstChild.scrollIntoView({ block: "nearest" });
  }
  // ---- keys, as in Wireshark's packet details: up and down move through the shown lines,
  // right opens a node (then goes to its first child), left closes it (then goes to its parent)
  document.addEventListener("keydown", (ev) => {
    if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const lines = [...tree.querySelectorAll(".line")];
    const at = sel >= 0 && el[sel] ? lines.indexOf(el[sel].firstChild) : -1;
    let to = null;
    if (ev.key === "ArrowDown") to = lines[Math.min(at + 1, lines.length - 1)];
    else if (ev.key === "ArrowUp") to = lines[Math.max(at - 1, 0)];
    else if (ev.key === "ArrowRight" && sel >= 0) {
      if (kids[sel].length && el[sel].dataset.open !== "1") open(sel);
      else if (kids[sel].length) to = lines[at + 1];
    } else if (ev.key === "ArrowLeft" && sel >= 0) {
      if (el[sel].dataset.open === "1") close(sel);
      else if (N[sel].p !== null) to = el[N[sel].p].firstChild;
    } else return;
    ev.preventDefault();
    if (to) select(Number(to.parentNode.dataset.i), true);
  });
  window.bwExplain = {
    nodes: N,
    select: (path) => { const i = N.findIndex((n) => n.path === path); select(i, false); return i; },
    selected: () => (sel < 0 ? null : rangeOf(sel)),
  };

  // ---- start: the message open, the failure shown ----
  const status = document.getElementById("status");
  if (D.error) {
    status.className = "fail";
    status.textContent = "✗ " + D.error.type + (D.error.offset !== null ? " at offset " + D.error.offset : "") +
      ": " + D.error.message + (D.error.needed ? " (" + D.error.needed + " more bytes needed)" : "");
  } else {
    status.className = "ok";
    status.textContent = "✓ " + size + " bytes decoded";
  }
  tree.appendChild(make(0));
  open(0);
  const bad = N.findIndex((n) => n.m.includes("failed"));
  if (bad >= 0) { reveal(bad); if (el[bad]) el[bad].scrollIntoView({ block: "nearest" }); }
  drawHex();
})();
"""
