"""The assessment campaign server (``stagewise campaign serve STORE``): assessors label their queues by keyboard,
the administrator watches progress and agreement grow and exports merged qrels.

Every campaign lives under ``/c/{campaign}/`` (its name as an id segment, :mod:`stagewise.app.ids`). Safety:

- every page and API call needs a token: an assessor's (their page and ``api/next``, ``api/judge``,
  ``api/undo``) or the administrator's (``admin``, ``api/admin``, ``api/export``); it comes in the header
  ``X-Stagewise-Token``, or once as ``?token=``, which sets an HttpOnly, SameSite=Strict cookie scoped to the
  campaign's path and redirects to the address without it (so the token leaves the address bar and the
  history); tokens are compared in constant time and never logged;
- a state-changing request must come from this server's origin and send JSON (a cross-site form cannot), with
  a body of 4 KiB at most; bad values get a 4xx naming what was expected and change nothing;
- the pages run no inline script (Content-Security-Policy) and put every text in with ``textContent``.

Blind by default: an assessor sees the query, its description and narrative, the document's id and text, never
a run's name, a rank or a score (the pool's note only when the campaign was made with ``--no-blind``).
"""

from __future__ import annotations

import math
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from stagewise.app import campaign_pages as pages
from stagewise.app.bodies import Rejected, read_json_body
from stagewise.app.ids import from_segment, to_segment
from stagewise.app.static import static_response
from stagewise.assess.campaign import next_item
from stagewise.errors import StagewiseError
from stagewise.store.campaigns import SKIP, CampaignStore

__all__ = ["create_campaign_app"]

_ROLE_COOKIE = {"assessor": "stagewise_assessor", "admin": "stagewise_admin"}
_UNSAFE = {"POST", "PUT", "DELETE", "PATCH"}
_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"content-security-policy", b"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
     b"img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"),
]  # fmt: skip
MAX_SPENT = 24 * 3600.0  # seconds: a longer time on one item is a clock's or a client's mistake
_Reject = Rejected  # a refused request, answered as the label server answers it


async def _body_json(request: Request, shape: str) -> Any:
    """The body as JSON (at most :data:`MAX_BODY` bytes, UTF-8, no NaN or Infinity), or a 4xx naming ``shape``."""
    return await read_json_body(request, shape)


def create_campaign_app(store: CampaignStore) -> Starlette:
    """The app serving every campaign of ``store``."""
    app = Starlette(routes=_ROUTES)
    app.state.store = store
    app.add_middleware(_Headers)
    app.add_exception_handler(_Reject, _rejected)
    app.add_exception_handler(HTTPException, _http_error)
    return app


