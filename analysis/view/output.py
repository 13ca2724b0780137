"""Writing the site to ``out_dir`` all or nothing, and refusing a folder that is not ours.

``out_dir`` must be new, empty, or a site an earlier build wrote (it holds ``SITE.json``);
it must not be an export or lie inside the export being viewed. The files are staged and
switched in by one journaled transaction (:mod:`analysis.transaction`), so a kill leaves
the old site or the new one. The folder is replaced as a whole: keep nothing else in it.

>>> check_site_dir("/dev/null", "frozen_exports")
Traceback (most recent call last):
...
analysis.view.output.SiteDirError: out_dir=/dev/null: is not a folder
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..transaction import Transaction, recover

__all__ = ["SiteDirError", "check_site_dir", "write_site", "txn_dir_of", "TXN_NAME", "SITE_INDEX"]

TXN_NAME = ".e2w_view_txn"  # staging beside out_dir: .<name>.e2w_view_txn
#: The file listing the site's files with their SHA-256 (marks a folder as a viewer site).
SITE_INDEX = "SITE.json"


class SiteDirError(ValueError):
    """``out_dir`` cannot take the site; nothing was computed or written."""


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
        if any(out.iterdir()) and not (out / SITE_INDEX).is_file():
            raise SiteDirError(f"out_dir={out_dir}: is a non-empty folder that no earlier "
                               f"build of the viewer wrote (no {SITE_INDEX}); choose a new or "
                               "empty folder")
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
