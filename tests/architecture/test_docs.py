"""The documentation stands on its own: every link points inside the repository, and exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
LINK = re.compile(r"\]\(([^)\s]+)\)")
#: relative paths in backticks or links that climb out of the repository, and absolute paths
#: of this machine
OUTSIDE = re.compile(r"(?<![\w.])(\.\./)+[\w./-]+|/work/[\w./-]+|/home/[\w./-]+")
#: folders of the workspace the project was built in, which a clone does not have
NOT_IN_A_CLONE = re.compile(r"(?<![\w/])shared/reference/[\w./-]*")


def test_docs_link_nothing_outside_the_repository() -> None:
    assert len(DOCS) > 5
    problems = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in LINK.finditer(text):
            target = m.group(1).split("#")[0]
            if not target or re.match(r"^[a-z]+://", target):
                continue  # in-page anchor; web links are checked below
            path = (doc.parent / target).resolve()
            if ROOT not in path.parents or not path.exists():
                problems.append(f"{doc.relative_to(ROOT)}: link {m.group(1)}")
        for m in OUTSIDE.finditer(text):
            path = (doc.parent / m.group(0)).resolve()
            if m.group(0).startswith("/") or ROOT not in path.parents:
                problems.append(f"{doc.relative_to(ROOT)}: path {m.group(0)}")
        for m in NOT_IN_A_CLONE.finditer(text):
            problems.append(f"{doc.relative_to(ROOT)}: path {m.group(0)} is not in the repository")
        for m in re.finditer(r"\]\((https?://[^)]+)\)", text):
            problems.append(f"{doc.relative_to(ROOT)}: web link {m.group(1)}")
    assert not problems, "\n".join(problems)
