"""``duetflow corpora new NAME``: the three files a new corpus needs, ready to fill in.

The generated adapter already works for a simple layout (one folder per dialogue holding a
``turns.tsv`` and an ``audio.wav``), and the generated sample generator writes exactly that
layout, so the generated test passes before anything is edited. Two layouts are offered:
``mono`` (both speakers mixed in one channel) and ``stereo`` (one channel per speaker, as in
telephone corpora such as Fisher or Switchboard: the transcript names the side, the energy of
each side's turns confirms the channel). A data engineer then changes
the parsing (marked ``TODO``) to the real corpus layout, the generator to mimic it, and the
test to assert the corpus's quirks. docs/adding-a-corpus.md walks through it.

Over 500 lines because most of it is the generated files' text (adapter, sample generator and
test templates for both layouts), kept beside the code that fills them in.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from pathlib import Path

from duetflow.corpora.scaffold_formats import (
    ANNOTATED_ADAPTER_TEMPLATE,
    ANNOTATED_SAMPLES_TEMPLATE,
    FORMAT_LAYOUTS,
)
from duetflow.corpora.scaffold_formats import fill as fill_format
from duetflow.errors import ConfigError

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


#: Layouts the scaffold can start from (``duetflow corpora new NAME --layout ...``) and the
#: AudioSource kind each one's adapter yields (checked by the generated test). ``textgrid``,
#: ``eaf`` and ``rttm`` read a recording + an annotation file per dialogue through
#: :mod:`duetflow.corpora.formats` (templates in :mod:`duetflow.corpora.scaffold_formats`).
LAYOUT_SOURCE = {
    "mono": "mixed_mono",
    "stereo": "multichannel",
    "textgrid": "multichannel",
    "eaf": "multichannel",
    "rttm": "multichannel",
}
LAYOUTS = tuple(LAYOUT_SOURCE)


@dataclass(frozen=True)
class Scaffold:
    """What :func:`scaffold` wrote and the entry points to register."""

    adapter: Path
    samples: Path
    test: Path
    entry_point: str  # [project.entry-points."duetflow.corpora"]
    samples_entry_point: str  # [project.entry-points."duetflow.samples"]


def class_name(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_")) + "Adapter"


def check_name(name: str) -> None:
    if not _NAME.match(name) or keyword.iskeyword(name):
        raise ConfigError(
            f"corpus name {name!r} must be a lowercase Python identifier (letters, digits, _)"
        )


def render(
    name: str, adapter_module: str, samples_module: str, layout: str = "mono"
) -> dict[str, str]:
    """Source text of the adapter, sample generator and test for corpus ``name``."""
    check_name(name)
    if layout not in LAYOUT_SOURCE:
        raise ConfigError(f"unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
    cls = class_name(name)
    subst = {
        "__NAME__": name,
        "__CLASS__": cls,
        "__ADAPTER_MODULE__": adapter_module,
        "__SAMPLES_MODULE__": samples_module,
        "__SOURCE_KIND__": LAYOUT_SOURCE[layout],
    }

    def fill(text: str) -> str:
        for k, v in subst.items():
            text = text.replace(k, v)
        return text

    if layout in FORMAT_LAYOUTS:
        return {
            "adapter": fill(fill_format(ANNOTATED_ADAPTER_TEMPLATE, layout)),
            "samples": fill(fill_format(ANNOTATED_SAMPLES_TEMPLATE, layout)),
            "test": fill(TEST_TEMPLATE),
        }
    stereo = layout == "stereo"
    return {
        "adapter": fill(STEREO_ADAPTER_TEMPLATE if stereo else ADAPTER_TEMPLATE),
        "samples": fill(STEREO_SAMPLES_TEMPLATE if stereo else SAMPLES_TEMPLATE),
        "test": fill(TEST_TEMPLATE),
    }


def scaffold(name: str, project: Path, *, force: bool = False, layout: str = "mono") -> Scaffold:
    """Write the adapter, sample generator and test of corpus ``name`` under ``project``.

    ``project`` is a source tree with ``src/duetflow`` and ``tests`` (this repository or a
    checkout of it); :func:`duetflow.corpora.scaffold_package.scaffold_package` writes a
    separate plug-in package instead. Existing files are never overwritten unless ``force``.
    ``layout`` is one of :data:`LAYOUTS` (``mono``: one mixed channel; ``stereo``: one channel
    per speaker; ``textgrid``/``eaf``/``rttm``: a recording + an annotation file).
    """
    check_name(name)
    adapter_module = f"duetflow.corpora.{name}"
    samples_module = f"duetflow.demo.{name}"
    files = render(name, adapter_module, samples_module, layout)
    out = Scaffold(
        adapter=project / "src" / "duetflow" / "corpora" / f"{name}.py",
        samples=project / "src" / "duetflow" / "demo" / f"{name}.py",
        test=project / "tests" / "corpora" / f"test_{name}.py",
        entry_point=f'{name} = "{adapter_module}:{class_name(name)}"',
        samples_entry_point=f'{name} = "{samples_module}"',
    )
    targets = {"adapter": out.adapter, "samples": out.samples, "test": out.test}
    existing = [str(p) for p in targets.values() if p.exists()]
    if existing and not force:
        raise ConfigError(f"refusing to overwrite {existing} (use --force)")
    for key, path in targets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[key], encoding="utf-8")
    return out


#: the part both adapter layouts share: one dialogue per folder, its turns in ``turns.tsv``
_FOLDER_ITEMS = """    def _items(self) -> list[str]:
        self.check_root()
        folders = (p for p in self.root.iterdir() if p.is_dir())
        return sorted(p.name for p in folders if not p.name.startswith("."))

    def count_sources(self) -> int | None:
        return len(self._items())

    def scan(self) -> Iterator[Dialogue | Rejection]:
        for item in self._items():
            yield self.guarded(item, self.root / item, partial(self._dialogue, item))

    def _dialogue(self, item: str) -> Dialogue:
        # TODO: parse the real annotation format here.
        tsv = self.path(item, "turns.tsv")
        text = read_text(tsv, self.options["encodings"], self.options["language"])
