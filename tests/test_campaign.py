"""Assessment campaigns: queues and overlap (invariants, with hypothesis), the pool, topic and collection readers,
and the store (judgements, skips, undo, retries, history, merge and agreement against sklearn)."""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagewise.assess.campaign import assign, next_item, read_pool
from stagewise.assess.campaign_build import CampaignOptions, campaign_agreement, create_campaign, export_qrels
from stagewise.data.topics import read_topics
from stagewise.data.trec_documents import document_texts
from stagewise.errors import ConventionError, InputError, StagewiseError
from stagewise.store.campaigns import SKIP, CampaignStore

NAMES = st.lists(st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True), min_size=1, max_size=6, unique=True)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 300), names=NAMES, overlap=st.floats(0, 1), seed=st.integers(0, 2**32), data=st.data())
def test_every_item_is_judged_and_overlap_items_by_several_and_queues_are_balanced(n, names, overlap, seed, data):
    per = data.draw(st.one_of(st.none(), st.integers(2, max(2, len(names))))) if len(names) > 1 else None
    a = assign(n, names, overlap=overlap, seed=seed, per_overlap=per)
    judged = collections.Counter(item for q in a.queues.values() for item, _ in q)
    assert set(judged) == set(range(n))  # every item, nothing else
    shared = {item for item, count in judged.items() if count > 1}
    assert shared == set(a.overlap_items)
    expected = min(n, int(overlap * n + 0.5))
    if overlap > 0 and n:
        expected = max(expected, 1)
    if len(names) > 1:
        assert len(a.overlap_items) == expected
        k = len(names) if per is None else per
        assert all(judged[i] == k for i in a.overlap_items)
    assert all(count == 1 for item, count in judged.items() if item not in a.overlap_items)
    lengths = [len(q) for q in a.queues.values()]
    assert max(lengths) - min(lengths) <= 1
    for queue in a.queues.values():  # the pool's order; no item twice; the overlap flag true
        items = [item for item, _ in queue]
        assert items == sorted(set(items))
        assert all(flag == (item in a.overlap_items) for item, flag in queue)
    assert a == assign(n, list(names), overlap=overlap, seed=seed, per_overlap=per)  # deterministic


def test_another_seed_draws_other_overlap_items():
    draws = {assign(100, ["a", "b"], overlap=0.2, seed=s).overlap_items for s in range(5)}
    assert len(draws) == 5


@pytest.mark.parametrize(
    "names, error",
    [([], "at least one assessor"), (["ann", "ann"], "given twice"), (["a b"], "not allowed"), ([""], "not allowed")],
)
def test_bad_assessor_lists_are_refused(names, error):
    with pytest.raises(ConventionError, match=error):
        assign(3, names)


def test_bad_overlap_and_per_overlap_are_refused():
    with pytest.raises(ConventionError, match="'overlap' parameter"):
        assign(3, ["a", "b"], overlap=1.5)
    with pytest.raises(ConventionError, match="'per_overlap' parameter"):
        assign(3, ["a", "b"], overlap=0.5, per_overlap=3)


def test_next_item_comes_back_to_skipped_items_last():
    queue = [{"item": 1, "judgement": -1}, {"item": 2, "judgement": 0}, {"item": 3, "judgement": None}]
    assert next_item(queue) == 3
    queue[2]["judgement"] = 3
    assert next_item(queue) == 1
    queue[0]["judgement"] = 1
    assert next_item(queue) is None


