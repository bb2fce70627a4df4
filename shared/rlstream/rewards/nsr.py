"""nsr: the agent's decision must be the one an offline symbolic policy requires.

The decision is read from the policy's decision tool call (``submit_decision`` by default,
authoritative when present) or else from the final assistant turn: negated approvals ("I
can't approve") read as deny, and when several decisions are stated the last one counts.
The required decision comes from :mod:`rlstream.rewards.policy` rules over facts extracted
from the same conversation. No policy -> :class:`MissingContextError`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from rlstream.errors import MissingContextError
from rlstream.rewards._common import reject_unknown, threshold_option, words_pattern
from rlstream.rewards.base import RewardContext, RewardResult, make_result
from rlstream.rewards.policy import Policy, load_policy
from rlstream.transcript import Message, Transcript

_NEG = (
    r"(?:can(?:no|['’])?t|cannot|unable to|won['’]?t|not able to|am not able to|do not|don['’]?t)"
)
DEFAULT_PATTERNS: dict[str, re.Pattern[str]] = {
    "deny": words_pattern(
        [
            rf"{_NEG}(?: \w+){{0,2}} (?:approve|refund|accept|process|offer|issue)",
            r"den(?:y|ied|ying)",
            r"declin(?:e|ed|ing)",
            r"reject(?:ed|ing)?",
            r"not eligible",
            r"ineligible",
        ]
    ),
    "approve": words_pattern(
        [
            r"approv(?:e|ed|ing)",
            r"(?:has|have) been (?:refunded|approved)",
            r"(?:i['’]ve|i have|we['’]ve|we have) (?:issued|processed|refunded)",
            r"granted",
        ]
    ),
    "escalate": words_pattern(
        [
            r"escalat(?:e|ed|ing)",
            r"transferr?(?:ed|ing)? (?:you|this|your (?:case|request))",
            r"(?:a|our) (?:supervisor|manager|specialist) will",
        ]
    ),
    "refuse": words_pattern(
        [
            rf"{_NEG} (?:help|assist|share|discuss)(?: with| you with)?",
            r"refus(?:e|ed|ing)",
            r"not (?:something|able) (?:i|we) can (?:share|discuss|help with)",
        ]
    ),
}


def _decisions_in(text: str, patterns: dict[str, re.Pattern[str]]) -> list[tuple[int, int, str]]:
    """(start, -end, decision) of every decision phrase; a deny that overlaps an approve
    phrase ("can't approve") wins because it is longer and starts first."""
    found = [(m.start(), -m.end(), d) for d, p in patterns.items() for m in p.finditer(text)]
    found.sort()
    kept: list[tuple[int, int, str]] = []
    end = -1
    for start, neg_end, d in found:
        if start >= end:
            kept.append((start, neg_end, d))
            end = -neg_end
    return kept


class NsrReward:
    """Checks approve / deny / refuse / escalate decisions against a policy file."""

    name: ClassVar[str] = "nsr"
    version: ClassVar[str] = "1.0.0"
    endorsed_features: ClassVar[tuple[str, ...]] = ()
    _OPTIONS: ClassVar[tuple[str, ...]] = ("threshold", "policy")

    def __init__(
        self,
        threshold: float | None = None,
        policy: str | Path | dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        reject_unknown(self.name, options, self._OPTIONS)
        self.threshold = threshold_option(threshold, 0.5)
        self.policy: Policy | None = load_policy(policy) if policy is not None else None

    @property
    def fingerprint(self) -> str:
        """Policy content hash: a changed policy is a different grading spec."""
        return self.policy.fingerprint if self.policy else ""

    def _policy(self, context: RewardContext) -> Policy:
        if self.policy is not None:
            return self.policy
        src = context.options.get("policy")
        if src is None:
            raise MissingContextError(
                "nsr needs a policy: pass policy=<path or mapping> as a reward option"
            )
        return src if isinstance(src, Policy) else load_policy(src)

    def decision(self, t: Transcript, policy: Policy) -> tuple[str | None, str]:
        """(decision, where it came from) for the rollout."""
        for c in reversed(t.tool_calls()):
            if c.name == policy.decision_tool and isinstance(c.arguments, dict):
                value = str(c.arguments.get("decision", "")).strip().lower()
                if value:
                    return value, "tool"
        final = _final_turn(t)
        if final is None or not final.content:
            return None, "none"
        return self._from_text(final.content, policy), "text"

    @staticmethod
    def _from_text(text: str, policy: Policy) -> str | None:
        patterns = {**DEFAULT_PATTERNS, **policy.decision_patterns}
        found = _decisions_in(text, patterns)
        return found[-1][2] if found else None

    def __call__(self, transcript: Transcript, context: RewardContext) -> RewardResult:
        policy = self._policy(context)
        facts = policy.extract(transcript)
        reasons: list[str] = []
        missing = [f.name for f in policy.facts if f.required and facts.get(f.name) is None]
        required, rule = policy.decide(facts)
        got, where = self.decision(transcript, policy)
        if missing:
            reasons.append("required facts not established: " + ", ".join(missing))
        if got is None:
            reasons.append("no decision stated")
        elif got != required:
            reasons.append(f"decision {got} ({where}) but policy rule {rule} requires {required}")
        correct = got == required and not missing

        turn_scores = []
        patterns = {**DEFAULT_PATTERNS, **policy.decision_patterns}
        for m in transcript.messages:
            if m.role != "assistant":
                continue
            stated = [d for _, _, d in _decisions_in(m.content or "", patterns)]
            stated += [
                str(c.arguments.get("decision", "")).lower()
                for c in m.tool_calls
                if c.name == policy.decision_tool and isinstance(c.arguments, dict)
            ]
            # a turn is judged only on what it states: right 1, wrong 0, nothing 0.5
            turn_scores.append(1.0 if required in stated[-1:] else 0.0 if stated else 0.5)
        return make_result(
            reward=self.name,
            version=self.version,
            score=1.0 if correct else 0.0,
            threshold=self.threshold,
            components={
                "decision_found": 0.0 if got is None else 1.0,
                "decision_correct": 1.0 if got == required else 0.0,
                "facts_complete": 0.0 if missing else 1.0,
            },
            reasons=[f"rule {rule} -> {required}", *reasons],
            turn_scores=turn_scores,
        )


def _final_turn(t: Transcript) -> Message | None:
    for m in reversed(t.messages):
        if m.role == "assistant" and m.content:
            return m
    return None
