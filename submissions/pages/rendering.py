"""Text that pages show as HTML: the problem statement (markdown, sanitized) and the solution
(highlighted). Both are rendered on the server; the browser runs no script for them."""

from django.core.cache import cache
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from submissions.models import Solution
from transcripts.markdown import render_markdown

# static/pygments.css is this formatter's get_style_defs(".highlight")
# lineanchors: line N is #L-N, the target of an annotation's line-range evidence
FORMATTER = HtmlFormatter(cssclass="highlight", linenos="table", wrapcode=True, lineanchors="L")


def statement_html(statement: str) -> str:
    """PROMPT.md as agents saw it: markdown-it with raw HTML off, then bleach's allowlist."""
    return render_markdown(statement)


def solution_html(solution: Solution) -> str:
    """The highlighted solution; a solution's content never changes, so its HTML is cached by
    its hash and the file is read once."""
    key = f"solution-html:2:{solution.sha256}"
    html = cache.get(key)
    if html is None:
        html = highlight(solution.code, PythonLexer(), FORMATTER)
        cache.set(key, html, timeout=None)
    return html
