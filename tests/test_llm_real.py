"""Opt-in: the chat runner against a real model server (docs/llm.md, "A real model").

Skipped unless ``LLM_REAL_BASE_URL`` names a running OpenAI-compatible server, e.g.
llama-cpp-python's with SmolLM2-135M-Instruct (``LLM_REAL_FORMAT=json_object_schema``)::

    LLM_REAL_BASE_URL=http://127.0.0.1:8000/v1 python -m pytest tests/test_llm_real.py -m llm_real

One episode of the planner suite (12 groups) under the typed schema: minutes on 2 cores.
"""
import os
from pathlib import Path

import pytest

pytest.importorskip("openai")

from analysis._cli import run as run_mod
from analysis.planners.llm.subset import make_subset

REPO = Path(__file__).resolve().parent.parent
URL = os.environ.get("LLM_REAL_BASE_URL")

pytestmark = [pytest.mark.llm_real,
              pytest.mark.skipif(not URL, reason="set LLM_REAL_BASE_URL (docs/llm.md)")]


def test_typed_schema_run_on_a_real_server_is_complete_and_parses(tmp_path):
    export = tmp_path / "sub"
    make_subset(REPO / "frozen_exports", export, "planner", 1)
    settings = {"base_url": URL, "model": os.environ.get("LLM_REAL_MODEL", "local-model"),
                "response_format": os.environ.get("LLM_REAL_FORMAT", "json_object_schema"),
                "timeout": 300.0, "cache_dir": str(tmp_path / "cache"),
                "call_log": str(tmp_path / "calls.jsonl")}
    _, rec = run_mod.run_suite("chat_schema", "planner", "persistent", export, progress=False,
                               state_dir=tmp_path / "state", planner_settings=settings)
    statuses = [g["status"] for g in rec["groups"]]
    assert len(statuses) == 12 and "provider_error" not in statuses
    assert statuses.count("parse_failure") < len(statuses)  # the schema makes replies parse
    assert all(c["prompt_tokens"] > 0 for g in rec["groups"] for c in g["planner_calls"])
