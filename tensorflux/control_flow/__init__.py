"""The control-flow builders on top of the control-flow ops (ops/control_flow_ops.py):
`tf.cond`, `tf.case`, `tf.while_loop`, `tf.group`, the cond/while contexts, gradients
through conds and loops, and the functional ops (map_fn, scan, foldl, foldr)."""
