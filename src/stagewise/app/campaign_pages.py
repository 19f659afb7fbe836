# ruff: noqa: E501  (the CSS and JavaScript keep their natural line lengths)
"""The assessment campaign's pages: an assessor's page (keyboard labelling) and the administrator's page.

The pages are static shells; their script and style are served from this server (``/static/...``) under a
Content-Security-Policy that allows no inline script, and every text from the data (topics, documents, names)
is put into the page with ``textContent``, never as HTML, so a document holding ``<script>`` shows those
characters and runs nothing. The query's terms are highlighted from segments the server computes
(:func:`highlight_segments`): ``[text, is_term]`` pairs, each a text node or a ``<mark>`` in the page.
"""

from __future__ import annotations

import re
from html import escape

__all__ = [
    "ADMIN_JS",
    "ASSESS_JS",
    "CSS",
    "admin_page",
    "assess_page",
    "highlight_segments",
    "message_page",
    "terms_of",
]

CSS = """
body{font:16px/1.5 system-ui,sans-serif;margin:1rem auto;max-width:60rem;padding:0 1rem;color:#1a1a1a}
header{display:flex;justify-content:space-between;align-items:baseline;border-bottom:1px solid #ddd;margin-bottom:.8rem}
.muted{color:#555} .topic{background:#f6f7f9;border-radius:.4rem;padding:.6rem .9rem;margin:.6rem 0}
.topic h2{margin:.1rem 0 .3rem;font-size:1.2rem} .topic p{margin:.2rem 0}
.doc{border:1px solid #ccc;border-radius:.4rem;padding:.8rem 1rem;max-height:55vh;overflow:auto;white-space:pre-wrap}
.missing{background:#fff4e5;border-color:#f0b35a} mark{background:#fde68a;padding:0 .1rem}
.keys{display:flex;gap:.5rem;flex-wrap:wrap;margin:.8rem 0} .keys button{font:inherit;padding:.4rem .8rem;cursor:pointer}
kbd{border:1px solid #999;border-bottom-width:2px;border-radius:.25rem;padding:0 .3rem;font-size:.85em;background:#fff}
#status{min-height:1.4rem} .error{color:#b91c1c} progress{width:16rem}
table{border-collapse:collapse;margin:.5rem 0} td,th{border:1px solid #ccc;padding:.2rem .5rem;text-align:right}
th{background:#f3f3f3} td.l,th.l{text-align:left} .num{font-variant-numeric:tabular-nums}
"""

_SCALE = (
    ("0", "not relevant"),
    ("1", "related"),
    ("2", "highly relevant"),
    ("3", "perfectly relevant"),
)


def _shell(title: str, body: str, script: str, api: str) -> str:
    return (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{escape(title)} · stagewise</title>"
        "<meta name=viewport content='width=device-width,initial-scale=1'>"
        "<link rel=stylesheet href='/static/campaign.css'></head>"
        f"<body data-api='{escape(api, quote=True)}'>{body}<script src='/static/{script}'></script></body></html>"
    )


def assess_page(campaign: str, assessor: str, api: str) -> str:
    """The assessor's page; ``api`` is the campaign's API path (its data comes from ``api/next``)."""
    buttons = "".join(
        f"<button data-label='{k}' title='key {k}'><kbd>{k}</kbd> {escape(text)}</button>" for k, text in _SCALE
    )
    body = (
        f"<header><h1>Assessing: {escape(campaign)}</h1><span class=muted>assessor <b data-testid=assessor>"
        f"{escape(assessor)}</b></span></header>"
        "<p><progress id=bar value=0 max=1></progress> <span id=progress data-testid=progress class=num></span></p>"
        "<div id=item hidden><div class=topic><h2 id=title data-testid=title></h2>"
        "<p id=description data-testid=description></p><p id=narrative data-testid=narrative class=muted></p></div>"
        "<p class=muted>Document <b id=docid data-testid=docid></b> <span id=extra data-testid=extra></span></p>"
        "<div id=doc class=doc data-testid=doc></div>"
        f"<div class=keys>{buttons}<button data-action=skip><kbd>s</kbd> skip</button>"
        "<button data-action=undo><kbd>u</kbd> undo</button></div></div>"
        "<p id=done data-testid=done hidden>Every item in your queue is judged. Thank you! (<kbd>u</kbd> takes back "
        "the last one.)</p><p id=status data-testid=status role=status></p>"
        "<p class=muted>Keys: <kbd>0</kbd>–<kbd>3</kbd> label, <kbd>s</kbd> skip (it comes back at the end), "
        "<kbd>u</kbd> undo. Your labels are saved as you go; close the page and come back any time.</p>"
    )
    return _shell(f"{campaign}: {assessor}", body, "campaign.js", api)


