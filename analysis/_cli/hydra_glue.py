"""The command line of every entry point: Hydra overrides, checked before any work.

:func:`command_main` composes ``configs/<command>.yaml`` with Hydra's compose API and the
``key=value`` overrides, then checks every key and value against
:mod:`analysis._cli.config_check` before the command loads anything. A mistake ends in one
line naming the key and what is allowed (``did you mean`` for a misspelt key or value),
exit code 2. A refusal during the work (verification, a record, a file) is one line and
exit code 1. ``E2W_DEBUG=1`` adds the full traceback. ``--help`` prints the command's own
help, rendered from the same key table.

Paths follow one rule in every command: a default path is relative to the repository (so
commands work from any working directory; an installed package uses its shipped copies,
:mod:`analysis._fs.resources`), a path given on the command line is relative to the working
directory. Caches and journals default to the user cache directory. No command leaves a
Hydra run directory or changes the working directory.
"""
from __future__ import annotations

import math
import os
import re
import sys
import traceback
from pathlib import Path
from typing import Callable

import yaml
from omegaconf import OmegaConf

from .._fs.errors import UserError
from .._fs.resources import REPO_ROOT, config_dir, default_export_root, in_repository, user_cache_dir

# configs/ of the clone, or the copy an installed wheel ships (analysis/resources.py)
CONFIG_PATH = str(config_dir())


def _state_dir_of(export_root) -> str:
    from .._runs.journal import default_state_dir
    return str(default_state_dir(resolve_path(export_root)))


# Default paths in configs/*.yaml. A clone keeps its committed export and outputs at the
# repository root; an installed package reads its shipped export and writes only where
# it is told (out_dir and export_root of writing commands are then required). Caches and
# journals go under the user cache directory, never into the repository.
for _name, _fn in {
        "repo_root": lambda: str(REPO_ROOT),
        "e2w_export": lambda: str(default_export_root()),
        "e2w_repo_out": lambda: str(REPO_ROOT) if in_repository() else None,
        "e2w_repo_export": lambda: str(REPO_ROOT / "frozen_exports") if in_repository() else None,
        # the trace viewer's site (git-ignored build/view in a clone; docs/viewer.md)
        "e2w_view_out": lambda: str(REPO_ROOT / "build" / "view") if in_repository() else None,
        # the HD-EPIC copy beside a clone; an installed package has none (source= required)
        "e2w_hdepic": lambda: str(REPO_ROOT.parent / "shared" / "hd-epic") if in_repository() else None,
        "e2w_cache": lambda sub="": str(user_cache_dir() / sub),
        "e2w_state": _state_dir_of,
}.items():
    if not OmegaConf.has_resolver(_name):
        OmegaConf.register_new_resolver(_name, _fn)

DEBUG_ENV = "E2W_DEBUG"
EXIT_REFUSED = 1
EXIT_CONFIG = 2

__all__ = ["REPO_ROOT", "CONFIG_PATH", "resolve_path", "command_main", "compose_config",
           "render_help", "UserError", "EXIT_REFUSED", "EXIT_CONFIG"]


def resolve_path(path: str | Path) -> Path:
    """A config path: absolute as given, relative to the working directory otherwise."""
    return Path(path).expanduser().resolve()


def _debug() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def _flat_keys(node, prefix="") -> list[str]:
    out = []
    for k, v in node.items():
        key = f"{prefix}{k}"
        out.append(key)
        if isinstance(v, dict):
            out += _flat_keys(v, key + ".")
    return out


def _get(node, dotted: str):
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _group_options(group: str) -> list[str]:
    return sorted(p.stem for p in (Path(CONFIG_PATH) / group).glob("*.yaml"))


