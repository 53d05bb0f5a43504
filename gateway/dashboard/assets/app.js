// The toolsearch dashboard. Every text shown may come from an upstream
// server or a model: it is only ever set as a text node (el, text), never
// parsed as markup.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const pages = { servers: servers, clients: clients, searches: searches, economy: economy };
  let state = null;
  let fetching = false;
  let again = false;
  // stateTimeout bounds a fetch of the state, in milliseconds.
  const stateTimeout = 15000;

  // el builds an element: attrs are set as attributes (names fixed here,
  // values any text), children are nodes or strings (text nodes).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null) e.setAttribute(k, String(v));
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      e.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return e;
  }

  function svg(tag, attrs, ...children) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    for (const c of children) e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    return e;
  }

  function badge(text) {
    return el("span", { class: "badge b-" + String(text).replace(/[^a-z_]+/gi, "-") }, text);
  }

  function time(t) {
    if (!t || t.startsWith("0001-")) return "";
    const d = new Date(t);
    return d.toLocaleTimeString();
  }

  function ago(t) {
    if (!t || t.startsWith("0001-") || !state) return "";
    const s = Math.max(0, Math.round((new Date(state.now) - new Date(t)) / 1000));
    if (s < 60) return s + " s ago";
    if (s < 3600) return Math.round(s / 60) + " min ago";
    return Math.round(s / 3600) + " h ago";
  }

  function num(n) { return (n || 0).toLocaleString("en-US"); }

  function table(head, rows, empty) {
    if (rows.length === 0) return el("p", { class: "note" }, empty);
    return el("div", { class: "wrap" },
      el("table", {},
        el("thead", {}, el("tr", {}, head.map((h) => el("th", typeof h === "string" ? {} : h[1], typeof h === "string" ? h : h[0])))),
        el("tbody", {}, rows)));
  }

  function list(items) {
    if (!items || items.length === 0) return el("span", { class: "note" }, "none");
    return el("ul", { class: "tools" }, items.map((t) => el("li", {}, el("code", {}, t))));
  }

  function servers(st) {
    const rows = st.servers.map((s) => el("tr", { "data-server": s.name },
      el("td", {}, el("b", {}, s.name), el("div", { class: "why" }, s.transport)),
      el("td", {}, badge(s.state), el("div", { class: "why" }, ago(s.since))),
      el("td", { class: "hide-narrow" }, s.protocol || "—"),
      el("td", { class: "num" }, num(s.tools),
        s.toolList.length ? el("details", { class: "toollist" }, el("summary", {}, "list"),
          el("ul", { class: "tools" }, s.toolList.map((t) => el("li", {}, el("code", {}, t.name), " ",
            el("span", { class: "why desc" }, t.description))))) : null),
      el("td", { class: "num" }, num(s.tokens)),
      el("td", {}, s.deferral, el("div", { class: "why" }, s.deferralWhy)),
      el("td", { class: "num hide-narrow" }, num(s.restarts)),
      el("td", {}, s.error ? el("pre", {}, s.error) : "—",
        s.stderr ? el("details", {}, el("summary", {}, "stderr"), el("pre", { class: "stderr" }, s.stderr)) : null)));
    return [
      el("h2", {}, "Servers"),
      table(["Server", "State", ["Protocol", { class: "hide-narrow" }], "Tools", "Tokens", "Deferral",
        ["Restarts", { class: "hide-narrow" }], "Last error"], rows, "No upstream server is configured."),
      skillsPanel(st),
      enrichPanel(st.enrich),
    ];
  }

  // skillsPanel shows the servers' skills: how many clients see, what
  // listing them costs, the bytes of their files held back until read,
  // and what clients fetched and read.
  function skillsPanel(st) {
    const k = st.skills;
    if (!k) return null;
    const lists = {};
    st.servers.forEach((s) => { lists[s.name] = s.skillList || []; });
    const rows = k.servers.map((s) => el("tr", { "data-skills": s.server },
      el("td", {}, el("b", {}, s.server)),
      el("td", { class: "num" }, num(s.skills),
        (lists[s.server] || []).length ? el("details", { class: "toollist" }, el("summary", {}, "list"),
          el("ul", { class: "tools" }, lists[s.server].map((t) => el("li", {}, el("code", {}, t.uri), " ",
            el("span", { class: "why desc" }, t.description))))) : null),
      el("td", { class: "num" }, num(s.tokens)),
      el("td", { class: "num" }, num(s.fileBytes)),
      el("td", { class: "num" }, num(s.fetched)),
      el("td", { class: "num" }, num(s.filesRead)),
      el("td", { class: "num" }, num(s.refused))));
    return el("section", { id: "skills" },
      el("h2", {}, "Skills"),
      el("div", { class: "cards" },
        el("div", { class: "card" }, "Skills listed", el("b", { id: "skills-total" }, num(k.skills))),
        el("div", { class: "card" }, "First skills/list costs", el("b", { id: "skills-list-tokens" }, num(k.listTokens)),
          el("div", { class: "why" }, "tokens: the entries, never the files")),
        el("div", { class: "card" }, "Files held back", el("b", { id: "skills-bytes" }, num(k.fileBytes)),
          el("div", { class: "why" }, "bytes, read only when a skill is used")),
        el("div", { class: "card" }, "Fetched / files read", el("b", { id: "skills-used" }, num(k.fetched) + " / " + num(k.filesRead)),
          k.refused ? el("div", { class: "why" }, num(k.refused) + " reads refused by verification") : null)),
      table(["Server", "Skills", "Tokens", "File bytes", "Fetched", "Files read", "Refused"], rows, "No server serves skills."));
  }

  // enrichPanel shows background enrichment: its state and why, the tools
  // with hints, the day's spend against the budget, and the last error.
  function enrichPanel(e) {
    if (!e) return null;
    const state = [el("span", { class: "badge b-enrich-" + String(e.state).replace(/[^a-z_]+/gi, "-") }, e.state)];
    if (e.total > 0) state.push(" ", num(e.done) + " / " + num(e.total));
    if (e.reason) state.push(el("div", { class: "why" }, e.reason));
    if (e.nextRun && !e.nextRun.startsWith("0001-")) state.push(el("div", { class: "why" }, "next run " + time(e.nextRun)));
    return el("section", { id: "enrich" },
      el("h2", {}, "Search hints"),
      el("p", { class: "note" }, "Written in the background by " + e.provider + (e.model ? " (" + e.model + ")" : "") +
        ", for the tools that have none for their current definition."),
      el("div", { class: "cards" },
        el("div", { class: "card", "data-enrich": "state" }, "State", el("b", {}, state)),
        el("div", { class: "card", "data-enrich": "hints" }, "Tools with hints",
          el("b", {}, num(e.withHints) + " / " + num(e.tools)),
          el("div", { class: "why" }, num(e.tools - e.withHints) + " without")),
        el("div", { class: "card", "data-enrich": "spend" }, "Today (UTC " + e.day + ")",
          el("b", {}, num(e.spentTools) + " / " + num(e.budgetTools) + " tools"),
          el("div", { class: "why" }, num(e.spentTokens) + " / " + num(e.budgetTokens) + " tokens")),
        el("div", { class: "card", "data-enrich": "outcomes" }, "Today's tools",
          el("b", {}, num(e.written) + " written"),
          el("div", { class: "why" }, num(e.rejected) + " rejected, " + num(e.failed) + " failed"))),
      e.lastError ? el("div", { "data-enrich": "error" }, el("span", { class: "why" }, "Last error " + ago(e.lastErrorAt) + ":"),
        el("pre", {}, e.lastError)) : null);
  }

  // clientCell names a session's client; a shared server (MCP 2026-07-28
  // clients have no session) lists the clients its requests named.
  function clientCell(s) {
    if (!s.shared) {
      return [s.client || "(unnamed)", el("div", { class: "why" }, s.protocol ? "MCP " + s.protocol : "")];
    }
    const seen = (s.clients || []).map((c) => el("li", { "data-client": c.client },
      c.client || "(unnamed)", " ", el("span", { class: "why" },
        "MCP " + c.protocol + ", " + num(c.requests) + (c.requests === 1 ? " request" : " requests") + ", last " + ago(c.last))));
    return [
      el("div", { class: "why" }, "no session: every MCP 2026-07-28 client of this exposure"),
      seen.length ? el("ul", { class: "seen" }, seen) : el("span", { class: "note" }, "no request yet"),
    ];
  }

  // stateCell is a session's state: open or closed (and when), or, for a
  // shared server, which has no session to close, its last request.
  function stateCell(s) {
    if (s.shared) {
      const last = (s.clients || [])[0];
      return [badge("shared"), el("div", { class: "why" }, last ? "last request " + ago(last.last) : "since " + time(s.opened))];
    }
    if (s.open) return [badge("open"), el("div", { class: "why" }, "since " + time(s.opened))];
    return [badge("closed"), el("div", { class: "why" }, time(s.opened) + " to " + time(s.closed))];
  }

  function clients(st) {
    const rows = st.sessions.map((s) => el("tr", { "data-session": s.id, "data-state": s.shared ? "shared" : s.open ? "open" : "closed" },
      el("td", {}, "#" + s.id),
      el("td", { class: "client" }, clientCell(s)),
      el("td", {}, badge(s.exposure), el("div", { class: "why" }, s.why)),
      el("td", {}, stateCell(s)),
      el("td", { class: "num" }, num(s.searches)),
      el("td", { class: "num" }, num(s.calls)),
      el("td", { class: "num" }, num(s.sentTokens) + " / " + num(s.fullTokens))));
    return [
      el("h2", {}, "Clients"),
      table(["Session", "Client", "Exposure and why", "State", "Searches", "Calls", "Tokens sent / full"], rows,
        "No client has connected yet."),
    ];
  }

  function calledList(calls) {
    if (!calls || calls.length === 0) return el("span", { class: "note" }, "none");
    return el("ul", { class: "tools" }, calls.map((c) => el("li", {},
      el("code", {}, c.tool), " ", badge(c.outcome), " ", el("span", { class: "why" }, c.durationMs.toFixed(1) + " ms"),
      recorded(c))));
  }

  function recorded(c) {
    if (!c.arguments && !c.result) return null;
    return el("details", {}, el("summary", {}, "arguments and result"),
      el("pre", {}, c.arguments || ""), el("pre", {}, c.result || ""));
  }

  function query(s) {
    const q = [];
    if (s.query) q.push(el("div", {}, el("code", { class: "query" }, s.query)));
    for (const x of s.queries || []) q.push(el("div", {}, el("code", { class: "query" }, x)));
    return q;
  }

  function searches(st) {
    const misses = st.misses.map((m) => el("tr", {},
      el("td", {}, el("code", { class: "query" }, m.query)),
      el("td", { class: "num" }, num(m.count)),
      el("td", {}, m.form || "—"),
      el("td", {}, m.error ? el("span", { class: "why" }, m.error) : list(m.results.slice(0, 5))),
      el("td", { class: "hide-narrow" }, ago(m.last))));
    const rows = st.searches.map((s) => el("tr", {},
      el("td", {}, time(s.time), el("div", { class: "why" }, "#" + s.session), el("div", { class: "why client" }, s.client)),
      el("td", {}, query(s), s.error ? el("div", { class: "why" }, s.error) : null),
      el("td", {}, s.form || "—"),
      el("td", {}, list(s.results.slice(0, 8)), s.total > 8 ? el("div", { class: "why" }, "of " + num(s.total)) : null),
      el("td", { class: "hide-narrow" }, list(s.loaded)),
      el("td", {}, calledList(s.called)),
      el("td", {}, badge(s.outcome))));
    const calls = st.calls.map((c) => el("tr", {},
      el("td", {}, time(c.time), el("div", { class: "why" }, "#" + c.session), el("div", { class: "why client" }, c.client)),
      el("td", {}, el("code", {}, c.tool), recorded(c)),
      el("td", {}, badge(c.outcome)),
      el("td", { class: "num" }, c.durationMs.toFixed(1) + " ms")));
    return [
      el("h2", {}, "Queries that led to no call"),
      table(["Query", "Times", "Form", "Found", ["Last", { class: "hide-narrow" }]], misses, "No miss yet."),
      el("h2", {}, "Searches"),
      table(["Time", "Query", "Form", "Results", ["Loaded", { class: "hide-narrow" }], "Called", "Outcome"], rows,
        "No search yet."),
      el("h2", {}, "Calls without a search"),
      table(["Time", "Tool", "Outcome", "Duration"], calls, "None."),
      el("p", { class: "note" }, st.recordArguments
        ? "Arguments and results are recorded (recordArguments is on)."
        : "Arguments and results are not recorded (toolsearch.dashboard recordArguments is off)."),
    ];
  }

  // plot draws the points' full and sent tokens over time as two lines.
  function plot(points) {
    const W = 800, H = 260, L = 60, R = 12, T = 14, B = 28;
    const root = svg("svg", { class: "plot", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "tokens over time" });
    if (points.length === 0) {
      root.appendChild(svg("text", { x: W / 2 - 60, y: H / 2 }, "no session yet"));
      return root;
    }
    const t0 = new Date(points[0].time).getTime();
    const t1 = Math.max(new Date(points[points.length - 1].time).getTime(), t0 + 1000);
    const ymax = Math.max(1, ...points.map((p) => Math.max(p.full, p.sent)));
    const x = (t) => L + ((new Date(t).getTime() - t0) / (t1 - t0)) * (W - L - R);
    const y = (v) => H - B - (v / ymax) * (H - T - B);
    root.appendChild(svg("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }));
    root.appendChild(svg("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }));
    for (const f of [0, 0.5, 1]) {
      root.appendChild(svg("text", { x: 4, y: y(ymax * f) + 4 }, num(Math.round(ymax * f))));
    }
    root.appendChild(svg("text", { x: L, y: H - 8 }, time(points[0].time)));
    root.appendChild(svg("text", { x: W - R - 70, y: H - 8 }, time(points[points.length - 1].time)));
    // Steps: a value holds until the next change.
    const step = (key) => {
      let d = "";
      points.forEach((p, i) => {
        const px = x(p.time).toFixed(1), py = y(p[key]).toFixed(1);
        if (i === 0) d += `M${px},${py}`;
        else d += `H${px}V${py}`;
      });
      return d + `H${(W - R).toFixed(1)}`;
    };
    root.appendChild(svg("path", { class: "full", d: step("full") }));
    root.appendChild(svg("path", { class: "sent", d: step("sent") }));
    return root;
  }

  function pct(part, whole) { return whole > 0 ? Math.round((part / whole) * 100) : 0; }

  // deferral says who keeps a session's tools from its model.
  function deferral(s) {
    if (s.deferredBy === "client") return el("div", { class: "why" }, "deferred by the client's own tool search (estimate)");
    if (s.deferredBy === "gateway") return el("div", { class: "why" }, "deferred by toolsearch");
    return el("div", { class: "why" }, "not deferred");
  }

  function economy(st) {
    const e = st.economy;
    const maxFull = Math.max(1, ...st.sessions.map((s) => s.fullTokens));
    const rows = st.sessions.map((s) => el("tr", { "data-session": s.id },
      el("td", {}, "#" + s.id, el("div", { class: "why" }, s.client)),
      el("td", {}, badge(s.exposure), deferral(s)),
      el("td", { class: "num" }, num(s.fullTokens)),
      el("td", { class: "num hide-narrow" }, num(s.sentTokens)),
      el("td", { class: "num" }, s.deferredBy === "client" ? "≈ " + num(s.modelTokens) : num(s.modelTokens)),
      el("td", { class: "num", "data-saved": s.id }, pct(s.fullTokens - s.modelTokens, s.fullTokens) + " %"),
      el("td", { class: "barcell hide-narrow" }, bars(s.fullTokens, s.modelTokens, maxFull))));
    const cards = [
      el("div", { class: "card" }, "Full lists would cost", el("b", { id: "full-total" }, num(e.full))),
      el("div", { class: "card" }, "Sent", el("b", { id: "sent-total" }, num(e.sent))),
      el("div", { class: "card" }, "Saved by toolsearch", el("b", { id: "saved-gateway" }, pct(e.full - e.sent, e.full) + " %")),
    ];
    if (e.byClient > 0) {
      cards.push(el("div", { class: "card" }, "Saved by the clients' own tool search",
        el("b", { id: "saved-client" }, "≈ " + pct(e.byClient, e.full) + " %"),
        el("div", { class: "why" }, "estimate: the clients load the always-loaded tools and a line per other tool's name")));
    }
    cards.push(el("div", { class: "card" }, "Saved", el("b", { id: "saved-total" }, pct(e.full - e.model, e.full) + " %")));
    return [
      el("h2", {}, "Context economy"),
      el("div", { class: "cards" }, cards),
      el("p", { class: "legend" }, el("span", { class: "kf" }, "full tool list"), el("span", { class: "ks" }, "sent"),
        el("span", { class: "note" }, "tokens over the open sessions, over time")),
      plot(e.points),
      el("h2", {}, "Per session"),
      table(["Session", "Exposure", "Full list", ["Sent", { class: "hide-narrow" }], "Model sees", "Saved", ["", { class: "hide-narrow" }]],
        rows, "No client has connected yet."),
    ];
  }

  function bars(full, sent, max) {
    const w = (v) => Math.max(1, Math.round((v / max) * 100));
    const f = el("span", { class: "bar full" });
    f.style.width = w(full) + "%";
    const s = el("span", { class: "bar sent" });
    s.style.width = w(sent) + "%";
    return el("div", {}, f, s);
  }

  function pageName() {
    const m = location.pathname.match(/^\/ui\/([a-z]+)$/);
    return m && pages[m[1]] ? m[1] : "servers";
  }

  function render() {
    if (!state) return;
    const name = pageName();
    for (const a of document.querySelectorAll("nav a")) {
      a.classList.toggle("current", a.dataset.page === name);
    }
    const main = document.getElementById("page");
    main.replaceChildren(...pages[name](state));
    main.dataset.seq = String(state.seq);
    document.getElementById("footer").replaceChildren(
      "Keeps the last " + num(state.keep) + " events, for " + state.retention + ". Updated " + time(state.now) + ".");
  }

  async function refresh() {
    if (fetching) { again = true; return; }
    fetching = true;
    try {
      // A state that does not come is said, not waited for forever.
      const r = await fetch("/ui/api/state", { cache: "no-store", signal: AbortSignal.timeout(stateTimeout) });
      if (!r.ok) throw new Error(r.status + " " + (await r.text()));
      state = await r.json();
      render();
    } catch (err) {
      const why = err.name === "TimeoutError"
        ? "no answer from /ui/api/state within " + stateTimeout / 1000 + " s (a browser opens at most six connections " +
          "to one server, and each dashboard tab shown holds one: close some)"
        : err.message;
      document.getElementById("page").replaceChildren(el("p", { class: "note" }, "Cannot read the state: " + why));
    } finally {
      fetching = false;
      if (again) { again = false; refresh(); }
    }
  }

  // live keeps one event stream open while the page is shown. A browser
  // opens at most six connections to one host over HTTP/1.1, and an event
  // stream holds one for as long as it is open: a page kept for going
  // back (the back/forward cache) or a tab in the background would hold
  // its stream, and after a few of them the next page's own requests
  // would wait for a free connection forever. So the stream closes when
  // the page is hidden or left, and opens again (with a fresh state) when
  // it is shown.
  let es = null;
  function live() {
    if (es) return;
    const badge = document.getElementById("live");
    es = new EventSource("/ui/events");
    es.addEventListener("state", (ev) => {
      badge.textContent = "live";
      badge.className = "live on";
      const seq = JSON.parse(ev.data).seq;
      if (!state || seq !== state.seq) refresh();
    });
    es.onerror = () => { badge.textContent = "reconnecting…"; badge.className = "live off"; };
  }

  function pause() {
    if (!es) return;
    es.close();
    es = null;
    const badge = document.getElementById("live");
    badge.textContent = "paused";
    badge.className = "live off";
  }

  function resume() {
    if (document.visibilityState === "hidden") return;
    refresh();
    live();
  }

  document.addEventListener("click", (ev) => {
    const a = ev.target.closest && ev.target.closest("nav a");
    if (!a || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey) return;
    ev.preventDefault();
    history.pushState(null, "", a.getAttribute("href"));
    render();
  });
  window.addEventListener("popstate", render);
  window.addEventListener("pagehide", pause);
  window.addEventListener("pageshow", (ev) => { if (ev.persisted) resume(); });
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "hidden") pause(); else resume(); });
  refresh();
  live();
})();