def admin_page(campaign: str, api: str) -> str:
    """The administrator's page: progress, agreement as it grows, the assessors' addresses, the export."""
    body = (
        f"<header><h1>Campaign {escape(campaign)}</h1><span class=muted>administrator</span></header>"
        "<p id=settings data-testid=settings class=muted></p>"
        "<h2>Progress</h2><table data-testid=progress><thead><tr><th class=l>assessor</th><th>queue</th>"
        "<th>labelled</th><th>skipped</th><th>left</th><th>median s</th><th class=l>address to send them</th></tr></thead><tbody id=rows></tbody></table>"
        "<h2>Agreement</h2><p id=agreement-note class=muted></p><table data-testid=agreement><thead><tr>"
        "<th class=l>pair</th><th>items both labelled</th><th>Cohen's κ</th><th>κ linear</th><th>κ quadratic</th>"
        "</tr></thead><tbody id=pairs></tbody></table>"
        "<h2>Export</h2><p>Merged qrels: <select id=policy><option>majority</option><option>max</option>"
        "<option>mean(threshold=1.5)</option></select> <a id=export data-testid=export href='#'>download</a></p>"
        "<p id=status data-testid=status role=status></p>"
    )
    return _shell(f"{campaign}: administrator", body, "admin.js", api)


def message_page(status: int, message: str) -> str:
    """A page for a person who followed a link this server cannot serve (no token, a wrong one, no campaign)."""
    body = f"<h1>stagewise assessment</h1><p data-testid=error>{escape(message)}</p><p class=muted>HTTP {status}</p>"
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>stagewise assessment</title>"
        f"<link rel=stylesheet href='/static/campaign.css'></head><body>{body}</body></html>"
    )


_WORD = re.compile(r"\w+")
# function words that would light up every line (a query's content words are what an assessor looks for)
_STOP_TEXT = """a an and are as at be by for from has have in is it its of on or that the this to was were what when
where which who why with how does do did not no"""
_STOP = frozenset(_STOP_TEXT.split())


def _stem(word: str) -> str:
    """Lower case, a plural ``s`` (``es`` after s, x, z, ch, sh) stripped from words of four letters or more."""
    w = word.lower()
    if (len(w) > 4 and w.endswith("es") and w[-3] in "sxz") or w.endswith(("ches", "shes")):
        return w[:-2]
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


def terms_of(title: str) -> frozenset[str]:
    """The query's terms an assessor's page highlights: the title's words, stop words left out, stemmed as
    :func:`_stem` does."""
    return frozenset(_stem(w) for w in _WORD.findall(title) if w.lower() not in _STOP and len(w) > 1)


def highlight_segments(text: str, terms: frozenset[str]) -> list[list[object]]:
    """``text`` cut into ``[piece, is_term]`` runs, a term being a word whose stem is one of ``terms``; the pieces
    join back to ``text`` exactly.

    >>> highlight_segments("Apples <b>and</b> apple pie.", terms_of("apple"))
    [['Apples', True], [' <b>and</b> ', False], ['apple', True], [' pie.', False]]
    """
    out: list[list[object]] = []
    last = 0
    for match in _WORD.finditer(text):
        if _stem(match.group()) not in terms:
            continue
        if match.start() > last:
            out.append([text[last : match.start()], False])
        out.append([match.group(), True])
        last = match.end()
    if last < len(text) or not out:
        out.append([text[last:], False])
    return out


