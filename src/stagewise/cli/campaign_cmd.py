# ruff: noqa: E501  (a full example command line is longer than a line of code)
"""``stagewise campaign create|serve|status|export``: an assessment campaign from a pool, judged in the web app."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from stagewise.cli.command import StagewiseCommand, reflowed_help
from stagewise.cli.common import check_output, emit, float_option, int_option, usage_error, user_errors

campaign_app = typer.Typer(
    name="campaign",
    help="Assessment campaigns: assessors label a pool in the web app; progress, agreement and merged qrels.",
    no_args_is_help=True,
)

StoreArgument = Annotated[
    Path, typer.Argument(help="The campaign store (SQLite) written by stagewise campaign create.")
]
CampaignOption = Annotated[
    str | None, typer.Option("--campaign", "-c", help="The campaign's name (needed when the store holds several).")
]
DEFAULT_PORT = 8765


def _judge(value: Any) -> Any:
    """--prelabel parsed when the command runs: an unknown judge is the registry's one-line error, exit 2."""
    from stagewise.errors import StagewiseError
    from stagewise.rag.judges import parse_judge

    if value is None:
        return value
    try:
        spec = parse_judge(str(value))
    except StagewiseError as exc:
        raise usage_error(str(exc)) from None
    entry = spec.entry
    if entry.build is None or entry.per_sample or not {"support", "relevance"} & set(entry.tasks):
        raise usage_error(f"judge {entry.name!r} cannot pre-label a document: it {_why_not(entry)}")
    return spec.name


def _why_not(entry: Any) -> str:
    if entry.per_sample:
        return "reads each sample's gold evidence ids, not a text"
    if entry.build is None:
        return "judges nothing by itself"
    return f"answers {', '.join(entry.tasks)}, not relevance or support"


def _prelabeller(name: str) -> tuple[Any, str]:
    """The judge ``name`` as a batch pre-labeller, and the rule that made its answers labels: a relevance judge's
    0-3 grade as it is; a support judge's verdict on the query's title as 1 (supported) or 0 (partial, not)."""
    from stagewise.rag.judges import Passage, parse_judge
    from stagewise.rag.verdicts import UNJUDGED, judge_tasks, relevance_verdicts, support_verdicts

    judge = parse_judge(name).build()
    if "relevance" in judge_tasks(judge):

        def graded(items: list) -> list:
            verdicts = relevance_verdicts(judge, [(q, Passage(d, t)) for q, d, t in items])
            return [None if v.label == UNJUDGED else int(v.label) for v in verdicts]

        return graded, "the judge's relevance grade 0-3"

    def supported(items: list) -> list:
        verdicts = support_verdicts(judge, [([Passage(d, t)], q) for q, d, t in items])
        return [None if v.label == UNJUDGED else int(v.label == "supported") for v in verdicts]

    return supported, "1 when the judge finds the query's title supported by the document, else 0"


def open_campaign(store: Path, campaign: str | None) -> tuple[Any, str]:
    """The store and the campaign's name (the only one when ``campaign`` is None)."""
    from stagewise.errors import InputError
    from stagewise.store.campaigns import open_campaigns

    opened = open_campaigns(store)
    try:
        names = opened.names()
        if campaign is None:
            if len(names) != 1:
                hint = f"its campaigns: {', '.join(names)}" if names else "make one with stagewise campaign create"
                raise InputError(str(store), f"holds {len(names)} campaigns", expected="--campaign NAME", hint=hint)
            campaign = names[0]
        opened.campaign(campaign)  # an unknown name: the store's error, listing the names it holds
    except BaseException:
        opened.close()
        raise
    return opened, campaign


