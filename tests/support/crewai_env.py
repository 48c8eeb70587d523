"""The virtualenv CrewAI runs in: ``.venv-crewai`` (made on first use, gitignored).

CrewAI pins ``openai<3``; the OpenAI Agents SDK of the main ``.venv`` needs ``openai>=3``, so the
CrewAI adapter is tested from an environment of its own: ``crewai`` plus the client (editable, with
its ``[crewai]`` extra). tests/integrations/test_crewai.py runs tests/integrations/crewai_driver.py in
it against the engine the main test session started. ``MEMORY_ENGINE_CREWAI_PYTHON`` names another
interpreter that has both installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV = REPO_ROOT / ".venv-crewai"


def crewai_python() -> Path:
    """The interpreter, the virtualenv made (a few minutes, once) when missing."""
    named = os.environ.get("MEMORY_ENGINE_CREWAI_PYTHON")
    if named:
        return Path(named)
    python = VENV / "bin" / "python"
    stamp = VENV / ".installed"
    if not stamp.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "-e",
                        f"{REPO_ROOT / 'clients' / 'python'}[crewai]"], check=True)
        stamp.touch()
    return python


if __name__ == "__main__":
    print(crewai_python())
