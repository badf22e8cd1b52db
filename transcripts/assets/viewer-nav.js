function arenaNav(V) {
  'use strict';
  // Toolbar, search over the embedded data, permalinks and the token chart.
  var SESSIONS = V.SESSIONS, el = V.el, fmt = V.fmt;
  var MAX_RESULTS = 200;
  var SVG = 'http://www.w3.org/2000/svg';
  var hits = [];
  var hitPos = -1;
  var searched = '';
  var anchors = null;
  var current = null;

  function dfs(visit) {
    var stack = [[0, 0]];
    while (stack.length) {
      var top = stack[stack.length - 1], s = top[0], i = top[1];
      if (i >= SESSIONS[s].ev.length) { stack.pop(); continue; }
      top[1] = i + 1;
      visit(s, i);
      var ch = SESSIONS[s].ev[i].ch;
      if (ch) for (var c = ch.length - 1; c >= 0; c--) stack.push([ch[c], 0]);
    }
  }

  // ---- filters -------------------------------------------------------------------------------
  function buildFilters() {
    var kinds = {}, tools = {};
    dfs(function (s, i) {
      var ev = SESSIONS[s].ev[i];
      kinds[ev.k] = (kinds[ev.k] || 0) + 1;
      if (ev.tn) tools[ev.tn] = (tools[ev.tn] || 0) + (ev.k === 'tool_call' ? 1 : 0);
    });
    var box = document.getElementById('kind-filters');
    Object.keys(kinds).forEach(function (kind) {
      V.filter.kinds[kind] = true;
      var label = el('label', 'kind-filter');
      var input = el('input');
      input.type = 'checkbox';
      input.checked = true;
      input.value = kind;
      label.appendChild(input);
      label.appendChild(document.createTextNode(' ' + kind.replace('_', ' ') + ' (' +
        fmt(kinds[kind]) + ')'));
      box.appendChild(label);
    });
    var select = document.getElementById('tool-filter');
    Object.keys(tools).sort().forEach(function (tool) {
      var option = el('option', null, tool + ' (' + fmt(tools[tool]) + ')');
      option.value = tool;
      select.appendChild(option);
    });
    box.addEventListener('change', function (e) {
      V.filter.kinds[e.target.value] = e.target.checked;
      V.filtersChanged();
    });
    select.addEventListener('change', function () {
      V.filter.tool = select.value;
      V.filtersChanged();
    });
  }

  // ---- search --------------------------------------------------------------------------------
  var FIELDS = ['x', 'tn', 'f', 'df', 'st', 'm', 'ci', 't'];

  function findIn(ev, q) {
    for (var n = 0; n < FIELDS.length; n++) {
      var v = ev[FIELDS[n]];
      if (v === undefined) continue;
      var text = String(v), at = text.toLowerCase().indexOf(q);
      if (at >= 0) return [text, at];
    }
    var blobs = [ev.a, ev.raw];
    for (var b = 0; b < blobs.length; b++) {
      if (blobs[b] === undefined) continue;
      var json = typeof blobs[b] === 'string' ? blobs[b] : JSON.stringify(blobs[b]);
      var pos = json.toLowerCase().indexOf(q);
      if (pos >= 0) return [json, pos];
    }
    return null;
  }

  function runSearch(query) {
    var q = query.trim().toLowerCase(), list = document.getElementById('search-results');
    searched = query;
    hits = [];
    hitPos = -1;
    list.textContent = '';
    list.hidden = !q;
    if (!q) { document.getElementById('search-count').textContent = ''; return; }
    dfs(function (s, i) {
      var found = findIn(SESSIONS[s].ev[i], q);
      if (found) hits.push({ s: s, i: i, text: found[0], at: found[1] });
    });
    document.getElementById('search-count').textContent = fmt(hits.length) + ' matches';
    hits.slice(0, MAX_RESULTS).forEach(function (hit) { list.appendChild(resultItem(hit, q)); });
    if (hits.length > MAX_RESULTS) {
      list.appendChild(el('li', 'muted', fmt(hits.length - MAX_RESULTS) +
        ' more: use the arrows to step through them'));
    }
  }

  function resultItem(hit, q) {
    var ev = SESSIONS[hit.s].ev[hit.i], item = el('li'), link = el('a');
    link.href = '#e-' + ev.id;
    link.appendChild(el('span', 'kind', ev.k.replace('_', ' ') + (ev.tn ? ' ' + ev.tn : '')));
    var from = Math.max(0, hit.at - 60);
    link.appendChild(document.createTextNode(' ' + V.oneLine(hit.text.slice(from, hit.at), 80)));
    link.appendChild(el('mark', null, hit.text.substr(hit.at, q.length)));
    link.appendChild(document.createTextNode(V.oneLine(hit.text.substr(hit.at + q.length, 80), 80)));
    item.appendChild(link);
    return item;
  }

  function step(delta) {
    if (!hits.length) return;
    hitPos = (hitPos + delta + hits.length) % hits.length;
    var hit = hits[hitPos];
    document.getElementById('search-count').textContent =
      fmt(hitPos + 1) + ' of ' + fmt(hits.length) + ' matches';
    go(hit.s, hit.i);
  }

  // ---- revealing an event: render its pages, open its parents --------------------------------
  function chainOf(s, i) {
    var chain = [[s, i]];
    while (SESSIONS[s].p) {
      i = SESSIONS[s].p[1];
      s = SESSIONS[s].p[0];
      chain.unshift([s, i]);
    }
    return chain;
  }

  function listOf(box) {
    return V.lists().filter(function (l) { return l.box === box; })[0];
  }

  function reveal(s, i) {
    var chain = chainOf(s, i);
    if (!chain.every(function (link) { return V.visible(link[0], link[1]); })) V.clearFilters();
    var list = listOf(document.getElementById('timeline')), node = null;
    for (var k = 0; k < chain.length; k++) {
      node = V.showAt(list, list.order.indexOf(chain[k][1]));
      if (k === chain.length - 1) break;
      var section = node.querySelector('details.subagent[data-s="' + chain[k + 1][0] + '"]');
      section.open = true;
      V.fillDetails(section);
      list = section._list;
    }
    return node;
  }

  function expandWithin(node) {
    node.querySelectorAll('details.lazy').forEach(function (d) {
      d.open = true;
      V.fillDetails(d);
    });
    node.querySelectorAll('button.show-all').forEach(function (b) { b._expand(); });
  }

  function go(s, i) {
    var node = reveal(s, i);
    expandWithin(node);
    if (current) current.classList.remove('target');
    current = node;
    node.classList.add('target');
    node.scrollIntoView({ block: 'start' });
    var hash = '#' + node.id;
    if (location.hash !== hash) history.replaceState(null, '', hash);
  }

  function openAnchor() {
    var id = location.hash.slice(1);
    if (id.slice(0, 2) !== 'e-') return;
    if (!anchors) {
      anchors = {};
      SESSIONS.forEach(function (sess, s) {
        sess.ev.forEach(function (ev, i) { anchors[ev.id] = [s, i]; });
      });
    }
    var ref = anchors[id.slice(2)];
    if (ref) go(ref[0], ref[1]);
  }

  // ---- expand / collapse ---------------------------------------------------------------------
  function expandAll() {
    for (var round = 0; round < 64; round++) {
      var changed = false;
      V.lists().forEach(function (l) {
        if (l.box.isConnected && (l.lo > 0 || l.hi < l.order.length)) {
          V.showAll(l);
          changed = true;
        }
      });
      document.querySelectorAll('#timeline details:not([open])').forEach(function (d) {
        d.open = true;
        V.fillDetails(d);
        changed = true;
      });
      document.querySelectorAll('#timeline button.show-all').forEach(function (b) {
        b._expand();
        changed = true;
      });
      if (!changed) return;
    }
  }

  function collapseAll() {
    document.querySelectorAll('#timeline details[open]').forEach(function (d) { d.open = false; });
  }

  // ---- token chart ---------------------------------------------------------------------------
  function svg(tag, attrs) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    return node;
  }

  function drawChart() {
    var calls = [], total = 0;
    SESSIONS[0].ev.forEach(function (ev, i) {
      if (!ev.u) return;
      total += ev.u[0] + ev.u[1] + ev.u[2] + ev.u[3];
      calls.push({ i: i, cumulative: total, context: ev.u[0] + ev.u[2] + ev.u[3] });
    });
    var box = document.getElementById('usage-chart');
    if (!calls.length) { document.getElementById('usage-chart-section').hidden = true; return; }
    var W = 1000, H = 220, maxCtx = 1;
    calls.forEach(function (c) { maxCtx = Math.max(maxCtx, c.context); });
    var x = function (n) { return 50 + (calls.length < 2 ? 0 : n * (W - 100) / (calls.length - 1)); };
    var chart = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', class: 'chart' });
    var lines = [['cumulative', total, 'cum'], ['context', maxCtx, 'ctx']];
    lines.forEach(function (spec) {
      var points = calls.map(function (c, n) {
        return x(n).toFixed(1) + ',' + (H - 30 - c[spec[0]] * (H - 50) / spec[1]).toFixed(1);
      });
      chart.appendChild(svg('polyline', { points: points.join(' '), class: 'line-' + spec[2] }));
      if (points.length > 60) return;
      points.forEach(function (point) {
        var xy = point.split(',');
        chart.appendChild(svg('circle', { cx: xy[0], cy: xy[1], r: 3, class: 'dot-' + spec[2] }));
      });
    });
    var labels = [[6, 14, 'cumulative tokens (max ' + fmt(total) + ')', 'cum'],
      [W - 6, 14, 'context per call (max ' + fmt(maxCtx) + ')', 'ctx'],
      [W / 2, H - 8, fmt(calls.length) + ' API calls of the main thread; click to jump', '']];
    labels.forEach(function (l) {
      var text = svg('text', { x: l[0], y: l[1], class: 'label ' + l[3] });
      text.textContent = l[2];
      chart.appendChild(text);
    });
    chart.addEventListener('click', function (e) {
      var rect = chart.getBoundingClientRect();
      var n = Math.round(((e.clientX - rect.left) * W / rect.width - 50) * (calls.length - 1) / (W - 100));
      go(0, calls[Math.max(0, Math.min(calls.length - 1, n))].i);
    });
    box.appendChild(chart);
  }

  // ---- wiring --------------------------------------------------------------------------------
  function wire() {
    var timer = null, input = document.getElementById('search');
    input.addEventListener('input', function () {
      clearTimeout(timer);
      timer = setTimeout(function () { runSearch(input.value); }, 250);
    });
    input.addEventListener('keydown', function (e) {
      if (e.key !== 'Enter') return;
      clearTimeout(timer);
      if (searched !== input.value) runSearch(input.value);
      step(e.shiftKey ? -1 : 1);
    });
    document.getElementById('search-next').addEventListener('click', function () { step(1); });
    document.getElementById('search-prev').addEventListener('click', function () { step(-1); });
    document.getElementById('expand-all').addEventListener('click', expandAll);
    document.getElementById('collapse-all').addEventListener('click', collapseAll);
    document.addEventListener('toggle', function (e) {
      if (e.target.open && e.target._fill) V.fillDetails(e.target);
    }, true);
    document.addEventListener('click', function (e) {
      var button = e.target.closest('button.show-all, button.more');
      if (button && button._expand) button._expand();
      if (button && button._list) V.page(button._list, button._dir);
    });
    window.addEventListener('hashchange', openAnchor);
    document.addEventListener('keydown', function (e) {
      if (e.key !== '/' || /^(INPUT|SELECT|TEXTAREA)$/.test(e.target.tagName)) return;
      e.preventDefault();
      input.focus();
    });
  }

  buildFilters();
  wire();
  V.mountList(document.getElementById('timeline'), 0);
  drawChart();
  openAnchor();
}
