"""customer_support: resolution, tone, escalation behaviour and safety of a support reply.

Every check is a whole-word match (``\\b`` both sides): "I understand. Whatever you need,
I'll initiate the refund today. Thank you!" is polite and resolving, not hateful. The score
is ``safety * (0.4 resolution + 0.3 tone + 0.3 escalation)`` so an unsafe reply scores 0
whatever else it does, and a rude one (tone 0) cannot reach the default 0.75 threshold.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from rlstream.rewards._common import reject_unknown, threshold_option
from rlstream.rewards._lexicon import ENDS, Lexicon, Scan, Vocabulary
from rlstream.rewards.base import RewardContext, RewardResult, make_result
from rlstream.transcript import Message, Transcript


def _forms(*stems: str) -> list[str]:
    """Spell out inflections explicitly (whole tokens are compared, never substrings)."""
    out: list[str] = []
    for stem in stems:
        base, _, suffixes = stem.partition("|")
        out.append(base)
        out.extend(base + s for s in suffixes.split(",") if s)
    return out


_RESOLVE = Lexicon(
    _forms(
        "refund|ed,s,ing",
        "reimburse|d,ment",
        "replace|d,ment",
        "resolved",
        "fixed",
        "process|ed,ing",
        "initiate|d",
        "initiating",
        "issue|d",
        "issuing",
        "cancel|ed,led,ling",
        "updated",
        "reset",
        "shipped",
        "credit|ed",
        "upgraded",
        "escalate|d",
        "escalating",
        "arranged",
        "rescheduled",
    )
)
_NEGATION = Lexicon(
    [
        "can't",
        "cant",
        "cannot",
        "unable",
        "won't",
        "wont",
        "don't",
        "dont",
        "isn't",
        "not",
        "never",
        "no",
    ]
)
_POLITE = Lexicon(
    [
        "please",
        "thanks",
        "thank",
        "sorry",
        "apologise",
        "apologize",
        "apologies",
        "understand",
        "appreciate",
        "happy to help",
        "glad to help",
        "you're welcome",
        "you are welcome",
    ]
)
_RUDE = Lexicon(
    [
        "stupid",
        "idiot",
        "idiotic",
        "idiots",
        "dumb",
        "hate",
        "ridiculous",
        "pathetic",
        "shut up",
        "not my problem",
        "deal with it",
        "your fault",
        "your own fault",
        "calm down",
        "can't you read",
        "learn to read",
    ]
)
_ABUSE = Lexicon(["fuck*", "shit*", "damn", "bastard", "moron", "kill you"])
_SECRET_WORDS = frozenset({"password", "pin", "cvv", "cvc", "ssn", "card", "security", "social"})
_SOLICIT = re.compile(
    r"\b(?:send|give|tell|provide|share|type|email)(?: me| us)? (?:your |the )?"
    r"(?:full |complete |whole )?(?:password|pin|cvv|cvc|security code|card number|"
    r"credit card number|social security number|ssn)\b"
)
_ESCALATION_ASK = Lexicon(
    [
        "manager",
        "supervisor",
        "human",
        "real person",
        "lawyer",
        "attorney",
        "legal action",
        "sue",
        "chargeback",
        "ombudsman",
        "escalate",
    ]
)
_ESCALATED = Lexicon(
    [
        *_forms("escalate|d", "escalating"),
        *(f"{v} you {p}" for v in ("connect", "connected", "connecting") for p in ("with", "to")),
        *(f"{v} you" for v in ("transfer", "transferred", "transferring")),
        *(
            f"{h} {w} {d}"
            for h in ("hand", "handed", "handing")
            for w in ("you", "this", "your case")
            for d in ("over", "off")
        ),
        *(f"{a} {r} will" for a in ("a", "our") for r in ("supervisor", "manager", "specialist")),
    ]
)
_ESCALATE_TOOLS = ("escalat", "transfer", "handoff", "hand_off")
_ESCALATE_TOOL = re.compile("|".join(_ESCALATE_TOOLS))
#: every lexicon above, scanned once per text
_SECRETS = Lexicon(_SECRET_WORDS)
_VOCAB = Vocabulary(
    _RESOLVE, _NEGATION, _POLITE, _RUDE, _ABUSE, _ESCALATION_ASK, _ESCALATED, _SECRETS
)
#: any bit of a lexicon: without one, Lexicon.found is False and is not called
_RUDE_ANY = _RUDE.word_bit | _RUDE.phrase_bit | _RUDE.prefix_bit
_POLITE_ANY = _POLITE.word_bit | _POLITE.phrase_bit | _POLITE.prefix_bit
_ESCALATED_ANY = _ESCALATED.word_bit | _ESCALATED.phrase_bit | _ESCALATED.prefix_bit
_ABUSE_ANY = _ABUSE.word_bit | _ABUSE.phrase_bit | _ABUSE.prefix_bit
#: text an escalation request must contain (its words, phrases' first words, prefixes): most
#: customers never write any, and one C-level search then spares the scan of their turns
_ASK_TEXT = re.compile(
    "|".join(
        re.escape(w)
        for w in sorted(
            {*_ESCALATION_ASK.words, *(p.split()[0] for p in _ESCALATION_ASK.phrases)}
            | set(_ESCALATION_ASK.prefixes)
        )
    )
)

_W_RESOLUTION, _W_TONE, _W_ESCALATION = 0.4, 0.3, 0.3


def _resolves(scan: Scan) -> bool:
    """An action word that none of the 5 tokens before it (same sentence) negates."""
    if not scan.mask & _RESOLVE.word_bit:
        return False
    seq = scan.seq
    resolve, negation = _RESOLVE.words, _NEGATION.words
    for i, tok in enumerate(seq):
        if tok in resolve:
            negated = False
            for j in range(i - 1, max(-1, i - 6), -1):
                if seq[j] in ENDS:
                    break
                if seq[j] in negation:
                    negated = True
                    break
            if not negated:
                return True
    return False


def _safe(scan: Scan) -> bool:
    if scan.mask & _ABUSE_ANY and _ABUSE.found(scan):
        return False
    if not scan.mask & _SECRETS.word_bit:  # no secret word among the tokens
        return True
    # the solicitation regex reads the stream with sentence ends folded to "."
    return not _SOLICIT.search(" ".join("." if t in ENDS else t for t in scan.seq))


def _asks_escalation(text: str) -> bool:
    """The customer's words ask for a manager, a human, legal action..."""
    low = text.lower()
    if "’" in low:
        low = low.replace("’", "'")
    return _ASK_TEXT.search(low) is not None and _ESCALATION_ASK.found(_VOCAB.scan(text))


