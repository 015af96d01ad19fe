// An approval holds for the document it was given for (protocol/BROWSER.md,
// "Documents"). The host sends `document: {document_id, origin, url}` with a
// call a person approved (or that was auto-approved for the page's origin);
// the work is done only while frame 0 of the tab still shows that document,
// and fails with document_changed otherwise.
//
// Chrome's own documentIds target is not enough on its own: a script aimed at
// a document that went into the back/forward cache runs in the document that
// replaced it. So the document is checked first by id (a probe that does
// nothing), and the work that runs in the page checks the origin once more
// where it runs.

import { fail } from './errors.js';

/** Runs in the page (isolated world): nothing but the document's origin. */
function probe() {
  return globalThis.location.origin;
}

/** params.document checked for shape; null when the call is not bound. */
export function documentParam(params) {
  const d = params?.document;
  if (d === undefined || d === null) return null;
  if (typeof d !== 'object' || typeof (d.document_id ?? '') !== 'string' || typeof (d.origin ?? '') !== 'string' || typeof (d.url ?? '') !== 'string') {
    throw fail('invalid', 'document must be {document_id, origin, url}');
  }
  return { documentId: d.document_id ?? '', origin: d.origin ?? '', url: d.url ?? '' };
}

/**
 * The document frame 0 of the tab shows now: {documentId, origin, url};
 * documentId is '' where the browser lets no script in (its own pages).
 */
export async function currentDocument(api, tab) {
  try {
    const [r] = await api.executeScript({ target: { tabId: tab.id, frameIds: [0] }, func: probe, injectImmediately: true });
    return { documentId: r?.documentId ?? '', origin: typeof r?.result === 'string' ? r.result : '', url: tab.url ?? '' };
  } catch {
    return { documentId: '', origin: '', url: tab.url ?? '' };
  }
}

/** The failure of work bound to doc when the tab shows another document (now: what it shows). */
export function documentChanged(tab, doc, now) {
  const was = doc.url || doc.origin || 'another page';
  const is = now || tab.url || 'another page';
  return fail('document_changed', `the tab's page changed after the call was approved (approved for ${was}, the tab now shows ${is}): nothing was done`,
    { url: is, tab_id: tab.id, approved_url: was });
}

/** Throws document_changed unless the tab still shows doc (null: not bound, nothing to check). */
export async function checkDocument(api, tab, doc) {
  if (!doc) return;
  if (!doc.documentId) {
    // A page no script may enter: the URL is all there is to compare.
    if ((tab.url ?? '') !== doc.url) throw documentChanged(tab, doc);
    return;
  }
  let r;
  try {
    [r] = await api.executeScript({ target: { tabId: tab.id, documentIds: [doc.documentId] }, func: probe, injectImmediately: true });
  } catch (err) {
    if (/No document with id|Invalid document id|No frame with id|Frame .* was removed/i.test(String(err?.message))) throw documentChanged(tab, doc);
    throw err;
  }
  if (r?.documentId !== doc.documentId || (doc.origin && r?.result !== doc.origin)) throw documentChanged(tab, doc, typeof r?.result === 'string' ? r.result : '');
}

/** Where work bound to doc is injected: that document only. */
export function injectionTarget(tab, doc) {
  return doc?.documentId ? { tabId: tab.id, documentIds: [doc.documentId] } : { tabId: tab.id, frameIds: [0] };
}
