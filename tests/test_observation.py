"""Region observation = recorded anchor + symbolic delta (delta wins; explicit removals)."""
from hypothesis import given, settings, strategies as st

from analysis.executor.observation import Observer, observe_region
from analysis.executor import Rules, World
from analysis.planners.toy import toy_episode


def test_removal_overrides_anchor_and_destination_stays_unknown():
    initial = {("at", "glass", "counter"), ("at", "cup", "counter")}
    now = {("at", "cup", "counter"), ("at", "glass", "cupboard")}
    obs = observe_region("counter", ["glass", "cup"], initial, now)
    assert obs.visible == ("cup",)
    assert obs.removed == ("glass",) and obs.conflicts == ("glass",)
    # where the glass went is not part of the counter's observation
    assert "cupboard" not in str(obs.as_dict())


def test_added_item_appears_and_unanchored_initial_item_stays_unseen():
    initial = {("at", "knife", "counter")}          # curated: not in the anchor
    now = {("at", "knife", "counter"), ("at", "bowl", "counter")}
    obs = observe_region("counter", [], initial, now)
    assert obs.visible == ("bowl",) and obs.added == ("bowl",)
    assert obs.conflicts == ()


def test_repeated_query_reuses_anchor_with_current_delta():
    ep = toy_episode()
    observer = Observer(ep, Rules.load())
    w0 = World.from_json(ep["initial_world"])
    first = observer.observe("fridge", w0)
    assert first.visible == ("milk", "squash_bottle") and first.removed == ()
    w1 = w0.with_changes(added=[("holding", "milk")], removed=[("at", "milk", "fridge")])
    second = observer.observe("fridge", w1)
    assert second.anchor == first.anchor
    assert second.visible == ("squash_bottle",) and second.conflicts == ("milk",)
    assert observer.observe("fridge", w0) == first  # a pure function of the world


def test_open_state_reported_for_storage_only():
    ep = toy_episode()
    observer = Observer(ep, Rules.load())
    w = World.from_json(ep["initial_world"]).with_changes(added=[("open", "fridge")])
    obs = observer.observe("fridge", w)
    assert obs.open == {"fridge": True}            # bottles are not `open`-able fixtures
    assert observer.observe("counter", w).open == {}


def test_contents_of_visible_items():
    initial = {("at", "glass", "counter")}
    now = initial | {("in", "squash", "glass")}
    obs = observe_region("counter", ["glass"], initial, now)
    assert obs.contents == {"glass": ("squash",)}


items = st.sets(st.sampled_from(["a", "b", "c", "d", "e"]))


@settings(max_examples=60, deadline=None)
@given(anchor=items, before=items, after=items)
def test_delta_properties(anchor, before, after):
    initial = {("at", x, "r") for x in before}
    now = {("at", x, "r") for x in after}
    obs = observe_region("r", sorted(anchor), initial, now)
    assert set(obs.visible) == (anchor - set(obs.removed)) | set(obs.added)
    assert not set(obs.added) & set(obs.removed)
    assert set(obs.added) <= after and not set(obs.removed) & after
    if before == after:  # no change since the initial world: exactly the anchor
        assert set(obs.visible) == anchor and obs.conflicts == ()
