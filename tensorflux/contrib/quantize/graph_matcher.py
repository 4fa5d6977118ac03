"""Op-type patterns over a graph, as contrib.quantize matches layers: an OpTypePattern
names op types ("Conv2D|MatMul", "*" for any) and optionally the patterns of its inputs
(in order, or in any order with `ordered_inputs=False`); a OneofPattern is the first of
its alternatives that matches. A pattern object met twice in one match must stand for the
same op both times. MatchResult gives the op and tensor each pattern matched."""

from __future__ import annotations

import itertools


class Pattern:
    """The base of the pattern kinds."""


class OpTypePattern(Pattern):
    """Matches an op of one of the types `op_type` ("A|B", "*": any) whose inputs (when
    `inputs` is given: same count) match `inputs` ("*" entries stand for any op)."""

    def __init__(self, op_type, name=None, inputs=None, ordered_inputs=True):
        self._op_type = op_type
        self._name = name
        self._types = None if op_type == "*" else frozenset(op_type.split("|"))
        self._inputs = None if inputs is None else [
            p if isinstance(p, Pattern) else OpTypePattern(p) for p in inputs]
        self._ordered_inputs = ordered_inputs

    @property
    def name(self):
        return self._name


class OneofPattern(Pattern):
    """Matches what the first matching one of `sub_patterns` matches."""

    def __init__(self, sub_patterns):
        self._sub_patterns = list(sub_patterns)


class MatchResult:
    """The ops and tensors matched by the patterns of one match."""

    def __init__(self):
        self._matched = {}
        self._by_name = {}

    def _key(self, pattern):
        return self._by_name.get(pattern) if isinstance(pattern, str) else pattern

    def get_op(self, pattern):
        found = self._matched.get(self._key(pattern))
        return None if found is None else found[0]

    def get_tensor(self, pattern):
        found = self._matched.get(self._key(pattern))
        return None if found is None else found[1]


class GraphMatcher:
    """Matches `pattern` against ops: `match_op(op)` (a MatchResult or None) and
    `match_graph(graph)` (the matches rooted at each op, in creation order)."""

    def __init__(self, pattern):
        self._pattern = pattern

    def _match(self, pattern, op, tensor, matched):
        if isinstance(pattern, OneofPattern):
            for sub in pattern._sub_patterns:
                trial = dict(matched)
                if self._match(sub, op, tensor, trial):
                    matched.clear()
                    matched.update(trial)
                    return True
            return False
        if pattern in matched:
            return matched[pattern][0] is op
        if pattern._types is not None and op.type not in pattern._types:
            return False
        matched[pattern] = (op, tensor)
        if pattern._inputs is None:
            return True
        if len(op.inputs) != len(pattern._inputs):
            return False
        orders = [list(op.inputs)] if pattern._ordered_inputs else \
            [list(p) for p in itertools.permutations(op.inputs)]
        for inputs in orders:
            trial = dict(matched)
            if all(self._match(p, t.op, t, trial)
                   for p, t in zip(pattern._inputs, inputs, strict=True)):
                matched.clear()
                matched.update(trial)
                return True
        return False

    def match_op(self, op):
        matched = {}
        tensor = op.outputs[0] if op.outputs else None
        if not self._match(self._pattern, op, tensor, matched):
            return None
        result = MatchResult()
        result._matched = matched
        result._by_name = {p.name: p for p in matched if getattr(p, "name", None)}
        return result

    def match_graph(self, graph):
        for op in graph.get_operations():
            result = self.match_op(op)
            if result is not None:
                yield result
