// Pure helpers of the options page's workspace section: paths, the breadcrumb,
// turning workspace.read's answer into bytes for a download, and the usage bar.

/** The canonical form of a folder path as the host returns it: "/" or "/a/b". */
export function normalizeFolder(path) {
  const segs = String(path ?? '').split('/').filter((s) => s !== '' && s !== '.');
  return `/${segs.join('/')}`;
}

/** The parent folder of a path ("/" for the root and its children). */
export function parentFolder(path) {
  const p = normalizeFolder(path);
  const i = p.lastIndexOf('/');
  return i <= 0 ? '/' : p.slice(0, i);
}

/** The breadcrumb of a folder: the root first, then each folder down to it. */
export function breadcrumb(path) {
  const p = normalizeFolder(path);
  const out = [{ name: '/', path: '/' }];
  let at = '';
  for (const seg of p.split('/').filter(Boolean)) {
    at += `/${seg}`;
    out.push({ name: seg, path: at });
  }
  return out;
}

/** The file name a download gets: the last segment of the path. */
export function downloadName(path) {
  const segs = String(path ?? '').split('/').filter(Boolean);
  return segs.at(-1) || 'file';
}

/**
 * The bytes and type of workspace.read's answer: text as UTF-8, a data URL
 * decoded (base64 or percent-encoded). Throws on a malformed data URL.
 */
export function fileBytes(file, { atob = globalThis.atob } = {}) {
  const mime = typeof file?.mime === 'string' && file.mime ? file.mime : 'application/octet-stream';
  if (typeof file?.text === 'string') return { mime, bytes: new TextEncoder().encode(file.text) };
  const url = file?.data_url;
  if (typeof url !== 'string' || !url.startsWith('data:')) throw new Error('the file came without text or a data URL');
  const comma = url.indexOf(',');
  if (comma < 0) throw new Error('the data URL has no comma');
  const header = url.slice(5, comma);
  const payload = url.slice(comma + 1);
  if (header.endsWith(';base64')) {
    const bin = atob(payload);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return { mime: header.slice(0, -7) || mime, bytes };
  }
  return { mime: header || mime, bytes: new TextEncoder().encode(decodeURIComponent(payload)) };
}

/** The usage bar: a percentage (0–100, rounded down to a tenth) and a level. */
export function usageView(bytes, quota) {
  const used = Number.isFinite(bytes) && bytes > 0 ? bytes : 0;
  if (!Number.isFinite(quota) || quota <= 0) return { percent: 0, level: 'ok' };
  const percent = Math.min(100, Math.floor((used / quota) * 1000) / 10);
  return { percent, level: percent >= 95 ? 'full' : percent >= 80 ? 'high' : 'ok' };
}

/** Entries sorted for display: folders first, then files, each by name. */
export function sortEntries(entries) {
  return [...(entries ?? [])].sort((a, b) => {
    if (a.type !== b.type) return a.type === 'dir' ? -1 : 1;
    return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  });
}
