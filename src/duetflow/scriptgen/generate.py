"""Generate and rewrite two-speaker scripts with an LLM: requests, re-asks, checkpoint, report.

:func:`generate_scripts` asks for ``per_topic`` scripts per topic (the ``generate`` prompt);
:func:`rewrite_scripts` asks for a rewrite of every kept HH transcript of a rendered work
directory (the ``rewrite`` prompt). Both go through :func:`ask`:

1. send the prompt (transport retries are the client's, :mod:`duetflow.scriptgen.llm`);
2. parse, schema-validate and check the answer (:mod:`duetflow.scriptgen.answer_checks`);
3. on an invalid answer, re-ask with the error in a follow-up message (``repair`` prompt), at
   most ``llm.max_retries`` times; still invalid → a rejection ``llm_invalid`` with the last
   error, never an exception.

Scripts are written as they finish, one file each (:class:`~duetflow.scriptgen.store.ScriptStore`),
so a killed run resumes where it stopped and a finished script is never requested twice.
Inputs = kept + rejected: every requested id ends as a script file or a rejection. Requests run
``llm.concurrency`` at a time; the output does not depend on the order they finish in.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from duetflow.config import RunConfig
from duetflow.errors import ConfigError, InputError
from duetflow.records.dialogue import Rejection, Stage, safe_id
from duetflow.scriptgen.answer_checks import (
    AnswerError,
    check_balance,
    check_length,
    check_same_turns,
    parse_answer,
    validate_lines,
)
from duetflow.scriptgen.dedup import NEAR_DUPLICATE, duplicate_rejection, find_near_duplicates
from duetflow.scriptgen.llm import ChatClient, Message, OpenAIChat, RequestFailed
from duetflow.scriptgen.prompts import PromptTemplate, fillers, language_name, load_template
from duetflow.scriptgen.store import ScriptStore
from duetflow.seeding import seed_for
from duetflow.topics import normalise_topic
from duetflow.tts.script import Script, ScriptLine, load_scripts, scripts_from_workdir
from duetflow.tts.speaking_rate import rate_for

log = logging.getLogger(__name__)

Task = Literal["generate", "rewrite"]
CORPUS = "scripts"


@dataclass(frozen=True)
class ScriptRequest:
    """One script to ask for: its id, the first prompt, and what the answer must match."""

    script_id: str
    task: Task
    language: str
    topic: str
    prompt: str
    template: PromptTemplate
    seed: int
    source: Script | None = None  # rewrite: the transcript being rewritten


@dataclass(frozen=True)
class ScriptGenReport:
    """What a generate / rewrite run did; ``requested == kept + rejected``."""

    out_dir: Path
    task: Task
    requested: int
    written: int
    reused: int
    rejected: int
    reasons: dict[str, int]
    requests: int
    rejections: tuple[Rejection, ...] = field(default_factory=tuple)
    merged: int = 0  # near-duplicates merged after answering (counted in rejected)

    @property
    def kept(self) -> int:
        return self.written + self.reused - self.merged


def request_seed(config: RunConfig, script_id: str) -> int:
    """The request's ``seed``: from ``llm.seed`` (else the run seed) and the script id."""
    base = config.llm.seed if config.llm.seed is not None else config.seed
    return seed_for(base, "llm", script_id) & 0x7FFFFFFF


def _reject(script_id: str, reason: str, detail: str, path: str = "") -> Rejection:
    return Rejection(script_id, Stage.SCRIPT, reason, detail, corpus=CORPUS, source_path=path)


def _provenance(
    req: ScriptRequest,
    config: RunConfig,
    answers: Sequence[str | None],
    http_attempts: int,
    model: str,
    errors: Sequence[str],
    extra: dict[str, Any],
) -> dict[str, Any]:
    templates = {req.template.name: req.template.sha256}
    if len(answers) > 1:
        repair = load_template("repair")
        templates[repair.name] = repair.sha256
    final = answers[-1] or ""
    return {
        "generator": "duetflow.scriptgen",
        "task": req.task,
        "model": model,
        "requested_model": config.llm.model,
        "base_url": _public_url(config.llm.base_url),
        "templates": templates,
        "temperature": config.llm.temperature,
        "seed": req.seed,
        "attempts": len(answers),
        "http_attempts": http_attempts,
        "validation_errors": list(errors),
        "response_sha256": hashlib.sha256(final.encode("utf-8")).hexdigest(),
        **extra,
    }


