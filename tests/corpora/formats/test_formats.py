"""Annotation readers (duetflow.corpora.formats) on files written the way Praat, ELAN and
diarisation tools write them; praatio (a second, independent writer and parser) cross-checks the
TextGrid reader."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duetflow.corpora.formats.eaf import read_eaf
from duetflow.corpora.formats.rttm import read_rttm, rttm_file_ids
from duetflow.corpora.formats.textgrid import read_textgrid
from duetflow.errors import InputError
from duetflow.records.dialogue import TurnKind

# What Praat 6 writes with "Save as text file..." (its trailing spaces written as ~).
LONG = """File type = "ooTextFile"
Object class = "TextGrid"

xmin = 0~
xmax = 6.5~
tiers? <exists>~
size = 3~
item []:~
    item [1]:
        class = "IntervalTier"~
        name = "Mary"~
        xmin = 0~
        xmax = 6.5~
        intervals: size = 4~
        intervals [1]:
            xmin = 0~
            xmax = 0.42~
            text = ""~
        intervals [2]:
            xmin = 0.42~
            xmax = 2.1~
            text = "she said ""no"" to José"~
        intervals [3]:
            xmin = 2.1~
            xmax = 4.05~
            text = "<laugh>"~
        intervals [4]:
            xmin = 4.05~
            xmax = 6.5~
            text = ""~
    item [2]:
        class = "IntervalTier"~
        name = "John"~
        xmin = 0~
        xmax = 6.5~
        intervals: size = 3~
        intervals [1]:
            xmin = 0~
            xmax = 2.0~
            text = ""~
        intervals [2]:
            xmin = 2.0~
            xmax = 3.25~
            text = "two
lines, xmin = 9"~
        intervals [3]:
            xmin = 3.25~
            xmax = 6.5~
            text = ""~
    item [3]:
        class = "TextTier"~
        name = "bell"~
        xmin = 0~
        xmax = 6.5~
        points: size = 1~
        points [1]:
            number = 1.5~
            mark = "ding"~
"""
LONG = LONG.replace("~\n", " \n")

# The same TextGrid as Praat's "Save as short text file...".
SHORT = """File type = "ooTextFile"
Object class = "TextGrid"

