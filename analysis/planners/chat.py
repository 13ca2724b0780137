"""Chat-model planner for any OpenAI-compatible endpoint (docs/llm.md).

The prompt is :func:`~analysis.executor.protocol.render_prompt` of the view after a fixed
system message (the same for every model); the reply's content is returned unchanged
(the runtime parses it structurally) with the endpoint's ``usage`` token counts. The
client (:mod:`analysis.planners.llm.client`) retries provider failures and, when they
persist, raises :class:`~analysis.executor.protocol.ProviderError`, which the runtime
records as ``provider_error`` (never ``parse_failure``). Requests and replies are
cached content-addressed (``cache_dir``), so a rerun replays without the provider.

``response_format`` selects constrained decoding: ``none`` (plain text), ``json_schema``
or ``json_object_schema`` (a typed schema built from each view,
:mod:`analysis.planners.llm.schema`). A typed schema is a different method, so such a
run gets its own planner name (``chat_schema``, as its config file configs/planner/chat_schema.yaml) and
``planner_config.response_format`` records it.

>>> p = ChatPlanner(base_url="http://127.0.0.1:9/v1", model="m")
>>> p.config()["model"], p.config()["response_format"]
('m', 'none')
"""
from __future__ import annotations

from analysis._fs.atomic import keep_previous
from analysis._fs.confine import local_fault
from analysis.executor.protocol import PlannerResponse, PlannerView, ProviderError, render_prompt

from .llm.client import ChatClient, ClientSettings
from .llm.schema import response_format_payload

__all__ = ["ChatPlanner", "ChatSchemaPlanner", "SYSTEM"]

SYSTEM = ("You control a kitchen agent in a symbolic world. Answer with one JSON object "
          '{"actions": [{"type": <action type>, "args": [<entity ids>]}], '
          '"query": <region id or null>} and nothing else.')

#: Clients are shared by every planner instance (one per episode) of the process with the
#: same settings, so the rate limit and the HTTP connection pool are shared by threads.
_CLIENTS: dict = {}