def _public_url(url: str | None) -> str | None:
    """The endpoint without any ``user:password@`` part (provenance is published)."""
    if not url:
        return url
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _check(req: ScriptRequest, lines: list[ScriptLine], config: RunConfig) -> dict[str, Any]:
    f, sc = config.filters, config.scripts
    if req.task == "rewrite":
        assert req.source is not None
        check_same_turns(lines, req.source.lines)
        check_balance(lines, f.balance_min, f.balance_max)
        return {}
    check_balance(lines, f.balance_min, f.balance_max)
    t = check_length(lines, req.language, sc.speaking_s_min, sc.speaking_s_max, sc.min_lines)
    return {"speaking_time_s": round(t, 2)}


def _script(
    req: ScriptRequest, lines: list[ScriptLine], provenance: dict[str, Any], path: str
) -> Script:
    src = req.source
    return Script(
        id=req.script_id,
        language=req.language,
        lines=tuple(lines),
        topic=req.topic,
        source="rewritten-hh" if req.task == "rewrite" else "generated",
        source_dialogue_id=src.source_dialogue_id if src else None,
        path=path,
        source_id=src.source_id if src else None,
        source_topic=src.source_topic if src else None,
        provenance=provenance,
    )


def ask(req: ScriptRequest, client: ChatClient, config: RunConfig) -> Script | Rejection:
    """One script: ask, validate, re-ask with the error; a Script or a Rejection (no raise).

    A :class:`~duetflow.errors.BackendError` that is not a per-request failure (wrong endpoint,
    key or model) is raised: every other request would fail the same way.
    """
    repair = load_template("repair")
    messages: list[Message] = [{"role": "user", "content": req.prompt}]
    answers: list[str | None] = []
    errors: list[str] = []
    http = 0
    model = str(config.llm.model)
    for _ in range(config.llm.max_retries + 1):
        try:
            answer = client.complete(messages, seed=req.seed)
        except RequestFailed as e:
            return _reject(req.script_id, e.reason, f"{e} (after {len(answers)} answer(s))")
        http += answer.attempts
        model = answer.model
        answers.append(answer.text)
        try:
            lines = validate_lines(parse_answer(answer.text))
            extra = _check(req, lines, config)
        except AnswerError as e:
            errors.append(str(e))
            log.info("%s: invalid answer %d: %s", req.script_id, len(answers), e)
            messages = [
                *messages,
                {"role": "assistant", "content": answer.text or ""},
                {"role": "user", "content": repair.render(error=str(e))},
            ]
            continue
        prov = _provenance(req, config, answers, http, model, errors, extra)
        try:
            return _validated(_script(req, lines, prov, ""))
        except InputError as e:  # e.g. a line longer than the script format allows
            errors.append(str(e))
            return _reject(req.script_id, "llm_invalid", f"{e} (after {len(answers)} answers)")
    return _reject(
        req.script_id,
        "llm_invalid",
        f"{len(answers)} invalid answer(s); last error: {errors[-1] if errors else 'none'}",
    )


def _validated(script: Script) -> Script:
    """Round-trip through the script format's own validation (what synthesize will read)."""
    from duetflow.tts.script import parse_script

    return parse_script(script.to_json(), script.id)