0
6.5
<exists>
3
"IntervalTier"
"Mary"
0
6.5
4
0
0.42
""
0.42
2.1
"she said ""no"" to José"
2.1
4.05
"<laugh>"
4.05
6.5
""
"IntervalTier"
"John"
0
6.5
3
0
2.0
""
2.0
3.25
"two
lines, xmin = 9"
3.25
6.5
""
"TextTier"
"bell"
0
6.5
1
1.5
"ding"
"""

WANT = [
    ("Mary", 0.42, 2.1, 'she said "no" to José', TurnKind.TURN),
    ("John", 2.0, 3.25, "two\nlines, xmin = 9", TurnKind.TURN),
    ("Mary", 2.1, 4.05, "<laugh>", TurnKind.NONSPEECH),
]


def _turns(a):  # type: ignore[no-untyped-def]
    return [(t.speaker, t.start, t.end, t.text, t.kind) for t in a.turns]


@pytest.mark.parametrize(
    ("text", "encoding", "want_encoding"),
    [
        (LONG, "utf-8", "utf-8"),
        (SHORT, "utf-8", "utf-8"),
        # Praat saves a TextGrid with non-ASCII text as UTF-16 with a BOM
        (LONG, "utf-16", "utf-16"),
        (SHORT, "utf-16", "utf-16"),
        (LONG.replace("\n", "\r\n"), "utf-8", "utf-8"),  # saved on Windows
    ],
)
def test_textgrid_long_and_short_as_praat_writes_them(
    tmp_path: Path, text: str, encoding: str, want_encoding: str
) -> None:
    p = tmp_path / "a.TextGrid"
    data = text.encode("utf-16-be") if encoding == "utf-16" else text.encode(encoding)
    p.write_bytes((b"\xfe\xff" + data) if encoding == "utf-16" else data)
    a = read_textgrid(p)
    want = [(s, a_, b, t.replace("\n", "\r\n") if "\r\n" in text else t, k)
            for s, a_, b, t, k in WANT]  # fmt: skip
    assert _turns(a) == want
    assert a.speakers == ("Mary", "John")
    assert a.extent_s == 6.5 and a.encoding == want_encoding
    assert a.tiers == {"Mary": "Mary", "John": "John"} and a.ignored == ("bell",)


def test_textgrid_speakers_map_and_missing_tier(tmp_path: Path) -> None:
    p = tmp_path / "a.TextGrid"
    p.write_text(LONG, encoding="utf-8")
    a = read_textgrid(p, speakers={"John": "B"})
    assert [(t.speaker, t.start) for t in a.turns] == [("B", 2.0)]
    assert set(a.ignored) == {"Mary", "bell"}
    with pytest.raises(InputError) as e:
        read_textgrid(p, speakers={"Mary": "A", "Sue": "B"})
    assert e.value.reason == "speaker_mismatch" and "'Sue'" in str(e.value)


def test_textgrid_against_praatio(tmp_path: Path) -> None:
    """praatio writes both formats; both readers must agree on every labelled interval."""
    textgrid = pytest.importorskip("praatio.textgrid")
    from praatio.data_classes.interval_tier import IntervalTier

    tg = textgrid.Textgrid()
    a = [(0.25, 1.5, "hello there"), (3.0, 4.125, "ça va, 你好")]
    b = [(1.25, 2.75, "yes"), (4.0, 5.5, "[noise]")]
    tg.addTier(IntervalTier("spk_a", a, 0, 6))
    tg.addTier(IntervalTier("spk_b", b, 0, 6))
    for fmt in ("long_textgrid", "short_textgrid"):
        p = tmp_path / f"{fmt}.TextGrid"
        tg.save(str(p), format=fmt, includeBlankSpaces=True)
        got = read_textgrid(p)
        theirs = textgrid.openTextgrid(str(p), includeEmptyIntervals=False)
        expect = sorted(
            (name, e.start, e.end, e.label)
            for name in theirs.tierNames
            for e in theirs.getTier(name).entries
        )
        assert sorted((t.speaker, t.start, t.end, t.text) for t in got.turns) == expect
        assert [t.kind for t in got.turns if t.text == "[noise]"] == [TurnKind.NONSPEECH]


@pytest.mark.parametrize(
    ("text", "reason", "words"),
    [
        (LONG[: LONG.index("    item [2]:")], "malformed_line", "truncated"),
        (LONG[: LONG.index("    item [2]:") + 40], "malformed_line", "never closed"),
        (SHORT.replace('"she said ""no"" to José"', '"she said'), "malformed_line", "expected"),
        (LONG.replace('Object class = "TextGrid"', 'Object class = "Pitch 1"'), "malformed_line",
         "not a TextGrid"),
        (LONG.replace("xmax = 2.1 ", "xmax = 0.1 ", 1), "bad_timing", "tier 'Mary'"),
        (LONG.replace("xmax = 2.1 ", "xmax = x2.1 ", 1), "malformed_line", "expected"),
        (LONG.replace("xmin = 2.0 \n            xmax = 3.25 ", "xmin = 0.5 \n            xmax = "
                      "3.25 ").replace('name = "John"', 'name = "Mary"'), "duplicate_id", "two"),
        ("ooBinaryFile\x00\x01", "malformed_line", "binary"),
        ('{"start": 0, "end": 1, "tiers": {}}', "malformed_line", "ooTextFile"),
    ],
)  # fmt: skip
def test_textgrid_broken_files_name_file_line_and_cause(
    tmp_path: Path, text: str, reason: str, words: str
) -> None:
    p = tmp_path / "bad.TextGrid"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as e:
        read_textgrid(p)
    assert e.value.reason == reason, str(e.value)
    assert words in str(e.value) and str(p) in str(e.value)


def test_textgrid_same_speaker_overlap_is_refused(tmp_path: Path) -> None:
    # two tiers mapped to one speaker, saying two things over the same second
    p = tmp_path / "a.TextGrid"
    p.write_text(LONG, encoding="utf-8")
    merged = read_textgrid(p, speakers={"Mary": "A", "John": "A"})  # 0.1 s: segmentation slack
    assert merged.fixes.merged == 1 and merged.turns[0].end == 3.25
    p.write_text(LONG.replace("xmin = 2.0 \n", "xmin = 1.0 \n"), encoding="utf-8")
    with pytest.raises(InputError) as e:
        read_textgrid(p, speakers={"Mary": "A", "John": "A"})
    assert e.value.reason == "overlapping_turns"


def test_textgrid_legacy_bytes_are_bad_encoding(tmp_path: Path) -> None:
    p = tmp_path / "a.TextGrid"
    p.write_bytes(LONG.encode("cp1252"))
    with pytest.raises(InputError) as e:
        read_textgrid(p)
    assert e.value.reason == "bad_encoding"
    assert _turns(read_textgrid(p, encodings=["cp1252"], language="en")) == WANT


RTTM = """;; written by pyannote.audio
SPEAKER call_01 1 0.500 1.250 <NA> <NA> spk0 <NA> <NA>
SPEAKER call_01 1 1.600 0.900 <NA> <NA> spk1 <NA> <NA>
SPKR-INFO call_01 1 <NA> <NA> <NA> adult_female spk0 <NA>
NON-LEX call_01 1 2.600 0.400 <NA> laugh spk0 <NA> <NA>
SPEAKER call_02 1 0.000 2.000 <NA> <NA> spk0 <NA> <NA>
SPEAKER call_01 1 3.000 1.000 <NA> <NA> spk0
"""


def test_rttm_speaker_lines(tmp_path: Path) -> None:
    p = tmp_path / "calls.rttm"
    p.write_text(RTTM, encoding="utf-8")
    assert rttm_file_ids(p) == ["call_01", "call_02"]
    a = read_rttm(p, file_id="call_01")
    assert [(t.speaker, t.start, t.end, t.kind) for t in a.turns] == [
        ("spk0", 0.5, 1.75, TurnKind.TURN),
        ("spk1", 1.6, 2.5, TurnKind.TURN),
        ("spk0", 2.6, 3.0, TurnKind.NONSPEECH),
        ("spk0", 3.0, 4.0, TurnKind.TURN),
    ]
    assert a.speakers == ("spk0", "spk1") and a.extent_s == 4.0
    assert a.ignored == ("SPKR-INFO x1",)
    b = read_rttm(p, file_id="call_01", speakers={"spk0": "A", "spk1": "B"})
    assert b.speakers == ("A", "B")
    with pytest.raises(InputError) as e:
        read_rttm(p)
    assert e.value.reason == "malformed_line" and "2 recordings" in str(e.value)
    with pytest.raises(InputError) as e:
        read_rttm(p, file_id="call_01", speakers={"spk0": "A"})
    assert e.value.reason == "speaker_mismatch" and ":3:" in str(e.value)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("SPEAKER c 1 0.5 -1.0 <NA> <NA> s <NA> <NA>", "bad_timing"),
        ("SPEAKER c 1 abc 1.0 <NA> <NA> s <NA> <NA>", "malformed_line"),
        ("SPEAKER c 1 0.5 nan <NA> <NA> s <NA> <NA>", "malformed_line"),
        ("SPEAKER c 1 0.5", "malformed_line"),
        ("SPEAKER c 1 0.5 2 <NA> <NA> s <NA> <NA>\nSPEAKER c 1 1.0 2 <NA> <NA> s <NA> <NA>",
         "overlapping_turns"),
        (";; nothing", "no_turns"),
    ],
)  # fmt: skip
def test_rttm_broken_lines(tmp_path: Path, line: str, reason: str) -> None:
    p = tmp_path / "x.rttm"
    p.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        read_rttm(p)
    assert e.value.reason == reason, str(e.value)


# As ELAN 6 saves a two-speaker transcription: a tier per participant, a dependent translation
# tier (REF_ANNOTATION), one unaligned slot used only by the dependent tier.
EAF = """<?xml version="1.0" encoding="UTF-8"?>
<ANNOTATION_DOCUMENT AUTHOR="" DATE="2024-05-02T10:11:12+01:00" FORMAT="3.0" VERSION="3.0"
    xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
    xsi:noNamespaceSchemaLocation="http://www.mpi.nl/tools/elan/EAFv3.0.xsd">
    <HEADER MEDIA_FILE="" TIME_UNITS="milliseconds">
        <MEDIA_DESCRIPTOR MEDIA_URL="file:///data/rec01.wav" MIME_TYPE="audio/x-wav"
            RELATIVE_MEDIA_URL="./rec01.wav"/>
        <PROPERTY NAME="lastUsedAnnotationId">5</PROPERTY>
    </HEADER>
    <TIME_ORDER>
        <TIME_SLOT TIME_SLOT_ID="ts1" TIME_VALUE="480"/>
        <TIME_SLOT TIME_SLOT_ID="ts2" TIME_VALUE="2150"/>
        <TIME_SLOT TIME_SLOT_ID="ts3" TIME_VALUE="1900"/>
        <TIME_SLOT TIME_SLOT_ID="ts4" TIME_VALUE="3320"/>
        <TIME_SLOT TIME_SLOT_ID="ts5"/>
        <TIME_SLOT TIME_SLOT_ID="ts6" TIME_VALUE="5000"/>
    </TIME_ORDER>
    <TIER LINGUISTIC_TYPE_REF="default-lt" PARTICIPANT="Anna" TIER_ID="A">
        <ANNOTATION>
            <ALIGNABLE_ANNOTATION ANNOTATION_ID="a1" TIME_SLOT_REF1="ts1" TIME_SLOT_REF2="ts2">
                <ANNOTATION_VALUE>Grüß Gott &amp; hallo</ANNOTATION_VALUE>
            </ALIGNABLE_ANNOTATION>
        </ANNOTATION>
    </TIER>
    <TIER LINGUISTIC_TYPE_REF="default-lt" PARTICIPANT="Ben" TIER_ID="B">
        <ANNOTATION>
            <ALIGNABLE_ANNOTATION ANNOTATION_ID="a2" TIME_SLOT_REF1="ts3" TIME_SLOT_REF2="ts4">
                <ANNOTATION_VALUE>mhm</ANNOTATION_VALUE>
            </ALIGNABLE_ANNOTATION>
        </ANNOTATION>
        <ANNOTATION>
            <ALIGNABLE_ANNOTATION ANNOTATION_ID="a3" TIME_SLOT_REF1="ts4" TIME_SLOT_REF2="ts6">
                <ANNOTATION_VALUE></ANNOTATION_VALUE>
            </ALIGNABLE_ANNOTATION>
        </ANNOTATION>
    </TIER>
    <TIER LINGUISTIC_TYPE_REF="translation" PARENT_REF="A" PARTICIPANT="Anna" TIER_ID="A-en">
        <ANNOTATION>
            <REF_ANNOTATION ANNOTATION_ID="a4" ANNOTATION_REF="a1">
                <ANNOTATION_VALUE>hello &amp; hello</ANNOTATION_VALUE>
            </REF_ANNOTATION>
        </ANNOTATION>
    </TIER>
    <LINGUISTIC_TYPE GRAPHIC_REFERENCES="false" LINGUISTIC_TYPE_ID="default-lt"
        TIME_ALIGNABLE="true"/>
    <LINGUISTIC_TYPE CONSTRAINTS="Symbolic_Association" LINGUISTIC_TYPE_ID="translation"
        TIME_ALIGNABLE="false"/>
    <CONSTRAINT DESCRIPTION="1-1 association with a parent annotation"
        STEREOTYPE="Symbolic_Association"/>
