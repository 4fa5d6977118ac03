"""The text of a profile, as tfprof writes it: options, the legend, one line per node.

Numbers are abbreviated as tfprof does (2762 -> "2.76k", 4.1e7 -> "41.00m"), bytes as
"20.49KB", times as "82.59ms". A node line lists the selected columns in tfprof's order
("dense/kernel (32x64, 2.05k/2.05k params, 0/0 flops)"); a node that does not count shows
"--" for its own figure. This module also builds the op view (one node per op type).
"""

from __future__ import annotations

import re
import sys

from tensorflux.framework import errors
from tensorflux.protos import tfprof_output_pb2

_VIEW_DOCS = {
    "scope": "scope: The nodes in the model graph are organized by their names, which is "
             "hierarchical like filesystem.",
    "op": "op: The nodes are operation kernel type, such as MatMul, Conv2D. Graph nodes "
          "belonging to the same type are aggregated together.",
}

_SELECT_DOCS = {
    "bytes": ["requested bytes: The memory requested by the operation, accumulatively."],
    "micros": ["total execution time: Sum of accelerator execution time and cpu execution "
               "time.",
               "cpu execution time: The time from the start to the end of the operation. "
               "It's the sum of actual cpu run time plus the time that it spends waiting if "
               "part of computation is launched asynchronously.",
               "accelerator execution time: Time spent executing on the accelerator. This is "
               "normally measured by the actual hardware library."],
    "params": ["param: Number of parameters (in the Variable)."],
    "float_ops": ["flops: Number of float operations. Note: Please read the implementation "
                  "for the math behind it."],
    "device": ["device: which device is placed on."],
    "input_shapes": ["input shape: The shape of input tensors"],
    "occurrence": ["occurrence: The number of times it occurs"],
    "op_types": ["op_types: The attributes of the operation, includes the Kernel name device "
                 "placed on and user-defined strings."],
    "peak_bytes": ["peak bytes: The peak amount of memory that the operation is holding at "
                   "some point."],
    "residual_bytes": ["residual bytes: The memory not de-allocated after the operation "
                       "finishes."],
    "output_bytes": ["output bytes: The memory that is output from the operation (not "
                     "necessarily allocated by the operation)"],
    "accelerator_micros": ["accelerator execution time: Time spent executing on the "
                           "accelerator. This is normally measured by the actual hardware "
                           "library."],
    "cpu_micros": ["cpu execution time: The time from the start to the end of the operation. "
                   "It's the sum of actual cpu run time plus the time that it spends waiting "
                   "if part of computation is launched asynchronously."],
}

# (select key, legend) in the order tfprof lays out the columns.
_COLUMNS = [("params", "# parameters"), ("float_ops", "# float_ops"),
            ("bytes", "requested bytes"), ("peak_bytes", "peak bytes"),
            ("residual_bytes", "residual bytes"), ("output_bytes", "output bytes"),
            ("micros", "total execution time | accelerator execution time | cpu execution "
                       "time"),
            ("accelerator_micros", "accelerator execution time"),
            ("cpu_micros", "cpu execution time"), ("device", "assigned devices"),
            ("op_types", "op types"), ("occurrence", "op count (run|defined)"),
            ("input_shapes", "input shapes")]

_OPTION_KEYS = [("max_depth", 0), ("min_bytes", 0), ("min_peak_bytes", 0),
                ("min_residual_bytes", 0), ("min_output_bytes", 0), ("min_micros", 0),
                ("min_accelerator_micros", 0), ("min_cpu_micros", 0), ("min_params", 0),
                ("min_float_ops", 0), ("min_occurrence", 0), ("step", -1), ("order_by", ""),
                ("account_type_regexes", []), ("start_name_regexes", []),
                ("trim_name_regexes", []), ("show_name_regexes", []),
                ("hide_name_regexes", []), ("account_displayed_op_only", False),
                ("select", [])]


