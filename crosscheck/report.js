// crosscheck report: one gate's trend on demand, drawn as inline SVG from the series embedded in #data.
"use strict";
const DATA = JSON.parse(document.getElementById("data").textContent);
const PALETTE = ["#1f77b4", "#9467bd", "#2ca02c", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];
const FAIL = "#d7191c";
const W = 680, H = 270, L = 64, R = 12, T = 10, B = 40;  // the plot's size and margins, px
const panel = document.getElementById("trend");
let series = null;  // the decoded series, a promise made on the first click

// base64 → inflate → the byte planes back into typed arrays (little-endian, as every browser's platform is)
async function decode() {
  const bytes = Uint8Array.from(atob(DATA.blob), c => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
  const raw = new Uint8Array(await new Response(stream).arrayBuffer());
  const n = DATA.pairs.reduce((sum, p) => sum + p[2], 0);
  let at = 0;
  const take = (Type, size) => {  // byte k of element i sits at k*n + i
    const out = new Uint8Array(n * size);
    for (let k = 0; k < size; k++) for (let i = 0; i < n; i++) out[i * size + k] = raw[at + k * n + i];
    at += n * size;
    return new Type(out.buffer);
  };
  const run = take(Uint32Array, 4), metric = take(Float32Array, 4), threshold = take(Float32Array, 4);
  const passed = take(Uint8Array, 1), start = [];
  let i = 0;
  for (const p of DATA.pairs) {  // runs are stored as steps from the pair's previous point
    start.push(i);
    for (let j = 1; j < p[2]; j++) run[i + j] += run[i + j - 1];
    i += p[2];
  }
  return {start, run, metric, threshold, passed};
}

// three significant digits, trailing zeros dropped: 1e-9, 2.5e-16, -1500, 0.042
function fmt(x) {
  if (!Number.isFinite(x) || x === 0) return String(x);
  const v = Number(x.toPrecision(3));
  return Math.abs(v) >= 1e5 || Math.abs(v) < 1e-3 ? v.toExponential().replace("e+", "e") : String(v);
}
const esc = s => String(s).replace(/[&<>"]/g, c => `&#${c.charCodeAt(0)};`);

// The y axis: log when every value is >= 0 and the positive ones span two decades or more (0 then sits on the
// bottom edge), else linear; non-finite values sit on the top edge.
function yAxis(values) {
  const v = values.filter(Number.isFinite), pos = v.filter(x => x > 0);
  const top = T, bottom = H - B;
  if (v.every(x => x >= 0) && pos.length && Math.log10(Math.max(...pos) / Math.min(...pos)) >= 2) {
    const lo = Math.floor(Math.log10(Math.min(...pos))), hi = Math.max(Math.ceil(Math.log10(Math.max(...pos))), lo + 1);
    const y = x => !Number.isFinite(x) ? top
      : x > 0 ? bottom - (Math.log10(x) - lo) / (hi - lo) * (bottom - top) : bottom;
    const stride = Math.ceil((hi - lo) / 8), ticks = [];
    for (let e = hi; e >= lo; e -= stride) ticks.push([10 ** e, `1e${e}`]);
    return {y, ticks, log: true};
  }
  let [lo, hi] = v.length ? [Math.min(...v), Math.max(...v)] : [0, 1];
  if (hi === lo) [lo, hi] = [lo - (Math.abs(lo) || 1) / 2, hi + (Math.abs(hi) || 1) / 2];
  const raw = (hi - lo) / 5, mag = 10 ** Math.floor(Math.log10(raw));
  const step = mag * [1, 2, 5, 10].find(f => f * mag >= raw);
  lo = Math.floor(lo / step) * step; hi = Math.ceil(hi / step) * step;
  const y = x => !Number.isFinite(x) ? top : bottom - (x - lo) / (hi - lo) * (bottom - top);
  const ticks = [];
  for (let t = lo; t <= hi + step / 2; t += step) ticks.push([t, fmt(Number(t.toPrecision(12)))]);
  return {y, ticks, log: false};
}

function plot(p, s) {
  const [model, gate, n, unit] = DATA.pairs[p], i0 = s.start[p], nr = DATA.runs.length;
  const pts = Array.from({length: n}, (_, k) => ({
    run: s.run[i0 + k], m: s.metric[i0 + k], t: s.threshold[i0 + k], ok: s.passed[i0 + k] === 1}));
  const {y, ticks, log} = yAxis(pts.flatMap(q => [q.m, q.t]));
  const x = r => L + (nr > 1 ? r / (nr - 1) : 0.5) * (W - L - R);
  const out = [`<svg width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">`];  // HTML's parser needs no xmlns
  for (const [v, label] of ticks) {
    out.push(`<line x1="${L}" x2="${W - R}" y1="${y(v)}" y2="${y(v)}" stroke="#e4e4e4"/>`,
             `<text x="${L - 4}" y="${y(v) + 4}" text-anchor="end">${esc(label)}</text>`);
  }
  const every = Math.max(1, Math.ceil(nr / 6));
  for (let r = nr - 1; r >= 0; r -= every) {  // always label the latest run
    const [commit, date] = DATA.runs[r];
    out.push(`<text x="${x(r)}" y="${H - B + 14}" text-anchor="${r === nr - 1 ? "end" : "middle"}">${esc(commit)}` +
             `<tspan x="${x(r)}" dy="12" fill="#666">${esc(date.slice(5, 10))}</tspan></text>`);
  }
  out.push(`<rect x="${L}" y="${T}" width="${W - L - R}" height="${H - T - B}" fill="none" stroke="#999"/>`);
  const step = pts.map((q, k) => `${k ? "H" : "M"}${x(q.run)} ${k ? "V" : ""}${y(q.t)}`).join(" ");
  out.push(`<path d="${step}" fill="none" stroke="#555" stroke-dasharray="5 3"/>`);
  const line = pts.filter(q => Number.isFinite(q.m)).map((q, k) => `${k ? "L" : "M"}${x(q.run)} ${y(q.m)}`).join(" ");
  out.push(`<path d="${line}" fill="none" stroke="#bbb"/>`);
  const seen = new Set();
  for (const q of pts) {
    const [commit, date, machine] = DATA.runs[q.run];
    seen.add(machine);
    const tip = `${commit} · ${date} UTC · ${DATA.machines[machine]}\nmetric ${fmt(q.m)} ${unit} · threshold ` +
                `${fmt(q.t)} · ${q.ok ? "PASS" : "FAIL"}`;
    const fill = Number.isFinite(q.m) ? PALETTE[machine % PALETTE.length] : "#fff";
    out.push(`<circle class="pt${q.ok ? "" : " fail"}" data-machine="${machine}" cx="${x(q.run)}" cy="${y(q.m)}" ` +
             `r="${q.ok ? 3.5 : 5}" fill="${fill}" stroke="${q.ok ? "none" : FAIL}" stroke-width="2">` +
             `<title>${esc(tip)}</title></circle>`);
  }
  out.push("</svg>");
  const keys = [...seen].sort((a, b) => a - b).map(m =>
    `<span><svg width="10" height="10"><circle cx="5" cy="5" r="4" fill="${PALETTE[m % PALETTE.length]}"/></svg> ` +
    `${esc(DATA.machines[m])}</span>`);
  keys.push("<span>- - - threshold</span>", `<span style="color:${FAIL}">◯ failed</span>`);
  document.getElementById("trend-title").textContent = `${model} · ${gate}` + (unit ? ` [${unit}]` : "");
  document.getElementById("trend-def").textContent =
    `${DATA.defs[gate] || ""} · ${n} of ${nr} runs${log ? " · log axis" : ""}`;
  document.getElementById("plot").innerHTML = out.join("") + `<p class="meta keys">${keys.join(" &nbsp; ")}</p>`;
}

async function show(p) {
  series = series || decode();
  plot(p, await series);
  panel.hidden = false;
}

document.addEventListener("click", e => {
  const el = e.target.closest("[data-p]");
  if (el) show(Number(el.dataset.p)).catch(err => console.error("trend:", err));
});
document.getElementById("close").addEventListener("click", () => { panel.hidden = true; });
document.addEventListener("keydown", e => { if (e.key === "Escape") panel.hidden = true; });
