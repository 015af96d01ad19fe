// What a confirmation card says and which keys answer it, kept apart from the
// DOM so it can be tested in Node. `t` is the i18n lookup (lib/i18n.js).
//
// The host's ui.confirm says who asks (requester: the model of a run, a page
// of an origin, an outside agent) and, when the call would carry a run's data
// somewhere, from where to where (flow). Both are optional: a card without
// them shows what it has.

/** The card's "asked by" line, or '' when the host did not say who asks. */
export function requesterText(requester, { conversationTitle } = {}, t) {
  if (!requester || typeof requester.kind !== 'string') return '';
  switch (requester.kind) {
    case 'model': {
      const title = conversationTitle?.(requester.conversation_id) ?? '';
      if (title) return t('requesterModelIn', [title]);
      return requester.run_id ? t('requesterModelRun', [shortId(requester.run_id)]) : t('requesterModel');
    }
    case 'page':
      return t('requesterPage', [requester.origin || t('noOrigin')]);
    case 'mcp':
      return requester.client ? t('requesterMcpClient', [requester.client]) : t('requesterMcp');
    case 'socket':
      return requester.client ? t('requesterSocketClient', [requester.client]) : t('requesterSocket');
    case 'cli':
      return t('requesterCli');
    case 'extension':
      return t('requesterExtension');
    default:
      return t('requesterOther', [requester.kind]);
  }
}

/** A run id short enough to read (its last part). */
function shortId(id) {
  const s = String(id);
  return s.length > 12 ? `…${s.slice(-8)}` : s;
}

/** One source of a flow, in the person's words where the host used a name of its own. */
export function sourceText(source, t) {
  switch (source) {
    case 'workspace': return t('flowWorkspace');
    case 'other tabs': return t('flowOtherTabs');
    case 'your message': return t('flowYourMessage');
    default: return String(source ?? '');
  }
}

/** The card's "what goes where" line, or '' when no data would flow. */
export function flowText(flow, t) {
  if (!flow || !Array.isArray(flow.sources) || flow.sources.length === 0) return '';
  const sources = flow.sources.map((s) => sourceText(s, t)).filter(Boolean).join(', ');
  return t('flowLine', [sources, flow.destination || t('noOrigin')]);
}

/** The page line's extra: the tab's title when the call acts on one. */
export function pageTitle(page) {
  return typeof page?.title === 'string' ? page.title.trim() : '';
}

/**
 * What a key pressed in a confirmation card does: 'approve', 'deny' or null.
 * Enter and Space approve only on the card itself and only once the person
 * has moved the focus there (armed); a key held down, or one composing text,
 * answers nothing. Escape denies from anywhere in the card. A lasting answer
 * is never a key's doing: it has controls of its own.
 */
export function cardKey({ key, repeat = false, isComposing = false, onCard = false }, armed) {
  if (repeat || isComposing) return null;
  if (key === 'Escape') return 'deny';
  if ((key === 'Enter' || key === ' ') && onCard && armed) return 'approve';
  return null;
}