def test_read_pool_reads_both_layouts_and_names_a_bad_line(tmp_path):
    trec = tmp_path / "pool.txt"
    trec.write_text("q1 Q0 d1 1 0.5 depth(k=10)\nq1 Q0 d2 2 0.25 depth(k=10)\nq2 Q0 d1 1 0.5 depth(k=10)\n")
    assert [(i.query_id, i.doc_id) for i in read_pool(trec)] == [("q1", "d1"), ("q1", "d2"), ("q2", "d1")]
    assert read_pool(trec)[1].note == "pool order 2, priority 0.25"
    jsonl = tmp_path / "pool.jsonl"
    jsonl.write_text(json.dumps({"query_id": "q", "doc_id": 7, "order": 1, "runs": ["r1"]}) + "\n")
    [item] = read_pool(jsonl)
    assert (item.query_id, item.doc_id, item.note) == ("q", "7", 'pool order 1, pool runs ["r1"]')
    trec.write_text("q1 Q0 d1 1 0.5 x\nq1 Q0 d1 2 0.5 x\n")
    with pytest.raises(InputError, match=r"pool.txt:2: document 'd1' of query 'q1' is pooled twice"):
        read_pool(trec)
    trec.write_text("q1 d1\n")
    with pytest.raises(InputError, match=r"pool.txt:1: 2 fields"):
        read_pool(trec)


def test_trec_topics_with_and_without_closing_tags(tmp_path):
    path = tmp_path / "topics.txt"
    path.write_text(
        "<top>\n<num> Number: 301 </num>\n<title> International Organized Crime </title>\n"
        "<desc> Description:\nIdentify organizations.\n</desc>\n<narr> Narrative:\nA relevant document must name "
        "one.\n</narr>\n</top>\n\n<top>\n<num> Number: 302\n<title> Poliomyelitis\n</top>\n"
    )
    topics = read_topics(path)
    assert topics["301"].title == "International Organized Crime"
    assert topics["301"].description == "Identify organizations."
    assert topics["301"].narrative == "A relevant document must name one."
    assert topics["302"].description is None and topics["302"].narrative is None
    path.write_text("<top>\n<title> no number\n</top>\n")
    with pytest.raises(InputError, match=r"topics.txt:1: a <top> block without <num>"):
        read_topics(path)


def test_jsonl_topics_and_trec_documents(tmp_path):
    path = tmp_path / "topics.jsonl"
    path.write_text('{"qid": "1", "title": "cats", "narrative": "any cat"}\n{"id": 2, "query": "dogs"}\n')
    topics = read_topics(path)
    assert topics["1"].narrative == "any cat" and topics["2"].title == "dogs"
    docs = tmp_path / "docs.trec"
    docs.write_text(
        "<DOC>\n<DOCNO> a1 </DOCNO>\n<HEADLINE> Cats </HEADLINE>\n<TEXT>\nCats &lt;3 mice.\n</TEXT>\n</DOC>\n"
        "<DOC>\n<DOCNO>a2</DOCNO>\n<TEXT>dogs</TEXT>\n</DOC>\n"
    )
    assert document_texts(docs, {"a1", "zz"}) == {"a1": "Cats Cats <3 mice."}  # markup gone, entities read
    docs.write_text("<DOC>\n<TEXT>no number</TEXT>\n</DOC>\n")
    with pytest.raises(InputError, match=r"docs.trec:1: a <DOC> without <DOCNO>"):
        document_texts(docs, {"a1"})


def write_campaign_inputs(folder: Path, queries: int = 3, docs: int = 6) -> tuple[Path, Path, Path]:
    """A pool of ``queries`` x ``docs`` items (the last document of each query missing from the collection), the
    topics and a JSONL collection."""
    pool, topics, collection = folder / "pool.txt", folder / "topics.txt", folder / "docs.jsonl"
    with pool.open("w") as fh:
        for q in range(queries):
            for d in range(docs):
                fh.write(f"q{q} Q0 d{q}-{d} {d + 1} {1 / (d + 1):.4f} depth(k={docs})\n")
    topics.write_text(
        "".join(
            f"<top>\n<num> Number: q{q}\n<title> apple banana {q}\n<desc> Description:\nFruit number {q}.\n"
            f"<narr> Narrative:\nDocuments about <b>fruit</b> & trees.\n</top>\n"
            for q in range(queries)
        )
    )
    with collection.open("w") as fh:
        for q in range(queries):
            for d in range(docs - 1):
                fh.write(json.dumps({"_id": f"d{q}-{d}", "text": f"An apple a day <script>x</script> doc {d}."}) + "\n")
    return pool, topics, collection


