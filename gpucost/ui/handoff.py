"""Numbers one page hands to another: the utilization measured on page 04 (GPU probe) for page 03 (TCO).

Each notebook runs in its own kernel (JupyterLab and Voilà alike), so a module variable does not cross
pages. The hand-off is a small JSON file in the Jupyter runtime directory (``jupyter --runtime-dir``,
``$JUPYTER_RUNTIME_DIR`` when set): ``<runtime dir>/gpucost/measured_utilization.json``. Within one
kernel :data:`LAST` holds the same record. Page 03 reads it with :func:`load_measured_utilization`.

The record::

    {"utilization_pct": 32.7,            # mean GPU utilization over the sampled GPUs [%]
     "per_gpu": [{"index": 0, "gpu_id": "rtx-4090", "name": "...", "utilization_pct": 32.7}, ...],
     "gpu_id": "rtx-4090",               # the first matched catalog card, or null
     "duration_s": 3600, "interval_s": 60, "samples": 60,
     "measured_at": "2026-11-29T12:00:00+00:00",
     "demo": false,                      # true: simulated GPUs (page 04's demo), not a measurement
     "source": "gpucost page 04 (GPU probe)"}
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

FILE_NAME = "measured_utilization.json"
#: the last record saved in this kernel
LAST: dict | None = None


def handoff_dir() -> Path:
    """``<Jupyter runtime dir>/gpucost`` (falls back to the system temp dir without jupyter_core)."""
    env = os.environ.get("JUPYTER_RUNTIME_DIR")
    if env:
        base = Path(env)
    else:
        try:
            from jupyter_core.paths import jupyter_runtime_dir
            base = Path(jupyter_runtime_dir())
        except ImportError:  # pragma: no cover - jupyter_core comes with every Jupyter install
            base = Path(tempfile.gettempdir())
    return base / "gpucost"


def handoff_path() -> Path:
    return handoff_dir() / FILE_NAME


def save_measured_utilization(record: dict) -> Path | None:
    """Keep ``record`` for page 03; return the file written (None when the directory is not writable)."""
    global LAST
    LAST = dict(record)
    path = handoff_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, ensure_ascii=False, indent=1), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        return None
    return path


def load_measured_utilization() -> dict | None:
    """The last utilization page 04 handed over (this kernel's, else the file's), or None."""
    if LAST is not None:
        return dict(LAST)
    try:
        return json.loads(handoff_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