def non_ascii_problem(overrides) -> tuple[str, str] | None:
    """``(key, message)`` for the first override holding a character Hydra's parser
    refuses that looks like ASCII or cannot be seen (full-width, zero-width, Cyrillic
    look-alikes), or None: such a name was typed or pasted, and the message says which
    character, where, and the plain name when there is one.

    >>> print(non_ascii_problem(["planner=lex\N{ZERO WIDTH SPACE}icon"])[1])
    planner=lex\u200bicon: character 4 of the value is U+200B (ZERO WIDTH SPACE), which is not ASCII (names are ASCII letters, digits, '_' and '-'); retype it: planner=lexicon
    """
    import unicodedata
    # the Cyrillic and Greek letters that look like Latin ones in most fonts
    look = str.maketrans("аеорсухіјѕԁԛԝАВЕКМНОРСТХІЈЅοΑΒΕΗΙΚΜΝΟΡΤΧΥΖ",
                         "aeopcyxijsdqwABEKMHOPCTXIJSoABEHIKMNOPTXYZ")
    for text in overrides:
        if not isinstance(text, str) or text.isascii():
            continue
        key, _, value = text.partition("=")
        where = "key" if not key.isascii() else "value"
        part = key if where == "key" else value
        i, ch = next((i, c) for i, c in enumerate(part) if not c.isascii())
        name = unicodedata.name(ch, "unnamed")
        plain = "".join(c for c in unicodedata.normalize("NFKC", part).translate(look)
                        if unicodedata.category(c) != "Cf")
        hint = (f"; retype it: {plain if where == 'key' else key}="
                f"{plain if where == 'value' else value}" if plain.isascii() else
                "; retype it in ASCII")
        shown = text.encode("ascii", "backslashreplace").decode()
        return (key.strip().encode("ascii", "backslashreplace").decode(),
                f"{shown}: character {i + 1} of the {where} is U+{ord(ch):04X} ({name}), "
                f"which is not ASCII (names are ASCII letters, digits, '_' and '-'){hint}")
    return None


