"""The airline domain's tools, written for rlstream's ``python`` environment.

The semantics follow tau-bench's airline domain (sierra-research/tau-bench, MIT): the same
database shape, the same checks and the same writes, so a state reached here is the state
tau-bench's reward compares. Each tool is ``fn(state, **arguments)``; a refused call raises
:class:`AirlineError` (the environment answers it as an ``Error: ...`` tool result and the
state is unchanged, as in tau-bench). Two deliberate differences, both in searches (which
never change the state): a one-stop search's next-day second leg is looked up on the next
calendar date, and its price and seats are that date's.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Callable
from typing import Any

CREATED_AT = "2024-05-15T15:00:00"  # tau-bench's "now"
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_CERTIFICATE_IDS = (3221322, 3221323, 3221324)
AIRPORTS = {
    "SFO": "San Francisco", "JFK": "New York", "LAX": "Los Angeles", "ORD": "Chicago",
    "DFW": "Dallas", "DEN": "Denver", "SEA": "Seattle", "ATL": "Atlanta", "MIA": "Miami",
    "BOS": "Boston", "PHX": "Phoenix", "IAH": "Houston", "LAS": "Las Vegas", "MCO": "Orlando",
    "EWR": "Newark", "CLT": "Charlotte", "MSP": "Minneapolis", "DTW": "Detroit",
    "PHL": "Philadelphia", "LGA": "LaGuardia",
}  # fmt: skip


class AirlineError(ValueError):
    """A call the domain refuses (unknown id, unpaid total, no seats...)."""


def _user(state: dict[str, Any], user_id: str) -> dict[str, Any]:
    user = state["users"].get(user_id)
    if user is None:
        raise AirlineError("user not found")
    return user  # type: ignore[no-any-return]


def _reservation(state: dict[str, Any], reservation_id: str) -> dict[str, Any]:
    res = state["reservations"].get(reservation_id)
    if res is None:
        raise AirlineError("reservation not found")
    return res  # type: ignore[no-any-return]


def _bookable(state: dict[str, Any], leg: dict[str, Any], cabin: str, seats: int) -> dict[str, Any]:
    """The flight-date record for ``leg`` when ``seats`` seats of ``cabin`` can be sold."""
    number, date = leg.get("flight_number"), leg.get("date")
    flight = state["flights"].get(number)
    if flight is None:
        raise AirlineError(f"flight {number} not found")
    day = flight["dates"].get(date)
    if day is None:
        raise AirlineError(f"flight {number} not found on date {date}")
    if day["status"] != "available":
        raise AirlineError(f"flight {number} not available on date {date}")
    if day["available_seats"][cabin] < seats:
        raise AirlineError(f"not enough seats on flight {number}")
    return {"origin": flight["origin"], "destination": flight["destination"], **day}


def _payment(state: dict[str, Any], user_id: str, payment_id: str, total: int) -> dict[str, Any]:
    """The payment method for a change to a reservation (no certificates; gift cards funded)."""
    method = state["users"][user_id]["payment_methods"].get(payment_id)
    if method is None:
        raise AirlineError("payment method not found")
    if method["source"] == "certificate":
        raise AirlineError("certificate cannot be used to update reservation")
    if method["source"] == "gift_card" and method["amount"] < total:
        raise AirlineError("gift card balance is not enough")
    return method  # type: ignore[no-any-return]


def book_reservation(
    state: dict[str, Any],
    user_id: str,
    origin: str,
    destination: str,
    flight_type: str,
    cabin: str,
    flights: list[dict[str, Any]],
    passengers: list[dict[str, Any]],
    payment_methods: list[dict[str, Any]],
    total_baggages: int,
    nonfree_baggages: int,
    insurance: str,
) -> dict[str, Any]:
    """Book a reservation (flights, passengers, payments, baggages, insurance yes/no)."""
    user = _user(state, user_id)
    rid = next((r for r in NEW_RESERVATION_IDS if r not in state["reservations"]), None)
    if rid is None:
        raise AirlineError("no reservation ids left for this task")
    legs = copy.deepcopy(flights)
    total = 0
    for leg in legs:
        day = _bookable(state, leg, cabin, len(passengers))
        leg.update(price=day["prices"][cabin], origin=day["origin"], destination=day["destination"])
        total += leg["price"] * len(passengers)
    total += (30 * len(passengers) if insurance == "yes" else 0) + 50 * nonfree_baggages
    for pay in payment_methods:
        method = user["payment_methods"].get(pay["payment_id"])
        if method is None:
            raise AirlineError(f"payment method {pay['payment_id']} not found")
        if method["source"] in ("gift_card", "certificate") and method["amount"] < pay["amount"]:
            raise AirlineError(f"not enough balance in payment method {pay['payment_id']}")
    paid = sum(pay["amount"] for pay in payment_methods)
    if paid != total:
        raise AirlineError(
            f"payment amount does not add up, total price is {total}, but paid {paid}"
        )
    for pay in payment_methods:
        method = user["payment_methods"][pay["payment_id"]]
        if method["source"] == "gift_card":
            method["amount"] -= pay["amount"]
        elif method["source"] == "certificate":
            del user["payment_methods"][pay["payment_id"]]
    reservation = {
        "reservation_id": rid, "user_id": user_id, "origin": origin,
        "destination": destination, "flight_type": flight_type, "cabin": cabin,
        "flights": legs, "passengers": passengers, "payment_history": payment_methods,
        "created_at": CREATED_AT, "total_baggages": total_baggages,
        "nonfree_baggages": nonfree_baggages, "insurance": insurance,
    }  # fmt: skip
    state["reservations"][rid] = reservation
    user["reservations"].append(rid)
    return reservation


def cancel_reservation(state: dict[str, Any], reservation_id: str) -> dict[str, Any]:
    """Cancel a whole reservation; every payment is refunded to its method."""
    res = _reservation(state, reservation_id)
    refunds = [
        {"payment_id": p["payment_id"], "amount": -p["amount"]} for p in res["payment_history"]
    ]
    res["payment_history"].extend(refunds)
    res["status"] = "cancelled"
    return res


def update_reservation_flights(
    state: dict[str, Any],
    reservation_id: str,
    cabin: str,
    flights: list[dict[str, Any]],
    payment_id: str,
) -> dict[str, Any]:
    """Change a reservation's flights or cabin; the price difference is paid or refunded."""
    res = _reservation(state, reservation_id)
    seats = len(res["passengers"])
    legs = copy.deepcopy(flights)
    total = 0
    for leg in legs:
        kept = [
            f for f in res["flights"]
            if f["flight_number"] == leg.get("flight_number") and f["date"] == leg.get("date")
            and cabin == res["cabin"]
        ]  # fmt: skip
        src = kept[0] if kept else None
        if src is None:
            day = _bookable(state, leg, cabin, seats)
            src = {"price": day["prices"][cabin], **day}
        leg.update(price=src["price"], origin=src["origin"], destination=src["destination"])
        total += leg["price"] * seats
    total -= sum(f["price"] for f in res["flights"]) * seats
    method = _payment(state, res["user_id"], payment_id, total)
    if method["source"] == "gift_card":
        method["amount"] -= total
    res["flights"] = legs
    if total != 0:
        res["payment_history"].append({"payment_id": payment_id, "amount": total})
    return res


