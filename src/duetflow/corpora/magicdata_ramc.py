"""MagicData-RAMC: ~30 min Mandarin phone conversations with timed, tagged transcripts.

Layout: ``MDT2021S003/TXT/<rec>.txt`` + ``MDT2021S003/WAV/<rec>.wav`` (16 kHz), speaker
genders in ``SPKINFO.txt``, speaker pair and topic in ``UTTERANCEINFO.txt``, official splits in
``DataPartition/{train,dev,test}.tsv`` (first line a path, then ``<rec>.wav<TAB><size>``).

TXT lines are ``[start,end]<TAB>G-id<TAB>男|女,普通话<TAB>text`` (exactly four fields; a BOM
may open the file; whitespace inside the brackets is tolerated). Quirks handled:

* ``G00000000`` (the "no speaker" id) and tag-only texts (``[MUSIC]``, ``[SONANT]``,
  ``[LAUGHTER]``) become ``TurnKind.NONSPEECH`` turns; ``G00000000`` is not a dialogue speaker.
* The spoken collection header ("爱数智慧语音采集…") is labelled ``collection_header=1`` and
  ``[*]``-only turns ``unintelligible=1``; tags are kept in ``labels["tags"]``.
* Segments with ``start >= end`` exist in the release; MagicHub's own extractor skips them, so
  by default (``bad_segments: skip``) they are dropped and listed in provenance; with
  ``bad_segments: reject`` the recording is rejected (``bad_timing``).
* Mono files are a :class:`MixedMonoSource`; a stereo file becomes a
  :class:`MultichannelSource` only when its channels separate the two speakers by energy
  during their turns, otherwise it is downmixed.

Transcripts that are not UTF-8 are tried as GB18030 (the usual legacy Chinese encoding); the
result must read as Mandarin (:func:`~duetflow.corpora.text.implausible_text`: a Big5 file
decodes as GB18030 too, into nonsense), else the recording is rejected ``bad_encoding``. The
encoding used is recorded in provenance (``text_encoding``). A line pasted twice is heard once
(``merged_duplicate_turns``); one speaker's segments overlapping by a little segmentation slack
are joined (``merged_overlapping_turns``), larger overlaps reject the recording
(``overlapping_turns``; see :func:`~duetflow.corpora.source_checks.merge_same_speaker_duplicates`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Literal

from duetflow.corpora.adapter import (
    CorpusAdapter,
    check_turn_timing,
    checked_audio_info,
    decide_channels,
    merge_same_speaker_duplicates,
    read_text,
    read_text_as,
)
from duetflow.errors import ConfigError, InputError
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

NO_SPEAKER = "G00000000"
_TIME = re.compile(r"^\[\s*(\d+(?:\.\d+)?)\s*,\s*(\d+(?:\.\d+)?)\s*\]$")
_SPK = re.compile(r"^G\d{8}$")
_REC = re.compile(r"(\d+)-(\d+)-(\d+)-(\d+)$")
_TAG = re.compile(r"\[(?:\+\+|\+|\*|SONANT|MUSIC|LAUGHTER|[A-Z]+)\]")
_NONSPEECH_TAGS = {"[SONANT]", "[MUSIC]", "[LAUGHTER]"}
_PUNCT = re.compile(r"[\s，。？！、；：“”‘’（）…,.?!;:'\"()\-]+")
_HEADER = "爱数智慧语音采集"
_GENDER: dict[str, Literal["M", "F"]] = {"男": "M", "女": "F", "M": "M", "F": "F"}


def _rec_key(stem: str) -> tuple[tuple[int, ...], str]:
    m = _REC.search(stem)
    return (tuple(int(g) for g in m.groups()) if m else (1 << 30,), stem)


class MagicDataRamcAdapter(CorpusAdapter):
    """Adapter for the ``MagicData-RAMC/`` folder."""

    name: ClassVar[str] = "magicdata_ramc"
    licence: ClassVar[str | None] = "CC-BY-NC-ND-4.0"
    default_options: ClassVar[Mapping[str, Any]] = {
        "sample_rate": 16000,
        "channels": [1, 2],  # the sources disagree on mono vs stereo; both are accepted
        "bad_segments": "skip",  # "skip" (MagicHub's extractor) or "reject" the recording
        "min_channel_separation_db": 6.0,
        "timing_slack_s": 0.5,
        "encodings": ["gb18030"],
        "data_dir": "MDT2021S003",
    }

    def __init__(
        self,
        root: Path,
        options: Mapping[str, Any] | None = None,
        *,
        config: Any = None,
    ) -> None:
        super().__init__(root, options, config=config)
        if self.options["bad_segments"] not in ("skip", "reject"):
            raise ConfigError(
                f"corpus magicdata_ramc: bad_segments must be 'skip' or 'reject', "
                f"got {self.options['bad_segments']!r}"
            )
        self._tables: tuple[dict[str, Any], dict[str, Any], dict[str, str]] | None = None

    @property
    def data_dir(self) -> Path:
        return Path(str(self.options["data_dir"]))

    # -- corpus-level tables (hundreds of rows; read once) ---------------------------------------

    def _table(self, name: str) -> list[list[str]]:
        path = self.root / self.data_dir / name
        if not path.exists():
            return []
        try:
            text = read_text(self.path(self.data_dir / name), self.options["encodings"], "zh")
        except InputError as e:
            raise ConfigError(f"corpus magicdata_ramc: cannot read {name}: {e}") from None
        rows = [line.rstrip("\r").split("\t") for line in text.splitlines() if line.strip()]
        return rows[1:]  # header

    def tables(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
        """(speaker -> gender, recording -> (spk1, spk2, topic), recording -> split)."""
        if self._tables is None:
            genders: dict[str, Any] = {}
            for row in self._table("SPKINFO.txt"):
                if len(row) >= 3 and _SPK.match(row[1].strip()):
                    genders[row[1].strip()] = _GENDER.get(row[2].strip())
            recs: dict[str, Any] = {}
            for row in self._table("UTTERANCEINFO.txt"):
                if len(row) >= 5:
                    rec = row[1].strip().removesuffix(".wav")
                    recs[rec] = (row[2].strip(), row[3].strip(), row[4].strip())
            splits: dict[str, str] = {}
            part = self.root / "DataPartition"
            for split in ("train", "dev", "test"):
                p = part / f"{split}.tsv"
                if not p.exists():
                    continue
                text = read_text(
                    self.path(p.relative_to(self.root)), self.options["encodings"], "zh"
                )
                for line in text.splitlines()[1:]:  # the first line is a path
                    first = line.split("\t")[0].strip().replace("\\", "/").rsplit("/", 1)[-1]
                    if first.endswith(".wav"):
                        splits[first[:-4]] = split
            self._tables = (genders, recs, splits)
        return self._tables

    def _items(self) -> list[str]:
        self.check_root(f"{self.data_dir}/TXT")
        names: set[str] = set()
        for sub, ext in (("TXT", ".txt"), ("WAV", ".wav")):
            d = self.root / self.data_dir / sub
            if d.is_dir():
                names.update(
                    p.stem for p in d.iterdir() if p.suffix == ext and not p.name.startswith(".")
                )
        return sorted(names, key=_rec_key)

    def count_sources(self) -> int | None:
        return len(self._items())

    def scan(self) -> Iterator[Dialogue | Rejection]:
        items = self._items()
        self.tables()
        for rec in items:
            where = self.root / self.data_dir / "TXT" / f"{rec}.txt"
            yield self.guarded(rec, where, partial(self._dialogue, rec))

    # -- one recording ---------------------------------------------------------------------------

    def _segments(
        self, path: Path
    ) -> tuple[list[Turn], dict[str, Literal["M", "F"] | None], list[dict[str, Any]], str]:
        decoded = read_text_as(path, self.options["encodings"], "zh")
        text = decoded.text
        turns: list[Turn] = []
        genders: dict[str, Literal["M", "F"] | None] = {}
        skipped: list[dict[str, Any]] = []
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = raw.strip("\r\n\ufeff")
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) != 4:
                raise InputError(
                    path,
                    f"expected 4 tab-separated fields, got {len(fields)}: {line[:60]!r}",
                    reason="malformed_line",
                    line=lineno,
                )
            times, spk, meta, body = (f.strip() for f in fields)
            m = _TIME.match(times)
            if m is None:
                raise InputError(
                    path, f"bad time field {times!r}", reason="malformed_line", line=lineno
                )
            if not _SPK.match(spk):
                raise InputError(
                    path, f"bad speaker id {spk!r}", reason="malformed_line", line=lineno
                )
            start, end = float(m.group(1)), float(m.group(2))
            if not start < end:
                if self.options["bad_segments"] == "reject":
                    raise InputError(
                        path,
                        f"segment start {start} >= end {end}",
                        reason="bad_timing",
                        line=lineno,
                    )
                skipped.append({"line": lineno, "start": start, "end": end, "reason": "bad_timing"})
                continue
            gender = _GENDER.get(meta.split(",")[0].strip())
            if spk != NO_SPEAKER:
                genders.setdefault(spk, gender)
            tags = _TAG.findall(body)
            rest = _PUNCT.sub("", _TAG.sub("", body))
            labels: dict[str, str] = {}
            if tags:
                labels["tags"] = " ".join(tags)
            kind = TurnKind.TURN
            if spk == NO_SPEAKER or (tags and not rest and set(tags) <= _NONSPEECH_TAGS):
                kind = TurnKind.NONSPEECH
            elif tags and not rest and set(tags) <= {"[*]", "[+]", "[++]"} and "[*]" in tags:
                labels["unintelligible"] = "1"
            if rest.startswith(_HEADER):
                labels["collection_header"] = "1"
            turns.append(Turn(spk, start, end, body, kind, labels))
        turns.sort(key=lambda t: (t.start, t.end))
        return turns, genders, skipped, decoded.encoding

    def _dialogue(self, rec: str) -> Dialogue:
        txt_rel = self.data_dir / "TXT" / f"{rec}.txt"
        wav_rel = self.data_dir / "WAV" / f"{rec}.wav"
        if not (self.root / txt_rel).exists() and not (self.root / txt_rel).is_symlink():
            raise InputError(
                self.root / txt_rel, "recording has no transcript", reason="missing_annotation"
            )
        turns, txt_genders, skipped, encoding = self._segments(self.path(txt_rel))
        spk_genders, recs, splits = self.tables()
        in_txt = list(dict.fromkeys(t.speaker for t in turns if t.speaker != NO_SPEAKER))
        pair = recs.get(rec)
        ids = [pair[0], pair[1]] if pair else in_txt
        if len(set(ids)) != 2 or not set(in_txt) <= set(ids):
            raise InputError(
                self.root / txt_rel,
                f"expected the two speakers {ids} of UTTERANCEINFO.txt, transcript has {in_txt}",
                reason="speaker_count",
            )
        speech = [t for t in turns if t.kind is TurnKind.TURN and t.speaker != NO_SPEAKER]
        first = next((t.speaker for t in speech if "collection_header" not in t.labels), ids[0])
        a, b = first, ids[1] if first == ids[0] else ids[0]
        wav = self.path(wav_rel)
        info = checked_audio_info(
            wav, sample_rate=int(self.options["sample_rate"]), channels=self.options["channels"]
        )
        check_turn_timing(turns, info.duration_s, wav, float(self.options["timing_slack_s"]))
        turns, fixes = merge_same_speaker_duplicates(turns, self.root / txt_rel)
        source: AudioSource = MixedMonoSource(str(wav), None)
        channel_map = "mono"
        separation = 0.0
        if info.channels == 2:
            by_spk = {s: [(t.start, t.end) for t in speech if t.speaker == s] for s in (a, b)}
            decision = decide_channels(
                wav,
                info,
                by_spk,
                min_separation_db=float(self.options["min_channel_separation_db"]),
            )
            separation = decision.score_db
            if decision.channels is not None:
                source = MultichannelSource(str(wav), decision.channels)
                channel_map = "energy"
            else:
                channel_map = "downmix"

        def speaker(sid: str) -> Speaker:
            return Speaker(sid, Role.HUMAN, spk_genders.get(sid) or txt_genders.get(sid), "zh")

        mapped = self.map_topic(pair[2] if pair else None)
        return Dialogue(
            id=self.dialogue_id(rec),
            corpus=self.name,
            source_id=rec,
            category=Category.HH,
            language="zh",
            topic=mapped.topic,
            design=DesignFields(source_topic=mapped.source_topic),
            speakers=(speaker(a), speaker(b)),
            turns=tuple(turns),
            source=source,
            duration_s=round(info.duration_s, 6),
            provenance={
                "adapter": self.name,
                "transcript": txt_rel.as_posix(),
                "wav": wav_rel.as_posix(),
                "split": splits.get(rec),
                "channel_map": channel_map,
                "channel_separation_db": round(separation, 2),
                "skipped_segments": skipped,
                "text_encoding": encoding,
                **fixes.provenance(),
            },
        )
