"""manage.py sync_problems registers the problem folders of ARENA_EXTRA_PROBLEMS (an imported
KernelBench level here) next to the built-in deck."""

import textwrap

import pytest
from django.core.management import call_command

from runners.kernelbench import import_level
from submissions.models import Problem

pytestmark = pytest.mark.django_db

LEVEL_FILE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(x)

batch_size = 64
dim = 4096

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return []
"""


def test_sync_registers_imported_problems_from_the_extra_path(tmp_path, monkeypatch):
    level = tmp_path / "KernelBench" / "level1"
    level.mkdir(parents=True)
    (level / "22_Tanh.py").write_text(textwrap.dedent(LEVEL_FILE).lstrip())
    import_level(tmp_path, 1, tmp_path / "deck")
    monkeypatch.setenv("ARENA_EXTRA_PROBLEMS", str(tmp_path / "deck"))

    call_command("sync_problems")

    imported = Problem.objects.get(slug="kb-l1-22-tanh")
    assert imported.is_active and imported.regime == "speedup"
    assert imported.category == Problem.Category.PYTORCH_TO_KERNEL
    assert (imported.visible_count, imported.hidden_count) == (1, 5)
    assert Problem.objects.filter(slug="softmax", is_active=True).exists()
