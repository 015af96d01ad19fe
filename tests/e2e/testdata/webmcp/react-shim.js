// "react" for the usewebmcp page's import map: the hooks of React 18's UMD build
// (from npm, loaded by a script tag), re-exported as an ES module. The page has no
// bundler; this is the only glue, and it is the test's own.
const R = window.React;
export const { useCallback, useEffect, useLayoutEffect, useRef, useState, createElement } = R;
export default R;
