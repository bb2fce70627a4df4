"""The loops as a library; the CLI commands only parse options and print.

* :mod:`rlstream.pipeline.batch`: logs -> ingest -> grade -> profile -> curate, on files
  (``rlstream ingest|grade|profile|curate``, ``improve run``, ``demo --quick``);
* :mod:`rlstream.pipeline.demo`: the whole loop, sample logs -> ... -> train -> evaluate ->
  gate -> promote -> lineage (``rlstream demo``).
"""

from rlstream.pipeline.batch import BatchReport, NullReport, run_batch
from rlstream.pipeline.demo import DemoConfig, DemoResult, run_demo
from rlstream.pipeline.stages import NullStages, Stages

__all__ = [
    "BatchReport",
    "DemoConfig",
    "DemoResult",
    "NullReport",
    "NullStages",
    "Stages",
    "run_batch",
    "run_demo",
]
