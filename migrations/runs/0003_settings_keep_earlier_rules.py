"""Stored settings documents keep the games they described.

Self-play and rating games now draw territory scoring, simple ko, taxes, the button and (self-play)
rectangular boards by default. A document stored before says nothing of the new keys, and a missing
key means its default, so without this its run would start playing other rules under the same
settings version. Every stored document gets the values the earlier defaults played: area scoring
only, no rectangles, and the earlier rules lists wherever a document left them out.
"""

from django.db import migrations

# What the version-1 defaults of common.settings.RulesChoice drew.
EARLIER_RULES = {
    "ko": ["POSITIONAL", "SITUATIONAL"],
    "scoring": ["AREA"],
    "suicide": [False, True],
    "tax": ["NONE"],
    "button": [False],
    "white_handicap_bonus": ["0"],
}
NEW_KEYS = {"selfplay": ("rectangle_prob", 0.0)}


def _keep(document: dict) -> dict:
    document = dict(document)
    for part in ("selfplay", "rating"):
        section = dict(document.get(part) or {})
        rules = dict(section.get("rules") or {})
        for key, value in EARLIER_RULES.items():
            rules.setdefault(key, list(value))
        section["rules"] = rules
        if part in NEW_KEYS:
            key, value = NEW_KEYS[part]
            section.setdefault(key, value)
        document[part] = section
    return document


def _drop(document: dict, name: str) -> dict:
    document = dict(document)
    for part in ("selfplay", "rating"):
        section = dict(document.get(part) or {})
        rules = dict(section.get("rules") or {})
        if rules.get("scoring", ["AREA"]) != ["AREA"]:
            raise RuntimeError(f"{name} plays {rules['scoring']} scoring, which the earlier settings cannot say")
        rules.pop("scoring", None)
        section["rules"] = rules
        if part in NEW_KEYS:
            key, _ = NEW_KEYS[part]
            if section.get(key, 0.0) != 0.0:
                raise RuntimeError(f"{name} draws rectangular boards, which the earlier settings cannot say")
            section.pop(key, None)
        document[part] = section
    return document


def keep_earlier_rules(apps, schema_editor):
    Version = apps.get_model("runs", "RunSettingsVersion")
    for version in Version.objects.all().iterator():
        version.document = _keep(version.document or {})
        version.save(update_fields=["document"])


def drop_new_keys(apps, schema_editor):
    Version = apps.get_model("runs", "RunSettingsVersion")
    for version in Version.objects.select_related("run").iterator():
        version.document = _drop(version.document or {}, f"run {version.run.name} settings v{version.version}")
        version.save(update_fields=["document"])


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0002_client_versions_and_builds"),
    ]

    operations = [migrations.RunPython(keep_earlier_rules, drop_new_keys, elidable=False)]
