"""Seeded, realistic sample production logs with a truth file (tests, demo, benchmarks)."""

from rlstream.sampledata.generate import DOMAINS, generate_transcripts
from rlstream.sampledata.truth import SampleManifest, Truth
from rlstream.sampledata.write import write_sample_logs

__all__ = ["DOMAINS", "SampleManifest", "Truth", "generate_transcripts", "write_sample_logs"]
