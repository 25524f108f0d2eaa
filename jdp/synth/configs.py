"""Method configs as data: to and from JSON, dotted overrides, and their options listed.

A method's config is a frozen dataclass of JSON values that may nest other config dataclasses
(``P3GMConfig.dpsgd`` is a :class:`jdp.dpsgd.DPSGDConfig`, ``.performance`` a
:class:`jdp.dpsgd.Performance` whose ``clipping`` is one of four path classes). Everything
that saves, loads, overrides or lists a config goes through this one module:

* :func:`config_to_dict` / :func:`config_from_dict` -- ``model.json``'s ``config``
  (:mod:`jdp.synth.io`); a nested config is a dict tagged with its class's name, which on
  loading must be one of the classes the field's annotation names (nothing else is built);
* :func:`apply_overrides` -- ``jdp fit --set dpsgd.sampling_prob=0.01`` (dotted paths);
* :func:`config_options` -- every option, dotted, with its default (``jdp fit --method M
  --help``).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

__all__ = ["apply_overrides", "config_from_dict", "config_options", "config_to_dict"]

#: The key naming a nested config's class in its dict.
TYPE_KEY = "type"


def _is_config(value: object) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _fields(cls: type) -> list[dataclasses.Field]:
    return [f for f in dataclasses.fields(cls) if f.init]


def _json_value(value: Any, where: str) -> Any:
    """``value`` as JSON types: nested configs tagged, tuples as lists, a batch selection by
    its name; anything else that JSON cannot hold is refused, naming the field."""
    from jdp.dpsgd.batch_selection import BatchSelection  # JAX, flax: only when saving

    if _is_config(value):
        return {TYPE_KEY: type(value).__name__, **config_to_dict(value, where)}
    if isinstance(value, tuple | list):
        return [_json_value(v, where) for v in value]
    if isinstance(value, BatchSelection):
        return value.name  # the strategy's name rebuilds it
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(
        f"config field {where!r} holds a {type(value).__name__}, which a saved model cannot "
        "hold (a mesh or a schedule is a runtime choice: fit with the plain value)"
    )


def config_to_dict(config: Any, where: str = "") -> dict[str, Any]:
    """The config's init fields as JSON values (nested configs tagged with their class)."""
    out = {}
    for f in _fields(type(config)):
        name = f"{where}.{f.name}" if where else f.name
        out[f.name] = _json_value(getattr(config, f.name), name)
    return out


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _config_classes(annotation: Any) -> dict[str, type]:
    """The dataclasses an annotation names (itself, or the members of a union), by name."""
    args = typing.get_args(annotation)
    members = (
        args
        if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union
        else (annotation,)
    )
    return {c.__name__: c for c in members if isinstance(c, type) and dataclasses.is_dataclass(c)}


def config_from_dict(cls: type, data: Mapping[str, Any]) -> Any:
    """Inverse of :func:`config_to_dict` for the config class ``cls``."""
    fields = {f.name for f in _fields(cls)}
    unknown = set(data) - fields - {TYPE_KEY}
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields in saved model: {sorted(unknown)}")
    hints = _hints(cls)
    kwargs = {}
    for name, value in data.items():
        if name == TYPE_KEY:
            continue
        kwargs[name] = _from_json(hints.get(name), value, f"{cls.__name__}.{name}")
    return cls(**kwargs)


def _from_json(annotation: Any, value: Any, where: str) -> Any:
    if isinstance(value, Mapping) and TYPE_KEY in value:
        classes = _config_classes(annotation)
        if value[TYPE_KEY] not in classes:
            raise ValueError(
                f"{where}: expected a config of {sorted(classes)}, got {value[TYPE_KEY]!r}"
            )
        return config_from_dict(classes[value[TYPE_KEY]], value)
    if isinstance(value, list):
        return tuple(_from_json(None, v, where) for v in value)
    return value


def apply_overrides(config: Any, overrides: Mapping[str, Any]) -> Any:
    """``config`` with each ``dotted.name = value`` replaced (``{"dpsgd.sampling_prob":
    0.01, "hidden": 64}``); a nested config given whole takes a dict of its fields (with a
    ``"type"`` key: a config of that class). Unknown names raise ``TypeError`` listing the
    options (as an unexpected keyword would); every replaced config validates itself."""
    nested: dict[str, dict[str, Any]] = {}
    direct: dict[str, Any] = {}
    names = {f.name: f for f in _fields(type(config))}
    for key, value in overrides.items():
        head, _, rest = key.partition(".")
        if head not in names:
            options = sorted(name for name, _ in config_options(type(config)))
            raise TypeError(f"unknown option {key!r}; options: {options}")
        if rest:
            nested.setdefault(head, {})[rest] = value
        else:
            direct[head] = value
    for head, inner in nested.items():
        current = direct.get(head, getattr(config, head))
        if not _is_config(current):
            raise TypeError(f"option {head!r} has no fields to set ({'.'.join([head, *inner])})")
        direct[head] = apply_overrides(current, inner)
    for head, value in list(direct.items()):
        current = getattr(config, head)
        if isinstance(value, Mapping) and TYPE_KEY in value:  # a whole config of a named class
            direct[head] = _from_json(_hints(type(config)).get(head), value, head)
        elif _is_config(current) and isinstance(value, Mapping):
            direct[head] = apply_overrides(current, value)
        elif isinstance(value, list):
            direct[head] = tuple(value)
    return dataclasses.replace(config, **direct) if direct else config


def config_options(cls: type, prefix: str = "", defaults: Any = None) -> Iterator[tuple[str, Any]]:
    """``(dotted name, default)`` of every option of the config class ``cls``, the fields of
    a nested config of one class included with the nested default's values (a field that
    takes one of several config classes, such as a clipping path, is one option; a field
    without a default gives ``dataclasses.MISSING``)."""
    for f in _fields(cls):
        name = f"{prefix}{f.name}"
        if defaults is not None:
            default = getattr(defaults, f.name)
        elif f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        if _is_config(default) and len(_config_classes(_hints(cls).get(f.name))) == 1:
            yield from config_options(type(default), f"{name}.", default)
        else:  # a plain value, or one of several config classes (chosen whole)
            yield name, default