class ChatPlanner:
    name = "chat"
    #: waits on the network: ``jobs=N`` runs episodes in threads (analysis/episodes.py)
    io_bound = True

    def __init__(self, seed: int = 0, **settings):
        self.settings = _client_settings(seed, settings)
        key = tuple(sorted(self.settings.__dict__.items()))
        client = _CLIENTS.get(key)
        if client is None:
            client = _CLIENTS[key] = ChatClient(self.settings)
        self.client = client

    def config(self) -> dict:
        """What determines the replies (stored in ``run.json``); endpoint URL, retries,
        cache and log paths are operational and left out, the key is never stored."""
        s = self.settings
        return {"seed": s.seed, "model": s.model, "temperature": s.temperature,
                "max_tokens": s.max_tokens, "response_format": s.response_format,
                "system_prompt_sha256": _sha(SYSTEM),
                "token_counter": "endpoint usage" if s.require_usage else
                "endpoint usage, word pieces where the endpoint reported none"}

    def messages(self, view: PlannerView) -> list[dict]:
        return [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": render_prompt(view)}]

    def propose(self, view: PlannerView) -> PlannerResponse:
        try:
            out = self.client.complete(
                self.messages(view), response_format_payload(self.settings.response_format,
                                                             view), tag=view.key)
        except (ProviderError, OSError):
            raise  # the endpoint failed (recorded), or a disk fault (named by the runtime)
        except Exception as exc:  # noqa: BLE001
            # Only the model's reply is ever scored: the client returns it or raises a
            # ProviderError. Anything else comes from our side (confinement, limiter,
            # cache, call log) and stops the run, whatever its class.
            raise local_fault(exc, "the chat planner's client") from exc
        return PlannerResponse(text=out.text, prompt_tokens=out.prompt_tokens,
                               completion_tokens=out.completion_tokens)


    @classmethod
    def preflight(cls, seed: int = 0, **settings) -> str | None:
        """Before a run writes anything: the model server answers and lists the model
        (:mod:`analysis.planners.llm.preflight`; raises its ``PreflightError``, a
        ValueError naming the URL and the problem). Returns a note when the server lists
        no models (the name is then unchecked), else None. A ``cache_mode=replay`` run
        makes no request, so nothing is checked."""
        from .llm.preflight import check_endpoint
        s = _client_settings(seed, dict(settings))  # the settings' own checks come first
        if s.cache_mode == "replay":
            return None
        return check_endpoint(s).note

    @classmethod
    def before_run(cls, fresh: bool, seed: int = 0, **settings) -> None:
        """A fresh run (nothing journaled to resume) starts its call log anew: an earlier
        log at that path (another attempt at the same run ID) is kept as
        ``<call_log>.previous``, so the summary counts this run's calls only. A resumed
        run keeps appending: its interrupted attempts are part of it.

        Before any request, the side files are checked (:mod:`analysis._fs.confine`): the
        ``calls/`` and ``rate/`` folders must not be symlinks, and the call log, its
        ``.previous`` and ``.summary.json`` and the rate-limit budget file must be
        regular files where they exist (a planted symlink or FIFO is refused, named)."""
        import os

        from analysis._fs.confine import ConfinementError, disk_error, state_folder
        log = settings.get("call_log")
        if log:
            state_folder(os.path.dirname(os.path.abspath(log)), "the call-log folder")
        side = [log, str(log) + ".previous", str(log) + ".summary.json"] if log else []
        if settings.get("rate_state") and float(settings.get("requests_per_minute") or 0):
            from .llm.ratelimit import bucket_path
            state_folder(settings["rate_state"], "the rate-limit folder")
            side.append(str(bucket_path(settings["rate_state"],
                                        settings.get("base_url",
                                                     ClientSettings.base_url),
                                        settings.get("model", "local-model"))))
        for p in side:
            # planted in place of a state file: refused before any request is made
            if os.path.islink(p) or (os.path.lexists(p) and not os.path.isfile(p)):
                raise ConfinementError(f"{p}: a state file of the chat planner that is "
                                       f"{'a symlink' if os.path.islink(p) else 'not a regular file'}"
                                       "; remove it (the run recreates it)")
        if fresh and log and os.path.exists(log):
            try:
                keep_previous(log)
            except OSError as exc:
                raise disk_error(log, exc, "nothing was run") from None

    @classmethod
    def after_run(cls, seed: int = 0, **settings) -> dict | None:
        """Write the run's accounting summary beside its call log
        (``<call_log>.summary.json``: totals over the calls of this run, including those
        of an interrupted earlier attempt it resumed; see :meth:`before_run`) and print
        it in one line."""
        import json
        import sys

        from analysis._fs.confine import write_state

        from .llm.accounting import read_calls, read_price_table, summarize
        log = settings.get("call_log")
        if not log:
            return None
        prices = None
        if settings.get("price_table"):
            prices = read_price_table(settings["price_table"])
        out = summarize(read_calls(log), prices)
        # atomic, never through a symlink, never into a FIFO (analysis._fs.confine)
        write_state(str(log) + ".summary.json",
                    json.dumps(out, indent=1, sort_keys=True).encode(),
                    "the call-log summary")
        print(f"{cls.name} calls: " + ", ".join(f"{k}={v}" for k, v in sorted(out.items())),
              file=sys.stderr)
        return out


class ChatSchemaPlanner(ChatPlanner):
    """The chat planner with output constrained by the view's typed schema."""

    name = "chat_schema"

    def __init__(self, seed: int = 0, **settings):
        settings.setdefault("response_format", "json_schema")
        if settings["response_format"] == "none":
            raise ValueError("planner chat_schema: planner.settings.response_format must be "
                             "json_schema or json_object_schema (use planner=chat for none)")
        super().__init__(seed=seed, **settings)


def _client_settings(seed, settings: dict) -> ClientSettings:
    """The client's settings, refusing one the chat planner does not take."""
    settings.setdefault("model", "local-model")
    unknown = sorted(set(settings) - set(ClientSettings.__dataclass_fields__) - {"seed"})
    if unknown:
        raise ValueError(f"planner.settings.{unknown[0]}: unknown setting of the chat "
                         f"planner (known: {sorted(ClientSettings.__dataclass_fields__)})")
    return ClientSettings(seed=int(seed), **settings)


def _sha(text: str) -> str:
    import hashlib
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