</ANNOTATION_DOCUMENT>
"""


def test_eaf_tiers_per_speaker(tmp_path: Path) -> None:
    p = tmp_path / "rec01.eaf"
    p.write_text(EAF, encoding="utf-8")
    a = read_eaf(p)
    assert [(t.speaker, t.start, t.end, t.text) for t in a.turns] == [
        ("Anna", 0.48, 2.15, "Grüß Gott & hallo"),
        ("Ben", 1.9, 3.32, "mhm"),
    ]
    assert a.tiers == {"A": "Anna", "B": "Ben"} and a.ignored == ("A-en",)
    assert a.extent_s == 5.0
    b = read_eaf(p, speakers={"A": "left", "B": "right"})
    assert b.speakers == ("left", "right")
    # saved as UTF-16 (the XML declaration says so): expat decodes it
    p16 = tmp_path / "rec16.eaf"
    p16.write_bytes(EAF.replace('encoding="UTF-8"', 'encoding="UTF-16"').encode("utf-16"))
    assert _turns(read_eaf(p16)) == _turns(a)


@pytest.mark.parametrize(
    ("edit", "reason", "words"),
    [
        (('TIME_SLOT_REF2="ts2"', 'TIME_SLOT_REF2="ts5"'), "bad_timing", "unaligned"),
        (('TIME_SLOT_REF2="ts2"', 'TIME_SLOT_REF2="ts9"'), "malformed_line", "ts9"),
        (('TIME_VALUE="2150"', 'TIME_VALUE="200"'), "bad_timing", "annotation a1"),
        (("</ANNOTATION_DOCUMENT>", ""), "malformed_line", "XML"),
        (('TIER_ID="B"', 'TIER_ID="A"'), "duplicate_id", "'A'"),
        (('<?xml version="1.0" encoding="UTF-8"?>',
          '<?xml version="1.0"?>\n<!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;">]>'),
         "malformed_line", "document type"),
        (('<?xml version="1.0" encoding="UTF-8"?>',
          '<?xml version="1.0"?>\n<!DOCTYPE d SYSTEM "file:///etc/passwd">'),
         "malformed_line", "document type"),
    ],
)  # fmt: skip
def test_eaf_broken_files(tmp_path: Path, edit: tuple[str, str], reason: str, words: str) -> None:
    p = tmp_path / "bad.eaf"
    p.write_text(EAF.replace(*edit), encoding="utf-8")
    with pytest.raises(InputError) as e:
        read_eaf(p)
    assert e.value.reason == reason, str(e.value)
    assert words in str(e.value)


def test_check_audio_uses_the_projects_timing_rule(tmp_path: Path) -> None:
    p = tmp_path / "a.TextGrid"
    p.write_text(LONG, encoding="utf-8")
    a = read_textgrid(p)
    a.check_audio(4.0, tmp_path / "a.wav")  # 4.05 <= 4.0 + 0.5 slack
    with pytest.raises(InputError) as e:
        a.check_audio(3.0, tmp_path / "a.wav")
    assert e.value.reason == "bad_timing" and "a.wav" in str(e.value)
    prov = a.provenance()
    assert prov["text_encoding"] == "utf-8" and prov["ignored_tiers"] == ["bell"]


@settings(max_examples=150, deadline=None)
@given(
    which=st.sampled_from(["long", "short", "eaf", "rttm"]),
    cut=st.floats(0, 1),
    junk=st.binary(max_size=8),
)
def test_cut_or_corrupted_files_only_ever_raise_input_error(
    tmp_path_factory: pytest.TempPathFactory, which: str, cut: float, junk: bytes
) -> None:
    text = {"long": LONG, "short": SHORT, "eaf": EAF, "rttm": RTTM}[which].encode()
    at = int(len(text) * cut)
    p = tmp_path_factory.mktemp("cut") / "f"
    p.write_bytes(text[:at] + junk + text[at + len(junk) :])
    read = {"long": read_textgrid, "short": read_textgrid, "eaf": read_eaf}.get(which)
    try:
        if read is None:
            read_rttm(p, file_id="call_01")
        else:
            read(p)
    except InputError:
        pass
