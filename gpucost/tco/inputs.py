"""A scenario resolved into numbers: one frozen dataclass per section, units in the field names.

The vectorized core (:mod:`gpucost.tco.core`) reads these fields. Every numeric field is a float, or —
inside the core, for the tornado and the Monte Carlo — an array of shape (S, 1) holding S variants of it
(:func:`vectorized`). Money is in the result's display currency; hours are GPU-hours of the owned card
unless a name says otherwise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from gpucost.errors import UnknownNameError
from gpucost.serialize import Record
from gpucost.tco.scenario import Scenario

Num = Any  # a float, or an (S, 1) array of floats inside the vectorized core


@dataclass(frozen=True)
class OwnedInputs:
    """The owned cards and what running them costs."""

    count: Num
    tdp_w: Num
    host_power_w: Num
    idle_power_fraction: Num
    max_utilization: Num
    always_on: Num                       # 1.0 on around the clock, 0.0 off when idle
    pue: Num
    electricity_per_kwh: Num
    colocation_per_kw_month: Num
    maintenance_fraction_per_year: Num
    failure_rate_per_year: Num
    staff_per_month: Num
    price_new: Num                       # per card (NaN: no price)
    price_used: Num
    host_cost: Num                       # per card
    resale_retention_per_year: Num       # ρ: share of value kept each year
    resale_fee_fraction: Num


@dataclass(frozen=True)
class LeaseInputs:
    annual_rate: Num                     # NaN: no financing rate
    term_months: Num
    down_payment_fraction: Num


@dataclass(frozen=True)
class CloudInputs:
    """Prices per GPU-hour of the cloud card (NaN: no offer); ``relative_speed`` = cloud / owned card."""

    relative_speed: Num
    on_demand_per_gpu_hour: Num
    spot_per_gpu_hour: Num
    reserved_1y_per_gpu_hour: Num
    reserved_3y_per_gpu_hour: Num


@dataclass(frozen=True)
class SpotInputs:
    interruptions_per_hour: Num          # λ per instance-hour (NaN: unknown)
    checkpoint_hours: Num
    restart_hours: Num
    gpus_per_job: Num
    job_gpu_hours: Num                   # the job whose deadline is checked (NaN: none)
    deadline_hours: Num


@dataclass(frozen=True)
class DemandInputs:
    """A steady load (a fraction of the owned cards' hours) growing each year, plus bursts."""

    base_utilization: Num
    growth_per_year: Num
    burst_gpu_hours: Num
    burst_every_months: Num
    burst_first_month: Num


@dataclass(frozen=True)
class HybridInputs:
    headroom_fraction: Num
    configured_base_gpus: Num


@dataclass(frozen=True)
class FxInputs:
    """Exchange-rate factors (1 at base) and which prices were converted from another currency (1.0)."""

    hardware_factor: Num
    cloud_factor: Num
    new_exposed: Num
    used_exposed: Num
    host_exposed: Num
    on_demand_exposed: Num
    spot_exposed: Num
    reserved_1y_exposed: Num
    reserved_3y_exposed: Num

    @property
    def any_exposed(self) -> bool:
        return any(float(np.max(getattr(self, f.name))) > 0 for f in dataclasses.fields(self)
                   if f.name.endswith("_exposed"))


@dataclass(frozen=True)
class Params:
    """Every numeric input of the core, by section."""

    owned: OwnedInputs
    lease: LeaseInputs
    cloud: CloudInputs
    spot: SpotInputs
    demand: DemandInputs
    hybrid: HybridInputs
    fx: FxInputs

    def updated(self, **sections: Mapping[str, Any]) -> Params:
        """A copy with some fields of some sections replaced: ``updated(owned={"count": 3})``."""
        changes = {}
        for name, fields in sections.items():
            if name not in SECTION_NAMES:
                raise UnknownNameError("input section", name, SECTION_NAMES)
            sec = getattr(self, name)
            known = [f.name for f in dataclasses.fields(sec)]
            for k in fields:
                if k not in known:
                    raise UnknownNameError(f"input of {name}", k, known)
            changes[name] = dataclasses.replace(sec, **fields)
        return dataclasses.replace(self, **changes)

    def get(self, path: str):
        """A field by ``section.field``."""
        sec, name = path.split(".")
        return getattr(getattr(self, sec), name)


SECTION_NAMES = tuple(f.name for f in dataclasses.fields(Params))


def vectorized(p: Params, S: int) -> Params:
    """Every numeric field as an (S, 1) array (S variants for the tornado and the Monte Carlo)."""
    return Params(**{name: dataclasses.replace(sec, **{f.name: np.full((S, 1), float(getattr(sec, f.name)))
                                                          for f in dataclasses.fields(sec)})
                     for name in SECTION_NAMES for sec in (getattr(p, name),)})


@dataclass(frozen=True)
class Provenance(Record):
    """Where an input came from: the scenario, the catalog, tco_defaults.csv or a derivation."""

    key: str
    value: object
    unit: str
    source: str
    as_of: str = ""
    note: str = ""


@dataclass(frozen=True)
class Offer(Record):
    """The cloud price an option uses [display currency per GPU-hour]."""

    price: float
    label: str
    source: str
    as_of: str = ""


@dataclass(frozen=True)
class JobLoad:
    """A job's demand: GPU-hours a month from ``first_month``, and per unit (per run or per 1M tokens)."""

    name: str
    kind: str
    hours_per_month: float
    hours_per_unit: float
    first_month: int


@dataclass(frozen=True)
class Inputs:
    """A scenario resolved into numbers (in ``currency``) ready for :func:`gpucost.tco.evaluate`."""

    scenario: Scenario
    currency: str
    horizon_months: int
    params: Params
    owned_gpu: str
    owned_name: str
    cloud_gpu: str
    cloud_name: str
    offers: Mapping[str, Offer]
    unavailable: Mapping[str, tuple[str, Mapping[str, str]]]
    provenance: tuple[Provenance, ...]
    warnings: tuple[str, ...]
    swings: Mapping[str, tuple[float, float]]
    jobs: tuple[JobLoad, ...]

    def updated(self, **sections: Mapping[str, Any]) -> Inputs:
        """A copy with some numeric inputs changed (the page's what-ifs, the property tests)."""
        return dataclasses.replace(self, params=self.params.updated(**sections))

    @property
    def job_units(self) -> Mapping[str, float]:
        return MappingProxyType({j.name: j.hours_per_unit for j in self.jobs})


__all__ = ["OwnedInputs", "LeaseInputs", "CloudInputs", "SpotInputs", "DemandInputs", "HybridInputs", "FxInputs",
           "Params", "vectorized", "Provenance", "Offer", "JobLoad", "Inputs", "SECTION_NAMES"]
