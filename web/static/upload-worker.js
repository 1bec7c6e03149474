// The upload engine: seed 000's pipeline in a dedicated Worker, mirroring
// chunker/pipeline.go. The page posts files; this worker hashes them chunk by
// chunk (SparkMD5, vendored), runs a queue limited to N = 3 per file that asks
// patchHash before each chunk and sends only what the server lacks, retries
// with backoff and jitter, aborts everything on a failure for good
// (QueueAborted), finishes at once when the file check finds the content
// (instant upload, cancelling in-flight work), and merges only after
// QueueDrained. A file under the server's smallFileLimit (seed 004: 8 MiB)
// is checked the same way and otherwise sent in one request (whole()).
// Several files run in parallel within a global limit.
//
// Content is named by MD5 (the protocol's name) and, where WebCrypto is
// available, by SHA-256 beside it: two different chunks can share an MD5, so
// the server binds content it already holds (instant upload, a chunk that
// "exists") only to an upload that names it by SHA-256 too. Without
// crypto.subtle (only in secure contexts: https, localhost) the page sends
// MD5s alone and the server answers "send the bytes".
//
// Link mode (a public link's page: a file drop, a read-write folder): the
// page posts {type: 'link', base: '/s/TOKEN'} first, and every call goes to
// the link's own endpoints under BASE/api/ (docs/API.md "Uploads through a
// link"): init by name (and folder), then every chunk's bytes, then merge.
// There is no patchHash, no proof and no one-request path there — an
// anonymous uploader proves nothing, so nothing is instant — and a session
// is resumed by its id (the page keeps it), never by name.
//
// Memory: a chunk is read with File.slice when it is hashed (one at a time)
// and sent as a File slice (a Blob the browser streams from the file), so the
// worker holds one chunk per file, whatever the file's size.
/* global SparkMD5 */
importScripts('/static/vendor/spark-md5.min.js');

const N = 3;               // seed 000's queue limit, per file
const MAX_FILES = 2;       // files uploading at the same time
const ATTEMPTS = 5;        // per task, then the queue aborts
const BACKOFF_MS = 300;    // first retry delay, doubled each time (with jitter)

let csrf = '';
let info = null;
let linkBase = ''; // link mode: '/s/TOKEN'
const uploads = new Map(); // id -> Upload
const waiting = [];        // ids not started yet, FIFO

class HTTPError extends Error {
  constructor(status, code, message, extra) { super(message); this.status = status; this.code = code; this.extra = extra || {}; }
}

// retryable: the network, the server's own failures and throttling; never a
// refusal (bad request, signed out, quota, missing session).
function retryable(e) {
  if (e.name === 'AbortError') return false;
  if (!(e instanceof HTTPError)) return true; // fetch's TypeError: network
  return e.status >= 500 && e.status !== 507 || e.status === 429 || e.status === 408;
}

// describe turns a final failure into one line for people.
function describe(e) {
  if (!(e instanceof HTTPError)) {
    return self.navigator && self.navigator.onLine === false ? 'You are offline: nothing was lost, retry when the connection is back.'
      : 'Cannot reach the server (' + (e.message || 'network error') + '): retry later.';
  }
  switch (e.code) {
    case 'unauthenticated': return 'Signed out: sign in again, then retry (the upload resumes).';
    // The server's sentence names the figures ("26.7 MiB free, 210 MiB
    // needed"); its "quota exceeded: " would only repeat this one's start.
    case 'quota_exceeded': return linkBase ? 'Not enough space: ' + e.message + '.'
      : 'Not enough space in your drive: ' + e.message.replace(/quota exceeded: /, '');
    case 'no_space': return 'The server is out of disk space: ' + e.message;
    case 'hash_mismatch': return 'The file changed while it was being uploaded: retry to send the new version.';
  }
  if (e.status >= 500) return 'Server error (' + e.status + '): ' + e.message;
  return e.message;
}

