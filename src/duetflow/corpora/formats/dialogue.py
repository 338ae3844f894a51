"""From an annotation file and its recording to a checked two-speaker :class:`Dialogue`.

What an adapter over "one audio file + one annotation file per dialogue" repeats, once:
:func:`paired_items` lists the dialogues from *both* sides (an audio file without annotation is
``missing_annotation``, an annotation without audio ``missing_file``), and
:func:`annotated_dialogue` checks the audio header against the corpus spec, the turns against
the audio's duration, the speaker count, and for a two-channel file decides which channel
carries which speaker from the energy of each speaker's own turns
(:func:`~duetflow.corpora.channels.decide_channels`), never by assumption: a file whose
channels do not separate the speakers is rendered as a mix (``MixedMonoSource``), as IEMOCAP's
adapter does, and provenance says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from duetflow.corpora.adapter import CorpusAdapter
from duetflow.corpora.channels import decide_channels
from duetflow.corpora.formats.annotation import Annotation
from duetflow.corpora.source_checks import checked_audio_info
from duetflow.errors import InputError
from duetflow.records.dialogue import (
    AudioSource,
    Category,
    DesignFields,
    Dialogue,
    MixedMonoSource,
    MultichannelSource,
    Role,
    Speaker,
)


def paired_items(root: Path, audio_suffix: str, annotation_suffix: str) -> list[str]:
    """Stems of the files directly in ``root`` with either suffix, sorted: the dialogues.

    Taking the union means an orphan on either side is one item (and one rejection) instead of
    being skipped silently. Hidden files are left out.
    """
    stems: set[str] = set()
    for p in root.iterdir():
        if p.name.startswith("."):
            continue
        for suffix in (audio_suffix, annotation_suffix):
            if p.name.endswith(suffix) and len(p.name) > len(suffix):
                stems.add(p.name[: -len(suffix)])
    return sorted(stems)


def require(path: Path, reason: str) -> Path:
    """``path`` when it exists, else InputError ``reason`` (``missing_annotation`` ...)."""
    if not path.exists():
        raise InputError(path, "file not found", reason=reason)
    return path


def annotated_dialogue(
    adapter: CorpusAdapter,
    item: str,
    annotation: Annotation,
    audio: Path,
    *,
    sample_rate: int | None,
    channels: tuple[int, ...] = (1, 2),
    language: str,
    topic_label: str | None = None,
    min_separation_db: float = 6.0,
    slack_s: float = 0.5,
    provenance: Mapping[str, Any] | None = None,
) -> Dialogue:
    """A two-speaker HH dialogue of ``adapter``'s corpus from a read annotation and its audio.

    Raises InputError: the audio checks of
    :func:`~duetflow.corpora.source_checks.checked_audio_info` (``sample_rate``, ``channels``),
    ``bad_timing`` for a turn past the audio's end (plus ``slack_s``), ``speaker_count`` unless
    exactly two speakers talk. Speaker A is who speaks first.
    """
    info = checked_audio_info(audio, sample_rate=sample_rate, channels=channels)
    annotation.check_audio(info.duration_s, audio, slack_s=slack_s)
    if len(annotation.speakers) != 2:
        raise InputError(
            annotation.path,
            f"expected two speakers, found {list(annotation.speakers)}",
            reason="speaker_count",
        )
    prov: dict[str, Any] = {"adapter": adapter.name, "item": item, **annotation.provenance()}
    source: AudioSource = MixedMonoSource(str(audio))
    if info.channels == 2:
        spans = {
            s: [(t.start, t.end) for t in annotation.turns if t.speaker == s]
            for s in annotation.speakers
        }
        decision = decide_channels(audio, info, spans, min_separation_db=min_separation_db)
        prov["channel_check_db"] = round(decision.score_db, 2)
        if decision.channels is not None:
            source = MultichannelSource(str(audio), decision.channels)
            prov["channels"] = decision.channels
        else:
            prov["channels"] = "mixed: the channels do not separate the speakers"
    prov.update(provenance or {})
    match = adapter.map_topic(topic_label)
    a, b = annotation.speakers
    return Dialogue(
        id=adapter.dialogue_id(item),
        corpus=adapter.name,
        source_id=item,
        category=Category.HH,
        language=language,
        topic=match.topic,
        speakers=(Speaker(a, Role.HUMAN, None, language), Speaker(b, Role.HUMAN, None, language)),
        turns=annotation.turns,
        source=source,
        duration_s=round(info.duration_s, 6),
        provenance=prov,
        design=DesignFields(source_topic=match.source_topic),
    )
