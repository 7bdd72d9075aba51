"""User key remapping: a TOML file that maps binding ids to keys, applied with ``App.set_keymap``.

The file is found, in order, at the path given with ``fpdebug view --keymap FILE``, at the path in
the ``FPDEBUG_KEYMAP`` environment variable, or at ``$XDG_CONFIG_HOME/fpdebug/keymap.toml``
(``~/.config/fpdebug/keymap.toml``). It has one table::

    [keys]
    cursor-down = "j,down,ctrl+n"   # binding id = comma-separated keys
    next-iteration = "right"

Every binding id is listed by the ``?`` help screen and in docs/guide/debugger.md. An unknown id or a value
that is not a string is an error that names the file and the ids that exist.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

from fpdebug.errors import ConfigError

__all__ = ["KEYMAP_ENV", "default_keymap_path", "find_keymap", "load_keymap"]

KEYMAP_ENV = "FPDEBUG_KEYMAP"
"""The environment variable naming a keymap file."""


def default_keymap_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/fpdebug/keymap.toml`` (``~/.config`` when the variable is unset)."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "fpdebug" / "keymap.toml"


def find_keymap(
    explicit: str | os.PathLike[str] | None = None, *, environ: Mapping[str, str] | None = None
) -> Path | None:
    """The keymap file to use: the explicit one, the environment's, or the default if it exists.

    Raises:
        ConfigError: An explicit or environment path does not exist.
    """
    environ = os.environ if environ is None else environ
    for origin, value in (("--keymap", explicit), (KEYMAP_ENV, environ.get(KEYMAP_ENV))):
        if value:
            path = Path(value)
            if not path.is_file():
                raise ConfigError(f"{path}: keymap file not found (from {origin})")
            return path
    default = default_keymap_path(environ)
    return default if default.is_file() else None


def load_keymap(path: str | os.PathLike[str], *, known_ids: Iterable[str] | None = None) -> dict[str, str]:
    """Read a keymap file.

    Args:
        path: The TOML file.
        known_ids: The binding ids that exist; any other id is refused.

    Returns:
        Binding id → comma-separated keys.

    Raises:
        ConfigError: The file cannot be read, is not TOML, or maps an unknown id or a non-string.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the keymap: {error.strerror or error}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: the keymap is not valid TOML: {error}") from None
    keys = data.get("keys")
    if not isinstance(keys, dict):
        raise ConfigError(f'{path}: the keymap needs a [keys] table (binding id = "key,key")')
    known = set(known_ids) if known_ids is not None else None
    keymap: dict[str, str] = {}
    for binding_id, value in keys.items():
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f'{path}: keys.{binding_id} must be a non-empty string such as "j,down"')
        if known is not None and binding_id not in known:
            raise ConfigError(
                f"{path}: unknown binding id {binding_id!r}; the ids are: {', '.join(sorted(known))}"
            )
        keymap[binding_id] = ",".join(part.strip() for part in value.split(",") if part.strip())
    return keymap