"""

ADAPTER_TEMPLATE = (
    '''"""__NAME__: corpus adapter (generated by `duetflow corpora new __NAME__`).

Layout this adapter reads (TODO: replace with the real corpus layout and its quirks)::

    <root>/<dialogue>/turns.tsv   header, then speaker<TAB>start<TAB>end<TAB>text (seconds)
    <root>/<dialogue>/audio.wav   both speakers mixed, mono, SAMPLE_RATE Hz

Every source item must yield exactly one Dialogue or Rejection (``self.guarded`` does that).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import partial
from typing import Any, ClassVar

from duetflow.corpora.adapter import (
    CorpusAdapter,
    DuplicateGuard,
    check_turn_timing,
    checked_audio_info,
    read_text,
)
from duetflow.errors import InputError
from duetflow.records.dialogue import (
    Category,
    Dialogue,
    MixedMonoSource,
    Rejection,
    Role,
    Speaker,
    Turn,
    TurnKind,
)


class __CLASS__(CorpusAdapter):
    """Adapter for the __NAME__ corpus."""

    name: ClassVar[str] = "__NAME__"
    # TODO: the corpus's licence: an SPDX id (CC-BY-4.0) or LicenseRef-<name> for a named EULA
    licence: ClassVar[str | None] = "LicenseRef-__NAME__-TODO"
    default_options: ClassVar[Mapping[str, Any]] = {
        "sample_rate": 16000,  # TODO: the corpus spec's sample rate
        "language": "en",  # TODO: the corpus language
        "encodings": [],  # legacy encodings to try after UTF-8
    }

