"""Build frozen models from values our own parsers already checked, without validating again.

Parsers produce every field value with the right type by construction (``jsonable`` copies,
``parse_ts`` datetimes, ``str()`` ids, validated child models), so pydantic's validation of
the same values would only walk every JSON tree once more; ``model_construct`` is no cheaper
(it inspects default factories on every call). The result is indistinguishable from a
validated instance: same ``__dict__`` (field order, defaults), same ``model_fields_set``.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

M = TypeVar("M", bound=BaseModel)

# BaseModel's own slot descriptors, called directly: cheaper than object.__setattr__'s lookup
_SLOTS = BaseModel.__dict__
_set_dict = _SLOTS["__dict__"].__set__
_set_fields = _SLOTS["__pydantic_fields_set__"].__set__
_set_extra = _SLOTS["__pydantic_extra__"].__set__
_set_private = _SLOTS["__pydantic_private__"].__set__
_new = object.__new__

#: per model: every field with its plain default (field order), and the fields whose default
#: is a factory (a fresh value per instance)
_PLAN: dict[type[BaseModel], tuple[dict[str, Any], tuple[tuple[str, Any], ...]]] = {}


def _plan(cls: type[BaseModel]) -> tuple[dict[str, Any], tuple[tuple[str, Any], ...]]:
    plan = _PLAN.get(cls)
    if plan is None:
        template = {
            name: None if f.default is PydanticUndefined else f.default
            for name, f in cls.model_fields.items()
        }
        factories = tuple(
            (name, f.default_factory)
            for name, f in cls.model_fields.items()
            if f.default_factory is not None
        )
        plan = _PLAN[cls] = (template, factories)
    return plan


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of ``cls`` from already-valid ``values`` (missing fields get defaults).

    Only for values whose types our own code guarantees, naming only fields of ``cls``;
    anything from outside goes through normal validation.
    """
    template, factories = _plan(cls)
    data = template.copy()  # field order comes from the template
    data.update(values)
    for name, factory in factories:
        if name not in values:
            data[name] = factory()
    m: M = _new(cls)
    _set_dict(m, data)
    _set_fields(m, set(values))
    _set_extra(m, None)
    _set_private(m, None)
    return m


def replaced(m: M, update: dict[str, Any]) -> M:
    """``m.model_copy(update=update)`` for trusted values, without pydantic's copy machinery.

    Same result: ``__dict__`` copied then updated (field order kept), updated fields marked
    as set. Only for models without private attributes or extras (ours are frozen, forbid).
    """
    new: M = _new(type(m))
    data = m.__dict__.copy()
    data.update(update)
    _set_dict(new, data)
    _set_fields(new, m.__pydantic_fields_set__ | update.keys())
    _set_extra(new, None)
    _set_private(new, None)
    return new
