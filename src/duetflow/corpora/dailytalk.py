"""DailyTalk (Lee et al., ICASSP 2023): per-turn 44.1 kHz clips, no timing.

Layout: ``<root>/metadata.json`` (``{dialog: {turn: {speaker, text, emotion, act, topic, ...}}}``)
and ``<root>/data/<d>/{turn}_{speaker}_d{d}.wav|.txt``. The dialogue timeline is the clips laid
end to end in turn order (:class:`PerTurnSource`); turn ``i`` spans the i-th clip. Speaker 0 is
the male actor, 1 the female one; consecutive same-speaker turns exist in the real corpus and
are kept. Text comes from the ``.txt`` (first line, whitespace collapsed), as the DailyTalk and
ESPnet recipes read it; emotion / act are turn labels, topic the dialogue topic.

Items are the union of metadata dialogues and ``data/`` folders, so a folder without metadata
or metadata without a folder is counted and rejected, not silently skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Literal

from duetflow.corpora.adapter import (
    CorpusAdapter,
    checked_audio_info,
    duplicate_keys_hook,
    read_text,
)
from duetflow.errors import InputError
from duetflow.records.dialogue import (
    Category,
    DesignFields,
    Dialogue,
    PerTurnSource,
    Rejection,
    Role,
    Speaker,
    Turn,
    TurnKind,
)

_STEM = re.compile(r"^(\d+)_([01])_d(\d+)$")
_GENDER: dict[str, Literal["M", "F"]] = {"0": "M", "1": "F"}


def _int_key(text: str) -> tuple[int, str]:
    base = text.split("\x00")[0]
    return (int(base), text) if base.isdigit() else (1 << 62, text)


class DailyTalkAdapter(CorpusAdapter):
    """Adapter for the ``dailytalk/`` folder of the DailyTalk release."""

    name: ClassVar[str] = "dailytalk"
    licence: ClassVar[str | None] = "CC-BY-SA-4.0"
    default_options: ClassVar[Mapping[str, Any]] = {
        "sample_rate": 44100,  # corpus spec; clips at other rates are rejected
        "encodings": [],  # extra encodings tried for .txt after UTF-8
    }

    def _metadata(self) -> dict[str, Any]:
        path = self.path("metadata.json")
        text = read_text(path, self.options["encodings"], "en")
        try:
            data = json.loads(text, object_pairs_hook=duplicate_keys_hook(path))
        except json.JSONDecodeError as e:
            raise InputError(
                path, f"invalid JSON: {e.msg}", reason="malformed_line", line=e.lineno
            ) from None
        except RecursionError:
            raise InputError(path, "JSON nested too deeply", reason="malformed_line") from None
        if not isinstance(data, dict):
            raise InputError(path, "top level must be an object", reason="malformed_line")
        return data

    def _items(self) -> tuple[dict[str, Any], list[str]]:
        from duetflow.errors import ConfigError

        self.check_root("data")
        try:
            meta = self._metadata()
        except InputError as e:
            raise ConfigError(f"corpus dailytalk: cannot read metadata: {e}") from None
        dirs = {p.name for p in (self.root / "data").iterdir() if not p.name.startswith(".")}
        keys = set(meta) | dirs
        return meta, sorted(keys, key=_int_key)

    def count_sources(self) -> int | None:
        return len(self._items()[1])

    def scan(self) -> Iterator[Dialogue | Rejection]:
        meta, keys = self._items()
        for key in keys:
            base = key.split("\x00")[0]
            where = self.root / "data" / base
            if "\x00dup" in key:
                err = InputError(
                    self.root / "metadata.json",
                    f"dialogue {base!r} appears more than once in metadata.json",
                    reason="duplicate_id",
                )
                yield self.reject(f"d{base}", err, "metadata.json")
                continue
            yield self.guarded(f"d{key}", where, partial(self._dialogue, key, meta.get(key)))

    def _dialogue(self, key: str, dmeta: Any) -> Dialogue:
        ddir_rel = Path("data") / key
        if dmeta is None:
            raise InputError(
                self.root / ddir_rel,
                "folder has no entry in metadata.json",
                reason="missing_annotation",
            )
        if not isinstance(dmeta, dict) or not dmeta:
            raise InputError(
                self.root / "metadata.json", f"dialogue {key}: no turns", reason="malformed_line"
            )
        if not key.isdigit():
            raise InputError(self.root / ddir_rel, "dialogue id is not a number", reason="bad_name")
        ddir = self.path(ddir_rel)
        if not ddir.is_dir():
            raise InputError(self.root / ddir_rel, "audio folder not found", reason="missing_file")
        files: dict[int, str] = {}
        for p in sorted(ddir.iterdir()):
            if p.suffix != ".wav" or p.name.startswith("."):
                continue
            m = _STEM.match(p.stem)
            if m is None or m.group(3) != key:
                raise InputError(
                    self.root / ddir_rel / p.name,
                    f"file name does not match {{turn}}_{{speaker}}_d{key}.wav",
                    reason="bad_name",
                )
            t = int(m.group(1))
            if t in files:
                raise InputError(
                    self.root / ddir_rel / p.name,
                    f"turn {t} has two clips ({files[t]}.wav and {p.name})",
                    reason="duplicate_id",
                )
            files[t] = p.stem
        turn_keys = sorted(dmeta, key=_int_key)
        for tk in turn_keys:
            if "\x00dup" in tk:
                raise InputError(
                    self.root / "metadata.json",
                    f"dialogue {key}: turn {tk.split(chr(0))[0]} appears twice",
                    reason="duplicate_id",
                )
        annotated = {int(tk) for tk in turn_keys if tk.isdigit()}
        extra = sorted(set(files) - annotated)
        if extra:
            raise InputError(
                self.root / ddir_rel / f"{files[extra[0]]}.wav",
                "clip has no entry in metadata.json",
                reason="missing_annotation",
            )
        turns: list[Turn] = []
        paths: list[str] = []
        t0 = 0.0
        topic = ""
        for tk in turn_keys:
            u = dmeta[tk]
            if not tk.isdigit() or not isinstance(u, dict):
                raise InputError(
                    self.root / "metadata.json",
                    f"dialogue {key}: bad turn {tk!r}",
                    reason="malformed_line",
                )
            spk = str(u.get("speaker"))
            if spk not in _GENDER:
                raise InputError(
                    self.root / "metadata.json",
                    f"dialogue {key} turn {tk}: speaker must be 0 or 1, got {u.get('speaker')!r}",
                    reason="malformed_line",
                    field="speaker",
                )
            ti = int(tk)
            stem = files.get(ti)
            if stem is None:
                raise InputError(
                    self.root / ddir_rel / f"{ti}_{spk}_d{key}.wav",
                    "annotated turn has no audio clip",
                    reason="missing_file",
                )
            if stem.split("_")[1] != spk:
                raise InputError(
                    self.root / ddir_rel / f"{stem}.wav",
                    f"file name says speaker {stem.split('_')[1]}, metadata says {spk}",
                    reason="speaker_mismatch",
                )
            wav = self.path(ddir_rel / f"{stem}.wav")
            info = checked_audio_info(wav, sample_rate=int(self.options["sample_rate"]))
            txt = self.path(ddir_rel / f"{stem}.txt")
            raw = read_text(txt, self.options["encodings"], "en")
            first = raw.splitlines()[0] if raw.strip() else ""
            text = " ".join(first.split()) or " ".join(str(u.get("text", "")).split())
            labels = {
                k: str(u[k])
                for k in ("emotion", "act", "topic")
                if u.get(k) is not None and u.get(k) != ""
            }
            if u.get("index") is not None:
                labels["utterance_index"] = str(u["index"])
            t1 = t0 + info.frames / info.sample_rate
            turns.append(Turn(spk, round(t0, 6), round(t1, 6), text, TurnKind.TURN, labels))
            paths.append(str(wav))
            t0 = t1
            topic = topic or str(u.get("topic") or "")
        a = turns[0].speaker
        b = "1" if a == "0" else "0"
        speakers = (
            Speaker(a, Role.HUMAN, _GENDER[a], "en"),
            Speaker(b, Role.HUMAN, _GENDER[b], "en"),
        )
        mapped = self.map_topic(topic)
        return Dialogue(
            id=self.dialogue_id(f"d{key}"),
            corpus=self.name,
            source_id=f"d{key}",
            category=Category.HH,
            language="en",
            topic=mapped.topic,
            design=DesignFields(source_topic=mapped.source_topic),
            speakers=speakers,
            turns=tuple(turns),
            source=PerTurnSource(tuple(paths)),
            duration_s=round(t0, 6),
            provenance={
                "adapter": self.name,
                "folder": ddir_rel.as_posix(),
                "metadata": "metadata.json",
                "timeline": "clips end to end",
            },
        )
