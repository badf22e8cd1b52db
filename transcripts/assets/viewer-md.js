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
  ].join('|'));

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

  function list(lines, i, parent) {
    var first = ITEM.exec(lines[i]), ordered = /\d/.test(first[2]);
    var node = el(ordered ? 'ol' : 'ul');
    if (ordered && parseInt(first[2], 10) !== 1) node.setAttribute('start', parseInt(first[2], 10));
    var indent = first[1].length;
    while (i < lines.length) {
      var m = ITEM.exec(lines[i]);
      if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
      var width = m[0].length, body = [lines[i].slice(width)];
      i++;
      while (i < lines.length) {
        var line = lines[i], lead = line.length - line.replace(/^ +/, '').length;
        if (!line.trim()) {
          var next = lines[i + 1];
          if (next === undefined || next.length - next.replace(/^ +/, '').length <= indent) break;
          body.push('');
        } else if (lead > indent) {
          body.push(line.slice(Math.min(lead, width)));
        } else if (ITEM.test(line) || startsBlock(line)) {
          break;
        } else {
          body.push(line);
        }
        i++;
      }
      var li = el('li');
      if (body.length === 1 || !/\n\s*\n/.test(body.join('\n')) && !body.some(startsBlock)) {
        inlineLines(body.filter(function (l) { return l.trim(); }), li);
      } else {
        blocks(body, li);
      }
      node.appendChild(li);
      while (i < lines.length && !lines[i].trim()) {
        var after = lines[i + 1];
        var again = after !== undefined && ITEM.exec(after);
        if (!again || again[1].length !== indent) break;
        i++;
      }
    }
    parent.appendChild(node);
    return i;
  }

  function inlineLines(lines, parent) {
    var sub = lines.filter(function (l) { return ITEM.test(l); });
    if (!sub.length) { inline(lines.join('\n'), parent); return; }
    var at = 0;
    while (at < lines.length && !ITEM.test(lines[at])) at++;
    inline(lines.slice(0, at).join('\n'), parent);
    blocks(lines.slice(at), parent);
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
    var rest = text;
    while (rest) {
      var m = INLINE.exec(rest);
      if (!m) { parent.appendChild(document.createTextNode(rest)); break; }
      var before = rest.slice(0, m.index), used = m[0].length;
      if ((m[8] === '_' || m[5] === '__') && intraword(rest, m)) {
        before += m[0][0];
        used = 1;
      } else {
        if (before) parent.appendChild(document.createTextNode(before));
        before = '';
        parent.appendChild(inlineNode(m));
      }
      if (before) parent.appendChild(document.createTextNode(before));
      rest = rest.slice(m.index + used);
    }
    return parent;
  }

  function intraword(rest, m) {
    var prev = rest[m.index - 1] || ' ', next = rest[m.index + m[0].length] || ' ';
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
