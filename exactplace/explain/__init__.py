"""Why this plan: ``exactplace explain`` and :func:`explain`.

- :func:`explain`: a plan's bottleneck and what its load is made of, each accelerator's memory, and each
  constraint (the memory limit, the colour classes, the user's constraints) lifted and solved again, so that its
  cost is a measured saving between certified optima (:mod:`exactplace.explain.why`);
- :func:`judge`: a user's own split against the optimum of its problem, with :func:`first_move`, the one move
  that closes most of the difference (:mod:`exactplace.explain.moves`).
"""

from exactplace.explain.moves import Move, Verdict, first_move, judge
from exactplace.explain.why import Explanation, Lifted, explain

__all__ = ["Explanation", "Lifted", "Move", "Verdict", "explain", "first_move", "judge"]
