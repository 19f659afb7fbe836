"""``stagewise serve [--qrels Q] [--run R...] [--rag RECORDS] [--db labels.sqlite] [--host H] [--port P] [--token T]``,
``stagewise serve --playground``, ``stagewise labels export --db D -o qrels.txt``, ``stagewise labels backup DB OUT``.

The server (:func:`run_server`) holds each database's writer lock while it serves, stops cleanly on SIGINT, SIGTERM
and SIGHUP (the labels checkpointed into the database file), and closes a connection whose request is not read in
full within :data:`REQUEST_READ_TIMEOUT` seconds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from stagewise.cli.common import check_output, check_serving, int_option, run_labels, serve_app, user_errors

labels_app = typer.Typer(name="labels", help="Labels kept by stagewise serve.", no_args_is_help=True)


def serve_command(
    qrels: Annotated[
        str | None, typer.Option("--qrels", "-q", help="Judgements to start from (never modified).")
    ] = None,
    run: Annotated[list[str] | None, typer.Option("--run", "-r", help="A run to show; repeatable.")] = None,
    corpus: Annotated[
        str | None,
        typer.Option(
            "--corpus", help="Documents (BEIR folder, JSONL, TSV) to show beside each result and RAG passage."
        ),
    ] = None,
    queries: Annotated[
        str | None, typer.Option("--queries", help="Query texts (BEIR folder, JSONL, TSV) to show and search.")
    ] = None,
    rag: Annotated[str | None, typer.Option("--rag", help="RAG records (JSONL) to browse by sample.")] = None,
    judge_audit: Annotated[
        list[str] | None,
        typer.Option(
            "--judge-audit",
            help="With --rag: an audit of a judge against people's labels (the JSON of stagewise judge audit "
            "--format json), shown beside every label that judge gave, with a page of its own; repeatable. "
            "Example: stagewise judge audit claims.jsonl --judge lexical -f json -o lexical.json; "
            "stagewise serve --rag answers.jsonl --judge-audit lexical.json",
        ),
    ] = None,
    db: Annotated[Path, typer.Option("--db", help="SQLite file holding the labels and their history.")] = Path(
        "labels.sqlite"
    ),
    host: Annotated[str, typer.Option("--host", help="Address to bind; other than loopback needs --token.")] = (
        "127.0.0.1"
    ),
    port: Annotated[
        int, typer.Option("--port", **int_option(0, 65535), help="Port to listen on (0: a free one, printed).")
    ] = 8765,
    token: Annotated[str | None, typer.Option("--token", help="Every request must carry this token.")] = None,
    playground: Annotated[bool, typer.Option("--playground", help="Serve the lesson's playground alone.")] = False,
) -> None:
    """Browse rankings, relabel results by clicking, and watch every metric change (a local web app)."""
    from stagewise.errors import InputError

    with user_errors():
        check_serving(host, port, token)
        # --corpus also gives the RAG page the texts of passages no record holds
        shown = (("--run", run), ("--corpus", corpus if rag is None or playground else None), ("--queries", queries))
        unused = [name for name, given in shown if given]
        if (playground or qrels is None) and unused:
            raise InputError(
                unused[0],
                "is only shown with --qrels" + (", not with --playground" if playground else ""),
                hint="add --qrels Q (the judgements the runs are scored against)",
            )
        if playground and (qrels is not None or rag is not None):
            raise InputError("--playground", "serves the lesson's playground alone", hint="leave out --qrels and --rag")
        if not playground and qrels is None and rag is None:
            raise InputError(
                "stagewise serve",
                "nothing to serve",
                hint="give --qrels Q [--run R...], --rag RECORDS, or --playground",
            )
        if judge_audit and rag is None:
            raise InputError("--judge-audit", "is shown on the RAG pages", hint="give --rag RECORDS too")
        from stagewise.app.audits import JudgeAudits
        from stagewise.app.open import open_rag, rag_db
        from stagewise.store.lock import writer_lock

        audits = JudgeAudits.read(judge_audit or [])  # a bad file is refused before any database is opened

        workspace = None
        records = None
        locks = []
        try:
            if not playground:
                if qrels is not None:
                    check_output(db, [qrels, rag, corpus, queries, *(run or [])], option="--db")
                    locks.append(writer_lock(db))  # before the database is opened: a second server changes nothing
                    workspace = build_workspace(qrels, run or [], db, corpus=corpus, queries=queries)
                if rag:
                    check_output(rag_db(db), [qrels, rag, corpus, *(run or []), *(judge_audit or [])], option="--db")
                    locks.append(writer_lock(rag_db(db)))
                    records = open_rag(rag, db, corpus=corpus)
                    records.audits = audits
        except BaseException:
            for part in (workspace, records):
                if part is not None:
                    part.store.close()
            for lock in locks:
                lock.release()
            raise
        first = "playground" if playground else "queries" if workspace is not None else "rag"
        serve_app(workspace, records, host=host, port=port, token=token, first=first)


def build_workspace(qrels: str, runs: list[str], db: Path, corpus: str | None = None, queries: str | None = None):
    """:func:`stagewise.app.open.open_workspace` with each run named by its path, as the CLI names runs."""
    from stagewise.app.open import open_workspace

    names = run_labels(runs) if runs else []
    return open_workspace(qrels, dict(zip(names, runs, strict=True)), db, corpus=corpus, queries=queries)


@labels_app.command("export")
def export_command(
    db: Annotated[Path, typer.Option("--db", help="The label database written by stagewise serve.")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="The qrels file to write: TREC, or .jsonl / .parquet by its name.")
    ],
) -> None:
    """Write the current labels as qrels: TREC (``qid 0 docid label``), or JSONL or Parquet by the file's name."""
    from stagewise.data.readers import read_qrels
    from stagewise.data.writers import write_qrels
    from stagewise.errors import InputError
    from stagewise.store.labels import LabelStore

    with user_errors():
        if not db.is_file():
            raise InputError(str(db), "no such label database", hint="give --db the file stagewise serve wrote")
        check_output(output, [db])
        store = LabelStore(db)
        try:
            labels = store.labels()
        finally:
            store.close()
        if not labels:
            raise InputError(str(db), "holds no labels", hint="label some results in stagewise serve first")
        # the writers' checks: an id with white space or a leading # cannot be a TREC line (use .jsonl)
        write_qrels(read_qrels(labels), output)
        kind = {".jsonl": "JSONL", ".parquet": "Parquet"}.get(output.suffix.lower(), "TREC qrels")
        rows = sum(map(len, labels.values()))
        typer.echo(f"wrote {output} ({rows:,} labels of {len(labels):,} queries, {kind})", err=True)


