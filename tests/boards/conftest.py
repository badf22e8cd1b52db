from types import SimpleNamespace

import pytest

from tests.boards.factories import make_graded_run
from tests.factories import make_hardware, make_harness, make_language_model, make_problem


@pytest.fixture
def arena(db) -> SimpleNamespace:
    """Two active problems, a retired one, two models of two providers, two harnesses, a
    ranked H100 and an unranked A100."""
    return SimpleNamespace(
        softmax=make_problem("softmax"),
        gemm=make_problem("gemm", category="cuda-to-cuda", regime="compute"),
        retired=make_problem("retired", is_active=False),
        gpt=make_language_model("gpt-5", display_name="GPT-5", provider="OpenAI"),
        claude=make_language_model("claude-opus-4-5", display_name="Claude Opus 4.5"),
        codex=make_harness("codex-cli", name="Codex CLI", version=""),
        claude_code=make_harness("claude-code", name="Claude Code", version=""),
        h100=make_hardware("h100-sxm", name="NVIDIA H100 SXM"),
        a100=make_hardware("a100", name="NVIDIA A100", is_ranked=False),
    )


@pytest.fixture
def grade(arena):
    """A graded run: GPT-5 in Codex CLI on softmax on the H100 unless told otherwise."""

    def make(*, problem="softmax", model="gpt", harness="codex", hardware="h100", **fields):
        return make_graded_run(
            problem=getattr(arena, problem),
            model=getattr(arena, model),
            harness=getattr(arena, harness),
            hardware=getattr(arena, hardware),
            **fields,
        )

    return make
