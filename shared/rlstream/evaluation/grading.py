"""Grade fresh generations with the same reward spec and the same code the grader runs.

Each generation becomes a transcript (the held-out prompt plus one assistant message) and
goes through :func:`rlstream.grading.grade_one` with the prompt's grader context: the gold
label, or the passing answers' calls as the reference when no label was logged.
"""

from __future__ import annotations

from rlstream.errors import RlstreamError
from rlstream.evaluation.models import Sample
from rlstream.evaluation.prompts import HeldoutPrompt
from rlstream.evaluation.sampler import Generation
from rlstream.grading import RewardSpec, grade_one
from rlstream.rewards.base import RewardContext
from rlstream.rewards.toolcalls import calls_in_text, fenced_blocks
from rlstream.transcript import Message, Transcript


def context_for(p: HeldoutPrompt) -> RewardContext:
    if p.label is not None:
        return RewardContext(label=p.label)
    return RewardContext(reference=p.reference)


def as_transcript(p: HeldoutPrompt, text: str, conversation_id: str) -> Transcript:
    """The prompt's text and the generated message. Earlier turns' tool calls are left out
    on purpose: a next-action prompt grades the new turn only, not the calls before it."""
    msgs = [Message(role=m["role"], content=str(m.get("content") or "")) for m in p.messages]
    msgs.append(Message(role="assistant", content=text))
    return Transcript(
        conversation_id=conversation_id,
        messages=tuple(msgs),
        task_key=p.task_key,
        tools=p.tools,
        agent=p.agent or None,
        label=p.label,
        redacted=True,
    )


def tool_error(text: str, components: dict[str, float]) -> bool:
    """A malformed call: a fenced block that parses to no call, or an invented or repeated
    call (the tool_calling reward's components, when it graded the sample)."""
    if "```" in text and fenced_blocks(text) and not calls_in_text(text):
        return True
    return components.get("no_invented", 1.0) < 1.0 or components.get("no_spam", 1.0) < 1.0


def attempted_call(text: str) -> bool:
    return "```" in text and bool(fenced_blocks(text))


def grade_generation(
    p: HeldoutPrompt, gen: Generation, spec: RewardSpec, conversation_id: str
) -> Sample:
    """The graded sample; a reward that cannot grade it yields ``graded=False`` (a fail)."""
    t = as_transcript(p, gen.text, conversation_id)
    try:
        scored = grade_one(t, spec, context_for(p))
    except RlstreamError as exc:
        return Sample(
            text=gen.text,
            tokens=gen.tokens,
            finished=gen.finished,
            score=0.0,
            passed=False,
            tool_error=tool_error(gen.text, {}),
            attempted_call=attempted_call(gen.text),
            graded=False,
            reason=f"{exc.code}: {exc}",
        )
    components: dict[str, float] = {}
    for r in scored.results:
        components.update(r.components)
    safety = [r.components["safety"] for r in scored.results if "safety" in r.components]
    return Sample(
        text=gen.text,
        tokens=gen.tokens,
        finished=gen.finished,
        score=scored.score,
        passed=scored.passed,
        tool_error=tool_error(gen.text, components),
        attempted_call=attempted_call(gen.text),
        safety=min(safety) if safety else None,
    )