async function call(method, url, body, signal) {
  const opt = { method, signal, credentials: 'same-origin', headers: { 'X-CSRF-Token': csrf, 'X-Netdisk-Web': '1' } };
  if (body instanceof ArrayBuffer || body instanceof Blob) {
    opt.body = body;
    opt.headers['Content-Type'] = 'application/octet-stream';
  } else if (body !== undefined) {
    opt.body = JSON.stringify(body);
    opt.headers['Content-Type'] = 'application/json';
  }
  const r = await fetch(url, opt);
  if (r.status === 204) return {};
  let j = null;
  try { j = await r.json(); } catch (_) { /* a proxy's HTML error page */ }
  if (!r.ok) throw new HTTPError(r.status, j && j.code || '', j && j.error || r.statusText || ('HTTP ' + r.status), j);
  return j || {};
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    if (signal) signal.addEventListener('abort', () => { clearTimeout(t); reject(new DOMException('aborted', 'AbortError')); }, { once: true });
  });
}

function hex(buf) {
  return Array.from(new Uint8Array(buf), b => b.toString(16).padStart(2, '0')).join('');
}

// sha256 is the hex SHA-256 of buf (an ArrayBuffer or a typed array), or
// null where WebCrypto is unavailable.
async function sha256(buf) {
  if (!self.crypto || !self.crypto.subtle) return null;
  return hex(await self.crypto.subtle.digest('SHA-256', buf));
}

// proof answers a challenge: hex SHA-256 of the nonce's hex string followed
// by the challenged ranges. crypto.subtle exists only in secure contexts
// (https, localhost); elsewhere the bytes are simply sent.
async function proof(nonce, ranges, read) {
  if (!self.crypto || !self.crypto.subtle) return null;
  const parts = [new TextEncoder().encode(nonce)];
  for (const [off, len] of ranges) parts.push(new Uint8Array(await read(off, len)));
  const total = parts.reduce((n, p) => n + p.length, 0);
  const all = new Uint8Array(total);
  let o = 0;
  for (const p of parts) { all.set(p, o); o += p.length; }
  return hex(await self.crypto.subtle.digest('SHA-256', all));
}

class Upload {
  constructor(id, file, path, dir, resume) {
    this.id = id; this.file = file; this.path = path;
    // Link mode: path is the file's name, dir the folder below the link's,
    // resume the id of this file's session from an earlier visit.
    this.dir = dir || ''; this.resumeId = resume || '';
    this.paused = false; this.resumeWaiters = [];
  }

  post(msg) { self.postMessage(Object.assign({ id: this.id }, msg)); }

  emit(kind, extra) {
    this.post(Object.assign({ type: 'event', kind, counters: Object.assign({}, this.c) }, extra || {}));
  }

  progress() {
    this.post({ type: 'progress', hashed: this.hashedBytes, sent: this.sentBytes, skipped: this.skippedBytes,
      resumed: this.resumedChunks, total: this.c.totalChunks, completed: this.c.completed, retries: this.retries });
  }

  async gate() {
    while (this.paused && !this.stopped) await new Promise(r => this.resumeWaiters.push(r));
  }

  setPaused(p) {
    this.paused = p;
    if (!p) { const w = this.resumeWaiters; this.resumeWaiters = []; w.forEach(f => f()); this.wake(); }
    this.post({ type: 'state', state: p ? 'paused' : 'running' });
  }

  wake() { const w = this.wakers; this.wakers = []; (w || []).forEach(f => f()); }

