"""`slim.model_analyzer`: the sizes of a model's variables and of its ops' outputs, summed
and optionally printed one line each (TF-Slim's `analyze_vars` / `analyze_ops`)."""

from __future__ import annotations

__all__ = ["tensor_description", "analyze_vars", "analyze_ops"]


def tensor_description(var) -> str:
    """`(float32 3x3x64)`: the dtype and the static shape."""
    dims = "x".join(str(d) for d in var.shape.as_list()) if var.shape.ndims is not None \
        else "?"
    return f"({var.dtype.base_dtype.name} {dims})"


def analyze_vars(variables, print_info: bool = False) -> tuple[int, int]:
    """(total number of elements, total bytes) of `variables`; with `print_info` one line
    per variable and the totals are printed."""
    if print_info:
        print("---------\nVariables: name (type shape) [size]\n---------")
    total_size = total_bytes = 0
    for var in variables:
        size = var.shape.num_elements() or 0
        nbytes = size * var.dtype.base_dtype.size
        total_size += size
        total_bytes += nbytes
        if print_info:
            print(var.name, tensor_description(var), f"[{size}, bytes: {nbytes}]")
    if print_info:
        print(f"Total size of variables: {total_size}")
        print(f"Total bytes of variables: {total_bytes}")
    return total_size, total_bytes


def analyze_ops(graph, print_info: bool = False) -> int:
    """The total number of elements of the statically known outputs of `graph`'s ops; with
    `print_info` one line per op is printed."""
    if print_info:
        print("---------\nOperations: name -> (type shapes) [size]\n---------")
    total = 0
    for op in graph.get_operations():
        size = sum(t.shape.num_elements() or 0 for t in op.outputs)
        total += size
        if print_info:
            shapes = ", ".join(tensor_description(t) for t in op.outputs)
            print(op.name, "\t->", shapes, f"[{size}]")
    return total