@pytest.fixture
def made(tmp_path):
    pool, topics, collection = write_campaign_inputs(tmp_path)
    store = CampaignStore(tmp_path / "campaign.sqlite")
    created = create_campaign(
        store, "c1", pool=pool, collection=collection, topics=topics, assessors=["ann", "bob"],
        options=CampaignOptions(overlap=0.5, seed=7),
    )  # fmt: skip
    yield store, created
    store.close()


def test_create_stores_queues_texts_and_missing_documents(made):
    store, created = made
    assert created.items == 18 and created.overlap_items == 9
    assert sorted(created.missing_documents) == ["d0-5", "d1-5", "d2-5"]
    assert created.queue_lengths == {"ann": 14, "bob": 13} or created.queue_lengths == {"ann": 13, "bob": 14}
    campaign = store.campaign("c1")
    assert campaign.assessors == ("ann", "bob") and campaign.settings["blind"] is True
    assert store.assessor_of("c1", created.tokens["bob"]) == "bob"
    assert store.assessor_of("c1", "nope") is None and store.is_admin("c1", created.admin_token)
    assert not store.is_admin("c1", created.tokens["ann"])
    first = store.item("c1", 0)
    assert (first["qid"], first["docid"], first["title"]) == ("q0", "d0-0", "apple banana 0")
    assert first["narrative"] == "Documents about <b>fruit</b> & trees." and "<script>" in first["text"]
    assert store.item("c1", 5)["text"] is None
    with pytest.raises(InputError, match="already holds a campaign named 'c1'"):
        create_campaign(
            store, "c1", pool=campaign.settings["pool"], collection=campaign.settings["collection"],
            topics=campaign.settings["topics"], assessors=["x"],
        )  # fmt: skip


def test_judge_skip_undo_and_a_repeated_request(made):
    store, _ = made
    queue = store.queue("c1", "ann")
    first, second = queue[0]["item"], queue[1]["item"]
    assert store.judge("c1", "ann", first, 2, spent=1.5, request="r1") == {"old": None, "new": 2, "repeated": False}
    assert store.judge("c1", "ann", first, 2, spent=1.5, request="r1")["repeated"] is True  # a retry: once
    store.judge("c1", "ann", second, SKIP, spent=0.5)
    assert next_item(store.queue("c1", "ann")) == queue[2]["item"]
    store.judge("c1", "ann", first, 3, spent=4.0)
    assert store.labels("c1")["ann"] == {"q0": {store.item("c1", first)["docid"]: 3}}
    assert store.undo("c1", "ann") == {"item": first, "old": 3, "new": 2}
    assert store.undo("c1", "ann") == {"item": second, "old": SKIP, "new": None}
    rows = store.history("c1")
    assert [(h["action"], h["old"], h["new"], h["undone"]) for h in rows] == [
        ("label", None, 2, 0), ("skip", None, SKIP, 1), ("label", 2, 3, 1), ("undo", 3, 2, 1), ("undo", SKIP, None, 1),
    ]  # fmt: skip
    restored = store._db.execute("SELECT spent FROM campaign_labels WHERE item = ?", (first,)).fetchone()
    assert restored == (1.5,)  # the label undone back to keeps the time spent it was given with
    assert store.progress("c1")["ann"]["labelled"] == 1
    with pytest.raises(InputError, match="not in ann's queue"):
        store.judge("c1", "ann", 10_000, 1, spent=1)
    assert store.integrity() == "ok"


