"""The web app: the lesson's playground, queries, query pages and the JSON API they use (Starlette).

Safety rules, all here: requests are routed by ids looked up in memory, never by paths; with a token every
request must carry it (header ``X-Stagewise-Token``, or ``?token=`` once, which sets a same-site cookie);
state-changing requests must come from the app's own origin and send JSON (a cross-site form cannot);
bodies over 4 KiB, malformed JSON, labels outside 0..3 and unknown ids get a 4xx and change nothing.
Every answer carries a Content-Security-Policy (``pages.APP_HEADERS`` unless the route set a stricter one): no
page runs an inline script; the scripts are strings of the package served as ``/static/<name>``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import tempfile
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from stagewise.app import pages
from stagewise.app.bodies import MAX_BODY, Rejected, read_json_body
from stagewise.app.hosts import is_loopback
from stagewise.app.ids import from_segment
from stagewise.app.model import METRICS, Workspace, playground
from stagewise.app.page_scripts import SCRIPTS
from stagewise.app.rag import RagSamples
from stagewise.app.static import static_response
from stagewise.errors import StagewiseError
from stagewise.store.labels import LABELS

__all__ = ["MAX_BODY", "create_app"]

_UNSAFE = {"POST", "PUT", "DELETE", "PATCH"}
_TOKEN_COOKIE = "stagewise_token"


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _refusal(request: Request, status: int, message: str) -> Response:
    """JSON for the API; a page for a person anywhere else (a link followed in a browser, not a raw JSON 404)."""
    if request.url.path.startswith("/api/"):
        return _error(status, message)
    return HTMLResponse(pages.error_page(status, message), status_code=status)


def _path_id(request: Request, name: str, what: str) -> str:
    """The id a route's path segment stands for (:mod:`stagewise.app.ids`): ids are route data, never paths."""
    segment = request.path_params[name]
    value = from_segment(segment)
    if value is None:
        raise _Reject(404, f"{segment[:80]!r} is not a {what} id as this app writes them (~ then base64url)")
    return value