'''
    + _FOLDER_ITEMS
    + """        guard = DuplicateGuard()
        turns: list[Turn] = []
        for lineno, line in enumerate(text.splitlines()[1:], 2):
            if not line.strip():
                continue
            fields = line.rstrip("\\r").split("\\t")
            if len(fields) != 4:
                raise InputError(
                    tsv,
                    f"expected 4 fields, got {len(fields)}",
                    reason="malformed_line",
                    line=lineno,
                )
            speaker, start_s, end_s, words = fields
            try:
                start, end = float(start_s), float(end_s)
            except ValueError:
                raise InputError(
                    tsv, "times must be numbers", reason="malformed_line", line=lineno
                ) from None
            if not start < end:
                raise InputError(
                    tsv, f"start {start} >= end {end}", reason="bad_timing", line=lineno
                )
            guard.check(f"{speaker}@{start}", f"{tsv}:{lineno}")
            turns.append(Turn(speaker, start, end, words, TurnKind.TURN, {}))
        turns.sort(key=lambda t: (t.start, t.end))
        ids = list(dict.fromkeys(t.speaker for t in turns))
        if len(ids) != 2:
            raise InputError(tsv, f"expected two speakers, found {ids}", reason="speaker_count")
        wav = self.path(item, "audio.wav")
        info = checked_audio_info(wav, sample_rate=int(self.options["sample_rate"]), channels=[1])
        check_turn_timing(turns, info.duration_s, wav, slack_s=0.5)
        lang = str(self.options["language"])
        return Dialogue(
            id=self.dialogue_id(item),
            corpus=self.name,
            source_id=item,
            category=Category.HH,
            language=lang,
            topic=self.map_topic(None).topic,  # map the source's topic label, if it has one
            speakers=(
                Speaker(ids[0], Role.HUMAN, None, lang),
                Speaker(ids[1], Role.HUMAN, None, lang),
            ),
            turns=tuple(turns),
            source=MixedMonoSource(str(wav)),
            duration_s=round(info.duration_s, 6),
            provenance={"adapter": self.name, "folder": item},
        )
"""
)

SAMPLES_TEMPLATE = '''"""Sample data for the __NAME__ adapter (`duetflow corpora new __NAME__`).

TODO: write the real corpus layout here (file names, line formats, WAV headers), including
one broken item per quirk the adapter must quarantine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from duetflow.audio.io import write_audio
from duetflow.records.dialogue import dialogue_id
from duetflow.demo.voice import random_voice, room_tone, speech
from duetflow.seeding import rng_for

CORPUS = "__NAME__"
FOLDER = CORPUS  # the folder under the samples root (`duetflow samples make`)
SR = 16000


def generate(root: Path, seed: int = 0, scale: int = 1) -> dict[str, Any]:
    """Write ``root/__NAME__``; return truth records and the deliberately broken items."""
    base = root / CORPUS
    dialogues: dict[str, Any] = {}
    broken: list[dict[str, Any]] = []
    for k in range(3 * scale):
        name = f"dlg{k:04d}"
        rng = rng_for(seed, CORPUS, name)
        voices = {"A": random_voice(rng, "F"), "B": random_voice(rng, "M")}
        t, turns = 0.5, []
        for i in range(8):
            spk = "AB"[i % 2]
            dur = float(rng.uniform(1.5, 3.5))
            turns.append((spk, round(t, 3), round(t + dur, 3)))
            t += dur + float(rng.uniform(0.1, 0.6))
        n = int((t + 0.5) * SR)
        audio = room_tone(n / SR, SR, -55.0, rng)
        for spk, s, e in turns:
            sig = speech(e - s, SR, voices[spk], rng)
            a = round(s * SR)
            audio[a : a + len(sig)] += sig[: n - a]
        folder = base / name
        folder.mkdir(parents=True, exist_ok=True)
        write_audio(folder / "audio.wav", audio, SR)
        rows = ["speaker\\tstart\\tend\\ttext"]
        rows += [f"{s}\\t{a:.3f}\\t{b:.3f}\\thello" for s, a, b in turns]
        if k % 3 == 2:  # one broken item per unit: a start >= end line
            rows.append("A\\t9.000\\t8.000\\tbackwards")
            did = dialogue_id(CORPUS, name)
            broken.append({"corpus": CORPUS, "item_id": did, "reason": "bad_timing"})
        (folder / "turns.tsv").write_text("\\n".join(rows) + "\\n", encoding="utf-8")
        if k % 3 != 2:
            dialogues[dialogue_id(CORPUS, name)] = {
                "corpus": CORPUS,
                "source_id": name,
                "turns": [{"speaker": s, "start": a, "end": b} for s, a, b in turns],
                "interruptions": [],
                "backchannels": [],
            }
    return {"dialogues": dialogues, "broken": broken}
'''

TEST_TEMPLATE = '''"""Tests of the __NAME__ adapter on its sample data (`duetflow corpora new`)."""

from __future__ import annotations

from pathlib import Path

from __ADAPTER_MODULE__ import __CLASS__
from duetflow.records.dialogue import Dialogue, Rejection
from __SAMPLES_MODULE__ import generate


def test___NAME___adapter_matches_truth(tmp_path: Path) -> None:
    truth = generate(tmp_path, seed=0, scale=1)
    items = list(__CLASS__(tmp_path / "__NAME__").scan())
    kept = {d.id: d for d in items if isinstance(d, Dialogue)}
    rejected = {r.item_id: r.reason for r in items if isinstance(r, Rejection)}
    assert set(kept) == set(truth["dialogues"])
    assert rejected == {b["item_id"]: b["reason"] for b in truth["broken"]}
    for did, d in kept.items():
        expected = truth["dialogues"][did]["turns"]
        got = [{"speaker": t.speaker, "start": t.start, "end": t.end} for t in d.turns]
        assert got == expected
        assert d.source.kind == "__SOURCE_KIND__"
'''

STEREO_ADAPTER_TEMPLATE = (
    '''"""__NAME__: corpus adapter, one channel per speaker.

