// Thumbnails in the file list and the gallery view (a grid of the folder's
// entries). Thumbnails come from GET /api/v1/thumb, made by the server once
// per content; the URL carries the file's hash so a changed file is a new
// URL. Until one loads, and when the server has none (not an image it
// decodes, damaged, too large), the type's icon stays.

const THUMB_TYPES = /\.(png|jpe?g|gif|webp)$/i; // what the server makes thumbnails of
const VIEW_KEY = 'netdisk.view';

let deps = null; // { state, open, icon, typeOf } from app.js

export function thumbURL(n, size) {
  return '/api/v1/thumb?path=' + encodeURIComponent(n.path) + '&size=' + size + '&v=' + encodeURIComponent(n.fileHash || '');
}

// thumbIcon returns what stands for file n: its type's icon, replaced by
// the thumbnail once it has decoded (lazily, as the row scrolls into view).
export function thumbIcon(n, iconEl, size) {
  if (n.isDir || !THUMB_TYPES.test(n.name)) return iconEl;
  const box = document.createElement('span');
  box.className = 'thumb';
  box.appendChild(iconEl);
  const img = document.createElement('img');
  img.loading = 'lazy';
  img.decoding = 'async';
  img.alt = '';
  // Laid over the icon, transparent until decoded: a hidden (display: none)
  // image is never in view, so a lazy one would never load.
  img.onload = () => { iconEl.remove(); box.classList.add('has-img'); };
  img.onerror = () => img.remove();
  img.src = thumbURL(n, size);
  box.appendChild(img);
  return box;
}

export function gridOn() { return localStorage.getItem(VIEW_KEY) === 'grid'; }

// renderGallery fills the grid with the folder's entries in the list's
// order; a click opens an entry as a double click on its row does.
export function renderGallery(entries) {
  const grid = document.getElementById('gallery');
  const on = gridOn();
  grid.hidden = !on || entries.length === 0;
  document.getElementById('files').hidden = on;
  const btn = document.getElementById('btn-view');
  btn.setAttribute('aria-pressed', on ? 'true' : 'false');
  btn.title = on ? 'Show as a list' : 'Show as a gallery';
  btn.querySelector('span').textContent = on ? 'List' : 'Gallery';
  grid.textContent = '';
  if (!on) return;
  for (const n of entries) {
    const tile = document.createElement('button');
    tile.type = 'button';
    tile.className = 'tile';
    tile.dataset.path = n.path;
    tile.title = n.name;
    const pic = document.createElement('span');
    pic.className = 'tile-pic';
    pic.appendChild(thumbIcon(n, deps.icon(deps.typeOf(n.name, n.isDir)), 256));
    const name = document.createElement('span');
    name.className = 'tile-name';
    name.textContent = n.name;
    tile.append(pic, name);
    tile.onclick = () => deps.open(n);
    grid.appendChild(tile);
  }
}

// setupGallery wires the list/grid toggle; rerender draws the folder again.
export function setupGallery(d, rerender) {
  deps = d;
  document.getElementById('btn-view').onclick = () => {
    localStorage.setItem(VIEW_KEY, gridOn() ? 'list' : 'grid');
    rerender();
  };
}
