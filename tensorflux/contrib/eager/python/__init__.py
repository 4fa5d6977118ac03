"""`tensorflow.contrib.eager.python`: holds `tfe` (see tensorflux/contrib/eager)."""
