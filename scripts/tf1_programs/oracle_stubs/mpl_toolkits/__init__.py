"""With the no-op matplotlib: `from mpl_toolkits.mplot3d import Axes3D` (MorvanZhou's 404, 503)."""
import sys
import types

from matplotlib import _Anything

mplot3d = types.ModuleType("mpl_toolkits.mplot3d")
mplot3d.Axes3D = _Anything()
sys.modules["mpl_toolkits.mplot3d"] = mplot3d
