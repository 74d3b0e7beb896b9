// convlog conversation viewer. User text is only ever set with textContent.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("data").textContent);
  var settings = JSON.parse(document.getElementById("settings").textContent);
  var pageSize = settings.page_size;
  var byVersion = {};
  data.messages.forEach(function (m) { byVersion[m.v] = m; });
  var turnOf = {};
  data.turns.forEach(function (t, i) { turnOf[t.from] = { n: i + 1, turn: t }; });

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function when(iso) { return iso.replace("T", " ").slice(0, 19); }

  function collapsible(summaryText, bodyText, cls, open) {
    var d = el("details", cls);
    d.appendChild(el("summary", null, summaryText));
    d.appendChild(el("pre", null, bodyText));
    if (open) d.open = true;
    return d;
  }

  function part(p) {
    if (p.k === "text") return el("div", "text", p.text);
    if (p.k === "thinking") return collapsible("thinking", p.text, "thinking", false);
    if (p.k === "tool_use") return collapsible("tool call " + p.name, p.args, "tool", false);
    if (p.k === "tool_result") {
      return collapsible((p.error ? "tool error" : "tool result") + " for " + p.id, p.text,
        p.error ? "tool error" : "tool", false);
    }
    if (p.k === "image") return el("div", "image", "[image " + p.ref + (p.media ? ", " + p.media : "") + "]");
    return el("div", "text", "");
  }

  function messageEntry(m) {
    var li = el("li", "msg role-" + m.role);
    li.dataset.v = m.v;
    var t = turnOf[m.v];
    if (t) {
      li.appendChild(el("div", "turn", "turn " + t.n + " · " + t.turn.tokens + " tokens" +
        (t.turn.input || t.turn.output ? " · " + t.turn.input + " in / " + t.turn.output + " out" : "") +
        (t.turn.cost !== null || t.turn.cost_unknown ? " · " + t.turn.cost_text : "")));
    }
    var head = el("div", "head");
    head.appendChild(el("span", "role", m.role));
    head.appendChild(el("span", "pos", "#" + m.v + " · " + when(m.at)));
    if (m.model) head.appendChild(el("span", "model", m.model));
    if (m.tokens !== null) head.appendChild(el("span", "tokens", m.tokens + " tok"));
    if (m.cost !== null || m.cost_unknown) head.appendChild(el("span", "cost", m.cost_text));
    li.appendChild(head);
    m.parts.forEach(function (p) { li.appendChild(part(p)); });
    return li;
  }

  function otherEntry(e) {
    var li = el("li", "entry kind-" + e.kind);
    li.dataset.v = e.v;
    var label = { injection: "injected history", memory: "memory block", summary: "summary",
      marker: "marker", repair: "convlog repair", preamble: "preamble (system prompt)"
    }[e.kind] || e.kind;
    li.appendChild(el("div", "head", "#" + e.v + " · " + label + (e.note ? " · " + e.note : "")));
    if (e.kind === "marker" || e.kind === "repair") li.appendChild(el("div", "text", e.text));
    else li.appendChild(collapsible("show the text the agent received", e.text, "injected", false));
    return li;
  }

  // In the agent's view an entry may have left the agent's context (`gone`: why), and
  // a marker may be flagged (`alert`: e.g. a fresh session that got no history).
  function entryNode(e) {
    var node;
    if (e.kind === "message") {
      var m = byVersion[e.v];
      node = m ? messageEntry(m) : el("li", "entry", "#" + e.v);
      // Dialogue that starts like a memory block: the agent view says it is not one.
      if (m && e.forged) node.querySelector(".head").appendChild(
        el("span", "forged", "not a memory block"));
      if (e.note) node.appendChild(el("div", "why", e.note));
    } else {
      node = otherEntry(e);
    }
    if (e.gone) {
      node.classList.add("gone");
      node.appendChild(el("div", "why", "no longer in the agent's context: " + e.gone));
    }
    if (e.alert) node.classList.add("alert");
    // convlog's tool-pairing repairs: a result it synthesized for a lost one (a
    // `repair` entry), a result left out because its call is not in context.
    if (e.repairs) {
      node.classList.add("repaired");
      e.repairs.forEach(function (r) {
        node.appendChild(el("div", "repair-mark", "convlog repair: " + r.kind + " · call " +
          r.call_id + (r.cause ? " · " + r.cause : "")));
      });
    }
    return node;
  }

  function timelineRow(r) {
    var tr = el("tr", r.cls);
    tr.appendChild(el("td", null, r.v));
    tr.appendChild(el("td", null, when(r.at)));
    tr.appendChild(el("td", "type", r.type));
    tr.appendChild(el("td", "details", r.details));
    return tr;
  }

  // A list shown a page at a time: 10,000 messages never become 10,000 nodes at once.
  function paged(name, items, target, make) {
    var pager = document.querySelector('.pager[data-for="' + name + '"]');
    pager.replaceChildren();
    var pages = Math.max(1, Math.ceil(items.length / pageSize));
    var current = pages - 1;  // the newest page first, as a chat shows it
    function show(n) {
      current = Math.min(pages - 1, Math.max(0, n));
      var frag = document.createDocumentFragment();
      items.slice(current * pageSize, (current + 1) * pageSize).forEach(function (it) {
        frag.appendChild(make(it));
      });
      target.replaceChildren(frag);
      label.textContent = "page " + (current + 1) + " of " + pages + " (" + items.length + ")";
    }
    var first = el("button", null, "« first"), prev = el("button", null, "‹ older"),
      next = el("button", null, "newer ›"), last = el("button", null, "newest »"),
      label = el("span", "where");
    [first, prev, label, next, last].forEach(function (b) { pager.appendChild(b); });
    first.type = prev.type = next.type = last.type = "button";
    first.onclick = function () { show(0); };
    prev.onclick = function () { show(current - 1); };
    next.onclick = function () { show(current + 1); };
    last.onclick = function () { show(pages - 1); };
    show(current);
    return show;
  }

  // The timeline shows the story around the dialogue (sessions, resumes, injections,
  // clears) unless asked for the messages too: those are in the views already.
  var withMessages = document.getElementById("timeline-messages");
  function drawTimeline() {
    var rows = withMessages.checked ? data.timeline : data.timeline.filter(function (r) {
      return r.type !== "message_appended";
    });
    document.getElementById("timeline-count").textContent = rows.length;
    paged("timeline", rows, document.querySelector("#timeline tbody"), timelineRow);
  }
  withMessages.addEventListener("change", drawTimeline);
  drawTimeline();
  paged("user", data.user_view, document.querySelector("#user-view .entries"), entryNode);
  paged("agent", data.agent_view, document.querySelector("#agent-view .entries"), entryNode);

  var main = document.getElementById("page");
  document.querySelectorAll("nav.controls button").forEach(function (b) {
    b.addEventListener("click", function () {
      main.dataset.mode = b.dataset.mode;
      document.querySelectorAll("nav.controls button").forEach(function (o) {
        o.classList.toggle("active", o === b);
      });
    });
  });
  var thinking = document.getElementById("show-thinking");
  thinking.addEventListener("change", function () {
    main.classList.toggle("show-thinking", thinking.checked);
  });
  document.body.dataset.ready = "yes";
})();