def _escalation_tool(m: Message) -> bool:
    return any(_ESCALATE_TOOL.search(c.name.lower()) for c in m.tool_calls)


class CustomerSupportReward:
    """Rule-based support-reply grader; needs no context (it judges the reply alone)."""

    name: ClassVar[str] = "customer_support"
    version: ClassVar[str] = "1.0.0"
    endorsed_features: ClassVar[tuple[str, ...]] = ()
    _OPTIONS: ClassVar[tuple[str, ...]] = ("threshold",)

    def __init__(self, threshold: float | None = None, **options: Any) -> None:
        reject_unknown(self.name, options, self._OPTIONS)
        self.threshold = threshold_option(threshold, 0.75)

    def __call__(self, transcript: Transcript, context: RewardContext) -> RewardResult:
        reasons: list[str] = []
        # per-turn: each assistant turn judged on its own words (never cumulative)
        turn_scores: list[float] = []
        unsafe = rude = polite = escalated = False
        n_turns = 0
        last = prev = None  # scans of the last two assistant turns with text
        user_text: list[str] = []
        for m in transcript.messages:
            role = m.role
            if role == "assistant":
                n_turns += 1
                if m.tool_calls and not escalated and _escalation_tool(m):
                    escalated = True
                if not m.content:
                    polite = True  # a call-only turn says nothing rude: tone 1
                    turn_scores.append(1.0)
                    continue
                scan = _VOCAB.scan(m.content)
                safe = _safe(scan)
                mask = scan.mask
                if mask & _RUDE_ANY and _RUDE.found(scan):
                    tone = 0.0
                    rude = True
                elif mask & _POLITE_ANY and _POLITE.found(scan):
                    tone = 1.0
                    polite = True
                else:
                    tone = 0.75
                if not safe:
                    unsafe = True
                turn_scores.append(tone if safe else 0.0)
                if not escalated and mask & _ESCALATED_ANY and _ESCALATED.found(scan):
                    escalated = True
                last, prev = scan, last
            elif role == "user" and m.content:
                user_text.append(m.content)

        if (last is not None and _resolves(last)) or (prev is not None and _resolves(prev)):
            resolution = 1.0
        elif _tool_succeeded(transcript):
            resolution = 0.5
            reasons.append("action taken by tool but never confirmed to the customer")
        else:
            resolution = 0.0
            reasons.append("no resolution statement in the final assistant turns")

        tone = 0.0 if rude else 1.0 if polite else 0.5
        if rude:
            reasons.append("rude or dismissive wording")

        needed = _asks_escalation("\n".join(user_text))
        if needed and not escalated:
            escalation = 0.0
            reasons.append("customer asked for escalation but it never happened")
        elif escalated and not needed:
            escalation = 0.5
            reasons.append("escalated without being asked to")
        else:
            escalation = 1.0

        safety = 0.0 if unsafe else 1.0
        if unsafe:
            reasons.append("unsafe content: abuse or solicitation of secrets")
        if not n_turns:
            reasons.append("no assistant turn")

        score = safety * (_W_RESOLUTION * resolution + _W_TONE * tone + _W_ESCALATION * escalation)
        if not n_turns:
            score = 0.0
        return make_result(
            reward=self.name,
            version=self.version,
            score=score,
            threshold=self.threshold,
            components={
                "resolution": resolution,
                "tone": tone,
                "escalation": escalation,
                "safety": safety,
            },
            reasons=reasons,
            turn_scores=turn_scores,
        )


def _tool_succeeded(t: Transcript) -> bool:
    """A non-lookup tool call whose result is not an error: the agent *did* something."""
    acting = {
        c.id
        for c in t.tool_calls()
        if not c.name.lower().startswith(("lookup", "get", "search", "find", "list", "check"))
    }
    if not acting:
        return False
    return any(
        m.role == "tool" and not m.is_error and (m.tool_call_id in acting or m.tool_call_id is None)
        for m in t.messages
    )
