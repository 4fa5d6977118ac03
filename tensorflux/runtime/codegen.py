"""Generating Python for a run of nodes: the one emitter of the fast paths (DESIGN §5).

The static executor (static_executor.py: a straight-line step) and the loop compiler
(compiled_loops.py: a cheap while loop) both turn nodes into Python source, one statement
per node, and compile it. What they share lives here:

    v12 = k12(ctx, v7, c3)        # a kernel call; c3 is a Const's value (a global)
    v13 = v12                     # Identity, from its kernel's inline template
    v14_0, v14_1, = k14(ctx, v13) # a node with several outputs
    del v7                        # liveness: v7's last reader has run

- `Emitter.statement(node)`: the statement of one node. A Const becomes a global of the
  function (no statement); an `_Arg` reads `args`; a kernel with an inline template
  (`kdef.inline`) is written out unless a kernel wrapper replaced it; anything else calls
  its kernel, built once here (and wrapped by `kernel_wrapper(node, kdef, compute)`). With
  `merged` (the partitions of a whole step in one function) a `_Send` emits nothing and its
  `_Recv` copies the sent value.
- `Emitter.add_straight(statements, keep)`: statements in order, each local dropped (`del`)
  right after the last statement that reads it, so values are freed as early as in the
  dataflow executor. (A compiled loop drops an iteration's values after their last reader
  in the iteration too, but those of a small static shape: compiled_loops.py `_frees`.)
- `Emitter.compile(name)`: the function, from source compiled under a filename of its own.
- `node_error(exc, ...)`: the one map from a failure back to its node. Each statement is on
  a line of its own and `line_nodes` records which node it is, so the generated code
  carries no per-node bookkeeping: the innermost traceback entry in the generated file
  names the node, and the failure is re-raised as `ExecutorError(node, device, cause)`.
  An ExecutorError from an inner generated function (a compiled loop inside a schedule or
  another loop) already names its node and passes through unchanged.
- `inline_call(caller, callee, name)`: a function written to call `callee` once per turn of
  a loop, with that call replaced by `callee`'s body (the dataflow executor's driver loop
  and the method that runs one node: written once, run without a call per node).
"""

from __future__ import annotations
import __future__

import ast
import dataclasses
import inspect
import itertools
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tensorflux.kernels import buffers
from tensorflux.kernels import registry as kernel_registry
from tensorflux.runtime.step_graph import Node

_counter = itertools.count()


class ExecutorError(Exception):
    """A kernel failure, carrying the node it happened in."""

    def __init__(self, node: Node, device: str, cause: BaseException):
        super().__init__(str(cause))
        self.node = node
        self.device = device
        self.cause = cause


def make_kernel(kdef, node: Node, device: str) -> Callable:
    """`kdef.factory(node)`: the node's compute function; a factory that refuses the node
    (its attrs) raises ExecutorError naming the node, as a failing kernel does."""
    try:
        return kdef.factory(node)
    except Exception as e:  # noqa: BLE001 - re-raised with the node attached
        raise ExecutorError(node, device, e) from None


@dataclass(slots=True)
class Statement:
    """One node's statement: its text, the locals it defines and those it reads; for a call
    of a kernel that can write its output into an input (`reused_inputs`), the (position,
    local) of each such input and the call without its closing parenthesis."""

    text: str
    node: Node
    outs: list[str]
    reads: list[str]
    donate: tuple = ()
    open_call: str = ""


def _identity(ctx, value):
    return value


SHAPE_OPS = frozenset(("Shape", "Size", "Rank"))
MEMO_MAX_BYTES = 1024  # a memoized node's inputs and output, at most this big each
MEMO_ENTRIES = 32  # a memoized node's entries, at most (then it starts over)


def _small(value) -> bool:
    return getattr(value, "nbytes", 0) <= MEMO_MAX_BYTES


def _keepable(out) -> bool:
    """Whether a memoized kernel's output may be kept: a NumPy scalar (immutable) or a small
    array (kept read-only)."""
    return isinstance(out, np.generic) or (type(out) is np.ndarray and _small(out))


def _keep(out):
    """`out`, made read-only if it is an array of its own (a view, e.g. a Reshape of a
    constant, views what its base holds: left as it is)."""
    if type(out) is np.ndarray and out.flags.owndata:
        out.flags.writeable = False
    return out


