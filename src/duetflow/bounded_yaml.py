"""``yaml.safe_load`` with a bound on what aliases can expand to.

``safe_load`` refuses arbitrary Python objects but not the *billion laughs*: nine anchors that
each list the previous one nine times are a few hundred bytes of YAML and a billion strings once
anything walks the result (validation, ``repr``, ``json.dumps``). :func:`load_yaml` composes the
document's node graph first (aliases are shared nodes there, so this is cheap), counts how many
nodes the fully expanded document would have and refuses it beyond ``max_nodes``, as well as a
recursive alias (``&a [*a]``), before any Python object is built.
"""

from __future__ import annotations

from typing import Any

import yaml

#: Nodes a configuration or sidecar may expand to: far above any real one (a few hundred).
MAX_NODES = 100_000


class YamlBombError(yaml.YAMLError):
    """The document expands (through aliases) beyond the allowed size, or refers to itself."""


def _expanded_size(root: yaml.Node, limit: int) -> int:
    """Number of nodes of the document with every alias expanded; stops counting past ``limit``."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise YamlBombError("a recursive alias (a node that contains itself)")
        active.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            for child in node.value:
                total += size(child)
                if total > limit:
                    break
        elif isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                total += size(k) + size(v)
                if total > limit:
                    break
        active.discard(key)
        sizes[key] = total
        return total

    return size(root)


def load_yaml(text: str, *, max_nodes: int = MAX_NODES) -> Any:
    """Parse one YAML document like ``yaml.safe_load``, refusing alias bombs.

    Raises :class:`YamlBombError` (a ``yaml.YAMLError``) when the expanded document would have
    more than ``max_nodes`` nodes, an alias refers to its own ancestor or the nesting is deeper
    than Python's recursion limit; other YAML errors as ``safe_load`` does.
    """
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        n = _expanded_size(node, max_nodes)
        if n > max_nodes:
            raise YamlBombError(
                f"the document expands (through aliases) to more than {max_nodes} nodes"
            )
        return loader.construct_document(node)
    except RecursionError:
        raise YamlBombError("the document is nested too deeply") from None
    finally:
        loader.dispose()
