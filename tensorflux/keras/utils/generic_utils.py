"""`keras.utils.generic_utils` (Keras 2's module path): Progbar and the custom-object
scope."""

from tensorflux.keras.utils import (  # noqa: F401
    CustomObjectScope,
    Progbar,
    custom_object_scope,
    get_custom_objects,
)
