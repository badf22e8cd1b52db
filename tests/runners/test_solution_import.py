"""The candidate imports solution.py from its source (runners.child): bytecode left in the
folder's __pycache__ with the source's size and time in its header, which Python's own loader
would run instead, is never read."""

import importlib.util
import os
import py_compile
import sys

from runners import child


def test_bytecode_beside_the_solution_is_not_run(tmp_path, monkeypatch):
    source = "ANSWER = 'from the source'\nclass ModelNew: pass\n"
    swapped = "ANSWER = 'from bytecode'\nclass ModelNew: pass\n".ljust(len(source))
    solution, other = tmp_path / "solution.py", tmp_path / "other.py"
    solution.write_text(source)
    other.write_text(swapped)
    # Bytecode of other code, stamped with the source's size and time: what a solution could
    # write for the next process of its grade to import.
    stat = solution.stat()
    os.utime(other, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    cached = importlib.util.cache_from_source(str(solution))
    py_compile.compile(str(other), cfile=cached, dfile=str(solution), doraise=True)
    monkeypatch.delitem(sys.modules, "solution", raising=False)

    # Python's own loader takes the bytecode: the header matches the source.
    spec = importlib.util.spec_from_file_location("plain", solution)
    plain = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plain)
    assert plain.ANSWER == "from bytecode"

    assert child._import_solution(solution).ANSWER == "from the source"
