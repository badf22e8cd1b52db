(function () {
  'use strict';
  // A page carries its data as plain JSON, or, past a size, as base64 of gzipped JSON (a third
  // of the bytes to load): that is unpacked after the load event, then the timeline starts.
  function start(data) {
    ArenaViewer = arenaViewer(data.sessions);
    arenaNav(ArenaViewer);
    document.body.dataset.ready = '1';
    performance.mark('timeline-ready');
  }

  function bytes(b64) {
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(b64);
    var bin = atob(b64), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  var plain = document.getElementById('run-data');
  if (plain) { start(JSON.parse(plain.textContent)); return; }
  var packed = document.getElementById('run-data-gz');
  var timeline = document.getElementById('timeline');
  timeline.textContent = 'Unpacking the transcript\u2026';
  var stream = new Blob([bytes(packed.textContent)]).stream()
    .pipeThrough(new DecompressionStream('gzip'));
  new Response(stream).text().then(function (text) {
    timeline.textContent = '';
    start(JSON.parse(text));
  }, function (error) {
    timeline.textContent = 'The transcript data could not be unpacked: ' + error;
  });
})();
