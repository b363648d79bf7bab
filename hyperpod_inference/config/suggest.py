""""Did you mean": the nearest field name for an unknown key, at any depth of the config.

The model a key belongs to is found by walking the config's models along the error's path (field aliases, list
items, mapping values, optional and union types), so ``endpoints[0].autoscalingSpec`` is compared with the
``Endpoint``'s keys and ``endpoints[0].weightCache.hostpath`` with the ``WeightCache``'s.
"""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from ..facts.production import MAX_UNKNOWN_LISTED


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The models an annotation may hold (through Optional, unions, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _models_in(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
    return []


def _children(annotation: Any) -> list[Any]:
    """The item / value annotations of a list or mapping annotation (through Optional, Annotated)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _children(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [c for arg in typing.get_args(annotation) for c in _children(arg)]
    if origin in (list, tuple, set, frozenset):
        return list(typing.get_args(annotation)[:1])
    if origin is dict:
        return list(typing.get_args(annotation)[1:2])
    return []


def _field(model: type[BaseModel], key: str) -> Any:
    for name, info in model.model_fields.items():
        if (info.alias or name) == key:
            return info.annotation
    return None


def model_at(root: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model whose key ``loc`` ends in (``loc`` without its last part leads to it), or None."""
    current: list[Any] = [root]
    for part in loc[:-1]:
        nxt: list[Any] = []
        for annotation in current:
            fields = [f for m in _models_in(annotation) if isinstance(part, str)
                      and (f := _field(m, part)) is not None]
            nxt += fields or _children(annotation)
        current = nxt
    models = [m for annotation in current for m in _models_in(annotation)]
    return models[0] if models else None


def _keys(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


def nearest(word: str, choices: list[str] | tuple[str, ...], cutoff: float = 0.6) -> str | None:
    """The closest of ``choices`` to ``word`` (case-insensitive), or None."""
    lowered = {c.lower(): c for c in choices}
    match = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=cutoff)
    return lowered[match[0]] if match else None


def unknown_key_text(key: str, keys: list[str], *, list_known: bool = True) -> str:
    """``unknown key; did you mean <nearest>?``, or the known keys when none is close (``list_known`` False: said
    already for another key of the mapping)."""
    guess = nearest(key, keys)
    hint = (f"; did you mean {guess}?" if guess else f" (known keys: {', '.join(sorted(keys))})" if list_known
            else " (known keys: as above)")
    return f"unknown key{hint}"


def line_errors(err: ValidationError, items: list[Any] | None = None) -> list[InitErrorDetails]:
    """A ValidationError's errors (``items``: its ``errors()``, when read already) as line errors again (type, path,
    message and context kept)."""
    out = []
    for item in err.errors(include_url=False) if items is None else items:
        ctx = {k: v for k, v in (item.get("ctx") or {}).items() if k != "error"}
        out.append(InitErrorDetails(type=PydanticCustomError(item["type"], "{msg}", {**ctx, "msg": item["msg"]}),
                                    loc=tuple(item["loc"]), input=item.get("input")))
    return out


def with_suggestions(model: type[BaseModel], err: ValidationError) -> ValidationError | None:
    """``err`` with each unknown key of ``model`` itself (a path of one key) given the nearest field name; past
    MAX_UNKNOWN_LISTED of them, one error at the model counts the rest (``and 23,990 more unknown keys``), so the
    comparisons and the errors the enclosing models carry stay bounded. None when it has no unknown key."""
    items = err.errors(include_url=False)
    if not any(i["type"] == "extra_forbidden" and len(i["loc"]) == 1 for i in items):
        return None
    keys = _keys(model)
    out = []
    unknown = 0
    listed = False  # the known keys, listed once
    for item, line in zip(items, line_errors(err, items), strict=True):
        if item["type"] == "extra_forbidden" and len(item["loc"]) == 1:
            unknown += 1
            if unknown > MAX_UNKNOWN_LISTED:
                continue
            message = unknown_key_text(str(item["loc"][0]), keys, list_known=not listed)
            listed = listed or "(known keys:" in message
            line = InitErrorDetails(type=PydanticCustomError("unknown_key", "{msg}", {"msg": message}),
                                    loc=tuple(item["loc"]), input=item.get("input"))
        out.append(line)
    if unknown > MAX_UNKNOWN_LISTED:
        out.append(InitErrorDetails(type=PydanticCustomError(
            "unknown_keys_counted", "{msg}", {"msg": f"and {unknown - MAX_UNKNOWN_LISTED:,} more unknown keys"}),
            loc=(), input=None))
    return ValidationError.from_exception_data(model.__name__, out)


def unknown_key_message(root: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """The message for an unknown key at ``loc`` of ``root`` (the whole file's model): not a field, the nearest field
    name when one is close."""
    key = loc[-1] if loc else ""
    model = model_at(root, loc)
    if model is None or not isinstance(key, str):
        return "unknown key (not a field of the config)"
    return unknown_key_text(key, _keys(model))
