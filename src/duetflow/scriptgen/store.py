"""The output folder of script generation: one file per script, the checkpoint of the run.

```
<out>/<script id>.json             a finished script (the format `duetflow synthesize` reads)
<out>/rejected/<script id>.json.rejected   a final rejection (llm_invalid, llm_error, ...)
<out>/rejections.parquet           every rejection of the last run (REJECTION_SCHEMA)
```

Every file is written to a temporary name and renamed, so a run killed midway leaves only
complete scripts; the next run asks the LLM only for ids with neither a script nor a final
rejection. Transient failures (``llm_unavailable``: the endpoint was down or too slow;
``llm_bad_answer``: it answered malformed bodies) are not persisted, so they are asked again. A
rejection file of the wrong shape is ignored with a warning (the script is asked again).
Rejection files do not end in ``.json``, so the scripts loader skips them.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from duetflow.records.convert import dumps, rejection_to_row
from duetflow.records.dialogue import Rejection, Stage
from duetflow.records.manifest import REJECTION_SCHEMA, REJECTIONS, write_table
from duetflow.tts.script import Script

log = logging.getLogger(__name__)

#: Rejection reasons that a re-run would only repeat: persisted, never asked again.
FINAL_REASONS = frozenset(
    {"llm_invalid", "llm_error", "script_imbalanced", "bad_script", "near_duplicate"}
)
REJECTED_DIR = "rejected"
_REJECTED_SUFFIX = ".json.rejected"


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class ScriptStore:
    """Reads and writes the per-script files of one output folder."""

    def __init__(self, out_dir: str | Path) -> None:
        self.root = Path(out_dir)
        self.root.mkdir(parents=True, exist_ok=True)

    def script_path(self, script_id: str) -> Path:
        return self.root / f"{script_id}.json"

    def rejection_path(self, script_id: str) -> Path:
        return self.root / REJECTED_DIR / f"{script_id}{_REJECTED_SUFFIX}"

    def has_script(self, script_id: str) -> bool:
        return self.script_path(script_id).is_file()

    def rejection(self, script_id: str) -> Rejection | None:
        """The persisted final rejection of ``script_id``, if any."""
        path = self.rejection_path(script_id)
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise TypeError(f"a JSON {type(data).__name__}, not an object")
            fields = {k: data.get(k, "") for k in ("detail", "corpus", "source_path")}
            if not all(isinstance(data.get(k), str) for k in ("item_id", "reason")) or not all(
                isinstance(v, str) for v in fields.values()
            ):
                raise TypeError("item_id, reason, detail, corpus, source_path must be strings")
            return Rejection(
                item_id=data["item_id"],
                stage=Stage(data["stage"]),
                reason=data["reason"],
                **fields,
            )
        except (OSError, KeyError, TypeError, ValueError) as e:
            # a record of the wrong shape is dropped: the script is asked for again
            log.warning("ignoring %s (%s); the script will be generated again", path, e)
            return None

    def write_script(self, script: Script) -> Path:
        """Write one finished script (pretty JSON, sorted keys: equal scripts, equal bytes)."""
        path = self.script_path(script.id)
        text = json.dumps(script.to_json(), ensure_ascii=False, indent=1, sort_keys=True)
        _atomic_write(path, text + "\n")
        self.rejection_path(script.id).unlink(missing_ok=True)
        return path

    def write_rejection(self, rejection: Rejection) -> None:
        """Persist a final rejection (transient ones are left to the next run)."""
        if rejection.reason in FINAL_REASONS:
            _atomic_write(
                self.rejection_path(rejection.item_id), dumps(rejection_to_row(rejection))
            )

    def remove_script(self, script_id: str) -> None:
        """Remove a finished script (a merged near-duplicate; its rejection is written apart)."""
        self.script_path(script_id).unlink(missing_ok=True)

    def iter_scripts(self) -> Iterator[Path]:
        """The finished script files, sorted by name."""
        return iter(sorted(self.root.glob("*.json")))

    def write_rejections(self, rejections: Iterable[Rejection]) -> Path:
        """``rejections.parquet`` of the run, sorted by id (same run, same bytes)."""
        rows = [rejection_to_row(r) for r in sorted(rejections, key=lambda r: r.item_id)]
        path = self.root / REJECTIONS
        write_table(path, REJECTION_SCHEMA, rows)
        return path