# The assessor's page. Keys are read only while no request is in flight (a second key would judge an item the
# page has not shown yet); a request that fails on the network is sent again with the same id, which the store
# records once.
ASSESS_JS = r"""
const API = document.body.dataset.api;
let current = null, shownAt = 0, busy = false;
const $ = id => document.getElementById(id);
function say(text, bad) { const s = $('status'); s.textContent = text || ''; s.className = bad ? 'error' : ''; }
function rid() { return Date.now().toString(36) + '-' + Math.random().toString(36).slice(2, 12); }
async function call(method, path, body) {
  const opts = {method, headers: {'Content-Type': 'application/json'}, credentials: 'same-origin'};
  if (body !== undefined) opts.body = JSON.stringify(body);
  for (let attempt = 0; ; attempt++) {
    let r;
    try { r = await fetch(API + path, opts); }
    catch (e) { if (attempt < 4) { say('connection lost, trying again…', true); await new Promise(ok => setTimeout(ok, 500 * (attempt + 1))); continue; } throw new Error('the server cannot be reached; your last key was not saved'); }
    const data = await r.json();
    if (!r.ok) throw new Error(data.error || ('HTTP ' + r.status));
    return data;
  }
}
function show(view) {
  const p = view.progress;
  $('bar').max = p.total || 1; $('bar').value = p.labelled;
  $('progress').textContent = p.labelled + ' of ' + p.total + ' labelled' + (p.skipped ? ', ' + p.skipped + ' skipped' : '');
  current = view.item;
  document.body.dataset.state = [current, p.labelled, p.skipped].join(':');  // what the page shows, for tests
  $('item').hidden = current === null; $('done').hidden = current !== null;
  if (current === null) return;
  $('title').textContent = view.query.title;
  $('description').textContent = view.query.description || '';
  $('narrative').textContent = view.query.narrative || '';
  $('docid').textContent = view.doc.id;
  const extra = [];
  if (view.judgement === -1) extra.push('(skipped before)');
  if (view.prelabel !== undefined && view.prelabel !== null) extra.push('judge suggests ' + view.prelabel);
  if (view.pool) extra.push(view.pool);
  $('extra').textContent = extra.join(' · ');
  const doc = $('doc'); doc.textContent = ''; doc.classList.toggle('missing', view.doc.segments === null);
  if (view.doc.segments === null) doc.textContent = 'The text of document ' + view.doc.id + ' is missing from the collection this campaign was given. Judge it as unjudgeable: skip it (s), or label it 0 if your instructions say so.';
  else for (const [piece, term] of view.doc.segments) { const n = term ? document.createElement('mark') : document.createTextNode(piece); if (term) n.textContent = piece; doc.appendChild(n); }
  doc.scrollTop = 0; shownAt = performance.now();
}
async function act(path, body) {
  if (busy) return; busy = true;
  try { const out = await call('POST', path, body); say(out.message || ''); show(out.next); }
  catch (e) { say(e.message, true); }
  finally { busy = false; }
}
function judge(label) {
  if (current === null) return;
  const spent = Math.max(0, (performance.now() - shownAt) / 1000);
  act('/judge', {item: current, label, spent: Math.round(spent * 1000) / 1000, request: rid()});
}
document.addEventListener('keydown', e => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (['0', '1', '2', '3'].includes(e.key)) { e.preventDefault(); judge(Number(e.key)); }
  else if (e.key === 's') { e.preventDefault(); judge('skip'); }
  else if (e.key === 'u') { e.preventDefault(); act('/undo', {}); }
});
document.querySelectorAll('button[data-label]').forEach(b => b.addEventListener('click', () => judge(Number(b.dataset.label))));
document.querySelector('button[data-action=skip]').addEventListener('click', () => judge('skip'));
document.querySelector('button[data-action=undo]').addEventListener('click', () => act('/undo', {}));
call('GET', '/next').then(show).catch(e => say(e.message, true));
"""

# The administrator's page: refreshed every five seconds, every figure from the API.
ADMIN_JS = r"""
const API = document.body.dataset.api;
const $ = id => document.getElementById(id);
const f3 = x => (x === null || x === undefined) ? '–' : Number(x).toFixed(3);
function cell(row, text, cls) { const td = document.createElement('td'); td.textContent = text; if (cls) td.className = cls; row.appendChild(td); return td; }
async function refresh() {
  let data;
  try { const r = await fetch(API + '/admin', {credentials: 'same-origin'}); data = await r.json(); if (!r.ok) throw new Error(data.error); }
  catch (e) { $('status').textContent = e.message; $('status').className = 'error'; return; }
  $('status').textContent = ''; const s = data.settings;
  $('settings').textContent = data.items + ' items, ' + data.overlap_items + ' judged by several assessors (overlap ' + s.overlap + ', seed ' + s.seed + '); ' + (s.blind ? 'blind' : 'not blind') + '; judge pre-labels: ' + (s.prelabels ? s.prelabels + (s.show_prelabels ? ', shown' : ', hidden') : 'none') + '. Median s: the median seconds an assessor spent per label.';
  const rows = $('rows'); rows.textContent = '';
  for (const a of data.assessors) {
    const tr = document.createElement('tr'); tr.dataset.assessor = a.name;
    cell(tr, a.name, 'l'); cell(tr, a.total, 'num'); cell(tr, a.labelled, 'num'); cell(tr, a.skipped, 'num'); cell(tr, a.left, 'num');
    cell(tr, a.median_spent === null ? '–' : a.median_spent.toFixed(1), 'num');
    // the whole address, to copy and send: opened here it would sign this browser in as that assessor
    const td = cell(tr, '', 'l'); const code = document.createElement('code'); code.textContent = location.origin + a.address; td.appendChild(code);
    rows.appendChild(tr);
  }
  const pairs = $('pairs'); pairs.textContent = '';
  for (const p of data.agreement.pairs) {
    const tr = document.createElement('tr'); tr.dataset.pair = p.first + '|' + p.second;
    cell(tr, p.first + ' – ' + p.second, 'l'); cell(tr, p.both, 'num'); cell(tr, f3(p.kappa), 'num'); cell(tr, f3(p.kappa_linear), 'num'); cell(tr, f3(p.kappa_quadratic), 'num');
    pairs.appendChild(tr);
  }
  $('agreement-note').textContent = data.agreement.note;
}
function exportLink() { $('export').href = API + '/export?merge=' + encodeURIComponent($('policy').value); }
$('policy').addEventListener('change', exportLink); exportLink();
refresh(); setInterval(refresh, 5000);
"""