def memo_by_shape(memo: dict, compute, ctx, value):
    """A Shape, Size or Rank kernel's output for `value`, looked up by `value.shape` (see
    `Emitter.memo`)."""
    key = getattr(value, "shape", None)
    if key is None:
        return compute(ctx, value)
    found = memo.get(key)
    if found is not None:
        return found
    out = compute(ctx, value)
    if _keepable(out):
        if len(memo) >= MEMO_ENTRIES:
            memo.clear()
        memo[key] = _keep(out)
    return out


def memo_by_inputs(memo: dict, compute, ctx, *inputs):
    """A stateless kernel's output for `inputs`, looked up by their identities: the inputs
    are memoized outputs or constants (see `Emitter.memo`), and each entry holds them, so
    an identity seen again is the same object with the same value."""
    key = tuple(map(id, inputs))
    found = memo.get(key)
    if found is not None:
        return found[0]
    out = compute(ctx, *inputs)
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    if all(map(_keepable, outs)) and all(map(_small, inputs)):
        if len(memo) >= MEMO_ENTRIES:
            memo.clear()
        for o in outs:
            _keep(o)
        memo[key] = (out, inputs)
    return out


_MEMO_HELPERS = {"memo_by_shape": memo_by_shape, "memo_by_inputs": memo_by_inputs}


_NOT_CONSTANT = object()


class _DeviceOnly:
    """The context a `device_constant` kernel is called with when a step is built: its
    device and nothing else (reading anything else fails there, not in a step)."""

    __slots__ = ("device",)

    def __init__(self, device):
        self.device = device


def transfer_key(node: Node) -> tuple:
    """What joins a _Send to its _Recv within one step: (from, to, tensor name)."""
    a = node.attrs
    return a["send_device"], a["recv_device"], a["tensor_name"]


