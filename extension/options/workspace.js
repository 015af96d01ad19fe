// The options page's workspace section: browse folders, view a text file,
// download or delete a file, and the usage against the quota. Names and
// contents come from the host and are placed with textContent only.

import { byId as $, button as makeButton, el } from '../lib/dom.js';
import { hostRequest } from '../lib/host-request.js';
import { t } from '../lib/i18n.js';
import { formatBytes } from './status-view.js';
import { breadcrumb, downloadName, fileBytes, normalizeFolder, sortEntries, usageView } from './workspace-logic.js';

const button = (text, onClick, label) => makeButton(text, onClick, { label });

const lang = () => t('htmlLang');
let folder = '/';
let generation = 0;

function status(text) {
  $('ws-status').textContent = text;
}

async function loadUsage() {
  try {
    const u = await hostRequest('workspace.usage');
    const view = usageView(u.bytes, u.quota);
    const bar = $('ws-usage-bar');
    bar.max = 100;
    bar.value = view.percent;
    bar.dataset.level = view.level;
    $('ws-usage-text').textContent = t('workspaceUsage', [
      formatBytes(u.bytes, lang()), formatBytes(u.quota, lang()), String(view.percent),
    ]);
  } catch (err) {
    $('ws-usage-text').textContent = t('workspaceFailed', [err.message]);
  }
}

async function openFolder(path) {
  const gen = ++generation;
  folder = normalizeFolder(path);
  status(t('workspaceLoading'));
  let got;
  try {
    got = await hostRequest('workspace.list', { path: folder });
  } catch (err) {
    if (gen !== generation) return;
    // A folder that went away (its last file deleted) falls back to the root.
    if (err.data?.reason === 'not_found' && folder !== '/') return openFolder('/');
    status(t('workspaceFailed', [err.message]));
    return;
  }
  if (gen !== generation) return;
  folder = got.path ?? folder;
  renderCrumbs();
  const entries = sortEntries(got.entries);
  $('ws-table').hidden = entries.length === 0;
  status(entries.length === 0 ? t('workspaceEmpty') : '');
  $('ws-rows').replaceChildren(...entries.map(row));
}

function renderCrumbs() {
  const parts = [];
  for (const [i, c] of breadcrumb(folder).entries()) {
    if (i > 0) parts.push(el('span', { text: '/', className: 'sep' }));
    const name = c.path === '/' ? t('workspaceRoot') : c.name;
    if (c.path === folder) {
      const cur = el('span', { text: name });
      cur.setAttribute('aria-current', 'location');
      parts.push(cur);
    } else {
      const b = el('button', { text: name, className: 'link' });
      b.type = 'button';
      b.addEventListener('click', () => openFolder(c.path));
      parts.push(b);
    }
  }
  $('ws-crumbs').replaceChildren(...parts);
}

function row(entry) {
  const tr = document.createElement('tr');
  const nameCell = el('td');
  const isDir = entry.type === 'dir';
  if (isDir) {
    const b = el('button', { text: `${entry.name}/`, className: 'link' });
    b.type = 'button';
    b.addEventListener('click', () => openFolder(entry.path));
    nameCell.append(b);
  } else {
    nameCell.append(el('span', { text: entry.name }));
  }
  const when = new Date(entry.modified);
  const actions = el('td', { className: 'actions-cell' });
  if (!isDir) {
    actions.append(
      button(t('workspaceView'), () => viewFile(entry.path), t('workspaceViewLabel', [entry.name])),
      button(t('workspaceDownload'), () => downloadFile(entry.path), t('workspaceDownloadLabel', [entry.name])),
    );
  }
  actions.append(button(t('workspaceDelete'), () => deleteEntry(entry), t('workspaceDeleteLabel', [entry.name])));
  tr.append(
    nameCell,
    el('td', { text: formatBytes(entry.size, lang()) }),
    el('td', { text: Number.isNaN(when.getTime()) ? '' : when.toLocaleString(lang()) }),
    actions,
  );
  return tr;
}

async function readFile(path) {
  return hostRequest('workspace.read', { path }, 120_000);
}

async function viewFile(path) {
  const viewer = $('ws-viewer');
  try {
    const f = await readFile(path);
    $('ws-viewer-title').textContent = t('workspaceViewing', [f.path ?? path, f.mime ?? '', formatBytes(f.size, lang())]);
    // textContent: a file's text is shown as text, markup and all.
    $('ws-viewer-text').textContent = typeof f.text === 'string' ? f.text : t('workspaceBinary');
    viewer.hidden = false;
    $('ws-viewer-text').focus();
  } catch (err) {
    status(t('workspaceFailed', [err.message]));
  }
}

async function downloadFile(path) {
  try {
    const f = await readFile(path);
    const { mime, bytes } = fileBytes(f);
    const url = URL.createObjectURL(new Blob([bytes], { type: mime }));
    const a = document.createElement('a');
    a.href = url;
    a.download = downloadName(f.path ?? path);
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  } catch (err) {
    status(t('workspaceFailed', [err.message]));
  }
}

async function deleteEntry(entry) {
  const question = entry.type === 'dir' ? t('workspaceDeleteFolderConfirm', [entry.path]) : t('workspaceDeleteConfirm', [entry.path]);
  if (!globalThis.confirm(question)) return;
  try {
    const got = await hostRequest('workspace.delete', { path: entry.path });
    $('ws-viewer').hidden = true;
    await openFolder(folder);
    status(t('workspaceDeleted', [String(got.files ?? 0), formatBytes(got.bytes ?? 0, lang())]));
  } catch (err) {
    status(t('workspaceFailed', [err.message]));
  }
  loadUsage();
}

async function deleteAllConversations() {
  if (!globalThis.confirm(t('deleteAllConversationsConfirm'))) return;
  const out = $('delete-all-status');
  try {
    const got = await hostRequest('conversations.delete_all', {}, 120_000);
    out.textContent = t('deleteAllConversationsDone', [String(got.deleted ?? 0)]);
  } catch (err) {
    out.textContent = t('deleteFailed', [err.message]);
  }
}

/** Called whenever the host connection is (re)established. */
export function loadWorkspace() {
  openFolder(folder);
  loadUsage();
}

export function initWorkspace() {
  $('ws-crumbs').setAttribute('aria-label', t('workspaceCrumbsLabel'));
  $('ws-refresh').addEventListener('click', loadWorkspace);
  $('ws-viewer-close').addEventListener('click', () => {
    $('ws-viewer').hidden = true;
  });
  $('delete-all-conversations').addEventListener('click', deleteAllConversations);
}