def run_requests(
    requests: Iterable[ScriptRequest | Rejection],
    out_dir: str | Path,
    config: RunConfig,
    task: Task,
    client: ChatClient | None = None,
) -> ScriptGenReport:
    """Ask for every request not finished in ``out_dir``; write scripts and rejections there.

    ``requests`` may carry Rejections too (inputs that could not become a request), so they are
    counted and written with the rest.
    """
    store = ScriptStore(out_dir)
    reasons: Counter[str] = Counter()
    rejections: list[Rejection] = []
    written = reused = requested = 0
    made: list[OpenAIChat] = []

    def chat() -> ChatClient:
        if client is not None:
            return client
        if not made:
            made.append(OpenAIChat(config.llm))
        return made[0]

    def record(item: Script | Rejection) -> None:
        nonlocal written
        if isinstance(item, Script):
            store.write_script(item)
            written += 1
        else:
            store.write_rejection(item)
            rejections.append(item)
            reasons[item.reason] += 1

    def todo() -> Iterator[ScriptRequest]:
        nonlocal requested, reused
        for req in requests:
            requested += 1
            if isinstance(req, Rejection):
                record(req)
                continue
            if store.has_script(req.script_id):
                reused += 1
                continue
            old = store.rejection(req.script_id)
            if old is not None:
                rejections.append(old)
                reasons[old.reason] += 1
                continue
            yield req

    window = 2 * config.llm.concurrency
    with ThreadPoolExecutor(max_workers=config.llm.concurrency) as pool:
        pending: list[Future[Script | Rejection]] = []
        for req in todo():
            pending.append(pool.submit(ask, req, chat(), config))
            while len(pending) >= window:
                record(pending.pop(0).result())
        for fut in pending:
            record(fut.result())
    store.write_rejections(rejections)
    sent = made[0].requests if made else int(getattr(client, "requests", 0) or 0)
    report = ScriptGenReport(
        out_dir=Path(out_dir),
        task=task,
        requested=requested,
        written=written,
        reused=reused,
        rejected=len(rejections),
        reasons=dict(sorted(reasons.items())),
        requests=sent,
        rejections=tuple(sorted(rejections, key=lambda r: r.item_id)),
    )
    log.info(
        "scripts %s: %d requested, %d written, %d reused, %d rejected",
        task, requested, written, reused, report.rejected,
    )  # fmt: skip
    return report


# --- generate -----------------------------------------------------------------------------------


def resolve_topics(topics: Sequence[str] | None, config: RunConfig) -> list[str]:
    """Taxonomy ids for ``topics`` (names accepted: "Ordinary Life"); None → the taxonomy."""
    taxonomy = config.topics.taxonomy
    if not topics:
        return list(config.scripts.topics or taxonomy)
    out: list[str] = []
    for t in topics:
        key = normalise_topic(t)
        if key not in taxonomy:
            raise ConfigError(f"topic {t!r} is not in topics.taxonomy {taxonomy}")
        if key not in out:
            out.append(key)
    return out


