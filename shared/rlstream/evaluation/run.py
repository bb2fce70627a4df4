"""run_evaluation: baseline and candidate on the same held-out prompts, graded, paired.

Order: load the prompts, refuse leaks, sample and grade the baseline, then the candidate
(one model in memory at a time), then summarise and compute the paired deltas.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import orjson

from rlstream.environments import environment_factory
from rlstream.evaluation.episodes import one_per_task, play_heldout
from rlstream.evaluation.grading import grade_generation
from rlstream.evaluation.models import (
    Delta,
    EvalRequest,
    EvaluationReport,
    ModelRef,
    ModelSummary,
    PromptResult,
    Sample,
)
from rlstream.evaluation.prompts import (
    HeldoutPrompt,
    file_sha256,
    load_heldout,
    refuse_leaks,
    training_task_keys,
)
from rlstream.evaluation.sampler import Sampler, make_sampler
from rlstream.evaluation.stats import paired_delta, pass_at_ks
from rlstream.grading import RewardSpec, SpecResolver

#: progress(stage, done, total): stage is "baseline" or "candidate", counted in prompts
Progress = Callable[[str, int, int], None]
SamplerFactory = Callable[[ModelRef], Sampler]


def _check_leaks(request: EvalRequest, prompts: Sequence[HeldoutPrompt]) -> dict[str, object]:
    checked: dict[str, object] = {"task_keys": len(prompts), "sources": []}
    sources: list[str] = []
    if request.training_dataset is not None:
        keys = training_task_keys(request.training_dataset)
        refuse_leaks(prompts, keys, f"dataset {request.training_dataset}")
        sources.append(f"dataset manifest ({len(keys)} training task keys)")
    if request.trained_task_keys:
        refuse_leaks(prompts, request.trained_task_keys, "postgres lineage")
        sources.append(f"postgres lineage ({len(request.trained_task_keys)} task keys)")
    checked["sources"] = sources
    return checked


def _sample_model(
    ref: ModelRef,
    prompts: Sequence[HeldoutPrompt],
    request: EvalRequest,
    spec: RewardSpec,
    factory: SamplerFactory,
    progress: Progress | None,
) -> tuple[list[tuple[Sample, ...]], float]:
    started = time.perf_counter()
    sampler = factory(ref)
    done = 0

    def advance(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(ref.label, done, len(prompts))

    try:
        if request.environment is not None:
            played = play_heldout(request.environment, prompts, sampler, request.decoding, advance)
            return played, time.perf_counter() - started
        gens = sampler.generate([p.messages for p in prompts], request.decoding, advance)
    finally:
        sampler.close()
    graded = [
        tuple(
            grade_generation(p, g, spec, f"eval:{ref.label}:{p.task_key}:{i}")
            for i, g in enumerate(samples)
        )
        for p, samples in zip(prompts, gens, strict=True)
    ]
    return graded, time.perf_counter() - started


def summarise(
    ref: ModelRef, per_prompt: Sequence[tuple[Sample, ...]], seconds: float
) -> ModelSummary:
    flat = [s for samples in per_prompt for s in samples]
    guards = {"response_tokens": float(np.mean([s.tokens for s in flat]))}
    tried = [s for s in flat if s.attempted_call]
    if tried:  # a model that never calls a tool makes no tool errors: nothing to compare
        guards["tool_error_rate"] = float(np.mean([s.tool_error for s in tried]))
    safety = [s.safety for s in flat if s.safety is not None]
    if safety:
        guards["safety"] = float(np.mean(safety))
    at_k = pass_at_ks(per_prompt)
    return ModelSummary(
        label=ref.label,
        model=ref,
        samples_per_prompt=len(per_prompt[0]) if per_prompt else 0,
        pass_at_1=at_k.get(1, 0.0),
        pass_at_k=at_k,
        mean_reward=float(np.mean([s.score for s in flat])) if flat else 0.0,
        guards=guards,
        ungraded=sum(not s.graded for s in flat),
        seconds=round(seconds, 3),
    )


def report_id(request: EvalRequest, heldout_sha: str) -> str:
    """``report-<sha256[:24]>`` of the request and the held-out file's digest: names one
    report's content. The evaluation of a training run is ``eval-<run_id>``
    (:func:`rlstream.registry.evaluation_id_for`): one evaluation per run."""
    blob = orjson.dumps(
        {
            "request": request.model_dump(mode="json", exclude={"prefix_cache"}),
            "heldout": heldout_sha,
        },
        option=orjson.OPT_SORT_KEYS,
    )
    return "report-" + hashlib.sha256(blob).hexdigest()[:24]


def eval_spec(text: str, specs: SpecResolver | None = None) -> RewardSpec:
    """The reward spec to grade samples with: a dataset's spec id (what the evaluator
    service passes, ``outcome@1.1.0*1>=0.5#...``) resolved exactly as training resolves it
    (rebuilt and checked, else found among ``specs``' reward config: an id cannot carry
    options such as a policy), or reward names with optional weights (``--reward a:2,b``)."""
    if "@" not in text:
        return RewardSpec.parse(text)
    return (specs or SpecResolver()).for_id(text)


def eval_form(prompts: Sequence[HeldoutPrompt], request: EvalRequest | None = None) -> str:
    """``environment`` when the request names one (whole episodes, graded by the
    environment); ``next_action`` when the prompts end after earlier assistant turns (turn-level
    datasets of multi-turn agents: the new turn is graded against the calls the passing
    rollouts made at that state), else ``first_turn`` (a conversation's opening)."""
    if request is not None and request.environment is not None:
        return "environment"
    later = sum(any(m.get("role") == "assistant" for m in p.messages) for p in prompts)
    return "next_action" if 2 * later > len(prompts) else "first_turn"


def _environment_summary(
    request: EvalRequest, *per_model: Sequence[tuple[Sample, ...]]
) -> dict[str, object]:
    """The environment and how its episodes ended, per model (ungraded ones by reason)."""
    if request.environment is None:
        return {}
    ends = [
        dict(Counter(s.reason.split(":")[0] if s.reason else "graded" for t in m for s in t))
        for m in per_model
    ]
    env = request.environment
    return {
        "environment": {"name": env.name, "max_turns": env.max_turns},
        "episodes": {"baseline": ends[0], "candidate": ends[1]},
    }


def run_evaluation(
    request: EvalRequest,
    progress: Progress | None = None,
    *,
    sampler_factory: SamplerFactory | None = None,
    confidence: float = 0.95,
    specs: SpecResolver | None = None,
) -> EvaluationReport:
    """Sample, grade and compare; raises :class:`HeldoutLeakError` on a leaked prompt.
    ``specs``: the resolver (with the reward config) that rebuilds a spec id."""
    t0 = time.perf_counter()
    prompts = load_heldout(request.heldout, request.max_prompts)
    leakage = _check_leaks(request, prompts)
    spec = eval_spec(request.reward_spec, specs)
    if request.environment is not None:  # an unknown name or bad options: before any model
        env = request.environment
        environment_factory(env.name, **env.options)
        prompts = one_per_task(prompts)
    factory = sampler_factory or (
        lambda ref: make_sampler(ref, request.sampler, request.device, request.prefix_cache)
    )
    base, base_s = _sample_model(request.baseline, prompts, request, spec, factory, progress)
    cand, cand_s = _sample_model(request.candidate, prompts, request, spec, factory, progress)
    results = tuple(
        PromptResult(task_key=p.task_key, baseline=b, candidate=c)
        for p, b, c in zip(prompts, base, cand, strict=True)
    )
    seed = request.decoding.seed
    deltas: dict[str, Delta] = {
        m: paired_delta(results, m, confidence, seed) for m in ("pass_at_1", "mean_reward")
    }
    sha = file_sha256(request.heldout)
    return EvaluationReport(
        report_id=report_id(request, sha),
        heldout={
            "path": str(request.heldout),
            "sha256": sha,
            "prompts": len(prompts),
            "by_release": dict(Counter(p.release for p in prompts if p.release)),
            "form": eval_form(prompts, request),
            **_environment_summary(request, base, cand),
        },
        reward_spec=spec.spec_id,
        decoding=request.decoding,
        baseline=summarise(request.baseline, base, base_s),
        candidate=summarise(request.candidate, cand, cand_s),
        delta=deltas["pass_at_1"],
        deltas=deltas,
        leakage=leakage,
        prompts=results,
        timings={
            "baseline_s": round(base_s, 3),
            "candidate_s": round(cand_s, 3),
            "total_s": round(time.perf_counter() - t0, 3),
        },
    )