class Emitter:
    """Builds the source of one generated function.

    Args:
      device_type: the kernels' device type.
      kernel_wrapper: optional `wrap(node, kdef, compute) -> compute`, applied once per
        called kernel (a kernel it changes is called, never inlined).
      inline: write inline templates out, fold Consts into globals and read `_Arg`s from
        `args` (false: every node is a call, merged transfers too, for measuring dispatch
        and for traced runs; the results are the same).
      scalar_consts: 0-d numeric Consts become NumPy scalars (the form a ufunc returns for
        0-d inputs, so kernels meet both anyway; scalar kernels take their fast path).
      merged: the nodes are the partitions of a whole step (see the module docstring).
      factories: op type -> `factory(node) -> compute`, in place of the registered kernel
        (a synchronous one: the static executor's blocking `_Recv`).
      device_of: node -> the Device it runs on, when the step's devices are known: then
        (inline) a kernel registered `device_constant` (a VarHandleOp's handle) is computed
        here, once, and the step holds its value as it holds a Const's.
    """

    def __init__(self, device_type: str, kernel_wrapper=None, inline: bool = True,
                 scalar_consts: bool = False, merged: bool = False,
                 factories: dict[str, Callable] | None = None,
                 device_of: Callable | None = None):
        self.device_type = device_type
        self.device_of = device_of
        self.kernel_wrapper = kernel_wrapper
        self.inline = inline
        self.scalar_consts = scalar_consts
        self.merged = merged
        self.factories = factories or {}
        self.env: dict = {}
        self.names: dict[tuple[Node, int], str] = {}
        self.lines: list[str] = []
        self.line_nodes: dict[int, Node] = {}
        self._sent: dict[tuple, str] = {}
        # Merged partitions: the transfers whose _Recv is among the nodes (set by the
        # caller); a _Send or _Recv whose other end is elsewhere (another task) stays a
        # kernel call through the step's Rendezvous.
        self.received: set[tuple] = set()
        self._used: set[str] = set()
        self._fresh = itertools.count()
        # Nodes whose kernels may be memoized (set by the caller): Shape, Size and Rank by
        # their input's shape, and stateless nodes that read only such nodes' outputs and
        # constants by their inputs' identities (`memo_by_shape`, `memo_by_inputs`), so a
        # step's shape arithmetic (a dynamic batch's gradients of broadcasting adds and
        # means) runs once per shape instead of every step. Outputs and inputs over
        # MEMO_MAX_BYTES are computed every time; kept arrays of their own are read-only.
        self.memo: set[Node] = set()

    def _suffix(self, n: Node) -> str:
        """The node's id (as the step graph numbers it), or a fresh name if that is taken
        (a node made at run time, or two copies of one node)."""
        s = str(n.id) if n.id >= 0 else "x0"
        while s in self._used:
            s = f"x{next(self._fresh)}"
        self._used.add(s)
        return s

    def statement(self, n: Node, ctx: str = "ctx") -> Statement | None:
        """The statement computing `n` (None when it needs none), naming its outputs."""
        if self.merged and n.op == "_Recv" and transfer_key(n) in self._sent:
            value = self._sent[transfer_key(n)]
            suffix = self._suffix(n)
            out = self.names[(n, 0)] = f"v{suffix}"
            expr = value if self.inline else self._forward(n, suffix, value, ctx)
            return Statement(f"{out} = {expr}", n, [out], [] if value in self.env else [value])
        args = [self.names[e] for e in n.inputs]
        if self.merged and n.op == "_Send" and transfer_key(n) in self.received:
            self._sent[transfer_key(n)] = args[0]
            if self.inline:
                return None
            return Statement(self._forward(n, self._suffix(n), args[0], ctx), n, [],
                             [] if args[0] in self.env else [args[0]])
        suffix = self._suffix(n)
        many = len(n.output_dtypes) > 1
        outs = [f"v{suffix}_{k}" if many else f"v{suffix}" for k in range(len(n.output_dtypes))]
        for k, o in enumerate(outs):
            self.names[(n, k)] = o
        if n.op == "Const" and self.inline and isinstance(n.attrs["value"], np.ndarray):
            value = n.attrs["value"]
            if self.scalar_consts and getattr(value, "ndim", None) == 0 and \
                    value.dtype.kind in "biufc":
                value = value[()]
            self.env[outs[0]] = value
            return None
        if n.op == "_Arg" and self.inline:
            return Statement(f"{outs[0]} = args[{n.attrs['index']}]", n, outs, [])
        if self.inline and self.device_of is not None and not n.inputs and len(outs) == 1:
            value = self._device_constant(n)
            if value is not _NOT_CONSTANT:
                self.env[outs[0]] = value
                return None
        expr, reuses = self._call(n, suffix, args, ctx)
        if expr is None:
            return None
        if len(outs) > 1:
            expr = f"{', '.join(outs)}, = {expr}"
        elif outs:
            expr = f"{outs[0]} = {expr}"
        reads = [a for a in args if a not in self.env]
        donate = tuple((k, args[k]) for k in reuses if args[k] not in self.env)
        return Statement(expr, n, outs, reads, donate, expr[:-1] if donate else "")

    def _device_name(self, n: Node) -> str:
        return self.device_of(n).name if self.device_of is not None else n.device

    def _device_constant(self, n: Node):
        """The value of `n`'s kernel when it is registered `device_constant` and nothing
        wraps or replaces it (computed with a context that has only the device), else
        _NOT_CONSTANT."""
        kdef = kernel_registry.find_kernel(n.op, self.device_type, n.attrs)
        if kdef is None or not kdef.device_constant or n.op in self.factories:
            return _NOT_CONSTANT
        compute = make_kernel(kdef, n, self._device_name(n))
        if self.kernel_wrapper is not None and \
                self.kernel_wrapper(n, kdef, compute) is not compute:
            return _NOT_CONSTANT
        return compute(_DeviceOnly(self.device_of(n)))

    def _call(self, n: Node, suffix: str, args: list[str], ctx: str) -> tuple:
        """(the expression computing `n`: its inline template or a call of its kernel, the
        input positions `reused_inputs` allows the call to be donated)."""
        kdef = kernel_registry.find_kernel(n.op, self.device_type, n.attrs)
        if kdef is None:
            raise ValueError(f"No {self.device_type} kernel for {n.op} (node {n.name})")
        factory = self.factories.get(n.op)
        if factory is None:
            compute = make_kernel(kdef, n, self._device_name(n))
        else:
            compute = factory(n)
            kdef = dataclasses.replace(kdef, is_async=False)
        wrapped = compute if self.kernel_wrapper is None else self.kernel_wrapper(
            n, kdef, compute)
        if self.inline and kdef.inline is not None and wrapped is compute:
            return (kdef.inline.format(*args) if kdef.inline else None), ()
        kname = f"k{suffix}"
        self.env[kname] = wrapped
        if n in self.memo and not kdef.is_async:
            self.env[f"_m{suffix}"] = {}
            helper = "memo_by_shape" if n.op in SHAPE_OPS else "memo_by_inputs"
            self.env[helper] = _MEMO_HELPERS[helper]
            return (f"{helper}(_m{suffix}, {kname}, {ctx}{''.join(', ' + a for a in args)})",
                    ())
        return (f"{kname}({ctx}{''.join(', ' + a for a in args)})",
                reused_inputs(n, kdef, compute, wrapped))

    def _forward(self, n: Node, suffix: str, value: str, ctx: str) -> str:
        """Merged partitions with every node a call: a _Send or _Recv as an identity kernel
        of its own device (so a traced step records the transfer)."""
        kdef = dataclasses.replace(kernel_registry.find_kernel(n.op, self.device_type,
                                                               n.attrs), is_async=False)
        kname = f"k{suffix}"
        self.env[kname] = _identity if self.kernel_wrapper is None else self.kernel_wrapper(
            n, kdef, _identity)
        return f"{kname}({ctx}, {value})"

    def add(self, text: str, indent: int = 1, node: Node | None = None) -> None:
        """One line of source; with `node`, a failure on it is that node's."""
        self.lines.append("    " * indent + text)
        if node is not None:
            self.line_nodes[len(self.lines)] = node

    def add_straight(self, statements: list[Statement], keep: set[str],
                     indent: int = 1) -> None:
        """`statements` in order, dropping every local but those in `keep` right after
        its last reader (or after the statement that makes it, if nothing reads it).

        A call whose kernel can reuse inputs (`Statement.donate`) and that is the last
        reader of some of them is preceded by the check of which of those nothing else
        holds, and is passed them as `donated` (kernels/buffers.py, "donated inputs"):

            _d = ((0,) if _donatable(v12) else ())
            v14 = k14(ctx, v12, v13, donated=_d)
            del v12
        """
        last: dict[str, int] = {}
        for idx, st in enumerate(statements):
            for o in st.outs:
                last[o] = idx
            for r in st.reads:
                last[r] = idx
        frees: dict[int, list[str]] = {}
        for var, idx in last.items():
            if var not in keep:
                frees.setdefault(idx, []).append(var)
        fed = {o for st in statements if st.node.op == "_Arg" for o in st.outs}
        for idx, st in enumerate(statements):
            dying = [(k, v) for k, v in st.donate
                     if last[v] == idx and v not in keep and v not in fed]
            if dying:
                self.env["_donatable"] = buffers.donatable
                self.add("_d = " + " + ".join(f"(({k},) if _donatable({v}) else ())"
                                               for k, v in dying), indent, st.node)
                self.add(f"{st.open_call}, donated=_d)", indent, st.node)
            else:
                self.add(st.text, indent, st.node)
            if idx in frees:
                self.add("del " + ", ".join(frees[idx]), indent)

    def compile(self, name: str, label: str) -> tuple[Callable, str, str]:
        """(the function `name` defined by the source, the source, its filename)."""
        source = "\n".join(self.lines) + "\n"
        filename = f"<tensorflux {label} {next(_counter)}>"
        namespace: dict = {}
        exec(compile(source, filename, "exec"), self.env, namespace)  # noqa: S102
        return namespace[name], source, filename


