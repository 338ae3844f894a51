"""Two-speaker scripts: schema, validation, loading, and derivation from kept HH dialogues.

A script file is a JSON object::

    {"id": "coffee-01", "language": "en", "topic": "ordinary_life", "source": "generated",
     "lines": [{"speaker": "A", "text": "..."}, {"speaker": "B", "text": "..."}]}

Optional keys: ``source_dialogue_id`` (the HH window a script was derived from), ``source_id``
(that window's source recording: a PH dialogue made from it shares its split group),
``source_topic`` (the source's own topic label) and ``provenance`` (an object: how the script was
made, e.g. the LLM, prompt template hash and attempts of ``duetflow.scriptgen``).

A bare JSON array of ``{"speaker", "text"}`` objects is accepted too (id = file stem, language
guessed from the characters, source ``generated``). A ``.jsonl`` file holds one script object
per line. Every validation error names the file (and line) plus the item index, and becomes a
rejection so one bad script never stops a run.

Scripts can also be derived from kept HH dialogues (:func:`scripts_from_workdir`) so that a PH
dialogue mirrors the content of a real one and content alone gives nothing away.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from duetflow.errors import InputError
from duetflow.records.dialogue import Category, Rejection, Stage, TurnKind, safe_id
from duetflow.records.locations import relative_path, relative_rejection, root_spellings
from duetflow.records.manifest import DIALOGUES, TurnRecord, iter_work_records

SOURCES = ("generated", "rewritten-hh", "hh-transcript")
ScriptSource = Literal["generated", "rewritten-hh", "hh-transcript"]
MAX_TEXT_CHARS = 600  # keeps transcript + line inside Dia's 1024-byte encoder window

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
# [laughter] <noise> (laughs) {breath} *cough* and bare markers like [*]
_TAGS = re.compile(r"\[[^\]]*\]|<[^>]*>|\([^)]*\)|\{[^}]*\}|\*[^*]*\*|（[^）]*）|【[^】]*】")
_SPACES = re.compile(r"\s+")
BACKCHANNELS = frozenset(
    {
        "yeah", "yes", "yep", "uh-huh", "uh huh", "mhm", "mm", "mm-hmm", "mmhmm", "hmm", "right",
        "okay", "ok", "oh", "ah", "uh", "um", "sure", "i see", "wow", "really",
        "嗯", "嗯嗯", "对", "对对", "对对对", "是", "是的", "哦", "啊", "好", "好的", "嗯哼",
        "哈哈",
    }
)  # fmt: skip


_SCRIPT_KEYS = frozenset(
    {"id", "language", "topic", "source", "lines", "source_dialogue_id", "source_id",
     "source_topic", "provenance"}
)  # fmt: skip


@dataclass(frozen=True)
class ScriptLine:
    speaker: Literal["A", "B"]
    text: str


@dataclass(frozen=True)
class Script:
    """A two-speaker dialogue to synthesize; ``lines`` alternate freely between A and B."""

    id: str
    language: str
    lines: tuple[ScriptLine, ...]
    topic: str = ""
    source: ScriptSource = "generated"
    source_dialogue_id: str | None = None
    path: str = ""
    source_id: str | None = None
    source_topic: str | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "language": self.language,
            "topic": self.topic,
            "source": self.source,
            "lines": [{"speaker": ln.speaker, "text": ln.text} for ln in self.lines],
        }
        for key in ("source_dialogue_id", "source_id", "source_topic"):
            if getattr(self, key):
                data[key] = getattr(self, key)
        if self.provenance:
            data["provenance"] = dict(self.provenance)
        return data


def guess_language(text: str) -> str:
    """``zh`` when a third or more of the letters are CJK, else ``en`` (for bare arrays only)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return "en"
    cjk = sum(1 for c in letters if _CJK.match(c))
    return "zh" if cjk * 3 >= len(letters) else "en"


