var ArenaDiff = (function () {
  'use strict';
  // Unified diffs, one element per line, coloured by a tiny tokenizer: Pygments over every diff
  // of a 50 MB log would take longer than the whole render budget.
  var DIFF_PREVIEW = 40;

  function element(tag, cls, text) {
    var node = document.createElement(tag);
    node.className = cls;
    node.textContent = text;
    return node;
  }

  function span(cls, text) { return element('span', cls, text); }

  function fmt(n) { return Number(n).toLocaleString('en-US'); }

  var KEYWORDS = {
    py: 'and as assert async await break class continue def del elif else except False finally ' +
      'for from global if import in is lambda None nonlocal not or pass raise return True try ' +
      'while with yield self',
    c: 'auto bool break case char class const constexpr continue default do double else enum ' +
      'extern float for if inline int long namespace return short signed sizeof static struct ' +
      'switch template typedef typename unsigned void volatile while __global__ __device__ ' +
      '__shared__ __host__ __restrict__ true false nullptr let var function new this'
  };
  var KEYWORD_SETS = {};
  Object.keys(KEYWORDS).forEach(function (lang) {
    KEYWORD_SETS[lang] = {};
    KEYWORDS[lang].split(' ').forEach(function (w) { KEYWORD_SETS[lang][w] = true; });
  });
  var TOKENS = {
    py: /(#.*)|("(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?)|(\b\d[\w.]*)|([A-Za-z_]\w*)/g,
    c: /(\/\/.*|#\s*\w+)|("(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?)|(\b\d[\w.]*)|([A-Za-z_]\w*)/g
  };

  function langOf(path) {
    var m = /\.(\w+)$/.exec(path);
    var ext = m ? m[1].toLowerCase() : '';
    if (ext === 'py' || ext === 'pyi') return 'py';
    if (/^(c|cc|cpp|cu|cuh|h|hpp|js|ts|rs|go|java)$/.test(ext)) return 'c';
    return '';
  }

  function highlightInto(parent, code, lang) {
    if (!lang || code.length > 2000) { parent.appendChild(document.createTextNode(code)); return; }
    var re = TOKENS[lang], words = KEYWORD_SETS[lang], last = 0, plain = '', m;
    re.lastIndex = 0;
    while ((m = re.exec(code)) !== null) {
      var cls = m[1] ? 'tk-c' : m[2] ? 'tk-s' : m[3] ? 'tk-n' : (words[m[4]] ? 'tk-k' : '');
      plain += code.slice(last, m.index);
      last = re.lastIndex;
      if (!cls) { plain += m[0]; continue; }
      if (plain) parent.appendChild(document.createTextNode(plain));
      plain = '';
      parent.appendChild(span(cls, m[0]));
    }
    plain += code.slice(last);
    if (plain) parent.appendChild(document.createTextNode(plain));
  }

  function appendDiffLines(pre, lines, from, to, lang, state) {
    var frag = document.createDocumentFragment();
    for (var n = from; n < to; n++) {
      var line = lines[n], c = line.charAt(0), cls = 'ctx';
      if (line.slice(0, 2) === '@@') { state.inHunk = true; cls = 'hunk'; }
      else if (!state.inHunk && (line.slice(0, 3) === '---' || line.slice(0, 3) === '+++')) cls = 'file';
      else if (c === '+') cls = 'add';
      else if (c === '-') cls = 'del';
      else if (c === '\\') cls = 'note';
      var row = span('dl ' + cls, '');
      if (cls === 'add' || cls === 'del' || (cls === 'ctx' && c === ' ')) {
        row.appendChild(span('dm', c));
        highlightInto(row, line.slice(1), lang);
      } else {
        row.textContent = line;
      }
      row.appendChild(document.createTextNode('\n'));
      frag.appendChild(row);
    }
    pre.appendChild(frag);
  }

  function diffBlock(diff, path) {
    var lines = diff.split('\n');
    if (lines.length && lines[lines.length - 1] === '') lines.pop();
    var lang = langOf(path), state = { inHunk: false };
    var wrap = element('div', 'diff-wrap', '');
    var pre = element('pre', 'diff', '');
    wrap.appendChild(pre);
    var head = Math.min(lines.length, DIFF_PREVIEW);
    appendDiffLines(pre, lines, 0, head, lang, state);
    if (head < lines.length) {
      var button = element('button', 'show-all', 'show all (' + fmt(lines.length) + ' diff lines)');
      button.type = 'button';
      button._expand = function () {
        appendDiffLines(pre, lines, head, lines.length, lang, state);
        button.remove();
      };
      wrap.appendChild(button);
    }
    return wrap;
  }

  return { diffBlock: diffBlock };
})();
