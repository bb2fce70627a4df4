"""The whole loop as a library: sample logs -> ingest -> grade -> curate -> train ->
evaluate -> gate -> promote -> lineage (``rlstream demo`` only parses and prints)."""

from rlstream.pipeline.demo import DemoConfig, DemoResult, run_demo
from rlstream.pipeline.stages import NullStages, Stages

__all__ = ["DemoConfig", "DemoResult", "NullStages", "Stages", "run_demo"]
