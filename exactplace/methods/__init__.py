"""Method registry and the :func:`solve` front door."""

from exactplace.methods.registry import Method, MethodResult, Problem, available_methods, register, registered_methods
from exactplace.methods.front_door import solve

__all__ = ["Method", "MethodResult", "Problem", "available_methods", "register", "registered_methods", "solve"]
