"""Lineage: from a model back to the conversations it learnt from.

:func:`build_tree` renders the walk as a tree (the ``rlstream lineage`` command);
:func:`record_release` stores a batch-curated dataset so that walk reaches its
conversations on the embedded Postgres too.
"""

from rlstream.lineage.record import record_release
from rlstream.lineage.tree import LineageTree, TreeNode, build_tree, source_label

__all__ = ["LineageTree", "TreeNode", "build_tree", "record_release", "source_label"]
