"""A corpus of stereo WAV + Praat TextGrid, read by a short adapter over corpora.formats, goes
through ingest → process → publish; the adapter's line count is part of the test."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from duetflow.audio.io import write_audio
from duetflow.config import RunConfig
from duetflow.corpora import registry_entries
from duetflow.demo.voice import random_voice, room_tone, speech
from duetflow.pipeline.commands import process_workdir
from duetflow.pipeline.ingest import ingest
from duetflow.records.manifest import iter_dialogues
from duetflow.release.publish import publish
from duetflow.release.pull import pull
from duetflow.release.validate import validate_release
from duetflow.seeding import rng_for

#: The whole adapter a data engineer writes for "<name>.wav + <name>.TextGrid, a tier per
#: speaker, one speaker per channel" (counted below: at most 40 lines of code).
ADAPTER = '''
from collections.abc import Iterator
from functools import partial
from typing import Any, ClassVar

from duetflow.corpora.adapter import CorpusAdapter
from duetflow.corpora.formats.dialogue import annotated_dialogue, paired_items, require
from duetflow.corpora.formats.textgrid import read_textgrid
from duetflow.records.dialogue import Dialogue, Rejection


class PraatAdapter(CorpusAdapter):
    """<root>/<name>.wav (stereo, 16 kHz) + <root>/<name>.TextGrid (a tier per speaker)."""

    name: ClassVar[str] = "praat_corpus"
    licence: ClassVar[str | None] = "CC-BY-4.0"
    default_options: ClassVar[dict[str, Any]] = {"sample_rate": 16000, "language": "en"}

    def scan(self) -> Iterator[Dialogue | Rejection]:
        self.check_root()
        for item in paired_items(self.root, ".wav", ".TextGrid"):
            yield self.guarded(item, self.root / item, partial(self._dialogue, item))

    def _dialogue(self, item: str) -> Dialogue:
        lang = self.options["language"]
        grid = require(self.path(f"{item}.TextGrid"), "missing_annotation")
        annotation = read_textgrid(grid, language=lang)
        return annotated_dialogue(
            self, item, annotation, self.path(f"{item}.wav"),
            sample_rate=self.options["sample_rate"], channels=(2,), language=lang,
        )
'''

SR = 16000


def _code_lines(src: str) -> int:
    """Lines that are neither blank nor a comment nor the class docstring."""
    return sum(
        1 for ln in src.splitlines() if ln.strip() and not ln.strip().startswith(("#", '"""'))
    )


def _long_textgrid(tiers: dict[str, list[tuple[float, float, str]]], xmax: float) -> str:
    """A TextGrid as Praat's "Save as text file..." writes it: empty intervals fill the gaps."""
    out = ['File type = "ooTextFile"', 'Object class = "TextGrid"', "", "xmin = 0 ",
           f"xmax = {xmax} ", "tiers? <exists> ", f"size = {len(tiers)} ", "item []: "]  # fmt: skip
    for k, (name, spans) in enumerate(tiers.items(), 1):
        filled, t = [], 0.0
        for a, b, text in spans:
            if a > t:
                filled.append((t, a, ""))
            filled.append((a, b, text))
            t = b
        if t < xmax:
            filled.append((t, xmax, ""))
        out += [f"    item [{k}]:", '        class = "IntervalTier" ', f'        name = "{name}" ',
                "        xmin = 0 ", f"        xmax = {xmax} ",
                f"        intervals: size = {len(filled)} "]  # fmt: skip
        for i, (a, b, text) in enumerate(filled, 1):
            out += [f"        intervals [{i}]:", f"            xmin = {a} ",
                    f"            xmax = {b} ", f'            text = "{text}" ']  # fmt: skip
    return "\n".join(out) + "\n"


