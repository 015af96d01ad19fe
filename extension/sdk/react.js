// React bindings of Ferry's page API. React is a peer: pass it in, because a
// page without a build step has no bare "react" import to resolve.
//
//   import { bindReact } from './react.js';
//   const { useFerryAction, useFerryRecords } = bindReact(React);
//   const formRef = useFerryAction({ id: 'add_task', desc, params, available, run, expect });
//   <form ref={formRef}>…</form>
//
// useFerryAction declares the action once (again when id or the declared shape
// changes) and reads the latest available, run and expect.check on every call,
// so they may close over the current state.

import ferry from './ferry.js';

export function bindReact(React) {
  const { useEffect, useRef } = React;

  function useFerryAction(config) {
    const latest = useRef(config);
    latest.current = config;
    const ref = useRef(null);
    const { id, run, handler, available, expect, ...shape } = config;
    const key = JSON.stringify({ id, shape, hasRun: Boolean(run || handler), hasAvailable: Boolean(available), expect: expect && { desc: expect.desc, timeout: expect.timeout } }, (k, v) => (v instanceof RegExp ? v.source : v));
    useEffect(() => {
      const c = latest;
      return ferry.action(id, {
        ...shape,
        target: () => ref.current,
        available: available ? (...a) => c.current.available(...a) : undefined,
        run: run || handler ? (...a) => (c.current.run ?? c.current.handler)(...a) : undefined,
        expect: expect ? { desc: expect.desc, timeout: expect.timeout, check: (...a) => c.current.expect.check(...a) } : undefined,
      });
    }, [key]);
    return ref;
  }

  function useFerryRecords(collection, rows) {
    const latest = useRef(rows);
    latest.current = rows;
    useEffect(() => ferry.records(collection, () => latest.current), [collection]);
  }

  return { useFerryAction, useFerryRecords };
}
