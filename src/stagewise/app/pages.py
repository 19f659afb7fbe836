# ruff: noqa: E501  (the inline CSS and JavaScript keep their natural line lengths)
"""Server-rendered pages with a little inline JavaScript (no build step); every number comes from the API."""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

__all__ = ["error_page", "playground_page", "queries_page", "query_page", "rag_list_page", "rag_page"]

_CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:1.5rem auto;max-width:72rem;padding:0 1rem;color:#1a1a1a}
nav a{margin-right:1rem} table{border-collapse:collapse;margin:.6rem 0} td,th{border:1px solid #ccc;padding:.2rem .5rem;
text-align:right} th{background:#f3f3f3} td.l,th.l{text-align:left} .num{font-variant-numeric:tabular-nums}
button{font:inherit;cursor:pointer} .result{display:inline-block;width:5.5rem;margin:.2rem;padding:.5rem;border:2px solid
#555;border-radius:.4rem;text-align:center;cursor:pointer;user-select:none} .l0{background:#fff}.l1{background:#dbeafe}
.l2{background:#93c5fd}.l3{background:#3b82f6;color:#fff} .cols{display:flex;gap:1rem;align-items:flex-start;overflow-x:auto}
.col{min-width:20rem} .doc{border-bottom:1px solid #eee;padding:.15rem 0} .doc button{padding:0 .35rem;margin-left:.1rem}
.doc button.on{background:#1d4ed8;color:#fff} .gold{background:#fef3c7} .muted{color:#666} #answer{margin-top:.5rem}
"""


def _page(title: str, body: str, script: str = "", data: Any = None) -> str:
    blob = ""
    if data is not None:
        # "</" cannot close the script element inside JSON once "<" is escaped
        text = json.dumps(data).replace("<", "\\u003c")
        blob = f'<script type="application/json" id="data">{text}</script>'
    return (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{escape(title)} · stagewise</title>"
        f"<meta name=viewport content='width=device-width,initial-scale=1'><style>{_CSS}</style></head><body>"
        "<nav><a href='/playground'>Playground</a><a href='/queries'>Queries</a><a href='/rag'>RAG samples</a><a href='/report'>Report (current labels)</a></nav>"
        f"<h1>{escape(title)}</h1>{body}{blob}<script>{_JS_COMMON}{script}</script></body></html>"
    )


def error_page(status: int, message: str) -> str:
    """What a person sees following a link to a page this server cannot show (the API answers JSON)."""
    body = f'<p data-testid="error">{escape(message)}</p><p class=muted>HTTP {status}</p>'
    return _page("Not available", body)


_JS_COMMON = """
const f4 = x => (x === null || x === undefined) ? '–' : Number(x).toFixed(4);
const esc = s => String(s).replace(/[&<>"']/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c]));
async function api(method, url, body) {
  const opts = {method, headers: {'Content-Type': 'application/json'}};
  if (body !== undefined) opts.body = JSON.stringify(body);
  const r = await fetch(url, opts);
  const data = await r.json();
  if (!r.ok) { const s = document.getElementById('status'); if (s) s.textContent = data.error; throw new Error(data.error); }
  return data;
}
"""


def playground_page(initial: dict[str, Any]) -> str:
    body = """
<p>Click a result to cycle its relevance label 0 → 1 → 2 → 3 → 0. The numbers are computed by
<code>stagewise.lesson</code> on the server.</p>
<p><button data-testid="gain-toggle" id="gain">gain: exponential (2^label − 1)</button>
<button id="add" data-testid="add-result">add a result</button>
<button id="remove" data-testid="remove-result">remove the last result</button></p>
<div id="results"></div>
<h2>DCG, term by term</h2><table id="terms"></table>
<p>DCG = <b data-testid="dcg" id="dcg" class="num"></b></p>
<h2>Ideal order</h2><p id="ideal"></p><table id="ideal-terms"></table>
<p>Ideal DCG = <b data-testid="ideal-dcg" id="idcg" class="num"></b></p>
<h2>nDCG and reciprocal rank</h2>
<table><tr><th class=l>nDCG, exponential gain</th><td data-testid="ndcg-exp" id="nexp" class="num"></td></tr>
<tr><th class=l>nDCG, linear gain</th><td data-testid="ndcg-linear" id="nlin" class="num"></td></tr>
<tr><th class=l>reciprocal rank (label ≥ 1)</th><td data-testid="rr" id="rr" class="num"></td></tr></table>
<h2>Predict first</h2>
<p>Can two nDCG implementations give different numbers for the same ranking when one uses raw relevance and the
other exponential gain?</p>
<p><button data-testid="quiz-yes" class="quiz">yes</button> <button data-testid="quiz-no" class="quiz">no</button></p>
<p id="answer" data-testid="quiz-answer" hidden></p>
"""
    script = """
let state = JSON.parse(document.getElementById('data').textContent);
function rows(terms) {
  return '<tr><th>rank</th><th>label</th><th>gain</th><th>discount log2(rank+1)</th><th>gain / discount</th></tr>' +
    terms.map(t => `<tr><td>${t.rank}</td><td>${t.label}</td><td>${f4(t.gain)}</td><td>${f4(t.discount)}</td>` +
                   `<td>${f4(t.term)}</td></tr>`).join('');
}
function render() {
  const res = document.getElementById('results');
  res.innerHTML = state.labels.map((l, i) =>
    `<div class="result l${l}" data-testid="result" data-label="${l}" data-index="${i}">result ${i + 1}<br>label ${l}</div>`).join('');
  res.querySelectorAll('.result').forEach(el => el.onclick = () => {
    const labels = state.labels.slice(); const i = Number(el.dataset.index);
    labels[i] = (labels[i] + 1) % 4; load(labels, state.gain);
  });
  document.getElementById('terms').innerHTML = rows(state.terms);
  document.getElementById('ideal-terms').innerHTML = rows(state.ideal_terms);
  document.getElementById('ideal').textContent = 'labels sorted best first: [' + state.ideal.join(', ') + ']';
  document.getElementById('dcg').textContent = f4(state.dcg);
  document.getElementById('idcg').textContent = f4(state.ideal_dcg);
  document.getElementById('nexp').textContent = f4(state.ndcg_exp);
  document.getElementById('nlin').textContent = f4(state.ndcg_linear);
  document.getElementById('rr').textContent = f4(state.rr);
  const g = document.getElementById('gain');
  g.textContent = state.gain === 'exp' ? 'gain: exponential (2^label − 1)' : 'gain: linear (label)';
  g.dataset.gain = state.gain;
  document.body.dataset.ready = state.labels.join(',') + '/' + state.gain;
}
async function load(labels, gain) {
  state = await api('GET', '/api/playground?labels=' + labels.join(',') + '&gain=' + gain);
  render();
}
document.getElementById('gain').onclick = () => load(state.labels, state.gain === 'exp' ? 'linear' : 'exp');
document.getElementById('add').onclick = () => { if (state.labels.length < 20) load(state.labels.concat([0]), state.gain); };
document.getElementById('remove').onclick = () => { if (state.labels.length > 1) load(state.labels.slice(0, -1), state.gain); };
document.querySelectorAll('.quiz').forEach(b => b.onclick = () => {
  const a = document.getElementById('answer'); a.hidden = false;
  a.textContent = (b.textContent === 'yes' ? 'Right: ' : 'Not so: ') + 'yes, they can. On [1, 0, 2] exponential gain ' +
    'gives nDCG ' + f4(state.ndcg_exp) + ' and linear gain ' + f4(state.ndcg_linear) + ' (for these labels). ' +
    'Always state the gain convention with an nDCG figure.';
});
render();
"""
    return _page("nDCG playground", body, script, initial)


def queries_page(runs: Sequence[str], metrics: Sequence[str]) -> str:
    opts = "".join(f"<option>{escape(r)}</option>" for r in runs)
    mopts = "".join(f"<option>{escape(m)}</option>" for m in metrics)
    body = f"""
<p>Search <input id="q" data-testid="search" placeholder="query id or text"> metric <select id="metric">{mopts}</select>
run A <select id="a">{opts}</select> run B <select id="b">{opts}</select>
sort <select id="sort" data-testid="sort"><option value="worst">worst first (run A)</option>
<option value="diff">largest difference |A − B|</option><option value="unjudged">unjudged share of A's top 10</option>
<option value="id">query id</option></select></p>
<p id="status" class="muted"></p><table id="means"></table><ul id="conventions" class="muted"></ul>
<table id="list"></table>
"""
    script = """
let data = null;
const $ = id => document.getElementById(id);
if ($('b').options.length > 1) $('b').selectedIndex = 1;
function render() {
  const m = $('metric').value, a = $('a').value, b = $('b').value, q = $('q').value.trim().toLowerCase();
  $('means').innerHTML = '<tr><th class=l>run</th>' + data.metrics.map(x => `<th>${esc(x)}</th>`).join('') + '</tr>' +
    data.runs.map(r => `<tr><td class=l>${esc(r)}</td>` + data.metrics.map(x => `<td>${f4(data.means[r][x])}</td>`).join('') + '</tr>').join('');
  $('conventions').innerHTML = data.conventions.map(c => `<li>${esc(c)}</li>`).join('');
  let rows = data.queries.filter(r => !q || r.qid.toLowerCase().includes(q) || r.text.toLowerCase().includes(q));
  const key = {worst: r => r.runs[a][m], diff: r => -Math.abs(r.runs[a][m] - r.runs[b][m]),
               unjudged: r => -r.runs[a]['unjudged@10'], id: null}[$('sort').value];
  if (key) rows.sort((x, y) => key(x) - key(y));
  $('list').innerHTML = '<tr><th class=l>query</th><th>judged</th>' + data.runs.map(r => `<th>${esc(r)}<br>${esc(m)}</th>`).join('') +
    `<th>unjudged@10 (${esc(a)})</th></tr>` + rows.slice(0, 500).map(r => `<tr data-testid="query-row"><td class=l>` +
    `<a href="/queries/${esc(r.key)}">${esc(r.qid)}</a> <span class=muted>${esc(r.text.slice(0, 80))}</span></td><td>${r.judged}</td>` +
    data.runs.map(x => `<td>${f4(r.runs[x][m])}</td>`).join('') + `<td>${f4(r.runs[a]['unjudged@10'])}</td></tr>`).join('');
  $('status').textContent = rows.length + ' queries' + (rows.length > 500 ? ' (first 500 shown)' : '');
}
['q', 'metric', 'a', 'b', 'sort'].forEach(id => $(id).oninput = render);
api('GET', '/api/queries').then(d => { data = d; render(); });
"""
    return _page("Queries", body, script)


def query_page(qid: str, data: dict[str, Any], metrics: Sequence[str]) -> str:
    body = """
<p id="qtext" data-testid="query-text"></p>
<p><a href="/queries">all queries</a> · click 0–3 to set a label, × to clear it.
<button id="undo" data-testid="undo">undo the last change</button> <span id="status" class="muted"></span></p>
<h2>This query</h2><table id="metrics" data-testid="query-metrics"></table>
<h2>Every run's mean</h2><table id="means" data-testid="means"></table><ul id="conventions" class="muted"></ul>
<h2>Ranked lists</h2><div class="cols" id="cols"></div>
"""
    script = """
let data = JSON.parse(document.getElementById('data').textContent);
// a Map: an id such as __proto__ or constructor is a key like any other, not an object's property
let labels = new Map(Object.entries(data.labels));
const $ = id => document.getElementById(id);
const runs = Object.keys(data.runs), metrics = METRICS;
function table(vals, testid) {
  return '<tr><th class=l>run</th>' + metrics.map(x => `<th>${esc(x)}</th>`).join('') + '</tr>' + runs.map(r =>
    `<tr><td class=l>${esc(r)}</td>` + metrics.map(x => `<td class=num data-testid="${testid}" data-run="${esc(r)}" ` +
    `data-metric="${esc(x)}">${f4(vals[r][x])}</td>`).join('') + '</tr>').join('');
}
function renderMetrics() {
  $('metrics').innerHTML = table(data.metrics, 'metric'); $('means').innerHTML = table(data.means, 'mean');
  $('conventions').innerHTML = data.conventions.map(c => `<li>${esc(c)}</li>`).join('');
}
function renderLists() {
  $('cols').innerHTML = runs.map(r => `<div class=col><h3>${esc(r)}</h3>` + data.runs[r].map(d => {
    const l = labels.get(d.docid); const lab = (l === undefined || l === null) ? '' : l;
    return `<div class="doc" data-testid="doc" data-docid="${esc(d.docid)}" data-key="${esc(d.key)}" data-label="${lab}">${d.rank}. ` +
      `<b>${esc(d.docid)}</b> <span class=muted>${Number(d.score).toPrecision(4)}</span> ` +
      [0, 1, 2, 3].map(v => `<button data-testid="set-${v}" data-v="${v}" class="${l === v ? 'on' : ''}">${v}</button>`).join('') +
      `<button data-testid="clear" data-v="">×</button>` + (d.text ? `<div class="muted" data-testid="doc-text">${esc(d.text)}</div>` : '') + '</div>';
  }).join('') + '</div>').join('');
  document.querySelectorAll('.doc button').forEach(b => b.onclick = () => {
    const doc = b.closest('.doc'); setLabel(doc.dataset.docid, doc.dataset.key, b.dataset.v);
  });
}
async function setLabel(docid, key, v) {
  // ids travel as the segments the server made (stagewise.app.ids), never as paths
  const url = '/api/labels/' + data.key + '/' + key;
  const res = v === '' ? await api('DELETE', url) : await api('PUT', url, {label: Number(v)});
  if (res.label === null) labels.delete(docid); else labels.set(docid, res.label);
  data.metrics = res.metrics; data.means = res.means;
  $('status').textContent = `${docid}: ${res.old === null ? 'unjudged' : res.old} → ${res.label === null ? 'unjudged' : res.label}`;
  renderMetrics(); renderLists();
}
$('undo').onclick = async () => {
  const res = await api('POST', '/api/undo', {});
  data = await api('GET', '/api/queries/' + data.key); labels = new Map(Object.entries(data.labels));
  $('status').textContent = `undone: ${res.docid} (query ${res.qid}) back to ${res.label === null ? 'unjudged' : res.label}`;
  renderMetrics(); renderLists();
};
$('qtext').textContent = data.text;
renderMetrics(); renderLists();
"""
    return _page(f"Query {qid}", body, f"const METRICS = {json.dumps(list(metrics))};" + script, data)


def rag_list_page(records: list[dict[str, Any]]) -> str:
    rows = "".join(
        f"<tr><td class=l><a href='/rag/{escape(r['key'])}'>{escape(str(r['id']))}</a></td>"
        f"<td class=l>{escape(str(r.get('label', '')))}</td><td class=l>{escape(str(r.get('question', ''))[:120])}"
        "</td></tr>"
        for r in records
    )
    return _page(
        "RAG samples",
        f"<table><tr><th class=l>sample</th><th class=l>stage label</th><th class=l>question</th></tr>{rows}</table>",
    )


def rag_page(record: dict[str, Any]) -> str:
    body = """
<p><a href="/rag">all samples</a> · mark or unmark a passage as gold evidence: the stage label is recomputed.
<span id="status" class="muted"></span></p>
<p><b>Stage label:</b> <span data-testid="rag-label" id="label"></span> — <span id="reason"></span></p>
<p><b>Question:</b> <span id="question"></span></p>
<h2>Passages</h2><p class=muted>The context the answer was written from, the rest of the retrieved list, and every gold
passage wherever it stands; each says where it is.</p><ol id="passages"></ol>
<h2>Answer</h2><p id="answer"></p><p><b>Citations:</b> <span id="cited"></span></p>
"""
    script = """
let data = JSON.parse(document.getElementById('data').textContent);
const $ = id => document.getElementById(id);
function render() {
  $('label').textContent = data.label; $('reason').textContent = data.reason;
  $('question').textContent = data.question; $('answer').textContent = data.answer;
  $('cited').textContent = data.cited.length ? data.cited.join(', ') : 'none';
  $('passages').innerHTML = data.context.map(p => {
    const gold = data.gold.includes(p.id), cited = data.cited.includes(p.id);
    const text = p.text ? `<span data-testid="passage-text">${esc(p.text)}</span>` +
      (p.text_from === 'this sample' ? '' : ` <span class=muted>(text from ${esc(p.text_from)})</span>`) :
      '<span class=muted data-testid="passage-text">no text: neither the records nor a corpus hold this passage (stagewise serve --rag R --corpus C)</span>';
    return `<li class="${gold ? 'gold' : ''}" data-testid="passage" data-pid="${esc(p.id)}" data-key="${esc(p.key)}" data-gold="${gold ? 1 : 0}">` +
      `<b>${esc(p.id)}</b> <span data-testid="passage-where">${esc(p.where)}${gold ? ', gold evidence' : ''}${cited ? ', cited' : ''}</span> ` +
      `<button data-testid="toggle-gold">${gold ? 'unmark gold' : 'mark gold'}</button>: ${text}</li>`;
  }).join('');
  document.querySelectorAll('#passages button').forEach(b => b.onclick = async () => {
    const li = b.closest('li');
    const url = '/api/rag/' + data.key + '/evidence/' + li.dataset.key;
    const before = data.label;
    data = await api('PUT', url, {gold: li.dataset.gold !== '1'});
    $('status').textContent = `${li.dataset.pid}: stage label ${before} → ${data.label}`;
    render();
  });
}
render();
"""
    return _page(f"RAG sample {record['id']}", body, script, record)