def number(n: int) -> str:
    """2762 -> "2.76k", as tfprof abbreviates counts."""
    for scale, suffix in ((1e9, "b"), (1e6, "m"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:.2f}{suffix}"
    return str(n)


def memory(n: int) -> str:
    if n < 1000:
        return f"{n}B"
    return f"{n / 1e3:.2f}KB" if n < 1000000 else f"{n / 1e6:.2f}MB"


def time(micros: int) -> str:
    if micros < 1000:
        return f"{micros}us"
    return f"{micros / 1e3:.2f}ms" if micros < 1000000 else f"{micros / 1e6:.2f}sec"


def _dims_text(dims) -> str:
    return "x".join(str(d) for d in dims)


def _pair(node, key: str, fmt) -> str:
    own = fmt(node.own(key)) if node.account else "--"
    return f"{own}/{fmt(node.total[key])}"


def _columns(node, select) -> list[str]:
    """The node's entries for the selected columns (tfprof's FormatNode)."""
    info = []
    if "params" in select:
        if node.stats.shape:
            info.append(_dims_text(node.stats.shape))
        info.append(_pair(node, "parameters", number) + " params")
    if "float_ops" in select:
        info.append(_pair(node, "float_ops", number) + " flops")
    for key, stat in (("bytes", "requested_bytes"), ("peak_bytes", "peak_bytes"),
                      ("output_bytes", "output_bytes")):
        if key in select:
            info.append(_pair(node, stat, memory))
    if "residual_bytes" in select:
        info.append(f"{'0B' if node.account else '--'}/0B")
    accelerator = node.own("exec_micros") - node.own("cpu_exec_micros")
    total_accelerator = node.total["exec_micros"] - node.total["cpu_exec_micros"]
    accel = f"{time(accelerator) if node.account else '--'}/{time(total_accelerator)}"
    if "micros" in select:
        info += [_pair(node, "exec_micros", time), accel, _pair(node, "cpu_exec_micros", time)]
    else:
        if "accelerator_micros" in select:
            info.append(accel)
        if "cpu_micros" in select:
            info.append(_pair(node, "cpu_exec_micros", time))
    return info + _attribute_columns(node, select)


def _attribute_columns(node, select) -> list[str]:
    info = []
    if "device" in select and node.stats.devices:
        info.append("|".join(node.stats.devices))
    if "op_types" in select:
        info.append("|".join(node.stats.op_types or ["_kTFScopeParent"]))
    if "occurrence" in select:
        runs = f"{node.own('run_count') if node.account else '--'}/{node.total['run_count']}"
        defined = f"{1 if node.account else '--'}/{node.definitions}"
        info.append(f"{runs}|{defined}")
    if "input_shapes" in select:
        info.append("|".join(f"{i}:{_dims_text(d)}"
                             for i, d in sorted(node.stats.input_shapes.items())))
    return info


def node_line(node, opts: dict) -> str:
    """"name (column, column, ...)" of one node."""
    return f"{node.name} ({', '.join(_columns(node, set(opts['select'])))})"


def legend(opts: dict, view: str = "scope") -> str:
    """The Doc paragraph and the column header."""
    select = set(opts["select"])
    docs = [_VIEW_DOCS[view]]
    for key in sorted(select):
        docs += _SELECT_DOCS.get(key, [f"Unknown select: {key}"])
    header = " | ".join(name for key, name in _COLUMNS if key in select)
    return "\nDoc:\n" + "\n".join(docs) + "\n\nProfile:\nnode name | " + header + "\n"


def _options_text(opts: dict) -> str:
    lines = []
    for key, default in _OPTION_KEYS:
        value = opts.get(key, default)
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, (list, tuple)):
            value = ",".join(value)
        lines.append(f"{'-' + key:<28}{value}")
    output = opts.get("output", "stdout")
    kind, _, rest = output.partition(":")
    lines.append(f"{'-output':<28}{kind}:{rest}")
    return "\n".join(lines) + "\n"


def write(view: str, opts: dict, text: str) -> None:
    """Sends the report where `opts["output"]` says: "stdout" (with the options and
    banners), "file:outfile=path" (the report alone), or "none".

    Raises:
      InvalidArgumentError: an output kind other than these.
    """
    output = opts.get("output", "stdout")
    kind, _, rest = output.partition(":")
    if kind == "none":
        return
    if kind == "stdout":
        sys.stdout.write("\n=========================Options=============================\n"
                         + _options_text(opts)
                         + "\n==================Model Analysis Report======================\n"
                         + text
                         + "\n======================End of Report==========================\n")
        sys.stdout.flush()
        return
    if kind == "file" and rest.startswith("outfile="):
        with open(rest[len("outfile="):], "w", encoding="utf-8") as f:
            f.write(text)
        return
    raise errors.InvalidArgumentError(None, None, f"Unsupported output: {output}")


