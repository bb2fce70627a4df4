"""Offline symbolic decision policies for the ``nsr`` reward.

A policy file (YAML) declares *facts* (how to read them from the conversation: a regex over
messages, a key of a tool's JSON result, a metadata key), *rules* (conditions over facts ->
the required decision; first match wins) and a *default* decision. Everything is evaluated
locally: the peer's "nsr" is an HTTP call to a hosted decision API.

```yaml
facts:
  final_sale: {from: tool_result, tool: lookup_order, key: final_sale, type: bool}
  damaged: {from: regex, role: user, pattern: "\\b(broken|damaged)\\b", type: bool}
rules:
  - id: final-sale
    when: {final_sale: true, damaged: false}
    decision: deny
default: approve
```

Conditions: a mapping is an implicit ``all``; a value is equality, or an operator mapping
(``eq ne gt ge lt le in not_in exists``); ``all``/``any``/``not`` nest. A condition on a fact
the conversation never established is false.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

from rlstream import limits
from rlstream.errors import ConfigError
from rlstream.transcript import Transcript

DECISIONS = ("approve", "deny", "refuse", "escalate")
_OPS = ("eq", "ne", "gt", "ge", "lt", "le", "in", "not_in", "exists")
_SOURCES = ("regex", "tool_result", "tool_call", "metadata", "outcome")
_TYPES = ("bool", "number", "string")
_MISSING = object()


@dataclass(frozen=True)
class Fact:
    name: str
    source: str
    type: str
    key: str | None = None
    tool: str | None = None
    role: str | None = None
    pattern: re.Pattern[str] | None = None
    required: bool = False


@dataclass(frozen=True)
class Rule:
    id: str
    when: Any
    decision: str


@dataclass(frozen=True)
class Policy:
    name: str
    version: str
    facts: tuple[Fact, ...]
    rules: tuple[Rule, ...]
    default: str
    decision_tool: str
    decision_patterns: dict[str, re.Pattern[str]] = field(default_factory=dict)
    fingerprint: str = ""

    def extract(self, t: Transcript) -> dict[str, Any]:
        """Fact values established by the conversation (absent facts are left out)."""
        out: dict[str, Any] = {}
        results = _tool_results(t) if any(f.source == "tool_result" for f in self.facts) else {}
        for f in self.facts:
            value = _read_fact(f, t, results)
            if value is not _MISSING:
                out[f.name] = _coerce(f, value)
        return out

    def decide(self, facts: dict[str, Any]) -> tuple[str, str]:
        """(required decision, id of the rule that fired or "default")."""
        for rule in self.rules:
            if _holds(rule.when, facts):
                return rule.decision, rule.id
        return self.default, "default"


def load_policy(source: str | Path | dict[str, Any]) -> Policy:
    """Read and validate a policy from a YAML path or an already-parsed mapping."""
    if isinstance(source, dict):
        raw: Any = source
        text = orjson.dumps(source, option=orjson.OPT_SORT_KEYS).decode()
    else:
        path = Path(source)
        try:
            text = path.read_text()
        except OSError as exc:
            raise ConfigError(f"nsr: cannot read policy file {path}: {exc}") from exc
        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"nsr: policy {path} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError("nsr: a policy must be a mapping")
    unknown = set(raw) - {
        "name",
        "version",
        "facts",
        "rules",
        "default",
        "decisions",
        "decision_tool",
        "decision_patterns",
        "description",
    }
    if unknown:
        raise ConfigError(f"nsr: unknown policy keys {sorted(unknown)}")
    decisions = tuple(raw.get("decisions") or DECISIONS)
    facts = tuple(_parse_fact(k, v) for k, v in (raw.get("facts") or {}).items())
    names = {f.name for f in facts}
    rules = []
    for i, r in enumerate(raw.get("rules") or []):
        if not isinstance(r, dict) or "decision" not in r or "when" not in r:
            raise ConfigError(f"nsr: rule {i} needs 'when' and 'decision'")
        if r["decision"] not in decisions:
            raise ConfigError(f"nsr: rule {i} decision {r['decision']!r} not in {decisions}")
        _check_condition(r["when"], names, f"rule {r.get('id', i)}")
        rules.append(Rule(str(r.get("id", f"rule-{i}")), r["when"], str(r["decision"])))
    default = raw.get("default")
    if default not in decisions:
        raise ConfigError(f"nsr: policy needs a default decision in {decisions}")
    patterns = {}
    for k, v in (raw.get("decision_patterns") or {}).items():
        if k not in decisions:
            raise ConfigError(f"nsr: decision_patterns key {k!r} not in {decisions}")
        patterns[k] = _compile(str(v), f"decision_patterns.{k}")
    return Policy(
        name=str(raw.get("name", "policy")),
        version=str(raw.get("version", "1")),
        facts=facts,
        rules=tuple(rules),
        default=str(default),
        decision_tool=str(raw.get("decision_tool", "submit_decision")),
        decision_patterns=patterns,
        fingerprint=hashlib.sha256(text.encode()).hexdigest()[:12],
    )


def _compile(pattern: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ConfigError(f"nsr: bad regex in {where}: {exc}") from exc


def _parse_fact(name: str, spec: Any) -> Fact:
    if not isinstance(spec, dict):
        raise ConfigError(f"nsr: fact {name!r} must be a mapping")
    source = spec.get("from")
    typ = spec.get("type", "string")
    if source not in _SOURCES:
        raise ConfigError(f"nsr: fact {name!r}: 'from' must be one of {_SOURCES}")
    if typ not in _TYPES:
        raise ConfigError(f"nsr: fact {name!r}: 'type' must be one of {_TYPES}")
    pattern = None
    if source == "regex":
        if "pattern" not in spec:
            raise ConfigError(f"nsr: regex fact {name!r} needs a pattern")
        pattern = _compile(str(spec["pattern"]), f"fact {name}")
    elif "key" not in spec:
        raise ConfigError(f"nsr: fact {name!r} needs a key")
    if source in ("tool_result", "tool_call") and "tool" not in spec:
        raise ConfigError(f"nsr: fact {name!r} needs the tool name")
    return Fact(
        name=name,
        source=source,
        type=typ,
        key=spec.get("key"),
        tool=spec.get("tool"),
        role=spec.get("role"),
        pattern=pattern,
        required=bool(spec.get("required", False)),
    )


def _check_condition(cond: Any, names: set[str], where: str) -> None:
    if isinstance(cond, list):
        for c in cond:
            _check_condition(c, names, where)
        return
    if not isinstance(cond, dict):
        raise ConfigError(f"nsr: {where}: a condition must be a mapping")
    for key, value in cond.items():
        if key in ("all", "any", "not"):
            _check_condition(value, names, where)
        elif key not in names:
            raise ConfigError(f"nsr: {where}: unknown fact {key!r}")
        elif isinstance(value, dict):
            bad = set(value) - set(_OPS)
            if bad:
                raise ConfigError(f"nsr: {where}: unknown operators {sorted(bad)}")


def _holds(cond: Any, facts: dict[str, Any]) -> bool:
    if isinstance(cond, list):
        return all(_holds(c, facts) for c in cond)
    for key, value in cond.items():
        if key == "all":
            ok = all(_holds(c, facts) for c in (value if isinstance(value, list) else [value]))
        elif key == "any":
            ok = any(_holds(c, facts) for c in (value if isinstance(value, list) else [value]))
        elif key == "not":
            ok = not _holds(value, facts)
        else:
            ok = _compare(facts.get(key, _MISSING), value)
        if not ok:
            return False
    return True


def _compare(actual: Any, expected: Any) -> bool:
    ops = expected if isinstance(expected, dict) else {"eq": expected}
    if "exists" in ops and (actual is not _MISSING) != bool(ops["exists"]):
        return False
    if actual is _MISSING:
        return "exists" in ops and not ops["exists"]
    return all(_op(op, actual, v) for op, v in ops.items() if op != "exists")


_OPERATORS: dict[str, Any] = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "in": lambda a, b: a in b,
    "not_in": lambda a, b: a not in b,
}


def _op(op: str, actual: Any, expected: Any) -> bool:
    try:
        return bool(_OPERATORS[op](actual, expected))
    except TypeError:  # comparing a number with a string is simply "does not hold"
        return False


def _tool_results(t: Transcript) -> dict[str, Any]:
    """tool name -> parsed JSON of its last result (names resolved through call ids)."""
    names = {c.id: c.name for c in t.tool_calls() if c.id}
    out: dict[str, Any] = {}
    for m in t.messages:
        if m.role != "tool" or not m.content:
            continue
        name = m.name or names.get(m.tool_call_id or "")
        if not name:
            continue
        value = limits.loads_maybe(m.content)
        if value is not m.content:  # JSON (within the depth bound), not plain text
            out[name] = value
    return out


def _dig(obj: Any, key: str) -> Any:
    for part in key.split("."):
        if isinstance(obj, dict) and part in obj:
            obj = obj[part]
        else:
            return _MISSING
    return obj


def _read_fact(f: Fact, t: Transcript, results: dict[str, Any]) -> Any:
    if f.source == "regex":
        assert f.pattern is not None
        texts = (
            m.content for m in t.messages if m.content and (f.role is None or m.role == f.role)
        )
        for text in texts:
            m = f.pattern.search(text)
            if m:
                return m.group(1) if f.type != "bool" and m.groups() else True
        return False if f.type == "bool" else _MISSING
    if f.source == "tool_result":
        return _dig(results.get(f.tool or "", _MISSING), f.key or "")
    if f.source == "tool_call":
        calls = [c for c in t.tool_calls() if c.name == f.tool]
        return _dig(calls[-1].arguments, f.key or "") if calls else _MISSING
    if f.source == "metadata":
        return _dig(t.metadata, f.key or "")
    return _dig(t.outcome, f.key or "")


def _coerce(f: Fact, value: Any) -> Any:
    if value is None:
        return None
    if f.type == "bool":
        if isinstance(value, str):
            return value.strip().lower() in ("true", "yes", "1", "y")
        return bool(value)
    if f.type == "number":
        if isinstance(value, bool):
            return float(value)
        try:
            return float(str(value).replace(",", "").lstrip("$€£"))
        except ValueError:
            return None
    return str(value).strip().lower()
