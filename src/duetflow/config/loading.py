"""Loading a run config: YAML file, ``DUETFLOW__...`` environment overrides, validation
errors that name the key (and the variable that set it)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from duetflow.bounded_yaml import load_yaml
from duetflow.config.run_config import RunConfig
from duetflow.errors import ConfigError, brief_repr

ENV_PREFIX = "DUETFLOW__"


def _set_path(tree: dict[str, Any], keys: list[str], value: Any) -> None:
    node = tree
    for k in keys[:-1]:
        nxt = node.setdefault(k, {})
        if not isinstance(nxt, dict):
            raise ConfigError(f"environment override: {'.'.join(keys)} goes through a non-section")
        node = nxt
    node[keys[-1]] = value


def env_overrides(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``DUETFLOW__RENDER__GAP_MS_MIN=190`` → ``{"render": {"gap_ms_min": 190}}``.

    A value that is not a YAML scalar/flow value raises ConfigError naming the variable.
    """
    environ = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for key, raw in sorted(environ.items()):
        path = _env_path(key)
        if path:
            try:
                value = load_yaml(raw, max_nodes=1000)
            except yaml.YAMLError as e:
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise ConfigError(
                    f"environment {key}: cannot parse {brief_repr(raw)} as a YAML value ({first})"
                ) from None
            _set_path(out, path, value)
    return out


def _env_path(key: str) -> list[str]:
    if not key.startswith(ENV_PREFIX):
        return []
    return [p.lower() for p in key[len(ENV_PREFIX) :].split("__") if p]


def deep_merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``extra``, nested mappings merged key by key (neither is changed)."""
    merged = dict(base)
    for k, v in extra.items():
        if isinstance(v, Mapping) and isinstance(merged.get(k), dict):
            merged[k] = deep_merge(merged[k], v)
        else:
            merged[k] = v
    return merged


def _format_errors(
    err: ValidationError, source: str, env_keys: Mapping[tuple[str, ...], str] | None = None
) -> str:
    """One line per error, naming the key (and the environment variable that set it)."""
    lines = []
    for e in err.errors():
        parts = tuple(str(p) for p in e["loc"])
        loc = ".".join(parts) or "<root>"
        where = source
        for n in range(len(parts), 0, -1):  # the variable that set this key or a section above
            if env_keys and parts[:n] in env_keys:
                where = f"environment {env_keys[parts[:n]]}"
                break
        else:  # a section-level check (min <= max ...): the variables that set keys inside it
            inside = sorted(v for k, v in (env_keys or {}).items() if k[: len(parts)] == parts)
            if parts and inside:
                where = f"environment {', '.join(inside)}"
        if e["type"] == "extra_forbidden":
            lines.append(f"{where}: unknown key '{loc}'")
        else:
            msg = str(e["msg"]).removeprefix("Value error, ")
            lines.append(f"{where}: {loc}: {msg} (got {brief_repr(e.get('input'))})")
    return "\n".join(lines)


def build_config(
    data: Mapping[str, Any] | None = None,
    *,
    source: str = "<config>",
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> RunConfig:
    """Validate a config mapping + env overrides + explicit overrides (later wins).

    Every bound is checked here; a bad value raises ConfigError with one line per problem
    naming the key (and the ``DUETFLOW__...`` variable when one set it).
    """
    env = os.environ if environ is None else environ
    merged = deep_merge(dict(data or {}), env_overrides(env))
    env_keys = {tuple(p): k for k in env if (p := _env_path(k))}
    if overrides:
        merged = deep_merge(merged, overrides)
    try:
        return RunConfig.model_validate(merged)
    except ValidationError as err:
        lines = _format_errors(err, source, env_keys).splitlines()
        lines += _hidden_problems(merged, err, source, env_keys, set(lines))
        raise ConfigError("\n".join(lines)) from None


#: Rounds of :func:`_hidden_problems` (each can only uncover checks the previous one hid).
_HIDDEN_ROUNDS = 3


def _drop(tree: Any, loc: tuple[Any, ...]) -> bool:
    """Remove the value at ``loc`` from a (copied) config tree; False when there is none."""
    node = tree
    for k in loc[:-1]:
        in_dict = isinstance(node, dict) and k in node
        in_list = isinstance(node, list) and isinstance(k, int) and 0 <= k < len(node)
        if not (in_dict or in_list):
            return False
        node = node[k]
    if isinstance(node, dict) and loc and loc[-1] in node:
        del node[loc[-1]]
        return True
    return False


def _hidden_problems(
    merged: Mapping[str, Any],
    err: ValidationError,
    source: str,
    env_keys: Mapping[tuple[str, ...], str],
    seen: set[str],
) -> list[str]:
    """Problems a field error hid: pydantic skips a section's cross-field checks (``min <=
    max``) when one of its fields is invalid, so the bad fields are removed and the rest checked
    again, until nothing new appears. A check that names a removed key is left out: it would
    judge the default that stood in for the user's value."""
    import copy

    tree = copy.deepcopy(dict(merged))
    removed: list[str] = []
    out: list[str] = []
    for _ in range(_HIDDEN_ROUNDS):
        dropped = False
        for e in err.errors():
            section_check = isinstance(e.get("input"), dict) and e["type"] != "extra_forbidden"
            if not section_check and _drop(tree, tuple(e["loc"])):
                dropped = True
                removed.append(".".join(str(p) for p in e["loc"]))
        if not dropped:
            break
        try:
            RunConfig.model_validate(tree)
            break
        except ValidationError as again:
            err = again
            lines = _format_errors(again, source, env_keys).splitlines()
            for e, line in zip(again.errors(), lines, strict=True):
                msg = str(e["msg"])
                names_removed = any(
                    re.search(rf"(?<![\w.]){re.escape(r)}(?![\w])", msg) for r in removed
                )
                if line not in seen and not names_removed:
                    seen.add(line)
                    out.append(line)
    return out


def load_config(
    path: str | Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> RunConfig:
    """Load a YAML config file (or defaults when ``path`` is None).

    Relative paths inside the file are resolved against the file's folder, so a config can be
    run from anywhere.
    """
    if path is None:
        return build_config({}, environ=environ, overrides=overrides)
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: config file not found") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p}: not UTF-8 (byte {e.start})") from None
    try:
        data = load_yaml(text) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: invalid YAML: {' '.join(str(e).split())}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: top level must be a mapping, got {type(data).__name__}")
    data = _resolve_relative(data, p.parent)
    return build_config(data, source=str(p), environ=environ, overrides=overrides)


def _resolve_relative(data: dict[str, Any], base: Path) -> dict[str, Any]:
    def fix(v: Any) -> Any:
        if isinstance(v, str) and v and not os.path.isabs(v) and "://" not in v:
            return str((base / v).resolve())
        return v

    out = dict(data)
    if "workdir" in out:
        out["workdir"] = fix(out["workdir"])
    if isinstance(out.get("corpora"), list):
        out["corpora"] = [
            {**c, "root": fix(c.get("root"))} if isinstance(c, dict) else c for c in out["corpora"]
        ]
    for sec, key in (("synth", "scripts"), ("release", "store"), ("synth", "model_path")):
        if isinstance(out.get(sec), dict) and out[sec].get(key):
            out[sec] = {**out[sec], key: fix(out[sec][key])}
    return out
