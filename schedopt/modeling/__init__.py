"""schedopt's declarative modelling layer: variables are named N-d blocks, constraints are
written once over whole arrays, and a `Model` compiles to one sparse `LinearProgram`.

    from schedopt.modeling import Model
"""

from schedopt.modeling.expressions import Constraint, Expr, Variable
from schedopt.modeling.model import Model, Solution

__all__ = ["Model", "Solution", "Expr", "Variable", "Constraint"]