@labels_app.command("backup")
def backup_command(
    db: Annotated[Path, typer.Argument(help="The label database written by stagewise serve.")],
    output: Annotated[Path, typer.Argument(help="The copy to write: one SQLite file, no -wal beside it.")],
) -> None:
    """Copy a label database into one consistent file (SQLite's backup API), even while stagewise serve runs."""
    from stagewise._io import atomic_path, write_errors
    from stagewise.errors import InputError
    from stagewise.store.labels import backup

    with user_errors():
        if not db.is_file():
            raise InputError(str(db), "no such label database", hint="give the file stagewise serve wrote")
        check_output(output, [db], option="OUT")
        with write_errors(output), atomic_path(output, parents=False) as tmp:
            counts = backup(db, tmp)
        typer.echo(f"wrote {output} ({counts['labels']:,} labels, {counts['history']:,} history rows)", err=True)


REQUEST_READ_TIMEOUT = 10.0  # seconds for a request's headers and body to arrive, from its first byte on
KEEP_ALIVE_TIMEOUT = 5.0  # seconds an idle keep-alive connection stays open (uvicorn's own default)
MAX_INCOMPLETE_EVENT = 16 * 1024  # bytes of a request's headers held while they arrive (uvicorn's default)


def run_server(app: Any, stores: list[Any], *, host: str, port: int, first: str, token: str | None) -> None:
    """Serve ``app`` on ``host:port`` (0: a free port) until a signal stops it, holding the writer lock of every
    label store in ``stores``; on SIGINT, SIGTERM or SIGHUP the stores are checkpointed and closed, so each
    database file alone holds every label acknowledged."""
    import urllib.parse

    import uvicorn

    from stagewise.store.lock import writer_lock

    sock = _bind(host, port)
    locks = []
    try:
        locks = [writer_lock(store.path) for store in stores]
        shown = f"[{host}]" if ":" in host else host
        where = f"http://{shown}:{sock.getsockname()[1]}/{first}"
        for lock in locks:
            lock.write(where)
            if not lock.supported:
                typer.echo(f"stagewise serve: note: no file locks here; serve {lock.db} from one server only", err=True)
        query = f"?token={urllib.parse.quote(token, safe='')}" if token else ""
        typer.echo(f"stagewise serve: {where}{query}", err=True)
        config = uvicorn.Config(
            app,
            host=host,
            port=sock.getsockname()[1],
            log_level="warning",
            http=_timed_protocol(),
            loop="auto",  # uvloop when it is installed (the app extra installs it), else asyncio's own
            timeout_keep_alive=KEEP_ALIVE_TIMEOUT,
            h11_max_incomplete_event_size=MAX_INCOMPLETE_EVENT,
        )
        server = _stopping_server()(config)
        server.run(sockets=[sock])
    finally:
        for store in stores:
            store.close()  # checkpoints: the database file alone holds every label
        for lock in locks:
            lock.release()
        sock.close()
    if server.stopped_by is not None:
        import signal

        files = ", ".join(str(store.path) for store in stores)
        typer.echo(
            f"stagewise serve: stopped ({signal.Signals(server.stopped_by).name})"
            + (f"; every label is in {files}" if files else ""),
            err=True,
        )


