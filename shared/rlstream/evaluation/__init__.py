"""Evaluation: baseline vs candidate on held-out prompts, a paired test and a promotion gate.

``run_evaluation(request)`` samples both models with the same decoding on the same
held-out prompts, grades every sample with the grader's own code, and computes pass@1,
pass@k, mean reward, guard metrics and the paired gain over prompts (its small-sample-valid
test, and a bootstrap CI for display). ``decide(report, gate)`` says ``promote`` only on a
proven gain over at least ``min_prompts`` prompts without a possible regression,
``insufficient`` below that many prompts, else ``reject``; ``write_report`` writes
report.json, report.md and the plots.
"""

from rlstream.evaluation.gate import decide
from rlstream.evaluation.models import (
    Decision,
    Decoding,
    Delta,
    EvalRequest,
    EvaluationReport,
    GateConfig,
    GateDecision,
    GuardRule,
    ModelRef,
    ModelSummary,
    PromptResult,
    Sample,
)
from rlstream.evaluation.prompts import (
    HeldoutLeakError,
    HeldoutPrompt,
    load_heldout,
    released_task_keys,
    training_task_keys,
)
from rlstream.evaluation.report import write_report
from rlstream.evaluation.run import run_evaluation

__all__ = [
    "Decision",
    "Decoding",
    "Delta",
    "EvalRequest",
    "EvaluationReport",
    "GateConfig",
    "GateDecision",
    "GuardRule",
    "HeldoutLeakError",
    "HeldoutPrompt",
    "ModelRef",
    "ModelSummary",
    "PromptResult",
    "Sample",
    "decide",
    "load_heldout",
    "released_task_keys",
    "run_evaluation",
    "training_task_keys",
    "write_report",
]
