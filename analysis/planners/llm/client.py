"""A chat-completions client on the ``openai`` SDK that survives providers.

* Retries HTTP 408/409/429/5xx, timeouts, connection resets, truncated or malformed
  response bodies, replies without ``usage`` (when ``require_usage``) and replies whose
  ``usage`` counts are not integers in [0, 10^7] (negative, bool, absurd): exponential
  backoff ``min(backoff_max, backoff_base * 2**n)`` scaled by a jitter factor in
  [0.5, 1) drawn from a generator seeded by ``(seed, request key, n)`` (so the waits are
  reproducible), and at least the server's ``Retry-After``. It gives up after
  ``max_retries`` retries or when the next wait would take the total past
  ``retry_budget`` seconds, raising :class:`~analysis.executor.protocol.ProviderError`.
  Other 4xx (bad request, authentication) fail at once, also as a provider error.
* ``requests_per_minute`` (0 = unlimited) spaces request starts across every thread of
  the process that uses the same endpoint and model; with ``rate_state`` (a folder all
  shards of a run see) across every process too (:mod:`.ratelimit`), and a
  ``Retry-After`` then pauses every one of them.
* The API key is read from the environment variable named by ``api_key_env`` at request
  time, passed to the SDK, and scrubbed from every error message; it is never stored.
* Every call is cached by :mod:`.cache` and logged by :mod:`.accounting`.

>>> s = ClientSettings(model="m", backoff_base=1.0, backoff_max=8.0)
>>> [round(backoff_delay(s, "k", n, 0.0), 3) for n in range(3)] == [
...     round(backoff_delay(s, "k", n, 0.0), 3) for n in range(3)]
True
>>> backoff_delay(s, "k", 0, retry_after=5.0) >= 5.0
True
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import threading
import time
from dataclasses import asdict, dataclass
from typing import Callable, Mapping

from analysis.executor.protocol import ProviderError

# The SDK's HTTP library logs one INFO line per request once anything (Hydra's job
# logging, a notebook) configures the root logger at INFO: thousands of lines per run.
# Its warnings still show; E2W_HTTP_LOG=1 keeps the per-request lines.
import logging as _logging  # noqa: E402

#: The loggers of the SDK and its HTTP stack (openai 1.x uses httpx, later ones httpx2).
HTTP_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2", "openai")


def quiet_http_logs() -> None:
    """Per-request HTTP log lines off (warnings stay), unless ``E2W_HTTP_LOG=1``."""
    if os.environ.get("E2W_HTTP_LOG", "") in ("", "0"):
        for name in HTTP_LOGGERS:
            _logging.getLogger(name).setLevel(_logging.WARNING)


quiet_http_logs()

from .cache import CACHE_MODES, ResponseCache, request_key
from .schema import RESPONSE_FORMATS

__all__ = ["ClientSettings", "ChatClient", "Completion", "backoff_delay", "usage_problem",
           "MAX_USAGE_TOKENS"]

RETRY_STATUS = {408, 409, 429}
#: A wait longer than this (seconds) is announced on stderr: what for, until when.
WAIT_NOTICE_S = 5.0


@dataclass(frozen=True)
class ClientSettings:
    """Every setting is a Hydra key under ``planner.settings`` (configs/planner/chat*.yaml)."""

    model: str
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key_env: str | None = None
    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 512
    timeout: float = 180.0
    response_format: str = "none"
    max_retries: int = 6
    backoff_base: float = 2.0
    backoff_max: float = 60.0
    retry_budget: float = 600.0
    requests_per_minute: float = 0.0
    rate_state: str | None = None
    cache_dir: str | None = None
    cache_mode: str = "readwrite"
    call_log: str | None = None
    require_usage: bool = True
    price_table: str | None = None

    def __post_init__(self):
        if self.response_format not in RESPONSE_FORMATS:
            raise ValueError(f"planner.settings.response_format={self.response_format!r}: "
                             f"expected one of {list(RESPONSE_FORMATS)}")
        if self.cache_mode not in CACHE_MODES:
            raise ValueError(f"planner.settings.cache_mode={self.cache_mode!r}: expected one "
                             f"of {list(CACHE_MODES)}")
        if self.cache_mode == "replay" and not self.cache_dir:
            raise ValueError("planner.settings.cache_mode=replay needs planner.settings.cache_dir")
        for name in ("timeout", "backoff_base", "backoff_max", "retry_budget"):
            if float(getattr(self, name)) <= 0:
                raise ValueError(f"planner.settings.{name}={getattr(self, name)!r}: expected > 0")
        if int(self.max_retries) < 0 or float(self.requests_per_minute) < 0:
            raise ValueError("planner.settings.max_retries and requests_per_minute must be >= 0")


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool
    retries: int
    latency: float


def backoff_delay(s: ClientSettings, key: str, retry: int, retry_after: float | None) -> float:
    """The wait before retry number ``retry`` (0-based) of the request ``key``."""
    digest = hashlib.sha256(f"{s.seed}:{key}:{retry}".encode()).digest()
    jitter = 0.5 + 0.5 * random.Random(int.from_bytes(digest[:8], "big")).random()
    delay = min(float(s.backoff_max), float(s.backoff_base) * 2 ** retry) * jitter
    if retry_after is not None:
        delay = max(delay, float(retry_after))
    return delay


#: More tokens than any context window holds: a count above it is a provider fault.
MAX_USAGE_TOKENS = 10_000_000


def usage_problem(prompt_tokens, completion_tokens) -> str | None:
    """Why a reply's ``usage`` counts are invalid, or None (absent counts are allowed
    here: ``require_usage`` decides). Counts are non-negative integers (not bool) at most
    :data:`MAX_USAGE_TOKENS`.

    >>> usage_problem(12, 3) is None, usage_problem(-1000, 3), usage_problem(True, 3)
    (True, 'prompt_tokens=-1000 is not an integer in [0, 10000000]', 'prompt_tokens=True is not an integer in [0, 10000000]')
    """
    for name, v in (("prompt_tokens", prompt_tokens), ("completion_tokens", completion_tokens)):
        if v is not None and not (type(v) is int and 0 <= v <= MAX_USAGE_TOKENS):
            shown = repr(v) if len(repr(v)) <= 40 else repr(v)[:37] + "..."
            return f"{name}={shown} is not an integer in [0, {MAX_USAGE_TOKENS}]"
    return None


class _RateLimiter:
    """Spaces request starts ``60 / rpm`` seconds apart (shared by threads)."""

    _registry: dict = {}
    _registry_lock = threading.Lock()

    def __init__(self, rpm: float):
        self.interval = 60.0 / rpm
        self.lock = threading.Lock()
        self.next = 0.0

    @classmethod
    def get(cls, key, rpm: float) -> "_RateLimiter | None":
        if not rpm:
            return None
        with cls._registry_lock:
            lim = cls._registry.get((key, rpm))
            if lim is None:
                lim = cls._registry[(key, rpm)] = cls(rpm)
            return lim

    def reserve(self, budget: float | None = None) -> float | None:
        """Take the next slot and return the wait until it starts, or ``None`` (no slot
        taken) when that wait would exceed ``budget`` seconds."""
        with self.lock:
            now = time.monotonic()
            start = max(now, self.next)
            if budget is not None and start - now > budget:
                return None
            self.next = start + self.interval
        return start - now

    def acquire(self, sleep: Callable[[float], None] = time.sleep) -> None:
        wait = self.reserve()
        if wait > 0:
            sleep(wait)

    def defer(self, seconds: float) -> None:
        """No thread starts a request before ``seconds`` from now (Retry-After)."""
        with self.lock:
            self.next = max(self.next, time.monotonic() + float(seconds))


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


def _retry_after(headers) -> float | None:
    try:
        value = headers.get("retry-after") if headers is not None else None
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None  # an HTTP date is not honoured (rare); the backoff applies


class ChatClient:
    """One endpoint + model; thread-safe (the SDK client is shared)."""

    def __init__(self, settings: ClientSettings, sleep: Callable[[float], None] = time.sleep,
                 say: Callable[[str], None] | None = None):
        self.s = settings
        self.sleep = sleep
        from .ratelimit import _say
        self.say = say or _say
        self.cache = (ResponseCache(settings.cache_dir)
                      if settings.cache_dir and settings.cache_mode != "off" else None)
        # imported here: `python -m analysis.planners.llm.accounting` then runs a module
        # that the package's import did not load first (runpy warns otherwise)
        from .accounting import CallLog
        self.log = CallLog(settings.call_log) if settings.call_log else None
        self.limiter = _RateLimiter.get((settings.base_url, settings.model),
                                        float(settings.requests_per_minute))
        if self.limiter is not None and settings.rate_state:
            from .ratelimit import SharedRateLimiter  # one budget for all shards of a run
            self.limiter = SharedRateLimiter(settings.rate_state, settings.base_url,
                                             settings.model, float(settings.requests_per_minute),
                                             horizon=float(settings.retry_budget), say=self.say)
        self._sdk = None
        self._sdk_lock = threading.Lock()

    # -- request ------------------------------------------------------------------
    def request(self, messages: list[dict], response_format: Mapping | None) -> dict:
        """The JSON-ready request body (what the cache key hashes)."""
        body = {"model": self.s.model, "messages": messages,
                "temperature": float(self.s.temperature), "seed": int(self.s.seed),
                "max_tokens": int(self.s.max_tokens)}
        if response_format is not None:
            body["response_format"] = response_format
        return body

    def _key(self) -> str | None:
        return os.environ.get(self.s.api_key_env) if self.s.api_key_env else None

    def _scrub(self, text: str) -> str:
        key = self._key()
        return text.replace(key, "***") if key else text

    def _client(self):
        with self._sdk_lock:
            if self._sdk is None:
                try:
                    import openai
                except ImportError as exc:
                    raise ProviderError("the chat planner needs the openai package: "
                                        "pip install -e '.[llm]'") from exc
                self._sdk = openai.OpenAI(base_url=self.s.base_url,
                                          api_key=self._key() or "no-key",
                                          timeout=float(self.s.timeout), max_retries=0)
            return self._sdk

    def _send(self, body: dict) -> dict:
        import openai
        try:
            client = self._client()
        except ProviderError:
            raise
        except Exception as exc:  # noqa: BLE001 -- a setting the SDK refuses: the setup's fault
            raise ProviderError(self._scrub(f"the client could not be made: "
                                            f"{type(exc).__name__}: {exc}")[:300]) from None
        kwargs = {k: v for k, v in body.items() if k != "response_format"}
        if "response_format" in body:
            # through extra_body: the SDK would reshape the llama-cpp-python variant
            kwargs["extra_body"] = {"response_format": body["response_format"]}
        try:
            raw = client.chat.completions.with_raw_response.create(**kwargs)
            text = raw.http_response.text
        except openai.APIStatusError as exc:
            code = exc.status_code
            msg = f"HTTP {code}"
            if code in RETRY_STATUS or code >= 500:
                raise _Retryable(msg, _retry_after(exc.response.headers)) from None
            raise ProviderError(self._scrub(f"{msg}: {exc.message}")[:300]) from None
        except openai.APITimeoutError:
            raise _Retryable(f"timeout after {self.s.timeout} s") from None
        except openai.APIConnectionError as exc:
            raise _Retryable(self._scrub(f"connection error to the model server at "
                                         f"{self.s.base_url} "
                                         f"({type(exc.__cause__).__name__})")) from None
        except Exception as exc:  # noqa: BLE001
            # the request could not even be made (a URL the HTTP client refuses, a value it
            # cannot send): a fault of the setup, never a reply of the model to score
            raise ProviderError(self._scrub(f"the request could not be sent: "
                                            f"{type(exc).__name__}: {exc}")[:300]) from None
        try:
            data = json.loads(text)
            content = data["choices"][0]["message"]["content"]
            usage = data.get("usage") or {}
        except (ValueError, KeyError, IndexError, TypeError):
            raise _Retryable("malformed response body") from None
        pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if self.s.require_usage and (pt is None or ct is None):
            raise _Retryable("response without usage token counts")
        bad = usage_problem(pt, ct)
        if bad:
            raise _Retryable(f"response with invalid usage: {bad}")
        return {"content": content if isinstance(content, str) else "",
                "prompt_tokens": pt, "completion_tokens": ct,
                "finish_reason": data["choices"][0].get("finish_reason")}

    def complete(self, messages: list[dict], response_format: Mapping | None = None,
                 tag: str = "") -> Completion:
        """Send (or replay) one request; ``tag`` names the call in the log (view key)."""
        body = self.request(messages, response_format)
        key = request_key(body)
        t0 = time.monotonic()
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None and usage_problem(hit.get("prompt_tokens"),
                                             hit.get("completion_tokens")):
            hit = None  # an entry the endpoint could not have given (checked on put too)
        if hit is not None:
            return self._done(tag, key, hit, True, 0, t0)
        if self.s.cache_mode == "replay":
            self._log(tag, key, None, False, 0, t0, "not in the cache (cache_mode=replay)")
            raise ProviderError(f"request {key[:12]} not in the cache (cache_mode=replay)")
        retries, waited = 0, 0.0
        budget = float(self.s.retry_budget)
        while True:
            if self.limiter is not None:
                # waiting for a slot counts against retry_budget like a backoff does
                wait = self.limiter.reserve(budget - waited)
                if wait is None:
                    err = (f"no rate-limit slot within the remaining retry_budget "
                           f"({budget - waited:.1f} of {budget:g} s) after {retries} "
                           "attempt(s)")
                    self._log(tag, key, None, False, retries, t0, err)
                    raise ProviderError(err)
                if wait > 0:
                    self._waiting(wait, "a rate-limit slot")
                    waited += wait
                    self.sleep(wait)
            try:
                resp = self._send(body)
                break
            except _Retryable as exc:
                if exc.retry_after is not None and exc.retry_after > budget:
                    # a pause longer than the whole budget: this request fails now, and
                    # the shared budget is not pushed (it would stall every shard)
                    err = (f"{exc} with Retry-After {exc.retry_after:g} s, more than "
                           f"retry_budget={budget:g} s, after {retries + 1} attempt(s)")
                    self._log(tag, key, None, False, retries, t0, err)
                    raise ProviderError(err) from None
                delay = backoff_delay(self.s, key, retries, exc.retry_after)
                if self.limiter is not None and exc.retry_after:
                    self.limiter.defer(exc.retry_after)  # the server's pause holds for all
                if retries >= int(self.s.max_retries) or waited + delay > budget:
                    err = f"{exc} after {retries + 1} attempt(s)"
                    self._log(tag, key, None, False, retries, t0, err)
                    raise ProviderError(err) from None
                retries += 1
                waited += delay
                self._waiting(delay, f"retry {retries} of request {key[:12]} ({exc})")
                self.sleep(delay)
            except ProviderError as exc:
                self._log(tag, key, None, False, retries, t0, str(exc))
                raise
        if self.cache is not None:
            self.cache.put(key, body, resp)
        return self._done(tag, key, resp, False, retries, t0)

    def _waiting(self, seconds: float, what: str) -> None:
        """Say what a wait longer than :data:`WAIT_NOTICE_S` is for and until when."""
        if seconds > WAIT_NOTICE_S:
            until = time.strftime("%H:%M:%S UTC", time.gmtime(time.time() + seconds))
            self.say(f"waiting {seconds:.0f} s for {what}, until {until} (at most "
                     f"retry_budget={float(self.s.retry_budget):g} s in all)")

    def _done(self, tag, key, resp, cached, retries, t0) -> Completion:
        latency = time.monotonic() - t0
        self._log(tag, key, resp, cached, retries, t0, None)
        pt, ct = resp.get("prompt_tokens"), resp.get("completion_tokens")
        return Completion(resp.get("content") or "", pt, ct, cached, retries, latency)

    def _log(self, tag, key, resp, cached, retries, t0, error) -> None:
        if self.log is None:
            return
        self.log.add({"call": tag, "key": key[:16], "model": self.s.model, "cached": cached,
                      "retries": retries, "latency_s": round(time.monotonic() - t0, 4),
                      "prompt_tokens": (resp or {}).get("prompt_tokens"),
                      "completion_tokens": (resp or {}).get("completion_tokens"),
                      "error": self._scrub(error) if error else None})

    def settings_dict(self) -> dict:
        return asdict(self.s)