def create_command(
    pool: Annotated[Path, typer.Argument(help="The pool to judge, as stagewise pool writes it (TREC or JSONL).")],
    collection: Annotated[
        Path, typer.Option("--collection", help="The documents' texts: TREC SGML (<DOC><DOCNO>), JSONL, TSV.")
    ],
    topics: Annotated[
        Path, typer.Option("--topics", help="The queries: TREC topics (title, desc, narr), JSONL or TSV.")
    ],
    assessor: Annotated[list[str], typer.Option("--assessor", "-a", help="An assessor's name; repeatable.")],
    store: Annotated[Path, typer.Option("--store", help="The campaign store (SQLite) to write or add to.")],
    name: Annotated[str | None, typer.Option("--name", help="The campaign's name (default: the pool's).")] = None,
    overlap: Annotated[
        float, typer.Option("--overlap", **float_option(0.0, 1.0), help="Share of items judged by several assessors.")
    ] = 0.0,
    per_overlap: Annotated[
        int | None,
        typer.Option("--per-overlap", **int_option(2), help="Assessors per overlap item (default: every assessor)."),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", **int_option(0), help="Seed of the overlap draw and the assignment.")
    ] = 0,
    prelabel: Annotated[
        str | None,
        typer.Option(
            "--prelabel",
            parser=_judge,
            metavar="JUDGE",
            help="Pre-label every item with a judge: a relevance judge's grade 0-3, or a support judge's verdict "
            "on the query's title (1 supported, else 0); hidden unless --show-prelabels. "
            "{names:stagewise.rag.judges:JUDGES}.",
        ),
    ] = None,
    show_prelabels: Annotated[
        bool, typer.Option("--show-prelabels", help="Show the judge's pre-label to assessors (recorded per label).")
    ] = False,
    blind: Annotated[
        bool, typer.Option("--blind/--no-blind", help="Hide the pool's order, priority and runs (default: hidden).")
    ] = True,
    port: Annotated[
        int, typer.Option("--port", **int_option(1, 65535), help="The port the printed addresses assume.")
    ] = DEFAULT_PORT,
) -> None:
    """Make an assessment campaign: a queue per assessor over the pool, with a seeded share of items judged by
    several assessors so that their agreement can be measured.

    Prints each assessor's address with their token, and the administrator's (keep it: it shows the assessors'
    addresses again). Every pooled query needs a topic; a pooled document missing from the collection is kept,
    and its page says the text is missing.

    Examples:

        stagewise pool robust03.qrels runs/* --strategy depth:10 -o pool.txt
        stagewise campaign create pool.txt --collection docs.trec --topics topics.txt -a alice -a bob --overlap 0.2 --seed 7 --store campaign.sqlite
        stagewise campaign serve campaign.sqlite
    """
    with user_errors():
        from stagewise.errors import InputError

        if show_prelabels and prelabel is None:
            raise InputError("--show-prelabels", "has no pre-labels to show", hint="add --prelabel JUDGE")
        check_output(store, [pool, collection, topics], option="--store")
        from stagewise.assess.campaign_build import CampaignOptions, prepare_campaign
        from stagewise.store.campaigns import CampaignStore
        from stagewise.store.lock import writer_lock

        options = CampaignOptions(overlap, seed, per_overlap, blind, show_prelabels)
        labeller, rule = _prelabeller(prelabel) if prelabel else (None, None)
        prepared = prepare_campaign(  # every input read before the store is touched
            name or pool.name.split(".")[0], pool=pool, collection=collection, topics=topics, assessors=assessor,
            options=options, prelabel=labeller, prelabel_name=prelabel, prelabel_rule=rule,
        )  # fmt: skip
        lock = writer_lock(store)  # refused while a server holds the store
        try:
            opened = CampaignStore(store)
            try:
                made = prepared.write(opened)
            finally:
                opened.close()
        finally:
            lock.release()
        _print_created(made, store, port)


def _print_created(made: Any, store: Path, port: int) -> None:
    from stagewise.app.ids import to_segment

    base = f"http://127.0.0.1:{port}/c/{to_segment(made.name)}"
    width = max(len(a) for a in [*made.tokens, "admin"])
    for assessor, token in made.tokens.items():
        typer.echo(f"{assessor:<{width}}  {base}/?token={token}")
    typer.echo(f"{'admin':<{width}}  {base}/admin?token={made.admin_token}")
    queues = ", ".join(f"{a} {n:,}" for a, n in made.queue_lengths.items())
    typer.echo(
        f"made campaign {made.name} in {store}: {made.items:,} items, {made.overlap_items:,} of them judged by "
        f"several assessors; queues {queues}",
        err=True,
    )
    if made.missing_documents:
        shown = ", ".join(made.missing_documents[:5]) + (" ..." if len(made.missing_documents) > 5 else "")
        typer.echo(
            f"note: {len(made.missing_documents):,} pooled documents are not in the collection ({shown}); "
            "their pages say the text is missing",
            err=True,
        )
    typer.echo(
        f"serve it with: stagewise campaign serve {store}" + (f" --port {port}" if port != DEFAULT_PORT else "")
        + " (the addresses above assume 127.0.0.1; with --host, replace it)",
        err=True,
    )  # fmt: skip


