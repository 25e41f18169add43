"""Template filters of the site: numbers, sizes, Elo, rules, public file addresses, and links that keep a
page's filters."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django import template
from django.utils.html import format_html

from common.elo import Z95
from common.go.rules import Rules, RulesError

register = template.Library()


@register.filter
def markdown(value) -> str:
    """Markdown as safe HTML (server.dashboard.markdown)."""
    from django.utils.safestring import mark_safe

    from server.dashboard.markdown import to_html

    return mark_safe(to_html(str(value or "")))


@register.filter
def public_url(file) -> str:
    """A stored file's address at the public download base (``SENTE_FILES_PUBLIC_URL``), or "" when
    there is none (or no file)."""
    from server.files import public_url as address

    return address(getattr(file, "name", "") or "") or ""


@register.filter
def shard_filename(export, shard) -> str:
    """The download name of one of an npz archive's shards."""
    return export.shard_filename(shard)


@register.filter
def num(value) -> str:
    """1234567 -> 1,234,567 (None -> an en dash)."""
    if value is None or value == "":
        return "–"
    try:
        if isinstance(value, float) and not value.is_integer():
            return f"{value:,.2f}"
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def short(value) -> str:
    """A big number in a few characters: 12.3 M, 45.6 k."""
    if value is None:
        return "–"
    value = float(value)
    for limit, suffix in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if abs(value) >= limit:
            return f"{value / limit:.1f}{suffix}"
    return f"{value:.0f}"


@register.filter
def filesize(value) -> str:
    """Bytes in B, kB, MB or GB (powers of 1000)."""
    if not value:
        return "–"
    size = float(value)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


@register.simple_tag
def elo(rating) -> str:
    """'1234 ± 56' (the ± is 1.96 standard errors, a 95% interval), or a dash without a rating."""
    value = getattr(rating, "elo", None)
    if value is None:
        return "–"
    se = getattr(rating, "elo_se", None)
    if se is None:
        return f"{value:.0f}"
    return f"{value:.0f} ± {Z95 * se:.0f}"


@register.filter
def percent(value, total) -> str:
    try:
        return f"{100 * value / total:.1f}%" if total else "–"
    except (TypeError, ValueError):
        return "–"


@register.filter
def rules_name(value) -> str:
    """KataGo's rules JSON (a dict) as a preset name or its compact form."""
    rules = to_rules(value)
    return rules.name() if rules else "–"


def to_rules(value) -> Rules | None:
    if isinstance(value, Rules):
        return value
    if not value:
        return None
    try:
        return Rules.from_text(json.dumps(value) if isinstance(value, dict) else str(value))
    except RulesError:
        return None


@register.filter
def loss(value) -> str:
    try:
        return f"{float(value):.4g}"
    except (TypeError, ValueError):
        return str(value)


@register.simple_tag(takes_context=True)
def query(context, **changes) -> str:
    """The current page's query string with some parameters changed (None removes one)."""
    params = context["request"].GET.copy()
    for key, value in changes.items():
        if value is None or value == "":
            params.pop(key, None)
        else:
            params[key] = value
    encoded = urlencode(sorted(params.items()))
    return f"?{encoded}" if encoded else "?"


@register.simple_tag
def state_badge(network) -> str:
    """The network's state, and "released" beside it when it is (a released network may be retired
    or rolled back later: both are shown)."""
    badge = format_html('<span class="badge badge-{}">{}</span>', network.state, network.state)
    if network.released:
        badge += format_html(' <span class="badge badge-released">{}</span>', "released")
    return badge
