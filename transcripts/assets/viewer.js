var ArenaViewer = null;

// The timeline over the run's sessions (the page's data, already decoded by viewer-boot.js).
function arenaViewer(SESSIONS, ARG_KEYS) {
  'use strict';
  // Untrusted strings only ever reach the DOM through textContent (markdown included: see
  // viewer-md.js); nothing is ever assigned to innerHTML.
  var PAGE = 100;
  var PREVIEW_LINES = 20;
  var PREVIEW_CHARS = 3000;
  var MD_PREVIEW_CHARS = 20000;
  var LABELS = {
    user: 'user', assistant: 'assistant', reasoning: 'reasoning', tool_call: 'tool call',
    tool_result: 'tool result', system: 'system', raw: 'raw'
  };
  var filter = { kinds: {}, tool: '' };
  var lists = [];
  var matchCache = {};
  var observer = new IntersectionObserver(onIntersect, { rootMargin: '1200px' });

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function fmt(n) { return Number(n).toLocaleString('en-US'); }

  function short(n) {
    if (n >= 1e6) return (n / 1e6).toFixed(n >= 1e7 ? 0 : 1) + 'M';
    if (n >= 1e3) return (n / 1e3).toFixed(n >= 1e4 ? 0 : 1) + 'k';
    return String(n);
  }

  function oneLine(text, max) {
    var s = String(text).replace(/\s+/g, ' ').trim();
    return s.length > max ? s.slice(0, max - 1) + '\u2026' : s;
  }

  // ---- filters -------------------------------------------------------------------------------
  function eventMatches(ev) {
    return !!filter.kinds[ev.k] && (!filter.tool || ev.tn === filter.tool);
  }

  function sessionHasMatch(s) {
    if (matchCache[s] === undefined) {
      matchCache[s] = false;
      var evs = SESSIONS[s].ev;
      for (var i = 0; i < evs.length; i++) {
        if (visible(s, i)) { matchCache[s] = true; break; }
      }
    }
    return matchCache[s];
  }

  function visible(s, i) {
    var ev = SESSIONS[s].ev[i];
    if (eventMatches(ev)) return true;
    return !!ev.ch && ev.ch.some(sessionHasMatch);
  }

  function filtersChanged() {
    matchCache = {};
    lists = [];
    observer.disconnect();
    mountList(document.getElementById('timeline'), 0);
  }

  function clearFilters() {
    document.querySelectorAll('#kind-filters input').forEach(function (box) {
      box.checked = true;
      filter.kinds[box.value] = true;
    });
    filter.tool = '';
    document.getElementById('tool-filter').value = '';
    filtersChanged();
  }

  // ---- paged lists: a window [lo, hi) of a session's visible events is in the DOM -----------
  function mountList(box, s) {
    var list = { box: box, s: s, order: [], lo: 0, hi: 0, nodes: {} };
    box.textContent = '';
    lists.push(list);
    var evs = SESSIONS[s].ev;
    for (var i = 0; i < evs.length; i++) if (visible(s, i)) list.order.push(i);
    if (!list.order.length) box.appendChild(el('p', 'muted', 'No events match the filters.'));
    list.less = pageButton(list, -1);
    list.more = pageButton(list, 1);
    box.appendChild(list.less);
    box.appendChild(list.more);
    renderRange(list, 0, PAGE);
    return list;
  }

  function pageButton(list, dir) {
    var button = el('button', 'more');
    button.type = 'button';
    button._list = list;
    button._dir = dir;
    return button;
  }

  function page(list, dir) {
    if (dir > 0) renderRange(list, list.lo, list.hi + PAGE);
    else renderRange(list, list.lo - PAGE, list.hi);
  }

  // The node of the j-th visible event; a far jump drops the window instead of building
  // every event in between.
  function showAt(list, j) {
    if (j < list.lo - PAGE || j >= list.hi + PAGE) clearRange(list, Math.max(0, j - 10));
    renderRange(list, Math.min(list.lo, j), Math.max(list.hi, j + 25));
    return list.nodes[list.order[j]];
  }

  function showAll(list) { renderRange(list, 0, list.order.length); }

  function clearRange(list, at) {
    for (var j = list.lo; j < list.hi; j++) list.nodes[list.order[j]].remove();
    list.nodes = {};
    list.lo = list.hi = at;
  }

  function renderRange(list, from, to) {
    from = Math.max(0, from);
    to = Math.min(list.order.length, to);
    if (to > list.hi) {
      list.box.insertBefore(build(list, list.hi, to), list.more);
      list.hi = to;
    }
    if (from < list.lo) prepend(list, from);
    updateButton(list.less, list.lo, 'earlier');
    updateButton(list.more, list.order.length - list.hi, 'later');
  }

  // Keeps what the reader looks at in place while earlier events appear above it.
  function prepend(list, from) {
    var anchor = list.hi > list.lo ? list.nodes[list.order[list.lo]] : null;
    var before = anchor ? anchor.getBoundingClientRect().top : 0;
    list.box.insertBefore(build(list, from, list.lo), list.less.nextSibling);
    list.lo = from;
    if (anchor) window.scrollBy(0, anchor.getBoundingClientRect().top - before);
  }

  function build(list, from, to) {
    var frag = document.createDocumentFragment();
    for (var j = from; j < to; j++) {
      var i = list.order[j];
      list.nodes[i] = renderEvent(list.s, i);
      frag.appendChild(list.nodes[i]);
    }
    return frag;
  }

  function updateButton(button, left, word) {
    observer.unobserve(button);
    button.hidden = left <= 0;
    if (left <= 0) return;
    button.textContent = 'show ' + word + ' events (' + fmt(left) + ' ' + word + ')';
    observer.observe(button);
  }

  function onIntersect(entries) {
    entries.forEach(function (entry) {
      var button = entry.target;
      if (entry.isIntersecting && !button.hidden) page(button._list, button._dir);
    });
  }

  // ---- events --------------------------------------------------------------------------------
  function renderEvent(s, i) {
    var ev = SESSIONS[s].ev[i];
    var node = el('article', 'ev k-' + ev.k + (ev.err ? ' error' : ''));
    node.id = 'e-' + ev.id;
    var head = el('div', 'ev-head');
    head.appendChild(el('span', 'kind', LABELS[ev.k] || ev.k));
    if (ev.tn) head.appendChild(el('span', 'tool', ev.tn));
    var summary = eventSummary(ev);
    if (summary) head.appendChild(el('span', 'summary', summary));
    if (ev.u) head.appendChild(usageBadge(ev.u));
    var model = SESSIONS[s].m && SESSIONS[s].m[0];
    if (ev.m && ev.m !== model) head.appendChild(el('span', 'badge', ev.m));
    if (ev.t) head.appendChild(el('time', 'ts', ev.t));
    var link = el('a', 'permalink', '#');
    link.href = '#e-' + ev.id;
    link.title = 'permalink';
    head.appendChild(link);
    node.appendChild(head);
    (BODIES[ev.k] || rawBody)(ev, node);
    return node;
  }

  function eventSummary(ev) {
    if (ev.k === 'tool_call') return argSummary(ev.a);
    if (ev.k === 'system') return ev.st || '';
    if (ev.k === 'tool_result') {
      var bits = [];
      if (ev.err) bits.push('error');
      if (ev.ec !== undefined) bits.push('exit ' + ev.ec);
      if (ev.ms !== undefined) bits.push(fmt(ev.ms) + ' ms');
      return bits.join(' \u00b7 ');
    }
    return '';
  }

  function argSummary(a) {
    if (a === undefined || a === null) return '';
    if (typeof a !== 'object') return oneLine(a, 160);
    for (var n = 0; n < (ARG_KEYS || []).length; n++) {
      var v = a[ARG_KEYS[n]];
      if (typeof v === 'string' && v) return oneLine(v, 160);
    }
    return oneLine(JSON.stringify(a), 160);
  }

  // Normalized figures (docs/transcripts.md): input is every prompt token of the call, cache
  // reads and writes included; output includes reasoning.
  function usageBadge(u) {
    var input = u[0] + u[2] + u[3];
    var text = 'in ' + short(input) + (u[2] ? ' (' + short(u[2]) + ' cached)' : '') +
      ' \u00b7 out ' + short(u[1]);
    var badge = el('span', 'badge tokens', text);
    badge.title = 'input ' + fmt(input) + ' = uncached ' + fmt(u[0]) + ' + cache reads ' +
      fmt(u[2]) + ' + cache writes ' + fmt(u[3]) + '; output ' + fmt(u[1]) +
      (u[4] ? ', of which reasoning ' + fmt(u[4]) : '');
    return badge;
  }

  var BODIES = {
    user: function (ev, node) { node.appendChild(mdBlock(ev.x || '')); },
    system: function (ev, node) {
      if (ev.x) node.appendChild(textBlock(ev.x));
      subagents(ev, node);  // an agent no tool call spawned (compaction, warm-up, orphan)
    },
    assistant: function (ev, node) { node.appendChild(mdBlock(ev.x || '')); },
    reasoning: function (ev, node) {
      var label = ev.enc ? 'reasoning: encrypted' : (ev.x ? 'reasoning: ' + fmt(ev.x.length) +
        ' chars' : 'reasoning: empty');
      if (!ev.x) { node.appendChild(el('p', 'muted', label)); return; }
      node.appendChild(lazyDetails(label, function (d) { d.appendChild(mdBlock(ev.x)); }));
    },
    tool_call: function (ev, node) {
      if (ev.f) node.appendChild(el('div', 'path', ev.f));
      if (ev.df) node.appendChild(ArenaDiff.diffBlock(ev.df, ev.f || ''));
      if (ev.x) node.appendChild(textBlock(ev.x));
      if (ev.a !== undefined) {
        node.appendChild(lazyDetails('arguments', function (d) {
          d.appendChild(textBlock(typeof ev.a === 'string' ? ev.a : ArenaMarkdown.jsonText(ev.a)));
        }));
      }
      subagents(ev, node);
    },
    tool_result: function (ev, node) { node.appendChild(textBlock(ev.x || '')); }
  };

  function rawBody(ev, node) {
    if (ev.x) node.appendChild(textBlock(ev.x));
    if (ev.raw !== undefined) {
      node.appendChild(lazyDetails('raw record', function (d) {
        d.appendChild(textBlock(JSON.stringify(ev.raw, null, 2)));
      }));
    }
  }

  function lazyDetails(label, fill) {
    var d = el('details', 'lazy');
    d.appendChild(el('summary', null, label));
    d._fill = fill;
    return d;
  }

  function fillDetails(d) {
    var fill = d._fill;
    d._fill = null;
    if (fill) fill(d);
  }

  function previewCut(text) {
    var pos = 0;
    for (var n = 0; n < PREVIEW_LINES && pos < text.length; n++) {
      var nl = text.indexOf('\n', pos);
      pos = nl < 0 ? text.length : nl + 1;
    }
    var cut = Math.min(pos, PREVIEW_CHARS);
    return cut >= text.length ? -1 : cut;
  }

  function textBlock(text, cls) {
    var pre = el('pre', cls || 'text');
    var cut = previewCut(text);
    if (cut < 0) { pre.textContent = text; return pre; }
    pre.textContent = text.slice(0, cut);
    var wrap = el('div', 'long');
    wrap.appendChild(pre);
    var lines = text.split('\n').length;
    var button = el('button', 'show-all', 'show all (' + fmt(lines) + ' lines, ' +
      fmt(text.length) + ' chars)');
    button.type = 'button';
    button._expand = function () { pre.textContent = text; button.remove(); };
    wrap.appendChild(button);
    return wrap;
  }

  // Prose as markdown; a very long message shows its beginning until "show all".
  function mdBlock(text) {
    if (text.length <= MD_PREVIEW_CHARS) return ArenaMarkdown.render(text);
    var cut = text.lastIndexOf('\n', MD_PREVIEW_CHARS);
    var wrap = el('div', 'long');
    wrap.appendChild(ArenaMarkdown.render(text.slice(0, cut > 0 ? cut : MD_PREVIEW_CHARS)));
    var button = el('button', 'show-all', 'show all (' + fmt(text.split('\n').length) +
      ' lines, ' + fmt(text.length) + ' chars)');
    button.type = 'button';
    button._expand = function () { wrap.replaceWith(ArenaMarkdown.render(text)); };
    wrap.appendChild(button);
    return wrap;
  }

  function subagents(ev, node) {
    (ev.ch || []).forEach(function (c) { node.appendChild(subagentSection(c)); });
  }

  function subagentSection(c) {
    var sub = SESSIONS[c];
    var d = el('details', 'subagent depth-' + Math.min(sub.dp, 6));
    d.dataset.s = String(c);
    var summary = el('summary');
    // Under a tool call: a subagent it spawned; under a system event: the parser's label of an
    // agent that no call spawned ("compaction agent: acompact-...").
    var holder = SESSIONS[sub.p[0]].ev[sub.p[1]];
    var kind = holder.k === 'system' && holder.x ? holder.x.split(': ')[0] : 'subagent';
    summary.appendChild(el('span', 'sub-title', kind + (sub.at ? ' \u00b7 ' + sub.at : '')));
    if (sub.d) summary.appendChild(el('span', 'summary', sub.d));
    summary.appendChild(el('span', 'badge', totalsLine(sub.tot, sub.ev.length, sub.cf)));
    d.appendChild(summary);
    d._fill = function (dd) {
      var facts = [sub.ai && 'agent ' + sub.ai, sub.m && 'model ' + sub.m.join(', '), sub.id];
      dd.appendChild(el('div', 'path', facts.filter(Boolean).join(' \u00b7 ')));
      if (sub.w) dd.appendChild(textBlock('parser warnings:\n' + sub.w.join('\n')));
      if (sub.cf) dd.appendChild(cliFigures(sub.cf));
      var box = el('div', 'events');
      dd.appendChild(box);
      dd._list = mountList(box, c);
    };
    return d;
  }

  function totalsLine(t, events, cf) {
    var u = t.usage, input = u.input + u.cache_read + u.cache_write;
    var bits = [fmt(events) + ' events', fmt(t.tool_calls) + ' tool calls',
      short(input + u.output) + ' tokens summed over API calls (in ' + short(input) + ', out ' +
      short(u.output) + ')'];
    if (t.subagents) bits.push(t.subagents + ' subagents');
    if (t.duration_ms) bits.push((t.duration_ms / 1000).toFixed(1) + ' s');
    if (t.cost_usd !== null && t.cost_usd !== undefined) bits.push('$' + t.cost_usd);
    var told = cf && cf['Task result: toolUseResult.totalTokens'];
    if (told !== undefined) bits.push('Task result: totalTokens ' + fmt(told));
    return bits.join(' \u00b7 ');
  }

  // A subagent's own figures as its spawning call's result wrote them, names and values as is.
  function cliFigures(cf) {
    var table = el('table', 'cli-figures');
    table.appendChild(el('caption', null, 'As the CLI reported them (field names and values as written)'));
    leaves(cf, '', function (name, value) {
      var tr = el('tr');
      tr.appendChild(el('th', null, name));
      tr.appendChild(el('td', null, typeof value === 'number' && Number.isInteger(value) ?
        fmt(value) : (typeof value === 'string' ? value : JSON.stringify(value))));
      table.appendChild(tr);
    });
    return table;
  }

  function leaves(value, prefix, visit) {
    Object.keys(value).forEach(function (key) {
      var v = value[key];
      if (v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length) {
        leaves(v, prefix + key + '.', visit);
      } else {
        visit(prefix + key, v);
      }
    });
  }

  // Every kind shown (the toolbar's filters set them otherwise).
  function everyKind() {
    Object.keys(LABELS).forEach(function (kind) { filter.kinds[kind] = true; });
  }

  // This timeline is replaced: it draws nothing more.
  function stop() {
    observer.disconnect();
    lists = [];
  }

  return {
    everyKind: everyKind, stop: stop,
    SESSIONS: SESSIONS, filter: filter, el: el, fmt: fmt, short: short, oneLine: oneLine,
    lists: function () { return lists; }, mountList: mountList, page: page, showAt: showAt,
    showAll: showAll,
    fillDetails: fillDetails, visible: visible, filtersChanged: filtersChanged,
    clearFilters: clearFilters
  };
}
