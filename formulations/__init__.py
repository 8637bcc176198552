"""Mathematical programs for placement (installed as ``exactplace.formulations``).

One module per formulation, each reading top to bottom: variables, one named block per
constraint family (its docstring states the math and the paper's equation), objective,
and a decoder from a solution to a device array. Models only: solving them is the solver
adapters' job (``exactplace.solvers``). Inside this package, import siblings relatively.
"""
