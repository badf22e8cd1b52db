"""What the launcher's tests share: the CLIs `make agents` installs, the provider variables a
user's shell would hold, and the solutions a script writes."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv" / "npm" / "node_modules" / ".bin"
HONEST = (ROOT / "tests" / "runners" / "solutions" / "row_sum" / "honest.py").read_text()
BROKEN = HONEST.replace("tl.sum(partial, axis=0)", "tl.max(partial, axis=0)")
CHECK = f"{sys.executable} check.py --device cpu"


def installed_cli(name: str, variable: str) -> str:
    """The CLI's executable: $variable, else the one `make agents` installed; a missing one
    fails the test (CI installs it)."""
    path = os.environ.get(variable, str(BIN / name))
    if not Path(path).is_file():
        pytest.fail(f"no {name} CLI at {path}: `make agents` installs it (or set {variable})")
    return path


class provider_env:
    """Variables for the run, as a user's shell would hold them, restored after."""

    def __init__(self, **values: str):
        self.values = values

    def __enter__(self):
        self.saved = {name: os.environ.get(name) for name in self.values}
        os.environ.update(self.values)

    def __exit__(self, *exc_info):
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