# ---- the op view ---------------------------------------------------------------------------

_OP_STATS = {"float_ops": ("float_ops", "float_ops", number),
             "params": ("parameters", "params", number),
             "bytes": ("requested_bytes", "", memory),
             "micros": ("exec_micros", "", time),
             "occurrence": ("run_count", "", str)}


def op_view(nodes: dict, opts: dict):
    """(MultiGraphNodeProto, report text) of the nodes aggregated per op type.

    As tfprof's op view, each op type is the child of the one before it in the chosen
    order, with totals of itself and all that follow; a line shows its figure and the
    shares "(of this and the rest, of this alone)".
    """
    select = [s for s in opts["select"] if s in _OP_STATS] or ["micros"]
    regexes = opts["account_type_regexes"]
    groups: dict[str, list] = {}
    for stats in nodes.values():
        if regexes == [".*"] or any(re.fullmatch(r, t) for r in regexes
                                    for t in stats.op_types):
            groups.setdefault(stats.op_types[0], []).append(stats)
    order_stat = _OP_STATS.get(opts["order_by"], (None,))[0]
    rows = []
    for op_type, members in groups.items():
        sums = {k: sum(getattr(m, k) for m in members) for k in _OP_SUMS}
        if sums["float_ops"] < opts.get("min_float_ops", 0) or \
                sums["parameters"] < opts.get("min_params", 0):
            continue
        rows.append((op_type, sums, sorted(members, key=lambda m: m.name)))
    rows.sort(key=lambda r: (-r[1][order_stat] if order_stat else 0, r[0]))
    return _op_proto(rows), _op_text(rows, select, opts)


# the figures an op type sums over its nodes; all but run_count are also proto fields, with
# their total_* (the type's and those after it in the op view's order)
_OP_SUMS = ("float_ops", "parameters", "requested_bytes", "peak_bytes", "output_bytes",
            "exec_micros", "cpu_exec_micros", "run_count")
_OP_FIELDS = _OP_SUMS[:-1]


def _graph_node(stats) -> tfprof_output_pb2.GraphNodeProto:
    proto = tfprof_output_pb2.GraphNodeProto(name=stats.name, total_definition_count=1,
                                             run_count=stats.run_count,
                                             total_run_count=stats.run_count)
    for k in _OP_FIELDS:
        setattr(proto, k, getattr(stats, k))
        setattr(proto, "total_" + k, getattr(stats, k))
    for index, dims in stats.input_shapes.items():
        for d in dims:
            proto.input_shapes[index].dim.add(size=d)
    return proto


def _op_proto(rows) -> tfprof_output_pb2.MultiGraphNodeProto:
    root = tfprof_output_pb2.MultiGraphNodeProto(name="_TFProfRoot")
    parent, totals = root, dict.fromkeys(_OP_FIELDS, 0)
    for _, sums, _ in rows:
        for k in totals:
            totals[k] += sums[k]
    for k in _OP_FIELDS:
        setattr(root, "total_" + k, totals[k])
    for op_type, sums, members in rows:
        node = parent.children.add(name=op_type)
        for k in _OP_FIELDS:
            setattr(node, k, sums[k])
            setattr(node, "total_" + k, totals[k])
        node.graph_nodes.extend(_graph_node(m) for m in members)
        for k in totals:
            totals[k] -= sums[k]
        parent = node
    return root


def _op_text(rows, select, opts) -> str:
    lines = [legend(opts, "op")]
    grand = {key: sum(r[1][_OP_STATS[key][0]] for r in rows) for key in select}
    remaining = dict(grand)
    for op_type, sums, _ in rows:
        parts = []
        for key in select:
            stat, word, fmt = _OP_STATS[key]
            value, total = sums[stat], grand[key] or 1
            shown = f"{fmt(value):>5}" + (f" {word}" if word else "")
            parts.append(f"{shown} ({100.0 * remaining[key] / total:.2f}%, "
                         f"{100.0 * value / total:.2f}%)")
            remaining[key] -= value
        lines.append(f"{op_type:<25}{', '.join(parts)}\n")
    return "".join(lines)