def reused_inputs(node: Node, kdef, compute: Callable, called: Callable) -> tuple:
    """The input positions an executor may donate to the call `called` of `node`'s kernel
    `compute` (kernels/buffers.py, "donated inputs"): the kernel's `reuses_inputs`, unless
    a wrapper that does not pass `donated` on stands between (a wrapper that does has
    `passes_donations` set), or the output's static shape says it is too small to gain."""
    if not kdef.reuses_inputs or (called is not compute and
                                  not getattr(called, "passes_donations", False)):
        return ()
    shapes = node.output_shapes
    shape = shapes[0] if shapes else None
    if shape is not None and shape.is_fully_defined() and \
            shape.num_elements() * node.output_dtypes[0].size < buffers.DONATE_MIN_BYTES:
        return ()
    return kdef.reuses_inputs


def node_error(exc: BaseException, filename: str, line_nodes: dict[int, Node],
               device_of: Callable[[Node], str]) -> ExecutorError | None:
    """`exc` raised in the generated function of `filename` as an ExecutorError naming the
    node of the innermost line it passed in that function (an ExecutorError as it is);
    None when it came from no node's line."""
    if isinstance(exc, ExecutorError):
        return exc
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    node = line_nodes.get(line)
    if node is None:
        return None
    return ExecutorError(node, device_of(node), exc)


