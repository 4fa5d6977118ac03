"""`tensorflux-freeze`: a frozen GraphDef (variables turned into constants) from a
SavedModel, or from a GraphDef and a checkpoint, as TensorFlow's `freeze_graph` tool makes.

    tensorflux-freeze --input_saved_model_dir DIR [--saved_model_tags serve] \\
        --output_node_names y --output_graph frozen.pb
    tensorflux-freeze --input_graph graph.pb(txt) --input_checkpoint model.ckpt-100 \\
        --output_node_names y --output_graph frozen.pb [--optimize_for_inference \\
        --input_node_names x]

With `--input_graph`, the variables' values are read straight from the checkpoint (a
tensorflux checkpoint or a TensorFlow bundle), keyed by the variable node names; with
`--input_meta_graph` the meta graph's Saver restores them. `--optimize_for_inference`
also removes training-only nodes and folds batch norms (tensorflux/graph_util/inference.py).
The output is a binary GraphDef, which TensorFlow's `tf.import_graph_def` reads.

Exit codes: 0 on success, 2 for bad flags, 1 when the inputs cannot be read or frozen.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from google.protobuf import message, text_format

from tensorflux.checkpoint import open_checkpoint
from tensorflux.framework import errors
from tensorflux.framework import graph as graph_lib
from tensorflux.framework.importer import import_graph_def
from tensorflux.graph_util import graph_util_impl, inference
from tensorflux.protos import graph_pb2
from tensorflux.runtime.session import Session
from tensorflux.saved_model import loader
from tensorflux.train import saver as saver_lib

__all__ = ["freeze_graph", "main"]


def _names(csv: str) -> list[str]:
    return [n.strip() for n in (csv or "").split(",") if n.strip()]


def read_graph_def(path: str) -> graph_pb2.GraphDef:
    """A GraphDef from a binary or text file.

    Raises:
      IOError: the file is missing or parses as neither.
    """
    with open(path, "rb") as f:
        data = f.read()
    graph_def = graph_pb2.GraphDef()
    try:
        graph_def.ParseFromString(data)
        if graph_def.node or not data:
            return graph_def
    except message.DecodeError:
        pass
    try:
        return text_format.Parse(data.decode("utf-8"), graph_pb2.GraphDef())
    except (UnicodeDecodeError, text_format.ParseError) as e:
        raise OSError(f"Cannot parse file {path} as a binary or text GraphDef: {e}") from None


def _from_session(sess, outputs, allow, deny, initializer_nodes):
    if initializer_nodes:
        sess.run(initializer_nodes)
    return graph_util_impl.convert_variables_to_constants(
        sess, sess.graph.as_graph_def(), outputs, allow, deny)


def _from_checkpoint(graph_def, checkpoint, outputs, allow, deny):
    with open_checkpoint(checkpoint) as reader:
        def read(nodes):
            return [reader.get_tensor(n.name) for n in nodes]

        return graph_util_impl.freeze_variables(graph_def, outputs, read, allow, deny)


def freeze_graph(output_node_names, output_graph=None, input_saved_model_dir=None,
                 saved_model_tags="serve", input_graph=None, input_checkpoint=None,
                 input_meta_graph=None, clear_devices=True, initializer_nodes="",
                 variable_names_whitelist="", variable_names_blacklist="",
                 optimize_for_inference=False, input_node_names=""):
    """Freezes a model (see the module docstring); writes `output_graph` if given.

    Returns:
      The frozen GraphDef.

    Raises:
      ValueError: no model given, or a checkpoint without a graph.
      IOError, tf.errors.OpError: an input cannot be read.
    """
    outputs = _names(output_node_names)
    if not outputs:
        raise ValueError("--output_node_names is required")
    allow = _names(variable_names_whitelist) or None
    deny = _names(variable_names_blacklist) or None
    inits = _names(initializer_nodes)
    if input_saved_model_dir:
        with graph_lib.Graph().as_default() as g, Session(graph=g) as sess:
            loader.load(sess, _names(saved_model_tags), input_saved_model_dir,
                        clear_devices=clear_devices)
            frozen = _from_session(sess, outputs, allow, deny, inits)
    elif input_meta_graph:
        if not input_checkpoint:
            raise ValueError("--input_meta_graph needs --input_checkpoint")
        with graph_lib.Graph().as_default() as g, Session(graph=g) as sess:
            saver = saver_lib.import_meta_graph(input_meta_graph, clear_devices=clear_devices)
            if saver is not None:
                saver.restore(sess, input_checkpoint)
            frozen = _from_session(sess, outputs, allow, deny, inits)
    elif input_graph:
        graph_def = read_graph_def(input_graph)
        if clear_devices:
            for node in graph_def.node:
                node.device = ""
        if input_checkpoint:
            frozen = _from_checkpoint(graph_def, input_checkpoint, outputs, allow, deny)
        else:  # nothing to restore: variables must be initialized by `initializer_nodes`
            with graph_lib.Graph().as_default() as g, Session(graph=g) as sess:
                import_graph_def(graph_def, name="")
                frozen = _from_session(sess, outputs, allow, deny, inits)
    else:
        raise ValueError("One of --input_saved_model_dir, --input_meta_graph or "
                         "--input_graph is required")
    if optimize_for_inference:
        frozen = inference.optimize_for_inference(frozen, _names(input_node_names), outputs)
    if output_graph:
        directory = os.path.dirname(os.path.abspath(output_graph))
        os.makedirs(directory, exist_ok=True)
        with open(output_graph, "wb") as f:
            f.write(frozen.SerializeToString(deterministic=True))
    return frozen


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tensorflux-freeze", description=__doc__.split("\n")[0])
    p.add_argument("--input_saved_model_dir", default="")
    p.add_argument("--saved_model_tags", default="serve",
                   help="comma-separated tag set of the MetaGraphDef to load")
    p.add_argument("--input_graph", default="", help="a GraphDef (.pb or .pbtxt)")
    p.add_argument("--input_binary", action="store_true",
                   help="accepted for freeze_graph's flags; the format is detected")
    p.add_argument("--input_checkpoint", default="")
    p.add_argument("--input_meta_graph", default="")
    p.add_argument("--output_node_names", required=True, help="comma-separated")
    p.add_argument("--output_graph", required=True, help="where to write the frozen GraphDef")
    p.add_argument("--clear_devices", type=lambda s: s.lower() in ("1", "true", "yes"),
                   default=True)
    p.add_argument("--initializer_nodes", default="")
    p.add_argument("--variable_names_whitelist", default="")
    p.add_argument("--variable_names_blacklist", default="")
    p.add_argument("--optimize_for_inference", action="store_true",
                   help="also drop training-only nodes and fold batch norms")
    p.add_argument("--input_node_names", default="", help="with --optimize_for_inference")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the tool; returns the exit code (see the module docstring)."""
    try:
        args = make_parser().parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    try:
        frozen = freeze_graph(
            args.output_node_names, args.output_graph, args.input_saved_model_dir,
            args.saved_model_tags, args.input_graph, args.input_checkpoint,
            args.input_meta_graph, args.clear_devices, args.initializer_nodes,
            args.variable_names_whitelist, args.variable_names_blacklist,
            args.optimize_for_inference, args.input_node_names)
    except ValueError as e:
        print(f"tensorflux-freeze: {e}", file=sys.stderr)
        return 2
    except (OSError, RuntimeError, AssertionError, errors.OpError) as e:
        print(f"tensorflux-freeze: {e}", file=sys.stderr)
        return 1
    consts = sum(n.op == "Const" for n in frozen.node)
    print(f"Wrote {args.output_graph}: {len(frozen.node)} nodes ({consts} constants).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
