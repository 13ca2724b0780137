"""The chat-model client behind :class:`analysis.planners.chat.ChatPlanner` (docs/llm.md).

* :mod:`.schema`: the typed JSON schema of a plan, built from one view;
* :mod:`.cache`: content-addressed record/replay of every request and response;
* :mod:`.client`: the ``openai`` SDK client with retries, backoff, rate limit, accounting;
* :mod:`.accounting`: per-call log, run summary and optional cost column.

The ``openai`` package is an optional extra (``pip install -e .[llm]``); only
:mod:`.client` imports it, and only when a request is sent.
"""
