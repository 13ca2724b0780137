"""Writing the site to ``out_dir`` all or nothing, and refusing a folder that is not ours.

``out_dir`` must be new, empty, or a site an earlier build wrote: its ``SITE.json`` is a
valid site manifest (:func:`read_site_manifest`; a file of that name alone proves
nothing); it must not be an export or lie inside the export being viewed. The files are staged and
switched in by one journaled transaction (:mod:`analysis._fs.transaction`), so a kill leaves
the old site or the new one. The folder is replaced as a whole: keep nothing else in it.

>>> check_site_dir("/dev/null", "frozen_exports")
Traceback (most recent call last):
...
analysis.view.output.SiteDirError: out_dir=/dev/null: is not a folder
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from .._fs.transaction import Transaction, recover

__all__ = ["SiteDirError", "check_site_dir", "write_site", "txn_dir_of", "TXN_NAME", "SITE_INDEX",
           "read_site_manifest"]

TXN_NAME = ".e2w_view_txn"  # staging beside out_dir: .<name>.e2w_view_txn
#: The file listing the site's files with their SHA-256 (marks a folder as a viewer site).
SITE_INDEX = "SITE.json"


class SiteDirError(ValueError):
    """``out_dir`` cannot take the site; nothing was computed or written."""


#: What ``SITE.json`` holds (analysis/view/site.py writes it), and how its ``about`` starts.
_SITE_KEYS = {"about", "export_manifest_sha256", "files"}
_SITE_ABOUT = "a static site written by python -m analysis.view"
_SHA = re.compile(r"[0-9a-f]{64}")


def read_site_manifest(folder) -> dict[str, str]:
    """The files (site-relative path -> SHA-256) that the ``SITE.json`` of ``folder``
    lists; :class:`SiteDirError` naming the folder when that is no site manifest written
    by ``python -m analysis.view`` (absent, a symlink/FIFO/device, too large, not JSON,
    other keys, a path that leaves the folder).

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> _ = (d / "SITE.json").write_text('{"files": {}}')
    >>> read_site_manifest(d)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    analysis.view.output.SiteDirError: ...: its SITE.json is not a site manifest written by python -m analysis.view (keys ['files'], expected ['about', 'export_manifest_sha256', 'files'])
    """
    from .._fs.confine import ConfinementError, confined_rel, read_regular
    folder = Path(folder)

    def bad(why):
        return SiteDirError(f"{folder}: its {SITE_INDEX} is not a site manifest written by "
                            f"python -m analysis.view ({why})")
    try:
        raw = read_regular(folder / SITE_INDEX, f"{folder / SITE_INDEX}", limit=64 << 20)
        data = json.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise bad("it is missing") from None
    except ConfinementError as exc:
        raise bad(str(exc)) from None
    except OSError as exc:
        raise bad(exc.strerror or str(exc)) from None
    except (ValueError, RecursionError):
        raise bad("not JSON") from None
    if not isinstance(data, dict) or set(data) != _SITE_KEYS:
        raise bad(f"keys {sorted(data) if isinstance(data, dict) else type(data).__name__}, "
                  f"expected {sorted(_SITE_KEYS)}")
    if not (isinstance(data["about"], str) and data["about"].startswith(_SITE_ABOUT)):
        raise bad("its 'about' is not the viewer's")
    files = data["files"]
    if not isinstance(files, dict) or not files:
        raise bad("'files' is not a non-empty object")
    for rel, sha in files.items():
        try:
            confined_rel(rel, SITE_INDEX)
        except ConfinementError as exc:
            raise bad(str(exc)) from None
        if rel == SITE_INDEX or not (isinstance(sha, str) and _SHA.fullmatch(sha)):
            raise bad(f"entry {rel[:80]!r} is not a file with a SHA-256")
    return dict(files)


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
        return True
    except ValueError:
        return False


def check_site_dir(out_dir, export_root) -> Path:
    """Refuse an ``out_dir`` that is a file, not writable, an export, inside (or around)
    ``export_root`` (None: not checked), or a non-empty folder that no earlier build
    wrote."""
    out = Path(out_dir).expanduser().resolve()
    export = None if export_root is None else Path(export_root).expanduser().resolve()
    if export is not None and (_inside(out, export) or _inside(export, out)):
        raise SiteDirError(f"out_dir={out_dir}: {'is inside' if _inside(out, export) else 'holds'} "
                           f"the export {export}; write the site elsewhere (exports hold "
                           "records only)")
    if out.exists():
        if not out.is_dir():
            raise SiteDirError(f"out_dir={out_dir}: is not a folder")
        if (out / "MANIFEST.json").exists():
            raise SiteDirError(f"out_dir={out_dir}: is an export (it holds MANIFEST.json)")
        if any(out.iterdir()):
            if not os.path.lexists(out / SITE_INDEX):
                raise SiteDirError(f"out_dir={out_dir}: is a non-empty folder that no "
                                   f"earlier build of the viewer wrote (no {SITE_INDEX}); "
                                   "choose a new or empty folder")
            try:
                read_site_manifest(out)
            except SiteDirError as exc:
                raise SiteDirError(f"out_dir={exc}; the folder is replaced as a whole, so "
                                   "choose a new or empty folder") from None

    if out.exists() and os.path.ismount(out):
        raise SiteDirError(f"out_dir={out_dir}: is a mount point; the site is staged beside it "
                           "and switched in by renaming the folder, so give a folder inside it")
    probe_dir = out.parent  # the new site is staged beside out_dir and swapped in
    while not probe_dir.exists() and probe_dir != probe_dir.parent:
        probe_dir = probe_dir.parent
    if not probe_dir.is_dir():
        raise SiteDirError(f"out_dir={out_dir}: cannot be created ({probe_dir} is not a "
                           "folder)")
    try:  # os.access can say yes on a read-only mount
        fd, probe = tempfile.mkstemp(prefix=".e2w_probe.", dir=probe_dir)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise SiteDirError(f"out_dir={out_dir}: {probe_dir} is not writable "
                           f"({exc.strerror})") from None
    return out


def txn_dir_of(out: Path) -> Path:
    """Where a build is staged: beside ``out_dir`` (the whole folder is switched)."""
    return out.parent / f".{out.name}{TXN_NAME}"


def write_site(out_dir, files: dict[str, bytes], say=lambda msg: None) -> int:
    """Replace ``out_dir`` by a folder holding exactly ``files``, in one journaled step
    (the new folder is staged beside it, then the two are swapped by renames); returns
    the number of files written.

    Files are not fsynced one by one (10 ms each, most of a build): a killed build leaves
    the old site or the new one either way, and a site is rebuilt from the records.
    """
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    txn_dir = txn_dir_of(out)
    msg = recover(out.parent, txn_dir)
    if msg:
        say(msg)

    def writer(folder: Path) -> None:
        folder.mkdir()
        for rel, data in sorted(files.items()):
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)

    txn = Transaction(out.parent, txn_dir, "analysis.view")
    try:
        txn.stage_with(out.name, writer)
    except BaseException:
        txn.abort()
        raise
    txn.commit()
    return len(files)
