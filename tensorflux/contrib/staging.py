"""`tf.contrib.staging`: TF1's staging area (`StagingArea`, also
`data_flow_ops.StagingArea`); `MapStagingArea` lives beside it in
tensorflux/ops/staging_ops.py."""

from tensorflux.ops.staging_ops import MapStagingArea, StagingArea

__all__ = ["StagingArea", "MapStagingArea"]
