"""Rendezvous keys: the name of one Send/Recv transfer of one step (paper §3.3).

    src_device;src_incarnation;dst_device;tensor_name;frame_id:iter_id

e.g. `/job:localhost/replica:0/task:0/device:CPU:0;0000000000000001;
/job:localhost/replica:0/task:0/device:CPU:1;edge_5_add;0:0`. The incarnation (a random
64-bit number per device process) keeps a restarted task's tensors apart; the frame and
iteration keep loop iterations apart.

The key is shared by the Send/Recv kernels (kernels/cpu/runtime_ops.py), the compiled
schedules and the rendezvous implementations (runtime/rendezvous.py), so it lives here, in
the lowest layer that needs it.
"""

from __future__ import annotations

from typing import NamedTuple

from tensorflux.framework import errors


class ParsedKey(NamedTuple):
    src_device: str
    src_incarnation: int
    dst_device: str
    edge_name: str
    frame_iter: tuple[int, int]


def create_key(src_device: str, src_incarnation: int, dst_device: str, name: str,
               frame_iter: tuple[int, int] = (0, 0)) -> str:
    # Incarnations are unsigned 64-bit numbers (an int attr may hold one as negative).
    return (f"{src_device};{src_incarnation & 0xFFFFFFFFFFFFFFFF:016x};{dst_device};{name};"
            f"{frame_iter[0]}:{frame_iter[1]}")


def parse_key(key: str) -> ParsedKey:
    """Splits a rendezvous key; InvalidArgumentError if it is malformed."""
    parts = key.split(";")
    try:
        if len(parts) != 5:
            raise ValueError
        frame, it = parts[4].split(":")
        return ParsedKey(parts[0], int(parts[1], 16), parts[2], parts[3], (int(frame), int(it)))
    except ValueError:
        raise errors.InvalidArgumentError(None, None, f"Invalid rendezvous key: {key}") from None