class _Headers:
    """Security headers on every answer, and the origin and JSON checks before any state-changing request (plain
    ASGI, as the label server's guard)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        request = Request(scope)
        if request.method in _UNSAFE:
            refused = _cross_site(request)
            if refused is not None:
                await _refusal(request, *refused)(scope, receive, send)
                return

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":  # a header the response set itself stays (static files)
                own = message.get("headers", [])
                named = {name.lower() for name, _ in own}
                message = {**message, "headers": [*own, *(h for h in _HEADERS if h[0] not in named)]}
            await send(message)

        await self.inner(scope, receive, send_with_headers)


def _cross_site(request: Request) -> tuple[int, str] | None:
    origin = request.headers.get("origin")
    host = request.headers.get("host", "")
    if origin is not None and origin not in (f"http://{host}", f"https://{host}"):
        return 403, f"cross-site request refused (origin {origin} is not this server)"
    if not request.headers.get("content-type", "").startswith("application/json"):
        return 415, "send the body as JSON (Content-Type: application/json)"
    return None


def _refusal(request: Request, status: int, message: str) -> Response:
    if "/api/" in request.url.path:
        return JSONResponse({"error": message}, status_code=status)
    return HTMLResponse(pages.message_page(status, message), status_code=status)


async def _rejected(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, _Reject)
    return _refusal(request, exc.status, exc.message)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    detail = {404: f"no such page or API route: {request.url.path}", 405: f"{request.method} is not allowed here"}
    return _refusal(request, exc.status_code, detail.get(exc.status_code, str(exc.detail)))


def _store(request: Request) -> CampaignStore:
    return request.app.state.store


def _campaign(request: Request) -> str:
    segment = request.path_params["campaign"]
    name = from_segment(segment)
    if name is None or name not in _store(request).names():
        raise _Reject(404, f"no campaign {segment[:80]!r} on this server; open the address you were given")
    return name


def _given_token(request: Request, role: str) -> str:
    return (
        request.headers.get("x-stagewise-token")
        or request.query_params.get("token")  # before the cookie: a link just opened names who opens it
        or request.cookies.get(_ROLE_COOKIE[role])
        or ""
    )


def _assessor(request: Request, name: str) -> str:
    found = _store(request).assessor_of(name, _given_token(request, "assessor"))
    if found is None:
        raise _Reject(
            401, "this page needs your assessor token: open the address the campaign's administrator gave you"
        )
    return found


def _admin(request: Request, name: str) -> None:
    if not _store(request).is_admin(name, _given_token(request, "admin")):
        raise _Reject(401, "this page needs the campaign's administrator token (printed by stagewise campaign create)")


def _token_moved_to_cookie(request: Request, name: str, role: str) -> Response | None:
    """A page opened with ``?token=``: the token goes into a cookie for the campaign's path and the browser is
    sent to the address without it."""
    token = request.query_params.get("token")
    if token is None:
        return None
    base = f"/c/{to_segment(name)}/"
    response = RedirectResponse(request.url.path, status_code=303)
    response.set_cookie(_ROLE_COOKIE[role], token, path=base, httponly=True, samesite="strict")
    return response


# pages
async def _home(request: Request) -> Response:
    message = "This is a stagewise assessment server: open the address your campaign's administrator gave you."
    return HTMLResponse(pages.message_page(200, message))


async def _static(request: Request) -> Response:
    files = {"campaign.css": (pages.CSS, "text/css"), "campaign.js": (pages.ASSESS_JS, "text/javascript"),
             "admin.js": (pages.ADMIN_JS, "text/javascript")}  # fmt: skip
    found = files.get(request.path_params["file"])
    if found is None:
        raise _Reject(404, "no such file")
    return static_response(request, *found)


async def _assess_page(request: Request) -> Response:
    name = _campaign(request)
    assessor = _assessor(request, name)
    moved = _token_moved_to_cookie(request, name, "assessor")
    return moved or HTMLResponse(pages.assess_page(name, assessor, f"/c/{to_segment(name)}/api"))


async def _admin_page(request: Request) -> Response:
    name = _campaign(request)
    _admin(request, name)
    moved = _token_moved_to_cookie(request, name, "admin")
    return moved or HTMLResponse(pages.admin_page(name, f"/c/{to_segment(name)}/api"))


# the assessor's API
def _view(store: CampaignStore, name: str, assessor: str, item: int | None = None) -> dict[str, Any]:
    """What the page shows: the item (``item``, or the next one in the queue) and the assessor's progress."""
    queue = store.queue(name, assessor)
    done = sum(1 for e in queue if e["judgement"] is not None and e["judgement"] >= 0)
    skipped = sum(1 for e in queue if e["judgement"] == SKIP)
    progress = {"total": len(queue), "labelled": done, "skipped": skipped, "left": len(queue) - done - skipped}
    shown = next_item(queue) if item is None else item
    if shown is None:
        return {"item": None, "progress": progress}
    row = store.item(name, shown)
    settings = store.campaign(name).settings
    text = row["text"]
    view: dict[str, Any] = {
        "item": shown,
        "progress": progress,
        "judgement": next(e["judgement"] for e in queue if e["item"] == shown),
        "query": {"title": row["title"], "description": row["description"], "narrative": row["narrative"]},
        "doc": {
            "id": row["docid"],
            "segments": None if text is None else pages.highlight_segments(text, pages.terms_of(row["title"])),
        },
    }
    if settings.get("show_prelabels"):
        view["prelabel"] = row["prelabel"]
    if not settings.get("blind", True):
        view["pool"] = row["pool"]
    return view


async def _api_next(request: Request) -> Response:
    name = _campaign(request)
    assessor = _assessor(request, name)
    return JSONResponse(await run_in_threadpool(_view, _store(request), name, assessor))


