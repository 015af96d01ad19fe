// The only module that touches `chrome.*`. Everything else receives these
// functions (or fakes of them in tests), so the rest of the extension stays
// plain JavaScript that Node can run.

/* global chrome */

/**
 * Opens a native-messaging port. `onDisconnect` receives the browser's
 * reason text: `chrome.runtime.lastError` is only readable synchronously
 * inside the disconnect event, so it is read here and passed on.
 */
export function connectNative(hostName, { onMessage, onDisconnect }) {
  const port = chrome.runtime.connectNative(hostName);
  port.onMessage.addListener((message) => onMessage(message));
  port.onDisconnect.addListener(() => onDisconnect(lastErrorMessage()));
  return {
    post: (message) => port.postMessage(message),
    close: () => port.disconnect(),
  };
}

/** Reading lastError also stops Chrome from logging it as "unchecked". */
export function lastErrorMessage() {
  return chrome.runtime.lastError?.message ?? '';
}

export function runtimeId() {
  return chrome.runtime.id;
}

/** "chrome-extension://<id>/", with the trailing slash. */
export function extensionOrigin() {
  return chrome.runtime.getURL('');
}

export function manifestVersion() {
  return chrome.runtime.getManifest().version;
}

/**
 * Registers the one runtime message listener. `handler(message, sender)` may
 * return a value or a promise; its outcome becomes the response.
 */
export function onRuntimeMessage(handler) {
  chrome.runtime.onMessage.addListener((message, sender, sendResponse) => {
    // Addressed to another context (the offscreen document): not ours to answer.
    if (message?.target !== undefined) return false;
    Promise.resolve()
      .then(() => handler(message, sender))
      .then(sendResponse, (err) =>
        sendResponse({ ok: false, error: { message: String(err?.message ?? err) } }));
    // Keeps the channel open for the asynchronous sendResponse above.
    return true;
  });
}

export function sendRuntimeMessage(message) {
  return chrome.runtime.sendMessage(message);
}

function wrapPort(port) {
  return {
    name: port.name,
    sender: port.sender,
    post: (message) => port.postMessage(message),
    onMessage: (fn) => port.onMessage.addListener((message) => fn(message)),
    onDisconnect: (fn) => port.onDisconnect.addListener(() => fn(lastErrorMessage())),
    disconnect: () => port.disconnect(),
  };
}

/** Service worker side of runtime ports opened by extension pages. */
export function onRuntimeConnect(handler) {
  chrome.runtime.onConnect.addListener((port) => handler(wrapPort(port)));
}

/** Page side: opens a runtime port to the service worker. */
export function connectRuntime(name) {
  return wrapPort(chrome.runtime.connect({ name }));
}

export function onActionClicked(fn) {
  chrome.action.onClicked.addListener((tab) => fn(tab));
}

export function openOptionsPage() {
  return chrome.runtime.openOptionsPage();
}

export function getMessage(key, substitutions) {
  return chrome.i18n.getMessage(key, substitutions);
}

export function uiLanguage() {
  return chrome.i18n.getUILanguage();
}

// ---- tabs, windows, scripting, offscreen: the browser tools (background/browser/) ----

export function tabsQuery(query) {
  return chrome.tabs.query(query);
}

export function tabsGet(tabId) {
  return chrome.tabs.get(tabId);
}

export function tabsCreate(props) {
  return chrome.tabs.create(props);
}

export function tabsUpdate(tabId, props) {
  return chrome.tabs.update(tabId, props);
}

export function sessionRulesUpdate(options) {
  return chrome.declarativeNetRequest.updateSessionRules(options);
}

export function tabsRemove(tabId) {
  return chrome.tabs.remove(tabId);
}

export function tabsGoBack(tabId) {
  return chrome.tabs.goBack(tabId);
}

export function tabsGoForward(tabId) {
  return chrome.tabs.goForward(tabId);
}

export function tabsReload(tabId) {
  return chrome.tabs.reload(tabId);
}

export function windowsUpdate(windowId, props) {
  return chrome.windows.update(windowId, props);
}

export function captureVisibleTab(windowId, options) {
  return chrome.tabs.captureVisibleTab(windowId, options);
}

/** fn(tabId, changeInfo, tab) on every tab update; returns the unsubscribe function. */
export function onTabUpdated(fn) {
  const listener = (tabId, changeInfo, tab) => fn(tabId, changeInfo, tab);
  chrome.tabs.onUpdated.addListener(listener);
  return () => chrome.tabs.onUpdated.removeListener(listener);
}

/** fn(tabId) when a tab closes; returns the unsubscribe function. */
export function onTabRemoved(fn) {
  const listener = (tabId) => fn(tabId);
  chrome.tabs.onRemoved.addListener(listener);
  return () => chrome.tabs.onRemoved.removeListener(listener);
}

export function executeScript(injection) {
  return chrome.scripting.executeScript(injection);
}

export function isAllowedFileSchemeAccess() {
  return chrome.extension.isAllowedFileSchemeAccess();
}

export async function hasOffscreenDocument(path) {
  const url = chrome.runtime.getURL(path);
  const contexts = await chrome.runtime.getContexts({ contextTypes: ['OFFSCREEN_DOCUMENT'], documentUrls: [url] });
  return contexts.length > 0;
}

export function createOffscreenDocument(path, reasons, justification) {
  return chrome.offscreen.createDocument({ url: path, reasons, justification });
}

export function closeOffscreenDocument() {
  return chrome.offscreen.closeDocument();
}

/**
 * A runtime message listener for one `target` only (the offscreen document's):
 * other messages are left for their own receiver (the service worker) by not
 * answering them at all.
 */
export function onRuntimeMessageFor(target, handler) {
  chrome.runtime.onMessage.addListener((message, sender, sendResponse) => {
    if (message?.target !== target) return false;
    Promise.resolve()
      .then(() => handler(message, sender))
      .then(sendResponse, (err) => sendResponse({ ok: false, error: { message: String(err?.message ?? err) } }));
    return true;
  });
}

// ---- side panel (sidepanel/, background/ui.js) ----

/** The toolbar button opens the side panel. Resolves false where the API is missing. */
export async function openSidePanelOnActionClick() {
  if (!chrome.sidePanel?.setPanelBehavior) return false;
  await chrome.sidePanel.setPanelBehavior({ openPanelOnActionClick: true });
  return true;
}

/** fn({tabId, windowId}) when the active tab of a window changes; returns the unsubscribe function. */
export function onTabActivated(fn) {
  const listener = (info) => fn(info);
  chrome.tabs.onActivated.addListener(listener);
  return () => chrome.tabs.onActivated.removeListener(listener);
}

export function registerContentScripts(scripts) {
  return chrome.scripting.registerContentScripts(scripts);
}

export function getRegisteredContentScripts() {
  return chrome.scripting.getRegisteredContentScripts();
}

export function unregisterContentScripts(filter) {
  return chrome.scripting.unregisterContentScripts(filter);
}
