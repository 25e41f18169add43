"""Markdown written by staff (release notes) as safe HTML: CommonMark and tables by markdown-it-py,
raw HTML shown as text, no images (the site loads nothing from other sites), and only relative,
http, https and mailto links (markdown-it's own check already refuses javascript:, vbscript:,
file: and most data: addresses); links get rel="nofollow noopener"."""

from __future__ import annotations

from functools import cache

from markdown_it import MarkdownIt

SAFE_SCHEMES = ("http:", "https:", "mailto:")


@cache
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "typographer": False}).enable("table").disable("image")
    plain = md.validateLink

    def validate(url: str) -> bool:
        scheme = url.split("/", 1)[0].lower()
        relative = ":" not in scheme  # "/releases/", "#notes", "notes.html"
        return plain(url) and (relative or scheme.startswith(SAFE_SCHEMES))

    md.validateLink = validate  # type: ignore[method-assign]
    md.add_render_rule("link_open", _link_open)
    return md


def _link_open(self, tokens, idx, options, env):
    tokens[idx].attrSet("rel", "nofollow noopener")
    return self.renderToken(tokens, idx, options, env)


def to_html(text: str) -> str:
    """``text`` (Markdown) as HTML that is safe to put in a page as it is."""
    return _parser().render(text or "")