def _judgement_of(body: Any) -> tuple[int, int, float, str | None]:
    shape = '{"item": N, "label": 0..3 or "skip", "spent": seconds, "request": "id"}'
    keys = {"item", "label", "spent"}
    if not isinstance(body, dict) or not keys <= set(body) <= keys | {"request"}:
        raise _Reject(400, f"send {shape}")
    item, label, spent, request = body["item"], body["label"], body["spent"], body.get("request")
    if isinstance(item, bool) or not isinstance(item, int):
        raise _Reject(422, f"item {str(item)[:40]!r} is not an item number; send {shape}")
    if label == "skip":
        label = SKIP
    elif isinstance(label, bool) or label not in (0, 1, 2, 3):
        raise _Reject(422, f'label {str(label)[:40]!r} is not one of 0, 1, 2, 3 or "skip"')
    if isinstance(spent, bool) or not isinstance(spent, int | float) or not math.isfinite(spent):
        raise _Reject(422, f"spent {str(spent)[:40]!r} is not a number of seconds")
    if not 0 <= spent <= MAX_SPENT:
        raise _Reject(422, f"spent {spent} is not a time from 0 to {MAX_SPENT:.0f} seconds")
    if request is not None and (not isinstance(request, str) or not 1 <= len(request) <= 100):
        raise _Reject(422, "request must be a string of 1 to 100 characters (an id the page makes up per key)")
    return item, label, float(spent), request


async def _api_judge(request: Request) -> Response:
    name = _campaign(request)
    assessor = _assessor(request, name)
    item, label, spent, rid = _judgement_of(await _body_json(request, '{"item": N, "label": 0..3, "spent": s}'))
    store = _store(request)
    shown = bool(store.campaign(name).settings.get("show_prelabels"))
    try:
        done = await run_in_threadpool(
            store.judge, name, assessor, item, label, spent=spent, prelabel_shown=shown, request=rid
        )
    except StagewiseError as exc:
        raise _Reject(409 if "another item" in str(exc) else 422, str(exc)) from None
    view = await run_in_threadpool(_view, store, name, assessor)
    return JSONResponse({**done, "item": item, "next": view})


async def _api_undo(request: Request) -> Response:
    name = _campaign(request)
    assessor = _assessor(request, name)
    await _body_json(request, "{}")
    store = _store(request)
    change = await run_in_threadpool(store.undo, name, assessor)
    if change is None:
        raise _Reject(409, "nothing to undo")
    view = await run_in_threadpool(_view, store, name, assessor, change["item"])
    return JSONResponse({**change, "message": f"took back your judgement of {view['doc']['id']}", "next": view})


# the administrator's API
def _admin_data(store: CampaignStore, name: str, base: str) -> dict[str, Any]:
    """The administrator's figures: :func:`~stagewise.assess.campaign_build.campaign_status` as JSON, with each
    assessor's address."""
    from stagewise.assess.campaign_build import campaign_status

    status = campaign_status(store, name)
    tokens = store.tokens(name)
    assessors = [
        {"name": a, **p, "median_spent": status.median_spent[a], "address": f"{base}/?token={tokens[a]}"}
        for a, p in status.progress.items()
    ]
    pairs = [
        {"first": p.first, "second": p.second, "both": p.both,
         **{k: _finite(getattr(p, k)) for k in ("kappa", "kappa_linear", "kappa_quadratic")}}
        for p in (status.agreement.pairs if status.agreement is not None else ())
    ]  # fmt: skip
    note = (
        "Cohen's kappa per pair on the items both labelled (skips left out), graded labels 0-3."
        if status.agreement is not None
        else "Agreement appears once two assessors have labelled items."
    )
    return {
        "campaign": name, "items": status.items, "overlap_items": status.overlap_items, "settings": status.settings,
        "assessors": assessors, "agreement": {"pairs": pairs, "note": note},
    }  # fmt: skip


def _finite(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


async def _api_admin(request: Request) -> Response:
    name = _campaign(request)
    _admin(request, name)
    return JSONResponse(await run_in_threadpool(_admin_data, _store(request), name, f"/c/{to_segment(name)}"))


async def _api_export(request: Request) -> Response:
    from stagewise.assess.campaign_build import export_qrels

    name = _campaign(request)
    _admin(request, name)
    policy = request.query_params.get("merge", "majority")
    try:
        text, _ = await run_in_threadpool(export_qrels, _store(request), name, policy)
    except StagewiseError as exc:
        raise _Reject(422, str(exc)) from None
    filename = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:80] or "campaign"
    headers = {"content-disposition": f'attachment; filename="{filename}.qrels"'}
    return PlainTextResponse(text, headers=headers)


_ROUTES = [
    Route("/", _home),
    Route("/static/{file:str}", _static),
    Route("/c/{campaign:str}/", _assess_page),
    Route("/c/{campaign:str}/admin", _admin_page),
    Route("/c/{campaign:str}/api/next", _api_next),
    Route("/c/{campaign:str}/api/judge", _api_judge, methods=["POST"]),
    Route("/c/{campaign:str}/api/undo", _api_undo, methods=["POST"]),
    Route("/c/{campaign:str}/api/admin", _api_admin),
    Route("/c/{campaign:str}/api/export", _api_export),
]
