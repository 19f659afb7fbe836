# ruff: noqa: E501  (the JavaScript keeps its natural line lengths)
"""The scripts of the web app's pages, served from this package as ``/static/<name>.js`` (:data:`SCRIPTS`).

No page runs an inline script: the Content-Security-Policy (``stagewise.app.pages.APP_HEADERS``) allows scripts
from the server's own origin only. A page's data travels in a ``<script type="application/json">`` blob that
these scripts parse, and every text from the data (query and document ids, passages, run names) goes into the
page as a text node (:js:`h` below), never as HTML: a passage holding ``<script>`` shows those characters and
runs nothing. The files are strings in this module, looked up by name; no request names a path on disk.
"""

from __future__ import annotations

__all__ = ["SCRIPTS"]

_COMMON = """'use strict';
const f4 = x => (x === null || x === undefined) ? '–' : Number(x).toFixed(4);
const $ = id => document.getElementById(id);
// an element with attributes and children: a child that is no Node becomes a text node, never HTML
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== null && v !== undefined && v !== false) el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c !== null && c !== undefined && c !== '') el.append(c instanceof Node ? c : String(c));
  }
  return el;
}
const fill = (id, ...children) => $(id).replaceChildren(...children.flat(Infinity));
const pageData = id => JSON.parse($(id).textContent);
async function api(method, url, body) {
  const opts = {method, headers: {'Content-Type': 'application/json'}};
  if (body !== undefined) opts.body = JSON.stringify(body);
  const r = await fetch(url, opts);
  const data = await r.json();
  if (!r.ok) { const s = $('status'); if (s) s.textContent = data.error; throw new Error(data.error); }
  return data;
}
"""

_PLAYGROUND = """'use strict';
let state = pageData('data');
function rows(terms) {
  const head = h('tr', {}, ['rank', 'label', 'gain', 'discount log2(rank+1)', 'gain / discount'].map(t => h('th', {}, t)));
  return [head, ...terms.map(t => h('tr', {}, h('td', {}, t.rank), h('td', {}, t.label), h('td', {}, f4(t.gain)),
                                              h('td', {}, f4(t.discount)), h('td', {}, f4(t.term))))];
}
function render() {
  fill('results', state.labels.map((l, i) => {
    const el = h('div', {class: `result l${l}`, 'data-testid': 'result', 'data-label': l, 'data-index': i},
                 `result ${i + 1}`, h('br'), `label ${l}`);
    el.addEventListener('click', () => {
      const labels = state.labels.slice(); labels[i] = (labels[i] + 1) % 4; load(labels, state.gain);
    });
    return el;
  }));
  fill('terms', rows(state.terms));
  fill('ideal-terms', rows(state.ideal_terms));
  $('ideal').textContent = 'labels sorted best first: [' + state.ideal.join(', ') + ']';
  $('dcg').textContent = f4(state.dcg);
  $('idcg').textContent = f4(state.ideal_dcg);
  $('nexp').textContent = f4(state.ndcg_exp);
  $('nlin').textContent = f4(state.ndcg_linear);
  $('rr').textContent = f4(state.rr);
  const g = $('gain');
  g.textContent = state.gain === 'exp' ? 'gain: exponential (2^label − 1)' : 'gain: linear (label)';
  g.dataset.gain = state.gain;
  document.body.dataset.ready = state.labels.join(',') + '/' + state.gain;
}
async function load(labels, gain) {
  state = await api('GET', '/api/playground?labels=' + labels.join(',') + '&gain=' + gain);
  render();
}
$('gain').addEventListener('click', () => load(state.labels, state.gain === 'exp' ? 'linear' : 'exp'));
$('add').addEventListener('click', () => { if (state.labels.length < 20) load(state.labels.concat([0]), state.gain); });
$('remove').addEventListener('click', () => { if (state.labels.length > 1) load(state.labels.slice(0, -1), state.gain); });
document.querySelectorAll('.quiz').forEach(b => b.addEventListener('click', () => {
  const a = $('answer'); a.hidden = false;
  a.textContent = (b.textContent === 'yes' ? 'Right: ' : 'Not so: ') + 'yes, they can. On [1, 0, 2] exponential gain ' +
    'gives nDCG ' + f4(state.ndcg_exp) + ' and linear gain ' + f4(state.ndcg_linear) + ' (for these labels). ' +
    'Always state the gain convention with an nDCG figure.';
}));
render();
"""

_QUERIES = """'use strict';
let data = null;
if ($('b').options.length > 1) $('b').selectedIndex = 1;
function render() {
  const m = $('metric').value, a = $('a').value, b = $('b').value, q = $('q').value.trim().toLowerCase();
  fill('means', h('tr', {}, h('th', {class: 'l'}, 'run'), data.metrics.map(x => h('th', {}, x))),
       data.runs.map(r => h('tr', {}, h('td', {class: 'l'}, r), data.metrics.map(x => h('td', {}, f4(data.means[r][x]))))));
  fill('conventions', data.conventions.map(c => h('li', {}, c)));
  let rows = data.queries.filter(r => !q || r.qid.toLowerCase().includes(q) || r.text.toLowerCase().includes(q));
  const key = {worst: r => r.runs[a][m], diff: r => -Math.abs(r.runs[a][m] - r.runs[b][m]),
               unjudged: r => -r.runs[a]['unjudged@10'], id: null}[$('sort').value];
  if (key) rows.sort((x, y) => key(x) - key(y));
  const head = h('tr', {}, h('th', {class: 'l'}, 'query'), h('th', {}, 'judged'),
                 data.runs.map(r => h('th', {}, r, h('br'), m)), h('th', {}, `unjudged@10 (${a})`));
  fill('list', head, rows.slice(0, 500).map(r => h('tr', {'data-testid': 'query-row'},
    h('td', {class: 'l'}, h('a', {href: '/queries/' + r.key}, r.qid), ' ', h('span', {class: 'muted'}, r.text.slice(0, 80))),
    h('td', {}, r.judged), data.runs.map(x => h('td', {}, f4(r.runs[x][m]))), h('td', {}, f4(r.runs[a]['unjudged@10'])))));
  $('status').textContent = rows.length + ' queries' + (rows.length > 500 ? ' (first 500 shown)' : '');
}
['q', 'metric', 'a', 'b', 'sort'].forEach(id => $(id).addEventListener('input', () => { if (data) render(); }));
api('GET', '/api/queries').then(d => { data = d; render(); });
"""

