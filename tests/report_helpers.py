"""Small inputs for the HTML report's tests, and a standard-library parse of the page."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import numpy as np

QUERIES = [f"q{i}" for i in range(1, 9)]


def report_page(*args: Any, title: str | None = None, digits: int = 4, lead: Any = (), **options: Any) -> str:
    """The HTML report as the library makes it: ``stagewise.study(*args, **options)``, then
    ``stagewise.report.html.render`` (which computes nothing) with ``title``, ``digits`` and ``lead``."""
    import stagewise
    from stagewise.report.html import render

    return render(stagewise.study(*args, **options), title=title, digits=digits, lead=lead)


def small_inputs(seed: int = 3) -> tuple[dict, dict]:
    """Qrels for 8 queries and three runs of 30 documents each, random but fixed by ``seed``."""
    rng = np.random.default_rng(seed)
    qrels = {q: {f"d{j}": int(rng.integers(0, 3)) for j in range(0, 40, 3)} for q in QUERIES}
    runs = {}
    for name in ("bm25", "dense", "hybrid"):
        runs[name] = {q: {f"d{j}": float(rng.random()) for j in rng.permutation(60)[:30]} for q in QUERIES}
    return qrels, runs


RAG_RECORDS = [
    {
        "id": "r1",
        "retrieved": ["p3", "p9", "p1"],
        "context": ["p3", "p9"],
        "gold_evidence": ["p9"],
        "answer": "Jane Austen wrote it [p9].",
        "gold_answers": ["Jane Austen"],
    },
    {"id": "r2", "retrieved": ["p1", "p2"], "gold_evidence": ["p8"], "answer": "Dickens", "gold_answers": ["Austen"]},
    {"id": "r3", "retrieved": ["p5"], "answer": "I don't know.", "gold_answers": []},
    {"id": "r4", "retrieved": ["p6"], "gold_evidence": ["p6"], "answer": "Persuasion [p6]", "gold_answers": ["Emma"]},
    {"id": "r5", "retrieved": ["p7", "p4"], "gold_evidence": ["p4"], "answer": "Emma", "gold_answers": ["Emma"]},
]


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node] = []
        self.text: list[str] = []

    def all(self, tag: str) -> list[Node]:
        out = []
        for c in self.children:
            if c.tag == tag:
                out.append(c)
            out.extend(c.all(tag))
        return out

    def first(self, tag: str) -> Node:
        found = self.all(tag)
        assert found, f"no <{tag}> under <{self.tag}>"
        return found[0]

    def content(self) -> str:
        return "".join(self.text) + "".join(c.content() for c in self.children)

    def by_id(self, ident: str) -> Node:
        for c in self.walk():
            if c.attrs.get("id") == ident:
                return c
        raise AssertionError(f"no element with id {ident!r}")

    def walk(self) -> list[Node]:
        out = [self]
        for c in self.children:
            out.extend(c.walk())
        return out


_VOID = {"meta", "input", "br", "img", "link", "hr", "wbr", "source", "col"}


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {}, None)
        self.cur = self.root
        self.mismatched: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs), self.cur)
        self.cur.children.append(node)
        if tag not in _VOID:
            self.cur = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.cur.children.append(Node(tag, dict(attrs), self.cur))

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        if self.cur.tag != tag:
            self.mismatched.append(f"</{tag}> closes <{self.cur.tag}>")
            node = self.cur
            while node.parent is not None and node.tag != tag:
                node = node.parent
            self.cur = node.parent or self.root
            return
        self.cur = self.cur.parent or self.root

    def handle_data(self, data: str) -> None:
        self.cur.text.append(data)


def parse(page: str) -> Node:
    """The page as a tree; fails on a tag closed out of order (the page must be well nested)."""
    parser = _Parser()
    parser.feed(page)
    parser.close()
    assert not parser.mismatched, parser.mismatched[:5]
    return parser.root


def rows(table: Node) -> list[list[str]]:
    """The body rows of a table, cell texts stripped."""
    body = table.first("tbody")
    return [[td.content().strip() for td in tr.children if td.tag == "td"] for tr in body.children if tr.tag == "tr"]


def header(table: Node) -> list[str]:
    return [th.content().strip() for th in table.first("thead").all("th")]


def attr(node: Node, name: str) -> Any:
    return node.attrs.get(name)
