"""Provenance per argument (paper appendix A.3; docs/FORMAT.md): an operation's argument is
``observed`` with its source reference (file, ID, time) or ``curated`` with the rule."""
from __future__ import annotations


def obs(file: str, ident: str, time: float | None, **extra) -> dict:
    refs = {"file": file, "id": ident, "time": time}
    refs.update({k: v for k, v in sorted(extra.items()) if v is not None})
    return {"source": "observed", "refs": refs}


def cur(rule: str) -> dict:
    return {"source": "curated", "refs": {"rule": rule}}


def disputed_prov(prov: dict, disputed: str | None) -> dict:
    """``prov`` with ``refs.disputed`` (the rows that contest its place) when there are any.

    >>> disputed_prov(cur("r"), "f q1: sink")["refs"], disputed_prov(cur("r"), None)["refs"]
    ({'rule': 'r', 'disputed': 'f q1: sink'}, {'rule': 'r'})
    """
    if disputed:
        prov["refs"]["disputed"] = disputed
    return prov


def conflict_side(tracks, fixture: str) -> str | None:
    """The disagreeing rows of the first of ``tracks`` (not compiled for them) that name
    ``fixture`` as one side, else ``None``: a place taken after such a track takes a side
    of the conflict (P02-20240211-104948's itinerary 438: "to another counter top left of
    fridge, then from counter top left of fridge"), so it carries them as ``refs.disputed``.

    >>> class T: conflict = "f q1: another_counter; f q1: counter"
    >>> conflict_side([T()], "counter"), conflict_side([T()], "sink")
    ('f q1: another_counter; f q1: counter', None)
    """
    for tr in tracks:
        text = getattr(tr, "conflict", None)
        if text and fixture in {x.rsplit(": ", 1)[-1] for x in text.split("; ")}:
            return text
    return None


def track_prov(tr) -> dict:
    """The track's row: ``time``/``end`` in its own video; ``offset`` (when not 0) is the
    video's start in episode time."""
    return obs("assoc_info.json", f"{tr.assoc.video}/{tr.assoc.assoc_id}/{tr.track_id}",
               round(tr.start - tr.offset, 5), end=round(tr.end - tr.offset, 5), name=tr.assoc.name,
               offset=tr.offset or None)


def evidence_prov(ev: dict) -> dict:
    """An argument's provenance from a grounding evidence dict."""
    if ev.get("vqa"):          # a fine-grained snippet (analysis.compiler.grounding.snippets)
        p = obs(ev["file"], ev["vqa"], ev.get("start"), end=ev.get("end"), video=ev.get("video"),
                offset=ev.get("offset"), question=ev.get("question"), answer=ev.get("answer"),
                how=ev.get("how"))
        if ev.get("same_as"):
            # bound to a track of an object merged by name across videos: not observed
            return {"source": "curated", "refs": {**p["refs"], "rule": ev["identity_rule"],
                                                  "same_as": ev["same_as"], "track_source": "observed"}}
        return p
    if ev.get("file") == "assoc_info.json":
        ident = "/".join(str(ev[k]) for k in ("video", "association", "track") if ev.get(k))
        return obs("assoc_info.json", ident, ev.get("start"), end=ev.get("end"), name=ev.get("name"),
                   how=ev.get("how"), evidence=ev.get("evidence"))
    ident = "/".join(str(ev[k]) for k in ("recipe", "ingredient", "step", "row") if ev.get(k))
    return obs(ev.get("file", "complete_recipes.json"), ident, ev.get("start"), end=ev.get("end"),
               how=ev.get("how"), evidence=ev.get("evidence"))