def test_export_and_agreement_equal_the_merge_policies_and_sklearn(made):
    from sklearn.metrics import cohen_kappa_score

    from stagewise.assess.merge import merge_majority

    store, _ = made
    for assessor, offset in (("ann", 0), ("bob", 1)):
        for n, entry in enumerate(store.queue("c1", assessor)):
            store.judge("c1", assessor, entry["item"], (n * 7 + offset * (n % 3)) % 4, spent=1.0)
    labels = store.labels("c1")
    text, _ = export_qrels(store, "c1", "majority")
    assert text.splitlines()[0] == "# merged by stagewise: campaign c1; policy majority(ties=max); assessors ann, bob"
    lines = {tuple(x.split()[0:3:2]): int(x.split()[3]) for x in text.splitlines()[1:]}
    assert lines == {
        (q, d): lab for q, docs in merge_majority(labels).qrels.to_dict().items() for d, lab in docs.items()
    }
    assert len(lines) == 18
    report = campaign_agreement(store, "c1")
    both = sorted(set(_pairs(labels["ann"])) & set(_pairs(labels["bob"])))
    assert report.pairs[0].both == len(both) == 9
    x = [_pairs(labels["ann"])[p] for p in both]
    y = [_pairs(labels["bob"])[p] for p in both]
    for kappa, weights in ((report.pairs[0].kappa, None), (report.pairs[0].kappa_quadratic, "quadratic")):
        assert kappa == pytest.approx(cohen_kappa_score(x, y, weights=weights))
    with pytest.raises(StagewiseError, match="merge policy"):
        export_qrels(store, "c1", "vote")


def _pairs(labels):
    return {(q, d): lab for q, docs in labels.items() for d, lab in docs.items()}


def test_a_pooled_query_without_a_topic_is_refused_naming_it(tmp_path):
    pool, topics, collection = write_campaign_inputs(tmp_path)
    topics.write_text("<top>\n<num> Number: q0\n<title> apple\n</top>\n")
    store = CampaignStore(tmp_path / "c.sqlite")
    try:
        with pytest.raises(InputError, match=r"no topic for 2 pooled queries: 'q1', 'q2'"):
            create_campaign(store, "c", pool=pool, collection=collection, topics=topics, assessors=["a"])
        assert store.names() == []  # nothing half-made
    finally:
        store.close()


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200), title=st.text(max_size=40))
def test_highlight_segments_give_back_the_text_and_mark_only_the_querys_words(text, title):
    from stagewise.app.campaign_pages import _stem, highlight_segments, terms_of

    terms = terms_of(title)
    segments = highlight_segments(text, terms)
    assert "".join(piece for piece, _ in segments) == text  # nothing lost, nothing added (no markup made here)
    for piece, marked in segments:
        if marked:
            assert re.fullmatch(r"\w+", piece) and _stem(piece) in terms


def test_highlight_marks_plurals_and_case_and_leaves_stop_words():
    from stagewise.app.campaign_pages import highlight_segments, terms_of

    segments = highlight_segments("The Boxes of APPLES and the box of an apple", terms_of("the apple boxes"))
    assert [piece for piece, marked in segments if marked] == ["Boxes", "APPLES", "box", "apple"]


def test_trec_documents_from_a_folder_of_gzipped_and_latin1_files(tmp_path):
    import gzip

    folder = tmp_path / "disk4" / "ft"
    folder.mkdir(parents=True)
    with gzip.open(folder / "ft911_1.gz", "wb") as fh:
        fh.write(b"<DOC>\n<DOCNO> FT911-1 </DOCNO>\n<TEXT>\nLondon &amp; Paris\n</TEXT>\n</DOC>\n" * 1)
        fh.write(b"<DOC><DOCNO>FT911-2</DOCNO><TEXT>two on one line</TEXT></DOC>\n")
    (folder / "ft911_2").write_bytes(b"<DOC>\n<DOCNO>FT911-3</DOCNO>\n<TEXT>caf\xe9 cr\xe8me</TEXT>\n</DOC>\n")
    (tmp_path / "disk4" / ".DS_Store").write_bytes(b"\x00\x01")
    texts = document_texts(tmp_path / "disk4", {"FT911-1", "FT911-2", "FT911-3", "FT911-9"})
    assert texts == {"FT911-1": "London & Paris", "FT911-2": "two on one line", "FT911-3": "café crème"}
    (folder / "ft911_3").write_text("<DOC>\n<DOCNO>FT911-4</DOCNO>\n<TEXT>cut short\n")
    with pytest.raises(InputError, match=r"ft911_3:1: a <DOC> is not closed before the end of the file"):
        document_texts(tmp_path / "disk4", {"FT911-4"})
