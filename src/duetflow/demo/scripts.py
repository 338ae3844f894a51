"""Sample two-speaker scripts (English and Chinese) for the PH synthesis demo and tests.

Shaped like the seed study's generated scripts: speakers A and B, everyday topics, light fillers
and interjections ("um", "you know", 嗯, 那个), 40–50 s of speech each as estimated by
:mod:`duetflow.tts.speaking_rate`, so a rendered PH dialogue lasts well inside 20–60 s.

``generate`` writes ``root/scripts/*.json`` in the schema of :mod:`duetflow.tts.script`; the
samples command of the corpora module dispatches to it. Content is fixed; ``scale`` repeats the
set with suffixed ids, so a bigger demo needs no new text. ``seed`` is accepted for the common
generator signature; nothing here is random.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _lines(*texts: str) -> list[dict[str, str]]:
    """Alternating A/B lines."""
    return [{"speaker": "AB"[i % 2], "text": t} for i, t in enumerate(texts)]


#: Two English and two Chinese scripts in the shape of the seed study's (two speakers A/B, light
#: fillers and interjections), each 40–50 s of speech by :mod:`duetflow.tts.speaking_rate`.
SAMPLE_SCRIPTS: tuple[dict[str, Any], ...] = (
    {
        "id": "en-weekend",
        "language": "en",
        "topic": "ordinary life",
        "source": "generated",
        "lines": _lines(
            "Hey, so, do you have any plans for the weekend?",
            "Um, not really. I was thinking about going hiking if the weather holds up.",
            "Oh, that sounds great. Which trail were you thinking of?",
            "The one along the river, you know, past the old mill. It takes about three hours.",
            "Okay, I like that. Mind if I bring some sandwiches and a flask of coffee?",
            "Of course not. Actually, that would be perfect. I always forget to pack food.",
            "Great. So what time should we meet, and where?",
            "Let's say nine at the station. The first bus to the trailhead leaves at nine fifteen.",
            "Nine it is. I'll check the forecast on Friday night and text you, just in case.",
            "Sounds good. Oh, and wear proper shoes, it gets muddy after the bridge.",
        ),
    },
    {
        "id": "en-kitchen",
        "language": "en",
        "topic": "ordinary life",
        "source": "generated",
        "lines": _lines(
            "What are you making? It smells wonderful in here.",
            "Just a simple tomato soup with, uh, a bit of basil from the garden.",
            "Did you use fresh tomatoes or the canned ones?",
            "Canned, honestly. This time of year they taste better than the fresh ones.",
            "Huh, that makes sense. So how long does it take from start to finish?",
            "About forty minutes. You fry the onions slowly first, that's the secret, really.",
            "I never have the patience for that. I just throw everything in the pot at once.",
            "Yeah, I used to do that too. Try it my way once and you'll taste the difference.",
            "All right, you've convinced me. Can I have a bowl when it's ready?",
            "Of course. Grab some bread from the cupboard, and we can eat in ten minutes.",
        ),
    },
    {
        "id": "zh-weather",
        "language": "zh",
        "topic": "ordinary life",
        "source": "generated",
        "lines": _lines(
            "今天外面好冷啊，你出门了吗？",
            "出去了一会儿，嗯，风特别大，我买完东西马上就回来了。",
            "听说明天还要降温。",
            "真的啊？那我得把厚衣服找出来了。你明天还要上班吗？",
            "要啊，不过我打算早点出门，怕路上结冰，公交车开得慢。",
            "那你记得多穿一点，再戴个帽子，别感冒了。",
            "好的，谢谢提醒。你也注意保暖，晚上睡觉把暖气开着。",
            "嗯，知道了。那个，周末要是天气好一点，我们一起去公园走走吧？",
            "行啊，到时候看天气预报再说，要是出太阳就去。",
            "好，那就这么定了，周五晚上我再给你打电话。",
        ),
    },
    {
        "id": "zh-books",
        "language": "zh",
        "topic": "culture & education",
        "source": "generated",
        "lines": _lines(
            "你最近在看什么书？",
            "在看一本关于城市历史的书，嗯，写得挺有意思的。",
            "城市历史？是讲哪个城市的？",
            "主要是讲北京的，从元朝一直讲到现在。",
            "听起来不错。那个，书厚不厚？我最近看书特别慢。",
            "还好，三百多页吧，不过图片占了不少，看起来挺快的。",
            "那你看完以后可以借给我吗？我一直想多了解一点老北京。",
            "当然可以，我大概下周就能看完，到时候给你带过去。",
            "太好了，谢谢你。我这儿也有一本小说，讲一家人三代的故事，你要不要换着看看？",
            "好啊，那我们下周见面的时候就换着看吧。",
        ),
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