_QUERY = """'use strict';
let data = pageData('data');
const metrics = pageData('metric-names');  // not 'metrics': that is the table's id
// a Map: an id such as __proto__ or constructor is a key like any other, not an object's property
let labels = new Map(Object.entries(data.labels));
const runs = Object.keys(data.runs);
function table(vals, testid) {
  return [h('tr', {}, h('th', {class: 'l'}, 'run'), metrics.map(x => h('th', {}, x))),
    ...runs.map(r => h('tr', {}, h('td', {class: 'l'}, r), metrics.map(x =>
      h('td', {class: 'num', 'data-testid': testid, 'data-run': r, 'data-metric': x}, f4(vals[r][x])))))];
}
function renderMetrics() {
  fill('metrics', table(data.metrics, 'metric')); fill('means', table(data.means, 'mean'));
  fill('conventions', data.conventions.map(c => h('li', {}, c)));
}
function docRow(d) {
  const l = labels.get(d.docid);
  const lab = (l === undefined || l === null) ? '' : l;
  const buttons = [0, 1, 2, 3].map(v => h('button', {'data-testid': `set-${v}`, 'data-v': v, class: l === v ? 'on' : null}, v));
  buttons.push(h('button', {'data-testid': 'clear', 'data-v': ''}, '×'));
  buttons.forEach(b => b.addEventListener('click', () => setLabel(d.docid, d.key, b.dataset.v)));
  return h('div', {class: 'doc', 'data-testid': 'doc', 'data-docid': d.docid, 'data-key': d.key, 'data-label': lab},
    `${d.rank}. `, h('b', {}, d.docid), ' ', h('span', {class: 'muted'}, Number(d.score).toPrecision(4)), ' ', buttons,
    d.text ? h('div', {class: 'muted', 'data-testid': 'doc-text'}, d.text) : null);
}
function renderLists() {
  fill('cols', runs.map(r => h('div', {class: 'col'}, h('h3', {}, r), data.runs[r].map(docRow))));
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
$('undo').addEventListener('click', async () => {
  const res = await api('POST', '/api/undo', {});
  data = await api('GET', '/api/queries/' + data.key); labels = new Map(Object.entries(data.labels));
  $('status').textContent = `undone: ${res.docid} (query ${res.qid}) back to ${res.label === null ? 'unjudged' : res.label}`;
  renderMetrics(); renderLists();
});
$('qtext').textContent = data.text;
renderMetrics(); renderLists();
"""

_RAG = """'use strict';
let data = pageData('data');
const judged = v => (v === null || v === undefined) ? 'not computed (no answer sentence to check)' :
  (v === true ? 'yes' : v === false ? 'no' : f4(v));
function passage(p) {
  const gold = data.gold.includes(p.id), cited = data.cited.includes(p.id);
  const text = p.text ? [h('span', {'data-testid': 'passage-text'}, p.text),
                         p.text_from === 'this sample' ? null : [' ', h('span', {class: 'muted'}, `(text from ${p.text_from})`)]] :
    h('span', {class: 'muted', 'data-testid': 'passage-text'},
      'no text: neither the records nor a corpus hold this passage (stagewise serve --rag R --corpus C)');
  const toggle = h('button', {'data-testid': 'toggle-gold'}, gold ? 'unmark gold' : 'mark gold');
  const li = h('li', {class: gold ? 'gold' : null, 'data-testid': 'passage', 'data-pid': p.id, 'data-key': p.key, 'data-gold': gold ? 1 : 0},
    h('b', {}, p.id), ' ', h('span', {'data-testid': 'passage-where'}, p.where + (gold ? ', gold evidence' : '') + (cited ? ', cited' : '')),
    ' ', toggle, ': ', text);
  toggle.addEventListener('click', async () => {
    const before = data.label;
    data = await api('PUT', '/api/rag/' + data.key + '/evidence/' + p.key, {gold: !gold});
    $('status').textContent = `${p.id}: stage label ${before} → ${data.label}`;
    render();
  });
  return li;
}
function render() {
  $('label').textContent = data.label; $('reason').textContent = data.reason;
  document.querySelectorAll('[data-testid=judged-value]').forEach(el => { el.textContent = judged(data.judged[el.dataset.field]); });
  $('question').textContent = data.question; $('answer').textContent = data.answer;
  $('cited').textContent = data.cited.length ? data.cited.join(', ') : 'none';
  fill('passages', data.context.map(passage));
}
render();
"""

#: each script by the name the pages load it under (``/static/<name>``); ``common.js`` comes first on every page
SCRIPTS = {
    "common.js": _COMMON,
    "playground.js": _PLAYGROUND,
    "queries.js": _QUERIES,
    "query.js": _QUERY,
    "rag.js": _RAG,
}
