"""Before a chat run writes anything: does the model server answer, and does it serve
the model? (issue 37)

One ``GET /v1/models`` through the ``openai`` SDK (the client the runs use), with no
retry and a short timeout: a server that is down, a wrong URL, a refused key or a model
name the server does not list stops the run before any record, journal or log is
written, with one line that names the URL and the problem. A server that answers but
lists no models (HTTP 404/405/501 on that path, as some proxies do) cannot have the
name checked: the run goes on and :attr:`Preflight.note` says so.

>>> Preflight("http://127.0.0.1:8000/v1", "m", ("m", "other")).note is None
True
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from .client import ClientSettings

__all__ = ["Preflight", "PreflightError", "check_endpoint", "NO_LISTING"]

#: Status codes of a server that answers but has no model listing.
NO_LISTING = (404, 405, 501)


class PreflightError(ValueError):
    """The model server cannot run this model; the message names the URL and what to do."""


@dataclass(frozen=True)
class Preflight:
    """What the check found: the URL, the model, the models the server lists (``None``
    when it lists none) and a note when the name could not be checked."""

    url: str
    model: str
    models: tuple[str, ...] | None
    note: str | None = None


def _reason(exc: BaseException) -> str:
    """The root cause of a connection error in a few words (``connection refused``)."""
    seen = exc
    while seen.__cause__ is not None or seen.__context__ is not None:
        seen = seen.__cause__ or seen.__context__
        if isinstance(seen, ConnectionRefusedError) or "refused" in str(seen).lower():
            return "connection refused"
        if "name or service not known" in str(seen).lower() or "nodename" in str(seen).lower():
            return "unknown host"
    return type(exc.__cause__ or exc).__name__


def check_endpoint(settings: ClientSettings, timeout: float = 10.0) -> Preflight:
    """Check that ``settings.base_url`` answers and lists ``settings.model``; raise
    :class:`PreflightError` otherwise. The API key (from the variable ``api_key_env``
    names) is sent as the runs send it and never appears in a message."""
    try:
        import openai
    except ImportError:
        raise PreflightError("the chat planner needs the openai package: "
                             "pip install -e '.[llm]'") from None
    url, model = settings.base_url, settings.model
    key = os.environ.get(settings.api_key_env) if settings.api_key_env else None

    def scrub(text: str) -> str:
        return text.replace(key, "***") if key else text
    try:
        client = openai.OpenAI(base_url=url, api_key=key or "no-key", max_retries=0,
                               timeout=min(float(timeout), float(settings.timeout)))
        models = tuple(sorted({m.id for m in client.models.list()}))
    except openai.APITimeoutError:
        raise PreflightError(f"the model server at {url} does not answer within "
                             f"{min(float(timeout), float(settings.timeout))} s: check that "
                             "it is running and that planner.settings.base_url= is its URL") \
            from None
    except openai.APIConnectionError as exc:
        raise PreflightError(f"the model server at {url} does not answer ({_reason(exc)}): "
                             "start it, or set planner.settings.base_url= to the URL it "
                             "serves") from None
    except openai.APIStatusError as exc:
        code = exc.status_code
        if code in NO_LISTING:
            return Preflight(url, model, None,
                             f"the model server at {url} lists no models (HTTP {code} on GET "
                             f"/models): the model name {model!r} was not checked")
        if code in (401, 403):
            where = (f"the variable {settings.api_key_env}" if settings.api_key_env
                     else "no key (planner.settings.api_key_env is not set)")
            raise PreflightError(f"the model server at {url} refused the request (HTTP "
                                 f"{code}) with {where}: set planner.settings.api_key_env= to "
                                 "the NAME of the environment variable holding its key") \
                from None
        raise PreflightError(scrub(f"the model server at {url} answered GET /models with "
                                   f"HTTP {code}: {exc.message}")[:300]) from None
    except Exception as exc:  # noqa: BLE001 -- a URL the HTTP client refuses, and the like
        raise PreflightError(scrub(f"no request can be sent to the model server at {url} "
                                   f"({type(exc).__name__}: {exc}): check "
                                   "planner.settings.base_url=")[:300]) from None
    if model not in models:
        shown = ", ".join(models[:10]) + (f" and {len(models) - 10} more" if len(models) > 10
                                          else "")
        raise PreflightError(f"the model server at {url} does not serve model {model!r} "
                             f"(it lists: {shown or 'no model'}): set planner.settings.model= "
                             "to one of them")
    return Preflight(url, model, models)
