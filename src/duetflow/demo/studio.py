"""Sample studio sessions with known turn boundaries (``duetflow samples make``).

Writes ``root/studio/<session>/`` folders in the format of docs/studio-sessions.md and returns
the ground truth (every turn's exact start/end, what the adapter must keep or reject and why),
so tests and the demo can measure turn detection against it.

What is covered, per ``scale`` unit:

* HM, one file per speaker: a studio mic (user) that hears the system's loudspeaker at
  ``CROSSTALK_DB`` and a clean system line-out at 24 kHz; transcript without timings (HM checks).
* HH, one stereo file, a mic per channel, each hearing the other at ``CROSSTALK_DB``.

plus, once: an HM stereo session whose transcript carries timings, an HM mono mix with an RTTM,
an HH mono mix without timings (rejected ``mono_without_diarization`` unless a backend is set),
an HM session whose system says an identity-disclosure phrase (rejected
``identity_disclosure``), and a malformed sidecar (rejected ``bad_sidecar``).

Dialogues are 20–60 s, alternate speakers (balanced), and have real-talk timing: gaps around
250 ms, some overlaps up to 0.5 s, and short backchannels inside long turns. What is said and
when is planned in :mod:`duetflow.demo.studio_plan`; this module makes the sound (the room, its
leaks and reverb, breaths, eSpeak or the synthetic voice) and writes the session folders.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import yaml
from scipy.signal import butter, fftconvolve, lfilter

from duetflow.audio.io import Audio, resample, write_audio
from duetflow.demo.studio_plan import (
    DISCLOSURE_TEXT,
    Planned,
    plan_turns,
    session_topic,
    truth_turns,
)
from duetflow.demo.voice import Voice, db_to_amp, random_voice, room_tone, speech
from duetflow.records.dialogue import dialogue_id
from duetflow.seeding import rng_for

log = logging.getLogger(__name__)

CORPUS = "studio"
#: folder under the samples root (``duetflow samples make`` reads it via the entry point)
FOLDER = "studio"
SAMPLE_RATE = 16000
LINE_OUT_RATE = 24000
CROSSTALK_DB = -20.0
"""Level of one party's voice in the other party's mic, relative to its own mic (realistic for
close-talk mics a metre apart, or a loudspeaker heard by the user's mic)."""
ROOM_TONE_DBFS = -62.0


@dataclass(frozen=True)
class RoomLeak:
    """How an HM participant's mic hears the system's loudspeaker through a room.

    The system's voice reaches the mic ``delay_ms`` late (loudspeaker distance plus the
    playback chain) through a synthetic room impulse response: a direct path plus an
    exponentially decaying noise tail with reverberation time ``rt60_s`` (60 dB of decay);
    the whole response is scaled so that the echo is ``leak_db`` below the system's own level.
    The participant's side gets what a real mic records too: a breath (non-speech, never a
    turn) before some turns and word endings that fade over the last ``fade_ms``.
    """

    rt60_s: float = 0.4
    leak_db: float = -25.0
    delay_ms: float = 10.0
    breaths: bool = True
    fade_ms: float = 200.0
    fade_db: float = 20.0


def room_impulse_response(
    room: RoomLeak, sr: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """Synthetic RIR of ``room`` (see :class:`RoomLeak`): total energy ``leak_db``."""
    d = int(round(room.delay_ms * sr / 1000))
    tail_n = max(1, int(round(1.2 * room.rt60_s * sr)))
    t = np.arange(tail_n) / sr
    tail = rng.standard_normal(tail_n) * np.exp(-3.0 * math.log(10.0) * t / room.rt60_s)
    h = np.zeros(d + tail_n, dtype=np.float64)
    h[d:] = tail
    h[d] = 0.0
    direct = float(np.sqrt(np.sum(tail * tail)))  # direct path ~ as strong as the reverb
    h[d] = direct
    h *= db_to_amp(room.leak_db) / float(np.sqrt(np.sum(h * h)))
    return h


def _breath(sr: int, rng: np.random.Generator, level_dbfs: float) -> Audio:
    """An inhalation: 0.25–0.45 s of band-passed noise under a smooth envelope."""
    n = int(round(float(rng.uniform(0.25, 0.45)) * sr))
    noise = rng.standard_normal(n)
    b, a = butter(2, [300.0 / (sr / 2), 3000.0 / (sr / 2)], btype="band")
    x = np.asarray(lfilter(b, a, noise), dtype=np.float64) * np.hanning(n)
    x *= db_to_amp(level_dbfs) / (float(np.sqrt(np.mean(x * x))) + 1e-12)
    out: Audio = x.astype(np.float32)
    return out


def _participant_in_room(
    plan: list[Planned], who: int, x: Audio, room: RoomLeak, rng: np.random.Generator
) -> Audio:
    """Fade the participant's word endings and put breaths in front of some turns."""
    out = x.copy()
    fade = int(round(room.fade_ms * SAMPLE_RATE / 1000))
    level = 10 * math.log10(float(np.mean(x.astype(np.float64) ** 2)) + 1e-20)
    prev_end = 0.0
    for p in plan:
        if p.speaker != who:
            if p.kind == "turn":
                prev_end = max(prev_end, p.end)
            continue
        a, b = int(round(p.start * SAMPLE_RATE)), int(round(p.end * SAMPLE_RATE))
        if p.kind == "turn" and fade and b - a > 4 * fade:
            env = 10.0 ** (-np.linspace(0.0, room.fade_db, fade) / 20.0)
            out[b - fade : b] *= env.astype(np.float32)
        if room.breaths and p.kind == "turn" and rng.random() < 0.5:
            br = _breath(SAMPLE_RATE, rng, level - float(rng.uniform(18.0, 24.0)))
            end = a - int(round(float(rng.uniform(0.12, 0.2)) * SAMPLE_RATE))
            start = end - len(br)
            if start > int(round(prev_end * SAMPLE_RATE)) and start > 0:
                out[start:end] += br
        if p.kind == "turn":
            prev_end = max(prev_end, p.end)
    return out


_ESPEAK_VOICES = {"M": "en-us+m3", "F": "en-us+f3"}
_ESPEAK_EDGE = 1e-3  # a sentence starts/ends where |x| first/last exceeds this x its peak


def _espeak_plan(
    plan: list[Planned], genders: tuple[str, str]
) -> tuple[list[Planned], dict[int, Audio]]:
    """Re-lay ``plan`` with eSpeak NG sentences: same gaps/overlaps, the sentences' lengths.

    Returns the new plan and each item's signal (16 kHz, trimmed to its speech, unit RMS);
    a backchannel sits 40 % into its host turn.
    """
    from duetflow.tts.espeak import speak  # the demo's only use of the TTS worker

    signals: dict[int, Audio] = {}
    for who in (0, 1):
        idx = [k for k, p in enumerate(plan) if p.speaker == who]
        if not idx:
            continue
        got, rate = speak([plan[k].text for k in idx], _ESPEAK_VOICES[genders[who]], 165, 50)
        for k, w in zip(idx, got, strict=True):
            x = resample(np.asarray(w, dtype=np.float32), rate, SAMPLE_RATE).astype(np.float64)
            loud = np.flatnonzero(np.abs(x) > _ESPEAK_EDGE * float(np.max(np.abs(x))))
            x = x[loud[0] : loud[-1] + 1]
            signals[k] = (x / (float(np.sqrt(np.mean(x * x))) + 1e-12)).astype(np.float32)
    out: list[Planned] = []
    new_index: dict[int, int] = {}
    prev_old_end = prev_new_end = plan[0].start
    host_new: Planned | None = None
    for k, p in enumerate(plan):
        length = len(signals[k]) / SAMPLE_RATE
        if p.kind == "backchannel" and host_new is not None:
            start = host_new.start + 0.4 * (host_new.end - host_new.start)
        else:
            start = prev_new_end + (p.start - prev_old_end) if out else p.start
            prev_old_end = p.end
        q = Planned(p.speaker, round(start, 3), round(start + length, 3), p.kind, p.text)
        if p.kind != "backchannel":
            prev_new_end, host_new = q.end, q
        new_index[k] = len(out)
        out.append(q)
    order = sorted(range(len(out)), key=lambda i: (out[i].start, out[i].speaker))
    inv = {old: pos for pos, old in enumerate(order)}
    return [out[i] for i in order], {inv[new_index[k]]: signals[k] for k in signals}


def _place_spoken(
    plan: list[Planned], spoken: dict[int, Audio], who: int, level: float, n: int
) -> Audio:
    x = np.zeros(n, dtype=np.float32)
    for k, p in enumerate(plan):
        if p.speaker != who:
            continue
        a = int(round(p.start * SAMPLE_RATE))
        sig = spoken[k] * np.float32(db_to_amp(level))
        b = min(n, a + len(sig))
        x[a:b] += sig[: b - a]
    return x


def _render_party(
    plan: list[Planned], who: int, voice: Voice, level: float, n: int, rng: np.random.Generator
) -> Audio:
    x = np.zeros(n, dtype=np.float32)
    for p in plan:
        if p.speaker != who:
            continue
        a = int(round(p.start * SAMPLE_RATE))
        sig = speech(p.end - p.start, SAMPLE_RATE, voice, rng, level_dbfs=level)
        b = min(n, a + len(sig))
        x[a:b] += sig[: b - a]
    return x


def _delay(x: Audio, ms: float) -> Audio:
    d = int(round(ms * SAMPLE_RATE / 1000))
    return np.concatenate([np.zeros(d, dtype=np.float32), x[: len(x) - d]]) if d else x


def _sidecar(
    sid: str,
    *,
    category: str,
    layout: str,
    language: str,
    speakers: list[dict[str, Any]],
    strategy: str,
    opening: str,
    transcript: str | None = None,
    rttm: str | None = None,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "session_id": sid,
        "date": "2025-03-14",
        "language": language,
        "topic": session_topic(sid),
        "category": category,
        "strategy": strategy,
        "opening_line": opening,
        "layout": layout,
        "speakers": speakers,
    }
    if category == "HM":
        data["system"] = {"name": "demo-s2s", "version": "0.3.1"}
    if transcript:
        data["transcript"] = transcript
    if rttm:
        data["rttm"] = rttm
    return data


def _write_yaml(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _write_transcript(
    path: Path, plan: list[Planned], speakers: tuple[str, str], timed: bool
) -> None:
    turns = []
    for p in plan:
        row: dict[str, Any] = {"speaker": speakers[p.speaker], "text": p.text}
        if timed:
            row["start"], row["end"] = p.start, p.end
        turns.append(row)
    path.write_text(json.dumps({"turns": turns}, ensure_ascii=False, indent=1), encoding="utf-8")


def write_session(
    base: Path,
    seed: int,
    sid: str,
    *,
    category: str,
    layout: str,
    language: str,
    transcript: str | None = None,
    rttm: bool = False,
    disclosure: bool = False,
    interruption: bool = False,
    crosstalk_db: float = CROSSTALK_DB,
    room: RoomLeak | None = None,
    voice: Literal["synth", "espeak"] = "synth",
) -> dict[str, Any]:
    """Write one session folder ``base/sid``; return its truth entry (as in :func:`generate`).

    ``layout`` is tracks / stereo / mono; ``transcript`` None, ``"text"`` (no timings) or
    ``"timed"``; ``crosstalk_db`` the level of each party in the other's mic (bench sweeps it).
    ``room`` (HM ``tracks`` only): the mic hears the system through a reverberant room instead
    of a dry delayed copy at ``crosstalk_db``, and the participant breathes and fades out
    (:class:`RoomLeak`); the truth is unchanged (breaths are not turns). ``voice="espeak"``
    speaks every line with eSpeak NG (English; real phonetics, which a neural VAD trained on
    speech recognises, unlike the default formant stand-in): the plan keeps its gaps and
    overlaps, turns last as long as their sentence, and the truth is where each sentence's
    samples start and end.
    """
    rng = rng_for(seed, CORPUS, sid)
    folder = base / sid
    roles = ("human", "machine") if category == "HM" else ("human", "human")
    ids = ("user", "system") if category == "HM" else ("spk_a", "spk_b")
    genders: tuple[str, str] = ("F", "M") if rng.random() < 0.5 else ("M", "F")
    voices = [random_voice(rng, g, ids[i]) for i, g in enumerate(genders)]  # type: ignore[arg-type]
    plan, placed = plan_turns(rng, language, roles, interruption=interruption)
    if disclosure:
        k = next(i for i, p in enumerate(plan) if p.speaker == 1 and p.kind == "turn")
        p = plan[k]
        plan[k] = Planned(p.speaker, p.start, p.end, p.kind, DISCLOSURE_TEXT)
    spoken: dict[int, Audio] | None = None
    if voice == "espeak":
        if language != "en":
            raise ValueError("eSpeak sessions are English")
        plan, spoken = _espeak_plan(plan, genders)
        placed = []
    duration = round(max(p.end for p in plan) + float(rng.uniform(0.6, 1.2)), 3)
    n = int(round(duration * SAMPLE_RATE))
    levels = (-26.0 + float(rng.uniform(-2, 2)), -24.0 + float(rng.uniform(-2, 2)))
    if spoken is None:
        own = [_render_party(plan, i, voices[i], levels[i], n, rng) for i in range(2)]
    else:
        own = [_place_spoken(plan, spoken, i, levels[i], n) for i in range(2)]
    leak = db_to_amp(crosstalk_db)

    def tone() -> Audio:
        return room_tone(duration, SAMPLE_RATE, ROOM_TONE_DBFS, rng)[:n]

    speakers: list[dict[str, Any]] = []
    if layout == "tracks":
        if room is not None:
            if category != "HM":
                raise ValueError("room leaks are for HM tracks sessions")
            rrng = rng_for(seed, CORPUS, sid, "room")
            echo = fftconvolve(own[1], room_impulse_response(room, SAMPLE_RATE, rrng))[:n]
            user = _participant_in_room(plan, 0, own[0], room, rrng)
            mic_a = (user + echo.astype(np.float32) + tone()).astype(np.float32)
        else:
            mic_a = own[0] + leak * _delay(own[1], 3.0) + tone()
        if category == "HM":  # the system line-out is clean: it never hears the user
            track_b = resample(own[1], SAMPLE_RATE, LINE_OUT_RATE)
            write_audio(folder / "system.wav", track_b, LINE_OUT_RATE)
        else:
            track_b = own[1] + leak * _delay(own[0], 3.0) + tone()
            write_audio(folder / f"{ids[1]}.wav", track_b, SAMPLE_RATE)
        write_audio(folder / f"{ids[0]}.wav", mic_a, SAMPLE_RATE)
        files = (f"{ids[0]}.wav", f"{ids[1]}.wav")
        speakers = [
            {"id": ids[i], "role": roles[i], "gender": genders[i], "file": files[i]}
            for i in range(2)
        ]
    elif layout == "stereo":
        ch0 = own[0] + leak * _delay(own[1], 2.0) + tone()
        ch1 = own[1] + leak * _delay(own[0], 2.0) + tone()
        write_audio(folder / "session.flac", np.stack([ch0, ch1], axis=1), SAMPLE_RATE)
        speakers = [
            {
                "id": ids[i],
                "role": roles[i],
                "gender": genders[i],
                "file": "session.flac",
                "channel": i,
            }
            for i in range(2)
        ]
    else:
        mix = own[0] + own[1] + tone()
        write_audio(folder / "mix.wav", mix, SAMPLE_RATE)
        speakers = [
            {"id": ids[i], "role": roles[i], "gender": genders[i], "file": "mix.wav"}
            for i in range(2)
        ]
    if transcript is not None:
        _write_transcript(folder / "transcript.json", plan, ids, timed=transcript == "timed")
    if rttm:
        lines = [
            f"SPEAKER {sid} 1 {p.start:.3f} {p.end - p.start:.3f} <NA> <NA> {ids[p.speaker]} "
            "<NA> <NA>"
            for p in plan
        ]
        (folder / "turns.rttm").write_text("\n".join(lines) + "\n", encoding="utf-8")
    strategy = ["human_guided_initiation", "role_playing", "human_likeness_prompting"][
        int(rng.integers(3))
    ]
    _write_yaml(
        folder / "session.yaml",
        _sidecar(
            sid,
            category=category,
            layout=layout,
            language=language,
            speakers=speakers,
            strategy=strategy,
            opening=plan[0].text,
            transcript="transcript.json" if transcript is not None else None,
            rttm="turns.rttm" if rttm else None,
        ),
    )
    talk = [p for p in plan if p.kind == "turn"]
    return {
        "corpus": CORPUS,
        "source_id": sid,
        "expected": "kept",
        "category": category,
        "layout": layout,
        "language": language,
        "topic": session_topic(sid),
        "speakers": list(ids),
        "duration_s": duration,
        "crosstalk_db": crosstalk_db if layout != "mono" and room is None else None,
        "room": None
        if room is None
        else {"rt60_s": room.rt60_s, "leak_db": room.leak_db, "delay_ms": room.delay_ms},
        "turn_source": "transcript" if transcript == "timed" else ("rttm" if rttm else "audio"),
        "turns": truth_turns(plan, ids),
        "interruptions": [
            {"time": x["time"], "interrupter": ids[x["interrupter"]]} for x in placed
        ],
        "backchannels": [
            {"time": p.start, "speaker": ids[p.speaker]} for p in plan if p.kind == "backchannel"
        ],
        "utterance_share": {
            ids[i]: round(sum(p.speaker == i for p in talk) / len(talk), 4) for i in range(2)
        },
    }


def generate(root: Path, seed: int, scale: int = 1) -> dict[str, Any]:
    """Write sample studio sessions under ``root/studio``; return their ground truth.

    Returns ``{"dialogues": {dialogue_id: entry}, "broken": [...]}`` like the corpus
    generators: ``dialogues`` holds the sessions the adapter must keep, with their exact turns
    (``speaker``/``start``/``end``/``kind``/``text``), ``layout``, ``turn_source`` (``audio``:
    detected by VAD; ``transcript``/``rttm``: given) and ``crosstalk_db``; ``broken`` the
    sessions it must reject, with the reason code (and the same truth fields, for reference).
    """
    base = Path(root) / CORPUS
    base.mkdir(parents=True, exist_ok=True)
    entries: dict[str, dict[str, Any]] = {}
    rejected: dict[str, str] = {}
    for i in range(max(1, scale)):
        sid = f"hm_tracks_{i + 1:03d}"
        entries[sid] = write_session(
            base, seed, sid, category="HM", layout="tracks", language="en", transcript="text"
        )
        sid = f"hh_stereo_{i + 1:03d}"
        entries[sid] = write_session(
            base, seed, sid, category="HH", layout="stereo", language="zh", interruption=True
        )
    entries["hm_stereo_timed"] = write_session(
        base, seed, "hm_stereo_timed", category="HM", layout="stereo", language="en",
        transcript="timed",
    )  # fmt: skip
    entries["hm_mono_rttm"] = write_session(
        base, seed, "hm_mono_rttm", category="HM", layout="mono", language="en", rttm=True
    )
    entries["hh_mono_untimed"] = write_session(
        base, seed, "hh_mono_untimed", category="HH", layout="mono", language="zh"
    )
    rejected["hh_mono_untimed"] = "mono_without_diarization"
    entries["hm_tracks_disclosure"] = write_session(
        base, seed, "hm_tracks_disclosure", category="HM", layout="tracks", language="en",
        transcript="text", disclosure=True,
    )  # fmt: skip
    rejected["hm_tracks_disclosure"] = "identity_disclosure"
    # a malformed sidecar: unknown category, a misspelt field, no opening line
    bad = base / "broken_sidecar"
    bad.mkdir(parents=True, exist_ok=True)
    write_audio(bad / "mix.wav", room_tone(2.0, SAMPLE_RATE, -50.0, rng_for(seed, "bad")), 16000)
    (bad / "session.yaml").write_text(
        "session_id: broken_sidecar\ndate: 2025-03-14\nlanguage: en\ncategory: HX\n"
        "strategy: role_playing\nlayout: mono\nspeakrs: []\n",
        encoding="utf-8",
    )
    rejected["broken_sidecar"] = "bad_sidecar"
    dialogues = {dialogue_id(CORPUS, sid): e for sid, e in entries.items() if sid not in rejected}
    broken = [
        {
            "corpus": CORPUS,
            "item_id": dialogue_id(CORPUS, sid),
            "reason": reason,
            "path": f"{CORPUS}/{sid}/session.yaml",
            **{k: v for k, v in entries.get(sid, {}).items() if k != "expected"},
            "expected": "rejected",
        }
        for sid, reason in sorted(rejected.items())
    ]
    log.info("wrote %d studio sessions under %s", len(entries) + 1, base)
    return {"dialogues": dialogues, "broken": broken}