Generated by `duetflow corpora new __NAME__ --layout stereo`.

Layout this adapter reads (TODO: replace with the real corpus layout and its quirks)::

    <root>/<dialogue>/turns.tsv   header, then side<TAB>start<TAB>end<TAB>text (seconds);
                                  side A or B, as telephone transcripts (Fisher) name them
    <root>/<dialogue>/audio.wav   stereo, SAMPLE_RATE Hz: side A on channel 0, side B on 1

One channel per speaker: the renderer takes each speaker from their own channel, so overlaps
stay separable. The transcript's side → channel map is checked against the energy of each
side's turns (``decide_channels``); a file whose channels are swapped is rejected
(``channel_mismatch``) instead of silently swapping the speakers.

Every source item must yield exactly one Dialogue or Rejection (``self.guarded`` does that).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import partial
from typing import Any, ClassVar

from duetflow.corpora.adapter import (
    CorpusAdapter,
    DuplicateGuard,
    check_turn_timing,
    checked_audio_info,
    decide_channels,
    read_text,
)
from duetflow.errors import InputError
from duetflow.records.dialogue import (
    Category,
    Dialogue,
    MultichannelSource,
    Rejection,
    Role,
    Speaker,
    Turn,
    TurnKind,
)

SIDES = {"A": 0, "B": 1}  # transcript side -> channel (TODO: the corpus's convention)


class __CLASS__(CorpusAdapter):
    """Adapter for the __NAME__ corpus (one channel per speaker)."""

    name: ClassVar[str] = "__NAME__"
    # TODO: the corpus's licence: an SPDX id (CC-BY-4.0) or LicenseRef-<name> for a named EULA
    licence: ClassVar[str | None] = "LicenseRef-__NAME__-TODO"
    default_options: ClassVar[Mapping[str, Any]] = {
        "sample_rate": 16000,  # TODO: the corpus spec's sample rate (Fisher: 8000)
        "language": "en",  # TODO: the corpus language
        "encodings": [],  # legacy encodings to try after UTF-8
        "min_separation_db": 6.0,  # energy margin that confirms the side -> channel map
    }

