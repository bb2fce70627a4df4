"""GSM8K-style word problems with exact gold answers, graded by the gsm8k reward.

Answers are written the many ways real models write them (``####``, ``\\boxed{}``, "the
answer is", a trailing number, money with separators, fractions, percentages) and gold
labels come in the many forms datasets use, so extraction and normalisation are exercised.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from rlstream.sampledata._build import Convo, rephrase

AGENT = "math-tutor"
SYSTEM = "You are a careful maths tutor. Reason step by step and state the final answer clearly."


@dataclass(frozen=True)
class MathTask:
    task_id: str
    question: str
    work: str
    gold: Fraction
    kind: str  # int | money | fraction | percent
    unit: str
    label: Any


def _fmt(value: Fraction, kind: str, rng: random.Random, *, plain: bool = False) -> str:
    """How a model might write ``value``."""
    if kind == "fraction" and not plain and value.denominator != 1 and rng.random() < 0.6:
        return f"{value.numerator}/{value.denominator}"
    if kind == "percent":
        return f"{_num(value)}%" if not plain and rng.random() < 0.7 else _num(value)
    if kind == "money" and not plain:
        x = float(value)
        return rng.choice((f"${x:,.2f}", f"${_num(value)}", f"{x:,.2f} dollars"))
    if kind == "int" and not plain and abs(value) >= 1000 and rng.random() < 0.6:
        return f"{int(value):,}"
    return _num(value)


def _num(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):.6f}".rstrip("0").rstrip(".")


Template = Callable[[random.Random], tuple[str, str, Fraction, str, str]]


def _clips(r: random.Random) -> tuple[str, str, Fraction, str, str]:
    name, x = r.choice(("Natalia", "Omar", "Keiko", "Sven")), r.randrange(20, 200, 2)
    q = f"{name} sold clips to {x} of her friends in April, and then she sold half as many clips in May. How many clips did {name} sell altogether in April and May?"
    return (
        q,
        f"In May: {x} / 2 = {x // 2}. Total: {x} + {x // 2} = {x + x // 2}.",
        Fraction(x + x // 2),
        "int",
        "clips",
    )


def _wage(r: random.Random) -> tuple[str, str, Fraction, str, str]:
    rate, minutes = r.choice((12, 15, 18, 24, 30)), r.choice((20, 40, 50, 75, 90))
    pay = Fraction(rate * minutes, 60)
    q = f"Weng earns ${rate} an hour for babysitting. Yesterday, she did {minutes} minutes of babysitting. How much did she earn?"
    return (
        q,
        f"Per minute: {rate} / 60 dollars. For {minutes} minutes: {rate} * {minutes} / 60.",
        pay,
        "money",
        "dollars",
    )


def _shopping(r: random.Random) -> tuple[str, str, Fraction, str, str]:
    n, price, off = r.randint(3, 40), r.choice((12.5, 19.99, 45, 120, 249.5)), r.choice((5, 10, 25))
    total = Fraction(str(price)) * n - off
    q = f"A store sells chairs for ${price} each. Sam buys {n} chairs and uses a ${off} coupon. How much does Sam pay?"
    return (
        q,
        f"{n} chairs cost {n} * {price}. Subtract the {off} coupon.",
        total,
        "money",
        "dollars",
    )


def _pizza(r: random.Random) -> tuple[str, str, Fraction, str, str]:
    k = r.choice((6, 8, 10, 12))
    a = r.randint(1, k - 1)
    left = Fraction(k - a, k)
    q = f"A pizza is cut into {k} equal slices. Ava eats {a} slices. What fraction of the pizza is left?"
    return q, f"{k} - {a} = {k - a} slices remain out of {k}.", left, "fraction", ""


def _discount(r: random.Random) -> tuple[str, str, Fraction, str, str]:
    p = r.choice((10, 15, 20, 25, 30, 40))
    q = f"A jacket is discounted by {p}%. What percentage of the original price does a customer pay?"
    return q, f"100% - {p}% = {100 - p}%.", Fraction(100 - p), "percent", "percent"


def _population(r: random.Random) -> tuple[str, str, Fraction, str, str]:
    base, grow = r.choice((12500, 48000, 230000, 1500)), r.choice((2, 3, 4))
    extra = r.randint(100, 900)
    val = Fraction(base * grow + extra)
    q = f"A town had {base:,} residents. The population grew to {grow} times that, plus {extra} newcomers. How many residents are there now?"
    return q, f"{base} * {grow} = {base * grow}. Then add {extra}.", val, "int", "residents"


def _temperature(r: random.Random) -> tuple[str, str, Fraction, str, str]:
    start, drop = r.randint(-5, 12), r.randint(6, 25)
    q = f"The temperature was {start} degrees at noon and dropped {drop} degrees by midnight. What was the temperature at midnight?"
    return q, f"{start} - {drop} = {start - drop}.", Fraction(start - drop), "int", "degrees"


def _cookies(r: random.Random) -> tuple[str, str, Fraction, str, str]:
    friends, each, left = r.randint(3, 9), r.randint(4, 12), r.randint(1, 6)
    total = friends * each + left
    q = f"Leo baked some cookies. He gave {each} cookies to each of his {friends} friends and had {left} left. How many cookies did he bake?"
    return (
        q,
        f"{friends} * {each} = {friends * each}. Plus {left} left over.",
        Fraction(total),
        "int",
        "cookies",
    )


def _speed(r: random.Random) -> tuple[str, str, Fraction, str, str]:
    hours, speed = r.choice((2, 3, 4, 5)), r.choice((45, 60, 72, 85))
    q = f"A train travels {speed * hours} km in {hours} hours. What is its average speed in km per hour?"
    return q, f"{speed * hours} / {hours}.", Fraction(speed), "int", "km/h"


TEMPLATES: tuple[Template, ...] = (
    _clips,
    _wage,
    _shopping,
    _pizza,
    _discount,
    _population,
    _temperature,
    _cookies,
    _speed,
)
_LEAD = (
    "",
    "Can you help me with this?",
    "Homework question:",
    "Quick maths problem.",
    "Solve this please:",
    "I'm stuck on this one.",
)
_TAIL = ("", "Thanks!", "Please show your work.", "What's the answer?", "Explain briefly.")


def _label(rng: random.Random, gold: Fraction, kind: str) -> Any:
    plain = _num(gold)
    if kind == "fraction" and gold.denominator != 1 and rng.random() < 0.5:
        plain = f"{gold.numerator}/{gold.denominator}"
    form = rng.randrange(6)
    if form == 0:
        return f"#### {plain}"
    if form == 1:
        return f"A: {plain}"
    if form == 2:
        return f"\\boxed{{{plain}}}"
    if form == 3:
        return plain
    if form == 4:
        return int(gold) if gold.denominator == 1 else float(gold)
    return {"answer": plain}


def make_task(rng: random.Random, task_id: str) -> MathTask:
    q, work, gold, kind, unit = rng.choice(TEMPLATES)(rng)
    return MathTask(task_id, q, work, gold, kind, unit, _label(rng, gold, kind))


def _wrong(rng: random.Random, task: MathTask) -> Fraction:
    for _ in range(20):
        if task.kind == "fraction":
            cand = Fraction(task.gold.numerator + rng.choice((-1, 1)), task.gold.denominator)
        elif task.kind == "percent":
            cand = task.gold + rng.choice((-10, -5, 5, 10)) if task.gold > 10 else task.gold + 5
        else:
            cand = task.gold + rng.choice((-10, -3, -1, 1, 2, 7, 12))
        if (
            cand != task.gold
            and cand * 100 != task.gold
            and cand != task.gold * 100
            and cand > -100
        ):
            return cand
    return task.gold + 1


def build(c: Convo, rng: random.Random, task: MathTask, mode: str, used: set[str]) -> None:
    c.system(SYSTEM)
    c.user(rephrase(rng, [_LEAD, (task.question,), _TAIL], used), pii_rate=0.1)
    if mode == "truncated":
        return
    value = task.gold if mode == "success" else _wrong(rng, task)
    shown = _fmt(value, task.kind, rng)
    style = rng.randrange(5)
    unit = f" {task.unit}" if task.unit and task.kind == "int" else ""
    if style == 0:
        tail = f"#### {shown}"
    elif style == 1:
        tail = f"The answer is {shown}."
    elif style == 2:
        tail = f"So the final result is $\\boxed{{{_fmt(value, task.kind, rng, plain=True)}}}$."
    elif style == 3:
        tail = f"**Final answer:** {shown}"
    else:
        tail = f"So the result is {shown}{unit}."
    c.assistant(f"{task.work}\n{tail}")


def expected(mode: str) -> dict[str, bool | None]:
    return {"gsm8k": mode == "success"}
