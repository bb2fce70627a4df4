"""Build frozen pydantic models from values our own code already checked, without validating.

The one place that touches pydantic's internals for speed (formats, rewards and grading build
thousands of models a second). Parsers produce every field value with the right type by
construction (``jsonable`` copies, ``parse_ts`` datetimes, ``str()`` ids, validated child
models) and rewards clamp their own numbers, so validating the same values again would only
walk every JSON tree once more; ``model_construct`` is no cheaper (it inspects default
factories on every call). The result is indistinguishable from a validated instance: same
``__dict__`` (field order, defaults), same ``model_fields_set``.

Anything from outside goes through normal validation. ``tests/unit/fastmodel`` checks, for
every model built here, that every field is set (a field added to a model but not to the
code that builds it fails there, not silently in production).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

__all__ = ["replaced", "trusted"]

M = TypeVar("M", bound=BaseModel)

# BaseModel's own slot descriptors, called directly: cheaper than object.__setattr__'s lookup
_SLOTS = BaseModel.__dict__
_set_dict = _SLOTS["__dict__"].__set__
_set_fields = _SLOTS["__pydantic_fields_set__"].__set__
_set_extra = _SLOTS["__pydantic_extra__"].__set__
_set_private = _SLOTS["__pydantic_private__"].__set__
_new = object.__new__

_Plan = tuple[dict[str, Any], tuple[tuple[str, Any], ...], set[str]]
#: per model: every field with its plain default (field order), the fields whose default is a
#: factory (a fresh value per instance), and the set of all field names
_PLAN: dict[type[BaseModel], _Plan] = {}


def _plan(cls: type[BaseModel]) -> _Plan:
    plan = _PLAN.get(cls)
    if plan is None:
        if not cls.model_config.get("frozen"):
            # the all-fields set below is shared by instances: only safe when none can change
            raise TypeError(f"{cls.__name__}: fastmodel builds frozen models only")
        template = {
            name: None if f.default is PydanticUndefined else f.default
            for name, f in cls.model_fields.items()
        }
        factories = tuple(
            (name, f.default_factory)
            for name, f in cls.model_fields.items()
            if f.default_factory is not None
        )
        plan = _PLAN[cls] = (template, factories, set(template))
    return plan


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of frozen ``cls`` from already-valid ``values`` (missing fields get defaults).

    Only for values whose types our own code guarantees, naming only fields of ``cls``. When
    ``values`` names every field (in declared order) it becomes the instance's ``__dict__``
    as is: the caller hands it over.
    """
    plan = _PLAN.get(cls) or _plan(cls)
    if len(values) == len(plan[2]):  # every field named: results and rollouts
        data, fields_set = values, plan[2]
    else:
        data = plan[0].copy()  # field order comes from the template
        data.update(values)
        for name, factory in plan[1]:
            if name not in values:
                data[name] = factory()
        fields_set = set(values)
    m: M = _new(cls)
    _set_dict(m, data)
    _set_fields(m, fields_set)
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
