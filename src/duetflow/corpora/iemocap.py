"""IEMOCAP full release: stereo dialogue WAVs, timed transcriptions, emotion evaluations.

Layout (per ``Session<N>/dialog/``): ``wav/<dialog>.wav`` (16 kHz, two channels),
``transcriptions/<dialog>.txt`` (``<utt> [SSS.ssss-EEE.eeee]: text``; CRLF; lines not in
temporal order; ``XX`` utterance ids without a sentence WAV; lines not starting with ``Ses``),
``EmoEvaluation/<dialog>.txt`` (tab-separated summary lines ``[s - e]\\tutt\\tcode\\t[V, A, D]``).

* Speaker identity is session + the utterance's gender letter (``Ses01_F``), never the
  dialogue's MoCap letter (``Ses01M_...`` holds both actors).
* Which channel carries which actor is decided per dialogue from the energy of each channel
  during that actor's annotated turns (:func:`decide_channels`); when the channels do not
  separate the actors the dialogue is treated as mixed (downmix), never assumed.
* ``XX`` lines are kept as turns (they are speech on the dialogue timeline) with label
  ``unsegmented=1``; lines that do not start with ``Ses`` carry no timing and are skipped
  (counted in provenance). A timed line that does not parse rejects the dialogue
  (``malformed_line``), as does ``start >= end`` (``bad_timing``).
* Dialogue names are taken whole from the file name, so irregular ones (``impro05a``,
  ``script01_1b``) need no special case.
* Text that is not UTF-8 is read as cp1252 (some copies are Latin-1) only when the result reads
  as English (:func:`~duetflow.corpora.text.implausible_text`; GBK bytes decode as cp1252 too,
  into mojibake), else ``bad_encoding``; provenance records ``text_encoding``.
* A line pasted twice is heard once (``merged_duplicate_turns``); one speaker's utterances
  overlapping by a little segmentation slack are joined (``merged_overlapping_turns``), larger
  overlaps reject the dialogue (``overlapping_turns``; see
  :func:`~duetflow.corpora.source_checks.merge_same_speaker_duplicates`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Literal

from duetflow.corpora.adapter import (
    CorpusAdapter,
    DuplicateGuard,
    check_turn_timing,
    checked_audio_info,
    decide_channels,
    merge_same_speaker_duplicates,
    read_text,
    read_text_as,
)
from duetflow.errors import InputError
from duetflow.licences import IEMOCAP_EULA
from duetflow.records.dialogue import (
    AudioSource,
    Category,
    DesignFields,
    Dialogue,
    MixedMonoSource,
    MultichannelSource,
    Rejection,
    Role,
    Speaker,
    Turn,
    TurnKind,
)
from duetflow.topics import iemocap_scenario

_SESSION = re.compile(r"^Session(\d+)$")
_LINE = re.compile(
    r"^(?P<utt>Ses(?P<ses>\d{2})[FM]_\S+?_(?P<g>[FM])(?P<num>\d{3}|XX\d*))\s+"
    r"\[(?P<s>[^\]\-]*)-(?P<e>[^\]]*)\]:?\s?(?P<text>.*)$"
)
_EMO = re.compile(
    r"^\[\s*(?P<s>[\d.]+)\s*-\s*(?P<e>[\d.]+)\s*\]\t(?P<utt>\S+)\t(?P<code>\S+)\t"
    r"\[\s*(?P<v>[\d.]+),\s*(?P<a>[\d.]+),\s*(?P<d>[\d.]+)\s*\]\s*$"
)
_TAG = re.compile(r"\[[A-Z*+]+\]")
_NONSPEECH_TAGS = {"[LAUGHTER]", "[BREATHING]", "[GARBAGE]", "[SIGH]"}


def _session_key(p: Path) -> int:
    m = _SESSION.match(p.name)
    return int(m.group(1)) if m else 0


class IemocapAdapter(CorpusAdapter):
    """Adapter for ``IEMOCAP_full_release/``."""

    name: ClassVar[str] = "iemocap"
    licence: ClassVar[str | None] = IEMOCAP_EULA
    default_options: ClassVar[Mapping[str, Any]] = {
        "sample_rate": 16000,
        "channels": [2],  # dialogue WAVs are stereo in the release
        "min_channel_separation_db": 6.0,
        "timing_slack_s": 0.5,  # turns may end this much after the audio
        "encodings": ["cp1252"],  # documented fallback after UTF-8 (some files are Latin-1)
    }

    def _sessions(self) -> list[Path]:
        self.check_root()
        sessions = sorted(
            (p for p in self.root.iterdir() if _SESSION.match(p.name) and p.is_dir()),
            key=_session_key,
        )
        if not sessions:
            from duetflow.errors import ConfigError

            raise ConfigError(
                f"corpus iemocap: no Session<N> folders under {self.root}; is it the "
                "IEMOCAP_full_release folder?"
            )
        return sessions

    def _items(self, session: Path) -> list[str]:
        names: set[str] = set()
        for sub, ext in (("transcriptions", ".txt"), ("wav", ".wav")):
            d = session / "dialog" / sub
            if d.is_dir():
                names.update(
                    p.stem for p in d.iterdir() if p.suffix == ext and not p.name.startswith(".")
                )
        return sorted(names)

    def count_sources(self) -> int | None:
        return sum(len(self._items(s)) for s in self._sessions())

    def scan(self) -> Iterator[Dialogue | Rejection]:
        for session in self._sessions():
            for name in self._items(session):
                rel = Path(session.name) / "dialog"
                where = self.root / rel / "transcriptions" / f"{name}.txt"
                yield self.guarded(name, where, partial(self._dialogue, name, rel))

    # -- parsing ---------------------------------------------------------------------------------

    def _emotions(self, rel: Path, name: str) -> tuple[dict[str, dict[str, str]], str | None]:
        path = self.path(rel / "EmoEvaluation" / f"{name}.txt")
        if not path.exists():
            return {}, None
        out: dict[str, dict[str, str]] = {}
        text = read_text(path, self.options["encodings"], "en")
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = raw.rstrip("\r")
            if not line.startswith("["):
                continue
            m = _EMO.match(line)
            if m is None:
                raise InputError(
                    path,
                    f"unparseable evaluation line {line[:60]!r}",
                    reason="malformed_line",
                    line=lineno,
                )
            out[m.group("utt")] = {
                "emotion": m.group("code"),
                "valence": m.group("v"),
                "activation": m.group("a"),
                "dominance": m.group("d"),
            }
        return out, (rel / "EmoEvaluation" / f"{name}.txt").as_posix()

    def _turns(self, path: Path, name: str) -> tuple[list[Turn], int, str]:
        decoded = read_text_as(path, self.options["encodings"], "en")
        text = decoded.text
        turns: list[tuple[float, float, str, Turn]] = []
        guard = DuplicateGuard()
        skipped = 0
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = raw.strip("\r\n\ufeff ")
            if not line:
                continue
            if not line.startswith("Ses"):
                skipped += 1  # e.g. "M: [LAUGHTER]": no id, no timing
                continue
            m = _LINE.match(line)
            if m is None:
                raise InputError(
                    path,
                    f"expected '<utt> [start-end]: text', got {line[:60]!r}",
                    reason="malformed_line",
                    line=lineno,
                )
            utt = m.group("utt")
            if not utt.startswith(name + "_"):
                raise InputError(
                    path,
                    f"utterance {utt} does not belong to dialogue {name}",
                    reason="malformed_line",
                    line=lineno,
                )
            try:
                start, end = float(m.group("s")), float(m.group("e"))
            except ValueError:
                raise InputError(
                    path,
                    f"bad timestamps [{m.group('s')}-{m.group('e')}]",
                    reason="malformed_line",
                    line=lineno,
                ) from None
            if not start < end:
                raise InputError(
                    path, f"{utt}: start {start} >= end {end}", reason="bad_timing", line=lineno
                )
            guard.check(utt, f"{path}:{lineno}")
            body = m.group("text").strip()
            tags = _TAG.findall(body)
            labels: dict[str, str] = {"utterance_id": utt}
            if tags:
                labels["tags"] = " ".join(tags)
            if "XX" in m.group("num"):
                labels["unsegmented"] = "1"
            only_tags = bool(tags) and not _TAG.sub("", body).strip(" .,!?")
            kind = (
                TurnKind.NONSPEECH if only_tags and set(tags) <= _NONSPEECH_TAGS else TurnKind.TURN
            )
            spk = f"Ses{m.group('ses')}_{m.group('g')}"
            turns.append((start, end, utt, Turn(spk, start, end, body, kind, labels)))
        turns.sort(key=lambda x: (x[0], x[1], x[2]))
        return [t for *_, t in turns], skipped, decoded.encoding

    def _dialogue(self, name: str, rel: Path) -> Dialogue:
        trans_rel = rel / "transcriptions" / f"{name}.txt"
        wav_rel = rel / "wav" / f"{name}.wav"
        trans = self.path(trans_rel)
        if not trans.exists():
            raise InputError(
                self.root / trans_rel,
                "dialogue audio has no transcription",
                reason="missing_annotation",
            )
        turns, skipped, encoding = self._turns(trans, name)
        if not turns:
            raise InputError(trans, "no timed turns", reason="no_turns")
        emotions, emo_rel = self._emotions(rel, name)
        if emotions:
            turns = [
                Turn(
                    t.speaker,
                    t.start,
                    t.end,
                    t.text,
                    t.kind,
                    {**t.labels, **emotions.get(t.labels["utterance_id"], {})},
                )
                for t in turns
            ]
        wav = self.path(wav_rel)
        info = checked_audio_info(
            wav, sample_rate=int(self.options["sample_rate"]), channels=self.options["channels"]
        )
        check_turn_timing(turns, info.duration_s, wav, float(self.options["timing_slack_s"]))
        turns, fixes = merge_same_speaker_duplicates(turns, trans)
        ids = list(dict.fromkeys(t.speaker for t in turns if t.kind is TurnKind.TURN))
        if len(ids) != 2:
            raise InputError(trans, f"expected two speakers, found {ids}", reason="speaker_count")
        by_spk = {
            s: [(t.start, t.end) for t in turns if t.speaker == s and t.kind is TurnKind.TURN]
            for s in ids
        }
        decision = decide_channels(
            wav, info, by_spk, min_separation_db=float(self.options["min_channel_separation_db"])
        )
        source: AudioSource = (
            MultichannelSource(str(wav), decision.channels)
            if decision.channels is not None
            else MixedMonoSource(str(wav), None)
        )
        g: dict[str, Literal["M", "F"]] = {"F": "F", "M": "M"}
        speakers = (
            Speaker(ids[0], Role.HUMAN, g[ids[0][-1]], "en"),
            Speaker(ids[1], Role.HUMAN, g[ids[1][-1]], "en"),
        )
        mapped = self.map_topic(iemocap_scenario(name))
        return Dialogue(
            id=self.dialogue_id(name),
            corpus=self.name,
            source_id=name,
            category=Category.HH,
            language="en",
            topic=mapped.topic,
            design=DesignFields(source_topic=mapped.source_topic),
            speakers=speakers,
            turns=tuple(turns),
            source=source,
            duration_s=round(info.duration_s, 6),
            provenance={
                "adapter": self.name,
                "session": rel.parts[0],
                "transcription": trans_rel.as_posix(),
                "emo_evaluation": emo_rel,
                "wav": wav_rel.as_posix(),
                "channel_map": "energy" if decision.channels is not None else "mixed",
                "channel_separation_db": round(decision.score_db, 2),
                "skipped_lines": skipped,
                "text_encoding": encoding,
                **fixes.provenance(),
            },
        )