def _short(value: Any) -> str:
    """A value from a request body, for a message: its repr cut short (a body holds up to 4 KiB)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _qrels_as(labels: dict[str, dict[str, int]], fmt: str) -> str:
    """The labels as ``stagewise labels export`` writes them: through :func:`stagewise.data.writers.write_qrels`,
    so an id TREC cannot hold is refused by the same rule, not a copy of it."""
    if not labels:
        return ""
    from stagewise.data.readers import read_qrels
    from stagewise.data.writers import write_qrels

    with tempfile.TemporaryDirectory(prefix="stagewise-qrels-") as folder:
        path = Path(folder) / f"labels.{'qrels' if fmt == 'trec' else fmt}"
        write_qrels(read_qrels(labels), path, format=fmt)
        text = path.read_text(encoding="utf-8")
    if fmt != "trec":
        return text
    # the writer groups a query's documents by label; the lines are served in the store's order (query, then
    # document), as the database holds them, so two exports of the same labels are the same text
    order = {pair: i for i, pair in enumerate((q, d) for q, docs in labels.items() for d in docs)}
    lines = text.splitlines(keepends=True)
    return "".join(sorted(lines, key=lambda line: order[tuple(line.split(" ")[0:3:2])]))


@dataclasses.dataclass
class _Served:
    """What every handler serves from, kept on the app (``app.state.served``)."""

    workspace: Workspace | None
    token: str | None
    rag: RagSamples | None
    who: str
    refresher: _Refresher


def _served(request: Request) -> _Served:
    return request.app.state.served


def create_app(
    workspace: Workspace | None, *, token: str | None = None, rag: RagSamples | None = None, who: str = "web"
) -> Starlette:
    """The app over ``workspace`` (None: the playground alone)."""
    app = Starlette(routes=_ROUTES)
    app.state.served = _Served(workspace, token, rag, who, _Refresher(workspace))
    app.add_middleware(_Safety, token=token)
    app.add_exception_handler(_Reject, _rejected)
    app.add_exception_handler(HTTPException, _http_error)
    return app


def _guard(request: Request, token: str | None) -> Response | None:
    if token is None:
        # without a token the server is loopback-only; a Host naming anything else is a DNS rebinding
        # attempt (a page whose own name resolves to 127.0.0.1 would otherwise pass the origin check)
        host = request.headers.get("host", "")
        name = host.split("]")[0] + "]" if host.startswith("[") else host.rsplit(":", 1)[0]
        if not is_loopback(name):
            return _error(421, f"this server answers to loopback addresses or localhost, not {name!r}")
    else:
        given = (
            request.headers.get("x-stagewise-token")
            or request.cookies.get(_TOKEN_COOKIE)
            or request.query_params.get("token")
            or ""
        )
        if not hmac.compare_digest(given.encode(), token.encode()):
            return _error(401, "this server needs its token: open the address printed by stagewise serve")
    if request.method in _UNSAFE:
        origin = request.headers.get("origin")
        host = request.headers.get("host", "")
        if origin is not None and origin not in (f"http://{host}", f"https://{host}"):
            return _error(403, f"cross-site request refused (origin {origin} is not this server)")
        # a cross-site form can POST but never send JSON; DELETE is never a "simple" cross-site request
        json_type = request.headers.get("content-type", "").startswith("application/json")
        if request.method != "DELETE" and not json_type:
            return _error(415, "send the body as JSON (Content-Type: application/json)")
    return None


class _Safety:
    """The guard in front of every route, as plain ASGI (Starlette's BaseHTTPMiddleware costs a task and
    a stream per request, a third of a relabel's time)."""

    def __init__(self, inner: Any, token: str | None) -> None:
        self.inner = inner
        self.token = token

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        request = Request(scope)
        refused = _guard(request, self.token)
        if refused is not None:
            await refused(scope, receive, send)
            return
        extra = [(b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY")]
        if self.token is not None and request.query_params.get("token") == self.token:
            cookie = f"{_TOKEN_COOKIE}={self.token}; HttpOnly; Path=/; SameSite=strict"
            extra.append((b"set-cookie", cookie.encode("latin-1")))

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), *extra]
                if not any(name.lower() == b"content-security-policy" for name, _ in headers):
                    headers += _APP_HEADERS  # a route that set no policy of its own (pages.APP_HEADERS)
                message = {**message, "headers": headers}
            await send(message)

        await self.inner(scope, receive, send_with_headers)


_APP_HEADERS = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in pages.APP_HEADERS.items()]


async def _rejected(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, _Reject)
    return _refusal(request, exc.status, exc.message)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    missing = f"no such page or API route: {request.url.path}"
    if request.url.path.startswith(_ID_ROUTES):
        # most likely an id put in the URL as it is: a "/" in it split the segment
        missing += "; an id goes in a URL as its segment (an id holding '/' is ~ and the base64url of its UTF-8)"
    detail = {404: missing, 405: f"{request.method} is not allowed here"}
    return _refusal(request, exc.status_code, detail.get(exc.status_code, str(exc.detail)))


_ID_ROUTES = ("/queries/", "/rag/", "/api/queries/", "/api/labels/", "/api/rag/")


async def _body_json(request: Request, shape: str) -> Any:
    return await read_json_body(request, shape)


def _need_workspace(request: Request) -> Workspace:
    workspace = _served(request).workspace
    if workspace is None:
        raise _Reject(
            404,
            "no qrels loaded: this server shows no queries (start it with stagewise serve --qrels Q --run R)",
        )
    return workspace


def _need_query(request: Request, qid: str) -> Workspace:
    ws = _need_workspace(request)
    if not ws.known(qid):
        raise _Reject(404, f"unknown query id {qid!r}")
    return ws


def _need_sample(request: Request, sid: str) -> RagSamples:
    rag = _served(request).rag
    if rag is None or not rag.known(sid):
        raise _Reject(404, f"unknown RAG sample id {sid!r}")
    return rag


