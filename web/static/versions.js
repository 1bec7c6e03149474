// The Versions panel of a file (GET /api/v1/versions): its earlier contents,
// newest first, each with its time, size and author; Download fetches a
// version's bytes, Restore makes it the file's content again, the content
// it replaces joining the list (nothing is lost, so Restore does not ask).
// Folders have no versions: the selection bar offers the panel for one
// selected file only.
import { api, refresh, fmtBytes, fmtDate, toast, state, refreshQuota } from './app.js';

const $ = (id) => document.getElementById(id);
let seq = 0;
let file = null; // the node whose versions are shown

const url = (path, v) => '/api/v1/versions/content?path=' + encodeURIComponent(path) + '&version=' + v.id;

export async function openVersions(n) {
  file = n;
  $('versions-title').textContent = `Versions of “${n.name}”`;
  $('versions-status').textContent = '';
  $('versions-list').textContent = '';
  $('versions-current').textContent = '';
  $('versions-none').hidden = true;
  const dlg = $('versions');
  if (!dlg.open) dlg.showModal();
  $('versions-close').focus();
  await load();
}

async function load() {
  const my = ++seq;
  let r;
  try {
    r = await api('GET', '/api/v1/versions?path=' + encodeURIComponent(file.path));
  } catch (e) {
    if (my !== seq) return;
    if (e.status !== 401) $('versions-status').textContent = e.message;
    return;
  }
  if (my !== seq) return;
  file = { ...file, ...r.file };
  $('versions-current').textContent = `Current: ${fmtBytes(r.file.size)} · modified ${fmtDate(r.file.mtime)}`;
  const list = $('versions-list');
  list.textContent = '';
  for (const v of r.versions || []) list.appendChild(row(v));
  $('versions-none').hidden = list.children.length > 0;
}

// row is one version: when its content was written, size, author,
// Download (its bytes under the file's name) and Restore.
function row(v) {
  const li = document.createElement('li');
  li.className = 'version';
  li.dataset.id = v.id;
  li.dataset.hash = v.fileHash;
  const txt = document.createElement('div');
  txt.className = 'version-text';
  const when = document.createElement('time');
  when.className = 'version-time';
  when.dateTime = v.mtime;
  when.textContent = fmtDate(v.mtime);
  when.title = 'Replaced ' + fmtDate(v.saved);
  const meta = document.createElement('span');
  meta.className = 'version-meta';
  meta.textContent = fmtBytes(v.size) + ' · by ' + v.author;
  txt.append(when, meta);
  const dl = document.createElement('a');
  dl.className = 'btn btn-sm version-dl';
  dl.href = url(file.path, v);
  dl.download = file.name;
  dl.textContent = 'Download';
  dl.setAttribute('aria-label', 'Download the version of ' + fmtDate(v.mtime));
  const rs = document.createElement('button');
  rs.type = 'button';
  rs.className = 'btn btn-sm version-restore';
  rs.textContent = 'Restore';
  rs.setAttribute('aria-label', 'Restore the version of ' + fmtDate(v.mtime));
  rs.onclick = () => restore(v, rs);
  const btns = document.createElement('div');
  btns.className = 'version-btns';
  btns.append(dl, rs);
  li.append(txt, btns);
  return li;
}

async function restore(v, btn) {
  btn.disabled = true;
  try {
    await api('POST', '/api/v1/versions/restore', { path: file.path, version: v.id });
  } catch (e) {
    btn.disabled = false;
    if (e.status !== 401) $('versions-status').textContent = e.message;
    return;
  }
  await load();
  $('versions-status').textContent = `Restored the version of ${fmtDate(v.mtime)}; the content it replaced is now a version.`;
  toast('Version restored');
  refresh();
  refreshQuota();
  const first = $('versions-list').querySelector('button, a');
  (first || $('versions-close')).focus();
}

function wire() {
  $('act-versions').onclick = () => {
    const n = state.entries.find((e) => state.selected.has(e.path));
    if (n && !n.isDir) openVersions(n);
  };
  $('versions-close').onclick = () => $('versions').close();
  $('versions').addEventListener('close', () => { seq++; file = null; });
  document.addEventListener('netdisk:signedout', () => { if ($('versions').open) $('versions').close(); });
}

wire();