def compose_config(command: str, overrides: list[str]):
    """Compose ``configs/<command>.yaml`` with ``overrides``, checking every key and value.

    Raises :class:`analysis.settings.ConfigError` naming the key.

    >>> compose_config("tables", ["stats.n_resample=5"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    analysis.settings.ConfigError: unknown key 'stats.n_resample' for analysis.tables; did you mean stats.n_resamples? ...
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from .config_check import COMMANDS, ConfigError, suggest

    spec = COMMANDS[command]
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except HydraException as exc:
        odd = non_ascii_problem(overrides)
        if odd:
            raise ConfigError(odd[0], odd[1]) from None
        first = str(exc).strip().splitlines()[0]
        raise ConfigError("", f"cannot parse the overrides {overrides}: {first} "
                              "(write key=value, e.g. stats.n_resamples=2000)") from None
    groups, values = [], []
    for ov, text in zip(parsed, overrides):
        key = ov.get_key_element()
        if ov.is_delete():
            raise ConfigError(key.lstrip("~"), f"{text}: keys cannot be deleted here")
        if ov.package is not None:
            raise ConfigError(key, f"{text}: package overrides are not supported")
        key = key.lstrip("+")
        if key in spec.groups:
            options = _group_options(key)
            val = ov.value()
            if val not in options:
                extra = (" (or planner=custom planner.name=package.module:ClassName)"
                         if key == "planner" else "")
                raise ConfigError(key, f"{key}={val!r}: expected one of {options}{extra}"
                                       f"{suggest(val, options)}")
            groups.append(f"{key}={val}")
        else:
            values.append((key, ov, text))

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=CONFIG_PATH, version_base="1.3",
                                   job_name=command):
            base_data = _plain_config(command) if not groups else None
            if base_data is None:  # config groups: only Hydra knows the composed keys
                base = compose(config_name=command, overrides=groups)
                base_data = OmegaConf.to_container(base, resolve=False)
            known = set(_flat_keys(base_data))
            sections = {k for k in known if isinstance(_get(base_data, k), dict)}
            fixed = []
            for key, ov, text in values:
                free = any(key.startswith(p) for p in spec.free_prefixes)
                if key not in known and not free:
                    hint = spec.hints.get(key)
                    did = f"; did you mean {hint}?" if hint else suggest(key, sorted(known))
                    raise ConfigError(key, f"unknown key {key!r} for analysis.{command}{did}"
                                           f" (keys: {', '.join(k.name for k in spec.keys)};"
                                           f" see python -m analysis.{command} --help)")
                if key in sections and not any((key + ".").startswith(p)
                                               for p in spec.free_prefixes):
                    inner = sorted(k for k in known if k.startswith(key + "."))
                    raise ConfigError(key, f"{text}: {key} is a section; set one of its keys, "
                                           f"e.g. {inner[0]}=... (keys: {', '.join(inner)})")
                # '+key=' of a known key, or '++key=', is just 'key=' here
                fixed.append(text.lstrip("+") if key in known else "++" + text.lstrip("+"))
            cfg = compose(config_name=command, overrides=groups + fixed)
            data = OmegaConf.to_container(cfg, resolve=True)
    except ConfigError:
        raise
    except yaml.YAMLError as exc:   # a hand edit of a configs/ file
        mark = getattr(exc, "problem_mark", None)
        where = f"{mark.name}, line {mark.line + 1}, column {mark.column + 1}" if mark else CONFIG_PATH
        what = getattr(exc, "problem", None) or type(exc).__name__
        raise ConfigError("", f"{where}: YAML syntax error: {what}") from None
    except (HydraException, OmegaConfBaseException, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError("", f"configuration error: {first}") from None
    finally:
        GlobalHydra.instance().clear()
    data.pop("hydra", None)
    check_composed(command, data)
    return OmegaConf.create(data)


def check_composed(command: str, data: dict) -> None:
    """Check every key of a composed configuration ``data`` (plain containers, resolved):
    types, ranges, allowed values and the cross-key rules. Raises
    :class:`analysis.settings.ConfigError` naming the key."""
    from .config_check import COMMANDS, cross_checks

    spec = COMMANDS[command]
    _check_file_keys(command, spec, data)
    for k in spec.keys:
        node = data
        for part in k.name.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if k.type != "group":
            k.check(k.name, node)
    if command == "run":
        _check_planner_settings(data)
    cross_checks(command, data)


def _leaf_keys(node, prefix="") -> list[str]:
    out = []
    for k, v in node.items():
        out += _leaf_keys(v, f"{prefix}{k}.") if isinstance(v, dict) and v else [f"{prefix}{k}"]
    return out


def _check_file_keys(command: str, spec, data: dict) -> None:
    """A key no command option names can only come from a hand edit of a configs/ file
    (the command line's are refused before composing): name it, not the None its
    misspelt option is left with."""
    from .config_check import ConfigError, suggest
    known = {k.name for k in spec.keys}
    for key in _leaf_keys(data):
        if key in known or any(key.startswith(p) for p in spec.free_prefixes) \
                or any(k.startswith(key + ".") for k in known):
            continue
        raise ConfigError(key, f"unknown key {key!r} in {Path(CONFIG_PATH) / (command + '.yaml')} "
                               f"(or a file it composes){suggest(key, sorted(known))}")


def _plain_config(command: str) -> dict | None:
    """``configs/<command>.yaml`` unresolved, when it has no defaults list (then it is
    exactly what Hydra composes without overrides, at a quarter of the cost); else None."""
    data = OmegaConf.to_container(OmegaConf.load(Path(CONFIG_PATH) / f"{command}.yaml"),
                                  resolve=False)
    return None if "defaults" in data else data


def _http_url(v) -> bool:
    """Whether ``v`` is an http(s) URL with a host (``http://[::1`` is not: the client
    would fail on every request, and before it did, a run recorded no model reply)."""
    from urllib.parse import urlsplit
    if not isinstance(v, str) or not v.startswith(("http://", "https://")):
        return False
    try:
        parts = urlsplit(v)
        parts.port                       # raises ValueError for a port that is no number
    except ValueError:
        return False
    return bool(parts.hostname)


def _check_planner_settings(data: dict) -> None:
    """A built-in planner's settings keep the types of its configs/planner file."""
    from .config_check import ConfigError, suggest
    name = data["planner"].get("name")
    given = data["planner"].get("settings") or {}
    if not isinstance(given, dict):
        raise ConfigError("planner.settings", f"planner.settings={given!r}: expected a mapping")
    path = Path(CONFIG_PATH) / "planner" / f"{name}.yaml"
    if not path.exists():  # an import-path planner takes whatever settings it declares
        return
    defaults = OmegaConf.to_container(OmegaConf.load(path)).get("settings") or {}
    for k, v in given.items():
        key = f"planner.settings.{k}"
        if k not in defaults:
            known = (f"settings: {sorted(defaults)}" if defaults else
                     f"it takes no settings: configs/planner/{name}.yaml lists none")
            raise ConfigError(key, f"unknown key {key!r} for planner {name!r}"
                                   f"{suggest(k, defaults)} ({known})")
        d = defaults[k]
        ok = (d is None or (isinstance(d, bool) and isinstance(v, bool))
              or (isinstance(d, (int, float)) and not isinstance(d, bool)
                  and isinstance(v, (int, float)) and not isinstance(v, bool))
              or (isinstance(d, str) and isinstance(v, str)))
        if not ok:
            kind = {"int": "an integer", "float": "a number", "str": "a string",
                    "bool": "true or false"}.get(type(d).__name__, f"a {type(d).__name__}")
            raise ConfigError(key, f"{key}={v!r}: expected {kind} like {d!r}")
        if k.startswith("p_") and not 0 <= v <= 1:
            raise ConfigError(key, f"{key}={v!r}: expected a probability from 0 to 1")
        # every numeric setting of the shipped planners is a count, a size or seconds
        if isinstance(v, float) and not math.isfinite(v):
            raise ConfigError(key, f"{key}={v!r}: expected a finite number like {d!r}")
        if isinstance(d, int) and not isinstance(d, bool) and d >= 0 and not (
                isinstance(v, int) or (isinstance(v, float) and v.is_integer())):
            raise ConfigError(key, f"{key}={v!r}: expected a whole number like {d!r}")
        if isinstance(d, (int, float)) and not isinstance(d, bool) and d >= 0 and v < 0:
            raise ConfigError(key, f"{key}={v!r}: expected a number of 0 or more like {d!r}")
        if k.endswith("_url") and not _http_url(v):
            raise ConfigError(key, f"{key}={v!r}: expected an http:// or https:// URL like {d!r}")
        if k == "api_key_env" and v is not None and not (isinstance(v, str) and v):
            raise ConfigError(key, f"{key}={v!r}: expected the NAME of an environment variable "
                                   "(a string), or null for none")
        if k == "api_key_env" and v and v not in os.environ:
            raise ConfigError(key, f"{key}={v!r}: the environment variable {v} is not set "
                                   "(export it first; the key itself is never a setting)")


#: How --help shows a default path (``<user cache>``: $E2W_CACHE_DIR, else
#: ~/.cache/ego2world-analysis).
_SHOWN_DEFAULTS = {
    "${e2w_export:}": "<repo>/frozen_exports (installed package: its shipped read-only copy)",
    "${e2w_repo_out:}": "<repo> (installed package: required)",
    "${e2w_repo_export:}": "<repo>/frozen_exports (installed package: required)",
    "${e2w_view_out:}": "<repo>/build/view (installed package: required)",
    "${e2w_state:${export_root}}": "<user cache>/run_state/<export>",
    "${repo_root:}": "<repo>",
    "${oc.env:E2W_HDEPIC,${e2w_hdepic:}}": "$E2W_HDEPIC, else <repo>/../shared/hd-epic "
                                           "(installed package: required)",
}


def render_help(command: str) -> str:
    """The command's ``--help``: what it does, every key, two examples, exit codes."""
    import textwrap

    from .config_check import COMMANDS

    spec = COMMANDS[command]
    raw = OmegaConf.to_container(OmegaConf.load(Path(CONFIG_PATH) / f"{command}.yaml"),
                                 resolve=False)
    defaults_list = raw.pop("defaults", [])
    group_default = {next(iter(d)): next(iter(d.values())) for d in defaults_list
                     if isinstance(d, dict)}

    def default(name):
        if name in spec.groups:
            return str(group_default.get(name))
        node = raw
        for part in name.split("."):
            if not isinstance(node, dict) or part not in node:
                return "(from the group)"
            node = node[part]
        text = ("null" if node is None else str(node).lower() if isinstance(node, bool)
                else str(node))
        for ref, shown in _SHOWN_DEFAULTS.items():
            text = text.replace(ref, shown)
        text = re.sub(r"\$\{e2w_cache:([^}]*)\}", r"<user cache>/\1", text)
        env = re.fullmatch(r"\$\{oc\.env:(\w+),(.*)\}", text)
        return f"${env.group(1)}, else {env.group(2)}" if env else text

    lines = [f"python -m analysis.{command} [key=value ...]", ""]
    lines += textwrap.wrap(spec.does, 88) + [""]
    lines.append("Keys (type, default: meaning):")
    for k in spec.keys:
        lines.append(f"  {k.name}  ({k.type}, default {default(k.name)})")
        meaning = k.meaning + (f"; allowed: {', '.join(map(str, k.allowed()))}"
                               if k.allowed else "")
        lines += textwrap.wrap(meaning, 84, initial_indent="      ",
                               subsequent_indent="      ")
    for g in spec.groups:
        lines.append(f"  {g} choices: {', '.join(_group_options(g))}")
    lines += ["", "Paths: a default is relative to the repository (<repo>), a path you give "
              "is relative", "to your working directory.", "", "Examples:"]
    lines += [f"  {e}" for e in spec.examples]
    lines += ["", "Exit codes: 0 done; 1 refused or failed during the work (the message names "
              "the", "file, record or key); 2 bad configuration, refused before any work "
              "(the message", f"names the key). {DEBUG_ENV}=1 shows the full traceback of "
              "any error."]
    return "\n".join(lines) + "\n"


def _leave(prog: str, message: str, code: int, show_traceback: bool = True):
    """One line on stderr (the traceback first with ``E2W_DEBUG=1``), then exit ``code``;
    called inside an ``except`` block."""
    if show_traceback and _debug():
        traceback.print_exc()
    print(f"{prog}: {message}", file=sys.stderr)
    sys.exit(code)


def command_main(command: str, body: Callable, argv: list[str] | None = None) -> None:
    """Parse ``argv``, check the configuration, run ``body(cfg)`` and exit.

    ``body`` returns an exit code (or None for 0) and may raise :class:`UserError` or
    :class:`analysis.settings.ConfigError` for a one-line refusal.
    """
    from .config_check import ConfigError
    from .._fs.confine import state_refusals

    argv = list(sys.argv[1:] if argv is None else argv)
    prog = f"analysis.{command}"
    if "--help" in argv or "-h" in argv:
        sys.stdout.write(render_help(command))
        sys.exit(0)
    show_cfg = "--cfg" in argv
    if show_cfg:
        # Hydra's own form names what to print (``--cfg job``); ours prints the job config
        at = argv.index("--cfg")
        if at + 1 < len(argv) and argv[at + 1] in ("job", "hydra", "all"):
            if argv[at + 1] != "job":
                print(f"{prog}: --cfg {argv[at + 1]}: only the job's configuration is printed "
                      "(--cfg or --cfg job); these commands use no Hydra run settings",
                      file=sys.stderr)
                sys.exit(EXIT_CONFIG)
            del argv[at + 1]
    argv = [a for a in argv if a != "--cfg"]
    bad = [a for a in argv if a.startswith("-")]
    if bad:
        print(f"{prog}: unknown option {bad[0]!r} (options: --help, --cfg; settings are "
              "key=value)", file=sys.stderr)
        sys.exit(EXIT_CONFIG)
    try:
        cfg = compose_config(command, argv)
    except KeyboardInterrupt:  # checking a value may import libraries (seconds)
        _leave(prog, "interrupted", 130, show_traceback=False)
    except ConfigError as exc:
        _leave(prog, f"{exc} (nothing was done)", EXIT_CONFIG)
    if show_cfg:
        sys.stdout.write(OmegaConf.to_yaml(cfg))
        sys.exit(0)
    import warnings
    shown = warnings.formatwarning
    # a warning of the command (few episodes behind an interval) is one line naming the
    # command, not our source file and line
    warnings.formatwarning = lambda message, category, *a, **k: f"{prog}: {category.__name__}: {message}\n"
    try:
        code = body(cfg)
    except KeyboardInterrupt:
        _leave(prog, "interrupted", 130, show_traceback=False)
    except ConfigError as exc:
        _leave(prog, str(exc), EXIT_CONFIG)
    except UserError as exc:
        _leave(prog, str(exc), EXIT_REFUSED)
    except state_refusals() as exc:  # planted state, a busy lock, a disk fault: named already
        _leave(prog, str(exc), EXIT_REFUSED)
    except Exception as exc:  # noqa: BLE001 - the last line of defence against a traceback
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        _leave(prog, f"failed: {type(exc).__name__}: {first} (set {DEBUG_ENV}=1 for the "
               "traceback)", EXIT_REFUSED)
    finally:
        warnings.formatwarning = shown
    sys.exit(code or 0)
