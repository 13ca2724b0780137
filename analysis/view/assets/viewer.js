/* Ego2World trace viewer (written by python -m analysis.view; no library, no network).
 *
 * Every page sets window.E2W_DATA from its own data file and is drawn here: the overview
 * (endpoint matrix with filters and sorting, the tables' metrics per run), a task page
 * (the task card, then every run's groups with attempts, queries, belief counters,
 * statuses and the condition truths) and a compare page (two runs aligned by group,
 * first divergence marked). Truths and endpoints are shown by text and shape, never by
 * colour alone. */
(function () {
  "use strict";

  var D = window.E2W_DATA;
  var ROOT = document.body.getAttribute("data-root") || "";
  var PAGE = document.body.getAttribute("data-page");
  var app = document.getElementById("app");

  // --- small DOM helpers ---------------------------------------------------------------
  function el(tag, attrs, kids) {
    var n = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === null || v === undefined || v === false) return;
        if (k === "text") n.textContent = v;
        else if (k === "cls") n.className = v;
        else if (k.slice(0, 2) === "on") n.addEventListener(k.slice(2), v);
        else n.setAttribute(k, v === true ? "" : v);
      });
    }
    (kids || []).forEach(function (c) {
      if (c === null || c === undefined || c === false) return;
      n.appendChild(typeof c === "string" || typeof c === "number" ?
        document.createTextNode(String(c)) : c);
    });
    return n;
  }
  function txt(s) { return document.createTextNode(s); }
  function short(id) { var p = String(id).split("/"); return p[p.length - 1]; }
  function pct(v) { return v === null || v === undefined ? "n/a" : (100 * v).toFixed(1) + "%"; }
  function items(xs) { return xs && xs.length ? xs.join(", ") : "(none)"; }
  function safeId(s) { return String(s).replace(/[^A-Za-z0-9_-]/g, "_"); }

  var EP = {};
  (D.endpoints || []).forEach(function (e) { EP[e.key] = e; });
  var EP_ORDER = (D.endpoints || []).map(function (e) { return e.key; });

  function endpointBadge(key, extra) {
    var e = EP[key] || {glyph: "?", short: key, label: key};
    return el("span", {cls: "ep ep-" + key, title: e.label},
      [el("span", {cls: "glyph", "aria-hidden": "true", text: e.glyph}),
       " " + e.short + (extra ? " " + extra : "")]);
  }
  function endpointText(key) { return (EP[key] || {label: key}).label; }
  var TRUTH_GLYPH = {TRUE: "\u2714", FALSE: "\u2716", UNKNOWN: "?"};
  function truthBadge(t) {
    return el("span", {cls: "truth truth-" + t},
      [el("span", {cls: "glyph", "aria-hidden": "true", text: TRUTH_GLYPH[t] || "?"}), " " + t]);
  }
  function statusBadge(s) {
    var glyph = s === "completed" ? "\u2714" : "\u2716";
    return el("span", {cls: "status status-" + s},
      [el("span", {cls: "glyph", "aria-hidden": "true", text: glyph}), " " + s]);
  }
  function header(crumbs) {
    var nav = el("nav", {cls: "crumbs"}, []);
    crumbs.forEach(function (c, i) {
      if (i) nav.appendChild(txt(" \u203a "));
      nav.appendChild(c.href ? el("a", {href: c.href, text: c.text}) : el("span", {text: c.text}));
    });
    return el("header", {}, [nav, el("p", {cls: "meta"}, [
      "Records: export manifest sha256 " + D.fingerprint.slice(0, 12) +
      "\u2026; read from the hash-verified records only."])]);
  }

  // --- a group's steps in the order they happened ------------------------------------
  // A query recorded after_attempts = k came after the group's first k attempts.
  function timeline(g) {
    var qs = g.queries.map(function (q, j) { return {q: q, j: j}; });
    qs.sort(function (a, b) { return a.q.after_attempts - b.q.after_attempts || a.j - b.j; });
    var out = [], k = 0;
    g.attempts.forEach(function (a) {
      while (k < qs.length && qs[k].q.after_attempts <= a.index) {
        out.push({kind: "query", q: qs[k].q, j: qs[k].j}); k++;
      }
      out.push({kind: "attempt", a: a});
    });
    for (; k < qs.length; k++) out.push({kind: "query", q: qs[k].q, j: qs[k].j});
    return out;
  }
  function stepKey(s) {
    if (s.kind === "attempt") {
      var a = s.a;
      return ["attempt", a.source, a.action === null ? "raw:" + a.raw : a.action, a.status,
              a.failed_checks.join(",")].join("|");
    }
    var q = s.q;
    return ["query", q.region, q.responded, q.visible.join(","), q.added.join(","),
            q.removed.join(",")].join("|");
  }
  function stepText(s) {
    if (!s) return "(nothing)";
    if (s.kind === "attempt") {
      var a = s.a;
      return "attempt " + a.index + " [" + a.source + "] " +
        (a.action === null ? "(unparsed reply)" : a.action) + ": " + a.status +
        (a.failed_checks.length ? " (failed: " + a.failed_checks.join(", ") + ")" : "") +
        (a.failure ? " [label " + a.failure + "]" : "");
    }
    return "query(" + s.q.region + ")" + (s.q.responded ? " visible: " + items(s.q.visible) :
      ": no such region");
  }

  function attemptCells(a, anchorPrefix, nextState) {
    var src = a.source === "repair" ?
      el("span", {cls: "src src-repair"}, [el("span", {cls: "glyph", "aria-hidden": "true", text: "\u27f2"}), " repair"]) :
      el("span", {cls: "src src-planner", text: "planner"});
    var act = a.action !== null ? el("code", {text: a.action}) :
      el("span", {cls: "unparsed"}, ["(unparsed) ", el("code", {text: a.raw || ""})]);
    var res = a.status === "accepted" ?
      el("span", {cls: "acc acc-accepted"}, [el("span", {cls: "glyph", "aria-hidden": "true", text: "\u2714"}), " accepted"]) :
      el("span", {cls: "acc acc-invalid"}, [el("span", {cls: "glyph", "aria-hidden": "true", text: "\u2716"}), " invalid",
        a.failed_checks.length ? el("span", {cls: "checks"}, [": failed " + a.failed_checks.join(", ")]) : null,
        a.failure ? el("span", {cls: "flabel", title: "failure label (docs/executor.md, Failure labels)"},
          ["; label ", el("b", {text: a.failure}), " (check " + a.check + ")"]) : null]);
    return [el("td", {text: "attempt " + a.index}), el("td", {}, [src]), el("td", {}, [act]),
            el("td", {}, [res]), el("td", {cls: "after"}, [nextState])];
  }
  function queryCells(q) {
    var body = q.responded ? el("div", {cls: "obs"}, [
      el("div", {}, [el("b", {text: "anchor: "}), items(q.anchor)]),
      el("div", {}, [el("b", {text: "delta: added "}), items(q.added), el("b", {text: "; removed "}), items(q.removed)]),
      el("div", {}, [el("b", {text: "visible: "}), items(q.visible)])]) :
      el("span", {text: "no response: the region does not exist"});
    return [el("td", {text: "query"}), el("td", {}, [el("span", {cls: "src src-query", text: "observation"})]),
            el("td", {}, [el("code", {text: "query(" + q.region + ")"})]),
            el("td", {colspan: "2"}, [body])];
  }

  // The recorded state after an attempt: the next query of its group (what the
  // observation returned), else the world hash at the group's end. No other world state
  // is recorded.
  function nextStateLink(g, a, prefix) {
    var best = null;
    g.queries.forEach(function (q, j) {
      if (q.after_attempts >= a.index + 1 && (best === null || q.after_attempts < best.q.after_attempts))
        best = {q: q, j: j};
    });
    if (best) {
      var direct = best.q.after_attempts === a.index + 1;
      return el("a", {href: "#" + prefix + "-q" + best.j,
        text: (direct ? "observed next: " : "next observation (after attempt " + (best.q.after_attempts - 1) + "): ") +
          "query(" + best.q.region + ")"});
    }
    var last = a.index === g.attempts.length - 1;
    return el("a", {href: "#" + prefix + "-end",
      text: (last ? "" : "next recorded: ") + "world at group end, sha256 " +
        g.world_sha256_after.slice(0, 10) + "\u2026"});
  }

  function groupBlock(run, g, pos, n, card) {
    var prefix = safeId(run.run_id) + "-" + safeId(short(g.group_id));
    var info = card.groups[pos] || {};
    var rows = timeline(g).map(function (s) {
      if (s.kind === "attempt")
        return el("tr", {id: prefix + "-a" + s.a.index, cls: "step attempt " + s.a.source},
          attemptCells(s.a, prefix, nextStateLink(g, s.a, prefix)));
      return el("tr", {id: prefix + "-q" + s.j, cls: "step query"}, queryCells(s.q));
    });
    if (!rows.length) rows.push(el("tr", {}, [el("td", {colspan: "5", text: "no attempt and no query"})]));
    var b = g.belief;
    return el("section", {cls: "group", id: prefix}, [
      el("h4", {}, ["group " + short(g.group_id) + " (" + (pos + 1) + " of " + n + "): ",
        el("q", {text: info.instruction || ""}), " ", statusBadge(g.status)]),
      el("table", {cls: "steps"}, [el("thead", {}, [el("tr", {}, [
        el("th", {text: "step"}), el("th", {text: "source"}), el("th", {text: "proposed"}),
        el("th", {text: "result"}), el("th", {text: "state after"})])]), el("tbody", {}, rows)]),
      el("p", {cls: "counters", id: prefix + "-end"}, [
        "Group status " + g.status + "; belief counters: cross-group hits " + b.cross_group_hits +
        ", repeated region queries " + b.repeated_region_queries + ", anchor-delta conflicts " +
        b.anchor_delta_conflicts + "; planner calls " + g.planner_calls + ", tokens " +
        g.prompt_tokens + " prompt + " + g.completion_tokens + " completion; world at group end sha256 " +
        g.world_sha256_after])]);
  }

  function truthTable(task, truths) {
    var byId = {};
    truths.forEach(function (t) { byId[t.id] = t.truth; });
    return el("table", {cls: "truths"}, [el("thead", {}, [el("tr", {}, [
      el("th", {text: "condition"}), el("th", {text: "what"}), el("th", {text: "truth at the end"})])]),
      el("tbody", {}, task.conditions.map(function (c) {
        return el("tr", {}, [el("td", {text: c.id}), el("td", {}, [el("code", {text: c.text})]),
          el("td", {cls: "truth-cell"}, [byId[c.id] ? truthBadge(byId[c.id]) : "(no record)"])]);
      }))]);
  }

  function runSummary(run) {
    var m = run.metrics || {};
    var reps = 0, atts = 0;
    run.groups.forEach(function (g) {
      atts += g.attempts.length;
      g.attempts.forEach(function (a) { if (a.source === "repair") reps++; });
    });
    return el("p", {cls: "runsum"}, [endpointBadge(m.endpoint), " \u00b7 conditions met " + m.n_true + " of " +
      m.n_conditions + " \u00b7 GCR " + pct(m.gcr) + " \u00b7 completed " + (run.completed ? "yes" : "no") +
      " \u00b7 attempts " + atts + " (" + plural(reps, "repair") + ") \u00b7 action validity " + pct(m.action_validity)]);
  }

  // --- the task card ----------------------------------------------------------------
  function cardSection(t) {
    var src = el("ul", {}, t.source_lines.map(function (line) { return el("li", {text: line}); }).concat(
      t.groups.map(function (g) {
        var when = g.video ? " (" + g.video + " " + (g.start === null ? "?" : g.start.toFixed(2)) + "\u2013" +
          (g.end === null ? "?" : g.end.toFixed(2)) + " s)" : "";
        return el("li", {}, ["group " + short(g.group_id) + ": ",
          g.steps.length ? "step " + g.steps.join(", ") + " of " + g.recipe + ": " : "",
          el("q", {text: g.instruction}), when]);
      })));
    var conds = el("ul", {cls: "conds"}, t.conditions.map(function (c) {
      // the card's own line (tables/cards/<task>.md), its ID in bold
      return el("li", {}, [el("b", {text: c.id}), c.line.slice(c.id.length),
        c.evidence.length ? el("ul", {}, c.evidence.map(function (e) { return el("li", {text: e}); })) : null]);
    }));
    var ops = [];
    t.groups.forEach(function (g) {
      g.operations.forEach(function (op) {
        ops.push(el("tr", {}, [el("td", {text: short(g.group_id)}), el("td", {text: op.time === null || op.time === undefined ? "" : String(op.time)}),
          el("td", {}, [el("code", {text: op.text})]), el("td", {text: op.source}),
          el("td", {cls: "evidence", text: op.evidence.join("; ")})]));
      });
    });
    return el("section", {cls: "card", id: "card"}, [
      el("h2", {text: "Task card"}),
      el("p", {text: "Episode " + t.episode_id + " (scene " + t.scene_id + ", videos " + t.videos.join(", ") +
        "), tier " + t.tier + ", " + t.groups.length + " group(s)."}),
      el("h3", {text: "Source steps"}), src,
      el("h3", {text: "Conditions and their evidence"}), conds,
      el("h3", {text: "Reference operations"}),
      el("div", {cls: "tablebox"}, [el("table", {cls: "ops"}, [el("thead", {}, [el("tr", {}, [el("th", {text: "group"}), el("th", {text: "time (s)"}),
        el("th", {text: "operation"}), el("th", {text: "provenance"}), el("th", {text: "evidence"})])]),
        el("tbody", {}, ops.length ? ops : [el("tr", {}, [el("td", {colspan: "5", text: "(none)"})])])])])]);
  }

  function compareHref(a, b) {
    return ROOT + D.compare + "#a=" + encodeURIComponent(a) + "&b=" + encodeURIComponent(b);
  }

  function renderTask() {
    var t = D.task;
    document.title = t.title + " (" + t.task_id + "): trace viewer";
    app.innerHTML = "";
    app.appendChild(header([{text: "Overview", href: ROOT + D.index}, {text: t.title + " (" + t.task_id + ")"}]));
    app.appendChild(el("h1", {text: t.title + " \u2014 " + t.task_id}));
    app.appendChild(el("p", {cls: "meta", text: "The same card in the tables: tables/cards/" +
      D.card + " (python -m analysis.tables)."}));
    app.appendChild(cardSection(t));
    var sumRows = D.runs.map(function (r, i) {
      var other = D.runs[i === 0 ? 1 : 0];
      return el("tr", {}, [el("td", {}, [el("a", {href: "#run-" + safeId(r.run_id), text: r.run_id})]),
        el("td", {}, [endpointBadge(r.metrics.endpoint)]),
        el("td", {}, t.conditions.map(function (c) {
          var tr = (r.truths.filter(function (x) { return x.id === c.id; })[0] || {}).truth;
          return el("span", {cls: "tpair"}, [c.id + " ", tr ? truthBadge(tr) : "?", " "]);
        })),
        el("td", {text: String(r.metrics.n_attempts) + " (" + plural(r.metrics.n_repair_attempts, "repair") + ")"}),
        el("td", {}, [other ? el("a", {href: compareHref(r.run_id, other.run_id), text: "compare with " + other.label}) : ""])]);
    });
    app.appendChild(el("section", {id: "runs"}, [el("h2", {text: "Runs on this task (" + D.runs.length + ")"}),
      el("div", {cls: "tablebox"}, [el("table", {cls: "runs"}, [el("thead", {}, [el("tr", {}, [el("th", {text: "run"}), el("th", {text: "endpoint"}),
        el("th", {text: "truths"}), el("th", {text: "attempts"}), el("th", {text: "compare"})])]), el("tbody", {}, sumRows)])]),
      D.runs.length > 1 ? el("p", {}, [el("a", {href: compareHref(D.runs[0].run_id, D.runs[1].run_id), id: "compare-link",
        text: "Compare two runs side by side"})]) : null]));
    D.runs.forEach(function (r) {
      var sec = el("section", {cls: "run", id: "run-" + safeId(r.run_id)}, [
        el("h3", {text: r.label + " \u2014 " + r.run_id}), runSummary(r)]);
      r.groups.forEach(function (g, i) { sec.appendChild(groupBlock(r, g, i, r.groups.length, t)); });
      sec.appendChild(el("h4", {text: "Condition truths at the end"}));
      sec.appendChild(truthTable(t, r.truths));
      app.appendChild(sec);
    });
    if (location.hash) {  // the page was drawn after load: go to the anchor asked for
      var target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
      if (target) target.scrollIntoView();
    }
  }

  // --- compare -------------------------------------------------------------------------
  function parseHash() {
    var out = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      if (!kv) return;
      var i = kv.indexOf("=");
      if (i > 0) out[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
    });
    return out;
  }

  function firstDivergence(A, B) {
    var n = Math.max(A.groups.length, B.groups.length);
    for (var i = 0; i < n; i++) {
      var ga = A.groups[i], gb = B.groups[i];
      if (!ga || !gb) return {group: i, step: 0, what: "group missing in one run"};
      var sa = timeline(ga), sb = timeline(gb);
      for (var j = 0; j < Math.max(sa.length, sb.length); j++) {
        if (!sa[j] || !sb[j] || stepKey(sa[j]) !== stepKey(sb[j]))
          return {group: i, step: j, a: sa[j], b: sb[j]};
      }
      if (ga.status !== gb.status) return {group: i, step: sa.length, status: true};
    }
    return null;
  }

  function renderCompare() {
    var t = D.task, h = parseHash();
    var ids = D.runs.map(function (r) { return r.run_id; });
    var a = ids.indexOf(h.a) >= 0 ? h.a : ids[0];
    var b = ids.indexOf(h.b) >= 0 ? h.b : (ids[1] || ids[0]);
    var A = D.runs[ids.indexOf(a)], B = D.runs[ids.indexOf(b)];
    var missing = [h.a, h.b].filter(function (x) { return x && ids.indexOf(x) < 0; });
    document.title = t.title + " (" + t.task_id + "): compare " + a + " and " + b;
    app.innerHTML = "";
    app.appendChild(header([{text: "Overview", href: ROOT + D.index},
      {text: t.title + " (" + t.task_id + ")", href: ROOT + D.page}, {text: "compare"}]));
    app.appendChild(el("h1", {text: "Compare runs on " + t.title + " \u2014 " + t.task_id}));
    function picker(name, value) {
      return el("select", {id: "pick-" + name, "aria-label": "run " + name.toUpperCase(), onchange: function () {
        var na = document.getElementById("pick-a").value, nb = document.getElementById("pick-b").value;
        location.hash = "a=" + encodeURIComponent(na) + "&b=" + encodeURIComponent(nb);
      }}, ids.map(function (id) { return el("option", {value: id, selected: id === value, text: id}); }));
    }
    if (missing.length)
      app.appendChild(el("p", {cls: "diverge-summary", id: "unknown-run", role: "alert",
        text: "No run " + missing.map(function (x) { return "\u201c" + x + "\u201d"; }).join(" or ") +
          " on this task: comparing " + a + " with " + b + " instead."}));
    app.appendChild(el("p", {cls: "pickers"}, ["A: ", picker("a", a), "  B: ", picker("b", b)]));
    if (!A || !B) { app.appendChild(el("p", {text: "This task has no run."})); return; }
    // what each run achieved comes first: the reason two runs differ is usually here,
    // before the step-by-step table
    function met(R) { return R.truths.filter(function (y) { return y.truth === "TRUE"; }).length; }
    app.appendChild(el("h2", {text: "Conditions each run met"}));
    app.appendChild(el("p", {id: "conditions-summary", text: "A (" + A.label + "): " + met(A) + " of " + t.conditions.length +
      " conditions met, endpoint " + endpointText(A.metrics.endpoint) + "; B (" + B.label + "): " + met(B) + " of " +
      t.conditions.length + ", endpoint " + endpointText(B.metrics.endpoint) + "."}));
    var crow = t.conditions.map(function (c) {
      function tr(R) { var x = R.truths.filter(function (y) { return y.id === c.id; })[0]; return x ? truthBadge(x.truth) : "(none)"; }
      return el("tr", {cls: "truthrow"}, [el("td", {}, [c.id + " ", el("code", {text: c.text})]),
        el("td", {}, [tr(A)]), el("td", {}, [tr(B)])]);
    });
    app.appendChild(el("table", {cls: "compare", id: "conditions-table"}, [el("thead", {}, [el("tr", {}, [
      el("th", {text: "condition"}), el("th", {text: "A: " + A.label}), el("th", {text: "B: " + B.label})])]),
      el("tbody", {}, crow)]));
    app.appendChild(el("h2", {text: "Step by step"}));
    var div = firstDivergence(A, B);
    var sum;
    if (!div) sum = "No divergence: the same attempts, queries and group statuses in every group.";
    else {
      var g = (A.groups[div.group] || B.groups[div.group]);
      sum = "First divergence: group " + short(g.group_id) + " (" + (div.group + 1) + " of " + t.groups.length + "), " +
        (div.status ? "group status: A " + A.groups[div.group].status + ", B " + B.groups[div.group].status :
          "step " + (div.step + 1) + ": A " + stepText(div.a) + "; B " + stepText(div.b)) + ".";
    }
    app.appendChild(el("p", {id: "divergence", cls: div ? "diverge-summary" : "same-summary"}, [
      el("span", {cls: "glyph", "aria-hidden": "true", text: div ? "\u2691" : "="}), " " + sum,
      div ? " " : null, div ? el("a", {href: "#d-first", text: "go to it"}) : null]));
    var head = el("tr", {}, [el("th", {text: "group / step"}), el("th", {text: "A: " + A.label}), el("th", {text: "B: " + B.label})]);
    var body = [];
    body.push(el("tr", {cls: "sum"}, [el("td", {text: "endpoint"}), el("td", {}, [endpointBadge(A.metrics.endpoint)]),
      el("td", {}, [endpointBadge(B.metrics.endpoint)])]));
    function labelSummary(R) {
      var counts = {}, order = [];
      R.groups.forEach(function (g) {
        var xs = g.attempts.filter(function (a) { return a.failure; }).map(function (a) { return a.failure; });
        if (g.failure) xs.push(g.failure + " (group)");
        xs.forEach(function (x) { if (!(x in counts)) { counts[x] = 0; order.push(x); } counts[x]++; });
      });
      if (!order.length) return el("span", {cls: "flabels", text: "no rejected attempt, every group completed"});
      order.sort(function (x, y) { return counts[y] - counts[x] || (x < y ? -1 : 1); });
      return el("span", {cls: "flabels"}, order.map(function (x, k) {
        return el("span", {}, [k ? "; " : "", el("b", {text: x}), " \u00d7" + counts[x]]); }));
    }
    body.push(el("tr", {cls: "sum", id: "failure-labels"}, [el("td", {text: "failure labels"}),
      el("td", {}, [labelSummary(A)]), el("td", {}, [labelSummary(B)])]));
    var n = Math.max(A.groups.length, B.groups.length);
    for (var i = 0; i < n; i++) {
      var ga = A.groups[i], gb = B.groups[i];
      var info = t.groups[i] || {};
      body.push(el("tr", {cls: "ghead"}, [el("th", {colspan: "3"}, ["group " + short((ga || gb).group_id) + ": ",
        el("q", {text: info.instruction || ""})])]));
      var sa = ga ? timeline(ga) : [], sb = gb ? timeline(gb) : [];
      for (var j = 0; j < Math.max(sa.length, sb.length); j++) {
        var first = div && !div.status && div.group === i && div.step === j;
        var same = sa[j] && sb[j] && stepKey(sa[j]) === stepKey(sb[j]);
        body.push(el("tr", {cls: "cmp " + (first ? "diverge" : same ? "same" : "differ"), id: first ? "d-first" : null}, [
          el("td", {}, [first ? el("b", {}, [el("span", {cls: "glyph", "aria-hidden": "true", text: "\u2691"}), " first divergence, "]) : null,
            "step " + (j + 1) + (same ? " (same)" : " (differs)")]),
          el("td", {cls: sa[j] ? "" : "none", text: stepText(sa[j])}), el("td", {cls: sb[j] ? "" : "none", text: stepText(sb[j])})]));
      }
      var firstStatus = div && div.status && div.group === i;
      body.push(el("tr", {cls: "cmp status " + (firstStatus ? "diverge" : ""), id: firstStatus ? "d-first" : null}, [
        el("td", {}, [firstStatus ? el("b", {text: "\u2691 first divergence, "}) : null, "group status"]),
        el("td", {}, ga ? [statusBadge(ga.status)] : ["(missing)"]), el("td", {}, gb ? [statusBadge(gb.status)] : ["(missing)"])]));
    }
    app.appendChild(el("table", {cls: "compare", id: "compare-table"}, [el("thead", {}, [head]), el("tbody", {}, body)]));
  }

  // --- overview ------------------------------------------------------------------------
  var ROW_STEP = 500;
  var state = {planner: "", suite: "", tier: "", endpoint: "", episode: "", solved: "", unsolved: "", q: "",
               sort: "task", dir: 1, limit: ROW_STEP};
  var GOAL_NOT_REACHED = "completed_not_goal";

  function endpointMatches(ep, want) {
    if (!want) return true;
    if (want === GOAL_NOT_REACHED) return ep === "completed_none" || ep === "completed_partial";
    return ep === want;
  }
  function visibleRuns() {
    return D.runs.filter(function (r) {
      // the planner filter takes a run's name: a planner's, or the name a run was given
      // apart from it (several configurations of one planner are told apart)
      return (!state.planner || nameOf(r) === state.planner) && (!state.suite || r.suite === state.suite);
    });
  }
  function nameOf(r) { return r.run_name || r.planner; }
  function writeHash() {
    var parts = [];
    ["planner", "suite", "tier", "endpoint", "episode", "solved", "unsolved", "q", "sort"].forEach(function (k) {
      if (state[k] && !(k === "sort" && state[k] === "task")) parts.push(k + "=" + encodeURIComponent(state[k]));
    });
    if (state.dir < 0) parts.push("dir=desc");
    history.replaceState(null, "", parts.length ? "#" + parts.join("&") : location.pathname);
  }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }
  function uniq(xs) { return xs.filter(function (x, i) { return xs.indexOf(x) === i; }).sort(); }

  function metricsSection() {
    var sec = el("section", {id: "metrics"}, [el("h2", {text: "Metrics per run"}),
      el("p", {cls: "meta", text: "As in the tables (same results objects): " + D.stats}),
    ]);
    [["planner", "Planner suite (table 4, planner results)"], ["memory", "Memory suite (table 8, per condition)"]].forEach(function (sp) {
      var rs = D.runs.filter(function (r) { return r.suite === sp[0]; });
      if (!rs.length) return;
      var labels = [];
      rs.forEach(function (r) { r.metrics.forEach(function (m) { if (labels.indexOf(m.label) < 0) labels.push(m.label); }); });
      var head = el("tr", {}, [el("th", {text: "run"}), el("th", {text: "tasks"}), el("th", {text: "tasks without attempts"}),
        el("th", {text: "attempts (repairs)"})].concat(
        labels.map(function (l) { return el("th", {text: l + (/%|per task/.test(l) ? "" : " (%)")}); })).concat(
        [el("th", {text: "why it fails"})]));
      var rows = rs.map(function (r) {
        var by = {};
        r.metrics.forEach(function (m) { by[m.label] = m.text; });
        var cells = [el("td", {}, [el("b", {text: r.label}), el("br"), el("small", {text: r.run_id})]),
          el("td", {text: String(r.n_tasks)}), el("td", {cls: "num", text: String(r.tasks_without_attempts)}),
          el("td", {text: r.attempts + " (" + plural(r.repair_attempts, "repair") + ", " + (r.attempts ? (100 * r.repair_attempts / r.attempts).toFixed(1) : "0.0") + "%)"})];
        if (!r.metrics.length) cells.push(el("td", {colspan: String(Math.max(labels.length, 1)), text: "no interval in the tables: " + r.why}));
        else labels.forEach(function (l) { cells.push(el("td", {cls: "num", text: by[l] || ""})); });
        cells.push(el("td", {}, [el("a", {href: "#failures-" + safeId(r.run_id), cls: "profile-link",
          text: "failure labels"})]));
        return el("tr", {id: "metrics-" + safeId(r.run_id)}, cells);
      });
      sec.appendChild(el("h3", {text: sp[1]}));
      sec.appendChild(el("div", {cls: "tablebox"}, [el("table", {cls: "metrics"}, [el("thead", {}, [head]), el("tbody", {}, rows)])]));
      if (sp[0] === "planner" && D.warnings && D.warnings.planner) sec.appendChild(el("p", {cls: "warning", text: "WARNING: " + D.warnings.planner}));
      if (sp[0] === "memory" && D.warnings && D.warnings.memory) sec.appendChild(el("p", {cls: "warning", text: "WARNING: " + D.warnings.memory}));
    });
    return sec;
  }

  function failuresSection() {
    var sec = el("section", {id: "failures"}, [el("h2", {text: "Failure labels per run"}),
      el("p", {cls: "meta", text: "Each rejected attempt's label and each non-completed group's outcome, derived by " +
        "re-executing the run (docs/executor.md, Failure labels; table 15 gives the planner-suite intervals)."})]);
    D.runs.forEach(function (r) {
      var p = r.failure_profile || {labels: [], rejected: 0, groups: 0};
      var rows = p.labels.map(function (x) {
        return el("tr", {}, [el("td", {}, [el("code", {text: x.label})]), el("td", {text: x.unit}),
          el("td", {cls: "num", text: String(x.count)}), el("td", {cls: "num", text: pct(x.share)})]);
      });
      sec.appendChild(el("div", {id: "failures-" + safeId(r.run_id), cls: "profile"}, [
        el("h3", {}, [r.label + " ", el("small", {text: r.run_id})]),
        el("p", {text: p.why ? "No labels: " + p.why : plural(p.rejected, "rejected attempt") + ", " + plural(p.groups, "group") + "."}),
        rows.length ? el("table", {cls: "metrics"}, [el("thead", {}, [el("tr", {}, [el("th", {text: "label"}),
          el("th", {text: "of"}), el("th", {text: "count"}), el("th", {text: "share"})])]), el("tbody", {}, rows)]) :
          el("p", {text: "No rejected attempt and every group completed."})]));
    });
    return sec;
  }

  function sortValue(t, key) {
    if (key === "task") return t.task_id;
    if (key === "title") return t.title.toLowerCase() + " " + t.task_id;
    if (key === "tier") return t.tier + " " + t.task_id;
    if (key === "episode") return t.episode_id + " " + t.task_id;
    var c = t.cells[key];
    if (!c) return null;
    return String(EP_ORDER.indexOf(c.endpoint)) + (1 - (c.gcr || 0)).toFixed(4) + t.task_id;
  }

  function drawMatrix(box, count) {
    var runs = visibleRuns();
    var tasks = D.tasks.filter(function (t) {
      if (state.tier && t.tier !== state.tier) return false;
      if (state.episode && t.episode_id !== state.episode) return false;
      if (state.q && (t.title + " " + t.task_id).toLowerCase().indexOf(state.q.toLowerCase()) < 0) return false;
      var inRun = runs.filter(function (r) { return t.cells[r.run_id]; });
      if (!inRun.length) return false;
      if (state.endpoint && !inRun.some(function (r) { return endpointMatches(t.cells[r.run_id].endpoint, state.endpoint); })) return false;
      // "solved by A, not by B": both runs hold the task, A reached success and B did not
      if (state.solved && !(t.cells[state.solved] && t.cells[state.solved].success)) return false;
      if (state.unsolved && !(t.cells[state.unsolved] && !t.cells[state.unsolved].success)) return false;
      return true;
    });
    tasks.sort(function (x, y) {
      var a = sortValue(x, state.sort), b = sortValue(y, state.sort);
      if ((a === null) !== (b === null)) return a === null ? 1 : -1;  // dashes last, either way
      return (a < b ? -1 : a > b ? 1 : 0) * state.dir;
    });
    function th(key, label, sub) {
      var on = state.sort === key;
      function go() {
        if (state.sort === key) state.dir = -state.dir; else { state.sort = key; state.dir = 1; }
        writeHash(); drawMatrix(box, count);
        var again = box.querySelector('th[data-key="' + key.replace(/"/g, '\\"') + '"]');
        if (again) again.focus();
      }
      return el("th", {cls: "sortable" + (on ? " sorted" : ""), "data-key": key, scope: "col",
        tabindex: "0", title: "sort by this column",
        "aria-sort": on ? (state.dir > 0 ? "ascending" : "descending") : null,
        onclick: go, onkeydown: function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); go(); } }}, [label, sub ? el("br") : null, sub ? el("small", {text: sub}) : null,
        on ? el("span", {cls: "arrow", text: state.dir > 0 ? " \u25b2" : " \u25bc"}) : null]);
    }
    var head = el("tr", {}, [th("task", "task"), th("title", "title"), th("tier", "tier"), th("episode", "episode")].concat(
      runs.map(function (r) { return th(r.run_id, r.label, r.suite + " suite, " + r.memory); })));
    // a very large export: draw the first rows, more on request (filters and sorting
    // always cover every task)
    var shown = tasks.slice(0, state.limit);
    var rows = shown.map(function (t) {
      return el("tr", {"data-task": t.task_id}, [
        el("td", {}, [el("a", {href: ROOT + t.page, cls: "tasklink", text: t.task_id})]),
        el("td", {text: t.title}), el("td", {text: t.tier}), el("td", {text: t.episode_id})].concat(
        runs.map(function (r) {
          var c = t.cells[r.run_id];
          if (!c) return el("td", {cls: "na", text: "\u2014", title: "not in this run's suite"});
          var hit = state.endpoint && endpointMatches(c.endpoint, state.endpoint);
          return el("td", {cls: "cell" + (hit ? " hit" : ""), "data-run": r.run_id, "data-endpoint": c.endpoint},
            [el("a", {href: ROOT + t.page + "#run-" + safeId(r.run_id)}, [endpointBadge(c.endpoint, c.n_true + "/" + c.n_conditions)]),
             c.n_repair_attempts ? el("small", {cls: "reps", text: " \u27f2" + c.n_repair_attempts}) : null]);
        })));
    });
    box.innerHTML = "";
    box.appendChild(el("table", {cls: "matrix", id: "matrix"}, [el("thead", {}, [head]), el("tbody", {}, rows)]));
    if (shown.length < tasks.length)
      box.appendChild(el("p", {}, [el("button", {type: "button", id: "more", onclick: function () {
        state.limit += ROW_STEP; drawMatrix(box, count);
      }, text: "Draw the next " + Math.min(ROW_STEP, tasks.length - shown.length) + " rows (" +
        shown.length + " of " + tasks.length + " drawn)"})]));
    count.textContent = "Showing " + tasks.length + " of " + D.tasks.length + " tasks and " + runs.length + " of " + D.runs.length + " runs.";
  }

  function renderOverview() {
    var h = parseHash();
    Object.keys(state).forEach(function (k) { if (h[k] !== undefined && k !== "dir" && k !== "limit") state[k] = h[k]; });
    var known = {planner: D.runs.map(nameOf), suite: D.runs.map(function (r) { return r.suite; }),
      tier: D.tasks.map(function (t) { return t.tier; }), episode: D.tasks.map(function (t) { return t.episode_id; }),
      endpoint: [GOAL_NOT_REACHED].concat(D.endpoints.map(function (e) { return e.key; })),
      solved: D.runs.map(function (r) { return r.run_id; }), unsolved: D.runs.map(function (r) { return r.run_id; }),
      sort: ["task", "title", "tier", "episode"].concat(D.runs.map(function (r) { return r.run_id; }))};
    var unknown = [];
    Object.keys(known).forEach(function (k) {
      if (state[k] && known[k].indexOf(state[k]) < 0) {
        unknown.push(k + " \u201c" + state[k] + "\u201d");
        state[k] = k === "sort" ? "task" : "";
      }
    });
    if (h.dir === "desc") state.dir = -1;
    app.innerHTML = "";
    app.appendChild(header([{text: "Overview"}]));
    app.appendChild(el("h1", {text: "Ego2World trace viewer"}));
    if (unknown.length) {
      app.appendChild(el("p", {cls: "diverge-summary", id: "unknown-filter", role: "alert",
        text: "The address asks for " + unknown.join(" and ") + ", which this export does not have: showing all instead."}));
      writeHash();
    }
    app.appendChild(el("p", {text: D.runs.length + " runs, " + D.tasks.length + " tasks. Each cell: the task's endpoint in that run " +
      "(shape and text) and the conditions met; \u27f2n: repair attempts the runtime inserted. A dash: the task is not in the run's suite."}));
    app.appendChild(metricsSection());
    app.appendChild(failuresSection());
    function sel(key, label, opts) {
      return el("label", {}, [label + " ", el("select", {id: "f-" + key, onchange: function (e) {
        state[key] = e.target.value; writeHash(); drawMatrix(box, count);
      }}, [el("option", {value: "", text: "all"})].concat(opts.map(function (o) {
        return el("option", {value: o[0], selected: state[key] === o[0], text: o[1]});
      })))]);
    }
    var planners = uniq(D.runs.map(nameOf));
    var eps = uniq(D.tasks.map(function (t) { return t.episode_id; }));
    var filters = el("form", {cls: "filters", id: "filters", onsubmit: function (e) { e.preventDefault(); }}, [
      sel("planner", "planner", planners.map(function (p) {
        var of = uniq(D.runs.filter(function (r) { return nameOf(r) === p && r.planner !== p; })
          .map(function (r) { return r.planner; }));
        return [p, of.length ? p + " (planner " + of.join(", ") + ")" : p];
      })),
      sel("suite", "suite", uniq(D.runs.map(function (r) { return r.suite; })).map(function (s) { return [s, s]; })),
      sel("tier", "tier", uniq(D.tasks.map(function (t) { return t.tier; })).map(function (s) { return [s, s]; })),
      sel("endpoint", "endpoint", [[GOAL_NOT_REACHED, "completed, goal not reached (none or some met)"]].concat(
        D.endpoints.map(function (e) { return [e.key, e.glyph + " " + e.label]; }))),
      sel("episode", "episode", eps.map(function (s) { return [s, s]; })),
      sel("solved", "solved by", D.runs.map(function (r) { return [r.run_id, r.label + " (" + r.run_id + ")"]; })),
      sel("unsolved", "not solved by", D.runs.map(function (r) { return [r.run_id, r.label + " (" + r.run_id + ")"]; })),
      el("label", {}, ["search ", el("input", {id: "f-q", type: "search", value: state.q, placeholder: "title or task ID",
        oninput: function (e) { state.q = e.target.value; writeHash(); drawMatrix(box, count); }})])]);
    var count = el("p", {id: "count", cls: "count"});
    var box = el("div", {cls: "matrixbox"});
    app.appendChild(el("section", {id: "tasks"}, [el("h2", {text: "Endpoints: every run against every task of its suite"}),
      filters, el("p", {cls: "legend"}, D.endpoints.map(function (e) { return el("span", {cls: "legend-item"}, [endpointBadge(e.key), " = " + e.label + "  "]); })),
      count, box]));
    drawMatrix(box, count);
  }

  if (!D) { app.textContent = "No data: the data file of this page did not load."; return; }
  if (PAGE === "overview") renderOverview();
  else if (PAGE === "task") renderTask();
  else if (PAGE === "compare") { renderCompare(); window.addEventListener("hashchange", renderCompare); }
  // when the page was drawn, and after its first frame (ms since navigation start):
  // bench/view.py reads them
  window.E2W_DRAWN_MS = performance.now();
  requestAnimationFrame(function () {
    setTimeout(function () { window.E2W_PAINTED_MS = performance.now(); }, 0);
  });
})();