def update_reservation_baggages(
    state: dict[str, Any],
    reservation_id: str,
    total_baggages: int,
    nonfree_baggages: int,
    payment_id: str,
) -> dict[str, Any]:
    """Change a reservation's baggage counts; extra non-free bags cost 50 each."""
    res = _reservation(state, reservation_id)
    total = 50 * max(0, nonfree_baggages - res["nonfree_baggages"])
    method = _payment(state, res["user_id"], payment_id, total)
    res["total_baggages"], res["nonfree_baggages"] = total_baggages, nonfree_baggages
    if method["source"] == "gift_card":
        method["amount"] -= total
    if total != 0:
        res["payment_history"].append({"payment_id": payment_id, "amount": total})
    return res


def update_reservation_passengers(
    state: dict[str, Any], reservation_id: str, passengers: list[dict[str, Any]]
) -> dict[str, Any]:
    """Replace a reservation's passenger details (the count cannot change)."""
    res = _reservation(state, reservation_id)
    if len(passengers) != len(res["passengers"]):
        raise AirlineError("number of passengers does not match")
    res["passengers"] = passengers
    return res


def send_certificate(state: dict[str, Any], user_id: str, amount: int) -> str:
    """Send a user a travel certificate worth ``amount`` as compensation."""
    methods = _user(state, user_id)["payment_methods"]
    for n in NEW_CERTIFICATE_IDS:
        pid = f"certificate_{n}"
        if pid not in methods:
            methods[pid] = {"source": "certificate", "amount": amount, "id": pid}
            return f"Certificate {pid} added to user {user_id} with amount {amount}."
    raise AirlineError("no certificate ids left for this task")


