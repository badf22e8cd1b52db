"""Assistant prose to safe HTML: markdown-it-py with raw HTML off, then a bleach allowlist."""

from __future__ import annotations

from bleach.sanitizer import Cleaner
from markdown_it import MarkdownIt

_TAGS = frozenset(
    {
        "p", "br", "hr", "pre", "code", "em", "strong", "del", "s", "blockquote",
        "ul", "ol", "li", "a", "h1", "h2", "h3", "h4", "h5", "h6",
        "table", "thead", "tbody", "tr", "th", "td",
    }
)  # fmt: skip
_ATTRIBUTES = {"a": ["href", "title"], "ol": ["start"], "th": ["align"], "td": ["align"]}
_PROTOCOLS = frozenset({"http", "https", "mailto"})

_parser = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
_parser.enable(["table", "strikethrough"])
_cleaner = Cleaner(tags=_TAGS, attributes=_ATTRIBUTES, protocols=_PROTOCOLS, strip=True)


def render_markdown(text: str) -> str:
    return _cleaner.clean(_parser.render(text))