# pages
async def _home(request: Request) -> Response:
    served = _served(request)
    if served.workspace is None:
        return RedirectResponse("/rag" if served.rag else "/playground")
    return RedirectResponse("/queries")


async def _playground_page(request: Request) -> Response:
    return HTMLResponse(pages.playground_page(playground([1, 0, 2], "exp")))


async def _queries_page(request: Request) -> Response:
    return HTMLResponse(pages.queries_page(list(_need_workspace(request).runs), METRICS))


async def _query_page(request: Request) -> Response:
    qid = _path_id(request, "qid", "query")
    ws = _need_query(request, qid)
    return HTMLResponse(pages.query_page(qid, ws.query(qid), METRICS))


async def _rag_list(request: Request) -> Response:
    rag = _served(request).rag
    if not rag:
        raise _Reject(
            404,
            "no RAG records loaded: start the server with them, stagewise serve --rag RECORDS.jsonl "
            "(with or without --qrels)",
        )
    return HTMLResponse(pages.rag_list_page(rag.list(), rag.audits), headers=pages.STRICT_HEADERS)


async def _rag_page(request: Request) -> Response:
    sid = _path_id(request, "sid", "RAG sample")
    rag = _need_sample(request, sid)
    return HTMLResponse(pages.rag_page(rag.samples[sid], rag.audits))


async def _audit_page(request: Request) -> Response:
    """A judge's audit in full (stagewise serve --rag R --judge-audit AUDIT.json), numbered from 1."""
    rag = _served(request).rag
    number = request.path_params["number"]
    given = rag.audits.get(number) if rag is not None else None
    if given is None:
        count = len(rag.audits) if rag is not None else 0
        raise _Reject(404, f"no judge audit {number}: this server was given {count} (stagewise serve --judge-audit)")
    return HTMLResponse(pages.audit_page(number, *given), headers=pages.STRICT_HEADERS)


async def _static(request: Request) -> Response:
    """The pages' style and scripts, strings of this package looked up by name (no path on disk is read)."""
    name = request.path_params["file"]
    if name == "app.css":
        return static_response(request, pages.CSS, "text/css")
    if name in SCRIPTS:
        return static_response(request, SCRIPTS[name], "text/javascript")
    raise _Reject(404, f"no such file: /static/{name[:80]}")


async def _report_page(request: Request) -> Response:
    ws = _need_workspace(request)
    if not ws.runs:
        raise _Reject(404, "no runs loaded (stagewise serve --run R)")
    from stagewise.report.html import render
    from stagewise.report.html.page import pyplot
    from stagewise.study import study

    try:
        pyplot()  # the report's own check, with its install hint
    except StagewiseError as exc:
        raise _Reject(501, str(exc)) from None

    labels = ws.store.labels()

    def built() -> str:  # no lock: a page numbers its own ids and draws on figures of its own
        # with two runs or more, how far the current labels can be trusted (each run left out of the pool)
        trusted = True if len(ws.runs) > 1 else None
        return render(study(labels, ws.runs, trust=trusted), title="stagewise report (current labels)")

    # the HTML report's own sections (plots and tables), over the labels as they are now
    # its own policy: the report's one inline script, inline style, sandboxed (pages.report_headers)
    return HTMLResponse(await run_in_threadpool(built), headers=pages.report_headers())


# API
async def _api_playground(request: Request) -> Response:
    text = request.query_params.get("labels", "1,0,2")
    gain = request.query_params.get("gain", "exp")
    if gain not in ("exp", "linear"):
        raise _Reject(400, f"unknown gain {gain!r}; expected exp or linear")
    try:
        labels = [int(x) for x in text.split(",")] if text else []
    except ValueError:
        raise _Reject(400, "labels must be comma-separated integers from 0 to 3") from None
    if any(x not in LABELS for x in labels) or len(labels) > 20:
        raise _Reject(400, "labels must be at most 20 integers from 0 to 3")
    return JSONResponse(playground(labels, gain))


