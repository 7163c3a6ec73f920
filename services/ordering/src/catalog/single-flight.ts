/**
 * One lookup per key at a time: callers arriving while it runs share its result, so an
 * entry expiring under load costs its service one request, not one per waiting caller.
 */
export function singleFlight<T>(): (key: string, lookup: () => Promise<T>) => Promise<T> {
  const inFlight = new Map<string, Promise<T>>();
  return (key, lookup) => {
    let pending = inFlight.get(key);
    if (!pending) {
      pending = lookup().finally(() => inFlight.delete(key));
      inFlight.set(key, pending);
    }
    return pending;
  };
}
