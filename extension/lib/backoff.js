// Reconnect delays: doubling from `initial` up to `max`. No jitter: there is
// one client per browser profile, so there is no herd to spread out, and
// deterministic delays keep the tests exact.
export function createBackoff({ initial = 250, max = 30_000, factor = 2 } = {}) {
  let current = initial;
  return {
    next() {
      const delay = current;
      current = Math.min(current * factor, max);
      return delay;
    },
    reset() {
      current = initial;
    },
  };
}