async def _api_queries(request: Request) -> Response:
    ws = _need_workspace(request)
    return JSONResponse(
        {
            "metrics": list(METRICS),
            "runs": list(ws.runs),
            "means": ws.means(),
            "queries": ws.query_rows(),
            "conventions": ws.conventions(),
        }
    )


async def _api_query(request: Request) -> Response:
    qid = _path_id(request, "qid", "query")
    return JSONResponse(_need_query(request, qid).query(qid))


async def _api_label(request: Request) -> Response:
    qid, docid = _path_id(request, "qid", "query"), _path_id(request, "docid", "document")
    ws = _need_query(request, qid)
    if request.method == "PUT":
        body = await _body_json(request, '{"label": 0..3}')
        if not isinstance(body, dict) or set(body) != {"label"}:
            raise _Reject(400, 'send {"label": 0..3} (to clear a label, DELETE it)')
        label = body["label"]
        if isinstance(label, bool) or not isinstance(label, int) or label not in LABELS:
            raise _Reject(422, f"label {_short(label)} is not one of 0, 1, 2, 3")
    else:
        label = None
    if not ws.known_doc(qid, docid):
        raise _Reject(404, f"unknown document id {docid!r} for query {qid!r}")
    # the write waits for the disk in a worker thread, in one transaction with the writes that arrive meanwhile;
    # the recomputation is shared by every write to the query committed before it starts
    served = _served(request)
    old = await served.refresher.write(qid, docid, label, served.who)
    await served.refresher.settled(qid)
    return JSONResponse(
        {"qid": qid, "docid": docid, "old": old, "label": label, "metrics": ws.metrics(qid), "means": ws.means()}
    )


async def _api_undo(request: Request) -> Response:
    ws = _need_workspace(request)
    await _body_json(request, "{}")
    served = _served(request)
    change = await run_in_threadpool(ws.undo, served.who)
    if change is None:
        raise _Reject(409, "nothing to undo")
    served.refresher.changed(str(change["qid"]))
    await served.refresher.settled(str(change["qid"]))
    return JSONResponse({**change, "metrics": ws.metrics(str(change["qid"])), "means": ws.means()})


async def _api_evidence(request: Request) -> Response:
    sid, pid = _path_id(request, "sid", "RAG sample"), _path_id(request, "pid", "passage")
    body = await _body_json(request, '{"gold": true} or {"gold": false}')
    rag = _need_sample(request, sid)
    if not isinstance(body, dict) or set(body) != {"gold"} or not isinstance(body["gold"], bool):
        raise _Reject(400, 'send {"gold": true} or {"gold": false}')
    if not rag.known(sid, pid):
        raise _Reject(404, f"unknown passage id {pid!r} for sample {sid!r}")
    return JSONResponse(await run_in_threadpool(rag.mark, sid, pid, body["gold"], _served(request).who))


async def _api_qrels(request: Request) -> Response:
    ws = _need_workspace(request)
    fmt = request.query_params.get("format", "trec")
    if fmt not in ("trec", "jsonl"):
        raise _Reject(400, f"unknown format {_short(fmt)}; expected trec (the default) or jsonl")
    labels = ws.store.labels()
    try:
        text = await run_in_threadpool(_qrels_as, labels, fmt)
    except StagewiseError as exc:  # an id TREC cannot hold: the writer's own refusal, and where to go
        where = "GET /api/qrels?format=jsonl, or stagewise labels export -o labels.jsonl"
        raise _Reject(422, f"{exc}: {where}") from None
    if fmt == "jsonl":
        return Response(text, media_type="application/x-ndjson")
    return PlainTextResponse(text)


