"""quarter_profiles: quarter assignment and per-quarter rates."""

import numpy as np
import pandas as pd
import pytest

from analysis.stats import assign_quarters, cluster_bootstrap, quarter_profiles


def test_quarters_hand_computed():
    df = pd.DataFrame({"group_index": [0, 1, 2, 0, 1, 2, 3, 4, 5, 6, 7],
                       "n_groups_in_episode": [3, 3, 3] + [8] * 8})
    assert assign_quarters(df).tolist() == [0, 1, 2, 0, 0, 1, 1, 2, 2, 3, 3]
    with pytest.raises(ValueError, match="group_index must be 0-based"):
        assign_quarters(pd.DataFrame({"group_index": [3], "n_groups_in_episode": [3]}))


def make_groups(seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for mem in ("persistent", "reset"):
        for e, n in enumerate([4, 5, 8, 6, 9, 12, 4, 7]):
            for i in range(n):
                rows.append(dict(memory=mem, episode_id=f"e{e}", group_index=i, n_groups_in_episode=n,
                                 query_attempts=int(rng.poisson(1 if mem == "persistent" else 5)),
                                 prompt_tokens=int(rng.poisson(300))))
    return pd.DataFrame(rows)


def test_rates_are_sums_over_groups_and_match_cluster_bootstrap():
    g = make_groups()
    r = quarter_profiles(g, ["query_attempts", "prompt_tokens"], "memory", n_resamples=400, seed=4)
    t = r.table.set_index(["memory", "quarter", "metric"])
    g["quarter"] = (4 * g.group_index) // g.n_groups_in_episode
    expect = g.groupby(["memory", "quarter"]).query_attempts.mean()
    for (mem, q), v in expect.items():
        assert t.loc[(mem, q, "query_attempts"), "estimate"] == pytest.approx(v)
        assert t.loc[(mem, q, "query_attempts"), "n_groups"] == ((g.memory == mem) & (g.quarter == q)).sum()
    ref = cluster_bootstrap(g, ["query_attempts", "prompt_tokens"], by=("memory", "quarter"),
                            n_resamples=400, seed=4).table
    assert np.allclose(r.table[["low", "high"]], ref[["low", "high"]])
    assert (t.n_clusters == 8).all()  # every episode (>= 4 groups) reaches every quarter
    assert "pointwise" in r.note and r.n_resamples == 400
