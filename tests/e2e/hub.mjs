// A stand-in for the Hugging Face hub on loopback (the app reaches it through HF_ENDPOINT):
// serves each repository file it is given from a local file, with Range support, so the app's
// real hf-hub code downloads, cancels and resumes against it. `hub.slow` throttles it so a
// download can be watched; `hub.ranges` records the start of every range asked for.
import fs from 'node:fs';
import http from 'node:http';

/// `files` maps "owner/repo/file.gguf" to the local file served for it.
export function fakeHub(files) {
  const hub = { slow: false, ranges: [] };
  hub.server = http.createServer((req, res) => {
    const served = Object.entries(files).find(([name]) => {
      const slash = name.lastIndexOf('/');
      return req.url === `/${name.slice(0, slash)}/resolve/main/${name.slice(slash + 1)}`;
    });
    if (!served) { res.writeHead(404).end(); return; }
    const local = served[1];
    const size = fs.statSync(local).size;
    const [, a, b] = /bytes=(\d+)-(\d*)/.exec(req.headers.range ?? 'bytes=0-') ?? [];
    const start = Number(a ?? 0);
    const end = b ? Number(b) : size - 1;
    hub.ranges.push(start);
    res.writeHead(206, { 'content-length': end - start + 1, 'content-range': `bytes ${start}-${end}/${size}`,
      etag: '"fake-etag-e2e"', 'x-repo-commit': '0123456789abcdef0123456789abcdef01234567', connection: 'close' });
    const stream = fs.createReadStream(local, { start, end, highWaterMark: 256 << 10 });
    stream.on('data', (chunk) => {
      if (!res.write(chunk) || hub.slow) {
        stream.pause();
        setTimeout(() => stream.resume(), hub.slow ? 40 : 0);
      }
    });
    stream.on('end', () => res.end());
    res.on('close', () => stream.destroy());
  });
  return new Promise((resolve) => hub.server.listen(0, '127.0.0.1', () => {
    hub.url = `http://127.0.0.1:${hub.server.address().port}`;
    resolve(hub);
  }));
}
