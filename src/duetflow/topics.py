"""The topic taxonomy and how each source's own topic labels map into it.

A Turing-test set compares HH, HM and PH dialogues that should differ only in who speaks, so
their topics must be comparable: every dialogue's ``topic`` is one taxonomy id, and the source's
own label is kept in ``source_topic`` (:class:`duetflow.records.dialogue.DesignFields`). The default
taxonomy is the ten everyday topics of DailyDialog, which the seed study uses (ids are the
names in snake case; ``&`` reads ``and``):

    ordinary_life, school_life, culture_and_education, attitude_and_emotion, relationship,
    tourism, health, work, politics, finance

A label is mapped by, in order: the run config's ``topics.aliases[<corpus>]``, the built-in table
of the corpus (below), and finally the label itself when it already names a taxonomy topic
(``"Ordinary Life"``, ``"ordinary_life"``). Anything else is ``topics.unmapped`` (``other``) and
is counted in the report. Labels are compared normalised (:func:`normalise_topic`).

Built-in tables (docs/topics.md gives the reasoning per entry):

* **DailyTalk** (``dailytalk``): DailyDialog's topic, as a name or as its 1–10 code.
* **MagicData-RAMC** (``magicdata_ramc``): its 15 domains (English names from the corpus README,
  Chinese names as written in ``UTTERANCEINFO.txt``; ``职业发展`` is attested, the other Chinese
  spellings are the plain translations and are matched as well as a few common variants).
* **IEMOCAP** (``iemocap``): the improvisation scenario of the dialogue (``impro01`` …
  ``impro08``; takes ``a``/``b`` share the scenario). The scripted sessions are scenes from
  plays whose content the release does not describe: they stay unmapped unless configured.
* **Studio** sessions name a taxonomy topic in the sidecar; anything else is a rejection
  (``unknown_topic``), an empty topic is ``other``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: DailyDialog's ten topics, in its own code order (1 = ordinary life ... 10 = finance).
DEFAULT_TAXONOMY: tuple[str, ...] = (
    "ordinary_life",
    "school_life",
    "culture_and_education",
    "attitude_and_emotion",
    "relationship",
    "tourism",
    "health",
    "work",
    "politics",
    "finance",
)

#: The topic of a dialogue whose source label maps to no taxonomy topic.
UNMAPPED = "other"

_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)


def normalise_topic(label: str) -> str:
    """Compare-ready form of a label: NFKC, lower case, ``&`` → ``and``, words joined by ``_``.

    ``"Culture & Education"`` → ``culture_and_education``; CJK labels keep their characters
    (``"职业发展 "`` → ``职业发展``).
    """
    text = unicodedata.normalize("NFKC", str(label)).strip().lower().replace("&", " and ")
    return _NON_WORD.sub("_", text).strip("_")


# --- built-in tables ----------------------------------------------------------------------------

#: DailyDialog topic codes (the names themselves normalise to the taxonomy ids).
DAILYDIALOG: Mapping[str, str] = {str(i + 1): t for i, t in enumerate(DEFAULT_TAXONOMY)}

#: MagicData-RAMC's 15 domains. Sports, entertainment, devices and the climate are everyday
#: small talk in DailyDialog's sense (ordinary life); humanities, religion, science and art are
#: culture & education; military goes with politics; "Education & Health" is filed under
#: education (the corpus does not split it).
RAMC_DOMAINS: Mapping[str, str] = {
    **dict.fromkeys(["humanities", "人文", "人文历史"], "culture_and_education"),
    **dict.fromkeys(["entertainment", "娱乐", "休闲娱乐"], "ordinary_life"),
    **dict.fromkeys(["sports", "体育", "运动", "体育运动"], "ordinary_life"),
    **dict.fromkeys(["military", "军事"], "politics"),
    **dict.fromkeys(["finance_and_economy", "财经", "金融", "经济", "金融经济"], "finance"),
    **dict.fromkeys(["religion", "宗教"], "culture_and_education"),
    **dict.fromkeys(["family_life", "家庭生活", "家庭"], "relationship"),
    **dict.fromkeys(["politics_and_law", "政治法律", "政法", "时政", "法律"], "politics"),
    **dict.fromkeys(
        ["education_and_health", "教育健康", "教育", "教育与健康"], "culture_and_education"
    ),
    **dict.fromkeys(["health", "健康", "医疗健康"], "health"),
    **dict.fromkeys(["digital_devices", "数码", "数码产品", "电子产品"], "ordinary_life"),
    **dict.fromkeys(
        ["climate_and_environment", "气候环境", "环境", "环境治理", "气候"], "ordinary_life"
    ),
    **dict.fromkeys(["science_and_technology", "科技", "科学技术"], "culture_and_education"),
    **dict.fromkeys(["professional_development", "职业发展", "职场", "工作"], "work"),
    **dict.fromkeys(["art", "艺术", "文艺"], "culture_and_education"),
    **dict.fromkeys(["ordinary_life", "日常生活", "生活", "饮食", "美食"], "ordinary_life"),
    **dict.fromkeys(["交通出行", "旅游", "旅行", "出行"], "tourism"),
}


@dataclass(frozen=True)
class Scenario:
    """An IEMOCAP improvisation: what the actors were asked to play, and the topic it gives."""

    code: str
    emotion: str
    description: str
    topic: str


#: IEMOCAP's improvisation scenarios (Busso et al. 2008, "Scenarios used for eliciting
#: unscripted/improvised interactions"), paraphrased. ``impro08`` (sessions 2-5 only) is not
#: described in the project's references and stays unmapped; configure it when you know it.
IEMOCAP_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "impro01", "frustration",
        "sent back at the Department of Motor Vehicles after an hour in line: wrong ID form",
        "ordinary_life",
    ),
    Scenario(
        "impro02", "sadness",
        "a new parent is called up to serve abroad and must leave the spouse for over a year",
        "relationship",
    ),
    Scenario("impro03", "happiness", "telling a friend about getting married", "relationship"),
    Scenario(
        "impro04", "frustration", "out of work for years, losing hope of finding a job", "work"
    ),
    Scenario(
        "impro05", "anger",
        "the airline lost the luggage and offers too little compensation",
        "tourism",
    ),
    Scenario(
        "impro06", "sadness", "a close friend or relative has died", "attitude_and_emotion"
    ),
    Scenario(
        "impro07", "happiness", "telling a friend about being accepted to university",
        "school_life",
    ),
)  # fmt: skip

IEMOCAP: Mapping[str, str] = {s.code: s.topic for s in IEMOCAP_SCENARIOS}

#: Built-in tables by corpus adapter name (keys are normalised labels).
BUILTIN_TABLES: Mapping[str, Mapping[str, str]] = {
    "dailytalk": DAILYDIALOG,
    "magicdata_ramc": RAMC_DOMAINS,
    "iemocap": IEMOCAP,
}

_IEMOCAP_CODE = re.compile(r"(impro\d\d|script\d\d)", re.IGNORECASE)


def iemocap_scenario(dialogue_name: str) -> str:
    """The scenario code of an IEMOCAP dialogue: ``Ses03M_impro05a`` → ``impro05``.

    Scripted sessions give ``script01`` … ``script03`` (every take of one script).
    """
    m = _IEMOCAP_CODE.search(dialogue_name)
    return m.group(1).lower() if m else ""


# --- mapping ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicMatch:
    """A mapped label: the taxonomy ``topic``, the raw ``source_topic``, and whether it mapped."""

    topic: str
    source_topic: str | None
    mapped: bool


class TopicMapper:
    """Maps one source's labels into a taxonomy (see the module docstring for the order).

    ``aliases`` are the run config's extra ``{label: topic}`` entries for this source; their
    targets must be taxonomy topics (checked when the config is loaded).
    """

    def __init__(
        self,
        corpus: str,
        taxonomy: Sequence[str] = DEFAULT_TAXONOMY,
        aliases: Mapping[str, str] | None = None,
        unmapped: str = UNMAPPED,
    ) -> None:
        self.corpus = corpus
        self.taxonomy = frozenset(taxonomy)
        self.unmapped = unmapped
        self.table: dict[str, str] = {
            normalise_topic(k): v for k, v in BUILTIN_TABLES.get(corpus, {}).items()
        }
        self.table.update({normalise_topic(k): v for k, v in (aliases or {}).items()})

    def lookup(self, label: str) -> str | None:
        """The taxonomy topic of ``label``, or None when it maps to none."""
        key = normalise_topic(label)
        if not key:
            return None
        topic = self.table.get(key)
        if topic is None and key in self.taxonomy:
            topic = key
        return topic if topic in self.taxonomy else None

    def map(self, label: str | int | None) -> TopicMatch:
        """Map a raw label; empty or unknown labels give ``unmapped`` (``mapped=False``)."""
        raw = "" if label is None else str(label).strip()
        topic = self.lookup(raw) if raw else None
        if topic is None:
            return TopicMatch(self.unmapped, raw or None, False)
        return TopicMatch(topic, raw, True)