  // run is one attempt at the whole upload; restart() calls it again.
  async run(fresh) {
    this.stopped = false; this.aborted = false; this.abortErr = null;
    this.ctl = new AbortController();
    this.hashedBytes = 0; this.sentBytes = 0; this.skippedBytes = 0; this.resumedChunks = 0; this.retries = 0;
    this.queue = []; this.wakers = []; this.hashes = []; this.shas = [];
    this.checkStarted = false; this.checking = null;
    this.post({ type: 'state', state: 'running' });
    try {
      if (linkBase) info = { smallFileLimit: 0 }; // every file in chunks: resumable by id
      if (!info) info = await this.retry(() => call('GET', '/api/v1/info', undefined, this.ctl.signal));
      const size = this.file.size;
      if (fresh && this.uploadId) {
        await call('DELETE', sessionURL(this.uploadId)).catch(() => {});
        this.uploadId = null; this.resumeId = '';
      }
      // init is not aborted by Cancel: a session the server opened must be
      // known to be abandoned (and its reservation released) below.
      const init = linkBase ? await this.linkInit(size)
        : await this.retry(() => call('POST', '/api/v1/file/init', { path: this.path, size }));
      this.uploadId = init.uploadId;
      if (this.cancelled) {
        await call('DELETE', sessionURL(this.uploadId)).catch(() => {});
        throw new DOMException('cancelled', 'AbortError');
      }
      this.chunkSize = init.chunkSize;
      this.c = { totalChunks: init.totalChunks, hashed: 0, pending: 0, inFlight: 0, completed: 0, failed: 0, cancelled: 0 };
      this.allChunksHashed = false;
      this.uploaded = new Set(init.uploaded || []);
      this.post({ type: 'session', uploadId: this.uploadId, totalChunks: init.totalChunks, resumable: this.uploaded.size });
      if (size < (info.smallFileLimit || 0)) {
        const res = await this.whole();
        if (!res.mtimeSet) await this.keepMtime(res.path);
        this.stopped = true;
        this.progress();
        this.post({ type: 'done', instant: res.instant, result: res });
        return;
      }
      this.drained = new Promise(r => { this.onDrained = r; });
      this.abortedP = new Promise((_, rej) => { this.onAborted = rej; });
      this.abortedP.catch(() => {});
      const runners = [];
      for (let i = 0; i < N; i++) runners.push(this.runner());
      const res = await this.finish();
      this.stopped = true; this.ctl.abort(); this.wake();
      await Promise.allSettled(runners);
      if (!linkBase) await this.keepMtime(res.path);
      this.progress();
      this.post({ type: 'done', instant: res.instant, result: res });
    } catch (e) {
      const cancelled = this.cancelled;
      this.stopped = true; this.ctl.abort(); this.wake();
      if (cancelled) { this.post({ type: 'cancelled' }); return; }
      const err = this.abortErr || e;
      if (err instanceof HTTPError && err.code === 'hash_mismatch' && !fresh && this.uploaded && this.uploaded.size) {
        // The resumed session held chunks of an older version of this file
        // (merge refused the file hash): start over in a fresh session.
        return this.run(true);
      }
      this.post({ type: 'error', message: describe(err), code: err.code || (err instanceof HTTPError ? '' : 'network'), status: err.status || 0 });
    } finally {
      finished(this.id);
    }
  }

  // linkInit resumes this file's session of an earlier attempt or visit
  // (its id; one the server no longer has starts over), else opens one.
  async linkInit(size) {
    const id = this.uploadId || this.resumeId;
    if (id) {
      try {
        const s = await this.retry(() => call('GET', sessionURL(id), undefined, this.ctl.signal));
        if (s.totalChunks === Math.ceil(size / s.chunkSize)) return s;
      } catch (e) {
        if (!(e instanceof HTTPError && e.status === 404)) throw e;
      }
    }
    return this.retry(() => call('POST', linkBase + '/api/init', { name: this.path, size, dir: this.dir }));
  }