def parse_script(
    data: Any, path: str | Path, *, line: int | None = None, default_id: str | None = None
) -> Script:
    """Validate one script object (or bare line array); raise InputError naming file + item."""

    def bad(cause: str, field: str | None = None) -> InputError:
        return InputError(path, cause, reason="bad_script", line=line, field=field)

    meta: Mapping[str, Any]
    if isinstance(data, list):
        items, meta = data, {}
    elif isinstance(data, dict):
        unknown = set(data) - _SCRIPT_KEYS
        if unknown:
            raise bad(f"unknown keys {sorted(unknown)}")
        if "lines" not in data:
            raise bad("missing 'lines' (a JSON array of {speaker, text})", "lines")
        items, meta = data["lines"], data
    else:
        raise bad(f"expected a JSON object or array, got {type(data).__name__}")
    if not isinstance(items, list):
        raise bad(f"'lines' must be an array, got {type(items).__name__}", "lines")
    lines: list[ScriptLine] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise bad(f"item must be an object, got {type(item).__name__}", f"lines[{i}]")
        extra = set(item) - {"speaker", "text"}
        if extra:
            raise bad(f"unknown keys {sorted(extra)}", f"lines[{i}]")
        spk, text = item.get("speaker"), item.get("text")
        if spk not in ("A", "B"):
            raise bad(f"speaker must be 'A' or 'B', got {spk!r}", f"lines[{i}].speaker")
        if not isinstance(text, str) or not text.strip():
            raise bad("text must be a non-empty string", f"lines[{i}].text")
        text = _SPACES.sub(" ", text).strip()
        if len(text) > MAX_TEXT_CHARS:
            raise bad(f"text longer than {MAX_TEXT_CHARS} characters", f"lines[{i}].text")
        lines.append(ScriptLine(speaker=spk, text=text))
    if len(lines) < 2:
        raise bad(f"a dialogue needs at least 2 lines, got {len(lines)}", "lines")
    if {ln.speaker for ln in lines} != {"A", "B"}:
        raise bad("both speakers A and B must speak", "lines")
    sid = meta.get("id", default_id)
    if not isinstance(sid, str) or not sid.strip():
        raise bad("missing or empty 'id'", "id")
    language = meta.get("language") or guess_language(" ".join(ln.text for ln in lines))
    if not isinstance(language, str):
        raise bad(f"language must be a string, got {language!r}", "language")
    topic = meta.get("topic", "")
    if not isinstance(topic, str):
        raise bad(f"topic must be a string, got {topic!r}", "topic")
    source = meta.get("source", "generated")
    if source not in SOURCES:
        raise bad(f"source must be one of {list(SOURCES)}, got {source!r}", "source")
    optional: dict[str, str | None] = {}
    for key in ("source_dialogue_id", "source_id", "source_topic"):
        value = meta.get(key)
        if value is not None and not isinstance(value, str):
            raise bad(f"{key} must be a string", key)
        optional[key] = value or None
    provenance = meta.get("provenance", {})
    if not isinstance(provenance, dict):
        raise bad(f"provenance must be an object, got {type(provenance).__name__}", "provenance")
    return Script(
        id=safe_id(sid.strip()),
        language=language,
        lines=tuple(lines),
        topic=topic,
        source=source,
        source_dialogue_id=optional["source_dialogue_id"],
        path=str(path),
        source_id=optional["source_id"],
        source_topic=optional["source_topic"],
        provenance=provenance,
    )


def _reject(err: InputError, item_id: str) -> Rejection:
    return Rejection(
        item_id=item_id,
        stage=Stage.SYNTHESIZE,
        reason=err.reason,
        detail=str(err),
        corpus="scripts",
        source_path=err.path or "",
    )


def _load_json_file(p: Path) -> Iterator[Script | Rejection]:
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        err = InputError(p, f"invalid JSON: {e}", reason="bad_script")
        yield _reject(err, p.stem)
        return
    try:
        yield parse_script(data, p, default_id=p.stem)
    except InputError as err:
        yield _reject(err, p.stem)


def _load_jsonl_file(p: Path) -> Iterator[Script | Rejection]:
    with p.open(encoding="utf-8", errors="replace") as fh:
        for n, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            item_id = f"{p.stem}:{n}"
            try:
                data = json.loads(raw)
            except json.JSONDecodeError as e:
                yield _reject(
                    InputError(p, f"invalid JSON: {e}", reason="bad_script", line=n), item_id
                )
                continue
            if isinstance(data, dict) and isinstance(data.get("id"), str):
                item_id = data["id"]
            try:
                yield parse_script(data, p, line=n)
            except InputError as err:
                yield _reject(err, item_id)


