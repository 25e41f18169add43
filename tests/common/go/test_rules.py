"""Rules as data: presets, KataGo's JSON and compact strings, refusals."""

import json

import pytest

from common.go.rules import Rules, RulesError, UnsupportedRulesError, check_komi, default_komi


@pytest.mark.parametrize(
    "name,ko,suicide,whb,button,tax,komi",
    [
        ("tromp-taylor", "POSITIONAL", True, "0", False, "NONE", 7.5),
        ("chinese", "SIMPLE", False, "N", False, "NONE", 7.5),
        ("chinese-ogs", "POSITIONAL", False, "N", False, "NONE", 7.5),
        ("chinese-kgs", "POSITIONAL", False, "N", False, "NONE", 7.5),
        ("aga", "SITUATIONAL", False, "N-1", False, "NONE", 7.5),
        ("aga-button", "SITUATIONAL", False, "N-1", True, "NONE", 7.0),
        ("new-zealand", "SITUATIONAL", True, "0", False, "NONE", 7.5),
        ("NZ", "SITUATIONAL", True, "0", False, "NONE", 7.5),
        ("New Zealand", "SITUATIONAL", True, "0", False, "NONE", 7.5),
        ("stone-scoring", "SIMPLE", False, "0", False, "ALL", 7.5),
        ("Chinese", "SIMPLE", False, "N", False, "NONE", 7.5),
        ("GOE", "POSITIONAL", True, "0", False, "NONE", 7.5),
    ],
)
def test_area_presets(name, ko, suicide, whb, button, tax, komi):
    rules, k = Rules.parse(name)
    assert (rules.ko, rules.suicide, rules.white_handicap_bonus, rules.has_button, rules.tax) == (
        ko,
        suicide,
        whb,
        button,
        tax,
    )
    assert rules.scoring == "AREA"
    assert k == komi
    rules.check_playable()


@pytest.mark.parametrize("name", ["japanese", "korean", "Japanese", "ancient-territory"])
def test_territory_presets_parse_and_are_played(name):
    rules, komi = Rules.parse(name)
    assert rules.scoring == "TERRITORY" and komi == 6.5
    rules.check_playable()


def test_json_round_trip_in_katagos_form():
    text = (
        '{"friendlyPassOk":false,"hasButton":false,"ko":"POSITIONAL","scoring":"AREA",'
        '"suicide":true,"tax":"NONE","whiteHandicapBonus":"0"}'
    )
    rules, komi = Rules.parse(text)
    assert rules == Rules() and komi is None
    assert rules.to_json() == text
    r2, k2 = Rules.parse('{"ko":"SIMPLE","scoring":"AREA","suicide":false,"komi":6.5}')
    assert r2.ko == "SIMPLE" and not r2.suicide and k2 == 6.5 and r2.tax == "NONE"
    assert json.loads(r2.to_json(komi=6.5))["komi"] == 6.5
    # Territory without a tax defaults to SEKI, as KataGo does.
    assert Rules.parse('{"scoring":"TERRITORY"}')[0].tax == "SEKI"


def test_compact_strings_round_trip():
    for rules in (
        Rules(),
        Rules(ko="SIMPLE", suicide=False, has_button=True, white_handicap_bonus="N-1"),
        Rules(tax="ALL", friendly_pass_ok=True),
        Rules(scoring="TERRITORY", tax="SEKI"),
    ):
        assert Rules.from_text(rules.to_compact()) == rules
        assert Rules.from_text(rules.to_json()) == rules
    assert Rules().to_compact() == "koPOSITIONALscoreAREAtaxNONEsui1"
    rules, komi = Rules.parse("koSITUATIONALscoreAREAtaxNONEsui0whbN-1komi7.5")
    assert rules.white_handicap_bonus == "N-1" and komi == 7.5
    assert Rules.from_text("koSIMPLEscoreAREAtaxSEKIsui1button1").has_button


def test_names_of_presets():
    assert Rules.from_text("chinese").name() == "Chinese"
    assert Rules.from_text("tromp-taylor").name() == "TrompTaylor"
    assert Rules(ko="SIMPLE").name() == "koSIMPLEscoreAREAtaxNONEsui1"


@pytest.mark.parametrize(
    "text,message",
    [
        ("", "empty"),
        ("fischer", "unknown rules 'fischer'"),
        ('{"ko":"SUPER"}', "invalid ko rule 'SUPER'"),
        ('{"ko":"SIMPLE",}', "invalid rules JSON at character"),
        ('{"colour":"red"}', "unknown rules option 'colour'"),
        ('{"suicide":"yes"}', "must be true or false"),
        ("koBADscoreAREA", "bad value after 'ko'"),
        ('{"komi":7.3}', "not a multiple of 0.5"),
        ("[1,2]", "unknown rules"),
    ],
)
def test_bad_rules_text_is_named(text, message):
    with pytest.raises(RulesError, match=message):
        Rules.parse(text)


def test_with_rule_and_errors():
    r = Rules().with_rule("ko", "simple").with_rule("suicide", "false").with_rule("hasButton", "true")
    assert (r.ko, r.suicide, r.has_button) == ("SIMPLE", False, True)
    with pytest.raises(RulesError, match="unknown rules option"):
        r.with_rule("colour", "red")
    with pytest.raises(RulesError, match="expected true or false"):
        r.with_rule("suicide", "maybe")


def test_spight_ko_is_refused():
    with pytest.raises(UnsupportedRulesError, match="SPIGHT"):
        Rules(ko="SPIGHT").check_playable()


def test_komi_checks_and_defaults():
    assert check_komi(-3.5) == -3.5
    for bad in (7.25, float("nan"), 1000, 1e308, -1e300):  # the huge ones named, not overflowing
        with pytest.raises(RulesError):
            check_komi(bad)
    assert default_komi(Rules()) == 7.5
    assert default_komi(Rules(has_button=True)) == 7.0
    assert default_komi(Rules(scoring="TERRITORY", tax="SEKI")) == 6.5
