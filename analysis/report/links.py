"""Where the trace viewer's pages are, for links from the tables and the task cards.

``python -m analysis.view`` names its pages with these functions, so a link written here
cannot drift from the page it points at. Paths are relative to the site folder; the
default site folder is ``build/view`` in the repository (git-ignored, built by
``python -m analysis.view``).

>>> view_task_page("P02-20240209-194141/t016")
'task/P02-20240209-194141_t016.html'
>>> view_link_from("tables/cards", view_task_page("P02-20240209-194141/t016"))
'../../build/view/task/P02-20240209-194141_t016.html'
"""
from __future__ import annotations

import posixpath

__all__ = ["DEFAULT_SITE", "task_slug", "view_index", "view_task_page",
           "view_compare_page", "view_link_from"]

#: The viewer's default ``out_dir``, relative to the repository.
DEFAULT_SITE = "build/view"


def task_slug(task_id: str) -> str:
    """A task ID as a file name (the task cards use the same)."""
    return task_id.replace("/", "_")


def view_index() -> str:
    return "index.html"


def view_task_page(task_id: str) -> str:
    return f"task/{task_slug(task_id)}.html"


def view_compare_page(task_id: str) -> str:
    return f"compare/{task_slug(task_id)}.html"


def view_link_from(folder: str, page: str) -> str:
    """``page`` of the default site as a link from ``folder`` (both relative to the
    repository)."""
    return posixpath.relpath(posixpath.join(DEFAULT_SITE, page), folder)