def serve_command(
    store: StoreArgument,
    campaign: CampaignOption = None,
    host: Annotated[str, typer.Option("--host", help="Address to bind (every request needs a token).")] = ("127.0.0.1"),
    port: Annotated[
        int, typer.Option("--port", **int_option(0, 65535), help="Port to listen on (0: a free one, printed).")
    ] = DEFAULT_PORT,
) -> None:
    """Serve the store's campaigns: each assessor's page (keyboard labelling: 0-3, s skip, u undo) and the
    administrator's page (progress, agreement as it grows, the export).

    Prints the administrator's address; the assessors' addresses are on that page (and were printed by stagewise
    campaign create). Every label is on disk when the page moves on; stop with Ctrl-C (or kill it: nothing
    acknowledged is lost) and serve again to resume.

    Examples:

        stagewise campaign serve campaign.sqlite
        stagewise campaign serve campaign.sqlite --host 0.0.0.0 --port 8080
    """
    with user_errors():
        from stagewise.cli.common import check_serving
        from stagewise.store.lock import writer_lock

        if not store.is_file():
            from stagewise.errors import InputError

            raise InputError(str(store), "no such campaign store", hint="make one with stagewise campaign create")
        lock = writer_lock(store)  # before the database is opened: a second server changes nothing
        try:
            opened, name = open_campaign(store, campaign)
        except BaseException:
            lock.release()
            raise
        from stagewise.app.campaign import create_campaign_app
        from stagewise.app.ids import to_segment
        from stagewise.cli.serve_cmd import run_server

        admin = opened.admin_token(name)
        try:
            check_serving(host, port, admin)  # every request needs a token, so any address may be bound
        except BaseException:
            opened.close()
            lock.release()
            raise
        others = [n for n in opened.names() if n != name]
        typer.echo(
            f"stagewise campaign serve: campaign {name} of {store}"
            + (f" (and {', '.join(others)}: --campaign NAME prints theirs)" if others else "")
            + "; the administrator's page below lists each assessor's address",
            err=True,
        )
        run_server(
            create_campaign_app(opened), [opened], host=host, port=port, first=f"c/{to_segment(name)}/admin",
            token=admin,
        )  # fmt: skip


def status_command(
    store: StoreArgument,
    campaign: CampaignOption = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table or json.")] = "table",
) -> None:
    """Where a campaign stands: each assessor's progress and time per label, and the agreement so far (Cohen's
    kappa per pair on the items both labelled, Fleiss' kappa, Krippendorff's alpha). Reads the store while it
    is served.

    Examples:

        stagewise campaign status campaign.sqlite
        stagewise campaign status campaign.sqlite --campaign pool --format json
    """
    with user_errors():
        from stagewise.report.campaign import FORMATS, render

        if fmt not in FORMATS:
            raise usage_error(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
        from stagewise.assess.campaign_build import campaign_status

        opened, name = open_campaign(store, campaign)
        try:
            status = campaign_status(opened, name)
        finally:
            opened.close()
        typer.echo(render(status, fmt), nl=False)


def export_command(
    store: StoreArgument,
    campaign: CampaignOption = None,
    merge: Annotated[
        str,
        typer.Option(
            "--merge",
            "-m",
            metavar="POLICY",
            help="How the assessors' labels merge, in the spec grammar: "
            "{entries:stagewise.assess.catalogue:MERGE_POLICIES}.",
        ),
    ] = "majority",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the qrels to this file (atomically), not stdout.")
    ] = None,
) -> None:
    """Export a campaign's labels as TREC qrels, merged by a policy that a '#' header line names (with the
    campaign and the assessors; trec_eval and stagewise skip it). Skipped items are not labels.

    Examples:

        stagewise campaign export campaign.sqlite --merge majority -o qrels.txt
        stagewise campaign export campaign.sqlite --merge 'adjudicator(name=alice)' -o qrels.txt
    """
    with user_errors():
        from stagewise.assess.catalogue import parse_policy

        policy = str(parse_policy(merge))  # before the store is opened: a bad policy is a one-line error
        check_output(output, [store])
        from stagewise.assess.campaign_build import export_qrels

        opened, name = open_campaign(store, campaign)
        try:
            text, merged = export_qrels(opened, name, policy)
        finally:
            opened.close()
        emit(text, output, f"TREC qrels, {len(merged.qrels):,} judgements, campaign {name}, policy {merged.policy}")


for _name, _func in (
    ("create", create_command),
    ("serve", serve_command),
    ("status", status_command),
    ("export", export_command),
):
    campaign_app.command(_name, cls=StagewiseCommand, help=reflowed_help(_func))(_func)