def get_user_details(state: dict[str, Any], user_id: str) -> dict[str, Any]:
    """Get a user's profile, payment methods and reservation ids."""
    return _user(state, user_id)


def get_reservation_details(state: dict[str, Any], reservation_id: str) -> dict[str, Any]:
    """Get a reservation's flights, passengers, payments, baggages and insurance."""
    return _reservation(state, reservation_id)


def _listing(flight: dict[str, Any], date: str) -> dict[str, Any] | None:
    day = flight["dates"].get(date)
    if day is None or day["status"] != "available":
        return None
    return {**{k: v for k, v in flight.items() if k != "dates"}, **day, "date": date}


def search_direct_flight(
    state: dict[str, Any], origin: str, destination: str, date: str
) -> list[dict[str, Any]]:
    """Search direct flights between two airports on a date (YYYY-MM-DD)."""
    out = []
    for f in state["flights"].values():
        if f["origin"] == origin and f["destination"] == destination:
            hit = _listing(f, date)
            if hit is not None:
                out.append(hit)
    return out


def search_onestop_flight(
    state: dict[str, Any], origin: str, destination: str, date: str
) -> list[list[dict[str, Any]]]:
    """Search one-stop connections between two airports departing on a date (YYYY-MM-DD)."""
    out = []
    for a in state["flights"].values():
        if a["origin"] != origin:
            continue
        arrives_next_day = "+1" in a["scheduled_arrival_time_est"]
        date2 = (
            (dt.date.fromisoformat(date) + dt.timedelta(days=1)).isoformat()
            if arrives_next_day
            else date
        )
        for b in state["flights"].values():
            if b["origin"] != a["destination"] or b["destination"] != destination:
                continue
            if a["scheduled_arrival_time_est"] > b["scheduled_departure_time_est"]:
                continue
            first, second = _listing(a, date), _listing(b, date2)
            if first is not None and second is not None:
                out.append([first, second])
    return out


def list_all_airports(state: dict[str, Any]) -> dict[str, str]:
    """List every airport code and its city."""
    return dict(AIRPORTS)


def calculate(state: dict[str, Any], expression: str) -> str:
    """Evaluate an arithmetic expression (digits, + - * / ( ) and spaces only)."""
    if not expression or any(c not in "0123456789+-*/(). " for c in expression):
        raise AirlineError("invalid characters in expression")
    if "**" in expression or len(expression) > 500:  # no powers: 9**9**9 would never return
        raise AirlineError("only + - * / and parentheses, at most 500 characters")
    try:
        value = eval(expression, {"__builtins__": {}}, {})
    except Exception as exc:
        raise AirlineError(str(exc)) from exc
    return str(round(float(value), 2))


def think(state: dict[str, Any], thought: str) -> str:
    """Think out loud; changes nothing and fetches nothing."""
    return ""


def transfer_to_human_agents(state: dict[str, Any], summary: str) -> str:
    """Transfer the user to a human agent with a summary (only when no tool can help)."""
    return "Transfer successful"


TOOLS: list[Callable[..., Any]] = [
    book_reservation, calculate, cancel_reservation, get_reservation_details, get_user_details,
    list_all_airports, search_direct_flight, search_onestop_flight, send_certificate, think,
    transfer_to_human_agents, update_reservation_baggages, update_reservation_flights,
    update_reservation_passengers,
]  # fmt: skip
