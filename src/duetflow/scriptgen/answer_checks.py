"""Is an LLM answer a usable script? Parse, validate against the JSON schema, then check content.

Every function raises :class:`AnswerError` with a message written for the model: the follow-up
request quotes it, so the model learns what to fix ("line 3: speaker must be A or B").

1. :func:`parse_answer` — the answer must be JSON (a Markdown code fence around it is tolerated:
   chat models add one even when told not to);
2. :func:`validate_lines` — against ``duetflow/data/schemas/script_lines.schema.json``: an array
   of ``{speaker: "A" | "B", text: non-empty string}`` and nothing else;
3. :func:`check_balance` — both speakers speak, each speaker's share of lines within
   ``filters.balance_min``–``filters.balance_max`` (the band real dialogues are filtered with);
4. :func:`check_length` (``generate``) — the estimated speaking time
   (:func:`duetflow.tts.speaking_rate.script_speaking_time_s`) within
   ``scripts.speaking_s_min``–``scripts.speaking_s_max``;
   :func:`check_same_turns` (``rewrite``) — the same number of turns by the same speakers, in
   the same order, as the transcript being rewritten.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache
from importlib.resources import files
from typing import Any, Literal

from duetflow.tts.script import ScriptLine
from duetflow.tts.speaking_rate import script_speaking_time_s


class AnswerError(ValueError):
    """The answer cannot be used; the message says why (and is shown to the model)."""


_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(?P<body>.*?)\n?```\s*$", re.DOTALL)


@cache
def lines_schema() -> dict[str, Any]:
    """The JSON schema of an answer (shipped with the package)."""
    raw = files("duetflow").joinpath("data", "schemas", "script_lines.schema.json").read_text()
    schema: dict[str, Any] = json.loads(raw)
    return schema


def parse_answer(text: str | None) -> Any:
    """The JSON value of an answer; AnswerError when it is empty or not JSON."""
    if text is None or not text.strip():
        raise AnswerError("the answer was empty")
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group("body").strip()
    try:
        return json.loads(body)
    except json.JSONDecodeError as e:
        raise AnswerError(
            f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno}); "
            "answer with the JSON array only"
        ) from None


def validate_lines(data: Any) -> list[ScriptLine]:
    """Lines of a schema-valid answer; AnswerError naming the first violation's place."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(lines_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = "".join(
            f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path
        ).lstrip(".")
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise AnswerError(f"{where or 'the answer'}: {err.message}{more}")
    lines: list[ScriptLine] = []
    for item in data:
        speaker: Literal["A", "B"] = "A" if item["speaker"] == "A" else "B"
        lines.append(ScriptLine(speaker, " ".join(str(item["text"]).split())))
    return lines


def utterance_shares(lines: Sequence[ScriptLine]) -> dict[str, float]:
    """Each speaker's share of the lines."""
    n = len(lines) or 1
    return {s: sum(ln.speaker == s for ln in lines) / n for s in ("A", "B")}


def check_balance(lines: Sequence[ScriptLine], share_min: float, share_max: float) -> None:
    """Both speakers speak, each within ``[share_min, share_max]`` of the lines."""
    shares = utterance_shares(lines)
    if min(shares.values()) == 0:
        raise AnswerError("both speakers A and B must speak")
    off = {s: v for s, v in shares.items() if not (share_min - 1e-9 <= v <= share_max + 1e-9)}
    if off:
        counts = {s: sum(ln.speaker == s for ln in lines) for s in ("A", "B")}
        raise AnswerError(
            f"speakers are unbalanced: A has {counts['A']} lines, B has {counts['B']}; each "
            f"must have between {share_min:.0%} and {share_max:.0%} of the lines"
        )


def speaking_time_s(lines: Sequence[ScriptLine], language: str) -> float:
    """Estimated seconds of speech of all lines (pauses between turns not included)."""
    return script_speaking_time_s((ln.text for ln in lines), language)


def check_length(
    lines: Sequence[ScriptLine], language: str, min_s: float, max_s: float, min_lines: int
) -> float:
    """The estimated speaking time, which must lie in ``[min_s, max_s]``; returns it."""
    if len(lines) < min_lines:
        raise AnswerError(f"only {len(lines)} lines; write at least {min_lines}")
    t = speaking_time_s(lines, language)
    if t < min_s:
        raise AnswerError(
            f"too short: about {t:.0f} s of speech; it must take {min_s:.0f}-{max_s:.0f} s "
            "when spoken, so write more"
        )
    if t > max_s:
        raise AnswerError(
            f"too long: about {t:.0f} s of speech; it must take {min_s:.0f}-{max_s:.0f} s "
            "when spoken, so write less"
        )
    return t


def check_same_turns(lines: Sequence[ScriptLine], source: Sequence[ScriptLine]) -> None:
    """The rewrite has the transcript's turns: same count, same speaker at every position."""
    if len(lines) != len(source):
        raise AnswerError(f"the rewrite has {len(lines)} turns; it must have {len(source)}")
    for i, (new, old) in enumerate(zip(lines, source, strict=True)):
        if new.speaker != old.speaker:
            raise AnswerError(
                f"turn {i} is by {new.speaker}; in the transcript it is by {old.speaker}"
            )
