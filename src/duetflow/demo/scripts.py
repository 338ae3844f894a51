"""Sample two-speaker scripts (English and Chinese) for the PH synthesis demo and tests.

Shaped like the seed study's generated scripts: speakers A and B, everyday topics, light fillers
and interjections ("um", "you know", 嗯, 那个), in short turns, 65–95 s of speech each as
estimated by :mod:`duetflow.tts.speaking_rate`: synthesis cuts each at a line boundary to the
length of a human dialogue drawn from its language and topic (``synth.match_human_length``) and
speaks it at that dialogue's pace (``synth.match_human_rate``), so a rendered PH dialogue lasts
as long, and takes turns as often, as an HH/HM one.

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
#: fillers and interjections), written in short turns as people talk (about 7 English words, 34
#: characters, or 16 Chinese characters a line: the HH/HM turn length of the sample corpora, so
#: that spoken at the human pace, PH takes turns at the human rate too; docs/equalisation.md)
#: and long enough
#: (:data:`SAMPLE_SPEECH_S`) that synthesis can cut each to any human length of its language
#: (:mod:`duetflow.tts.length_match`, docs/equalisation.md).
SAMPLE_SCRIPTS: tuple[dict[str, Any], ...] = (
    {
        "id": "en-weekend",
        "language": "en",
        "topic": "ordinary life",
        "source": "generated",
        "lines": _lines(
            "Hey, so, do you have any plans for the weekend?",
            "Um, not really. Maybe a hike if it stays dry.",
            "Oh, nice. Which trail are you thinking of taking?",
            "The one along the river, past the old mill.",
            "How long does that one usually take you?",
            "About three hours, you know, with a stop.",
            "Can I come along with you this time?",
            "Of course you can. It's more fun with two anyway.",
            "Great. I can bring sandwiches and coffee.",
            "Perfect, I always forget to pack food.",
            "So what time should we meet, and where?",
            "Let's say nine o'clock in front of the station.",
            "Is there a bus that goes out to the trailhead?",
            "Yes, the first one leaves at nine fifteen.",
            "Okay. I'll check the forecast on Friday night.",
            "Good idea. Send me a text if it looks like rain.",
            "Will do. Should I wear my old hiking boots?",
            "Definitely, it gets muddy after the bridge.",
            "Right. And do we need to buy any tickets?",
            "No, the park is free for everyone on weekends.",
            "Even better. See you on Saturday, then.",
            "See you there. And please don't be late, okay?",
        ),
    },
    {
        "id": "en-kitchen",
        "language": "en",
        "topic": "ordinary life",
        "source": "generated",
        "lines": _lines(
            "What are you making in there? It smells wonderful.",
            "Just a tomato soup, uh, with some fresh basil.",
            "Did you use fresh tomatoes or the canned ones?",
            "Canned, honestly. They taste better in winter.",
            "Huh, that makes sense. Is it very hard to make?",
            "Not at all. It only takes about forty minutes.",
            "So what's the secret, then? Tell me.",
            "You fry the onions first, really slowly.",
            "I never have the patience for that part.",
            "Yeah, I used to rush it too, but it's worth it.",
            "So what goes into the pot after the onions?",
            "Garlic, then the tomatoes and a bit of stock.",
            "And the basil only goes in right at the end?",
            "Right at the end, or it loses its taste.",
            "All right, you've convinced me. Can I try some?",
            "Of course. Grab some bread from the cupboard.",
            "White or brown? There are two different bags here.",
            "The brown one, I think it's fresher.",
            "Should I set the table for us, too?",
            "Yes please, we can eat in about ten minutes.",
            "Great, I'm starving after that long walk.",
            "Me too. Let's sit and eat by the big window.",
        ),
    },
    {
        "id": "zh-weather",
        "language": "zh",
        "topic": "ordinary life",
        "source": "generated",
        "lines": _lines(
            "今天外面好冷啊，你今天早上出门了吗？",
            "出去了一会儿，嗯，外面的风特别大，吹得脸疼。",
            "你是去超市买什么东西了吗？",
            "买了点菜和水果，买完我马上就回来了。",
            "我听说明天还要继续降温，还可能下雪呢。",
            "真的啊？那我今天晚上得把厚衣服都找出来了。",
            "那你明天还要像平时一样去上班吗？",
            "要啊，不过我打算明天早点出门，早点到。",
            "为什么要那么早就出门啊，来得及吧？",
            "怕路上结冰，公交车会开得特别慢，容易迟到。",
            "那你记得多穿一点，再戴个帽子和手套。",
            "好的，谢谢你提醒我，我都记住了。",
            "晚上睡觉的时候记得把暖气一直开着吧。",
            "嗯，知道了，你自己也要注意保暖，别感冒了。",
            "那个，我想问一下，这个周末你有空吗？",
            "应该有空吧，怎么了，是有什么事吗？",
            "天气好的话我们一起去公园走走吧，散散步。",
            "行啊，到时候我们先看看天气预报再说吧。",
            "要是周末出太阳的话我们就一起去吧。",
            "对了，公园里那个湖现在结冰了没有？",
            "还没有吧，估计得再冷好几天才会结冰。",
            "好，那就这么定了，我们周五晚上再联系。",
        ),
    },
    {
        "id": "zh-books",
        "language": "zh",
        "topic": "culture & education",
        "source": "generated",
        "lines": _lines(
            "你最近在看什么书啊，好看吗？",
            "在看一本讲城市历史的书，嗯，我觉得挺有意思。",
            "城市历史？讲的是哪个城市的历史啊？",
            "主要讲北京，从元朝开始一直讲到现在。",
            "听起来不错。那个，这本书厚不厚，好不好读？",
            "还好，三百多页吧，而且里面图片挺多的。",
            "那你看完以后能不能借给我看看啊？",
            "当然可以，我估计下个星期就能看完了。",
            "太好了，我一直都想多了解一下老北京的事情。",
            "那我看完了就直接给你带过去吧，不用客气。",
            "我这儿也有一本小说，你要不要拿去看看？",
            "是吗？这本小说讲的是一个什么样的故事啊？",
            "讲一家人三代的故事，写得特别感人，我看哭了。",
            "好啊，那我们就把书换着看吧，挺好的。",
            "你平时是不是挺喜欢看这种小说的？",
            "喜欢，不过最近工作实在是太忙了，没时间看。",
            "我也是，每天只能晚上睡觉前看一会儿。",
            "对，睡觉之前看一会儿书真的是最舒服了。",
            "对了，你那本小说的作者是谁啊，有名吗？",
            "一个年轻作家，名字我一下子想不起来了。",
            "没关系，那我们下周见面的时候再换书吧。",
            "好，就这么说定了，那我们就下周见吧。",
        ),
    },
)

#: Estimated speech time (s) of each sample script (:mod:`duetflow.tts.speaking_rate`): more
#: than the longest rendered dialogue a window allows, so a length drawn from the human
#: dialogues can always be cut from it.
SAMPLE_SPEECH_S = (55.0, 95.0)


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
