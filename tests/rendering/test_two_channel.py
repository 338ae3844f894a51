"""Two-channel audio (issue 27 item 1): ``render.channels: both`` on the generated sample corpora.

Each separable dialogue gets a two-channel file (A left, B right) sample-aligned with the mix;
measured on its own audio with the tests' energy instrument (``render_signals.pause_edges``,
independent of ``duetflow.audio.edges``) and BS.1770: every speaker-change pause heard across
the two channels (the first speaker's channel before the pause's middle, the next speaker's
after) is the pause heard on the mix, each speaker's loudness on their channel is their loudness
on the mix, the other channel carries no speech of theirs, and no channel has digital silence.
Each channel's pauses carry its own speaker's room tone: on a constructed recording whose two
tracks hold noise of different spectra, each channel's pauses have its own track's spectral tilt
(not the other's) at the mix's floor level, and the mix is the very mix ``channels: mono`` makes.
A mixed mono source (MagicData-RAMC's mono mix) stays mono and says so. The release carries the
file checksummed; pull fetches it; lhotse loads and validates the two-channel recordings with
per-channel supervisions; ``datasets`` loads both audio columns.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import datasets
import lhotse
import numpy as np
import pyarrow.parquet as pq
import pytest
import soundfile as sf
from scipy.signal import welch

from duetflow.audio.edges import longest_zero_run
from duetflow.audio.loudness import measure
from duetflow.config import RunConfig, build_config
from duetflow.hashing import sha256_file
from duetflow.pipeline.commands import process_workdir
from duetflow.pipeline.ingest import ingest
from duetflow.records.manifest import DIALOGUES, TURNS, iter_rows
from duetflow.release.export_hf import export_hf, hf_decode, load_hf
from duetflow.release.export_lhotse import export_lhotse
from duetflow.release.publish import publish
from duetflow.release.pull import pull
from duetflow.release.validate import validate_release
from duetflow.rendering.render import render_dialogue
from noise import noise_at
from render_signals import SR, change_pauses, make, pause_edges, segments

FOLDERS = {"iemocap": "IEMOCAP_full_release", "magicdata_ramc": "MagicData-RAMC"}


@pytest.fixture(scope="module")
def config() -> RunConfig:
    return build_config({"render": {"channels": "both"}})


@pytest.fixture(scope="module")
def rendered(
    sample_root: Path, tmp_path_factory: pytest.TempPathFactory, config: RunConfig
) -> tuple[Path, list[tuple[dict[str, Any], list[dict[str, Any]]]]]:
    base = tmp_path_factory.mktemp("two-channel")
    intakes = []
    for corpus, folder in FOLDERS.items():
        ingest(corpus, sample_root / folder, base / "intake" / corpus, config)
        intakes.append(base / "intake" / corpus)
    out = base / "out"
    process_workdir(intakes, out, config)
    turns: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in iter_rows(out / TURNS):
        turns[t["dialogue_id"]].append(t)
    return out, [(row, turns[row["dialogue_id"]]) for row in iter_rows(out / DIALOGUES)]


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64))))


def _solo(n: int, sr: int, turns: list[dict[str, Any]], speaker: str) -> np.ndarray:
    """Samples inside ``speaker``'s main turns and outside every turn of the other's."""
    own, other = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    for r in turns:
        a, b = int(round(r["start_s"] * sr)), int(round(r["end_s"] * sr))
        if r["speaker"] != speaker:
            other[a:b] = True
        elif r["kind"] == "turn":
            own[a:b] = True
    return own & ~other


def _kind(row: dict[str, Any]) -> str:
    return str(json.loads(row["provenance"])["source_kind"])


def test_separable_dialogues_get_a_two_channel_file_mono_mixes_stay_mono(
    rendered: tuple[Path, list[tuple[dict[str, Any], list[dict[str, Any]]]]],
) -> None:
    out, rows = rendered
    kinds = {_kind(r) for r, _ in rows}
    assert {"mixed_mono", "multichannel"} <= kinds
    for row, _ in rows:
        if _kind(row) == "mixed_mono":
            assert row["stereo_path"] is None and row["stereo_sha256"] is None
            assert "mixed mono" in json.loads(row["provenance"])["room_tone"]["stereo"]
            continue
        path = out / row["stereo_path"]
        assert sha256_file(path) == row["stereo_sha256"]
        info, mix = sf.info(str(path)), sf.info(str(out / row["audio_path"]))
        assert (info.channels, info.samplerate, info.frames) == (2, mix.samplerate, mix.frames)


def test_each_channel_keeps_the_gaps_and_loudness_of_the_mix(
    rendered: tuple[Path, list[tuple[dict[str, Any], list[dict[str, Any]]]]],
) -> None:
    out, rows = rendered
    changes = speakers = 0
    for row, turns in rows:
        if row["stereo_path"] is None:
            continue
        mix, sr = sf.read(out / row["audio_path"], dtype="float32")
        st, _ = sf.read(out / row["stereo_path"], dtype="float32")
        ch = {row["speaker_a"]: st[:, 0], row["speaker_b"]: st[:, 1]}
        t = np.arange(len(mix)) / sr
        for a, b in change_pauses(turns):
            mid = 0.5 * (a["end_s"] + b["start_s"])
            across = np.where(t < mid, ch[a["speaker"]], ch[b["speaker"]])
            off_m, on_m, _ = pause_edges(mix, sr, a["end_s"], b["start_s"])
            off_c, on_c, _ = pause_edges(across, sr, a["end_s"], b["start_s"])
            assert abs((on_c - off_c) - (on_m - off_m)) <= 0.003, (row["dialogue_id"], mid)
            assert abs(off_c - off_m) <= 0.003 and abs(on_c - on_m) <= 0.003
            changes += 1
        pair = (row["speaker_a"], row["speaker_b"])
        for spk, other in (pair, pair[::-1]):
            own_mix = segments(mix, sr, turns, spk)
            own_ch = segments(ch[spk], sr, turns, spk)
            assert abs(measure(own_ch, sr).lufs - measure(own_mix, sr).lufs) <= 0.2
            solo = _solo(len(mix), sr, turns, spk)  # this speaker's turns, nobody else's
            rms = _rms(ch[spk][solo])
            # the other channel: no speech of this speaker's, at most the source's crosstalk
            assert _rms(ch[other][solo]) < 10 ** (-25 / 20) * rms  # measured: -33 to -36 dB
            # sample-aligned: the channel is the mix where only this speaker talks (measured:
            # identical but where the other's room tone joins the mix's)
            assert _rms(mix[solo] - ch[spk][solo]) < 10 ** (-30 / 20) * rms
            speakers += 1
        la = measure(segments(ch[row["speaker_a"]], sr, turns, row["speaker_a"]), sr).lufs
        lb = measure(segments(ch[row["speaker_b"]], sr, turns, row["speaker_b"]), sr).lufs
        assert abs(la - lb) <= 0.5 + 0.2  # the mix's tolerance, plus the channel's own 0.2
        for c in (0, 1):
            assert longest_zero_run(st[:, c]) < 0.001 * sr  # room tone in every pause
    assert changes >= 5 and speakers >= 4


def test_the_release_pull_and_exports_carry_the_two_channel_files(
    rendered: tuple[Path, list[tuple[dict[str, Any], list[dict[str, Any]]]]],
    config: RunConfig,
    tmp_path: Path,
) -> None:
    out, rows = rendered
    want = {r["dialogue_id"]: r["stereo_sha256"] for r, _ in rows}
    publish([out], str(tmp_path / "store"), config)
    assert validate_release(str(tmp_path / "store"), audio_sample=0) == []
    dest = tmp_path / "d"
    for split in ("train", "val", "test"):
        pull(str(tmp_path / "store"), split=split, dest=dest)
    got = {}
    for split in ("train", "val", "test"):
        for r in pq.read_table(dest / f"{split}.parquet").to_pylist():
            got[r["dialogue_id"]] = r["stereo_sha256"]
            if r["stereo_path"] is not None:
                assert sha256_file(dest / r["stereo_path"]) == r["stereo_sha256"]
    assert got == want

    manifests = export_lhotse(dest, tmp_path / "lhotse")
    stereo_names = [n for n in manifests if n.endswith("_stereo")]
    assert stereo_names
    n_rec = 0
    for name in stereo_names:
        recs = lhotse.load_manifest(manifests[name][0])
        sups = lhotse.load_manifest(manifests[name][1])
        lhotse.validate_recordings_and_supervisions(recs, sups)
        for rec in recs:
            assert rec.num_channels == 2 and want[rec.id] is not None
            assert rec.load_audio().shape[0] == 2
            n_rec += 1
        row_of = {r["dialogue_id"]: r for r, _ in rows}
        for s in sups:
            r = row_of[s.recording_id]
            assert s.channel == (0 if s.speaker == r["speaker_a"] else 1)
    assert n_rec == sum(v is not None for v in want.values())

    export_hf(dest, tmp_path / "hf")
    ds = load_hf(tmp_path / "hf", decode=False)
    seen = 0
    for split in ds:
        assert isinstance(ds[split].features["audio_stereo"], datasets.Audio)
        for ex in ds[split]:
            mono, sr = hf_decode(ex["audio"])
            if want[ex["dialogue_id"]] is None:
                assert ex["audio_stereo"] is None
                continue
            stereo, sr2 = hf_decode(ex["audio_stereo"])
            assert stereo.shape == (len(mono), 2) and sr2 == sr
            seen += 1
    assert seen == n_rec


#: Bands whose power ratio (dB) is a noise's spectral tilt: white +5.7 dB, pink -5.3 dB.
LOW_HZ, HIGH_HZ = (100.0, 500.0), (2500.0, 4000.0)


def _tilt_db(x: np.ndarray, sr: int) -> float:
    f, p = welch(x.astype(np.float64), sr, nperseg=1024)
    band = [float(np.sum(p[(f >= a) & (f < b)])) for a, b in (HIGH_HZ, LOW_HZ)]
    return 10 * float(np.log10(band[0] / band[1]))


def _db(x: np.ndarray) -> float:
    return 20 * float(np.log10(_rms(x)))


def test_each_channel_carries_its_own_speakers_room_tone(tmp_path: Path) -> None:
    """A's track over white noise, B's over pink (tilts 11 dB apart): in each channel, wherever
    its speaker is silent, the room tone is its own track's, at the level the mix's pauses hold."""
    d = make("multichannel", tmp_path / "src", noise=False)
    path = d.source.path  # type: ignore[attr-defined]
    tracks, sr = sf.read(path, dtype="float64")
    rng = np.random.default_rng(7)
    floors = {
        "A": noise_at(len(tracks), -58.0, rng, sr, pink=False),
        "B": noise_at(len(tracks), -58.0, rng, sr, pink=True),
    }
    sf.write(path, tracks + np.stack([floors["A"], floors["B"]], axis=1), sr, subtype="PCM_16")
    own = {s: _tilt_db(x, sr) for s, x in floors.items()}
    assert own["A"] - own["B"] > 8.0  # the two floors are told apart by this measure

    r = render_dialogue(d, build_config({"render": {"channels": "both"}}), tmp_path / "out")
    prov = json.loads(r.row["provenance"])
    assert "own speaker's room tone" in prov["room_tone"]["stereo"]
    mix, sr = sf.read(tmp_path / "out" / r.row["audio_path"], dtype="float32")
    st, _ = sf.read(tmp_path / "out" / r.row["stereo_path"], dtype="float32")
    assert sr == SR and st.shape == (len(mix), 2)
    margin = int(0.1 * sr)
    pauses = np.zeros(len(mix), dtype=bool)  # nobody talks (speaker-change pauses, inside)
    inset = int(0.03 * sr)
    for a, b in change_pauses(r.turns):
        pauses[int(a["end_s"] * sr) + inset : int(b["start_s"] * sr) - inset] = True
    assert np.count_nonzero(pauses) > 0.5 * sr
    for c, spk in enumerate(("A", "B")):
        quiet = np.ones(len(mix), dtype=bool)  # this speaker silent: their channel is room tone
        for t in r.turns:
            if t["speaker"] == spk:
                quiet[max(0, int(t["start_s"] * sr) - margin) : int(t["end_s"] * sr) + margin] = 0
        tilt = _tilt_db(st[quiet, c], sr)
        other = own["B" if spk == "A" else "A"]
        # measured: A 6.11 vs its own 5.86 dB, B -5.47 vs -5.18 (the shared bed: A at -5.45)
        assert abs(tilt - own[spk]) <= 1.0, (spk, tilt, own)
        assert abs(tilt - other) > 5.0
        # at the mix's floor level, in the pauses and while the other speaker talks alike
        # (measured: within 0.25 dB)
        assert abs(_db(st[pauses, c]) - _db(mix[pauses])) <= 1.0
        assert abs(_db(st[quiet & ~pauses, c]) - _db(st[pauses, c])) <= 1.0
        assert longest_zero_run(st[:, c]) < 0.001 * sr

    # the mix is the mono render's, byte for byte; the same seed gives the same two channels
    mono = render_dialogue(d, build_config({}), tmp_path / "mono")
    assert mono.row["stereo_path"] is None
    m_path = tmp_path / "mono" / mono.row["audio_path"]
    assert sha256_file(m_path) == sha256_file(tmp_path / "out" / r.row["audio_path"])
    again = render_dialogue(d, build_config({"render": {"channels": "both"}}), tmp_path / "again")
    assert again.row["stereo_sha256"] == r.row["stereo_sha256"]
