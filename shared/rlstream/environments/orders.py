"""The built-in example domain of the ``python`` environment: a shop's orders.

Small on purpose (three tools, four orders) so that tests can compute the states by hand
and a CPU smoke run can play it; also the template for a domain of your own.
"""

from __future__ import annotations

from typing import Any

from rlstream.environments.python_env import Domain

CANCEL_REASONS = ("no_longer_needed", "ordered_by_mistake")


def initial_state() -> dict[str, Any]:
    """Four orders: two pending, one delivered, one already cancelled."""
    return {
        "orders": {
            "A-1001": {"status": "pending", "total": 40.0, "refunded": 0.0},
            "A-1002": {"status": "delivered", "total": 25.5, "refunded": 0.0},
            "A-1003": {"status": "pending", "total": 12.0, "refunded": 0.0},
            "A-1004": {"status": "cancelled", "total": 8.0, "refunded": 0.0},
        }
    }


def _order(state: dict[str, Any], order_id: str) -> dict[str, Any]:
    order = state["orders"].get(str(order_id).strip().upper())
    if order is None:
        raise KeyError(f"no order {order_id!r}")
    return order  # type: ignore[no-any-return]


def get_order(state: dict[str, Any], order_id: str) -> dict[str, Any]:
    """Look up an order's status, total and refunded amount."""
    return dict(_order(state, order_id))


def cancel_order(state: dict[str, Any], order_id: str, reason: str) -> dict[str, Any]:
    """Cancel a pending order; reason is no_longer_needed or ordered_by_mistake."""
    order = _order(state, order_id)
    if order["status"] != "pending":
        raise ValueError(f"order {order_id} is {order['status']}, only pending orders cancel")
    if reason not in CANCEL_REASONS:
        raise ValueError(f"reason must be one of {', '.join(CANCEL_REASONS)}")
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    return dict(order)


def refund(state: dict[str, Any], order_id: str, amount: float) -> dict[str, Any]:
    """Refund part or all of a delivered order."""
    order = _order(state, order_id)
    if order["status"] not in ("delivered", "refunded"):
        raise ValueError(f"order {order_id} is {order['status']}, only delivered orders refund")
    amount = round(float(amount), 2)
    if amount <= 0 or amount > order["total"] - order["refunded"]:
        raise ValueError(f"amount must be in (0, {order['total'] - order['refunded']}]")
    order["refunded"] = round(order["refunded"] + amount, 2)
    if order["refunded"] >= order["total"]:
        order["status"] = "refunded"
    return dict(order)


DOMAIN = Domain.of(
    "orders",
    [get_order, cancel_order, refund],
    initial_state,
    "You are a shop's support agent. Use the tools to act on the customer's orders.",
)

#: example tasks (instruction + ground-truth actions) for tests, docs and the CPU smoke run
TASKS: list[dict[str, Any]] = [
    {
        "task_id": "cancel-1001",
        "instruction": "Please cancel my order A-1001, I no longer need it.",
        "actions": [
            {
                "name": "cancel_order",
                "arguments": {"order_id": "A-1001", "reason": "no_longer_needed"},
            }
        ],
    },
    {
        "task_id": "refund-1002",
        "instruction": "Order A-1002 arrived with a broken item; please refund 10 dollars.",
        "actions": [{"name": "refund", "arguments": {"order_id": "A-1002", "amount": 10}}],
    },
    {
        "task_id": "status-1003",
        "instruction": "What is the status of my order A-1003?",
        "actions": [{"name": "get_order", "arguments": {"order_id": "A-1003"}}],
    },
    {
        "task_id": "mistake-1003",
        "instruction": "I ordered A-1003 by mistake, cancel it please.",
        "actions": [
            {
                "name": "cancel_order",
                "arguments": {"order_id": "A-1003", "reason": "ordered_by_mistake"},
            }
        ],
    },
]
