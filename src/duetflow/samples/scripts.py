"""Sample two-speaker scripts (English and Chinese) for the PH synthesis demo and tests.

``generate`` writes ``root/scripts/*.json`` in the schema of :mod:`duetflow.tts.script`; the
samples command of the corpora module dispatches to it. Content is fixed; ``scale`` repeats the
set with suffixed ids, so a bigger demo needs no new text. ``seed`` is accepted for the common
generator signature; nothing here is random.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SAMPLE_SCRIPTS: tuple[dict[str, Any], ...] = (
    {
        "id": "en-weekend",
        "language": "en",
        "topic": "weekend plans",
        "source": "generated",
        "lines": [
            {"speaker": "A", "text": "Hey, do you have any plans for the weekend?"},
            {
                "speaker": "B",
                "text": "Not really. I was thinking about going hiking if the weather holds.",
            },
            {"speaker": "A", "text": "That sounds great. Which trail were you thinking of?"},
            {"speaker": "B", "text": "The one along the river, it takes about three hours."},
            {"speaker": "A", "text": "Mind if I join you? I could bring some sandwiches."},
            {"speaker": "B", "text": "Of course, let's meet at the station at nine."},
        ],
    },
    {
        "id": "en-kitchen",
        "language": "en",
        "topic": "cooking",
        "source": "generated",
        "lines": [
            {"speaker": "A", "text": "What are you making? It smells wonderful in here."},
            {"speaker": "B", "text": "Just a simple tomato soup with a bit of basil."},
            {"speaker": "A", "text": "Did you use fresh tomatoes or the canned ones?"},
            {"speaker": "B", "text": "Canned, honestly. They taste better this time of year."},
        ],
    },
    {
        "id": "zh-weather",
        "language": "zh",
        "topic": "天气",
        "source": "generated",
        "lines": [
            {"speaker": "A", "text": "今天外面好冷啊，你出门了吗？"},
            {"speaker": "B", "text": "出去了一会儿，风特别大，我马上就回来了。"},
            {"speaker": "A", "text": "听说明天还要降温，记得多穿一点衣服。"},
            {"speaker": "B", "text": "好的，谢谢提醒，你也注意保暖。"},
        ],
    },
    {
        "id": "zh-books",
        "language": "zh",
        "topic": "读书",
        "source": "generated",
        "lines": [
            {"speaker": "A", "text": "你最近在看什么书？"},
            {"speaker": "B", "text": "在看一本关于城市历史的书，写得很有意思。"},
            {"speaker": "A", "text": "看完以后可以借给我吗？"},
            {"speaker": "B", "text": "当然可以，下周就给你带过来。"},
        ],
    },
)


#: folder under the samples root (``duetflow samples make`` reads it via the entry point)
FOLDER = "scripts"


def generate(root: Path, seed: int = 0, scale: int = 1) -> dict[str, Any]:
    """Write the sample scripts to ``root/scripts`` (``scale`` copies); return a summary for
    ``truth.json`` (counts and file names)."""
    out = Path(root) / "scripts"
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for k in range(max(1, scale)):
        for script in SAMPLE_SCRIPTS:
            data = dict(script)
            if k:
                data["id"] = f"{script['id']}-{k}"
            path = out / f"{data['id']}.json"
            path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
            written.append(path.name)
    # relative names only: truth.json must not depend on where the samples were written
    return {"scripts": len(written), "files": written, "languages": ["en", "zh"]}
