"""write_report: report.json (figures + decision), report.md (for people) and the plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from rlstream.evaluation.models import EvaluationReport, GateConfig, GateDecision
from rlstream.evaluation.plots import diff_svg, passk_svg, rewards_svg
from rlstream.evaluation.stats import paired_delta

PLOTS = ("passk.svg", "diff_hist.svg", "rewards.svg")


def report_json(
    report: EvaluationReport,
    decision: GateDecision,
    gate: GateConfig | None = None,
    model_id: str | None = None,
) -> dict[str, Any]:
    """The report plus ``decision`` (promote | reject | insufficient), ``reasons``,
    ``model_id``, ``gate`` (its settings) and ``delta``: the gate metric's paired delta at
    the gate's confidence with the gate's test at ``min_effect``, as the decision saw it
    (named by ``gate_metric`` / ``gate_confidence`` beside it; ``deltas`` keeps every
    metric at the evaluation's confidence)."""
    g = gate or GateConfig()
    delta = paired_delta(report.prompts, g.metric, g.confidence, report.decoding.seed, g.min_effect)
    body = report.model_dump(mode="json")
    body["delta"] = delta.model_dump(mode="json")
    return {
        "decision": decision.decision,
        "reasons": list(decision.reasons),
        "model_id": model_id,
        "gate": g.model_dump(mode="json"),
        "gate_metric": g.metric,
        "gate_confidence": g.confidence,
        **body,
    }


def _cell(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _change(x: float | None, y: float | None) -> str:
    return "-" if x is None or y is None else f"{y - x:+.3f}"


def metric_rows(data: dict[str, Any]) -> list[tuple[str, float | None, float | None]]:
    """(metric, baseline, candidate) rows of a report.json body: report.md's table and the
    HTML page's (rlstream.reporting) are both drawn from these."""
    b, c = data["baseline"], data["candidate"]
    return [
        ("pass@1", b["pass_at_1"], c["pass_at_1"]),
        *(
            (f"pass@{k}", b["pass_at_k"][k], c["pass_at_k"].get(k, 0.0))
            for k in sorted(b["pass_at_k"], key=int)
            if k != "1"
        ),
        ("mean reward", b["mean_reward"], c["mean_reward"]),
        *(
            (f"guard: {k}", b["guards"].get(k), c["guards"].get(k))
            for k in sorted({*b["guards"], *c["guards"]})
        ),
    ]


def _md(data: dict[str, Any]) -> str:
    b, c, d = data["baseline"], data["candidate"], data["delta"]
    rows = metric_rows(data)
    table = "\n".join(f"| {n} | {_cell(x)} | {_cell(y)} | {_change(x, y)} |" for n, x, y in rows)
    reasons = "\n".join(f"- {r}" for r in data["reasons"])
    dec = data["decoding"]
    mode = "greedy" if dec["greedy"] else f"k={dec['k']}, temperature {dec['temperature']}"
    return f"""# Evaluation report {data["report_id"]}

**Decision: {data["decision"]}**{f" (model `{data['model_id']}`)" if data["model_id"] else ""}

{reasons}

Baseline `{b["model"]["label"]}`: {b["model"]["base"]}{" + " + b["model"]["adapter_dir"] if b["model"]["adapter_dir"] else ""}
Candidate `{c["model"]["label"]}`: {c["model"]["base"]}{" + " + c["model"]["adapter_dir"] if c["model"]["adapter_dir"] else ""}

{data["heldout"]["prompts"]} held-out prompts (`{data["heldout"]["path"]}`, sha256
`{data["heldout"]["sha256"][:16]}`{_by_release(data["heldout"])}), the same for both models; decoding: {mode},
max_new_tokens {dec["max_new_tokens"]}, seed {dec["seed"]}; reward spec `{data["reward_spec"]}`.
{_form_line(data["heldout"])}
Leakage check: {"; ".join(data["leakage"]["sources"]) or "no training lineage given"}.

| metric | baseline | candidate | change |
|---|---|---|---|
{table}

Paired {d["metric"]} gain (the gate metric) over prompts: mean {d["mean"]:+.3f}; {d["wins"]}
prompts better, {d["losses"]} worse, {d["ties"]} equal. Gate test: {d["test"]}, one-sided
p = {d["p_value"]:.3g} for "gain <= {d["margin"]:+.3f}" (promote needs p < {1 - d["confidence"]:.2g}
and at least {data["gate"]["min_prompts"]} prompts). {d["confidence"]:.0%} bootstrap CI, for
display only: [{d["ci_low"]:+.3f}, {d["ci_high"]:+.3f}] ({d["method"]}).

![pass@k](passk.svg) ![per-prompt difference](diff_hist.svg) ![rewards](rewards.svg)
"""


_FORMS = {
    "next_action": "Form: **next action**. Each prompt is a held-out conversation up to a turn "
    "(earlier calls and tool results included); only the generated turn is graded, against "
    "the calls the task's passing rollouts made at that point (the dataset is turn-level: "
    "whole multi-turn episodes cannot be graded from logs alone).",
    "first_turn": "Form: **first turn**. Each prompt is a held-out conversation's opening; "
    "the generated reply is graded by the reward spec.",
}


def _form_line(heldout: dict[str, Any]) -> str:
    form = str(heldout.get("form"))
    if form != "environment":
        return _FORMS.get(form, "")
    env = heldout.get("environment") or {}
    ends = heldout.get("episodes") or {}
    how = "; ".join(
        f"{who}: " + ", ".join(f"{n} {k}" for k, n in sorted(c.items())) for who, c in ends.items()
    )
    return (
        f"Form: **environment** `{env.get('name')}`. Each held-out task is played as whole "
        f"episodes (at most {env.get('max_turns')} model turns): the environment answers with "
        "tool results or the user's next turn and its reward grades the episode; task success "
        "is a reward of at least 1. Episodes the environment cannot grade (off-log, "
        f"ungraded truncation) count as ungraded, not failed. Episode ends: {how}."
    )


def _by_release(heldout: dict[str, Any]) -> str:
    """'; from releases abc123 (12), def456 (30)' for an accumulated held-out set."""
    counts = heldout.get("by_release") or {}
    if not counts:
        return ""
    return "; from releases " + ", ".join(f"`{k[:12]}` ({v})" for k, v in counts.items())


def write_report(
    report: EvaluationReport,
    decision: GateDecision,
    out_dir: Path,
    *,
    gate: GateConfig | None = None,
    model_id: str | None = None,
) -> dict[str, Any]:
    """Write report.json, report.md, passk.svg, diff_hist.svg and rewards.svg; return the
    JSON body."""
    out_dir.mkdir(parents=True, exist_ok=True)
    data = report_json(report, decision, gate, model_id)
    (out_dir / "report.json").write_bytes(
        orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n"
    )
    (out_dir / "report.md").write_text(
        _md(orjson.loads(orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS)))
    )
    metric = (gate or GateConfig()).metric
    (out_dir / "passk.svg").write_text(passk_svg(report))
    (out_dir / "diff_hist.svg").write_text(diff_svg(report, metric))
    (out_dir / "rewards.svg").write_text(rewards_svg(report))
    return data
