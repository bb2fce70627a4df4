"""next_steps.md: the exact commands to train on a released dataset.

No paths or timestamps: the text depends only on the curation result, so it hashes the
same wherever the dataset is written.
"""

from __future__ import annotations

from rlstream.curation.curate import CurationResult


def _pow2_at_most(x: int) -> int:
    p = 1
    while p * 2 <= x:
        p *= 2
    return p


def _openrlhf(prompts: int, samples: int = 8) -> str:
    if prompts == 0:
        return "No GRPO prompts were kept, so there is no OpenRLHF run to launch.\n"
    rollout_bs = min(1024, prompts)
    train_bs = _pow2_at_most(min(128, prompts * samples))
    return f"""Run it as an external command in the pinned GPU image (no CPU path):

```
python3 -m openrlhf.cli.train_ppo_ray \\
  --data.prompt_dataset grpo.jsonl --data.input_key prompt --data.label_key label \\
  --data.apply_chat_template \\
  --algo.advantage.estimator group_norm --rollout.n_samples_per_prompt {samples} \\
  --train.batch_size {train_bs} --rollout.batch_size {rollout_bs} \\
  --reward.remote_url reward_func.py
```

- Step arithmetic: {prompts} prompts x {samples} samples = {prompts * samples} samples;
  `--train.batch_size` must not exceed that and `--rollout.batch_size` must not exceed
  {prompts} (the defaults 128 / 1024 can give **0 steps** on small sets).
- `label` (the verifier label, a JSON string) is the only field OpenRLHF passes to the
  reward function; lineage fields are ignored.
- rlstream's `openrlhf` training backend generates the hash-pinned, never-raising
  `reward_func.py` and checks every flag against the pinned release.
"""


def _commands(method: str, rows: dict[str, int]) -> str:
    """Only methods whose file has rows: a command that would train on nothing is no step."""
    have = [m for m in ("grpo", "dpo", "sft") if rows.get(f"{m}.jsonl", 0) > 0]
    if not have:
        return (
            "No training file has rows, so there is nothing to train: see the drop counts in "
            "`manifest.json` for why rollouts or groups were dropped."
        )
    lines = []
    if method in have:
        lines += ["Recommended:", "", "```", f"rlstream train --dataset . --method {method}", "```"]
    others = [m for m in have if m != method]
    if others:
        head = "Also possible with these files:" if lines else "Possible (not recommended):"
        lines += ["", head, "", "```"] if lines else [head, "", "```"]
        lines += [f"rlstream train --dataset . --method {m}" for m in others]
        lines.append("```")
    if "grpo" in have:  # GSPO and PPO sample and grade the same prompts
        lines += [
            "",
            "The GRPO rows also train with GSPO (sequence-level importance ratios; builtin on "
            "CPU or GPU, openrlhf) or PPO (a critic with GAE; GPU: openrlhf, not builtin):",
            "",
            "```",
            "rlstream train --dataset . --method gspo",
            "rlstream train --dataset . --method ppo --backend openrlhf",
            "```",
        ]
    return "\n".join(lines)


def _considered(result: CurationResult) -> str:
    """What the 'before' profile covers: the input less held-out tasks and dropped rollouts."""
    held = sum(len(g.rollouts) for g in result.heldout)
    early = {
        "exact_duplicate",
        "near_duplicate",
        "conflicting_rewards",
        "redelivered",
        "no_assistant_turn",
    }
    dropped = sum(
        n for k, n in result.dropped_rollouts.items() if k in early or k.startswith("truncated")
    )
    return (
        f"Profiled after holding out {held} rollouts (evaluation tasks) and dropping {dropped} "
        "duplicates / truncated / conflicting ones"
    )


_USES = {
    "conversation": (
        "length-matched pass/fail pairs",
        "passing conversations",
        "held-out prompts + grader context (evaluation only)",
    ),
    "turn": (
        "pass/fail pairs at each failing rollout's first divergence (shared prefix)",
        "one passing assistant turn per row (loss on that turn)",
        "held-out next-action prompts + the passing calls (evaluation only)",
    ),
}


def render_next_steps(
    result: CurationResult, rows: dict[str, int], granularity: str = "conversation"
) -> str:
    """Markdown with the recommended method first, then TRL and OpenRLHF notes."""
    p = result.profile_before
    dpo_use, sft_use, heldout_use = _USES[granularity]
    support = "-" if p.gradient_support is None else f"{p.gradient_support:.3f}"
    return f"""# Next steps

Recommended method: **{result.method}**. {result.method_reason}.

| file | rows | use |
|---|---|---|
| grpo.jsonl | {rows["grpo.jsonl"]} | GRPO prompts + verifier labels |
| dpo.jsonl | {rows["dpo.jsonl"]} | {dpo_use} |
| sft.jsonl | {rows["sft.jsonl"]} | {sft_use} |
| heldout.jsonl | {rows.get("heldout.jsonl", 0)} | {heldout_use} |

Rows are per {granularity}.

Input: {result.input_rollouts} graded rollouts. {_considered(result)}: {p.rollouts}
rollouts in {p.groups} groups, gradient support {support}, verdict {p.verdict} (this is
why it can differ from `rlstream profile` over the whole file). Kept: {len(result.kept)}
groups, {result.kept_rollouts} rollouts.

## Train

Run from the directory that holds this file and `manifest.json`:

{_commands(result.method, rows)}

Held-out task keys ({result.options.heldout_share:.0%} by hash, per agent and reward spec) are
in no training file; evaluate a trained adapter on them with `rlstream eval --heldout
heldout.jsonl`.

## TRL (built-in backend)

- GRPO: `grpo.jsonl` has a `prompt` column (a list of messages). Every other column
  (`label`, `task_key`, `policy_version`, `tools`) reaches the reward functions as a
  keyword argument; `label` is the grader context as JSON, so fresh samples are re-graded
  with the same rlstream reward. GRPO regenerates samples on-policy: the logged groups only
  selected these prompts.
- DPO: `dpo.jsonl` rows have `prompt`, `chosen` and `rejected` as message lists, paired
  inside one task key and length-matched.
- SFT: `sft.jsonl` rows have `messages`; set `assistant_only_loss=True` (the chat template
  needs generation markers). `loss_mask` marks the assistant messages (1) for trainers that
  take an explicit mask.

## OpenRLHF (GRPO)

{_openrlhf(rows["grpo.jsonl"])}"""
