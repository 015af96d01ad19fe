// Registered for the moment a browser tool navigates a tab (MAIN world,
// document_start, the destination's URL only): the new document is one Ferry
// drives from its first script on, so a dialog it opens while loading is answered
// and reported instead of leaving the page blocked (content/dialogs.js).
(() => {
  const d = window[Symbol.for('ferry.dialogs')];
  if (d) d.drive();
  else Object.defineProperty(window, Symbol.for('ferry.drive'), { value: true, enumerable: false });
})();
