var ArenaMarkdown = (function () {
  'use strict';
  // Markdown to DOM nodes, built only with createElement and textContent: raw HTML in the text
  // stays text and links keep only http, https and mailto targets, as the server-side
  // allowlist (markdown-it with HTML off, then bleach) did before pages rendered prose lazily.
  var SAFE_URL = /^(https?:|mailto:)/i;
  var FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)/;
  var HEADING = /^ {0,3}(#{1,6})(?:\s+|$)(.*?)(?:\s+#+)?\s*$/;
  var RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
  var QUOTE = /^ {0,3}> ?/;
  var ITEM = /^( {0,8})([-*+]|\d{1,9}[.)])(\s+|$)/;
  var TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
  // One inline construct per alternative; spans are bounded so that a stray delimiter in a long
  // paragraph costs a bounded scan, not a quadratic one.
  var INLINE = new RegExp([
    '(`+)([^`][\\s\\S]{0,2000}?)\\1(?!`)',
    '\\[([^\\]\\n]{1,500})\\]\\(\\s*([^()\\s]{1,2000})(?:\\s+"[^"\\n]{0,200}")?\\s*\\)',
    '(\\*\\*|__)(?=\\S)([\\s\\S]{0,2000}?\\S)\\5',
    '~~(?=\\S)([\\s\\S]{0,2000}?\\S)~~',
    '(\\*|_)(?=[^\\s*_])([\\s\\S]{0,2000}?[^\\s\\\\])\\8',
    '(\\\\[\\\\`*_{}\\[\\]()#+\\-.!~|>])',
    '( {2,}|\\\\)\\n'
  ].join('|'), 'g');

  function el(tag, text) {
    var node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function render(text) {
    var box = el('div');
    box.className = 'md';
    blocks(String(text).replace(/\r\n?/g, '\n').split('\n'), box);
    return box;
  }

  function blocks(lines, parent) {
    var i = 0;
    while (i < lines.length) {
      var line = lines[i];
      if (!line.trim()) { i++; continue; }
      var m = FENCE.exec(line);
      if (m) { i = fence(lines, i, m, parent); continue; }
      if ((m = HEADING.exec(line))) {
        parent.appendChild(inline(m[2], el('h' + m[1].length)));
        i++;
        continue;
      }
      if (RULE.test(line)) { parent.appendChild(el('hr')); i++; continue; }
      if (QUOTE.test(line)) { i = quote(lines, i, parent); continue; }
      if (ITEM.test(line)) { i = list(lines, i, parent); continue; }
      if (line.indexOf('|') >= 0 && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]) &&
          lines[i + 1].indexOf('-') >= 0) {
        i = table(lines, i, parent);
        continue;
      }
      i = paragraph(lines, i, parent);
    }
  }

  function startsBlock(line) {
    return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) ||
      ITEM.test(line);
  }

  function fence(lines, i, m, parent) {
    var mark = m[1], body = [], j = i + 1;
    var close = new RegExp('^ {0,3}' + (mark[0] === '`' ? '`' : '~') + '{' + mark.length + ',}\\s*$');
    while (j < lines.length && !close.test(lines[j])) body.push(lines[j++]);
    var pre = el('pre'), code = el('code', body.join('\n'));
    if (m[2]) code.className = 'lang-' + m[2].replace(/[^\w+-]/g, '');
    pre.appendChild(code);
    parent.appendChild(pre);
    return j + 1;
  }

  function quote(lines, i, parent) {
    var body = [];
    while (i < lines.length && lines[i].trim() && (QUOTE.test(lines[i]) || body.length)) {
      if (!QUOTE.test(lines[i]) && startsBlock(lines[i])) break;
      body.push(lines[i].replace(QUOTE, ''));
      i++;
    }
    var node = el('blockquote');
    blocks(body, node);
    parent.appendChild(node);
    return i;
  }

  function leading(line) { return line.length - line.replace(/^ +/, '').length; }

  function list(lines, i, parent) {
    var first = ITEM.exec(lines[i]), ordered = /\d/.test(first[2]), indent = first[1].length;
    var node = el(ordered ? 'ol' : 'ul');
    var start = parseInt(first[2], 10);
    if (ordered && start !== 1) node.setAttribute('start', String(start));
    while (i < lines.length) {
      var m = ITEM.exec(lines[i]);
      if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
      var width = m[0].length, body = [lines[i].slice(width)];
      for (i++; i < lines.length; i++) {
        var line = lines[i], lead = leading(line);
        if (!line.trim()) {
          if (leading(lines[i + 1] || '') <= indent) break;
          body.push('');
        } else if (lead <= indent && startsBlock(line)) {
          break;
        } else {
          body.push(lead > indent ? line.slice(Math.min(lead, width)) : line);
        }
      }
      node.appendChild(listItem(body));
      var j = i;
      while (j < lines.length && !lines[j].trim()) j++;
      var again = j < lines.length && ITEM.exec(lines[j]);
      if (again && again[1].length === indent) i = j;
    }
    parent.appendChild(node);
    return i;
  }

  function listItem(body) {
    var li = el('li');
    var loose = body.some(function (l, n) { return n > 0 && (!l.trim() || startsBlock(l)); });
    if (loose) blocks(body, li);
    else inline(body.join('\n'), li);
    return li;
  }

  function cells(line) {
    var s = line.trim().replace(/^\|/, '').replace(/\|$/, '');
    return s.split(/(?<!\\)\|/).map(function (c) { return c.trim().replace(/\\\|/g, '|'); });
  }

  function table(lines, i, parent) {
    var node = el('table'), head = el('thead'), body = el('tbody');
    var aligns = cells(lines[i + 1]).map(function (c) {
      var left = c[0] === ':', right = c[c.length - 1] === ':';
      return left && right ? 'center' : right ? 'right' : left ? 'left' : '';
    });
    head.appendChild(row(cells(lines[i]), 'th', aligns));
    i += 2;
    while (i < lines.length && lines[i].trim() && lines[i].indexOf('|') >= 0) {
      body.appendChild(row(cells(lines[i]), 'td', aligns));
      i++;
    }
    node.appendChild(head);
    node.appendChild(body);
    parent.appendChild(node);
    return i;
  }

  function row(values, tag, aligns) {
    var tr = el('tr');
    for (var n = 0; n < aligns.length; n++) {
      var cell = inline(values[n] || '', el(tag));
      if (aligns[n]) cell.setAttribute('align', aligns[n]);
      tr.appendChild(cell);
    }
    return tr;
  }

  function paragraph(lines, i, parent) {
    var body = [lines[i++]];
    while (i < lines.length && lines[i].trim() && !startsBlock(lines[i])) body.push(lines[i++]);
    parent.appendChild(inline(body.join('\n'), el('p')));
    return i;
  }

  function inline(text, parent) {
    var pos = 0, pending = '', m;
    while (pos < text.length) {
      INLINE.lastIndex = pos;
      m = INLINE.exec(text);
      if (!m) break;
      pending += text.slice(pos, m.index);
      if ((m[8] === '_' || m[5] === '__') && intraword(text, m)) {
        pending += text[m.index];
        pos = m.index + 1;
        continue;
      }
      if (pending) parent.appendChild(document.createTextNode(pending));
      pending = '';
      parent.appendChild(inlineNode(m));
      pos = m.index + m[0].length;
    }
    pending += text.slice(pos);
    if (pending) parent.appendChild(document.createTextNode(pending));
    return parent;
  }

  // snake_case and __dunder__ names are words, not emphasis.
  function intraword(text, m) {
    var prev = text[m.index - 1] || ' ', next = text[m.index + m[0].length] || ' ';
    return /\w/.test(prev) || /\w/.test(next);
  }

  function inlineNode(m) {
    if (m[1]) return el('code', m[2].replace(/^ (.*) $/, '$1'));
    if (m[3] !== undefined) {
      if (!SAFE_URL.test(m[4])) return inline(m[3], el('span'));
      var a = inline(m[3], el('a'));
      a.href = m[4];
      a.rel = 'noopener noreferrer nofollow';
      return a;
    }
    if (m[5]) return inline(m[6], el('strong'));
    if (m[7] !== undefined) return inline(m[7], el('del'));
    if (m[8]) return inline(m[9], el('em'));
    if (m[10]) return document.createTextNode(m[10].slice(1));
    return el('br');
  }

  // Tool arguments as JSON whose string values keep their line breaks: a twenty-line prompt
  // reads as twenty lines, while keys, nesting and every other escape stay as JSON writes them.
  function jsonText(value, pad) {
    pad = pad || '';
    var inner = pad + '  ';
    if (typeof value === 'string') {
      return '"' + value.split('\n').map(function (part) {
        return JSON.stringify(part).slice(1, -1);
      }).join('\n') + '"';
    }
    if (Array.isArray(value)) {
      if (!value.length) return '[]';
      return '[\n' + value.map(function (v) { return inner + jsonText(v, inner); }).join(',\n') +
        '\n' + pad + ']';
    }
    if (value && typeof value === 'object') {
      var keys = Object.keys(value);
      if (!keys.length) return '{}';
      return '{\n' + keys.map(function (k) {
        return inner + JSON.stringify(k) + ': ' + jsonText(value[k], inner);
      }).join(',\n') + '\n' + pad + '}';
    }
    return JSON.stringify(value);
  }

  return { render: render, jsonText: jsonText };
})();