def load_scripts(path: str | Path) -> Iterator[Script | Rejection]:
    """Scripts from a ``.json`` file, a ``.jsonl`` file or a folder of them (sorted by name).

    Lazily yields scripts and rejections; a duplicate id is rejected (ids name the output).
    Paths they record (``Script.path``, rejections) are relative to the folder (or the file's
    folder): where scripts sit is not content (:mod:`duetflow.records.locations`).
    """
    p = Path(path)
    if not p.exists():
        raise InputError(p, "scripts path not found", reason="missing_file")
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.suffix in (".json", ".jsonl") and f.is_file())
    else:
        files = [p]
    roots = root_spellings(p if p.is_dir() else p.parent)
    seen: set[str] = set()
    for f in files:
        gen = _load_jsonl_file(f) if f.suffix == ".jsonl" else _load_json_file(f)
        for item in gen:
            if isinstance(item, Script):
                if item.id in seen:
                    err = InputError(f, f"duplicate script id {item.id!r}", reason="duplicate_id")
                    yield relative_rejection(_reject(err, item.id), roots)
                    continue
                seen.add(item.id)
                yield replace(item, path=relative_path(item.path, roots))
            else:
                yield relative_rejection(item, roots)


# --- derivation from real dialogues -------------------------------------------------------------


def clean_text(text: str) -> str:
    """Drop non-speech tags ([laughter], <noise>, (laughs) ...) and squeeze spaces."""
    return _SPACES.sub(" ", _TAGS.sub(" ", text)).strip(" ,")


def is_backchannel_text(text: str) -> bool:
    """True when a turn says nothing but backchannel words (``yeah``, ``uh-huh``, ``嗯``)."""
    t = re.sub(r"[^\w\s'-]", " ", text.lower())
    t = _SPACES.sub(" ", t).strip()
    if not t:
        return True
    if t in BACKCHANNELS:
        return True
    words = t.split(" ")
    return all(w in BACKCHANNELS for w in words) and len(words) <= 3


def script_from_turns(
    dialogue_id: str,
    language: str,
    topic: str,
    speaker_a: str,
    turns: Sequence[TurnRecord],
    path: str = "",
    *,
    source_id: str | None = None,
    source_topic: str | None = None,
) -> Script:
    """A script mirroring a real dialogue: turns only, tags stripped, backchannels dropped,
    consecutive same-speaker turns merged. Raises InputError when too little is left."""
    lines: list[ScriptLine] = []
    joiner = "" if language.startswith(("zh", "cmn", "yue", "ja")) else " "
    for t in sorted(turns, key=lambda r: int(r.turn_index)):
        if t.kind not in (TurnKind.TURN, str(TurnKind.TURN), None):
            continue
        text = clean_text(str(t.text or ""))
        if not text or is_backchannel_text(text):
            continue
        spk: Literal["A", "B"] = "A" if t.speaker == speaker_a else "B"
        if lines and lines[-1].speaker == spk:
            lines[-1] = ScriptLine(spk, lines[-1].text + joiner + text)
        else:
            lines.append(ScriptLine(spk, text))
    lines = [ScriptLine(ln.speaker, ln.text[:MAX_TEXT_CHARS]) for ln in lines]
    data = {
        "id": f"hh-{dialogue_id}",
        "language": language,
        "topic": topic,
        "source": "hh-transcript",
        "source_dialogue_id": dialogue_id,
        "source_id": source_id,
        "source_topic": source_topic,
        "lines": [{"speaker": ln.speaker, "text": ln.text} for ln in lines],
    }
    return parse_script(data, path or dialogue_id)


def scripts_from_workdir(workdir: str | Path) -> Iterator[Script | Rejection]:
    """Scripts derived from the kept HH dialogues of an intake or rendered work directory.

    Streams the dialogue and turn tables in lockstep (memory = one dialogue's turns).
    """
    wd = Path(workdir)
    for row, rows in iter_work_records(wd):
        did = row.dialogue_id
        if row.category != str(Category.HH):
            continue
        try:
            yield script_from_turns(
                did,
                row.language,
                row.topic or "",
                row.speaker_a,
                rows,
                path=str(wd / DIALOGUES),
                source_id=row.source_id or None,
                source_topic=row.design.source_topic or None,
            )
        except InputError as err:
            yield _reject(err, f"hh-{did}")