  // retry runs fn with backoff; it reports each retry to the page.
  async retry(fn, index) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (e) {
        if (this.stopped || !retryable(e) || attempt >= ATTEMPTS) throw e;
        this.retries++;
        this.emit('ChunkRetry', { index: index === undefined ? -1 : index, attempt, error: describe(e) });
        const d = BACKOFF_MS * 2 ** (attempt - 1);
        await sleep(d / 2 + Math.random() * d / 2, this.ctl.signal);
      }
    }
  }

  readChunk(i) {
    const off = i * this.chunkSize;
    return this.file.slice(off, Math.min(off + this.chunkSize, this.file.size)).arrayBuffer();
  }

  // hashAll: seed 000's hashing side. Every hashed chunk is a task; a chunk
  // the resumed session already holds completes at once (as "resumed").
  async hashAll() {
    for (let i = 0; i < this.c.totalChunks; i++) {
      await this.gate();
      if (this.stopped || this.aborted) throw this.abortErr || new DOMException('stopped', 'AbortError');
      const buf = await this.readChunk(i);
      const h = SparkMD5.ArrayBuffer.hash(buf);
      this.hashes[i] = h;
      this.shas[i] = await sha256(buf);
      this.hashedBytes += buf.byteLength;
      this.c.hashed++;
      if (this.uploaded.has(i)) {
        this.c.completed++;
        this.resumedChunks++;
        this.skippedBytes += buf.byteLength;
        this.emit('ChunkHashed', { index: i, hash: h });
        this.emit('ChunkDone', { index: i, how: 'resumed' });
      } else {
        this.queue.push(i);
        this.c.pending++;
        this.emit('ChunkHashed', { index: i, hash: h });
        this.wake();
      }
      this.progress();
      // Let the runners' fetches progress between chunks.
      await new Promise(r => setTimeout(r, 0));
    }
    this.allChunksHashed = true;
    this.emit('AllChunksHashed');
    this.checkDrained();
    const fileHash = SparkMD5.hash(this.hashes.join(''));
    // The file's SHA-256 name: SHA-256 of the chunks' hex SHA-256s, in order.
    this.fileSha256 = this.shas.every(s => s) ? await sha256(new TextEncoder().encode(this.shas.join(''))) : null;
    this.emit('FileHashed', { hash: fileHash });
    return fileHash;
  }

  // named adds the SHA-256 names to a request body when this browser has them.
  named(body, key, value) {
    if (value) body[key] = value;
    return body;
  }

  checkDrained() {
    const c = this.c;
    if (this.aborted || this.stopped || this.drainedFired) return;
    if (this.allChunksHashed && c.pending === 0 && c.inFlight === 0 && c.failed === 0 && c.completed === c.totalChunks) {
      this.drainedFired = true;
      this.emit('QueueDrained');
      this.onDrained();
    }
  }

  async runner() {
    for (;;) {
      if (this.stopped || this.aborted) return;
      await this.gate();
      if (!this.queue.length) {
        await new Promise(r => this.wakers.push(r));
        continue;
      }
      const i = this.queue.shift();
      this.c.pending--; this.c.inFlight++;
      this.emit('ChunkStarted', { index: i });
      let how;
      try {
        how = await this.retry(() => this.task(i), i);
      } catch (e) {
        // A task failing while the file check runs waits for it: the server
        // may have just committed the file (instant upload) and refuse
        // further chunks, which is then no failure (as chunker/pipeline.go).
        if (this.checkStarted) await this.checking;
        this.c.inFlight--;
        if (this.stopped || this.aborted || e.name === 'AbortError') { this.c.cancelled++; continue; }
        // A failure for good: QueueAborted cancels everything.
        this.c.failed++;
        this.aborted = true;
        this.abortErr = e;
        this.emit('QueueAborted', { index: i, error: describe(e) });
        this.ctl.abort();
        this.wake();
        this.onAborted(e);
        return;
      }
      this.c.inFlight--;
      if (this.stopped || this.aborted) { this.c.cancelled++; continue; }
      this.c.completed++;
      this.emit('ChunkDone', { index: i, how });
      this.progress();
      this.checkDrained();
    }
  }

  // task: patchHash first; answer a challenge; send the bytes otherwise.
  async task(i) {
    const signal = this.ctl.signal;
    const hash = this.hashes[i];
    if (linkBase) {
      // Through a link every chunk's bytes go: nothing is asked first.
      const off = i * this.chunkSize;
      const len = Math.min(this.chunkSize, this.file.size - off);
      await call('PUT', linkBase + '/api/chunk?uploadId=' + encodeURIComponent(this.uploadId) + '&index=' + i + '&hash=' + hash, this.file.slice(off, off + len), signal);
      this.sentBytes += len;
      return 'uploaded';
    }
    const r = await call('POST', '/api/v1/file/patchHash', this.named({ uploadId: this.uploadId, index: i, hash }, 'sha256', this.shas[i]), signal);
    const len = Math.min(this.chunkSize, this.file.size - i * this.chunkSize);
    if (r.exists && !r.challenge) { this.skippedBytes += len; return 'exists'; }
    if (r.exists && r.challenge) {
      const base = i * this.chunkSize;
      const p = await proof(r.challenge.nonce, r.challenge.ranges, (off, n) => this.file.slice(base + off, base + off + n).arrayBuffer());
      if (p) {
        const pr = await call('POST', '/api/v1/file/prove', { uploadId: this.uploadId, index: i, nonce: r.challenge.nonce, proof: p }, signal);
        if (pr.ok) { this.skippedBytes += len; return 'proved'; }
      }
    }
    // The body is the File slice itself: the browser streams it from the
    // file without a copy in this worker's heap. Should the file have changed
    // since it was hashed, the server's own hash check refuses the chunk.
    const off = i * this.chunkSize;
    const body = this.file.slice(off, off + len);
    await call('PUT', '/api/v1/file/uploadChunk?uploadId=' + encodeURIComponent(this.uploadId) + '&index=' + i + '&hash=' + hash, body, signal);
    this.sentBytes += len;
    return 'uploaded';
  }

  // finish: seed 000 after hashing — file check, then instant upload, or
  // wait for QueueDrained and merge.
  async finish() {
    const hashing = this.hashAll();
    hashing.catch(() => {}); // an abort also rejects it; abortedP reports that
    const fileHash = await Promise.race([hashing, this.abortedP]);
    let instant = null;
    let checked;
    this.checking = new Promise(r => { checked = r; });
    this.checkStarted = true;
    try {
      instant = linkBase ? null : await Promise.race([this.checkFile(fileHash), this.abortedP]);
      if (instant) { this.stopped = true; this.ctl.abort(); this.wake(); }
      checked();
    } catch (e) {
      checked();
      if (this.aborted) throw this.abortErr;
      if (e instanceof HTTPError && (e.code === 'unauthenticated' || e.code === 'quota_exceeded')) throw e;
      // Otherwise a failing file check is not fatal: the chunks and merge decide.
    }
    if (instant) {
      // The server holds the file: stop the queue, in-flight work included.
      this.stopped = true; this.ctl.abort(); this.wake();
      this.emit('InstantUpload', { hash: fileHash });
      return { instant: true, path: instant.path || this.path, fileHash, size: this.file.size };
    }
    await Promise.race([this.drained, this.abortedP]);
    const mergeURL = linkBase ? linkBase + '/api/merge' : '/api/v1/file/merge';
    const m = await this.retry(() => call('POST', mergeURL, this.named({ uploadId: this.uploadId, fileHash }, 'fileSha256', this.fileSha256), this.ctl.signal));
    this.emit('Merged', { hash: fileHash });
    return { instant: false, path: m.path, fileHash, size: m.size };
  }

  // whole: seed 004's path for a file under smallFileLimit. It is hashed
  // like any file, and the file check (with its proof) may complete it at
  // once; otherwise its bytes go in one request, PUT file/upload with the
  // file hash (the server refuses a body that does not hash to it), retried
  // like a chunk. The check comes first because a browser cannot send
  // Expect: 100-continue, so the one request's own instant path would send
  // the bytes anyway. The session init opened serves the check only: it is
  // ended before the bytes go, so its reservation is not held twice.
  async whole() {
    const hashes = [];
    for (let i = 0; i < this.c.totalChunks; i++) {
      await this.gate();
      if (this.stopped) throw new DOMException('stopped', 'AbortError');
      const buf = await this.readChunk(i);
      hashes[i] = SparkMD5.ArrayBuffer.hash(buf);
      this.shas[i] = await sha256(buf);
      this.hashedBytes += buf.byteLength;
      this.c.hashed++;
      this.emit('ChunkHashed', { index: i, hash: hashes[i] });
      this.progress();
    }
    this.emit('AllChunksHashed');
    const fileHash = SparkMD5.hash(hashes.join(''));
    // Without its SHA-256 name the server binds nothing instantly: the bytes go.
    this.fileSha256 = this.shas.every(s => s) ? await sha256(new TextEncoder().encode(this.shas.join(''))) : null;
    this.emit('FileHashed', { hash: fileHash });
    let instant = null;
    try {
      instant = await this.checkFile(fileHash);
    } catch (e) {
      if (e instanceof HTTPError && (e.code === 'unauthenticated' || e.code === 'quota_exceeded')) throw e;
      // Otherwise a failing file check is not fatal: the upload decides.
    }
    if (instant) {
      this.c.completed = this.c.totalChunks;
      this.emit('InstantUpload', { hash: fileHash });
      return { instant: true, path: instant.path || this.path, fileHash, size: this.file.size };
    }
    const id = this.uploadId;
    await this.retry(() => call('DELETE', '/api/v1/file/session?uploadId=' + encodeURIComponent(id), undefined, this.ctl.signal)
      .catch(e => { if (!(e instanceof HTTPError && e.status === 404)) throw e; }));
    this.uploadId = null;
    await this.gate();
    if (this.stopped) throw new DOMException('stopped', 'AbortError');
    let url = '/api/v1/file/upload?path=' + encodeURIComponent(this.path) + '&fileHash=' + fileHash;
    if (this.fileSha256) url += '&fileSha256=' + this.fileSha256;
    const mtime = this.mtime();
    if (mtime) url += '&mtime=' + encodeURIComponent(mtime);
    const r = await this.retry(() => call('PUT', url, this.file, this.ctl.signal), 0);
    this.sentBytes = this.file.size;
    this.c.completed = this.c.totalChunks;
    this.emit('Uploaded', { hash: fileHash });
    return { instant: false, path: r.path || this.path, fileHash, size: this.file.size, mtimeSet: !!mtime };
  }

  // mtime is the file's modification time as the API takes it (RFC 3339),
  // or null when the browser gives none.
  mtime() {
    const t = this.file.lastModified;
    return Number.isFinite(t) && t > 0 ? new Date(t).toISOString() : null;
  }

  // keepMtime gives the committed file the local file's modification time,
  // as push and the mount do: a merge or an instant upload commits with the
  // server's clock, and only the one-request upload takes it in the commit.
  // The upload's own work is over (stopped, its requests aborted): this
  // call gets a controller of its own, which Cancel still aborts.
  async keepMtime(path) {
    const mtime = this.mtime();
    if (!mtime) return;
    if (this.cancelled) throw new DOMException('cancelled', 'AbortError');
    this.stopped = false;
    this.ctl = new AbortController();
    await this.retry(() => call('POST', '/api/v1/fs/setattr', { path: path || this.path, mtime }, this.ctl.signal));
  }

  async checkFile(fileHash) {
    const r = await this.retry(() => call('POST', '/api/v1/file/patchHash', this.named({ uploadId: this.uploadId, fileHash }, 'fileSha256', this.fileSha256), this.ctl.signal));
    if (!r.exists) return null;
    if (r.completed) return r;
    if (r.challenge) {
      const p = await proof(r.challenge.nonce, r.challenge.ranges, (off, n) => this.file.slice(off, off + n).arrayBuffer());
      if (!p) return null;
      const pr = await this.retry(() => call('POST', '/api/v1/file/prove', { uploadId: this.uploadId, nonce: r.challenge.nonce, proof: p }, this.ctl.signal));
      if (pr.ok && pr.completed) return pr;
    }
    return null;
  }

  cancel() {
    this.cancelled = true;
    this.stopped = true;
    if (this.ctl) this.ctl.abort();
    this.wake();
    // finish() may be past hashing, waiting for the queue to drain, which a
    // stopped queue never does: end that wait (run's catch then reports
    // the cancel and frees the slot for the next file).
    if (this.onAborted) this.onAborted(new DOMException('cancelled', 'AbortError'));
    const w = this.resumeWaiters; this.resumeWaiters = []; w.forEach(f => f());
    if (this.uploadId) call('DELETE', sessionURL(this.uploadId)).catch(() => {});
  }
}

