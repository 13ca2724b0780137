"""``python -m analysis.view``: write the trace viewer's static site for an export.

Thin entry point: the configuration is checked before anything is loaded
(:mod:`analysis._cli.hydra_glue`); :func:`analysis.view.builder.build` does the work;
``serve=true`` then serves the site on 127.0.0.1 (:mod:`analysis.view.serve`).
"""
from __future__ import annotations

import os
import sys

from omegaconf import OmegaConf

from .hydra_glue import UserError, command_main, resolve_path


def _say(msg: str) -> None:
    print(f"[analysis.view] {msg}", file=sys.stderr, flush=True)


def _body(cfg) -> int:
    from ..records import IntegrityError
    from .._fs.transaction import TransactionBusy
    from ..view.builder import build
    from ..view.output import SiteDirError

    stats = OmegaConf.to_container(cfg.stats, resolve=True)
    server = None
    if cfg.serve:
        from ..view.serve import bind
        server = bind(cfg.port)  # a port in use is said before the build, not after it
    try:
        report = build(resolve_path(cfg.export_root), resolve_path(cfg.out_dir), stats,
                       progress=_say)
    except BaseException as exc:
        if server is not None:
            server.server_close()
        if isinstance(exc, IntegrityError):
            raise UserError(f"verification FAILED, nothing written: {exc}") from None
        if isinstance(exc, (SiteDirError, TransactionBusy)):
            raise UserError(f"{exc}; nothing written") from None
        raise
    _say(f"wrote {report.files} files ({report.pages} pages) in {report.seconds:.1f} s")
    print(f"open {report.index.as_uri()}", flush=True)
    if server is not None:
        from ..view.serve import serve
        code = serve(report.index.parent, server=server)
        # Ctrl-C stopped the server and the site is complete on disk. Freeing the decoded
        # export object by object at interpreter exit took 3 s idle and over 20 s on a
        # loaded machine, so a stopped server seemed to hang; nothing else is pending
        # but the two streams (as in analysis.tables and analysis.verify).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return 0


def main(argv=None) -> None:
    command_main("view", _body, argv)
