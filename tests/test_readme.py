"""The README's computed tables (defaults, data, measured error, claims) are what the code computes now."""

from __future__ import annotations

import os
import subprocess
import sys

from .conftest import ROOT


def test_readme_tables_are_current():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the checkout's gpucost, as the rest of the suite
    proc = subprocess.run([sys.executable, "tools/readme_tables.py", "--check"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_readme_names_the_two_commands_and_every_default():
    from gpucost.specs import DEFAULTS

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "./dev serve" in readme and "./dev test" in readme
    for name in DEFAULTS.__dataclass_fields__:
        assert f"| `{name}` |" in readme, name