def _bind(host: str, port: int) -> Any:
    """A socket bound to ``host:port`` (not yet listening), kept for the server: the port printed and locked is
    the one served, 0 included."""
    import socket

    from stagewise.errors import InputError

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except OSError as exc:
        raise InputError("--host", f"{host} cannot be bound ({exc})", hint="give an address of this machine") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a TIME_WAIT is no error
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise InputError(
            "--port", f"{host}:{port} cannot be bound ({exc.strerror})", hint="choose another --port, or 0"
        ) from None
    return sock


def _stopping_server() -> type:
    """uvicorn's Server stopping on SIGINT, SIGTERM and SIGHUP and then returning. uvicorn's own handler sends
    SIGTERM to itself again once stopped, which ends the process before any store is closed (the labels were
    left in the -wal file), and it does not handle SIGHUP (a closed terminal killed the server outright)."""
    import signal
    import threading

    import uvicorn

    class StoppingServer(uvicorn.Server):
        stopped_by: int | None = None

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            wanted = [getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)]
            before = {sig: signal.signal(sig, self._stop) for sig in wanted}
            try:
                yield
            finally:
                for sig, handler in before.items():
                    signal.signal(sig, handler)

        def _stop(self, sig: int, frame: Any) -> None:
            self.stopped_by = sig
            self.handle_exit(sig, frame)

    return StoppingServer


def _timed_protocol() -> type:
    """uvicorn's HTTP protocol with a deadline for reading a request: a connection that opens and sends nothing,
    or sends half its headers or body, is closed :data:`REQUEST_READ_TIMEOUT` seconds after its first byte (or
    after it opened). uvicorn 0.54 has no header-read timeout of its own: ``timeout_keep_alive`` runs only
    between requests and stops at the first byte, ``h11_max_incomplete_event_size`` bounds the bytes, not time.

    The parser is httptools (C, llhttp) when it is installed (the app extra installs it): h11, uvicorn's
    pure-Python parser, took half the event loop's time for a relabel. Without it, h11 as before."""
    try:
        import httptools  # noqa: F401
    except ImportError:
        return _timed_h11()
    return _timed_httptools()


class _Deadline:
    """The read deadline both protocols share (mixed into a uvicorn protocol, which has ``loop`` and
    ``transport``): armed when a connection opens and at a request's first byte, disarmed once it is all in."""

    _deadline: Any = None

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(REQUEST_READ_TIMEOUT, self._too_slow)  # type: ignore[attr-defined]

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        transport = self.transport  # type: ignore[attr-defined]
        if not transport.is_closing():
            transport.close()


def _timed_httptools() -> type:
    """uvicorn's httptools protocol with the read deadline, and a bound on the bytes of a request's head
    (:data:`MAX_INCOMPLETE_EVENT`, as h11's ``max_incomplete_event_size``: llhttp itself holds no limit, and
    uvicorn keeps every header it is sent)."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class TimedHttpToolsProtocol(_Deadline, HttpToolsProtocol):
        _in_head = False  # a request's head has begun and is not complete
        _head_bytes = 0  # bytes received while a head was incomplete (a chunk that completes one is not counted)

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._in_head:  # counted after parsing: this chunk may be the one that began the request
                self._head_bytes += len(data)
                if self._head_bytes > MAX_INCOMPLETE_EVENT and not self.transport.is_closing():
                    self._disarm()
                    self.send_400_response(f"Request head larger than {MAX_INCOMPLETE_EVENT} bytes.")

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._in_head, self._head_bytes = True, 0
            if self._deadline is None:
                self._arm()  # the first byte of the next request on a kept-alive connection

        def on_headers_complete(self) -> None:
            self._in_head = False
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._disarm()  # the whole request is in
            super().on_message_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return TimedHttpToolsProtocol


def _timed_h11() -> type:
    """uvicorn's h11 protocol with the read deadline (h11 bounds the head's bytes itself)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class TimedH11Protocol(_Deadline, H11Protocol):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._deadline is None and self.conn.their_state is h11.IDLE:
                self._arm()  # the first byte of the next request on a kept-alive connection
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE and self.conn.their_state is not h11.SEND_BODY:
                self._disarm()  # the whole request is in (or the connection is ending)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return TimedH11Protocol
