"""`tf.contrib.graph_editor`: editing an existing graph in place. Rerouting re-plugs
tensors (the consumers of one tensor read another: `reroute_ts`, `swap_ts`,
`reroute_inputs`/`outputs`, `connect`, `bypass`, `detach`); transforming copies a subgraph
(`copy`, `copy_with_input_replacements`, `graph_replace`, `Transformer`). Subgraphs are
SubGraphViews (`sgv`/`make_view`) of ops picked by `select_ops`, `select_ts`, graph walks
(`get_forward_walk_ops`, `get_backward_walk_ops`, ...) or filters.

Edits change ops that Sessions may have run already: each one invalidates the Sessions'
cached steps (the graph's mutation version), so the next run sees the edited graph (TF
asks programs to edit offline; tensorflux does not need it). Copies of ops inside while
loops are made without their loop context."""

from tensorflux.contrib.graph_editor import edit, reroute, select, subgraph, transform, util
from tensorflux.contrib.graph_editor.edit import *  # noqa: F401,F403
from tensorflux.contrib.graph_editor.reroute import *  # noqa: F401,F403
from tensorflux.contrib.graph_editor.select import *  # noqa: F401,F403
from tensorflux.contrib.graph_editor.subgraph import *  # noqa: F401,F403
from tensorflux.contrib.graph_editor.transform import *  # noqa: F401,F403
from tensorflux.contrib.graph_editor.util import *  # noqa: F401,F403

# TF1's short aliases
ph = util.make_placeholder_from_dtype_and_shape
sgv = subgraph.make_view
sgv_scope = subgraph.make_view_from_scope

__all__ = (["edit", "reroute", "select", "subgraph", "transform", "util", "ph", "sgv",
            "sgv_scope"] + edit.__all__ + reroute.__all__ + select.__all__ + subgraph.__all__
           + transform.__all__ + util.__all__)
