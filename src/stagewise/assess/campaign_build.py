"""Assessment campaigns, the part that reads files and writes the store: a campaign made from a pool, a collection,
topics and assessors (:func:`create_campaign`); its labels merged into qrels (:func:`export_qrels`); and the
agreement between its assessors (:func:`campaign_agreement`), through :mod:`stagewise.assess.merge` and
:mod:`stagewise.assess.summary`, as for qrels files.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stagewise.assess.campaign import assign, check_assessors, merged_text, read_pool
from stagewise.errors import InputError, parameter_error
from stagewise.store.campaigns import CampaignStore

__all__ = [
    "CampaignOptions",
    "CampaignStatus",
    "Created",
    "campaign_agreement",
    "campaign_status",
    "create_campaign",
    "export_qrels",
    "new_token",
    "prepare_campaign",
]

#: A judge's pre-labels of a batch of items, ``[(query title, doc id, document text), ...]`` -> one label 0..3 (or
#: None: the judge could not answer) per item, in order.
Prelabeller = Callable[[list[tuple[str, str, str]]], list[int | None]]


def new_token() -> str:
    """A fresh token: 24 URL-safe characters (144 random bits), safe in a header, a cookie and a URL."""
    return secrets.token_urlsafe(18)


@dataclass(frozen=True)
class CampaignOptions:
    """How a campaign hands out its items: ``overlap`` (the share judged by several assessors), ``seed``,
    ``per_overlap`` (assessors per overlap item; None: all), ``blind`` (no pool order, priority or runs shown)
    and ``show_prelabels`` (the judge's pre-labels shown to assessors; hidden by default)."""

    overlap: float = 0.0
    seed: int = 0
    per_overlap: int | None = None
    blind: bool = True
    show_prelabels: bool = False


@dataclass(frozen=True)
class Created:
    """What :func:`create_campaign` made: the campaign's name, each assessor's token, the administrator's token,
    the counts (items, overlap items, queue lengths) and what the inputs lacked (documents without a text)."""

    name: str
    tokens: dict[str, str]
    admin_token: str
    items: int
    overlap_items: int
    queue_lengths: dict[str, int]
    missing_documents: list[str] = field(default_factory=list)


def _topics_for(topics_path: str | Path, queries: Sequence[str]) -> dict[str, tuple[str, str | None, str | None]]:
    from stagewise.data.topics import read_topics

    topics = read_topics(topics_path)
    lacking = [q for q in dict.fromkeys(queries) if q not in topics]
    if lacking:
        shown = ", ".join(repr(q) for q in lacking[:5]) + (f" and {len(lacking) - 5} more" if len(lacking) > 5 else "")
        raise InputError(
            os.fspath(topics_path),
            f"has no topic for {len(lacking)} pooled quer{'y' if len(lacking) == 1 else 'ies'}: {shown}",
            hint="an assessor cannot judge a document without its query; give the topics of every pooled query",
        )
    return {q: (topics[q].title, topics[q].description, topics[q].narrative) for q in dict.fromkeys(queries)}


@dataclass(frozen=True)
class Prepared:
    """A campaign read and assigned, not yet stored: :meth:`write` stores it (one transaction)."""

    name: str
    rows: dict[str, Any]
    created: Created

    def write(self, store: CampaignStore) -> Created:
        store.create(self.name, **self.rows)
        return self.created


def prepare_campaign(
    name: str,
    *,
    pool: str | Path,
    collection: str | Path,
    topics: str | Path,
    assessors: Sequence[str],
    options: CampaignOptions = CampaignOptions(),
    prelabel: Prelabeller | None = None,
    prelabel_name: str | None = None,
    prelabel_rule: str | None = None,
) -> Prepared:
    """Read the pool, the topics and the pooled documents' texts and assign the queues, writing nothing (so a bad
    input leaves no store behind); :func:`create_campaign` also stores it. See there for the rules."""
    from stagewise.data.trec_documents import document_texts

    if not name or len(name) > 200:
        raise parameter_error("name", "create_campaign", "a non-empty name of at most 200 characters", name)
    names = check_assessors(assessors)
    items = read_pool(pool)
    assignment = assign(len(items), names, overlap=options.overlap, seed=options.seed, per_overlap=options.per_overlap)
    topic_rows = _topics_for(topics, [i.query_id for i in items])
    wanted = {i.doc_id for i in items}
    texts: dict[str, str | None] = dict(document_texts(collection, wanted))
    missing = sorted(wanted - set(texts))
    texts.update(dict.fromkeys(missing))
    marks = None if prelabel is None else _prelabels(prelabel, items, topic_rows, texts)
    tokens = {a: new_token() for a in names}
    admin = new_token()
    settings: dict[str, Any] = {
        "pool": os.fspath(pool), "collection": os.fspath(collection), "topics": os.fspath(topics),
        "overlap": options.overlap, "seed": options.seed, "per_overlap": options.per_overlap,
        "blind": options.blind, "prelabels": prelabel_name if prelabel is not None else None,
        "prelabel_rule": prelabel_rule if prelabel is not None else None,
        "show_prelabels": bool(options.show_prelabels and prelabel is not None),
        "items": len(items), "overlap_items": len(assignment.overlap_items),
    }  # fmt: skip
    rows = {
        "items": [(i.query_id, i.doc_id, i.note) for i in items], "queues": assignment.queues, "tokens": tokens,
        "admin_token": admin, "topics": topic_rows, "documents": texts, "settings": settings, "prelabels": marks,
    }  # fmt: skip
    lengths = {a: len(q) for a, q in assignment.queues.items()}
    created = Created(name, tokens, admin, len(items), len(assignment.overlap_items), lengths, missing)
    return Prepared(name, rows, created)


def _prelabels(
    prelabel: Prelabeller, items: Sequence[Any], topics: dict[str, tuple[str, Any, Any]], texts: dict[str, str | None]
) -> list[int | None]:
    """One pre-label per item (None where the document has no text or the judge could not answer), the judge
    asked once for the whole batch."""
    asked = [n for n, item in enumerate(items) if texts[item.doc_id] is not None]
    answers = prelabel([(topics[items[n].query_id][0], items[n].doc_id, texts[items[n].doc_id] or "") for n in asked])
    if len(answers) != len(asked):
        raise InputError("prelabel", f"gave {len(answers)} labels for {len(asked)} items", expected="one per item")
    marks: list[int | None] = [None] * len(items)
    for n, label in zip(asked, answers, strict=True):
        if label is not None and (isinstance(label, bool) or label not in (0, 1, 2, 3)):
            raise InputError("prelabel", f"gave the label {label!r}", expected="0, 1, 2, 3 or None")
        marks[n] = label
    return marks


def create_campaign(store: CampaignStore, name: str, **inputs: Any) -> Created:
    """Read the pool, the topics and the pooled documents' texts, assign the queues and store the campaign
    (keywords: ``pool``, ``collection``, ``topics``, ``assessors``, ``options`` (:class:`CampaignOptions`),
    ``prelabel``, ``prelabel_name`` and ``prelabel_rule`` (how the judge's answers became labels), as
    :func:`prepare_campaign` takes them).

    Every pooled query must have a topic (an :class:`InputError` names those that do not); a pooled document
    missing from the collection is stored without a text (the page says so) and listed in the result.
    ``prelabel`` (a judge's batch, named ``prelabel_name``) labels every item whose document has a text."""
    return prepare_campaign(name, **inputs).write(store)


def _labelled(store: CampaignStore, name: str) -> dict[str, dict[str, dict[str, int]]]:
    return {a: labels for a, labels in store.labels(name).items() if labels}


def export_qrels(store: CampaignStore, name: str, policy: str = "majority") -> tuple[str, Any]:
    """The campaign's labels merged by ``policy`` (:data:`~stagewise.assess.catalogue.MERGE_POLICIES`, in the spec
    grammar) as TREC qrels text under a header naming the campaign, the policy and the assessors; and the
    :class:`~stagewise.assess.merge.Merged` itself. Skipped items are not labels; an item one assessor judged
    keeps that label under every policy but ``adjudicator``."""
    from stagewise.assess.catalogue import merge, parse_policy

    chosen = parse_policy(policy)  # before the store is read: a bad policy is the policy's own error
    labels = _labelled(store, name)
    if not labels:
        raise InputError(os.fspath(store.path), f"campaign {name!r} has no labels yet", hint="label some items first")
    merged = merge(labels, chosen)
    return merged_text(merged, name), merged


def campaign_agreement(store: CampaignStore, name: str, *, relevance_level: int | None = None) -> Any:
    """The :class:`~stagewise.assess.summary.AgreementReport` of the campaign's assessors (those with a label),
    as ``stagewise agreement`` gives for qrels files: Cohen's kappa per pair on the items both labelled, Fleiss'
    kappa, Krippendorff's alpha, per-assessor figures."""
    from stagewise.assess.summary import agreement_report

    labels = _labelled(store, name)
    if len(labels) < 2:
        raise InputError(
            os.fspath(store.path),
            f"campaign {name!r} has labels from {len(labels)} assessor{'' if len(labels) == 1 else 's'}",
            expected="labels from two assessors or more to measure agreement",
        )
    return agreement_report(labels, relevance_level=relevance_level)


@dataclass(frozen=True)
class CampaignStatus:
    """Where a campaign stands: its settings, item counts, each assessor's progress (``total``, ``labelled``,
    ``skipped``, ``left``), the median seconds spent per label, and the agreement so far (None until two
    assessors have labels)."""

    name: str
    settings: dict[str, Any]
    items: int
    overlap_items: int
    progress: dict[str, dict[str, int]]
    median_spent: dict[str, float | None]
    agreement: Any


def campaign_status(store: CampaignStore, name: str) -> CampaignStatus:
    """The :class:`CampaignStatus` of campaign ``name``."""
    import statistics

    from stagewise.errors import StagewiseError

    campaign = store.campaign(name)
    progress = store.progress(name)
    spent: dict[str, list[float]] = {a: [] for a in campaign.assessors}
    for row in store.history(name):
        if row["action"] == "label" and not row["undone"]:
            spent[row["assessor"]].append(row["spent"])
    try:
        agreement = campaign_agreement(store, name)
    except StagewiseError:
        agreement = None
    settings = dict(campaign.settings)
    return CampaignStatus(
        name,
        settings,
        int(settings.pop("items")),
        int(settings.pop("overlap_items")),
        {a: progress[a] for a in campaign.assessors},
        {a: statistics.median(v) if v else None for a, v in spent.items()},
        agreement,
    )