def read_topics_file(path: str | Path) -> list[str]:
    """One topic per line; blank lines and ``#`` comments are skipped."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{p}: cannot read topics file: {e}") from None
    return [ln.split("#", 1)[0].strip() for ln in text.splitlines() if ln.split("#", 1)[0].strip()]


def generate_requests(
    topics: Sequence[str], per_topic: int, language: str, config: RunConfig
) -> Iterator[ScriptRequest]:
    """``per_topic`` requests per topic, ids ``gen-<language>-<topic>-<k>`` (k from 001)."""
    template = load_template("generate")
    sc = config.scripts
    rate = rate_for(language)
    unit = "characters" if rate.unit == "char" else "words"
    for topic in topics:
        prompt = template.render(
            topic_name=topic.replace("_", " "),
            language_name=language_name(language),
            min_s=f"{sc.speaking_s_min:g}",
            max_s=f"{sc.speaking_s_max:g}",
            units_min=round(sc.speaking_s_min * rate.per_s),
            units_max=round(sc.speaking_s_max * rate.per_s),
            unit_name=unit,
            fillers=fillers(language),
        )
        for k in range(1, per_topic + 1):
            sid = safe_id(f"gen-{language}-{topic}-{k:03d}")
            yield ScriptRequest(
                sid, "generate", language, topic, prompt, template, request_seed(config, sid)
            )


def generate_scripts(
    topics: Sequence[str] | None,
    per_topic: int,
    language: str,
    out_dir: str | Path,
    config: RunConfig,
    client: ChatClient | None = None,
) -> ScriptGenReport:
    """Topic-conditioned scripts into ``out_dir`` (resumable; see the module docstring)."""
    if per_topic < 1:
        raise ConfigError(f"per_topic must be at least 1, got {per_topic}")
    chosen = resolve_topics(topics, config)
    reqs = list(generate_requests(chosen, per_topic, language, config))
    report = run_requests(reqs, out_dir, config, "generate", client)
    if config.scripts.dedup_threshold is None:
        return report
    return merge_near_duplicates(report, {r.script_id for r in reqs}, config)


def merge_near_duplicates(
    report: ScriptGenReport, ids: set[str], config: RunConfig
) -> ScriptGenReport:
    """Merge the near-duplicates among the scripts ``ids`` of a run (:mod:`.dedup`): their
    files removed, a ``near_duplicate`` rejection each, the report's counts updated."""
    threshold = config.scripts.dedup_threshold
    if threshold is None:
        return report
    store = ScriptStore(report.out_dir)
    scripts = [s for s in load_scripts(report.out_dir) if isinstance(s, Script) and s.id in ids]
    dups = find_near_duplicates(scripts, threshold, config.scripts.dedup_method)
    if not dups:
        return report
    new = [duplicate_rejection(d, threshold, CORPUS, f"{d.script_id}.json") for d in dups]
    for rej in new:
        store.remove_script(rej.item_id)
        store.write_rejection(rej)
        log.info("%s: %s", rej.item_id, rej.detail)
    rejections = tuple(sorted([*report.rejections, *new], key=lambda r: r.item_id))
    store.write_rejections(rejections)
    reasons = Counter(report.reasons)
    reasons[NEAR_DUPLICATE] += len(new)
    return replace(
        report,
        rejected=report.rejected + len(new),
        reasons=dict(sorted(reasons.items())),
        rejections=rejections,
        merged=report.merged + len(new),
    )


# --- rewrite ------------------------------------------------------------------------------------


def rewrite_requests(workdir: str | Path, config: RunConfig) -> Iterator[ScriptRequest | Rejection]:
    """A rewrite request per kept HH dialogue of a rendered (or intake) work directory.

    A transcript whose speakers are out of the balance band is rejected before asking
    (``script_imbalanced``): a faithful rewrite keeps its turns, so it could never pass.
    """
    template = load_template("rewrite")
    f = config.filters
    for item in scripts_from_workdir(workdir):
        if isinstance(item, Rejection):
            yield _reject(
                "rw-" + item.item_id.removeprefix("hh-"), item.reason, item.detail,
                item.source_path,
            )  # fmt: skip
            continue
        did = item.source_dialogue_id or item.id
        sid = safe_id(f"rw-{did}")
        try:
            check_balance(item.lines, f.balance_min, f.balance_max)
        except AnswerError as e:
            yield _reject(sid, "script_imbalanced", f"transcript of {did}: {e}", item.path)
            continue
        transcript = json.dumps(
            [{"speaker": ln.speaker, "text": ln.text} for ln in item.lines], ensure_ascii=False
        )
        prompt = template.render(
            language_name=language_name(item.language),
            n_turns=len(item.lines),
            fillers=fillers(item.language),
            transcript=transcript,
        )
        yield ScriptRequest(
            sid, "rewrite", item.language, item.topic, prompt, template,
            request_seed(config, sid), source=item,
        )  # fmt: skip


def rewrite_scripts(
    workdir: str | Path,
    out_dir: str | Path,
    config: RunConfig,
    client: ChatClient | None = None,
) -> ScriptGenReport:
    """LLM rewrites of every kept HH transcript of ``workdir`` into ``out_dir`` (resumable)."""
    return run_requests(rewrite_requests(workdir, config), out_dir, config, "rewrite", client)


__all__ = [
    "ScriptGenReport",
    "ScriptRequest",
    "ask",
    "generate_requests",
    "generate_scripts",
    "merge_near_duplicates",
    "read_topics_file",
    "resolve_topics",
    "rewrite_requests",
    "rewrite_scripts",
    "run_requests",
]
