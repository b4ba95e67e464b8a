"""Load DeepSpeed 0.19.8's own config classes (pydantic models) without torch and without DeepSpeed installed.

The model modules are vendored unchanged under tests/vendor/deepspeed_0_19_8/ (Apache-2.0; see README there).
They import ``torch`` (only for a type annotation) and ``deepspeed.utils.logger``; both are stubbed here, for
the duration of :func:`deepspeed_config_classes` only. Needs ``pydantic`` (DeepSpeed's own dependency).
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import types
from contextlib import contextmanager
from pathlib import Path

VENDOR = Path(__file__).resolve().parent / "vendor" / "deepspeed_0_19_8"
#: module name -> vendored file (relative to VENDOR), in import order
MODULES = {
    "deepspeed.runtime.config_utils": "runtime/config_utils.py",
    "deepspeed.runtime.zero.offload_config": "runtime/zero/offload_config.py",
    "deepspeed.runtime.zero.leaf_module_config": "runtime/zero/leaf_module_config.py",
    "deepspeed.runtime.zenflow.zenflow_config": "runtime/zenflow/zenflow_config.py",
    "deepspeed.runtime.zero.config": "runtime/zero/config.py",
    "deepspeed.runtime.precision_config": "runtime/precision_config.py",
}
#: values of deepspeed/runtime/fp16/loss_scaler.py (0.19.8) that precision_config.py imports
LOSS_SCALER = {"INITIAL_LOSS_SCALE": "init_scale", "SCALE_WINDOW": "scale_window", "DELAYED_SHIFT": "delayed_shift",
               "CONSECUTIVE_HYSTERESIS": "consecutive_hysteresis", "MIN_LOSS_SCALE": "min_scale"}


@contextmanager
def deepspeed_config_classes():
    """Yield a namespace with get_zero_config, get_bfloat16_config, get_float16_config, DeepSpeedZeroConfig."""
    added: list[str] = []

    def put(name: str, mod: types.ModuleType) -> None:
        if name not in sys.modules:
            sys.modules[name] = mod
            added.append(name)

    try:
        if importlib.util.find_spec("torch") is None:
            torch = types.ModuleType("torch")
            torch.dtype = type("dtype", (), {})
            torch.float16 = torch.dtype()
            put("torch", torch)
        for pkg in ("deepspeed", "deepspeed.runtime", "deepspeed.runtime.zero", "deepspeed.runtime.zenflow",
                    "deepspeed.runtime.fp16"):
            m = types.ModuleType(pkg)
            m.__path__ = []
            put(pkg, m)
        utils = types.ModuleType("deepspeed.utils")
        utils.logger = logging.getLogger("deepspeed-vendored")
        put("deepspeed.utils", utils)
        ls = types.ModuleType("deepspeed.runtime.fp16.loss_scaler")
        ls.__dict__.update(LOSS_SCALER)
        put("deepspeed.runtime.fp16.loss_scaler", ls)
        mods = {}
        for name, rel in MODULES.items():
            spec = importlib.util.spec_from_file_location(name, VENDOR / rel)
            mod = importlib.util.module_from_spec(spec)
            mod.__package__ = name.rsplit(".", 1)[0]
            put(name, mod)
            spec.loader.exec_module(mod)
            mods[name] = mod
        zero = mods["deepspeed.runtime.zero.config"]
        prec = mods["deepspeed.runtime.precision_config"]
        yield types.SimpleNamespace(get_zero_config=zero.get_zero_config, DeepSpeedZeroConfig=zero.DeepSpeedZeroConfig,
                                    get_bfloat16_config=prec.get_bfloat16_config,
                                    get_float16_config=prec.get_float16_config,
                                    OffloadDeviceEnum=mods["deepspeed.runtime.zero.offload_config"].OffloadDeviceEnum)
    finally:
        for name in reversed(added):
            sys.modules.pop(name, None)
