"""Lookups by name shared by regularizers and constraints: `get`, `serialize`,
`deserialize` over a table of classes."""

from __future__ import annotations


def make_lookup(kind: str, table: dict):
    """(get, serialize, deserialize) for objects of `kind` named in `table`."""

    def deserialize(config, custom_objects=None):
        cls = (custom_objects or {}).get(config["class_name"]) or table.get(
            config["class_name"])
        if cls is None:
            raise ValueError(f"Unknown {kind}: {config['class_name']}")
        return cls(**config.get("config", {}))

    def get(identifier):
        if identifier is None:
            return None
        if isinstance(identifier, dict):
            return deserialize(identifier)
        if isinstance(identifier, str):
            if identifier not in table:
                raise ValueError(f"Unknown {kind}: {identifier}")
            return table[identifier]()
        if callable(identifier):
            return identifier
        raise ValueError(f"Could not interpret {kind} identifier: {identifier}")

    def serialize(obj) -> dict:
        return {"class_name": type(obj).__name__, "config": obj.get_config()}

    get.__doc__ = (f"A {kind} from a name, a config dict or a callable (None stays None).\n\n"
                   "    Raises:\n      ValueError: an unknown name or identifier.")
    return get, serialize, deserialize
