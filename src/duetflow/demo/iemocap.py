"""A small IEMOCAP_full_release in the real layout (see shared reference §2.9).

Per scale unit one session (``Session<u+1>``) with four good dialogues of 70–130 s — one with
backchannels (and an ``XX`` line and a non-``Ses`` line), one with a mid-turn floor-taking
interruption (the host talks on 0.5–0.9 s over the interrupter and its line ends in ``--``, the
cut-off mark this project assumes for IEMOCAP-style text), one strongly imbalanced, one with its
channels swapped, its transcript lines out of temporal order and terminal overlaps of 0.10–0.25 s at
several speaker changes (kept: they are transitions) — plus five short broken ones. Dialogue WAVs
are 16 kHz 16-bit stereo, one actor per channel with −14 dB crosstalk of the other and independent
room tone; transcriptions use CRLF and ``[SSS.ssss-EEE.eeee]:`` times; EmoEvaluation has the header,
tab-separated summary lines and C-/A- evaluator lines; ``lab/`` and ``sentences/wav/`` complete the
layout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from duetflow.audio.io import write_audio
from duetflow.demo.plan import ENGLISH, ENGLISH_BACKCHANNELS, Plan, plan_dialogue, truth_entry
from duetflow.demo.voice import Voice, db_to_amp, random_voice, room_tone, speech
from duetflow.records.dialogue import dialogue_id
from duetflow.seeding import rng_for

CORPUS = "iemocap"
#: folder under the samples root (``duetflow samples make`` reads it via the entry point)
FOLDER = "IEMOCAP_full_release"
SR = 16000
ROOM_DB = -55.0
CROSSTALK_DB = -14.0
EMOTIONS = ("neu", "hap", "sad", "ang", "exc", "fru", "sur", "neu", "neu")

#: speaker changes planned as terminal overlaps, per dialogue name pattern
TERMINAL = {"Ses{n:02d}M_impro05a": 4, "Ses{n:02d}F_impro01": 2}
#: the mark an interrupted host's line ends with (IEMOCAP's own convention is unverified)
CUT_OFF_MARK = "--"

#: (dialogue name pattern, shape, target seconds, channels swapped, lines out of order)
GOOD = (
    ("Ses{n:02d}F_impro01", "backchannels", 90.0, False, False),
    ("Ses{n:02d}M_impro05a", "balanced", 75.0, True, True),
    ("Ses{n:02d}M_script01_1b", "interruption", 110.0, False, False),
    ("Ses{n:02d}F_impro02", "imbalanced", 80.0, False, False),
)
#: broken dialogues: name pattern -> expected rejection reason
BROKEN = {
    "Ses{n:02d}F_impro03": "malformed_line",
    "Ses{n:02d}F_impro04": "bad_timing",
    "Ses{n:02d}M_impro06": "wrong_channels",
    "Ses{n:02d}M_impro07": "duplicate_id",
    "Ses{n:02d}F_impro08": "missing_file",
}


def _fmt(x: float) -> str:
    return f"{x:08.4f}"


def _utt_ids(name: str, plan: Plan) -> list[str]:
    counters = {"F": 0, "M": 0}
    ids = []
    for t in plan.turns:
        g = t.speaker[-1]
        ids.append(f"{name}_{g}{counters[g]:03d}")
        counters[g] += 1
    return ids


def _render(
    plan: Plan, voices: dict[str, Voice], rng: np.random.Generator, swap: bool
) -> np.ndarray:
    n = int(np.ceil((plan.end + float(rng.uniform(0.8, 1.5))) * SR))
    tracks = {s: np.zeros(n, dtype=np.float32) for s in plan.speakers}
    for t in plan.turns:
        a = int(round(t.start * SR))
        sig = speech(
            t.duration, SR, voices[t.speaker], rng, level_dbfs=-19.0 if not t.backchannel else -23.0
        )
        tracks[t.speaker][a : a + len(sig)] += sig[: n - a]
    f_spk = next(s for s in plan.speakers if s.endswith("F"))
    m_spk = next(s for s in plan.speakers if s.endswith("M"))
    x = db_to_amp(CROSSTALK_DB)
    ch_f = tracks[f_spk] + x * tracks[m_spk] + room_tone(n / SR, SR, ROOM_DB, rng)[:n]
    ch_m = tracks[m_spk] + x * tracks[f_spk] + room_tone(n / SR, SR, ROOM_DB, rng)[:n]
    chans = (ch_m, ch_f) if swap else (ch_f, ch_m)
    return np.stack(chans, axis=1).astype(np.float32)


def _emo_block(
    rng: np.random.Generator, start: float, end: float, utt: str
) -> tuple[str, dict[str, str]]:
    code = EMOTIONS[int(rng.integers(len(EMOTIONS)))]
    vad = [f"{float(rng.integers(2, 10)) / 2:.4f}" for _ in range(3)]
    line = f"[{start:.4f} - {end:.4f}]\t{utt}\t{code}\t[{vad[0]}, {vad[1]}, {vad[2]}]"
    block = [
        line,
        "C-E2:\tNeutral;\t()",
        "C-E3:\tNeutral;\t()",
        "C-F1:\tNeutral;\t(curious)",
        "A-E3:\tval 3; act 2; dom  2;\t()",
        "A-F1:\tval 3; act 2; dom  1;\t()",
    ]
    labels = {"emotion": code, "valence": vad[0], "activation": vad[1], "dominance": vad[2]}
    return "\n".join(block), labels


def _write_dialogue(
    sess: Path,
    name: str,
    plan: Plan,
    audio: np.ndarray | None,
    rng: np.random.Generator,
    *,
    out_of_order: bool = False,
    extra_lines: tuple[str, ...] = (),
    xx_index: int | None = None,
    mono: bool = False,
) -> list[str]:
    """Write transcription, EmoEvaluation, lab, dialog wav and sentence wavs; return utt ids."""
    ids = _utt_ids(name, plan)
    if xx_index is not None:
        g = plan.turns[xx_index].speaker[-1]
        ids[xx_index] = f"{name}_{g}XX0"
    lines = [
        f"{u} [{_fmt(t.start)}-{_fmt(t.end)}]: {t.text}"
        for u, t in zip(ids, plan.turns, strict=True)
    ]
    if out_of_order:
        lines = sorted(lines)  # all F lines, then all M lines: not temporal
    lines += list(extra_lines)
    dialog = sess / "dialog"
    (dialog / "transcriptions").mkdir(parents=True, exist_ok=True)
    (dialog / "transcriptions" / f"{name}.txt").write_bytes(("\r\n".join(lines) + "\r\n").encode())
    emo = ["% [START_TIME - END_TIME] TURN_NAME EMOTION [V, A, D]", ""]
    for u, t in zip(ids, plan.turns, strict=True):
        if "XX" in u:
            continue
        block, labels = _emo_block(rng, t.start, t.end, u)
        t.labels.update(labels)
        emo += [block, ""]
    (dialog / "EmoEvaluation").mkdir(parents=True, exist_ok=True)
    (dialog / "EmoEvaluation" / f"{name}.txt").write_text("\n".join(emo), encoding="utf-8")
    ses = name[:5]
    for g in ("F", "M"):
        lab = dialog / "lab" / f"{ses}_{g}" / f"{name}.lab"
        lab.parent.mkdir(parents=True, exist_ok=True)
        rows = [
            f"{t.start:.4f} {t.end:.4f} {u}"
            for u, t in zip(ids, plan.turns, strict=True)
            if u[len(name) + 1] == g
        ]
        lab.write_text(f"{name}.wav\n" + "\n".join(rows) + "\n", encoding="utf-8")
    if audio is not None:
        (dialog / "wav").mkdir(parents=True, exist_ok=True)
        write_audio(dialog / "wav" / f"{name}.wav", audio[:, 0] if mono else audio, SR)
        for u, t in zip(ids, plan.turns, strict=True):
            if "XX" in u:
                continue
            a = int(round(t.start * SR))
            n = int(np.floor((t.end - t.start) * SR))
            ch = 0 if mono else (0 if u[len(name) + 1] == "F" else 1)
            write_audio(sess / "sentences" / "wav" / name / f"{u}.wav", audio[a : a + n, ch], SR)
    for t, u in zip(plan.turns, ids, strict=True):
        t.labels["utterance_id"] = u
        if "XX" in u:
            t.labels["unsegmented"] = "1"
    return ids


def generate(root: Path, seed: int = 0, scale: int = 1) -> dict[str, Any]:
    """Write ``root/IEMOCAP_full_release``; return truth records and ``broken`` items."""
    base = root / "IEMOCAP_full_release"
    base.mkdir(parents=True, exist_ok=True)
    (base / "README.txt").write_text(
        "IEMOCAP sample release generated by duetflow (synthetic audio, real layout).\n",
        encoding="utf-8",
    )
    dialogues: dict[str, Any] = {}
    broken: list[dict[str, Any]] = []
    for unit in range(scale):
        n = unit + 1
        sess = base / f"Session{n}"
        vrng = rng_for(seed, CORPUS, "voices", n)
        spk_f, spk_m = f"Ses{n:02d}_F", f"Ses{n:02d}_M"
        voices = {spk_f: random_voice(vrng, "F", spk_f), spk_m: random_voice(vrng, "M", spk_m)}
        for pattern, shape, target, swap, out_of_order in GOOD:
            name = pattern.format(n=n)
            rng = rng_for(seed, CORPUS, name)
            first = (spk_f, spk_m) if rng.random() < 0.5 else (spk_m, spk_f)
            plan = plan_dialogue(
                rng,
                first,
                target,
                shape,
                ENGLISH,
                ENGLISH_BACKCHANNELS,
                decimals=4,
                start_s=float(rng.uniform(1.0, 3.0)),
                terminal_overlaps=TERMINAL.get(pattern, 0),
                cut_off_mark=CUT_OFF_MARK,
            )
            audio = _render(plan, voices, rng, swap)
            xx = None
            extra: tuple[str, ...] = ()
            if shape == "backchannels":
                xx = next(i for i, t in enumerate(plan.turns) if not t.backchannel and i > 2)
                extra = ("F: [LAUGHTER]", "M: Oh.")
            _write_dialogue(
                sess,
                name,
                plan,
                audio,
                rng,
                out_of_order=out_of_order,
                extra_lines=extra,
                xx_index=xx,
            )
            did = dialogue_id(CORPUS, name)
            dialogues[did] = truth_entry(
                plan,
                CORPUS,
                name,
                channels={spk_f: 1 if swap else 0, spk_m: 0 if swap else 1},
                topic=name[7:],
                duration_s=round(audio.shape[0] / SR, 6),
                skipped_lines=len(extra),
            )
            dialogues[did]["turns"] = [
                {**row, "labels": dict(t.labels), "text": t.text}
                for row, t in zip(dialogues[did]["turns"], plan.turns, strict=True)
            ]
        for pattern, reason in BROKEN.items():
            name = pattern.format(n=n)
            rng = rng_for(seed, CORPUS, name)
            plan = plan_dialogue(
                rng, (spk_f, spk_m), 20.0, "balanced", ENGLISH, ENGLISH_BACKCHANNELS, decimals=4
            )
            audio = _render(plan, voices, rng, False)
            rel = f"Session{n}/dialog/transcriptions/{name}.txt"
            extra = ()
            if reason == "malformed_line":
                extra = (f"{name}_F900 [012.3400-0I3.5000]: The clock broke here.",)
            elif reason == "bad_timing":
                extra = (f"{name}_M900 [015.0000-014.0000]: Time runs backwards.",)
            elif reason == "duplicate_id":
                t0 = plan.turns[0]
                g = t0.speaker[-1]
                extra = (f"{name}_{g}000 [{_fmt(t0.start)}-{_fmt(t0.end)}]: Said twice.",)
            _write_dialogue(
                sess,
                name,
                plan,
                None if reason == "missing_file" else audio,
                rng,
                extra_lines=extra,
                mono=reason == "wrong_channels",
            )
            if reason in ("wrong_channels", "missing_file"):
                rel = f"Session{n}/dialog/wav/{name}.wav"
            broken.append(
                {
                    "corpus": CORPUS,
                    "item_id": dialogue_id(CORPUS, name),
                    "reason": reason,
                    "path": rel,
                }
            )
    return {"dialogues": dialogues, "broken": broken}
