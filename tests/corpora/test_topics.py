"""Topic mapping: the taxonomy, each adapter's table, aliases, unmapped labels, the filter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from duetflow.config import build_config
from duetflow.corpora import get_adapter
from duetflow.errors import ConfigError
from duetflow.records.dialogue import Dialogue
from duetflow.topics import DEFAULT_TAXONOMY, TopicMapper, iemocap_scenario, normalise_topic
from duetflow.turntaking.filters import FilterContext, topics

from .helpers import scan
from .test_dailytalk import write_corpus
from .test_magicdata_ramc import LINES, REC, _audio, _corpus

#: DailyDialog's topics in its README's words and code order (ground truth for the mapping)
DAILYDIALOG_NAMES = [
    "Ordinary Life",
    "School Life",
    "Culture & Education",
    "Attitude & Emotion",
    "Relationship",
    "Tourism",
    "Health",
    "Work",
    "Politics",
    "Finance",
]


def test_default_taxonomy_is_dailydialogs_ten_topics() -> None:
    assert [normalise_topic(n) for n in DAILYDIALOG_NAMES] == list(DEFAULT_TAXONOMY)
    assert build_config({}).topics.taxonomy == list(DEFAULT_TAXONOMY)


def test_normalise_topic() -> None:
    assert normalise_topic("  Culture & Education ") == "culture_and_education"
    assert normalise_topic("ordinary-life") == "ordinary_life"
    assert normalise_topic("职业发展 ") == "职业发展"
    assert normalise_topic("Ｗｏｒｋ") == "work"  # full-width letters (NFKC)


def test_dailydialog_names_codes_and_unknown_labels() -> None:
    m = TopicMapper("dailytalk")
    for code, name in enumerate(DAILYDIALOG_NAMES, start=1):
        assert m.map(name).topic == m.map(code).topic == m.map(str(code)).topic
        assert m.map(code).source_topic == str(code) and m.map(code).mapped
    unknown = m.map("sports")
    assert (unknown.topic, unknown.source_topic, unknown.mapped) == ("other", "sports", False)
    empty = m.map("")
    assert (empty.topic, empty.source_topic, empty.mapped) == ("other", None, False)


def test_ramc_domains_english_and_chinese() -> None:
    m = TopicMapper("magicdata_ramc")
    # the corpus README's 15 domains; each must land in the taxonomy, none left unmapped
    domains = [
        "Humanities",
        "Entertainment",
        "Sports",
        "Military",
        "Finance & Economy",
        "Religion",
        "Family Life",
        "Politics & Law",
        "Education & Health",
        "Digital Devices",
        "Climate & Environment",
        "Science & Technology",
        "Professional Development",
        "Art",
        "Ordinary Life",
    ]
    assert all(m.map(d).mapped and m.map(d).topic in DEFAULT_TAXONOMY for d in domains)
    assert m.map("Professional Development").topic == m.map("职业发展").topic == "work"
    assert m.map("Finance & Economy").topic == m.map("财经").topic == "finance"
    assert m.map("Military").topic == "politics"
    assert not m.map("星座").mapped  # a label nobody mapped


def test_iemocap_scenarios_and_irregular_names() -> None:
    assert iemocap_scenario("Ses03M_impro05a") == "impro05"
    assert iemocap_scenario("Ses05M_script01_1b") == "script01"
    assert iemocap_scenario("Ses01F_impro08") == "impro08"
    m = TopicMapper("iemocap")
    assert m.map("impro01").topic == "ordinary_life"
    assert m.map("impro05").topic == "tourism"
    assert not m.map("impro08").mapped and not m.map("script02").mapped


def test_aliases_override_builtin_tables_and_taxonomy_edits_apply() -> None:
    cfg = build_config(
        {
            "topics": {
                "aliases": {"magicdata_ramc": {"星座": "culture_and_education", "Sports": "health"}}
            }
        }
    )
    m = cfg.topics.mapper("magicdata_ramc")
    assert m.map("星座").topic == "culture_and_education"
    assert m.map("sports").topic == "health"
    small = build_config({"topics": {"taxonomy": ["work", "health"], "unmapped": "misc"}})
    m2 = small.topics.mapper("dailytalk")
    assert m2.map("Work").topic == "work"
    assert (m2.map("Tourism").topic, m2.map("Tourism").mapped) == ("misc", False)


def test_bad_topic_config_names_the_key() -> None:
    with pytest.raises(ConfigError, match=r"topics.aliases.dailytalk: \['sport'\] not in"):
        build_config({"topics": {"aliases": {"dailytalk": {"x": "sport"}}}})
    with pytest.raises(ConfigError, match="normalised snake case"):
        build_config({"topics": {"taxonomy": ["Ordinary Life"]}})


def test_dailytalk_adapter_keeps_the_raw_label(tmp_path: Path) -> None:
    write_corpus(tmp_path, {str(i): [(0, "a"), (1, "b")] for i in (1, 2, 3)})
    meta = json.loads((tmp_path / "metadata.json").read_text())
    for key, label in (("1", "Culture & Education"), ("2", 4), ("3", "sports")):
        for turn in meta[key].values():
            turn["topic"] = label
    (tmp_path / "metadata.json").write_text(json.dumps(meta))
    kept, _, _ = scan("dailytalk", tmp_path)
    got = {k: (d.topic, d.design.source_topic) for k, d in kept.items()}
    assert got == {
        "dailytalk__d1": ("culture_and_education", "Culture & Education"),
        "dailytalk__d2": ("attitude_and_emotion", "4"),
        "dailytalk__d3": ("other", "sports"),
    }


def test_ramc_adapter_maps_utteranceinfo_topics(tmp_path: Path) -> None:
    _corpus(tmp_path, LINES, _audio("mono"))
    head = "CHANNEL\tUTTRANS_ID\tSPEAKER_ID-1\tSPEAKER_ID-2\tTOPIC\tVALID(min)\tTOTAL(min)\tEnv\n"
    for label, topic in (
        ("Professional Development", "work"),
        ("艺术", "culture_and_education"),
        ("星座", "other"),
    ):
        (tmp_path / "MDT2021S003" / "UTTERANCEINFO.txt").write_text(
            head + f"C0\t{REC}.wav\tG00000011\tG00000012\t{label}\t0.1\t0.1\t室内\n"
        )
        kept, _, _ = scan("magicdata_ramc", tmp_path)
        d = kept[f"magicdata_ramc__{REC}"]
        assert (d.topic, d.design.source_topic) == (topic, label)


def test_aliases_reach_the_adapters(tmp_path: Path) -> None:
    write_corpus(tmp_path, {"1": [(0, "a"), (1, "b")]})  # topic "work"
    cfg = build_config({"topics": {"aliases": {"dailytalk": {"work": "finance"}}}})
    [d] = list(get_adapter("dailytalk")(tmp_path, None, config=cfg).scan())
    assert isinstance(d, Dialogue) and d.topic == "finance" and d.design.source_topic == "work"


def test_topics_filter(tmp_path: Path) -> None:
    write_corpus(tmp_path, {"1": [(0, "a"), (1, "b")]})
    [d] = list(get_adapter("dailytalk")(tmp_path).scan())
    assert isinstance(d, Dialogue)
    assert "topics" in build_config({}).filters.order
    anything = build_config({})
    assert topics(d, FilterContext(d, anything)).__class__.__name__ == "Keep"
    only_health = build_config({"filters": {"topics": ["health"]}})
    out = topics(d, FilterContext(d, only_health))
    assert getattr(out, "reason", None) == "topic"
    assert dict(getattr(out, "details", {})) == {"topic": "work", "allowed": ["health"]}
