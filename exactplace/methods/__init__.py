"""The method layer: the :class:`Method` base, the catalog and registry, and the :func:`solve` front door."""

from exactplace.core.problem import MethodResult, Problem
from exactplace.methods.base import Method
from exactplace.methods.front_door import solve
from exactplace.methods.registry import available_methods, register, registered_methods

__all__ = ["Method", "MethodResult", "Problem", "available_methods", "register", "registered_methods", "solve"]
