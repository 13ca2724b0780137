"""Chat-model adapter for OpenAI-compatible endpoints (``POST {base_url}/chat/completions``).

The prompt is :func:`~analysis.planners.base.render_prompt` of the view (the same for
every model); the reply's message content is returned as is (the runtime parses it
structurally, no semantic repair here) with the endpoint's reported token usage. An
HTTP or network error raises, which the runtime records as a ``parse_failure`` for that
group; the run goes on. Deterministic only as far as the endpoint is (``temperature``
0 and ``seed`` are sent).

>>> ChatPlanner(base_url="http://127.0.0.1:9/v1", model="m").config()["model"]
'm'
"""
from __future__ import annotations

import json
import os
import urllib.request

from .base import PlannerResponse, PlannerView, render_prompt

__all__ = ["ChatPlanner"]

SYSTEM = ("You control a kitchen agent in a symbolic world. Answer with one JSON object "
          '{"actions": [{"type": <action type>, "args": [<entity ids>]}], '
          '"query": <region id or null>} and nothing else.')


class ChatPlanner:
    name = "chat"

    def __init__(self, seed: int = 0, base_url: str = "http://127.0.0.1:8000/v1",
                 model: str = "local-model", temperature: float = 0.0, max_tokens: int = 512,
                 timeout: float = 60.0, api_key_env: str | None = None):
        self.seed = int(seed)
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.timeout = float(timeout)
        # The key is read from an environment variable the user names; never stored.
        self.api_key_env = api_key_env

    def config(self) -> dict:
        return {"seed": self.seed, "base_url": self.base_url, "model": self.model,
                "temperature": self.temperature, "max_tokens": self.max_tokens}

    def propose(self, view: PlannerView) -> PlannerResponse:
        body = {"model": self.model, "temperature": self.temperature, "seed": self.seed,
                "max_tokens": self.max_tokens,
                "messages": [{"role": "system", "content": SYSTEM},
                             {"role": "user", "content": render_prompt(view)}]}
        headers = {"Content-Type": "application/json"}
        if self.api_key_env and os.environ.get(self.api_key_env):
            headers["Authorization"] = f"Bearer {os.environ[self.api_key_env]}"
        req = urllib.request.Request(f"{self.base_url}/chat/completions",
                                     data=json.dumps(body).encode("utf-8"), headers=headers,
                                     method="POST")
        with urllib.request.urlopen(req, timeout=self.timeout) as resp:
            data = json.loads(resp.read().decode("utf-8"))
        text = data["choices"][0]["message"]["content"]
        usage = data.get("usage") or {}
        return PlannerResponse(text=text if isinstance(text, str) else "",
                               prompt_tokens=usage.get("prompt_tokens"),
                               completion_tokens=usage.get("completion_tokens"))