'''
    + _FOLDER_ITEMS
    + """        guard = DuplicateGuard()
        turns: list[Turn] = []
        for lineno, line in enumerate(text.splitlines()[1:], 2):
            if not line.strip():
                continue
            fields = line.rstrip("\\r").split("\\t")
            if len(fields) != 4:
                raise InputError(
                    tsv,
                    f"expected 4 fields, got {len(fields)}",
                    reason="malformed_line",
                    line=lineno,
                )
            side, start_s, end_s, words = fields
            if side not in SIDES:
                raise InputError(
                    tsv, f"side {side!r} is not one of {sorted(SIDES)}", reason="malformed_line",
                    line=lineno,
                )  # fmt: skip
            try:
                start, end = float(start_s), float(end_s)
            except ValueError:
                raise InputError(
                    tsv, "times must be numbers", reason="malformed_line", line=lineno
                ) from None
            if not start < end:
                raise InputError(
                    tsv, f"start {start} >= end {end}", reason="bad_timing", line=lineno
                )
            guard.check(f"{side}@{start}", f"{tsv}:{lineno}")
            turns.append(Turn(f"{item}-{side}", start, end, words, TurnKind.TURN, {}))
        turns.sort(key=lambda t: (t.start, t.end))
        ids = list(dict.fromkeys(t.speaker for t in turns))
        if len(ids) != 2:
            raise InputError(tsv, f"expected two sides, found {ids}", reason="speaker_count")
        wav = self.path(item, "audio.wav")
        info = checked_audio_info(wav, sample_rate=int(self.options["sample_rate"]), channels=[2])
        check_turn_timing(turns, info.duration_s, wav, slack_s=0.5)
        declared = {spk: SIDES[spk.rsplit("-", 1)[1]] for spk in ids}
        spans = {spk: [(t.start, t.end) for t in turns if t.speaker == spk] for spk in ids}
        decision = decide_channels(
            wav, info, spans, min_separation_db=float(self.options["min_separation_db"])
        )
        if decision.channels is not None and decision.channels != declared:
            raise InputError(
                wav,
                f"the transcript puts {declared} but the turns' energy says "
                f"{decision.channels} ({decision.score_db:.1f} dB apart)",
                reason="channel_mismatch",
            )
        lang = str(self.options["language"])
        return Dialogue(
            id=self.dialogue_id(item),
            corpus=self.name,
            source_id=item,
            category=Category.HH,
            language=lang,
            topic="",
            speakers=(
                Speaker(ids[0], Role.HUMAN, None, lang),
                Speaker(ids[1], Role.HUMAN, None, lang),
            ),
            turns=tuple(turns),
            source=MultichannelSource(str(wav), declared),
            duration_s=round(info.duration_s, 6),
            provenance={
                "adapter": self.name,
                "folder": item,
                "channels": declared,
                "channel_check_db": round(decision.score_db, 2),
            },
        )
"""
)

STEREO_SAMPLES_TEMPLATE = '''"""Sample data of the __NAME__ adapter, one channel per speaker.

Generated by `duetflow corpora new __NAME__ --layout stereo`.

Stereo files, one side per channel, with the other side leaking in 20 dB down (as on a real
two-line recording). TODO: write the real corpus layout here (file names, line formats, WAV
headers), including one broken item per quirk the adapter must quarantine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from duetflow.audio.io import write_audio
from duetflow.records.dialogue import dialogue_id
from duetflow.demo.voice import random_voice, room_tone, speech
from duetflow.seeding import rng_for

CORPUS = "__NAME__"
FOLDER = CORPUS  # the folder under the samples root (`duetflow samples make`)
SR = 16000
LEAK = 0.1  # -20 dB crosstalk


def generate(root: Path, seed: int = 0, scale: int = 1) -> dict[str, Any]:
    """Write ``root/__NAME__``; return truth records and the deliberately broken items.

    Per unit of three: a good dialogue, a good one, and one whose channels are swapped
    (``channel_mismatch``).
    """
    base = root / CORPUS
    dialogues: dict[str, Any] = {}
    broken: list[dict[str, Any]] = []
    for k in range(3 * scale):
        name = f"call{k:04d}"
        rng = rng_for(seed, CORPUS, name)
        voices = {"A": random_voice(rng, "F"), "B": random_voice(rng, "M")}
        t, turns = 0.5, []
        for i in range(8):
            side = "AB"[i % 2]
            dur = float(rng.uniform(1.5, 3.5))
            turns.append((side, round(t, 3), round(t + dur, 3)))
            t += dur + float(rng.uniform(0.1, 0.6))
        n = int((t + 0.5) * SR)
        tracks = {s: room_tone(n / SR, SR, -55.0, rng) for s in "AB"}
        for side, s, e in turns:
            sig = speech(e - s, SR, voices[side], rng)
            a = round(s * SR)
            tracks[side][a : a + len(sig)] += sig[: n - a]
        swapped = k % 3 == 2
        ch0, ch1 = (tracks["B"], tracks["A"]) if swapped else (tracks["A"], tracks["B"])
        stereo = np.stack([ch0 + LEAK * ch1, ch1 + LEAK * ch0], axis=1)
        folder = base / name
        folder.mkdir(parents=True, exist_ok=True)
        write_audio(folder / "audio.wav", 0.5 * stereo, SR)
        rows = ["side\\tstart\\tend\\ttext"]
        rows += [f"{s}\\t{a:.3f}\\t{b:.3f}\\thello" for s, a, b in turns]
        (folder / "turns.tsv").write_text("\\n".join(rows) + "\\n", encoding="utf-8")
        did = dialogue_id(CORPUS, name)
        if swapped:
            broken.append({"corpus": CORPUS, "item_id": did, "reason": "channel_mismatch"})
            continue
        dialogues[did] = {
            "corpus": CORPUS,
            "source_id": name,
            "turns": [{"speaker": f"{name}-{s}", "start": a, "end": b} for s, a, b in turns],
            "interruptions": [],
            "backchannels": [],
        }
    return {"dialogues": dialogues, "broken": broken}
'''
