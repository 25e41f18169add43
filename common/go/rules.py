"""Rules as data: KataGo's rules JSON, its preset names and its compact rules strings.

``Rules.parse`` accepts what users and other programs write: a preset name ("tromp-taylor",
"chinese", "japanese", "aga", "nz", ...; also the names SGF files carry in RU, such as
"Chinese" or "New Zealand"), a JSON object (``{"ko":"POSITIONAL","scoring":"AREA",...}``) or
KataGo's compact string (``koPOSITIONALscoreAREAtaxNONEsui1``). Rules print back as JSON or as
the compact string.

Every rule KataGo plays is played here, territory scoring through KataGo's encore phases
(``common.go.gamestate``), except the SPIGHT ko rule: ``check_playable`` refuses it with
``UnsupportedRulesError``, and every player of games calls it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace

from common import boundedjson

KO_RULES = ("SIMPLE", "POSITIONAL", "SITUATIONAL", "SPIGHT")
SCORING_RULES = ("AREA", "TERRITORY")
TAX_RULES = ("NONE", "SEKI", "ALL")
HANDICAP_BONUS_RULES = ("0", "N", "N-1")
MAX_ABS_KOMI = 150.0


class RulesError(ValueError):
    """Rules text that cannot be understood."""


class UnsupportedRulesError(RulesError):
    """Rules that are understood but that this engine does not play."""


@dataclass(frozen=True)
class Rules:
    ko: str = "POSITIONAL"
    scoring: str = "AREA"
    tax: str = "NONE"
    suicide: bool = True  # multi-stone suicide legal; single-stone suicide never is
    has_button: bool = False
    white_handicap_bonus: str = "0"
    friendly_pass_ok: bool = False

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("ko", self.ko, KO_RULES),
            ("scoring", self.scoring, SCORING_RULES),
            ("tax", self.tax, TAX_RULES),
            ("whiteHandicapBonus", self.white_handicap_bonus, HANDICAP_BONUS_RULES),
        ):
            if value not in allowed:
                raise RulesError(f"invalid {name} rule {value!r}: expected one of {', '.join(allowed)}")

    # --- parsing ---------------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> tuple[Rules, float | None]:
        """Rules and the komi the text names (None when it names none).

        Presets carry KataGo's default komi for them; JSON and compact strings carry komi only
        when they say it.
        """
        s = text.strip()
        if not s:
            raise RulesError("empty rules text")
        preset = _PRESETS.get(_preset_key(s))
        if preset is not None:
            return preset
        if s.startswith("{"):
            return _parse_json(s)
        return _parse_compact(s)

    @classmethod
    def from_text(cls, text: str) -> Rules:
        return cls.parse(text)[0]

    def with_rule(self, key: str, value: str) -> Rules:
        """Change one rule by its JSON key, as GTP's kata-set-rule does."""
        v = value.strip()
        k = key.strip()
        if k == "ko":
            return replace(self, ko=v.upper())
        if k in ("scoring", "score"):
            return replace(self, scoring=v.upper())
        if k == "tax":
            return replace(self, tax=v.upper())
        if k == "suicide":
            return replace(self, suicide=_parse_bool(k, v))
        if k == "hasButton":
            return replace(self, has_button=_parse_bool(k, v))
        if k == "whiteHandicapBonus":
            return replace(self, white_handicap_bonus=v.upper())
        if k == "friendlyPassOk":
            return replace(self, friendly_pass_ok=_parse_bool(k, v))
        raise RulesError(f"unknown rules option {key!r}")

    # --- printing --------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "friendlyPassOk": self.friendly_pass_ok,
            "hasButton": self.has_button,
            "ko": self.ko,
            "scoring": self.scoring,
            "suicide": self.suicide,
            "tax": self.tax,
            "whiteHandicapBonus": self.white_handicap_bonus,
        }

    def to_json(self, komi: float | None = None) -> str:
        """KataGo's JSON form: keys sorted, no spaces; komi only when given."""
        d = self.to_dict()
        if komi is not None:
            d["komi"] = komi
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    def to_compact(self) -> str:
        """KataGo's compact form, e.g. koPOSITIONALscoreAREAtaxNONEsui1 (as written in SGF RU)."""
        s = f"ko{self.ko}score{self.scoring}tax{self.tax}sui{int(self.suicide)}"
        if self.has_button:
            s += "button1"
        if self.white_handicap_bonus != "0":
            s += f"whb{self.white_handicap_bonus}"
        if self.friendly_pass_ok:
            s += "fpok1"
        return s

    def name(self) -> str:
        """A preset's display name when the rules equal one, else the compact form."""
        for display, rules in _NICE_NAMES:
            if rules == self:
                return display
        return self.to_compact()

    # --- what this engine plays ------------------------------------------------------------------
    def unsupported_reason(self) -> str | None:
        if self.ko == "SPIGHT":
            return "the SPIGHT ko rule is not yet supported; use SIMPLE, POSITIONAL or SITUATIONAL"
        return None

    def check_playable(self) -> None:
        reason = self.unsupported_reason()
        if reason:
            raise UnsupportedRulesError(reason)