# a path segment is an id's segment (stagewise.app.ids); {x:str} never spans a "/"
_ROUTES = [
    Route("/", _home),
    Route("/playground", _playground_page),
    Route("/queries", _queries_page),
    Route("/queries/{qid:str}", _query_page),
    Route("/report", _report_page),
    Route("/rag", _rag_list),
    Route("/rag/{sid:str}", _rag_page),
    Route("/audits/{number:int}", _audit_page),
    Route("/static/{file:str}", _static),
    Route("/api/playground", _api_playground),
    Route("/api/queries", _api_queries),
    Route("/api/queries/{qid:str}", _api_query),
    Route("/api/labels/{qid:str}/{docid:str}", _api_label, methods=["PUT", "DELETE"]),
    Route("/api/undo", _api_undo, methods=["POST"]),
    Route("/api/rag/{sid:str}/evidence/{pid:str}", _api_evidence, methods=["PUT"]),
    Route("/api/qrels", _api_qrels),
]


_Reject = Rejected  # a refused request: every route raises it, one handler answers it


class _Refresher:
    """Commits relabels together, then recomputes the metrics of the queries whose labels changed, once per query
    per turn of the loop.

    Writes: a relabel waits while a commit is on its way, and every relabel that arrived meanwhile is committed in
    the next one, a single transaction (one thread hop and one ``fsync`` for all of them; the workspace's
    ``write``). Recomputation: once a batch is committed, every query it changed (a relabel to the label already
    there changes none) is marked for recomputation before any of the batch's requests is woken; they wake in the
    same turn and wait for one recomputation of their query, which runs in the next turn and so reads every write
    committed before it, while the next batch is already being written. A request whose query has nothing waiting
    answers at once: its values are current. The recomputation runs on the loop itself, not in a worker thread:
    it holds the GIL either way, and in a thread it only added two thread hops a request and made the loop's
    socket calls queue for the GIL behind it.
    """

    def __init__(self, workspace: Workspace | None) -> None:
        self.workspace = workspace
        self.pending: dict[str, asyncio.Future] = {}
        self.writes: list[tuple[tuple[str, str, int | None, str], asyncio.Future]] = []
        self.writer: asyncio.Task | None = None  # held while it runs: the loop keeps only weak references

    async def write(self, qid: str, docid: str, label: int | None, who: str) -> int | None:
        """Set one label, committed with the others waiting; returns the old label once it is on disk."""
        future = asyncio.get_running_loop().create_future()
        self.writes.append(((qid, docid, label, who), future))
        if self.writer is None:
            self.writer = asyncio.ensure_future(self._write_all())
        return await asyncio.shield(future)  # a request that goes away does not cancel the others' write

    async def _write_all(self) -> None:
        assert self.workspace is not None
        try:
            while self.writes:
                batch, self.writes = self.writes, []
                try:
                    olds = await run_in_threadpool(self.workspace.write, [change for change, _ in batch])
                except Exception as err:  # nothing of the batch was written: every one of its requests is told
                    for _, future in batch:
                        future.set_exception(err)
                else:
                    # a relabel to the label it had changes nothing; any other marks its query, in order, so
                    # the last of several writes to one document is compared with what the one before it left
                    for ((qid, _, label, _), _), old in zip(batch, olds, strict=True):
                        if label != old:
                            self.changed(qid)
                    for (_, future), old in zip(batch, olds, strict=True):
                        future.set_result(old)
        finally:
            self.writer = None

    def changed(self, qid: str) -> None:
        """Mark ``qid``'s labels as changed: its values are recomputed in the next turn of the loop."""
        if qid not in self.pending:
            loop = asyncio.get_running_loop()
            if not self.pending:
                loop.call_soon(self._run)
            self.pending[qid] = loop.create_future()

    async def settled(self, qid: str) -> None:
        """Once ``qid``'s values reflect every label committed so far (at once when nothing is waiting)."""
        future = self.pending.get(qid)
        if future is not None:
            await asyncio.shield(future)  # a request that goes away does not cancel the others' wait

    def _run(self) -> None:
        pending, self.pending = self.pending, {}
        assert self.workspace is not None
        for qid, future in pending.items():
            try:
                self.workspace.refresh(qid, reread=False)  # every change went through the workspace
            except Exception as err:  # handed to every waiting request
                future.set_exception(err)
            else:
                future.set_result(None)
