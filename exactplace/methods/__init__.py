"""Method registry and the :func:`solve` front door."""

from exactplace.methods.front_door import solve
from exactplace.methods.registry import Method, MethodResult, Problem, available_methods, register, registered_methods

__all__ = ["Method", "MethodResult", "Problem", "available_methods", "register", "registered_methods", "solve"]
