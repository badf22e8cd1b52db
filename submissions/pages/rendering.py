"""Text that pages show as HTML: the problem statement (markdown, sanitized) and the solution
with its native sources (highlighted). All are rendered on the server; the browser runs no
script for them."""

from collections.abc import Callable

from django.core.cache import cache
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import CppLexer, CudaLexer, PythonLexer

from submissions.models import Solution
from submissions.models.runs import Sidecar
from transcripts.markdown import render_markdown

# static/pygments.css is this formatter's get_style_defs(".highlight")
# lineanchors: line N is #L-N, the target of an annotation's line-range evidence
FORMATTER = HtmlFormatter(cssclass="highlight", linenos="table", wrapcode=True, lineanchors="L")


def statement_html(statement: str) -> str:
    """PROMPT.md as agents saw it: markdown-it with raw HTML off, then bleach's allowlist."""
    return render_markdown(statement)


def solution_html(solution: Solution) -> str:
    """The highlighted solution.py."""
    key = f"solution-html:2:{solution.sha256}"
    return _highlighted(key, lambda: solution.code, PythonLexer(), FORMATTER)


def sidecar_html(sidecar: Sidecar) -> str:
    """A native source beside solution.py, highlighted the same way; its line N is
    #<name>-L-N (names are plain: runners.solution_files)."""
    lexer = CudaLexer() if sidecar.name.endswith((".cu", ".cuh")) else CppLexer()
    formatter = HtmlFormatter(
        cssclass="highlight", linenos="table", wrapcode=True, lineanchors=f"{sidecar.name}-L"
    )
    key = f"sidecar-html:1:{sidecar.sha256}:{sidecar.name}"
    return _highlighted(key, lambda: sidecar.code, lexer, formatter)


def _highlighted(key: str, read: Callable[[], str], lexer: Lexer, formatter: HtmlFormatter) -> str:
    """A file's content never changes, so its HTML is cached by its hash and it is read once."""
    html = cache.get(key)
    if html is None:
        html = highlight(read(), lexer, formatter)
        cache.set(key, html, timeout=None)
    return html