def with_node_errors(fn: Callable, filename: str, line_nodes: dict[int, Node],
                     device_of: Callable[[Node], str]) -> Callable:
    """`fn(ctx, *inputs)`, re-raising a failure as `node_error` maps it."""

    def run(ctx, *inputs):
        try:
            return fn(ctx, *inputs)
        except Exception as e:  # noqa: BLE001 - re-raised with the failing node attached
            mapped = node_error(e, filename, line_nodes, device_of)
            if mapped is None:
                raise
            raise mapped from None

    return run


def inline_call(caller: Callable, callee: Callable, name: str) -> Callable:
    """`caller` with its one statement `name(a, b, ...)` replaced by the body of
    `callee(self, a, b, ...)`, every `return` in that body becoming `continue`.

    The statement must be directly inside a loop of `caller`, its arguments the names of
    `callee`'s parameters after `self`, and `callee`'s returns bare and outside its own
    loops; both are methods of one class, so `self` is shared. The result is compiled from
    the two functions' own source lines, so tracebacks show them. Without source (a frozen
    build) `caller` is returned as it is.

    Raises:
      ValueError: the functions do not have that form.
    """
    try:
        caller_def = _function_ast(caller)
        callee_def = _function_ast(callee)
    except (OSError, TypeError):
        return caller
    body = callee_def.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    params = [a.arg for a in callee_def.args.args[1:]]
    body = [_ReturnToContinue().visit(st) for st in body]
    splice = _Splice(name, params, body)
    splice.visit(caller_def)
    if splice.found != 1:
        raise ValueError(f"{caller.__qualname__} must call {name}({', '.join(params)}) "
                         "once, as a statement inside a loop")
    caller_def.decorator_list = []
    module = ast.fix_missing_locations(ast.Module(body=[caller_def], type_ignores=[]))
    code = compile(module, inspect.getsourcefile(caller) or "<inline_call>", "exec",
                   flags=__future__.annotations.compiler_flag, dont_inherit=True)
    namespace: dict = {}
    exec(code, caller.__globals__, namespace)  # noqa: S102
    fn = namespace[caller_def.name]
    fn.__qualname__ = caller.__qualname__
    fn.__doc__ = caller.__doc__
    return fn


def _function_ast(fn: Callable) -> ast.FunctionDef:
    """The definition of `fn`, at its own lines and columns of its source file."""
    lines, first = inspect.getsourcelines(fn)
    source = "".join(lines)
    indent = len(lines[0]) - len(lines[0].lstrip())
    tree = ast.parse(textwrap.dedent(source))
    ast.increment_lineno(tree, first - 1)
    for node in ast.walk(tree):
        if hasattr(node, "col_offset"):
            node.col_offset += indent
            if getattr(node, "end_col_offset", None) is not None:
                node.end_col_offset += indent
    (definition,) = tree.body
    return definition


class _ReturnToContinue(ast.NodeTransformer):
    """`return` -> `continue` (of the caller's loop); refuses what would change meaning."""

    def visit_Return(self, node: ast.Return) -> ast.AST:
        if node.value is not None:
            raise ValueError(f"line {node.lineno}: an inlined body must return nothing")
        return ast.copy_location(ast.Continue(), node)

    def _refuse_returns(self, node: ast.AST) -> ast.AST:
        if any(isinstance(n, ast.Return) for n in ast.walk(node)):
            raise ValueError(f"line {node.lineno}: a return inside a loop of an inlined body")
        return node

    visit_For = visit_While = _refuse_returns

    def _keep(self, node: ast.AST) -> ast.AST:  # a nested function keeps its returns
        return node

    visit_FunctionDef = visit_Lambda = visit_AsyncFunctionDef = _keep


class _Splice(ast.NodeTransformer):
    """Replaces the statement `name(params...)` inside a loop by `body`."""

    def __init__(self, name: str, params: list[str], body: list[ast.stmt]):
        self.name, self.params, self.body = name, params, body
        self.found = 0
        self.in_loop = 0

    def _loop(self, node: ast.AST) -> ast.AST:
        self.in_loop += 1
        self.generic_visit(node)
        self.in_loop -= 1
        return node

    visit_For = visit_While = _loop

    def visit_Expr(self, node: ast.Expr):
        call = node.value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id == self.name):
            return node
        args = [a.id if isinstance(a, ast.Name) else None for a in call.args]
        if not self.in_loop or args != self.params or call.keywords:
            raise ValueError(f"line {node.lineno}: {self.name} must be called as "
                             f"{self.name}({', '.join(self.params)}) inside a loop")
        self.found += 1
        return self.body
