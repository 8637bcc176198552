"""Bin packing of colour classes into the accelerators' memory: does any assignment fit?

A feasibility question, solved exactly in integers (:func:`packing`); a packing found is checked
against the real sizes (:func:`packs`). Used to decide whether a placement within memory exists.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import Kind, Model

__all__ = ["DEFAULT_PACKING", "PackingSettings", "packing", "packs"]


@dataclass(frozen=True)
class PackingSettings:
    """How :func:`packing` scales sizes to integers."""

    resolution: float = 2**30
    """The largest size or capacity is this many units."""


DEFAULT_PACKING = PackingSettings()


def packing(sizes: np.ndarray, capacities: np.ndarray,
            settings: PackingSettings = DEFAULT_PACKING) -> tuple[Model, np.ndarray]:
    """The packing model of ``sizes`` (per class) into ``capacities`` (per accelerator), and ``x``'s indices::

        sum_d x[c, d] = 1                  each class on exactly one accelerator
        sum_c size_c x[c, d] <= cap_d      each accelerator's classes within its memory
        x[0, 0] = 1                        identical accelerators: class 0 on the first (any packing renames so)
        x binary; no objective

    Sizes are rounded *down* and capacities *up* to integers at ``settings.resolution`` of the largest,
    so every solver decides exactly and "infeasible" is a proof for the real sizes.

    >>> from exactplace.solvers import solve_model
    >>> model, x = packing(np.array([3.0, 3.0, 2.0]), np.array([5.0, 5.0]))
    >>> out = solve_model(model, "highs")
    >>> out.status.value, sorted(np.bincount(np.argmax(out.values[x], axis=1), minlength=2).tolist())
    ('optimal', [1, 2])
    """
    classes, k = len(sizes), len(capacities)
    scale = settings.resolution / max(float(capacities.max(initial=0.0)), float(sizes.max(initial=0.0)), 1e-300)
    size = np.floor(sizes * scale)
    cap = np.ceil(capacities * scale)
    m = Model("packing")
    x = m.add_vars((classes, k), ub=1, kind=Kind.INTEGER, name="x: class on accelerator")
    m.add_rows("each class on one accelerator", classes, lb=1.0, ub=1.0,
               rows=np.repeat(np.arange(classes), k), cols=x.reshape(-1), vals=1.0)
    m.add_rows("memory per accelerator", k, ub=cap, rows=np.tile(np.arange(k), classes), cols=x.reshape(-1),
               vals=np.repeat(size, k))
    if classes and k > 1 and np.all(capacities == capacities[0]):
        m.add_rows("class 0 on the first of identical accelerators", 1, lb=1.0, rows=[0], cols=[x[0, 0]], vals=1.0)
    m.minimize([], [])
    return m, x


def packs(sizes: np.ndarray, capacities: np.ndarray, assignment: np.ndarray) -> bool:
    """True when ``assignment`` (accelerator per class) fits the real ``sizes`` (referee's slack)."""
    used = np.bincount(assignment, weights=sizes, minlength=len(capacities))
    return bool(np.all(used <= capacities * (1 + 1e-9) + 1e-9))