def _write_corpus(root: Path) -> dict[str, list[tuple[str, float, float]]]:
    """Three recordings ~45 s long (one saved as UTF-16, one with its channels the other way
    round), an audio file without TextGrid and a TextGrid without audio."""
    root.mkdir(parents=True)
    truth = {}
    for k, name in enumerate(["rec_a", "rec_b", "rec_c"]):
        rng = rng_for(0, "praat", name)
        voices = {"Anna": random_voice(rng, "F"), "Ben": random_voice(rng, "M")}
        t, spans = 0.7, []
        for i in range(16):
            who = ("Anna", "Ben")[i % 2]
            dur = round(float(rng.uniform(1.6, 3.2)), 3)
            spans.append((who, round(t, 3), round(t + dur, 3)))
            t += dur + float(rng.uniform(0.25, 0.7))
        n = int((t + 1.0) * SR)
        tracks = {w: room_tone(n / SR, SR, -58.0, rng) for w in voices}
        for who, a, b in spans:
            sig = speech(b - a, SR, voices[who], rng)
            i = round(a * SR)
            tracks[who][i : i + len(sig)] += sig[: n - i]
        left, right = ("Ben", "Anna") if k == 1 else ("Anna", "Ben")
        stereo = np.stack([tracks[left] + 0.05 * tracks[right],
                           tracks[right] + 0.05 * tracks[left]], axis=1)  # fmt: skip
        write_audio(root / f"{name}.wav", 0.5 * stereo, SR)
        tiers = {w: [(a, b, f"words {j} ünïcode" if k == 2 else f"words {j}")
                     for j, (s, a, b) in enumerate(spans) if s == w] for w in voices}  # fmt: skip
        text = _long_textgrid(tiers, round(n / SR, 4))
        data = b"\xfe\xff" + text.encode("utf-16-be") if k == 2 else text.encode("utf-8")
        (root / f"{name}.TextGrid").write_bytes(data)
        truth[name] = spans
    write_audio(root / "orphan_audio.wav", np.zeros((SR, 2), np.float32), SR)
    (root / "orphan_grid.TextGrid").write_text(_long_textgrid({"A": [(0, 1, "x")]}, 1.0))
    return truth


@pytest.fixture
def praat_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "praat_corpus.py").write_text(ADAPTER)
    dist = site / "praat_corpus-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: praat-corpus\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[duetflow.corpora]\npraat_corpus = praat_corpus:PraatAdapter\n"
    )
    monkeypatch.syspath_prepend(str(site))
    registry_entries(refresh=True)
    yield site
    sys.modules.pop("praat_corpus", None)
    monkeypatch.undo()
    registry_entries(refresh=True)


def test_adapter_is_at_most_40_lines() -> None:
    assert _code_lines(ADAPTER) <= 40, _code_lines(ADAPTER)


def test_stereo_textgrid_corpus_ingest_process_publish(praat_plugin: Path, tmp_path: Path) -> None:
    truth = _write_corpus(tmp_path / "corpus")
    cfg = RunConfig()
    rep = ingest("praat_corpus", tmp_path / "corpus", tmp_path / "intake", cfg)
    assert (rep.found, rep.kept) == (5, 3)
    assert rep.by_reason == {"missing_annotation": 1, "missing_file": 1}
    dialogues = {d.source_id: d for d in iter_dialogues(tmp_path / "intake")}
    for name, spans in truth.items():
        d = dialogues[name]
        assert [(t.speaker, t.start, t.end) for t in d.turns] == spans
        # the channel map comes from the audio: rec_b has Anna on the right channel
        want = {"Anna": 1, "Ben": 0} if name == "rec_b" else {"Anna": 0, "Ben": 1}
        assert d.source.kind == "multichannel" and dict(d.source.channels) == want
        assert d.speakers[0].id == "Anna" and d.licence == "CC-BY-4.0"
    assert dialogues["rec_c"].turns[0].text == "words 0 ünïcode"
    assert dialogues["rec_c"].provenance["text_encoding"] == "utf-16"

    processed = process_workdir(tmp_path / "intake", tmp_path / "rendered", cfg)
    assert processed.rendered >= 3, processed
    release = publish([tmp_path / "rendered"], str(tmp_path / "store"), cfg)
    assert release.counts["dialogues"] == processed.rendered
    assert validate_release(str(tmp_path / "store")) == []
    split = next(s for s in ("train", "val", "test") if release.counts[s])
    pulled = pull(str(tmp_path / "store"), "latest", split, tmp_path / "pulled")
    assert pulled.manifest.is_file()