def round_komi(komi: float) -> float:
    """The nearest multiple of 0.5 within the allowed range."""
    return max(-MAX_ABS_KOMI, min(MAX_ABS_KOMI, round(2.0 * komi) / 2.0))


def check_komi(komi: float, source: str = "komi") -> float:
    if not isinstance(komi, (int, float)) or isinstance(komi, bool) or not math.isfinite(komi):
        raise RulesError(f"{source} {komi!r} is not a number")
    if abs(komi) > MAX_ABS_KOMI:  # first: a huge float has no int() to compare with
        raise RulesError(f"{source} {komi} is beyond the allowed range ±{MAX_ABS_KOMI:g}")
    if komi * 2 != int(komi * 2):
        raise RulesError(f"{source} {komi} is not a multiple of 0.5")
    return float(komi)


def _parse_bool(key: str, value: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise RulesError(f"invalid value {value!r} for {key}: expected true or false")


def _preset_key(s: str) -> str:
    return re.sub(r"[\s_\-]", "", s.lower())


def _preset(komi: float, **kw) -> tuple[Rules, float]:
    return Rules(**kw), komi


_TERRITORY = dict(ko="SIMPLE", scoring="TERRITORY", tax="SEKI", suicide=False)
_CHINESE = dict(ko="SIMPLE", scoring="AREA", tax="NONE", suicide=False, white_handicap_bonus="N", friendly_pass_ok=True)
_CHINESE_OGS = dict(_CHINESE, ko="POSITIONAL")
_STONE = dict(ko="SIMPLE", scoring="AREA", tax="ALL", suicide=False, friendly_pass_ok=True)
_AGA = dict(
    ko="SITUATIONAL", scoring="AREA", tax="NONE", suicide=False, white_handicap_bonus="N-1", friendly_pass_ok=True
)
_NZ = dict(ko="SITUATIONAL", scoring="AREA", tax="NONE", suicide=True, friendly_pass_ok=True)
_TT = dict(ko="POSITIONAL", scoring="AREA", tax="NONE", suicide=True)
_GOE = dict(_TT, friendly_pass_ok=True)

_PRESETS: dict[str, tuple[Rules, float]] = {}
for _names, _komi, _kw in (
    (("japanese", "korean"), 6.5, _TERRITORY),
    (("chinese",), 7.5, _CHINESE),
    (("chineseogs", "chinesekgs"), 7.5, _CHINESE_OGS),
    (("stonescoring", "ancientarea"), 7.5, _STONE),
    (("ancientterritory",), 6.5, dict(_TERRITORY, tax="ALL")),
    (("agabutton",), 7.0, dict(_AGA, has_button=True)),
    (("aga", "bga", "french"), 7.5, _AGA),
    (("nz", "newzealand"), 7.5, _NZ),
    (("tromptaylor",), 7.5, _TT),
    (("goe", "ing"), 7.5, _GOE),
):
    for _n in _names:
        _PRESETS[_n] = _preset(_komi, **_kw)

_NICE_NAMES = [
    ("TrompTaylor", _PRESETS["tromptaylor"][0]),
    ("Japanese", _PRESETS["japanese"][0]),
    ("Chinese", _PRESETS["chinese"][0]),
    ("Chinese-OGS", _PRESETS["chineseogs"][0]),
    ("AGA", _PRESETS["aga"][0]),
    ("StoneScoring", _PRESETS["stonescoring"][0]),
    ("NewZealand", _PRESETS["nz"][0]),
]

_JSON_KEYS = {
    "ko": "ko",
    "score": "scoring",
    "scoring": "scoring",
    "tax": "tax",
    "suicide": "suicide",
    "hasButton": "has_button",
    "whiteHandicapBonus": "white_handicap_bonus",
    "friendlyPassOk": "friendly_pass_ok",
}


def default_komi(rules: Rules) -> float:
    """KataGo's default komi for rules given without one."""
    if rules.scoring == "TERRITORY":
        return 6.5
    return 7.0 if rules.has_button else 7.5


def _finish(fields: dict, tax_given: bool) -> Rules:
    if not tax_given:
        fields["tax"] = "SEKI" if fields.get("scoring") == "TERRITORY" else "NONE"
    return Rules(**fields)


def _parse_json(s: str) -> tuple[Rules, float | None]:
    try:
        obj = boundedjson.loads(s)
    except boundedjson.JSONError as e:
        raise RulesError(f"invalid rules JSON at character {e.pos + 1}: {e.msg}") from None
    if not isinstance(obj, dict):
        raise RulesError("rules JSON must be an object")
    fields: dict = {}
    komi = None
    for key, value in obj.items():
        if key == "komi":
            komi = check_komi(value, "rules komi")
            continue
        attr = _JSON_KEYS.get(key)
        if attr is None:
            raise RulesError(f"unknown rules option {key!r}")
        if attr in ("suicide", "has_button", "friendly_pass_ok"):
            if not isinstance(value, bool):
                raise RulesError(f"rules option {key!r} must be true or false, not {value!r}")
        elif not isinstance(value, str):
            raise RulesError(f"rules option {key!r} must be a string, not {value!r}")
        else:
            value = value.upper()
        fields[attr] = value
    rules = _finish(fields, "tax" in fields)
    return rules, komi


_COMPACT = [
    ("komi", None),
    ("ko", ("SIMPLE", "POSITIONAL", "SITUATIONAL", "SPIGHT")),
    ("scoring", ("AREA", "TERRITORY")),
    ("score", ("AREA", "TERRITORY")),
    ("tax", ("NONE", "SEKI", "ALL")),
    ("sui", ("1", "0")),
    ("button", ("1", "0")),
    ("whb", ("0", "N-1", "N")),
    ("fpok", ("1", "0")),
]
_COMPACT_ATTR = {
    "ko": "ko",
    "scoring": "scoring",
    "score": "scoring",
    "tax": "tax",
    "sui": "suicide",
    "button": "has_button",
    "whb": "white_handicap_bonus",
    "fpok": "friendly_pass_ok",
}


def _parse_compact(s: str) -> tuple[Rules, float | None]:
    fields: dict = {}
    komi = None
    rest = s
    while rest:
        rest = rest.strip()
        if not rest:
            break
        for prefix, values in _COMPACT:
            if not rest.startswith(prefix):
                continue
            rest = rest[len(prefix) :].strip()
            if values is None:
                m = re.match(r"[-+0-9.eE]+", rest)
                if not m:
                    raise RulesError(f"unknown rules {s!r}: komi needs a number")
                try:
                    komi = check_komi(float(m.group(0)), "rules komi")
                except ValueError as e:
                    raise RulesError(f"unknown rules {s!r}: {e}") from None
                rest = rest[m.end() :]
            else:
                value = next((v for v in values if rest.startswith(v)), None)
                if value is None:
                    raise RulesError(f"unknown rules {s!r}: bad value after {prefix!r}")
                rest = rest[len(value) :]
                attr = _COMPACT_ATTR[prefix]
                if attr in ("suicide", "has_button", "friendly_pass_ok"):
                    fields[attr] = value == "1"
                else:
                    fields[attr] = value
            break
        else:
            raise RulesError(
                f"unknown rules {s!r}: expected a preset name (tromp-taylor, chinese, chinese-ogs, "
                "chinese-kgs, aga, new-zealand, stone-scoring, japanese, korean), "
                "a JSON object or a string like koPOSITIONALscoreAREAtaxNONEsui1"
            )
    return _finish(fields, "tax" in fields), komi