// sessionURL is where session id is read or abandoned.
function sessionURL(id) {
  return (linkBase ? linkBase + '/api/session' : '/api/v1/file/session') + '?uploadId=' + encodeURIComponent(id);
}

let active = 0;
function pump() {
  while (active < MAX_FILES && waiting.length) {
    const u = uploads.get(waiting.shift());
    if (!u || u.cancelled) continue;
    active++;
    u.running = true;
    u.drainedFired = false;
    u.run(false);
  }
}

function finished(id) {
  const u = uploads.get(id);
  if (u && u.running) { u.running = false; active--; }
  pump();
}

self.onmessage = (ev) => {
  const m = ev.data;
  const u = uploads.get(m.id);
  switch (m.type) {
    case 'csrf':
      csrf = m.csrf;
      break;
    case 'link':
      linkBase = m.base;
      break;
    case 'add':
      uploads.set(m.id, new Upload(m.id, m.file, m.path, m.dir, m.resume));
      waiting.push(m.id);
      self.postMessage({ id: m.id, type: 'state', state: 'queued' });
      pump();
      break;
    case 'pause':
      if (u) u.setPaused(true);
      break;
    case 'resume':
      if (u) u.setPaused(false);
      break;
    case 'cancel':
      if (u) {
        const i = waiting.indexOf(m.id);
        const wasRunning = u.running;
        if (i >= 0) waiting.splice(i, 1);
        u.cancel();
        if (!wasRunning) self.postMessage({ id: m.id, type: 'cancelled' });
      }
      break;
    case 'retry':
      if (u && !u.running) {
        u.cancelled = false; u.paused = false;
        waiting.push(m.id);
        self.postMessage({ id: m.id, type: 'state', state: 'queued' });
        pump();
      }
      break;
  }
};
