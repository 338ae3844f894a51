"""Sample two-speaker scripts (English and Chinese) for the PH synthesis demo and tests.

Shaped like the seed study's generated scripts: speakers A and B, everyday topics, light fillers
and interjections ("um", "you know", 嗯, 那个), in short turns, 65–95 s of speech each as
estimated by :mod:`duetflow.tts.speaking_rate`: synthesis cuts each at a line boundary to the
length of a human dialogue drawn from its language and topic (``synth.match_human_length``) and
speaks it at that dialogue's pace (``synth.match_human_rate``), so a rendered PH dialogue lasts
as long, and takes turns as often, as an HH/HM one.

``generate`` writes ``root/scripts/*.json`` in the schema of :mod:`duetflow.tts.script`; the
samples command of the corpora module dispatches to it. Content is fixed; ``scale`` repeats it
with suffixed ids, so a bigger demo needs no new text. ``seed`` is accepted for the common
generator signature; nothing here is random. Each unit of ``scale`` writes two scripts per
language, taken in turn from that language's scripts, so the demo's PH topics follow the sample
corpora's as it grows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _lines(*texts: str) -> list[dict[str, str]]:
    """Alternating A/B lines."""
    return [{"speaker": "AB"[i % 2], "text": t} for i, t in enumerate(texts)]


#: Four English and four Chinese scripts in the shape of the seed study's (two speakers A/B, light
#: fillers and interjections), written in short turns as people talk (about 7 English words, 34
#: characters, or 16 Chinese characters a line: the HH/HM turn length of the sample corpora, so
#: that spoken at the human pace, PH takes turns at the human rate too; docs/equalisation.md)
#: and long enough
#: (:data:`SAMPLE_SPEECH_S`) that synthesis can cut each to any human length of its language
#: (:mod:`duetflow.tts.length_match`, docs/equalisation.md). Their topics are the sample
#: corpora's (ordinary life, tourism, work; one zh script on culture and education), so that
#: synthesis can match each to human dialogues of its own topic (``synth.match_topic_min``) and the
#: PH topic mix follows the humans' as the demo grows (:data:`PER_LANGUAGE`).
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
    {
        "id": "en-trip",
        "language": "en",
        "topic": "tourism",
        "source": "generated",
        "lines": _lines(
            "So, um, have you booked the train for the coast yet?",
            "Not yet. I wanted to ask you about the times first.",
            "There's one at eight and another one just after ten.",
            "The later one, please. I'm not a morning person.",
            "Fair enough. Do we need a hotel for both nights?",
            "Yes, I found a small place right near the harbour.",
            "Oh, nice. Is it far from the station on foot?",
            "About fifteen minutes, you know, along the seafront.",
            "And what do you want to see while we're there?",
            "The lighthouse, for sure, and the old fish market.",
            "I read that the market closes early on Sundays.",
            "Then we should go on Saturday morning instead.",
            "Good plan. What about the boat tour to the island?",
            "It's a bit pricey, but I think it's worth it.",
            "Hmm, can we book the tickets for it online?",
            "Yes, and it's cheaper if you book a week ahead.",
            "Okay, I'll do that tonight after dinner, then.",
            "Great. Should we pack anything special for it?",
            "A warm jacket. It gets windy out on the water.",
            "Right. And sunscreen, in case the sun comes out.",
            "I can't wait. We haven't been away in ages.",
            "Me neither. It'll be good to get out of town.",
        ),
    },
    {
        "id": "en-office",
        "language": "en",
        "topic": "work",
        "source": "generated",
        "lines": _lines(
            "Hey, did you see the email about the new deadline?",
            "Uh, yes. They moved it up to next Thursday, right?",
            "Exactly. I'm not sure we can finish the report by then.",
            "Well, how much of your part is still left to do?",
            "The charts are done, but the summary isn't started.",
            "I could write the summary if you send me your notes.",
            "Really? That would help me out a lot, thank you.",
            "No problem. When can you send them over to me?",
            "This afternoon, after the meeting with the client.",
            "Is that meeting still at two, or did it move too?",
            "It's at three now. They asked to push it back.",
            "Okay. Do you want me to join you for that one?",
            "Yes, you know the numbers better than I do.",
            "Fine. I'll bring the figures from last quarter.",
            "Good. And can you ask about the budget, too?",
            "Sure. Should we book a room, or meet at their office?",
            "Let's book the small room on the second floor.",
            "I'll do it now, before someone else takes it.",
            "Thanks. Oh, and the coffee machine is broken again.",
            "Of course it is. I'll tell the front desk.",
            "Great. Let's talk again after lunch, then?",
            "Sounds good. See you around one thirty.",
        ),
    },
    {
        "id": "zh-trip",
        "language": "zh",
        "topic": "tourism",
        "source": "generated",
        "lines": _lines(
            "五一假期你打算去哪儿玩啊，想好了吗？",
            "还没定呢，嗯，我在想要不要去杭州看看。",
            "杭州挺好的，西湖那边春天特别漂亮。",
            "对啊，不过听说假期的时候人特别多。",
            "那你可以早上早点去，人会少一些。",
            "有道理。那个，你去的时候住在哪儿了？",
            "我住在西湖旁边的一个小酒店，挺方便的。",
            "贵不贵啊？我怕假期的价格会涨很多。",
            "比平时贵一点，最好现在就提前订好。",
            "好，我今天晚上就在网上看看房间。",
            "高铁票你买了没有？假期票特别难买。",
            "还没有呢，我打算明天一早就去抢票。",
            "那你得快点，要不然就只剩站票了。",
            "嗯，知道了。杭州还有什么好吃的吗？",
            "一定要尝尝西湖醋鱼，还有东坡肉。",
            "听起来就很好吃，我都记下来了。",
            "还有龙井茶，你可以买一点带回来。",
            "好啊，到时候我给你也带一盒回来。",
            "太好了，谢谢你啊，那我就等着喝了。",
            "不客气，你有空也可以一起去玩啊。",
            "这次不行了，我假期还得加两天班。",
            "那好吧，等我回来再给你看照片吧。",
        ),
    },
    {
        "id": "zh-work",
        "language": "zh",
        "topic": "work",
        "source": "generated",
        "lines": _lines(
            "你们公司最近是不是特别忙啊？",
            "是啊，嗯，年底了，每天都要加班到很晚。",
            "那你们一般几点才能下班回家啊？",
            "快的话八点，慢的话得十点以后了。",
            "那也太辛苦了，周末能休息一下吗？",
            "周六有时候还要去公司开个会。",
            "你们老板知道大家都这么累吗？",
            "知道啊，他说忙完这个月就好了。",
            "那个，年底你们会发奖金吗？",
            "应该会发吧，不过具体多少还不知道。",
            "我们公司今年好像不发奖金了。",
            "真的啊？那你有没有想过换个工作？",
            "想过，不过现在找工作也不容易。",
            "对，而且你现在的工作离家也挺近的。",
            "是啊，走路十分钟就到了，很方便。",
            "这个就很难得了，我每天坐地铁要一个小时。",
            "一个小时？那你早上几点就得起床啊？",
            "六点半就得起来，冬天天还没亮呢。",
            "太早了，那你晚上得早点睡觉才行。",
            "嗯，我现在每天十一点之前就睡了。",
            "挺好的，等忙完了我们一起吃个饭吧。",
            "好啊，那就下个月找个周末吧。",
        ),
    },
)

#: Estimated speech time (s) of each sample script (:mod:`duetflow.tts.speaking_rate`): more
#: than the longest rendered dialogue a window allows, so a length drawn from the human
#: dialogues can always be cut from it.
SAMPLE_SPEECH_S = (55.0, 95.0)


#: scripts of each language written per unit of ``scale`` (:func:`generate`)
PER_LANGUAGE = 2

#: folder under the samples root (``duetflow samples make`` reads it via the entry point)
FOLDER = "scripts"


def generate(root: Path, seed: int = 0, scale: int = 1) -> dict[str, Any]:
    """Write the sample scripts to ``root/scripts``: :data:`PER_LANGUAGE` scripts of each
    language per unit of ``scale``, taken in turn from that language's scripts (scale 1: the
    first two of each; a bigger demo cycles through every topic); return a summary for
    ``truth.json`` (counts and file names)."""
    out = Path(root) / "scripts"
    out.mkdir(parents=True, exist_ok=True)
    pools: dict[str, list[dict[str, Any]]] = {}
    for script in SAMPLE_SCRIPTS:
        pools.setdefault(str(script["language"]), []).append(script)
    written = []
    for k in range(max(1, scale)):
        for pool in pools.values():
            for j in range(PER_LANGUAGE):
                script = pool[(k * PER_LANGUAGE + j) % len(pool)]
                data = dict(script)
                if k:
                    data["id"] = f"{script['id']}-{k}"
                path = out / f"{data['id']}.json"
                text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
                path.write_text(text, encoding="utf-8")
                written.append(path.name)
    # relative names only: truth.json must not depend on where the samples were written
    return {"scripts": len(written), "files": written, "languages": sorted(pools)}
