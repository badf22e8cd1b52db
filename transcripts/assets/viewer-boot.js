(function () {
  'use strict';
  // A page carries its data as plain JSON, or, past a size, as base64 of gzipped JSON (a third
  // of the bytes to load): that is unpacked after the load event, then the timeline starts.
  function start(data) {
    ArenaViewer = arenaViewer(data.sessions, data.args);
    arenaNav(ArenaViewer);
    document.body.dataset.ready = '1';
    performance.mark('timeline-ready');
    firstEvents();
  }

  // When the first events were drawn: by the preview of a packed page, else by the timeline.
  function firstEvents() {
    if (!performance.getEntriesByName('first-events').length) performance.mark('first-events');
  }

  function bytes(b64) {
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(b64);
    var bin = atob(b64), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  // A packed page's first events, drawn while the rest unpacks: the timeline alone, without
  // search, filters or subagents, under a note that says so.
  function preview(head) {
    var V = arenaViewer(head.sessions, head.args);
    V.everyKind();
    var note = document.createElement('p');
    note.className = 'muted unpacking';
    note.id = 'unpacking';
    note.textContent = 'The first ' + head.sessions[0].ev.length.toLocaleString('en-US') +
      ' of ' + head.of.toLocaleString('en-US') + ' events; unpacking the rest (search, ' +
      'filters and subagents then work)\u2026';
    timeline.parentNode.insertBefore(note, timeline);
    V.mountList(timeline, 0);
    firstEvents();
    return { end: function () { V.stop(); note.remove(); }, note: note };
  }

  var timeline = document.getElementById('timeline');
  var plain = document.getElementById('run-data');
  if (plain) {
    start(JSON.parse(plain.textContent));
    return;
  }
  var packed = document.getElementById('run-data-gz');
  var head = document.getElementById('run-data-head');
  var shown = head ? preview(JSON.parse(head.textContent)) : null;
  if (!head) timeline.textContent = 'Unpacking the transcript\u2026';
  new Promise(function (resolve) {
    resolve(new Blob([bytes(packed.textContent)]).stream()
      .pipeThrough(new DecompressionStream('gzip')));
  }).then(function (stream) {
    return new Response(stream).text();
  }).then(function (text) {
    var data = JSON.parse(text);
    if (shown) shown.end();
    timeline.textContent = '';
    start(data);
  }).catch(function (error) {
    var message = 'The transcript data could not be unpacked: ' + error;
    if (shown) shown.note.textContent = message + ' (the first events are shown)';
    else timeline.textContent = message;
  });
})();
